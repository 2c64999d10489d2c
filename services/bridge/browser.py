"""The bridge's view of Chromium: one CDP connection, one flat session per tab (and per
out-of-process iframe), and layouts gathered in bulk and then kept warm.

A first layout is a handful of pipelined calls per frame, never one per node: one
DOMSnapshot with layout bounds, the full AX tree of each frame, layout metrics and one
small script for the window metrics. The tab's tree is then kept ("Kept"): a script in
every page counts changes and lists the elements they touched (DOM mutations, focus,
input). On the next request the bridge re-reads only those parts of the AX tree
(``getPartialAXTree`` for a node and its ancestors, ``queryAXTree`` for a subtree), takes
the boxes that moved from the page (which keeps every element's last measured box) or,
when the page cannot tell, from a new DOMSnapshot, and re-serializes only the nodes whose
data or box moved; boxes taken from the page are checked against a snapshot soon after.
Elements that gained or lost a box without a DOM change (a CSS rule that shows a
menu) are re-read too. When the change is too big to patch (the document itself, a
frame added, more changes than the page listed) the tree is fetched whole again, as it
is when a request asks for ``fresh``. Concurrent requests for a tab share one gathering.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field, replace
from importlib import resources

import orjson

from ..cdp import CDPClosed, CDPConnection, CDPError
from ..common.errors import ActionFailed, InvalidRequest, NotFoundError, Unavailable
from ..common.logging import get_logger
from ..common.memory import release_memory
from ..geometry import frame_document_offset, measured_to_snapshot, moved_with
from .axtree import AXRecord, decode_nodes, partial_result, preorder, subtree_ids
from .chromium import Chromium
from .layout import SNAPSHOT_STYLES, DocumentBoxes, box_json, index_snapshot

__all__ = ["Browser", "TabGone", "Snapshot"]

log = get_logger("deskbox.bridge")

BINDING = "__deskboxChanged"


def _page_script(name: str) -> str:
    """One of the scripts the bridge runs in pages (services/bridge/page/, package data)."""
    return resources.files(__package__).joinpath("page", name).read_text(encoding="utf-8")


# Installed in every page and frame: a counter that moves when the DOM, the scroll
# position, the viewport, focus or a form field changes, and the elements touched since
# the bridge last asked: "subtree" (the element and everything in it may differ) and
# "node" (the element alone: focus moved, a radio button of its group was checked).
_WATCH_SOURCE = _page_script("watch.js").replace("__BINDING__", BINDING)

# "changes" covers this document and every same-origin frame in it (their counters and
# identities): a change in any of them makes a new key.
_METRICS_EXPRESSION = _page_script("metrics.js")

# The page keeps the boxes of at most this many elements; a refresh takes boxes from the
# page when at most this many nodes moved (each is one DOM.describeNode), from a new
# DOMSnapshot otherwise.
MEASURE_MAX_ELEMENTS = 50000
MEASURE_MAX_MOVED = 300
UNMEASURED_MAX = 20  # new nodes the page could not measure, each described to tell what it is

# What changed since the last call, in this document and every same-origin frame in it:
# [windows, overflow, 'S', subtree elements..., 'C', elements whose children changed...,
# 'N', single elements...], or 'full' when the document element or body changed as a
# whole (an attribute: a class on <body> can restyle everything). "windows" names the
# documents visited (a frame that navigated or cannot be reached shows there). Elements whose accessible name comes
# from a touched element (labels, aria-labelledby and its kind) are listed as single
# elements. With reset, only clears, and returns the windows.
_TAKE_FUNCTION = (_page_script("take.js").replace("__MAX_TRACKED__", str(MEASURE_MAX_ELEMENTS))
                  .replace("__MAX_MOVED__", str(MEASURE_MAX_MOVED)))

CACHE_MAX_AGE = 5.0  # an unchanged page is answered from cache this long, then refreshed warm
FULL_MAX_AGE = 60.0  # a kept tree is fetched whole again at least this often
WARM_SHARE = 0.3  # re-reading more than this share of a tree in parts: fetch it whole instead
WARM_MIN = 500  # (but a small tree is always patched)
NAVIGATION_RETRIES = 2
# A tab read this recently is refreshed in the background as soon as its page reports a
# change or loads a new document (after a short pause to let a burst of changes
# settle), so that the next read finds it ready.
BACKGROUND_WINDOW = 10.0
BACKGROUND_DEBOUNCE = 0.02
# Boxes measured in the page are checked against a DOMSnapshot this long after.
VERIFY_DELAY = 0.3
# How long after connecting to a browser its tabs may still be opening their pages.
OPENING_S = 5.0


class TabGone(Exception):
    pass


class _Cold(Exception):
    """The kept tree cannot be patched: fetch the tab whole."""


@dataclass
class FrameSession:
    session_id: str
    target_id: str
    url: str = ""


@dataclass(eq=False)
class OopifTree:
    """An out-of-process frame's tree and boxes (in its own document's coordinates)."""

    target_id: str
    url: str
    key: tuple
    owner: int
    records: dict[str, AXRecord] | None
    root: str | None
    boxes: dict[int, tuple]
    scroll: tuple[float, float]
    docs: list[DocumentBoxes]


@dataclass
class Measured:
    """Boxes the page measured (CSS px, document-relative) of the nodes that moved or came
    since it last measured, by backend id, and its scroll offset then."""

    scroll: tuple[float, float]
    boxes: dict[int, tuple[float, float, float, float]]


@dataclass(eq=False)
class Kept:
    """A tab's layout kept between requests: what a warm refresh patches."""

    doc: str  # the page's document identity (its watcher's)
    made_at: float
    windows: str
    records: dict[str, AXRecord]  # every same-process frame's nodes (their ids are unique)
    roots: list[tuple[str, str | None]]  # (frame id, AX root id or None for the DOM fallback)
    docs: list[DocumentBoxes]
    oopifs: dict[str, OopifTree]
    meta: dict
    # As served: node ids in order, each node's JSON and ignored flag (parts is None when
    # a frame fell back to DOM nodes), each node's frame, and an index built on demand.
    order: list[str] = field(default_factory=list)
    parts: list[bytes] | None = None
    ignored: list[bool] = field(default_factory=list)
    frame_of: dict[str, str] = field(default_factory=dict)
    index: dict[str, int] | None = None
    boxes: dict[str, dict[int, tuple]] = field(default_factory=dict)  # frame id -> backend -> box
    scroll: tuple[float, float] = (0.0, 0.0)
    present: dict[str, set[int]] = field(default_factory=dict)  # frame id -> backends with a non-empty box
    by_backend: dict[int, str] = field(default_factory=dict)  # same-process frames: backend -> AX node id
    # The boxes were patched from what the page measured (not a DOMSnapshot): a snapshot
    # in the background checks them soon after.
    measured: bool = False
    # Nodes the page measured since the last snapshot that its DOM does not list: where
    # they are in the document is known only once a snapshot lists them.
    unlisted: frozenset[int] = frozenset()

    @property
    def fallback(self) -> bool:
        return any(root is None for _, root in self.roots) or any(o.records is None for o in self.oopifs.values())


@dataclass
class Tab:
    target_id: str
    session_id: str | None = None
    oopifs: dict[str, FrameSession] = field(default_factory=dict)
    inflight: asyncio.Future | None = None
    inflight_fresh: bool = False
    inflight_started: float = 0.0
    target: dict | None = None  # the target as last read
    read_at: float = 0.0  # when a client last asked for this tab
    background: asyncio.Future | None = None
    changed: bool = False  # the page reported a change the background refresh has not read
    cached: "Snapshot | None" = None
    cached_key: tuple | None = None
    cached_at: float = 0.0
    kept: Kept | None = None
    check: asyncio.TimerHandle | None = None  # the box check to come (see Browser._check_soon)


class Browser:
    def __init__(self, chromium: Chromium) -> None:
        self.chromium = chromium
        self.conn: CDPConnection | None = None
        self.tabs: dict[str, Tab] = {}
        self._sessions: dict[str, str] = {}  # session id -> tab target id (tabs and their frames)
        self._connect_lock = asyncio.Lock()
        # Open tabs' URLs in target order: what a relaunched Chromium opens again.
        self._page_urls: dict[str, str] = {}
        self._connected_at = 0.0
        # How the last layout of each tab was made, for the bench and the logs: "cache",
        # "measured" (patched, boxes from the page), "warm" (patched, boxes from a
        # DOMSnapshot) or "full"; and how many of each were made.
        self.last_path: dict[str, str] = {}
        self.made: dict[str, int] = {"cache": 0, "measured": 0, "warm": 0, "full": 0}
        # Box checks (a snapshot after answers with boxes from the page) run, and how many
        # of them found a box the page had not reported right: the tests read both.
        self.checks: dict[str, int] = {"run": 0, "differed": 0}

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
            conn.on("Runtime.bindingCalled", self._on_changed)
            conn.on("Page.loadEventFired", self._on_load)
            self.conn = conn
            self._page_urls.clear()
            self._connected_at = time.monotonic()
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
        if self.tabs.pop(params.get("targetId"), None) is not None:
            release_memory()
        self.last_path.pop(params.get("targetId"), None)
        if self._page_urls.pop(params.get("targetId"), None) is not None:
            self._remember_tabs()

    def _on_target_info(self, params: dict, _parent: str | None) -> None:
        info = params["targetInfo"]
        if info.get("type") == "page" and not info.get("url", "").startswith(("chrome:", "devtools:")):
            self._page_urls[info["targetId"]] = info["url"]
            self._remember_tabs()

    def _on_changed(self, params: dict, session: str | None) -> None:
        if params.get("name") != BINDING:
            return
        tab = self.tabs.get(self._sessions.get(session or "", ""))
        if tab is None or tab.kept is None or tab.target is None or time.monotonic() - tab.read_at > BACKGROUND_WINDOW:
            return
        self._refresh_soon(tab)

    def _on_load(self, _params: dict, session: str | None) -> None:
        # A tab being read that loads a new document is read again at once.
        tab = self.tabs.get(self._sessions.get(session or "", ""))
        if (tab is None or tab.session_id != session or tab.target is None
                or time.monotonic() - tab.read_at > BACKGROUND_WINDOW):
            return
        self._refresh_soon(tab)

    def _refresh_soon(self, tab: Tab) -> None:
        tab.changed = True
        if tab.background is None or tab.background.done():
            tab.background = asyncio.ensure_future(self._refresh(tab))

    async def _refresh(self, tab: Tab) -> None:
        while tab.changed:
            await asyncio.sleep(BACKGROUND_DEBOUNCE)
            tab.changed = False
            try:
                assert tab.target is not None
                await self.layout(tab.target, background=True)
            except Exception as exc:  # a failed refresh leaves the next read to try again
                log.debug("background refresh failed", tab=tab.target_id, error=str(exc))
                return

    def _made(self, tab: Tab, path: str) -> None:
        self.last_path[tab.target_id] = path
        self.made[path] += 1

    def _check_soon(self, tab: Tab) -> None:
        """Boxes the page measured are checked against a DOMSnapshot VERIFY_DELAY after
        the first answer that used them (in case something moved that the page's rules
        did not catch: text pushed by a float, say); what differs is patched in and
        logged. One check is pending at a time, and it checks whatever is kept when it
        runs, so a page that keeps changing is still checked that often."""
        if tab.check is not None:
            return

        def start() -> None:
            tab.check = None
            if (tab.kept is None or not tab.kept.measured or tab.target is None
                    or self.tabs.get(tab.target_id) is not tab):
                return  # read whole or from a snapshot since, or closed
            asyncio.ensure_future(self._check(tab))

        tab.check = asyncio.get_running_loop().call_later(VERIFY_DELAY, start)

    async def _check(self, tab: Tab) -> None:
        try:
            assert tab.target is not None
            await self.layout(tab.target, background=True, verify=True)
        except Exception as exc:  # the next read tries again
            log.debug("box check failed", tab=tab.target_id, error=str(exc))

    def _remember_tabs(self) -> None:
        urls = [u for u in self._page_urls.values() if u]
        if time.monotonic() - self._connected_at < OPENING_S and "about:blank" in urls:
            # A browser that has just started shows about:blank in a tab until the page it
            # opens there commits: writing that down now would lose the page.
            return
        self.chromium.remember_tabs(urls or ["about:blank"])

    async def _prepare_frame(self, session: str) -> None:
        """Every page and frame session: a change watcher and auto-attach for iframes."""
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
        try:
            reply = await conn.send("Page.navigate", {"url": url}, session=session)
        except CDPError as exc:  # a URL Chromium cannot even parse
            raise InvalidRequest(f"Chromium refused to go to {url!r}: {exc}", code="invalid_url") from exc
        if reply.get("errorText"):
            raise ActionFailed(f"navigation failed: {reply['errorText']}", code="navigation_failed")
        return {"id": target_id, "url": url, "frameId": reply.get("frameId")}

    # -- layout -----------------------------------------------------------------------

    async def layout(self, target: dict, fresh: bool = False, background: bool = False,
                     verify: bool = False) -> "Snapshot":
        """One tab's layout. ``fresh`` fetches the whole tree again instead of patching
        the kept one; ``verify`` takes the boxes from a DOMSnapshot even when the page
        could tell what moved. Callers share a gathering that started after they asked;
        one that started before might miss what the caller just did (a click), so they
        wait for it to end and then gather (from cache when nothing changed since)."""
        target_id = target["targetId"]
        tab = self.tabs.setdefault(target_id, Tab(target_id))
        asked = time.monotonic()
        tab.target = target
        if not background:
            tab.read_at = asked
        while True:
            inflight = tab.inflight
            if inflight is None or inflight.done():
                break
            if tab.inflight_started >= asked and (tab.inflight_fresh or not fresh):
                return await asyncio.shield(inflight)
            await asyncio.wait([inflight])
        tab.inflight = asyncio.ensure_future(self._layout(tab, target, fresh, verify))
        tab.inflight_fresh, tab.inflight_started = fresh, time.monotonic()
        return await asyncio.shield(tab.inflight)

    async def _layout(self, tab: Tab, target: dict, fresh: bool, verify: bool = False) -> "Snapshot":
        conn = await self.ensure()
        session = await self._session(tab.target_id)
        for _attempt in range(NAVIGATION_RETRIES + 1):
            metrics, frame_keys = await asyncio.gather(_evaluate_json(conn, session, _METRICS_EXPRESSION),
                                                       self._frame_keys(conn, tab))
            key = (metrics, frame_keys)
            now = time.monotonic()
            if (not fresh and not verify and tab.cached is not None and tab.cached_key == key
                    and now - tab.cached_at < CACHE_MAX_AGE):
                self._made(tab, "cache")
                return tab.cached
            doc = (metrics["doc"], metrics["url"])
            kept = tab.kept
            snapshot = None
            log.debug("layout", tab=tab.target_id, kept=kept is not None, fresh=fresh, changes=metrics["changes"][-40:])
            if (not fresh and kept is not None and kept.doc == metrics["doc"] and not kept.fallback
                    and now - kept.made_at < FULL_MAX_AGE):
                try:
                    snapshot = await self._warm(conn, tab, session, kept, metrics, frame_keys, verify)
                    self._made(tab, "measured" if tab.kept is not None and tab.kept.measured else "warm")
                except _Cold as why:
                    log.debug("warm refresh not possible", reason=str(why))
                except BaseException:
                    # The page handed over its change lists and boxes: a patch that failed
                    # after that would leave the kept tree missing them. Read it whole next.
                    tab.kept, tab.cached = None, None
                    raise
            if snapshot is None:
                snapshot = await self._full(conn, tab, session, metrics, frame_keys, metrics["doc"])
                self._made(tab, "full")
            after = await _evaluate_json(conn, session, _METRICS_EXPRESSION)
            if (after["doc"], after["url"]) != doc:
                # The tab navigated while its parts were gathered: they may come from two
                # documents. Gather again from the new one.
                tab.cached, tab.kept = None, None
                continue
            if tab.kept is not None and tab.kept.measured:
                self._check_soon(tab)
            if after == metrics:
                tab.cached, tab.cached_key, tab.cached_at = snapshot, key, time.monotonic()
            else:
                # Same document, changed meanwhile (a ticking page): consistent enough to
                # answer, not to answer again from cache. What changed is listed in the
                # page for the next refresh.
                tab.cached = None
            return snapshot
        raise TabGone(f"the tab kept navigating during {NAVIGATION_RETRIES + 1} attempts to read it")

    async def _frame_keys(self, conn: CDPConnection, tab: Tab) -> tuple:
        """(target id, change counter, document) of each out-of-process frame."""
        frames = list(tab.oopifs.values())
        if not frames:
            return ()
        values = await asyncio.gather(*[_safe_json(conn, f.session_id, _METRICS_EXPRESSION) for f in frames])
        return tuple(sorted((f.target_id, (v or {}).get("changes"), (v or {}).get("doc")) for f, v in zip(frames, values)))

    # -- whole ----------------------------------------------------------------------------

    async def _full(self, conn: CDPConnection, tab: Tab, session: str, metrics: dict, frame_keys: tuple,
                    doc: str) -> "Snapshot":
        # What was kept goes before the new tree is read: a big page's tree and its
        # serialized nodes should not be held twice.
        tab.kept, tab.cached = None, None
        # The page's change lists are cleared before anything is read (what changes later
        # is listed for the next refresh). The snapshot goes next: the page's process
        # builds it, then the AX tree, while this process indexes the snapshot.
        windows_task = asyncio.ensure_future(_take(conn, session, reset=True))
        # A new document has no binding yet: the page's watcher calls it on a change.
        binding_task = asyncio.ensure_future(_safe(conn.send("Runtime.addBinding", {"name": BINDING},
                                                             session=session)))
        snapshot_task = asyncio.ensure_future(_snapshot(conn, session))
        ax_task = asyncio.ensure_future(_safe(conn.send("Accessibility.getFullAXTree", {}, session=session,
                                                        timeout=120, raw=True)))
        side_task = asyncio.ensure_future(self._side(conn, tab, session))
        oopif_tasks = {fs.target_id: asyncio.ensure_future(self._oopif_parts(conn, fs)) for fs in tab.oopifs.values()}
        try:
            snapshot = await snapshot_task
            docs = index_snapshot(snapshot, device_pixel_ratio=metrics["devicePixelRatio"])
            del snapshot
            main_frame = docs[0].frame_id if docs and docs[0].frame_id else None
            side = await side_task
            main_frame = main_frame or side["frame_tree"]["frameTree"]["frame"]["id"]
            children = [d.frame_id for d in docs[1:] if d.frame_id and d.frame_id != main_frame]
            child_tasks = [asyncio.ensure_future(_safe(conn.send("Accessibility.getFullAXTree", {"frameId": fid},
                                                                 session=session, timeout=120, raw=True)))
                           for fid in children]
            # While the page's process builds the AX tree, this one has nothing to do but
            # serialize every box the snapshot gave.
            scroll = docs[0].scroll if docs else (0.0, 0.0)
            fragments: dict[str, dict[int, bytes]] = {}
            for d in docs:
                fragments.setdefault(d.frame_id or main_frame, {}).update(
                    (b, _box_fragment(box, scroll)) for b, box in d.boxes.items() if box[2] > 0 and box[3] > 0)
            records: dict[str, AXRecord] = {}
            roots: list[tuple[str, str | None]] = []
            for fid, task in [(main_frame, ax_task), *zip(children, child_tasks)]:
                raw = await task
                if raw is None:
                    roots.append((fid, None))
                    continue
                nodes = decode_nodes(raw)
                del raw
                roots.append((fid, nodes[0].node_id if nodes else None))
                records.update((r.node_id, r) for r in nodes)
            windows = await windows_task
            owners = {b: o for d in docs for b, o in d.frame_origins.items()}
            oopifs: dict[str, OopifTree] = {}
            for target_id, task in oopif_tasks.items():
                tree = await self._oopif_tree(conn, session, tab.oopifs.get(target_id), task, frame_keys)
                if tree is not None and tree.owner in owners:
                    oopifs[target_id] = tree
        finally:
            for task in (snapshot_task, ax_task, side_task, windows_task, binding_task, *oopif_tasks.values()):
                if not task.done():
                    task.cancel()
        kept = Kept(doc=doc, made_at=time.monotonic(), windows=windows if isinstance(windows, str) else "?",
                    records=records, roots=roots, docs=docs, oopifs=oopifs, meta={}, by_backend=_by_backend(records))
        snapshot = self._finish(tab, kept, metrics, side, fragments=fragments)
        release_memory()  # the reply and the tree this one replaced
        return snapshot

    async def _side(self, conn: CDPConnection, tab: Tab, session: str) -> dict:
        page_metrics, frame_tree, window = await asyncio.gather(
            conn.send("Page.getLayoutMetrics", session=session),
            conn.send("Page.getFrameTree", session=session),
            _safe(conn.send("Browser.getWindowForTarget", {"targetId": tab.target_id})),
        )
        return {"page_metrics": page_metrics, "frame_tree": frame_tree, "window": window}

    async def _oopif_parts(self, conn: CDPConnection, frame: FrameSession):
        return await asyncio.gather(
            _snapshot(conn, frame.session_id),
            _safe(conn.send("Accessibility.getFullAXTree", {}, session=frame.session_id, timeout=120, raw=True)),
            _safe_json(conn, frame.session_id, _METRICS_EXPRESSION),
        )

    async def _oopif_tree(self, conn: CDPConnection, parent_session: str, frame: FrameSession | None, parts_task,
                          frame_keys: tuple) -> OopifTree | None:
        if frame is None:
            return None
        try:
            owner_task = asyncio.ensure_future(conn.send("DOM.getFrameOwner", {"frameId": frame.target_id},
                                                         session=parent_session))
            snapshot, ax, metrics = await parts_task
            owner = (await owner_task)["backendNodeId"]
        except (CDPError, CDPClosed) as exc:
            log.info("out-of-process frame skipped", frame=frame.target_id, error=str(exc))
            return None
        docs = index_snapshot(snapshot, device_pixel_ratio=(metrics or {}).get("devicePixelRatio") or 1.0)
        scroll = docs[0].scroll if docs else (0.0, 0.0)
        prefix = f"{frame.target_id[:8]}:"
        nodes = decode_nodes(ax, prefix=prefix) if ax is not None else None
        key = (frame.target_id, (metrics or {}).get("changes"), (metrics or {}).get("doc"))
        return OopifTree(target_id=frame.target_id, url=docs[0].url if docs else frame.url, key=key, owner=owner,
                         records={r.node_id: r for r in nodes} if nodes is not None else None,
                         root=nodes[0].node_id if nodes else None,
                         boxes={b: box for d in docs for b, box in d.boxes.items()}, scroll=scroll, docs=docs)

    # -- warm -----------------------------------------------------------------------------

    async def _warm(self, conn: CDPConnection, tab: Tab, session: str, kept: Kept, metrics: dict,
                    frame_keys: tuple, verify: bool = False) -> "Snapshot":
        """Patch the kept tree with what changed; raises _Cold when it cannot. Boxes come
        from what the page measured when it could tell, else (and with ``verify``) from a
        new DOMSnapshot."""
        if set(tab.oopifs) != set(kept.oopifs):
            raise _Cold("out-of-process frames came or went")
        started = time.perf_counter()
        taken = await _take(conn, session, reset=False)
        took = {"take": time.perf_counter() - started}
        if taken is None or taken == "full":
            raise _Cold("the document changed as a whole")
        windows, overflow, subtree, parents, single, measured = taken
        if overflow or windows != kept.windows:
            raise _Cold("more changed than the page listed")
        if metrics["url"] != kept.meta.get("url"):
            # A same-document navigation (a fragment, pushState) shows on the root node.
            root = kept.records.get(kept.roots[0][1] or "")
            if root is not None and root.backend is not None:
                single = [*single, root.backend]
        measured_docs = None if verify else _measured_docs(kept, measured, metrics["devicePixelRatio"], subtree, parents)
        tasks: dict[str, asyncio.Future] = {}

        async def snapshot_docs() -> list[DocumentBoxes]:
            if "snapshot" not in tasks:
                tasks["snapshot"] = asyncio.ensure_future(_snapshot(conn, session))
            snapshot = await tasks["snapshot"]
            took["snapshot"] = time.perf_counter() - started
            docs = index_snapshot(snapshot, device_pixel_ratio=metrics["devicePixelRatio"])
            del snapshot
            if ([d.frame_id for d in docs] != [d.frame_id for d in kept.docs]
                    or [d.url for d in docs[1:]] != [d.url for d in kept.docs[1:]]):
                raise _Cold("frames changed")
            if verify and kept.measured:
                self.checks["run"] += 1
                drift = _drift(kept.docs, docs)
                if drift:
                    self.checks["differed"] += 1
                    log.info("boxes measured in the page differed from the snapshot", tab=tab.target_id, nodes=drift)
            return docs

        async def page_cannot_tell(records: dict[str, AXRecord]) -> bool:
            # New nodes the page could not measure: the inner parts Chromium makes for an
            # input, which a snapshot does not box either, or a pseudo-element, which it does.
            unmeasured = _unmeasured(kept, measured, records) if measured is not None else []
            return bool(unmeasured) and (len(unmeasured) > UNMEASURED_MAX
                                         or await _any_pseudo(conn, session, unmeasured))

        def read_boxes() -> None:
            # Sent right after the AX reads: the page's process answers those first and
            # then builds the snapshot while this process decodes them.
            if measured_docs is None:
                tasks["snapshot"] = asyncio.ensure_future(_snapshot(conn, session))
            tasks["side"] = asyncio.ensure_future(self._side(conn, tab, session))

        keys = dict((k[0], k) for k in frame_keys)
        oopif_tasks = {t: asyncio.ensure_future(self._oopif_parts(conn, tab.oopifs[t]))
                       for t, tree in kept.oopifs.items() if keys.get(t) != tree.key}
        try:
            fresh, whole = await self._refetch(conn, session, kept, subtree, single, read_boxes, parents=parents)
            took["ax"] = time.perf_counter() - started
            if not tasks:
                read_boxes()
            if measured_docs is not None and await page_cannot_tell(fresh):
                measured_docs = None
            docs = measured_docs if measured_docs is not None else await snapshot_docs()
            records, by_backend = _merge(kept, fresh)
            # Elements that gained or lost a box with no DOM change of their own (a CSS rule
            # that shows a menu): re-read the AX subtree around them too. One that the page
            # reported before but no snapshot has listed yet (added hidden, then shown by a
            # style alone) cannot be placed in the document without a snapshot.
            for _ in range(3):
                around, unplaced = _presence_changes(kept, docs, by_backend, whole)
                if measured_docs is not None and not kept.unlisted.isdisjoint(unplaced):
                    measured_docs = None
                    docs = await snapshot_docs()
                    continue
                if not around:
                    break
                more, more_whole = await self._refetch(conn, session, kept, around, [])
                fresh.update(more)
                whole |= more_whole
                records, by_backend = _merge(kept, fresh)
                if measured_docs is None or not await page_cannot_tell(more):
                    break
                # A shown element's new marker or ::before: boxes from a snapshot, which
                # may show more that gained or lost a box (those not re-read just now).
                measured_docs = None
                docs = await snapshot_docs()
            side = await tasks["side"]
            oopifs = dict(kept.oopifs)
            for target_id, task in oopif_tasks.items():
                tree = await self._oopif_tree(conn, session, tab.oopifs.get(target_id), task, frame_keys)
                if tree is None:
                    raise _Cold("an out-of-process frame could not be read")
                oopifs[target_id] = tree
        finally:
            for task in (*tasks.values(), *oopif_tasks.values()):
                if not task.done():
                    task.cancel()
        unlisted = (kept.unlisted | _not_listed(docs[0], measured.boxes)) if measured_docs is not None else frozenset()
        new = Kept(doc=kept.doc, made_at=kept.made_at, windows=kept.windows, records=records, roots=kept.roots,
                   docs=docs, oopifs=oopifs, meta={}, by_backend=by_backend, measured=measured_docs is not None,
                   unlisted=unlisted)
        took["merged"] = time.perf_counter() - started
        snapshot = self._finish(tab, new, metrics, side, prev=kept, fresh=set(fresh) & set(records))
        took["served"] = time.perf_counter() - started
        log.debug("warm refresh", tab=tab.target_id, subtrees=len(subtree), parents=len(parents), nodes=len(single),
                  fresh=len(fresh), boxes="page" if new.measured else "snapshot",
                  moved=len(measured.boxes) if measured is not None else None,
                  **{k: round(v * 1000, 1) for k, v in took.items()})
        return snapshot

    async def _refetch(self, conn: CDPConnection, session: str, kept: Kept, subtree: list[int],
                       single: list[int], sent=None, parents: list[int] = ()) -> tuple[dict[str, AXRecord], set[str]]:
        """Fresh records for the nodes under each ``subtree`` element (and its ancestors),
        for each of ``parents`` with its children, and for each ``single`` element; and
        the ids whose whole subtree is fresh.

        A subtree is read level by level with getPartialAXTree (a node, its children
        through ignored ones, its ancestors), which answers at once; queryAXTree reads a
        subtree in one call but waits for the page's next rendering update (150 ms and
        more here), so it only reads what the levels could not reach."""
        total = len(kept.records) or 1
        budget = 0
        roots = list(dict.fromkeys(subtree))
        for backend in roots:
            node_id = kept.by_backend.get(backend)
            if node_id is not None:
                budget += sum(1 for _ in subtree_ids(node_id, kept.records))
        if budget > max(WARM_SHARE * total, WARM_MIN):
            raise _Cold("too much changed")
        fresh: dict[str, AXRecord] = {}
        whole: dict[str, int] = {}  # re-read subtree root -> its element's backend id
        frame_roots = {root for _, root in kept.roots}
        singles = list(dict.fromkeys(single))
        # A parent whose list of children changed: the node with its children (and
        # ancestors), read like a subtree's first level.
        expand: list[int] = list(dict.fromkeys(parents))  # nodes whose children are to be read
        kids: list[int] = []  # ignored nodes: read their DOM children's AX nodes
        query: list[int] = []  # subtrees the levels could not finish
        rounds = 0

        def partial(backend: int, relatives: bool):
            return asyncio.ensure_future(_safe(conn.send(
                "Accessibility.getPartialAXTree", {"backendNodeId": backend, "fetchRelatives": relatives},
                session=session, raw=True)))

        while roots or singles or expand or kids or query:
            rounds += 1
            calls = {
                "roots": [partial(b, True) for b in roots],
                "expand": [partial(b, True) for b in expand],
                "kids": [asyncio.ensure_future(_safe(conn.send("DOM.describeNode", {"backendNodeId": b, "depth": 1},
                                                               session=session))) for b in kids],
                "query": [asyncio.ensure_future(_safe(conn.send("Accessibility.queryAXTree", {"backendNodeId": b},
                                                                session=session, raw=True))) for b in query],
                "single": [partial(b, False) for b in singles],
            }
            if sent is not None:
                sent()
                sent = None
            got = {k: await asyncio.gather(*v) for k, v in calls.items()}
            root_replies, expand_replies, query_replies = got["roots"], got["expand"], got["query"]
            single_replies = got["single"]
            next_expand = [c["backendNodeId"] for d in got["kids"] if d
                           for c in d.get("node", {}).get("children", []) if "backendNodeId" in c]
            escalate: list[int] = []
            for backend, reply in zip(roots, root_replies):
                if reply is None:
                    continue  # the element left the document: its old parent was touched too
                inspected, children, ancestors = partial_result(decode_nodes(reply))
                top = ancestors[-1] if ancestors else inspected
                if top is None or top.node_id not in frame_roots:
                    raise _Cold("an element outside the kept frames")
                if inspected is None:
                    # No AX node of its own: its nodes hang under the nearest ancestor's.
                    if not ancestors or ancestors[0].node_id in frame_roots or ancestors[0].backend is None:
                        raise _Cold("a change right under a frame's root")
                    escalate.append(ancestors[0].backend)
                    continue
                for record in (*ancestors, inspected, *children):
                    fresh[record.node_id] = record
                whole[inspected.node_id] = backend
            for reply in expand_replies:
                if reply is not None:
                    inspected, children, ancestors = partial_result(decode_nodes(reply))
                    for record in (*ancestors, *([inspected] if inspected is not None else []), *children):
                        fresh[record.node_id] = record
            for reply in query_replies:
                for record in decode_nodes(reply, normalize_ignored=True) if reply is not None else []:
                    fresh[record.node_id] = record
            for reply in single_replies:
                for record in decode_nodes(reply) if reply is not None else []:
                    if record.node_id != "0":
                        fresh[record.node_id] = record
            # What is still to read under each re-read root: the children of an unignored
            # node come with it; an ignored one's come through its DOM children.
            expand, kids, query = next_expand, [], []
            for root_id, root_backend in whole.items():
                _ids, missing = preorder(root_id, fresh)
                if not missing:
                    continue
                parents = {p for p in (_parent_of(m, fresh) for m in missing) if p is not None}
                if rounds < 12 and parents and all(fresh[p].backend is not None for p in parents):
                    expand += [fresh[p].backend for p in parents if not fresh[p].ignored]
                    kids += [fresh[p].backend for p in parents if fresh[p].ignored]
                elif root_backend not in query and rounds < 14:
                    query.append(root_backend)
                else:
                    raise _Cold("a changed subtree could not be read")
            expand, kids = list(dict.fromkeys(expand)), list(dict.fromkeys(kids))
            roots, singles = [b for b in dict.fromkeys(escalate) if kept.by_backend.get(b) not in whole], []
        # Everything under a re-read subtree is fresh (or gone).
        expanded: set[str] = set()
        for node_id in whole:
            expanded.update(subtree_ids(node_id, fresh))
        return fresh, expanded

    # -- serving ------------------------------------------------------------------------

    def _finish(self, tab: Tab, kept: Kept, metrics: dict, side: dict, prev: Kept | None = None,
                fresh: set[str] | None = None, fragments: dict[str, dict[int, bytes]] | None = None) -> "Snapshot":
        """Place every frame, join nodes to boxes and serialize them; keep it all. With
        ``prev`` (the tree this one patches) and ``fresh`` (the re-read node ids), only
        the nodes whose record or box changed are serialized again."""
        docs = kept.docs
        scroll = docs[0].scroll if docs else (0.0, 0.0)
        frame_tree = side["frame_tree"]["frameTree"]["frame"]
        main_frame = kept.roots[0][0] if kept.roots else frame_tree["id"]
        frames = [{"frameId": main_frame, "url": frame_tree["url"], "parentFrameId": None,
                   "outOfProcess": False, "offset": {"x": 0, "y": 0}}]
        boxes: dict[str, dict[int, tuple]] = {}
        for d in docs:
            fid = d.frame_id or main_frame
            boxes.setdefault(fid, {}).update(d.boxes)
            if d.frame_id and d.frame_id != main_frame:
                frames.append({"frameId": d.frame_id, "url": d.url, "parentFrameId": None, "outOfProcess": False,
                               "offset": {"x": d.offset[0], "y": d.offset[1]}})
        owners = {b: o for d in docs for b, o in d.frame_origins.items()}
        trees: list[tuple[str, dict[str, AXRecord] | None, str | None]] = [(fid, kept.records, root)
                                                                             for fid, root in kept.roots]
        for tree in kept.oopifs.values():
            origin = owners.get(tree.owner)
            if origin is None:
                continue
            offset = frame_document_offset(origin, tree.scroll)
            frames.append({"frameId": tree.target_id, "url": tree.url, "parentFrameId": None, "outOfProcess": True,
                           "offset": {"x": offset[0], "y": offset[1]}})
            boxes[tree.target_id] = {b: (x + offset[0], y + offset[1], w, h) for b, (x, y, w, h) in tree.boxes.items()}
            trees.append((tree.target_id, tree.records, tree.root))
        kept.boxes, kept.scroll = boxes, scroll
        kept.present = {fid: {b for b, v in frame_boxes.items() if v[2] > 0 and v[3] > 0}
                        for fid, frame_boxes in boxes.items()}
        kept.meta = _meta(side, metrics, frames, "ax")
        tab.kept = kept
        if prev is not None and fresh is not None and prev.scroll == scroll and prev.parts is not None:
            patched = self._patch(kept, prev, fresh, trees)
            if patched:
                return Snapshot(kept.meta, kept.parts, kept.ignored)
        parts: list[bytes] = []
        ignored: list[bool] = []
        order: list[str] = []
        frame_of: dict[str, str] = {}
        source = "ax"
        for fid, records, root in trees:
            frame_boxes = boxes.get(fid, {})
            if records is None or root is None:
                source = "mixed" if parts else "dom"
                for node in _dom_fallback(fid, frame_boxes, scroll):
                    parts.append(orjson.dumps(node))
                    ignored.append(False)
                kept.parts = None  # never patched
                continue
            ids, _missing = preorder(root, records)
            frame_head = b',"frameId":' + orjson.dumps(fid) + b","
            made = (fragments or {}).get(fid)
            if made is None:
                made = {b: _box_fragment(box, scroll) for b, box in frame_boxes.items() if box[2] > 0 and box[3] > 0}
            for node_id in ids:
                record = records[node_id]
                fragment = made.get(record.backend, _NO_BOX) if record.backend is not None else _NO_BOX
                parts.append(record.ax[:-1] + frame_head + fragment)
                ignored.append(record.ignored)
                frame_of[node_id] = fid
            order += ids
        if source != "ax":
            kept.meta = _meta(side, metrics, frames, source)
        else:
            kept.parts = parts
        kept.ignored, kept.order, kept.frame_of = ignored, order, frame_of
        kept.index = None
        return Snapshot(kept.meta, parts, ignored)

    @staticmethod
    def _patch(kept: Kept, prev: Kept, fresh: set[str], trees) -> bool:
        """Serialize again only the re-read nodes and those whose box changed, splicing in
        the subtrees whose children changed. False when that is not possible."""
        assert prev.parts is not None
        if set(kept.oopifs) != set(prev.oopifs) or any(kept.oopifs[t] is not prev.oopifs[t] for t in kept.oopifs):
            return False
        records = kept.records
        index = prev.index
        if index is None:
            index = {node_id: i for i, node_id in enumerate(prev.order)}
        reshaped = {n for n in fresh if n not in prev.records or prev.records[n].child_ids != records[n].child_ids}
        outermost: list[str] = []
        for node_id in reshaped:
            parent = records[node_id].parent_id
            while parent is not None and parent not in reshaped:
                parent = records[parent].parent_id if parent in records else None
            if parent is None:
                if node_id not in index:
                    return False
                outermost.append(node_id)
        changed: set[str] = {n for n in fresh if n in index}
        by_backend = kept.by_backend
        for fid, frame_boxes in kept.boxes.items():
            old_boxes = prev.boxes.get(fid, {})
            moved = {b for b, v in frame_boxes.items() if old_boxes.get(b) != v}
            moved.update(old_boxes.keys() - frame_boxes.keys())
            if moved and fid in kept.oopifs:
                return False
            for b in moved:
                if b not in by_backend:
                    continue
                node_id = by_backend[b]
                if node_id is None:
                    return False
                if prev.frame_of.get(node_id) == fid:
                    changed.add(node_id)
        parts = list(prev.parts)
        ignored = list(prev.ignored)
        order = prev.order
        frame_of = prev.frame_of
        for node_id in changed:
            fid = frame_of.get(node_id)
            if fid is None or node_id not in records:
                continue  # gone: spliced out below
            i = index[node_id]
            parts[i] = _render(records[node_id], fid, kept)
            ignored[i] = records[node_id].ignored
        if outermost:
            order = list(order)
            frame_of = dict(frame_of)
            # A node already served (and brought up to date above) keeps its bytes when a
            # subtree around it is spliced: only the new nodes are serialized.
            served = list(parts)
            for node_id in sorted(outermost, key=index.__getitem__, reverse=True):
                start = index[node_id]
                old_ids = preorder(node_id, prev.records)[0]
                if order[start:start + len(old_ids)] != old_ids:
                    return False
                new_ids = preorder(node_id, records)[0]
                fid = frame_of[node_id]
                for gone in old_ids:
                    frame_of.pop(gone, None)
                for n in new_ids:
                    frame_of[n] = fid
                end = start + len(old_ids)
                parts[start:end] = [served[index[n]] if n in index else _render(records[n], fid, kept)
                                    for n in new_ids]
                ignored[start:end] = [records[n].ignored for n in new_ids]
                order[start:end] = new_ids
            index = None
        kept.parts, kept.ignored, kept.order, kept.frame_of, kept.index = parts, ignored, order, frame_of, index
        return True


def _render(record: AXRecord, fid: str, kept: Kept) -> bytes:
    box = kept.boxes.get(fid, {}).get(record.backend) if record.backend is not None else None
    return _node_json(record.ax, orjson.dumps(fid), box, kept.scroll)


def _parent_of(node_id: str, records: dict[str, AXRecord]) -> str | None:
    """The record whose childIds name ``node_id`` (a missing node's parent)."""
    for parent_id, record in records.items():
        if node_id in record.child_ids:
            return parent_id
    return None


def _merge(kept: Kept, fresh: dict[str, AXRecord]) -> tuple[dict[str, AXRecord], dict[int, str]]:
    """The kept records with fresh ones in place, and the AX node of each DOM node; every
    node reachable from a frame root must be known, or the tree is fetched whole. Only
    the subtrees whose children changed are walked."""
    if not fresh:
        return kept.records, kept.by_backend
    old = kept.records
    merged = dict(old)
    merged.update(fresh)
    reshaped = [n for n, r in fresh.items() if n in old and old[n].child_ids != r.child_ids]
    before: set[str] = set()
    after: set[str] = set()
    for node_id in reshaped:
        ids, missing = preorder(node_id, merged)
        if missing:
            raise _Cold(f"{len(missing)} nodes appeared that were not read")
        after.update(ids)
        before.update(preorder(node_id, old)[0])
    # Fresh nodes that are in no kept place and no reshaped subtree are not in the tree.
    for node_id in fresh:
        if node_id not in old and node_id not in after:
            del merged[node_id]
    for node_id in before - after:
        merged.pop(node_id, None)
    if not reshaped and all(old[n].backend == r.backend for n, r in fresh.items() if n in old):
        return merged, kept.by_backend
    return merged, _by_backend(merged)


def _by_backend(records: dict[str, AXRecord]) -> dict[int, str]:
    """backend DOM node id -> its AX node; a DOM node with several AX nodes maps to
    None (its box changes make the whole tree serialize again)."""
    out: dict[int, str] = {}
    for node_id, record in records.items():
        backend = record.backend
        if backend is not None:
            out[backend] = None if backend in out else node_id  # type: ignore[assignment]
    return out


def _presence_changes(kept: Kept, docs: list[DocumentBoxes], by_backend: dict[int, str | None],
                      whole: set[str]) -> tuple[list[int], list[int]]:
    """Elements around DOM nodes that gained or lost a box, outside the subtrees already
    re-read: the nearest one with an AX node, by the documents' DOM; and the nodes that
    gained or lost one that neither has an AX node nor is in that DOM (gone, or new
    since the DOM was listed)."""
    main_frame = kept.roots[0][0] if kept.roots else None
    changed: set[int] = set()
    now: dict[str, set[int]] = {}
    for d in docs:
        fid = d.frame_id or main_frame
        now.setdefault(fid, set()).update(b for b, v in d.boxes.items() if v[2] > 0 and v[3] > 0)
    for fid, present in now.items():
        changed |= present.symmetric_difference(kept.present.get(fid, set()))
    if not changed:
        return [], []
    parents: dict[int, int] = {}
    for d in docs:
        parents.update(d.parent_of())
    out: list[int] = []
    unplaced: list[int] = []
    for backend in changed:
        b: int | None = backend
        while b is not None and b not in by_backend:
            b = parents.get(b)
        if b is None:
            unplaced.append(backend)  # gone from the document (its parent's change lists it), or new
        elif by_backend[b] not in whole:
            out.append(b)
    return list(dict.fromkeys(out)), unplaced


def _measured_docs(kept: Kept, measured: Measured | None, dpr: float, subtree: list[int] = (),
                   parents: list[int] = ()) -> list[DocumentBoxes] | None:
    """The kept document's boxes with those the page measured put in, or None when a
    DOMSnapshot is needed: the page could not tell, there are same-process frames, an
    iframe moved, an element with boxed pseudo-elements moved (they do not simply move
    with it: Chromium places a list item's marker 40 px further right when the item is
    first in its list), or one with boxed user-agent shadow content (an input's text)
    changed size, or an element with either kind changed (``subtree``: it or an ancestor;
    ``parents``: its children), since what the page cannot reach may have changed with
    it: a ::after's text, what was typed into an input. That content moves with its
    element when only the element moved."""
    if measured is None or len(kept.docs) != 1 or kept.fallback:
        return None
    old = kept.docs[0]
    moved = measured.boxes
    if any(b in old.frame_origins for b in moved):
        return None
    if old.pseudo_owner and not moved.keys().isdisjoint(old.pseudo_owner.values()):
        return None
    owners = {*old.pseudo_owner.values(), *old.shadow_owner.values()}
    if owners and (not owners.isdisjoint(parents) or _any_within(owners, set(subtree), old)):
        return None
    boxes = dict(old.boxes)
    for backend, box in moved.items():
        if box[2] > 0 or box[3] > 0:
            boxes[backend] = measured_to_snapshot(box, dpr)
        else:
            boxes.pop(backend, None)
    for node, owner in old.shadow_owner.items():
        if owner not in moved or node not in boxes or node in moved:
            continue  # (the page measured it itself: the content of a closed shadow root)
        before, after = old.boxes.get(owner), boxes.get(owner)
        if before is None or after is None or before[2:] != after[2:]:
            return None
        boxes[node] = moved_with(boxes[node], before, after)
    return [replace(old, boxes=boxes, scroll=measured.scroll)]


def _any_within(nodes: set[int], roots: set[int], doc: DocumentBoxes) -> bool:
    """Whether one of ``nodes`` is one of ``roots`` or inside one, by the document's DOM."""
    if not roots:
        return False
    if not nodes.isdisjoint(roots):
        return True
    parent = doc.parent_of()
    for node in nodes:
        seen = 0
        b = parent.get(node)
        while b is not None and seen < 4096:
            if b in roots:
                return True
            b, seen = parent.get(b), seen + 1
    return False


def _not_listed(doc: DocumentBoxes, boxes: dict[int, tuple]) -> frozenset[int]:
    """Those of ``boxes`` that the document's DOM (as its snapshot listed it) lacks."""
    listed = doc.listed()
    return frozenset(b for b in boxes if b not in listed)


def _unmeasured(kept: Kept, measured: Measured, fresh: dict[str, AXRecord]) -> list[int]:
    """Re-read AX nodes' DOM nodes that are new to the kept document and that the page
    did not measure: a pseudo-element, or the inner element Chromium makes for an input
    when it is first needed (inside the input's user-agent shadow tree, whose content
    DOMSnapshot gives no box)."""
    old = kept.docs[0]
    known: set[int] | None = None
    out: list[int] = []
    for record in fresh.values():
        b = record.backend
        if b is None or b in measured.boxes or b in old.boxes:
            continue
        if known is None:
            known = old.listed()
        if b not in known:
            out.append(b)
    return out


async def _any_pseudo(conn: CDPConnection, session: str, backends: list[int]) -> bool:
    """Whether one of these nodes is a pseudo-element (or cannot be described)."""
    described = await asyncio.gather(*[_safe(conn.send("DOM.describeNode", {"backendNodeId": b}, session=session))
                                       for b in backends])
    return any(d is None or "pseudoType" in d.get("node", {}) for d in described)


def _drift(before: list[DocumentBoxes], after: list[DocumentBoxes]) -> int:
    """How many present boxes of nodes still in the document differ between two
    readings of the same documents (a removed node's last box is never served)."""
    count = 0
    for a, b in zip(before, after):
        alive = set(b.dom_backend)
        present_a = {k: v for k, v in a.boxes.items() if v[2] > 0 and v[3] > 0 and k in alive}
        present_b = {k: v for k, v in b.boxes.items() if v[2] > 0 and v[3] > 0}
        count += sum(1 for k in present_a.keys() | present_b.keys() if present_a.get(k) != present_b.get(k))
    return count


_NO_BOX = b'"bounds":null,"viewportBounds":null}'


def _box_fragment(box: tuple, scroll: tuple[float, float]) -> bytes:
    """The end of a served node with this box: its bounds and viewportBounds, and "}"."""
    bounds, viewport = box_json(box, scroll)
    return orjson.dumps({"bounds": bounds, "viewportBounds": viewport})[1:]


def _node_json(ax: bytes, fid_json: bytes, box: tuple | None, scroll: tuple[float, float]) -> bytes:
    """A node as served: its AX JSON with frameId, bounds and viewportBounds added."""
    empty = box is None or not (box[2] > 0 and box[3] > 0)
    return ax[:-1] + b',"frameId":' + fid_json + b"," + (_NO_BOX if empty else _box_fragment(box, scroll))


def _meta(side: dict, metrics: dict, frames: list[dict], source: str) -> dict:
    page_metrics, window = side["page_metrics"], side["window"]
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
        "url": metrics["url"],
        "frames": frames,
        "source": source,
    }


def _dom_fallback(frame_id: str, boxes: dict[int, tuple], scroll: tuple[float, float]) -> list[dict]:
    nodes = []
    for backend, box in boxes.items():
        bounds, viewport = box_json(box, scroll) if box[2] > 0 and box[3] > 0 else (None, None)
        nodes.append({"nodeId": f"dom:{backend}", "backendDOMNodeId": backend, "ignored": False,
                      "role": {"type": "internalRole", "value": "generic"}, "frameId": frame_id,
                      "bounds": bounds, "viewportBounds": viewport, "source": "dom"})
    return nodes


class Snapshot:
    """One served layout: its fixed sections and each node's JSON (all nodes, or the
    non-ignored ones), handed out in batches."""

    LAYOUT_KEYS = ("viewport", "window", "frames", "source")
    BATCH = 2000

    def __init__(self, meta: dict, parts: list[bytes], ignored: list[bool]) -> None:
        self.meta = meta
        self._parts = parts
        self._ignored = ignored

    @property
    def title(self) -> str:
        return self.meta["title"]

    @property
    def visible(self) -> bool:
        return self.meta["visibility"] == "visible"

    def chunks(self, interesting: bool) -> list[bytes]:
        """The layout's JSON in pieces that concatenate to one object."""
        parts = self._parts
        if interesting:
            parts = [p for p, ignored in zip(parts, self._ignored) if not ignored]
        head = orjson.dumps({k: self.meta[k] for k in self.LAYOUT_KEYS})
        out = [head[:-1] + b',"nodes":[']
        for start in range(0, len(parts), self.BATCH):
            out.append((b"," if start else b"") + b",".join(parts[start:start + self.BATCH]))
        out.append(b"]}")
        return out


async def _snapshot(conn: CDPConnection, session: str) -> dict:
    return await conn.send("DOMSnapshot.captureSnapshot", {"computedStyles": SNAPSHOT_STYLES,
                                                            "includeDOMRects": False}, session=session, timeout=60)


async def _take(conn: CDPConnection, session: str, reset: bool):
    """What the page listed as changed since last asked: (windows, overflow, subtree,
    parent and single backend ids, boxes it measured), "full", or with ``reset`` the
    page's windows."""
    group = "deskbox-take"
    try:
        reply = await conn.send("Runtime.evaluate", {
            "expression": f"({_TAKE_FUNCTION})({'true' if reset else 'false'}, {json.dumps(_WATCH_SOURCE)})",
            "objectGroup": group,
            "returnByValue": reset}, session=session)
        result = reply.get("result", {})
        if reset or result.get("type") != "object":
            return result.get("value")
        props = await conn.send("Runtime.getProperties", {"objectId": result["objectId"], "ownProperties": True},
                                session=session)
        items = sorted(((int(p["name"]), p.get("value", {})) for p in props.get("result", []) if p["name"].isdigit()))
        values = [v for _, v in items]
        described = await asyncio.gather(*[
            _safe(conn.send("DOM.describeNode", {"objectId": v["objectId"]}, session=session))
            for v in values if v.get("subtype") == "node"
        ])
    except (CDPError, CDPClosed):
        return None
    finally:
        asyncio.ensure_future(_safe_release(conn, session, group))
    backends = [(d or {}).get("node", {}).get("backendNodeId") for d in described]
    return _read_changes(values, backends)


def _number(value: dict) -> float:
    return float(value.get("value", 0.0))  # -0 comes as an unserializableValue


def _read_changes(values: list[dict], backends: list[int | None]):
    """The take function's array as Runtime.getProperties lists it, with the backend id
    of each node in it (in order) -> (windows, overflow, subtree, parents, single,
    Measured or None)."""
    nodes = iter(backends)
    windows, overflow = values[0].get("value"), values[1].get("value")
    subtree: list[int] = []
    parents: list[int] = []
    single: list[int] = []
    target: list[int] | None = None
    measured: Measured | None = None
    rest = iter(values[2:])
    for v in rest:
        if v.get("type") == "string" and v.get("value") == "G":
            measured = Measured((_number(next(rest)), _number(next(rest))), {})
            for node in rest:
                box = tuple(_number(next(rest)) for _ in range(4))
                backend = next(nodes) if node.get("subtype") == "node" else None
                if backend is not None:
                    measured.boxes[backend] = box
            break
        if v.get("type") == "string":
            target = {"S": subtree, "C": parents, "N": single}.get(v.get("value"))
        elif v.get("subtype") == "node":
            backend = next(nodes)
            if backend is not None and target is not None:
                target.append(backend)
    return windows, bool(overflow), subtree, parents, single, measured


async def _safe_release(conn: CDPConnection, session: str, group: str) -> None:
    try:
        await conn.send("Runtime.releaseObjectGroup", {"objectGroup": group}, session=session)
    except (CDPError, CDPClosed):
        pass


async def _safe(awaitable):
    try:
        return await awaitable
    except CDPError:
        return None


async def _safe_json(conn: CDPConnection, session: str, expression: str) -> dict | None:
    try:
        return await _evaluate_json(conn, session, expression)
    except (TabGone, CDPClosed):
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
