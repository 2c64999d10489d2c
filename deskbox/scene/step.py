"""One step of what an agent did, as the scene's gate records it and its guard rails
judge it: the action, its arguments, where it landed and what it answered. Its own
module, so that the gate (which records steps) and the guard (which judges them) both
depend on it and not on each other."""

from __future__ import annotations

import contextvars
import time
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Step"]


@dataclass
class Step:
    interface: str
    action: str
    args: dict[str, Any]
    display_id: int | None
    element: dict[str, Any] | None = None
    point: list[float] | None = None
    path: list[list[float]] | None = None
    number: int = 0  # in the trace; 0 when nothing is traced
    parts: list[dict[str, Any]] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    t: float = 0.0
    before: str | None = None
    resolved_by: str | None = None
    receipt: dict[str, Any] | None = None  # what the body of ``traced`` answered
    via: str = "input"  # "act": an element action; "input": pointer and keyboard input
    token: contextvars.Token | None = None
    # What is at a point, for a step that learns where it acts from its input (the
    # provider adapters): display, x, y -> an element reference or None.
    locate: Callable[[int, float, float], dict[str, Any] | None] | None = None
    # The display before input the scene did not send itself (desktopd's), which the
    # screenshot after it waits to settle from.
    settle_from: Any = None

    def add_part(self, kind: str, request: dict[str, Any]) -> None:
        self.parts.append({"kind": kind, **request})
        if kind == "pointer":
            if self.display_id is None:
                self.display_id = request.get("display")
            if request.get("path"):
                self.path = [list(p) for p in request["path"]]
                if self.point is None:
                    self.point = list(request["path"][0])
            elif self.point is None and request.get("x") is not None:
                self.point = [request["x"], request["y"]]
            if self.element is None and self.point is not None and self.locate is not None:
                self.element = self.locate(self.display_id or 0, *self.point)
