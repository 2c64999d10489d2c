"""Agents for ``deskbox run``: OSWorld's agent interface, so existing agents plug in
unchanged, and three built in for tests and baselines.

The interface (OSWorld's ``PromptAgent`` and the agents beside it): ``reset()`` before
each task, then ``predict(instruction, obs) -> (response, actions)``, where ``obs`` is
what :meth:`deskbox.run.episode.Episode.observe` gives and ``actions`` a list of
pyautogui strings or computer_13 dicts, or ``WAIT``/``DONE``/``FAIL``.

``--agent`` names one:

- ``MODULE:FACTORY``: ``FACTORY`` is called once per session worker with the keyword
  arguments it declares among ``action_space``, ``observation_type`` and
  ``max_trajectory_length``/``max_steps``;
- ``noop``: does nothing and says ``DONE`` (every task but an infeasible one scores 0);
- ``script:FILE``: a JSON object mapping a task's id (or ``domain/id``) to its list of
  actions, said in order, then ``DONE`` (the benches' and tests' scripted agent);
- ``replay:DIR``: the actions a run in ``DIR`` recorded for each task, said again.

A built-in agent learns which task it is on from ``begin_task(task)``, which the runner
calls before ``reset()`` when an agent has it."""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path
from typing import Any, Callable, Protocol

from .tasks import Task

__all__ = ["Agent", "NoopAgent", "ScriptAgent", "agent_factory", "AgentError"]


class AgentError(ValueError):
    """An ``--agent`` that cannot be made."""


class Agent(Protocol):
    def reset(self, *args: Any, **kwargs: Any) -> None: ...

    def predict(self, instruction: str, obs: dict[str, Any]) -> tuple[Any, list[Any]]: ...


class NoopAgent:
    """Does nothing, then says DONE."""

    def reset(self, *args: Any, **kwargs: Any) -> None:
        pass

    def predict(self, instruction: str, obs: dict[str, Any]) -> tuple[str, list[Any]]:
        return "nothing to do", ["DONE"]


class ScriptAgent:
    """Says a fixed list of actions per task, one per step, then DONE."""

    def __init__(self, scripts: dict[str, list[Any]]) -> None:
        self.scripts = scripts
        self._left: list[Any] = []

    def begin_task(self, task: Task) -> None:
        self._left = list(self.scripts.get(task.key, self.scripts.get(task.id, [])))

    def reset(self, *args: Any, **kwargs: Any) -> None:
        pass

    def predict(self, instruction: str, obs: dict[str, Any]) -> tuple[str, list[Any]]:
        if not self._left:
            return "done", ["DONE"]
        action = self._left.pop(0)
        return f"scripted: {action if isinstance(action, str) else json.dumps(action)}", [action]


def _recorded(folder: Path) -> dict[str, list[Any]]:
    results = folder / "results.jsonl"
    if not results.is_file():
        raise AgentError(f"replay: {results} does not exist (give the --out folder of an earlier run)")
    scripts: dict[str, list[Any]] = {}
    for line in results.read_text().splitlines():
        record = json.loads(line)
        if record.get("status") == "done":
            scripts[record["task"]] = [a for a in record.get("actions", []) if a not in ("DONE",)]
    return scripts


def _accepted(factory: Callable[..., Any], offered: dict[str, Any]) -> dict[str, Any]:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return {}
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return offered
    return {k: v for k, v in offered.items() if k in params}


def agent_factory(spec: str, *, action_space: str, observation_type: str, max_steps: int) -> Callable[[], Any]:
    """A callable making one agent per session worker, from ``--agent``."""
    if spec == "noop":
        return NoopAgent
    kind, _, arg = spec.partition(":")
    if kind == "script":
        try:
            scripts = json.loads(Path(arg).read_text())
        except (OSError, ValueError) as exc:
            raise AgentError(f"script: {arg}: {exc}") from exc
        if not isinstance(scripts, dict):
            raise AgentError(f"script: {arg} maps task ids to lists of actions")
        return lambda: ScriptAgent(scripts)
    if kind == "replay":
        scripts = _recorded(Path(arg))
        return lambda: ScriptAgent(scripts)
    if not arg:
        raise AgentError(f"--agent {spec!r}: noop, script:FILE, replay:DIR or MODULE:FACTORY")
    try:
        factory = getattr(importlib.import_module(kind), arg)
    except (ImportError, AttributeError) as exc:
        raise AgentError(f"--agent {spec!r}: {exc}") from exc
    offered = {"action_space": action_space, "observation_type": observation_type,
               "max_trajectory_length": max_steps, "max_steps": max_steps}
    kwargs = _accepted(factory, offered)
    return lambda: factory(**kwargs)
