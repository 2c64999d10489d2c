"""The aggregator's view of the other services: desktopd and the CDP bridge through
their one client each (``common.service_client``), with desktopd's windows and displays
as the scene's typed objects. Their failures arrive as our errors already."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any, Callable

from ..common.service_client import BridgeClient, DesktopdClient, Frame, ServiceClient
from ..geometry import Display, Rect, device_rect

__all__ = ["Desktop", "Bridge", "Frame", "Window", "Tree", "INPUT_SINK", "LiveView"]


@dataclass(frozen=True, slots=True)
class Window:
    id: str
    app_id: str | None
    pid: int | None
    title: str | None
    bounds: Rect | None  # display-local device pixels
    display_id: int | None
    focused: bool
    # Where Sway keeps it: floating windows are drawn above the tiled ones of their
    # workspace, in the order desktopd lists them (see ``placing.window_above``).
    floating: bool = False
    workspace: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "app_id": self.app_id, "pid": self.pid, "title": self.title,
                "bounds": self.bounds_list, "display_id": self.display_id, "focused": self.focused}

    @property
    def bounds_list(self) -> list[int] | None:
        return list(device_rect(self.bounds)) if self.bounds is not None else None


@dataclass(frozen=True, slots=True)
class Tree:
    displays: list[Display]
    windows: list[Window]
    focused: str | None


# Where the input the scene sends desktopd is told to the action it is part of (the
# gate's open step), if any: called with ("pointer" | "keyboard", the request).
INPUT_SINK: contextvars.ContextVar[Callable[[str, dict[str, Any]], None] | None] = contextvars.ContextVar(
    "deskbox_input_sink", default=None)


class Desktop(DesktopdClient):
    """desktopd, with its tree and displays as the scene's objects, and the input sent
    through it told to the action it is part of (``INPUT_SINK``)."""

    async def tree(self) -> Tree:
        data = await self.window_tree()
        windows = [
            Window(w["id"], w.get("app_id"), w.get("pid"), w.get("title"),
                   Rect(*w["bounds"]) if w.get("bounds") else None, w.get("display_id"), bool(w.get("focused")),
                   bool(w.get("floating")), w.get("workspace"))
            for w in data["windows"]
        ]
        return Tree([_display(d) for d in data["displays"]], windows, data.get("focused"))

    async def displays(self) -> list[Display]:
        return [_display(d) for d in await self.display_list()]

    async def pointer_position(self) -> tuple[int, float, float] | None:
        """Where desktopd last put the pointer: (display, x, y) in device pixels, or None
        before it has moved it."""
        data = await self.pointer_at()
        if data is None or data.get("display") is None:
            return None
        return data["display"], data["x"], data["y"]

    async def pointer(self, **request: Any) -> None:
        await super().pointer(**request)
        _sent("pointer", request)

    async def keyboard(self, **request: Any) -> None:
        await super().keyboard(**request)
        _sent("keyboard", request)


def _display(d: dict[str, Any]) -> Display:
    return Display(d["id"], d["name"], Rect(*d["bounds"]), d["scale"], tuple(d["size"]), bool(d.get("primary")))


def _sent(kind: str, request: dict[str, Any]) -> None:
    sink = INPUT_SINK.get()
    if sink is not None:
        sink(kind, request)


# The CDP bridge, as the scene calls it.
Bridge = BridgeClient


class LiveView(ServiceClient):
    """The live view (deskbox up --view): who has taken control of the desktop."""

    name = "view"

    async def status(self) -> dict:
        return await self.request("GET", "/api/status")
