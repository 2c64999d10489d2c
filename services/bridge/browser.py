"""The bridge's view of Chromium: one CDP connection, one flat session per tab (and per
out-of-process iframe), and layouts gathered in bulk.

A layout is a handful of pipelined calls per frame, never one per node: the full AX
tree, one DOMSnapshot with layout bounds, layout metrics and one small script for the
window metrics. Concurrent requests for a tab share one gathering; a tab whose change
counter (a MutationObserver plus scroll and resize listeners installed in the page) did
not move gets its last layout again.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field

import orjson

from ..cdp import CDPClosed, CDPConnection, CDPError
from ..common.errors import ActionFailed, NotFoundError, Unavailable
from ..common.logging import get_logger
from ..geometry import frame_document_offset
from .chromium import Chromium
from .layout import SNAPSHOT_STYLES, box_json, index_snapshot

__all__ = ["Browser", "TabGone"]

log = get_logger("deskbox.bridge")

# Installed in every page: a counter that moves when the DOM, the scroll position or the
# viewport changes, read with the window metrics in one evaluation.
_WATCH_SOURCE = r"""
(() => {
  const key = Symbol.for('deskbox.changes');
  if (window[key]) return;
  // n: changes so far; doc: this document's identity (a navigation makes a new one).
  const state = {n: 0, doc: Math.random().toString(36).slice(2)};
  Object.defineProperty(window, key, {value: state, enumerable: false});
  const bump = () => { state.n++; };
  new MutationObserver(bump).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  for (const type of ['scroll', 'resize', 'load', 'transitionend', 'animationend', 'focusin', 'input']) {
    window.addEventListener(type, bump, {capture: true, passive: true});
  }
})();
"""

_METRICS_EXPRESSION = r"""
(() => {
  const s = window[Symbol.for('deskbox.changes')];
  return JSON.stringify({
    changes: s ? s.n : -1, doc: s ? s.doc : null, url: location.href, outerWidth, outerHeight, innerWidth, innerHeight,
    devicePixelRatio, scrollX, scrollY, screenX, screenY,
    visibility: document.visibilityState, title: document.title,
  });
})()
"""

CACHE_MAX_AGE = 5.0
NAVIGATION_RETRIES = 2


class TabGone(Exception):
    pass


@dataclass
class FrameSession:
    session_id: str
    target_id: str
    url: str = ""


@dataclass
class Tab:
    target_id: str
    session_id: str | None = None
    oopifs: dict[str, FrameSession] = field(default_factory=dict)
    inflight: asyncio.Future | None = None
    cached: "Snapshot | None" = None
    cached_key: tuple | None = None
    cached_at: float = 0.0


class Browser:
    def __init__(self, chromium: Chromium) -> None:
        self.chromium = chromium
        self.conn: CDPConnection | None = None
        self.tabs: dict[str, Tab] = {}
        self._sessions: dict[str, str] = {}  # session id -> tab target id (tabs and their frames)
        self._connect_lock = asyncio.Lock()
        # Open tabs' URLs in target order: what a relaunched Chromium opens again.
        self._page_urls: dict[str, str] = {}

    # -- connection -------------------------------------------------------------------

    async def connect(self) -> None:
        async with self._connect_lock:
            await self.chromium.up.wait()
            assert self.chromium.ws_url is not None
            conn = CDPConnection()
            await conn.connect(self.chromium.ws_url)
            conn.on("Target.attachedToTarget", self._on_attached)
            conn.on("Target.detachedFromTarget", self._on_detached)
            conn.on("Target.targetDestroyed", self._on_destroyed)
            conn.on("Target.targetCreated", self._on_target_info)
            conn.on("Target.targetInfoChanged", self._on_target_info)
            self.conn = conn
            self._page_urls.clear()
            await conn.send("Target.setDiscoverTargets", {"discover": True})
            self.tabs.clear()
            self._sessions.clear()

    async def ensure(self) -> CDPConnection:
        if self.conn is None or self.conn.closed.is_set():
            if not self.chromium.up.is_set():
                raise Unavailable("Chromium is not running (it is being relaunched)", code="browser_down")
            await self.connect()
        assert self.conn is not None
        return self.conn

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()

    def _on_attached(self, params: dict, parent: str | None) -> None:
        info = params["targetInfo"]
        if info["type"] == "iframe" and parent in self._sessions:
            tab = self.tabs.get(self._sessions[parent])
            if tab is not None:
                tab.oopifs[info["targetId"]] = FrameSession(params["sessionId"], info["targetId"], info.get("url", ""))
                self._sessions[params["sessionId"]] = tab.target_id
                asyncio.ensure_future(self._prepare_frame(params["sessionId"]))

    def _on_detached(self, params: dict, _parent: str | None) -> None:
        session = params.get("sessionId")
        tab_id = self._sessions.pop(session, None)
        tab = self.tabs.get(tab_id) if tab_id else None
        if tab is None:
            return
        if tab.session_id == session:
            self.tabs.pop(tab_id, None)
        else:
            tab.oopifs = {k: v for k, v in tab.oopifs.items() if v.session_id != session}

    def _on_destroyed(self, params: dict, _parent: str | None) -> None:
        self.tabs.pop(params.get("targetId"), None)
        if self._page_urls.pop(params.get("targetId"), None) is not None:
            self._remember_tabs()

    def _on_target_info(self, params: dict, _parent: str | None) -> None:
        info = params["targetInfo"]
        if info.get("type") == "page" and not info.get("url", "").startswith(("chrome:", "devtools:")):
            self._page_urls[info["targetId"]] = info["url"]
            self._remember_tabs()

    def _remember_tabs(self) -> None:
        urls = [u for u in self._page_urls.values() if u]
        self.chromium.tab_urls = urls or ["about:blank"]

    async def _prepare_frame(self, session: str) -> None:
        """Every page and frame session: a change counter and auto-attach for iframes."""
        assert self.conn is not None
        try:
            await asyncio.gather(
                self.conn.send("Page.enable", session=session),
                self.conn.send("Page.addScriptToEvaluateOnNewDocument", {"source": _WATCH_SOURCE}, session=session),
                self.conn.send("Runtime.evaluate", {"expression": _WATCH_SOURCE}, session=session),
                self.conn.send("Target.setAutoAttach",
                               {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True},
                               session=session),
            )
        except (CDPError, CDPClosed) as exc:
            log.info("frame preparation failed", error=str(exc))

    # -- targets ----------------------------------------------------------------------

    async def targets(self) -> list[dict]:
        conn = await self.ensure()
        return (await conn.send("Target.getTargets"))["targetInfos"]

    async def page_targets(self) -> list[dict]:
        return [t for t in await self.targets() if t["type"] == "page"]

    async def _session(self, target_id: str) -> str:
        conn = await self.ensure()
        tab = self.tabs.get(target_id)
        if tab is not None and tab.session_id is not None:
            return tab.session_id
        try:
            reply = await conn.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})
        except CDPError as exc:
            raise TabGone(str(exc)) from exc
        tab = self.tabs.setdefault(target_id, Tab(target_id))
        tab.session_id = reply["sessionId"]
        self._sessions[tab.session_id] = target_id
        await self._prepare_frame(tab.session_id)
        return tab.session_id

    async def new_tab(self, url: str) -> dict:
        conn = await self.ensure()
        reply = await conn.send("Target.createTarget", {"url": url})
        return {"id": reply["targetId"], "url": url}

    async def activate(self, target_id: str) -> None:
        conn = await self.ensure()
        try:
            await conn.send("Target.activateTarget", {"targetId": target_id})
        except CDPError as exc:
            raise NotFoundError(f"no tab {target_id!r}", code="unknown_tab") from exc

    async def close_tab(self, target_id: str) -> None:
        conn = await self.ensure()
        try:
            await conn.send("Target.closeTarget", {"targetId": target_id})
        except CDPError as exc:
            raise NotFoundError(f"no tab {target_id!r}", code="unknown_tab") from exc
        self.tabs.pop(target_id, None)

    async def navigate(self, target_id: str, url: str) -> dict:
        conn = await self.ensure()
        session = await self._session(target_id)
        reply = await conn.send("Page.navigate", {"url": url}, session=session)
        if reply.get("errorText"):
            raise ActionFailed(f"navigation failed: {reply['errorText']}", code="navigation_failed")
        return {"id": target_id, "url": url, "frameId": reply.get("frameId")}

    # -- layout -----------------------------------------------------------------------

    async def layout(self, target: dict) -> "Snapshot":
        """One tab's layout; concurrent callers share the gathering."""
        target_id = target["targetId"]
        tab = self.tabs.setdefault(target_id, Tab(target_id))
        if tab.inflight is None or tab.inflight.done():
            tab.inflight = asyncio.ensure_future(self._layout(tab, target))
        return await asyncio.shield(tab.inflight)

    async def _layout(self, tab: Tab, target: dict) -> "Snapshot":
        conn = await self.ensure()
        session = await self._session(tab.target_id)
        for _attempt in range(NAVIGATION_RETRIES + 1):
            metrics = await _evaluate_json(conn, session, _METRICS_EXPRESSION)
            key = (target.get("url"), metrics)
            if tab.cached is not None and tab.cached_key == key and time.monotonic() - tab.cached_at < CACHE_MAX_AGE:
                return tab.cached
            layout = Snapshot(await self._gather(conn, tab, session, metrics))
            after = await _evaluate_json(conn, session, _METRICS_EXPRESSION)
            if (after["doc"], after["url"]) != (metrics["doc"], metrics["url"]):
                # The tab navigated while its parts were gathered: they may come from two
                # documents. Gather again from the new one.
                tab.cached = None
                continue
            if after == metrics:
                tab.cached, tab.cached_key, tab.cached_at = layout, key, time.monotonic()
            else:
                # Same document, changed meanwhile (a ticking page): consistent enough to
                # answer, not to answer again from cache.
                tab.cached = None
            return layout
        raise TabGone(f"the tab kept navigating during {NAVIGATION_RETRIES + 1} attempts to read it")

    async def _gather(self, conn: CDPConnection, tab: Tab, session: str, metrics: dict) -> dict:
        ax_main, snapshot, page_metrics, frame_tree, window = await asyncio.gather(
            _safe(conn.send("Accessibility.getFullAXTree", {}, session=session)),
            conn.send("DOMSnapshot.captureSnapshot", {"computedStyles": SNAPSHOT_STYLES, "includeDOMRects": False},
                      session=session),
            conn.send("Page.getLayoutMetrics", session=session),
            conn.send("Page.getFrameTree", session=session),
            _safe(conn.send("Browser.getWindowForTarget", {"targetId": tab.target_id})),
        )
        docs = index_snapshot(snapshot)
        scroll = docs[0].scroll if docs else (0.0, 0.0)
        main_frame = frame_tree["frameTree"]["frame"]["id"]
        frames = [{"frameId": main_frame, "url": frame_tree["frameTree"]["frame"]["url"], "parentFrameId": None,
                   "outOfProcess": False, "offset": {"x": 0, "y": 0}}]
        boxes: dict[tuple[str, int], tuple] = {}
        for doc in docs:
            fid = doc.frame_id or main_frame
            for backend, box in doc.boxes.items():
                boxes[(fid, backend)] = box
            if doc.frame_id and doc.frame_id != main_frame:
                frames.append({"frameId": doc.frame_id, "url": doc.url, "parentFrameId": None, "outOfProcess": False,
                               "offset": {"x": doc.offset[0], "y": doc.offset[1]}})
        # Same-process child frames have their own AX trees.
        child_ids = [f["frameId"] for f in frames[1:]]
        child_ax = await asyncio.gather(*[
            _safe(conn.send("Accessibility.getFullAXTree", {"frameId": fid}, session=session)) for fid in child_ids
        ])
        trees: list[tuple[str, list[dict] | None, str]] = [(main_frame, (ax_main or {}).get("nodes"), "")]
        trees += [(fid, (ax or {}).get("nodes"), "") for fid, ax in zip(child_ids, child_ax)]
        # Out-of-process frames: their own session, placed at their owner <iframe>.
        owners = {backend: origin for doc in docs for backend, origin in doc.frame_origins.items()}
        for oopif in list(tab.oopifs.values()):
            placed = await self._oopif(conn, session, oopif, owners)
            if placed is None:
                continue
            frame, oopif_boxes, nodes = placed
            frames.append(frame)
            boxes.update({(oopif.target_id, b): box for b, box in oopif_boxes.items()})
            trees.append((oopif.target_id, nodes, f"{oopif.target_id[:8]}:"))
        nodes, source = _join(trees, boxes, scroll, docs, main_frame)
        vv, lv, cs = page_metrics["cssVisualViewport"], page_metrics["cssLayoutViewport"], page_metrics["cssContentSize"]
        zoom = vv.get("zoom", 1)
        bounds = (window or {}).get("bounds", {})
        return {
            "viewport": {
                "visualViewport": {"x": vv["pageX"], "y": vv["pageY"], "width": vv["clientWidth"],
                                   "height": vv["clientHeight"], "scale": vv.get("scale", 1), "zoom": zoom},
                "layoutViewport": {"x": lv["pageX"], "y": lv["pageY"], "width": lv["clientWidth"],
                                   "height": lv["clientHeight"]},
                "contentSize": {"width": cs["width"], "height": cs["height"]},
            },
            "window": {
                "outerWidth": metrics["outerWidth"], "outerHeight": metrics["outerHeight"],
                "innerWidth": metrics["innerWidth"], "innerHeight": metrics["innerHeight"],
                "devicePixelRatio": metrics["devicePixelRatio"], "pageZoom": zoom,
                "browserChromeHeight": round(metrics["outerHeight"] - metrics["innerHeight"] * zoom, 2),
                "scrollX": metrics["scrollX"], "scrollY": metrics["scrollY"],
                "windowBounds": {k: bounds.get(k) for k in ("left", "top", "width", "height")} if bounds else None,
                "windowState": bounds.get("windowState") if bounds else None,
            },
            "visibility": metrics["visibility"],
            "title": metrics["title"],
            "frames": frames,
            "source": source,
            "nodes": nodes,
        }

    async def _oopif(self, conn: CDPConnection, parent_session: str, frame: FrameSession,
                     owners: dict[int, tuple[float, float]]):
        try:
            owner = await conn.send("DOM.getFrameOwner", {"frameId": frame.target_id}, session=parent_session)
            origin = owners.get(owner["backendNodeId"])
            if origin is None:
                return None
            snapshot, ax = await asyncio.gather(
                conn.send("DOMSnapshot.captureSnapshot", {"computedStyles": SNAPSHOT_STYLES}, session=frame.session_id),
                _safe(conn.send("Accessibility.getFullAXTree", {}, session=frame.session_id)),
            )
        except (CDPError, CDPClosed) as exc:
            log.info("out-of-process frame skipped", frame=frame.target_id, error=str(exc))
            return None
        first = (snapshot.get("documents") or [{}])[0]
        scroll = (float(first.get("scrollOffsetX", 0)), float(first.get("scrollOffsetY", 0)))
        offset = frame_document_offset(origin, scroll)
        docs = index_snapshot(snapshot, offset)
        merged = {b: box for doc in docs for b, box in doc.boxes.items()}
        info = {"frameId": frame.target_id, "url": docs[0].url if docs else frame.url, "parentFrameId": None,
                "outOfProcess": True, "offset": {"x": offset[0], "y": offset[1]}}
        return info, merged, (ax or {}).get("nodes")


def _join(trees, boxes, scroll, docs, main_frame) -> tuple[list[dict], str]:
    """AX nodes of every frame with their boxes; a DOM fallback where a frame has no AX
    tree. Node ids of out-of-process frames are prefixed to stay unique."""
    out: list[dict] = []
    source = "ax"
    for frame_id, nodes, prefix in trees:
        if nodes is None:
            source = "mixed" if out else "dom"
            out += _dom_fallback(frame_id, docs, scroll, main_frame)
            continue
        for node in nodes:
            n = dict(node)
            if prefix:
                n["nodeId"] = prefix + n["nodeId"]
                if n.get("parentId"):
                    n["parentId"] = prefix + n["parentId"]
                n["childIds"] = [prefix + c for c in n.get("childIds", [])]
            n["frameId"] = frame_id
            box = boxes.get((frame_id, n.get("backendDOMNodeId"))) if "backendDOMNodeId" in n else None
            if box is not None and box[2] > 0 and box[3] > 0:
                n["bounds"], n["viewportBounds"] = box_json(box, scroll)
            else:
                n["bounds"] = n["viewportBounds"] = None
            out.append(n)
    return out, source


def _dom_fallback(frame_id, docs, scroll, main_frame) -> list[dict]:
    nodes = []
    for doc in docs:
        if (doc.frame_id or main_frame) != frame_id:
            continue
        for backend, box in doc.boxes.items():
            bounds, viewport = box_json(box, scroll) if box[2] > 0 and box[3] > 0 else (None, None)
            nodes.append({"nodeId": f"dom:{backend}", "backendDOMNodeId": backend, "ignored": False,
                          "role": {"type": "internalRole", "value": "generic"}, "frameId": frame_id,
                          "bounds": bounds, "viewportBounds": viewport, "source": "dom"})
    return nodes


class Snapshot:
    """One gathered layout, with its JSON serialized once per variant (all nodes, or
    the non-ignored ones) so a repeated request on an unchanged page is a lookup."""

    LAYOUT_KEYS = ("viewport", "window", "frames", "source")

    def __init__(self, layout: dict) -> None:
        self.layout = layout
        self._json: dict[bool, bytes] = {}

    @property
    def title(self) -> str:
        return self.layout["title"]

    @property
    def visible(self) -> bool:
        return self.layout["visibility"] == "visible"

    async def json(self, interesting: bool) -> bytes:
        if interesting not in self._json:
            self._json[interesting] = await asyncio.to_thread(self._serialize, interesting)
        return self._json[interesting]

    def _serialize(self, interesting: bool) -> bytes:
        nodes = self.layout["nodes"]
        if interesting:
            nodes = [n for n in nodes if not n.get("ignored")]
        return orjson.dumps({**{k: self.layout[k] for k in self.LAYOUT_KEYS}, "nodes": nodes})


async def _safe(awaitable):
    try:
        return await awaitable
    except CDPError:
        return None


async def _evaluate_json(conn: CDPConnection, session: str, expression: str) -> dict:
    try:
        reply = await conn.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)
    except CDPError as exc:
        raise TabGone(str(exc)) from exc
    value = reply.get("result", {}).get("value")
    if not isinstance(value, str):
        raise TabGone(f"the page did not answer: {reply.get('exceptionDetails', {}).get('text', 'no value')}")
    return json.loads(value)
