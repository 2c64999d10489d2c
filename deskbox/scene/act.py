"""Element actions: ``POST /api/v1/act {"target": "a0-12", "action": "click"}``.

An action resolves the element's *current* box (a fresh scene, not the one the agent
read), scrolls it into view when it is not fully on screen, picks a point on its visible
part, drives desktopd with real input there, waits for the screen to settle, and
answers with a receipt: what was targeted, where, and whether the screen changed. One
handler per action, found through ``HANDLERS``.

Two actions are not pointer input, by their nature: ``invoke`` runs the element's
default action as an accessibility client does (AT-SPI DoAction, a page element's
``click()``), and ``select`` on a page's ``<select>`` sets the option as a user's pick
leaves it (its list is a popup of Chromium's own). Every other select opens the element
with a click and clicks the option."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Awaitable, Callable

from ..api.scene import ActRequest
from ..common.errors import ActionFailedError, NotFoundError
from ..common.web import taking_turn
from ..geometry import device_rect, display_to_css, probe_points, visible_part
from .elements import Element
from .engine import SceneEngine
from .gate import Gate, traced
from .ids import IdRegistry
from .placing import window_above
from .sources import Bridge, Desktop

__all__ = ["Actor", "HANDLERS", "lookup_element"]

SCROLL_ROUNDS = 3
# How long a window raised for an action may take to show above the one that covered it.
RAISE_WAIT_S = 1.0
# How long a page's field may take to report the focus a click gave it (the click goes
# through Sway to Chromium's browser process, then to the page's renderer).
FOCUS_WAIT_S = 1.0


@dataclass
class Target:
    element: Element
    point: tuple[float, float] | None  # None: an action without the pointer, on an element off screen


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
    if "type" in e.actions and t.point is not None:
        # Clicking an editable field is how a user focuses it, and it does nothing else.
        await actor.click_into(t)
    elif e.source == "cdp" and actor.bridge is not None:
        await actor.bridge.element("focus", e.ref)
    elif e.source == "atspi":
        await actor.native_action(e, "focus")
    else:
        raise ActionFailedError(f"{e.id} ({e.role}) cannot be focused", code="unsupported_action")


async def _type(actor: "Actor", t: Target, req: ActRequest) -> None:
    if "focused" not in t.element.states:
        await actor.click_into(t)
    await actor.desktop.keyboard(action="type", text=req.text)


async def _set_value(actor: "Actor", t: Target, req: ActRequest) -> None:
    await actor.click_into(t)
    await actor.desktop.keyboard(action="key", keys=["ctrl+a", "backspace"])
    if req.text:
        await actor.desktop.keyboard(action="type", text=req.text)


async def _scroll_into_view(actor: "Actor", t: Target, req: ActRequest) -> None:
    return None  # done before every action that needs it; this action is only that


async def _invoke(actor: "Actor", t: Target, req: ActRequest) -> None:
    e = t.element
    if e.source == "cdp" and actor.bridge is not None:
        if not (await actor.bridge.element("invoke", e.ref)).get("ok"):
            raise ActionFailedError(f"{e.id} ({e.role} {e.name!r}) has no default action", code="no_default_action")
    elif e.source == "atspi":
        await actor.native_action(e, "click")
    else:
        raise ActionFailedError(f"{e.id} ({e.role}) cannot be invoked", code="unsupported_action")


async def _select(actor: "Actor", t: Target, req: ActRequest) -> None:
    e = t.element
    if e.source == "cdp" and actor.bridge is not None:
        answer = await actor.bridge.element("select", e.ref, option=req.option, option_index=req.option_index)
        if answer.get("ok"):
            return
        if answer.get("reason") != "not a select":
            raise ActionFailedError(f"{e.id}: {answer.get('reason')}; its options are {answer.get('options')}",
                                    code="no_such_option", context={"options": answer.get("options")})
    # Anything else (a native combo box, a list, an ARIA listbox): opened with a click
    # where it is closed, then the option is clicked.
    if "expanded" not in e.states and e.role in ("combobox", "menubutton", "button"):
        await actor.pointer("click", t)
    option = await actor.option_of(e, req.option, req.option_index)
    if option.source == "atspi":
        # (A native popup's items are placed where its toolkit says, which a popup
        # surface does not always tell truly: the item's own action picks it.)
        await actor.native_action(option, "click")
    else:
        await actor.click(option)


async def _clear_text(actor: "Actor", t: Target, req: ActRequest) -> None:
    await actor.click_into(t)
    await actor.desktop.keyboard(action="key", keys=["ctrl+a", "backspace"])


async def _key(actor: "Actor", t: Target, req: ActRequest) -> None:
    await _focus(actor, t, req)
    await actor.desktop.keyboard(action="key", keys=req.keys)


async def _drag(actor: "Actor", t: Target, req: ActRequest) -> None:
    e = t.element
    if req.to.target is not None:
        end = actor.lookup(req.to.target)
        if end.display_id != e.display_id:
            raise ActionFailedError(f"{end.id} is on display {end.display_id}, {e.id} on {e.display_id}: a drag stays "
                                    "on one display", code="cross_display")
        point = actor.centre(end)
    else:
        point = req.to.point
    x, y = t.point
    # (Moved in steps over a moment: HTML drag and drop, and most toolkits, start a drag
    # only after the pointer moved while pressed.)
    await actor.desktop.pointer(action="drag", display=e.display_id, x=round(x, 2), y=round(y, 2),
                                path=[[round(point[0], 2), round(point[1], 2)]], duration_ms=DRAG_MS)


HANDLERS: dict[str, Handler] = {
    "click": _click,
    "double_click": _double_click,
    "right_click": _right_click,
    "hover": _hover,
    "focus": _focus,
    "type": _type,
    "set_value": _set_value,
    "scroll_into_view": _scroll_into_view,
    "invoke": _invoke,
    "select": _select,
    "clear_text": _clear_text,
    "key": _key,
    "drag": _drag,
}
# Actions that need the element on screen and a point on it.
_POINTED = frozenset({"click", "double_click", "right_click", "hover", "type", "set_value", "scroll_into_view",
                      "select", "clear_text", "key", "drag"})
# Roles a select action picks among, and how long it waits for them to show.
_OPTION_ROLES = frozenset({"option", "menuitem", "menuitemradio", "menuitemcheckbox", "listitem", "treeitem", "cell"})
OPTIONS_WAIT_S = 3.0
DRAG_MS = 400


def _inside(ident: str, ancestor: str, parents: dict[str, str | None]) -> bool:
    seen, p = set(), parents.get(ident)
    while p is not None and p not in seen:
        if p == ancestor:
            return True
        seen.add(p)
        p = parents.get(p)
    return False


# GTK 3 drops a click on a menu item that comes within half a second of the press that
# opened the menu (its menu shell takes such a release for the end of a press, drag and
# release on the menu bar). Measured with LibreOffice's Format menu: the item clicked
# 0.1 and 0.3 s after the menu was, nothing; 0.7 s after, its dialog. A native menu
# item is clicked no sooner than this after this actor's previous press.
MENU_GRACE_S = 0.55
_MENU_ROLES = frozenset({"menu", "menuitem", "menuitemcheckbox", "menuitemradio"})


def lookup_element(by_id: dict[str, Element], registry: IdRegistry, ident: str) -> Element:
    """The element ``ident`` of the newest scene (``by_id``), or a clear error: 409
    ``stale_element`` for an id the registry issued that is gone, 409 ``not_actionable``
    for OCR text, 404 ``unknown_element`` for one never issued."""
    element = by_id.get(ident)
    if element is not None:
        return element
    if ident.startswith("t"):
        raise ActionFailedError(f"{ident} is OCR text; act on accessibility elements (a...) or click its box "
                                "through desktopd", code="not_actionable")
    gone = registry.retired(ident)
    if gone is not None or registry.issued(ident):
        what = f" (it was {gone.role} {gone.name!r})" if gone is not None and gone.role else ""
        raise ActionFailedError(f"{ident} is stale: that element is gone{what}; GET /api/v1/scene for current ids",
                                code="stale_element")
    raise NotFoundError(f"no element {ident}; ids come from GET /api/v1/scene (mode=agent-turn for a fresh one)",
                        code="unknown_element")


class Actor:
    def __init__(self, engine: SceneEngine, desktop: Desktop, bridge: Bridge | None,
                 input_lock: asyncio.Lock | None = None, gate: Gate | None = None) -> None:
        self.engine = engine
        self.desktop = desktop
        self.bridge = bridge
        self.gate = gate  # the policy and the trace (None: neither)
        # One action at a time: input is a shared resource (the provider adapters hold
        # the same lock, so an adapter's drag never interleaves with an /act click).
        self.input_lock = input_lock or asyncio.Lock()
        self._pressed = 0.0  # when this actor last pressed a button (monotonic)

    async def pointer(self, action: str, t: Target, **extra) -> None:
        x, y = t.point
        pressing = action in ("click", "down")
        if pressing and t.element.source == "atspi" and t.element.role in _MENU_ROLES:
            wait = self._pressed + MENU_GRACE_S - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
        await self.desktop.pointer(action=action, display=t.element.display_id, x=round(x, 2), y=round(y, 2), **extra)
        if pressing:
            self._pressed = time.monotonic()

    async def click_into(self, t: Target) -> None:
        """Click a field to focus it before keys go to it. A page's field must then have
        the focus: a menu or a popup of the browser's own (the tab strip's menu, a
        ``<select>``'s list) is drawn over the page where neither the page's hit test nor
        Sway's window list sees it, and takes the click for itself. Keys sent after such
        a click would go wherever the focus was (Ctrl+A and Backspace too), so the
        action stops there with 409 ``not_focused``."""
        await self.pointer("click", t)
        e = t.element
        if e.source != "cdp" or self.bridge is None:
            return
        deadline = time.monotonic() + FOCUS_WAIT_S
        while True:
            try:
                if (await self.bridge.element("focused", e.ref)).get("focused"):
                    return
            except NotFoundError:
                return  # the node went away with the click (a page that navigated): nothing to ask
            if time.monotonic() >= deadline:
                x, y = t.point
                raise ActionFailedError(f"the click at ({x:.0f}, {y:.0f}) did not focus {e.id} ({e.role} {e.name!r}): "
                                        "something the scene does not show took it (a menu or a popup of the browser's "
                                        "own?). No key was sent; a screenshot shows what is there", code="not_focused")
            await asyncio.sleep(0.05)

    def lookup(self, ident: str) -> Element:
        """The element ``ident`` named in the newest scene, or a clear 404/409."""
        return lookup_element(self.engine.by_id, self.engine.ids, ident)

    async def act(self, req: ActRequest) -> dict:
        async with taking_turn(self.input_lock):
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
            point = await self._aim(element) if req.action in _POINTED else self._centre_if_shown(element)
            if point is None and not scrolled:
                # Covered where it is (a fixed header, a popup): bring it to the middle.
                element = await self._scroll_into_view(element)
                scrolled = True
                point = await self._aim(element)
            if point is None:
                raise ActionFailedError(f"{element.id} ({element.role} {element.name!r}) is covered by another element "
                                        "at every point tried", code="occluded")
            raised = await self._bring_up(element, point) if req.action in _POINTED else None
            target = Target(element, point)
            async with traced(self.gate, req.action, req.model_dump(exclude={"target"}), element=element,
                              point=point, via="act") as step:
                before = await self.engine.frame_signatures([element.display_id])
                await HANDLERS[req.action](self, target, req)
                changed, settled = await self.engine.settle(element.display_id, before[element.display_id],
                                                            req.settle_ms)
                self.engine.mark_dirty()
                step.receipt = {
                    "ok": True,
                    "action": req.action,
                    "target": {"id": element.id, "role": element.role, "name": element.name,
                               "bbox": list(device_rect(element.bbox)) if element.bbox else None,
                               "source": element.source, "window_id": element.window_id},
                    "display_id": element.display_id,
                    "point": [round(target.point[0], 1), round(target.point[1], 1)] if target.point else None,
                    "scrolled": scrolled,
                    "raised": raised,
                    "changed": changed,
                    "settled": settled,
                    "elapsed_ms": round((time.monotonic() - started) * 1000),
                    "step": step.number or None,  # (in the trace being recorded)
                }
            if self.engine.metrics is not None:
                self.engine.metrics.actions.labels(req.action).inc()
            return step.receipt

    def _visible(self, e: Element):
        if e.bbox is None:
            raise ActionFailedError(f"{e.id} ({e.role} {e.name!r}) has no box on screen (hidden)", code="not_visible")
        part = visible_part(e.bbox, e.clip) if e.clip is not None else e.bbox
        if part is None:
            raise ActionFailedError(f"{e.id} ({e.role} {e.name!r}) is not on screen and could not be scrolled "
                                    "into view", code="not_visible")
        return part

    def centre(self, e: Element) -> tuple[float, float]:
        return probe_points(self._visible(e))[0]

    def _centre_if_shown(self, e: Element) -> tuple[float, float] | None:
        if e.bbox is None or (e.clip is not None and visible_part(e.bbox, e.clip) is None):
            return None
        return self.centre(e)

    async def native_action(self, e: Element, action: str) -> None:
        """An AT-SPI action (``click``: its default one; ``focus``) on a native element."""
        if self.engine.atspi is None:
            raise ActionFailedError(f"{e.id}: this aggregator reads no native apps", code="unsupported_action")
        try:
            done = await self.engine.atspi.act(e.ref["atspi"], action)
        except Exception as exc:  # the reader says why (no such action, app not answering)
            raise ActionFailedError(f"{e.id} ({e.role} {e.name!r}): {action} failed: {exc}",
                                    code="action_failed") from exc
        if not done:
            raise ActionFailedError(f"{e.id} is gone", code="stale_element")

    async def click(self, e: Element) -> None:
        """A real click on an element of the newest scene (scrolled to where it shows)."""
        if e.visibility != "visible":
            e = await self._scroll_into_view(e)
        point = await self._aim(e)
        if point is None:
            raise ActionFailedError(f"{e.id} ({e.role} {e.name!r}) is covered", code="occluded")
        await self._bring_up(e, point)
        await self.pointer("click", Target(e, point))

    async def option_of(self, e: Element, name: str | None, index: int | None) -> Element:
        """The option to pick for a select on ``e``: among its descendants, else among the
        options showing in its app (a popup list is a window of its own). Waits a moment
        for them to show after the click that opened it."""
        deadline = time.monotonic() + OPTIONS_WAIT_S
        while True:
            scene = await self.engine.scene("active")
            parents = {x.id: x.parent for x in scene.ax}
            options = [x for x in scene.ax if x.role in _OPTION_ROLES and _inside(x.id, e.id, parents)]
            if not options:
                same_app = (lambda x: x.ref.get("tab") == e.ref.get("tab")) if e.source == "cdp" else (
                    lambda x: x.ref.get("pid") == e.ref.get("pid"))
                options = [x for x in scene.ax if x.role in _OPTION_ROLES and x.source == e.source and same_app(x)
                           and x.visibility in ("visible", "partial")]
            if index is not None:
                found = options[index] if index < len(options) else None
            else:
                found = (next((x for x in options if x.name == name), None)
                         or next((x for x in options if x.name.strip().lower() == name.strip().lower()), None))
            if found is not None:
                return found
            if time.monotonic() >= deadline:
                raise ActionFailedError(f"{e.id} ({e.role} {e.name!r}) has no option "
                                        f"{name if index is None else f'#{index}'!r}; options seen: "
                                        f"{[x.name for x in options][:30]}", code="no_such_option",
                                        context={"options": [x.name for x in options][:100]})
            await asyncio.sleep(0.2)

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

    async def _bring_up(self, e: Element, point: tuple[float, float]) -> str | None:
        """Raise the element's window when another window is drawn over ``point`` (a
        dialog of its app above it), so that the input lands on the element and not on
        what covers it. Returns the id of the window raised (None: nothing covered it);
        409 ``occluded`` when it stays covered (a floating window over a tiled one)."""
        if e.window_id is None or self.engine.last is None:
            return None
        if window_above(e.window_id, point, self.engine.last.windows) is None:
            return None
        try:
            await self.desktop.focus_window(e.window_id)
        except NotFoundError:
            raise ActionFailedError(f"{e.id} is stale: its window {e.window_id} closed", code="stale_element") from None
        deadline = time.monotonic() + RAISE_WAIT_S
        while (above := window_above(e.window_id, point, (await self.desktop.tree()).windows)) is not None:
            if time.monotonic() >= deadline:
                raise ActionFailedError(f"{e.id} ({e.role} {e.name!r}) is under the window {above.id} "
                                        f"({above.title!r}) and stayed there when its own window was raised",
                                        code="occluded")
            await asyncio.sleep(0.05)
        return e.window_id

    async def _scroll_into_view(self, e: Element) -> Element:
        if e.visibility == "hidden":
            raise ActionFailedError(f"{e.id} ({e.role} {e.name!r}) is hidden: it has no box", code="not_visible")
        if e.source != "cdp" or self.bridge is None:
            if e.visibility == "partial":
                return e
            raise ActionFailedError(f"{e.id} is outside its window and this source cannot scroll it",
                                    code="not_visible")
        for _ in range(SCROLL_ROUNDS):
            await self.bridge.element("scroll_into_view", e.ref)
            await self.engine.scene("active")
            e = self.lookup(e.id)
            if e.visibility == "visible":
                return e
        return e
