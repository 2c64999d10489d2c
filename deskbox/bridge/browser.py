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

Who does what: targets.py keeps the connection, the tabs and their sessions;
pagecalls.py runs the page's scripts and reads their answers; fullread.py fetches a tab
whole; warmpatch.py patches a kept tree, re-reading AX parts through refetch.py;
serialize.py serves a kept tree (kept.py); boxcheck.py checks boxes taken from the page.
The Browser below decides, per request, which of those runs.
"""

from __future__ import annotations

import asyncio
import time

from ..cdp import CDPConnection
from ..common.logging import get_logger
from .boxcheck import BoxCheck
from .chromium import Chromium
from .fullread import read_full
from .kept import Cold
from .pagecalls import BINDING, METRICS_EXPRESSION, TabGone, evaluate_json, safe_json
from .serialize import Snapshot
from .targets import Tab, Targets
from .warmpatch import read_warm

__all__ = ["Browser", "TabGone", "Snapshot"]

log = get_logger("deskbox.bridge")

CACHE_MAX_AGE = 5.0  # an unchanged page is answered from cache this long, then refreshed warm
FULL_MAX_AGE = 60.0  # a kept tree is fetched whole again at least this often
NAVIGATION_RETRIES = 2
# A tab read this recently is refreshed in the background as soon as its page reports a
# change or loads a new document (after a short pause to let a burst of changes
# settle), so that the next read finds it ready.
BACKGROUND_WINDOW = 10.0
BACKGROUND_DEBOUNCE = 0.02


class Browser:
    def __init__(self, chromium: Chromium) -> None:
        # Page events that start a background refresh (and a closed tab) come here from
        # every connection the targets open.
        self.targets = Targets(chromium, {"Runtime.bindingCalled": self._on_changed,
                                          "Page.loadEventFired": self._on_load,
                                          "Target.targetDestroyed": self._on_destroyed})
        # How the last layout of each tab was made, for the bench and the logs: "cache",
        # "measured" (patched, boxes from the page), "warm" (patched, boxes from a
        # DOMSnapshot) or "full"; and how many of each were made.
        self.last_path: dict[str, str] = {}
        self.made: dict[str, int] = {"cache": 0, "measured": 0, "warm": 0, "full": 0}
        self.box_check = BoxCheck(self.targets, self.layout)

    @property
    def checks(self) -> dict[str, int]:
        """Box checks run, and how many found a box the page had not reported right."""
        return self.box_check.checks

    # -- connection and tabs (the targets') -------------------------------------------

    async def connect(self) -> None:
        await self.targets.connect()

    async def close(self) -> None:
        await self.targets.close()

    async def page_targets(self) -> list[dict]:
        return await self.targets.pages()

    async def new_tab(self, url: str) -> dict:
        return await self.targets.new_tab(url)

    async def activate(self, target_id: str) -> None:
        await self.targets.activate(target_id)

    async def close_tab(self, target_id: str) -> None:
        await self.targets.close_tab(target_id)

    async def navigate(self, target_id: str, url: str) -> dict:
        return await self.targets.navigate(target_id, url)

    # -- page events ------------------------------------------------------------------

    def _on_destroyed(self, params: dict, _parent: str | None) -> None:
        self.last_path.pop(params.get("targetId"), None)

    def _on_changed(self, params: dict, session: str | None) -> None:
        if params.get("name") != BINDING:
            return
        tab = self.targets.tab_of(session)
        if tab is None or tab.kept is None or tab.target is None or time.monotonic() - tab.read_at > BACKGROUND_WINDOW:
            return
        self._refresh_soon(tab)

    def _on_load(self, _params: dict, session: str | None) -> None:
        # A tab being read that loads a new document is read again at once.
        tab = self.targets.tab_of(session)
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

    # -- layout -----------------------------------------------------------------------

    async def layout(self, target: dict, fresh: bool = False, background: bool = False,
                     verify: bool = False) -> Snapshot:
        """One tab's layout. ``fresh`` fetches the whole tree again instead of patching
        the kept one; ``verify`` takes the boxes from a DOMSnapshot even when the page
        could tell what moved. Callers share a gathering that started after they asked;
        one that started before might miss what the caller just did (a click), so they
        wait for it to end and then gather (from cache when nothing changed since)."""
        target_id = target["targetId"]
        tab = self.targets.tabs.setdefault(target_id, Tab(target_id))
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

    async def _layout(self, tab: Tab, target: dict, fresh: bool, verify: bool = False) -> Snapshot:
        conn = await self.targets.ensure()
        session = await self.targets.session(tab.target_id)
        for _attempt in range(NAVIGATION_RETRIES + 1):
            metrics, frame_keys = await asyncio.gather(evaluate_json(conn, session, METRICS_EXPRESSION),
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
                    snapshot = await read_warm(conn, tab, session, kept, metrics, frame_keys, self.box_check, verify)
                    self._made(tab, "measured" if tab.kept is not None and tab.kept.measured else "warm")
                except Cold as why:
                    log.debug("warm refresh not possible", reason=str(why))
                except BaseException:
                    # The page handed over its change lists and boxes: a patch that failed
                    # after that would leave the kept tree missing them. Read it whole next.
                    tab.kept, tab.cached = None, None
                    raise
            if snapshot is None:
                snapshot = await read_full(conn, tab, session, metrics, frame_keys, metrics["doc"])
                self._made(tab, "full")
            after = await evaluate_json(conn, session, METRICS_EXPRESSION)
            if (after["doc"], after["url"]) != doc:
                # The tab navigated while its parts were gathered: they may come from two
                # documents. Gather again from the new one.
                tab.cached, tab.kept = None, None
                continue
            if tab.kept is not None and tab.kept.measured:
                self.box_check.soon(tab)
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
        values = await asyncio.gather(*[safe_json(conn, f.session_id, METRICS_EXPRESSION) for f in frames])
        return tuple(sorted((f.target_id, (v or {}).get("changes"), (v or {}).get("doc")) for f, v in zip(frames, values)))
