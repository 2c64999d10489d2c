"""One DOM node, by the ids /layout gives (tab, frameId, backendDOMNodeId): what the
scene aggregator needs to act on it with real input. None of these send input events:

- ``hit_test``: is this node (or something inside it, through shadow roots and
  same-process frames) what the page hit-tests at viewport CSS point (x, y)? For a node in
  an out-of-process frame: is that frame's iframe what is hit there (its inside is hit-
  tested by its own renderer). Measured: ``DOM.getNodeForLocation`` takes
  *document*-relative CSS px (on a page scrolled by 654 px a button at viewport y 346 is
  found at y 1000 and nothing at 346), so the scroll offset is added here.
- ``scroll_into_view``: scroll every scroller around it so that it sits in the middle
  of the viewport (also when the browser already counts it as visible but something
  covers it).
- ``focus``: DOM focus, for elements a click would activate.
- ``focused``: whether the node, or something inside it, is its document's focused
  element (through shadow roots). The aggregator asks after the click that focuses a
  field: a menu or a popup of the browser's own is drawn over the page where neither the
  page's hit test nor Sway's window list can see it, and takes such a click for itself.
- ``invoke``: the element's default action with no pointer (its ``click()``), as an
  accessibility client's DoAction would: for what real input cannot reach.
- ``select``: choose an option of a ``<select>`` by its text or index, as a user's pick
  would leave it (selected, focused, input and change fired). Chromium draws a select's
  list as a popup of its own; picking through it takes two clicks and a popup to place.
  Anything else answers ``{"ok": false, "reason": "not a select"}`` and the aggregator
  opens it and clicks the option.
- ``secret``: whether it is a field for a secret (a password input, or one whose
  ``autocomplete`` asks for a password, a card number or a one-time code): the
  accessibility tree does not say so while the field is empty, and what is typed into it
  must stay out of traces and logs."""

from __future__ import annotations

from typing import Any

from ..cdp import CDPConnection, CDPError
from ..common.errors import NotFoundError
from ..geometry import viewport_to_document
from .browser import Browser, TabGone

__all__ = ["element_action"]

_CONTAINS = """function (hit) {
  for (let n = hit; n; ) {
    if (n === this) return true;
    if (n.parentNode) { n = n.parentNode; continue; }
    if (n.host) { n = n.host; continue; }           // out of a shadow root
    const view = n.defaultView;                      // out of a same-process frame
    n = view && view.frameElement;
  }
  return false;
}"""

_SCROLL = """function () {
  const el = this.nodeType === 1 ? this : this.parentElement;
  if (el) el.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
  return !!el;
}"""


_FOCUSED = """function () {
  let active = document.activeElement;
  while (active && active.shadowRoot && active.shadowRoot.activeElement) active = active.shadowRoot.activeElement;
  for (let n = active; n; n = n.parentNode || n.host) {
    if (n === this) return true;
  }
  return false;
}"""

_INVOKE = """function () {
  const el = this.nodeType === 1 ? this : this.parentElement;
  if (!el || typeof el.click !== 'function') return false;
  el.click();
  return true;
}"""

_SECRET = """function () {
  const el = this.nodeType === 1 ? this : this.parentElement;
  if (!el || el.tagName !== 'INPUT') return {secret: false};
  const auto = (el.getAttribute('autocomplete') || '').toLowerCase();
  return {secret: el.type === 'password' || /password|cc-number|cc-csc|one-time-code/.test(auto)};
}"""

_SELECT = """function (name, index) {
  const el = this.nodeType === 1 ? this : this.parentElement;
  if (!el || el.tagName !== 'SELECT') return {ok: false, reason: 'not a select'};
  const options = Array.from(el.options);
  const texts = options.map(o => o.text.trim());
  let i = index;
  if (i === null) {
    i = texts.indexOf(name);
    if (i < 0) i = texts.findIndex(t => t.toLowerCase() === name.toLowerCase());
  }
  if (i < 0 || i >= options.length) return {ok: false, reason: 'no such option', options: texts};
  if (options[i].disabled) return {ok: false, reason: 'the option is disabled', options: texts};
  el.focus();
  if (el.selectedIndex !== i) {
    el.selectedIndex = i;
    el.dispatchEvent(new Event('input', {bubbles: true}));
    el.dispatchEvent(new Event('change', {bubbles: true}));
  }
  return {ok: true, selected: texts[i], index: i};
}"""


async def _sessions(browser: Browser, tab: str, frame_id: str | None) -> tuple[CDPConnection, str, str, bool]:
    """(connection, the tab's session, the node's session, whether the node is in an
    out-of-process frame)."""
    conn = await browser.targets.ensure()
    try:
        page = await browser.targets.session(tab)
    except TabGone as exc:
        raise NotFoundError(f"no tab {tab!r}: {exc}", code="unknown_tab") from exc
    known = browser.targets.tabs.get(tab)
    frame = known.oopifs.get(frame_id) if known is not None and frame_id else None
    if frame is not None:
        return conn, page, frame.session_id, True
    return conn, page, page, False


async def _object(conn: CDPConnection, session: str, backend_id: int, context: int | None = None) -> str:
    params: dict[str, Any] = {"backendNodeId": backend_id}
    if context is not None:
        params["executionContextId"] = context
    try:
        reply = await conn.send("DOM.resolveNode", params, session=session)
    except CDPError as exc:
        raise NotFoundError(f"node {backend_id} is gone: {exc.message}", code="unknown_node") from exc
    return reply["object"]["objectId"]


# (connection, session, frame) -> the id of our script world there. A navigation makes
# a new one; a stale id fails DOM.resolveNode and is made again.
_worlds: dict[tuple[int, str, str], int] = {}


async def _world(conn: CDPConnection, session: str, frame_id: str, *, fresh: bool = False) -> int:
    """A script world of our own in ``frame_id``: both nodes of a containment check must
    be resolved in one world (the page's main world is not always the default one)."""
    key = (id(conn), session, frame_id)
    if not fresh and key in _worlds:
        return _worlds[key]
    if len(_worlds) > 256:
        _worlds.clear()
    reply = await conn.send("Page.createIsolatedWorld", {"frameId": frame_id, "worldName": "deskbox-hit-test"},
                            session=session)
    _worlds[key] = reply["executionContextId"]
    return _worlds[key]


async def element_action(browser: Browser, action: str, tab: str, frame_id: str | None, backend_id: int,
                         x: float | None = None, y: float | None = None, *, option: str | None = None,
                         option_index: int | None = None) -> dict[str, Any]:
    conn, page, session, out_of_process = await _sessions(browser, tab, frame_id)
    if action == "secret":
        target = await _object(conn, session, backend_id)
        reply = await conn.send("Runtime.callFunctionOn", {"objectId": target, "functionDeclaration": _SECRET,
                                                           "returnByValue": True}, session=session)
        return reply.get("result", {}).get("value") or {"secret": False}
    if action == "focused":
        target = await _object(conn, session, backend_id)
        reply = await conn.send("Runtime.callFunctionOn", {"objectId": target, "functionDeclaration": _FOCUSED,
                                                           "returnByValue": True}, session=session)
        return {"focused": bool(reply.get("result", {}).get("value"))}
    if action in ("invoke", "select"):
        target = await _object(conn, session, backend_id)
        call: dict[str, Any] = {"objectId": target, "returnByValue": True, "userGesture": True,
                                "functionDeclaration": _INVOKE if action == "invoke" else _SELECT}
        if action == "select":
            call["arguments"] = [{"value": option}, {"value": option_index}]
        reply = await conn.send("Runtime.callFunctionOn", call, session=session)
        value = reply.get("result", {}).get("value")
        return {"ok": bool(value)} if action == "invoke" else value
    if action == "scroll_into_view":
        target = await _object(conn, session, backend_id)
        await conn.send("Runtime.callFunctionOn", {"objectId": target, "functionDeclaration": _SCROLL,
                                                   "returnByValue": True}, session=session)
        return {"ok": True}
    if action == "focus":
        try:
            await conn.send("DOM.focus", {"backendNodeId": backend_id}, session=session)
        except CDPError as exc:
            return {"ok": False, "reason": exc.message}
        return {"ok": True}
    assert action == "hit_test" and x is not None and y is not None
    metrics = await conn.send("Page.getLayoutMetrics", session=page)
    viewport = metrics.get("cssVisualViewport") or metrics.get("visualViewport") or {}
    doc_x, doc_y = viewport_to_document((x, y), (viewport.get("pageX", 0.0), viewport.get("pageY", 0.0)))
    try:
        at = await conn.send("DOM.getNodeForLocation", {"x": round(doc_x), "y": round(doc_y),
                                                        "includeUserAgentShadowDOM": False,
                                                        "ignorePointerEventsNone": True}, session=page)
    except CDPError as exc:
        return {"hit": False, "reason": exc.message}
    hit_backend = at.get("backendNodeId")
    if out_of_process:
        # Only the iframe is visible from here: is the frame what the point reaches?
        owner = await conn.send("DOM.getFrameOwner", {"frameId": frame_id}, session=page)
        return {"hit": hit_backend == owner.get("backendNodeId"), "at": hit_backend}
    if hit_backend == backend_id:
        return {"hit": True, "at": hit_backend}
    # The hit node and the target, in one world of the hit node's frame. A target in
    # another frame cannot contain it (an iframe's owner element is in its parent's
    # frame, and the walk below climbs from frames to their owners).
    hit_frame = at.get("frameId") or frame_id or tab
    world = await _world(conn, page, hit_frame)
    try:
        hit = await _object(conn, page, hit_backend, world)
    except NotFoundError:
        world = await _world(conn, page, hit_frame, fresh=True)
        hit = await _object(conn, page, hit_backend, world)
    try:
        target = await _object(conn, page, backend_id, world)
    except NotFoundError:
        return {"hit": False, "at": hit_backend}
    reply = await conn.send("Runtime.callFunctionOn", {"objectId": target, "functionDeclaration": _CONTAINS,
                                                       "arguments": [{"objectId": hit}], "returnByValue": True},
                            session=page)
    return {"hit": bool(reply.get("result", {}).get("value")), "at": hit_backend}
