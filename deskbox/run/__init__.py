"""Benchmark runs: OSWorld-format tasks with an agent across a pool of sessions, graded by
OSWorld's own metrics (``deskbox run``), and the parts for harnesses that drive sessions
themselves:

- :class:`Pool`: sessions started once and lent to tasks (take, release, replace);
- :class:`Episode`: one task on one session, shaped like OSWorld's ``DesktopEnv``
  (``reset() -> obs``, ``step(action) -> obs, reward, done, info``, ``evaluate()``);
- :func:`load_tasks`: task configs from OSWorld's layout, a folder or files."""

from __future__ import annotations

from .episode import Episode, InfrastructureError
from .runner import Runner, RunOptions
from .sessions import AttachedEnvironment, LocalEnvironment, Pool, session_factory
from .tasks import Task, load_tasks

__all__ = ["Pool", "Episode", "InfrastructureError", "Task", "load_tasks", "Runner", "RunOptions",
           "LocalEnvironment", "AttachedEnvironment", "session_factory"]
