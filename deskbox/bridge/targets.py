"""Chromium's targets as the bridge attaches to them: the one CDP connection, a Tab per
page target with its flat session and the sessions of its out-of-process frames
(FrameSession), the tab commands (open, activate, close, navigate), and the URLs a
relaunched Chromium opens again. Every session it attaches gets the page's change
watcher. It must not know how a layout is read, patched or served: a Tab only carries
that state for the Browser, and page events other than the targets' go to the handlers
the Browser gives it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..cdp import CDPClosed, CDPConnection, CDPError, Handler
from ..common.errors import ActionFailedError, InvalidRequestError, NotFoundError, UnavailableError
from ..common.logging import get_logger
from ..common.memory import release_memory
from .chromium import Chromium
from .pagecalls import WATCH_SOURCE, TabGone

if TYPE_CHECKING:
    from .kept import Kept
    from .serialize import Snapshot

__all__ = ["FrameSession", "Tab", "Targets"]

log = get_logger("deskbox.bridge")

# How long after connecting to a browser its tabs may still be opening their pages.
OPENING_S = 5.0


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
    check: asyncio.TimerHandle | None = None  # the box check to come (see BoxCheck.soon)


class Targets:
    """The CDP connection to one Chromium, its tabs and the sessions attached to them."""

    def __init__(self, chromium: Chromium, listeners: dict[str, Handler]) -> None:
        self.chromium = chromium
        self.conn: CDPConnection | None = None
        self.tabs: dict[str, Tab] = {}
        self._sessions: dict[str, str] = {}  # session id -> tab target id (tabs and their frames)
        self._connect_lock = asyncio.Lock()
        # Open tabs' URLs in target order: what a relaunched Chromium opens again.
        self._page_urls: dict[str, str] = {}
        self._connected_at = 0.0
        # The owner's handlers of page events, on every connection after the targets' own.
        self._listeners = listeners

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
            for event, handler in self._listeners.items():
                conn.on(event, handler)
            self.conn = conn
            self._page_urls.clear()
            self._connected_at = time.monotonic()
            await conn.send("Target.setDiscoverTargets", {"discover": True})
            self.tabs.clear()
            self._sessions.clear()

    async def ensure(self) -> CDPConnection:
        if self.conn is None or self.conn.closed.is_set():
            if not self.chromium.up.is_set():
                raise UnavailableError("Chromium is not running (it is being relaunched)", code="browser_down")
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
        if self._page_urls.pop(params.get("targetId"), None) is not None:
            self._remember_tabs()

    def _on_target_info(self, params: dict, _parent: str | None) -> None:
        info = params["targetInfo"]
        if info.get("type") == "page" and not info.get("url", "").startswith(("chrome:", "devtools:")):
            self._page_urls[info["targetId"]] = info["url"]
            self._remember_tabs()

    def tab_of(self, session: str | None) -> Tab | None:
        """The tab a session (the tab's own or one of its frames') belongs to."""
        return self.tabs.get(self._sessions.get(session or "", ""))

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
                self.conn.send("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH_SOURCE}, session=session),
                self.conn.send("Runtime.evaluate", {"expression": WATCH_SOURCE}, session=session),
                self.conn.send("Target.setAutoAttach",
                               {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True},
                               session=session),
            )
        except (CDPError, CDPClosed) as exc:
            log.info("frame preparation failed", error=str(exc))

    # -- targets ----------------------------------------------------------------------

    async def all(self) -> list[dict]:
        conn = await self.ensure()
        return (await conn.send("Target.getTargets"))["targetInfos"]

    async def pages(self) -> list[dict]:
        return [t for t in await self.all() if t["type"] == "page"]

    async def session(self, target_id: str) -> str:
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
        session = await self.session(target_id)
        try:
            reply = await conn.send("Page.navigate", {"url": url}, session=session)
        except CDPError as exc:  # a URL Chromium cannot even parse
            raise InvalidRequestError(f"Chromium refused to go to {url!r}: {exc}", code="invalid_url") from exc
        if reply.get("errorText"):
            raise ActionFailedError(f"navigation failed: {reply['errorText']}", code="navigation_failed")
        return {"id": target_id, "url": url, "frameId": reply.get("frameId")}
