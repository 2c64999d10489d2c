"""Element actions: ``POST /api/v1/act {"target": "a0-12", "action": "click"}``.

An action resolves the element's *current* box (a fresh scene, not the one the agent
read), scrolls it into view when it is not fully on screen, picks a point on its visible
part, drives desktopd with real input there (never synthetic DOM events), waits for the
screen to settle, and answers with a receipt: what was targeted, where, and whether the
screen changed. One handler per action, found through ``HANDLERS``."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Awaitable, Callable

from ..common.errors import ActionFailed, NotFoundError
from ..geometry import device_rect, display_to_css, probe_points, visible_part
from .elements import Element
from .engine import SceneEngine
from .frames import changed_regions
from .models import ActRequest
from .sources import Bridge, Desktop

__all__ = ["Actor", "HANDLERS"]

SETTLE_POLL_S = 0.08
SCROLL_ROUNDS = 3


@dataclass
class Target:
    element: Element
    point: tuple[float, float]


Handler = Callable[["Actor", Target, ActRequest], Awaitable[None]]


async def _click(actor: "Actor", t: Target, req: ActRequest) -> None:
    await actor.pointer("click", t)


async def _double_click(actor: "Actor", t: Target, req: ActRequest) -> None:
    await actor.pointer("click", t, count=2)


async def _right_click(actor: "Actor", t: Target, req: ActRequest) -> None:
    await actor.pointer("click", t, button="right")


async def _hover(actor: "Actor", t: Target, req: ActRequest) -> None:
    await actor.pointer("move", t)


async def _focus(actor: "Actor", t: Target, req: ActRequest) -> None:
    e = t.element
    if "focused" in e.states:
        return
    if "type" in e.actions:
        # Clicking an editable field is how a user focuses it, and it does nothing else.
        await actor.pointer("click", t)
    elif e.source == "cdp" and actor.bridge is not None:
        await actor.bridge.element("focus", e.ref)
    elif e.source == "atspi" and actor.engine.atspi is not None:
        try:
            done = await actor.engine.atspi.act(e.ref["atspi"], "focus")
        except Exception as exc:  # the reader says why (no such action, app not answering)
            raise ActionFailed(f"{e.id} could not take focus: {exc}", code="action_failed") from exc
        if not done:
            raise ActionFailed(f"{e.id} could not take focus (it is gone)", code="stale_element")
    else:
        raise ActionFailed(f"{e.id} ({e.role}) cannot be focused", code="unsupported_action")


async def _type(actor: "Actor", t: Target, req: ActRequest) -> None:
    if "focused" not in t.element.states:
        await actor.pointer("click", t)
    await actor.desktop.keyboard(action="type", text=req.text)


async def _set_value(actor: "Actor", t: Target, req: ActRequest) -> None:
    await actor.pointer("click", t)
    await actor.desktop.keyboard(action="key", keys=["ctrl+a", "backspace"])
    if req.text:
        await actor.desktop.keyboard(action="type", text=req.text)


async def _scroll_into_view(actor: "Actor", t: Target, req: ActRequest) -> None:
    return None  # done before every action that needs it; this action is only that


HANDLERS: dict[str, Handler] = {
    "click": _click,
    "double_click": _double_click,
    "right_click": _right_click,
    "hover": _hover,
    "focus": _focus,
    "type": _type,
    "set_value": _set_value,
    "scroll_into_view": _scroll_into_view,
}
# Actions that need the element on screen and a point on it.
_POINTED = frozenset({"click", "double_click", "right_click", "hover", "type", "set_value", "scroll_into_view"})


class Actor:
    def __init__(self, engine: SceneEngine, desktop: Desktop, bridge: Bridge | None,
                 input_lock: asyncio.Lock | None = None) -> None:
        self.engine = engine
        self.desktop = desktop
        self.bridge = bridge
        # One action at a time: input is a shared resource (the provider adapters hold
        # the same lock, so an adapter's drag never interleaves with an /act click).
        self.input_lock = input_lock or asyncio.Lock()

    async def pointer(self, action: str, t: Target, **extra) -> None:
        x, y = t.point
        await self.desktop.pointer(action=action, display=t.element.display_id, x=round(x, 2), y=round(y, 2), **extra)

    def lookup(self, ident: str) -> Element:
        """The element ``ident`` named in the newest scene, or a clear 404/409."""
        element = self.engine.by_id.get(ident)
        if element is not None:
            return element
        if ident.startswith("t"):
            raise ActionFailed(f"{ident} is OCR text; act on accessibility elements (a...) or click its box "
                               "through desktopd", code="not_actionable")
        registry = self.engine.ids
        gone = registry.retired(ident)
        if gone is not None or registry.issued(ident):
            what = f" (it was {gone.role} {gone.name!r})" if gone is not None and gone.role else ""
            raise ActionFailed(f"{ident} is stale: that element is gone{what}; GET /api/v1/scene for current ids",
                               code="stale_element")
        raise NotFoundError(f"no element {ident}; ids come from GET /api/v1/scene (mode=agent-turn for a fresh one)",
                            code="unknown_element")

    async def act(self, req: ActRequest) -> dict:
        async with self.input_lock:
            started = time.monotonic()
            if self.engine.last is not None:
                # Known to be gone or never issued: answered before anything is read. (With
                # no scene yet, after a restart or a reset, the fresh one decides.)
                self.lookup(req.target)
            await self.engine.scene("active")
            element = self.lookup(req.target)  # its current box
            scrolled = False
            if req.action in _POINTED and element.visibility != "visible":
                element = await self._scroll_into_view(element)
                scrolled = True
            point = await self._aim(element) if req.action in _POINTED else self._centre(element)
            if point is None and not scrolled:
                # Covered where it is (a fixed header, a popup): bring it to the middle.
                element = await self._scroll_into_view(element)
                scrolled = True
                point = await self._aim(element)
            if point is None:
                raise ActionFailed(f"{element.id} ({element.role} {element.name!r}) is covered by another element "
                                   "at every point tried", code="occluded")
            target = Target(element, point)
            before = await self.engine.frame_signatures([element.display_id])
            await HANDLERS[req.action](self, target, req)
            changed, settled = await self._settle(element.display_id, before[element.display_id], req.settle_ms)
            self.engine.mark_dirty()
            return {
                "ok": True,
                "action": req.action,
                "target": {"id": element.id, "role": element.role, "name": element.name,
                           "bbox": list(device_rect(element.bbox)) if element.bbox else None,
                           "source": element.source, "window_id": element.window_id},
                "display_id": element.display_id,
                "point": [round(target.point[0], 1), round(target.point[1], 1)],
                "scrolled": scrolled,
                "changed": changed,
                "settled": settled,
                "elapsed_ms": round((time.monotonic() - started) * 1000),
            }

    def _visible(self, e: Element):
        if e.bbox is None:
            raise ActionFailed(f"{e.id} ({e.role} {e.name!r}) has no box on screen (hidden)", code="not_visible")
        part = visible_part(e.bbox, e.clip) if e.clip is not None else e.bbox
        if part is None:
            raise ActionFailed(f"{e.id} ({e.role} {e.name!r}) is not on screen and could not be scrolled into view",
                               code="not_visible")
        return part

    def _centre(self, e: Element) -> tuple[float, float]:
        return probe_points(self._visible(e))[0]

    async def _aim(self, e: Element) -> tuple[float, float] | None:
        """A point of the element's visible part where the page itself says the element
        is what a click there reaches (not a fixed header or an overlay above it); None
        when every probe is covered. Without a page to ask (native apps), the centre."""
        points = probe_points(self._visible(e))
        if e.source != "cdp" or self.bridge is None or "placement" not in e.ref:
            return points[0]
        for x, y in points:
            cx, cy = display_to_css(e.ref["placement"], x, y)
            try:
                answer = await self.bridge.element("hit_test", e.ref, x=cx, y=cy)
            except NotFoundError:
                return points[0]  # the node went away between the scene and now: try the centre
            if answer.get("hit"):
                return x, y
        return None

    async def _scroll_into_view(self, e: Element) -> Element:
        if e.visibility == "hidden":
            raise ActionFailed(f"{e.id} ({e.role} {e.name!r}) is hidden: it has no box", code="not_visible")
        if e.source != "cdp" or self.bridge is None:
            if e.visibility == "partial":
                return e
            raise ActionFailed(f"{e.id} is outside its window and this source cannot scroll it", code="not_visible")
        for _ in range(SCROLL_ROUNDS):
            await self.bridge.element("scroll_into_view", e.ref)
            await self.engine.scene("active")
            e = self.lookup(e.id)
            if e.visibility == "visible":
                return e
        return e

    async def _settle(self, display_id: int, before, budget_ms: int) -> tuple[bool, bool]:
        """Wait until the display stops changing (two equal frames in a row) or the budget
        runs out. Returns (changed since ``before``, settled)."""
        deadline = time.monotonic() + budget_ms / 1000
        last = before
        changed = False
        stable = 0
        while True:
            await asyncio.sleep(SETTLE_POLL_S)
            now = (await self.engine.frame_signatures([display_id]))[display_id]
            if changed_regions(before, now):
                changed = True
            if changed_regions(last, now):
                stable = 0
            else:
                stable += 1
            last = now
            # Settled: unchanged for two polls after a change, or for three when nothing
            # changed (a page may take a moment to react at all).
            if (changed and stable >= 2) or stable >= 3:
                return changed, True
            if time.monotonic() >= deadline:
                return changed, False
