"""The scene aggregator's own metrics, on its app's registry (``deskbox.common.metrics``):
scene builds by mode, element actions by action (``/api/v1/act``, the toolset's
act_and_observe, replays, and what calls them: MCP, the Observer API), and the session's
restarts and resets as ``deskbox up`` counts them."""

from __future__ import annotations

import asyncio
from typing import Any, Iterator

from aiohttp import web
from prometheus_client import Counter, Histogram
from prometheus_client.core import CounterMetricFamily, Metric

from ..common.errors import DeskboxError
from ..common.metrics import Metrics
from ..common.session_api import SessionControl

__all__ = ["SceneMetrics", "SessionCounts", "SCENE_METRICS", "session_families"]

# From an active build over a quiet page (tens of ms) to an agent-turn over large documents.
BUILD_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
SESSION_TIMEOUT_S = 1.0  # a scrape does not wait longer for deskbox up


class SessionCounts:
    """A collector of the session's child restarts and resets: deskbox up owns the
    counts, behind its control socket, which a collector cannot await; ``refresh``
    reads them before each scrape and ``collect`` writes what it read. Nothing is
    written outside deskbox up, or when it did not answer in time."""

    def __init__(self, control: SessionControl) -> None:
        self.control = control
        self._state: dict[str, Any] | None = None

    async def refresh(self) -> None:
        state = None
        if self.control.available:
            try:
                state = await asyncio.wait_for(self.control.call("GET", "/session"), SESSION_TIMEOUT_S)
            except (asyncio.TimeoutError, DeskboxError):
                pass
        self._state = state  # (set once read: a scrape running meanwhile keeps what it had)

    def collect(self) -> Iterator[Metric]:
        return iter(session_families(self._state) if self._state is not None else [])


def session_families(state: dict[str, Any]) -> list[Metric]:
    """The counts in deskbox up's ``GET /session`` reply, as metrics."""
    restarts = CounterMetricFamily("deskbox_session_restarts",
                                   "Restarts of the session's children, as deskbox up counts them", labels=["child"])
    for name, child in state.get("children", {}).items():
        restarts.add_metric([name], child.get("restarts") or 0)
    resets = CounterMetricFamily("deskbox_session_resets", "Session resets (POST /api/v1/session/reset)",
                                 value=state.get("resets") or 0)
    return [restarts, resets]


class SceneMetrics:
    """One per app: the engine counts its builds on it, the Actor its actions."""

    def __init__(self, metrics: Metrics, control: SessionControl) -> None:
        registry = metrics.registry
        self.builds = Counter("deskbox_scene_builds", "Scenes built, by mode and outcome (ok, failed)",
                              ["mode", "outcome"], registry=registry)
        self.build_seconds = Histogram("deskbox_scene_build_seconds", "How long a scene build took, by mode",
                                       ["mode"], buckets=BUILD_BUCKETS, registry=registry)
        self.actions = Counter("deskbox_scene_actions",
                               "Element actions carried out (/api/v1/act and what uses it), by action", ["action"],
                               registry=registry)
        self.session = SessionCounts(control)
        registry.register(self.session)
        metrics.before_scrape(self.session.refresh)

    def built(self, mode: str, seconds: float, ok: bool) -> None:
        self.builds.labels(mode, "ok" if ok else "failed").inc()
        self.build_seconds.labels(mode).observe(seconds)


SCENE_METRICS = web.AppKey("scene_metrics", SceneMetrics)
