"""What the Observer API's routes share: the client to the session's services, the step
counter, and the lookups of a window (by index or uid) and of an element (by id or
selector) in the scene, with the errors OS Screen Observer's clients expect when there is
none; and its success answers."""

from __future__ import annotations

import itertools
import time
from typing import Any

from aiohttp import web

from ..client import AsyncClient
from ..common.errors import NotFoundError
from . import shapes
from .models import ElementRequest

__all__ = ["Observer", "OBSERVER", "as_json", "ok", "__version__", "PROTOCOL_VERSION"]

__version__ = "0.1.0"
PROTOCOL_VERSION = 2


class Observer:
    def __init__(self, client: AsyncClient) -> None:
        self.client = client
        self.steps = itertools.count(1)
        self.step_count = 0
        self.started = time.time()

    def step(self) -> int:
        self.step_count += 1
        return next(self.steps)

    # The Observer turns the scene's JSON into OS Screen Observer's shapes: it reads the
    # JSON itself, not the client's models of it (as the MCP tools do).

    async def scene(self, mode: str = "active") -> dict[str, Any]:
        return await self.client.request("scene", "GET", "/api/v1/scene", query={"mode": mode})

    async def find(self, selector: str, limit: int | None = None) -> dict[str, Any]:
        return await self.client.request("scene", "GET", "/api/v1/find", query={"selector": selector, "limit": limit})

    async def observe(self, since: str | None = None, **query: Any) -> dict[str, Any]:
        return await self.client.request("scene", "GET", "/api/v1/observe", query={"since": since, **query})

    async def window(self, q: Any, scene: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """(the scene, the window ``window_uid`` or ``window_index`` names, else the focused
        one, else the first)."""
        scene = scene or await self.scene()
        listed = shapes.windows(scene)
        uid, index = getattr(q, "window_uid", None), getattr(q, "window_index", None)
        if uid is not None:
            found = next((w for w in listed if w["window_uid"] == uid), None)
        elif index is not None:
            found = listed[index] if index < len(listed) else None
        else:
            found = listed[0] if listed else None
        if found is None:
            raise NotFoundError(f"no window {uid or index}; GET /api/windows lists them ({len(listed)} now)",
                                code="unknown_window", context={"window_uid": uid, "window_index": index})
        return scene, found

    async def target(self, req: ElementRequest) -> tuple[dict, dict, dict]:
        """(scene, window, element) for ``element_id`` or ``selector`` within the window."""
        scene, window = await self.window(req) if (req.window_uid or req.window_index is not None) else (
            await self.scene(), None)
        if req.element_id is not None:
            element = next((e for e in scene.get("ax") or () if e["id"] == req.element_id), None)
        else:
            found = await self.find(req.selector)
            matches = [m for m in found["matches"] if m["kind"] == "element"
                       and (window is None or m["window_id"] == window["window_uid"])]
            element = matches[0] if matches else None
        if element is None:
            what = req.element_id or req.selector
            raise NotFoundError(f"no element matches {what!r}", code="element_not_found",
                                suggested_next_tool="find_element",
                                context={"selector": req.selector, "element_id": req.element_id,
                                         "window_uid": window["window_uid"] if window else None})
        if window is None:
            window = next((w for w in shapes.windows(scene) if w["window_uid"] == element.get("window_id")), None)
        return scene, window or {}, element


OBSERVER = web.AppKey("observer", Observer)


def as_json(body: dict[str, Any], status: int = 200) -> web.Response:
    return web.json_response(body, status=status)


def ok(**body: Any) -> web.Response:
    return as_json({"ok": True, "success": True, **body})
