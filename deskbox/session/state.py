"""What a session holds between tasks, and putting it back: reset, named snapshots,
browser contexts and the session's lifetime.

A reset ends every app of the session (deskbox's own processes stay), lets go of any
key or button, empties the clipboard and the caches, puts the home back as a snapshot
has it (default: as it was right after start), shows the home's background again, and
starts the browser on the snapshot's pages. Resets and snapshots take turns: one at a
time, the next waits.

A browser context (``contexts.py``) binds the session's browser profile to a folder
that outlives the session; with ``persist`` it is saved back when the session ends.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import time
from typing import TYPE_CHECKING

from aiohttp import ClientSession, ClientTimeout

from ..client import AsyncClient, DeskboxError
from ..common.logging import get_logger
from ..common.recording import FIRST_BYTES_S, output_of
from . import processes
from .contexts import Context, Contexts
from .home import START, HomeError

if TYPE_CHECKING:
    from .lifecycle import Session

__all__ = ["SessionState", "StateError", "NotFound", "Busy"]

log = get_logger("deskbox.state")

MAX_EXTEND_S = 7 * 24 * 3600
# How long a reset lets the session's apps end on SIGTERM before SIGKILL.
APP_GRACE_S = 1.0
RECORDERS = frozenset({"wf-recorder"})
RECORDER_GRACE_S = 5.0


async def _first_bytes(recorders: list[int]) -> None:
    """Until each recording has its first bytes (at most FIRST_BYTES_S): wf-recorder
    ended before its encoder put any out leaves an empty file, which a busy machine
    makes likely in a recording's first seconds."""
    deadline = time.monotonic() + FIRST_BYTES_S
    files = [f for f in (output_of(processes.cmdline(p)) for p in recorders) if f is not None]
    while time.monotonic() < deadline and any(f.exists() and f.stat().st_size == 0 for f in files):
        await asyncio.sleep(0.1)


class StateError(Exception):
    """Invalid (400)."""


class NotFound(StateError):
    """No such snapshot (404)."""


class Busy(StateError):
    """Valid, but not now (409)."""


class SessionState:
    def __init__(self, session: "Session") -> None:
        self.session = session
        self._lock = asyncio.Lock()
        self.resetting = False
        self.resets = 0
        self.started_at = time.time()
        self.expires_at: float | None = None  # set once the session is up (--ttl counts from then)
        self._expiry_changed = asyncio.Event()
        self.contexts = Contexts(session.args.contexts_dir, uid=session.uid, gid=session.gid)
        self.context: Context | None = None

    @property
    def home(self):
        assert self.session.home is not None
        return self.session.home

    @property
    def supervisor(self):
        assert self.session.supervisor is not None
        return self.session.supervisor

    # -- lifetime -----------------------------------------------------------------------

    async def wait_for_end(self) -> None:
        """Until SIGINT/SIGTERM, or the session's lifetime runs out (counted from now:
        the session is up)."""
        if self.session.args.ttl:
            self.expires_at = time.time() + self.session.args.ttl
        stop = asyncio.ensure_future(self.session.stop_event.wait())
        try:
            while not stop.done():
                self._expiry_changed.clear()
                left = None if self.expires_at is None else max(self.expires_at - time.time(), 0)
                if left == 0:
                    log.info("the session's lifetime is over")
                    return
                changed = asyncio.ensure_future(self._expiry_changed.wait())
                await asyncio.wait({stop, changed}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
        finally:
            stop.cancel()

    def extend(self, seconds: float) -> float:
        if not 0 < seconds <= MAX_EXTEND_S:
            raise StateError(f"seconds must be in (0, {MAX_EXTEND_S}]")
        if self.expires_at is None:
            raise Busy("this session has no lifetime to extend (start it with --ttl)")
        self.expires_at = max(self.expires_at, time.time()) + seconds
        self._expiry_changed.set()
        return self.expires_at

    # -- describing ---------------------------------------------------------------------

    def describe(self) -> dict:
        s = self.session
        return {
            "user": s.user_name,
            "home": str(s.home_path),
            "osworld": bool(s.args.osworld),
            "outputs": [str(o) for o in s.outputs],
            "start_urls": s.urls,
            "snapshots": [i.to_json() for i in self.home.list()],
            "resetting": self.resetting,
            "resets": self.resets,
            "started_at": self.started_at,
            "expires_at": self.expires_at,
            "context": self.context.to_json() if self.context else None,
            "children": self.supervisor.status(),
            "restarting": self.supervisor.restarting(),
        }

    # -- snapshots ----------------------------------------------------------------------

    async def save_start(self) -> None:
        """The home as it is before anything ran: what a reset returns to by default
        (a reset loads the context again, if one is bound)."""
        self.home.save(START, {"urls": list(self.session.urls)})
        if self.session.args.context:
            self.context = self.contexts.bind(self.session.args.context, persist=self.session.args.context_persist)
            self.contexts.load(self.context, self.session.profile_dir)

    async def snapshot(self, name: str) -> dict:
        if name == START:
            raise Busy("'start' is the state right after start: it cannot be replaced")
        async with self._lock:
            self._check_name(name)
            urls = await self._browser_urls()
            await self._stop_browser(clean=True)  # its profile flushed to disk, as a closed Chrome leaves it
            try:
                info = await asyncio.to_thread(self.home.save, name, {"urls": urls or list(self.session.urls)})
            finally:
                self.session.browser_urls = urls or list(self.session.urls)
                await self._start_browser()
            return info.to_json()

    def delete(self, name: str) -> None:
        self._check_name(name)
        if name == START:
            raise Busy("'start' is the state right after start: it cannot be deleted")
        try:
            self.home.delete(name)
        except KeyError:
            raise NotFound(f"no snapshot named {name!r}") from None

    def _check_name(self, name: str) -> None:
        try:
            self.home.has(name)
        except HomeError as exc:
            raise StateError(str(exc)) from None

    # -- reset --------------------------------------------------------------------------

    async def reset(self, name: str = START) -> dict:
        self._check_name(name)
        if not self.home.has(name):
            raise NotFound(f"no snapshot named {name!r}; GET /api/v1/session lists them")
        started = time.perf_counter()
        async with self._lock:
            began = time.time()
            self.resetting = True
            try:
                steps = await self._reset(name)
            finally:
                self.resetting = False
            self.resets += 1
            ended = time.time()
        return {"snapshot": name, "reset_ms": round((time.perf_counter() - started) * 1000, 1),
                "started_at": began, "finished_at": ended, **steps}

    async def _reset(self, name: str) -> dict:
        s = self.session
        meta = self.home.info(name).meta
        await self._stop_browser(clean=False)
        apps = s.app_pids()
        names = sorted(processes.describe(p, short=True) for p in apps)
        # A screen recording in progress is finished first, as its recorder finishes it
        # on SIGINT (wf-recorder writes the mp4's index): the recording is still there
        # to be collected after the reset.
        recorders = [p for p in apps if processes.describe(p, short=True) in RECORDERS]
        await _first_bytes(recorders)
        await processes.end_processes(recorders, grace=RECORDER_GRACE_S, first=signal.SIGINT)
        await processes.end_processes(apps, grace=APP_GRACE_S)
        # deskbox up adopted what detached (it is the session's subreaper): their zombies
        # are reaped now, not at the reaper's next rounds, so that the reset's caller
        # finds them gone.
        await processes.reap_ended(apps, skip=self.supervisor.spawned_pids())
        released = await self._release_input()
        await self._clear_clipboard()
        restored = await asyncio.to_thread(self._restore_files, name)
        await s.apply_wallpaper()
        s.browser_urls = list(meta.get("urls") or s.urls)
        await self._start_browser()
        return {"ended": names, "input_released": released, "files": restored}

    def _restore_files(self, name: str) -> dict:
        assert self.session.runtime is not None
        counts = self.home.restore(name)
        cache = self.session.runtime / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(exist_ok=True)
        self.home.chown(cache)
        if self.context is not None:
            self.contexts.load(self.context, self.session.profile_dir)
        return counts

    async def _release_input(self) -> bool:
        desktopd = self.session.url(self.session.args.desktopd_port)
        try:
            async with AsyncClient(None, desktopd, None, self.session.token, timeout=5) as client:
                await client.request("desktopd", "POST", "/api/v1/input/release")
                return True
        except DeskboxError as exc:
            log.warning("could not release held input", error=str(exc))
            return False

    async def _clear_clipboard(self) -> None:
        if shutil.which("wl-copy"):
            for extra in ([], ["--primary"]):
                await self.session.run_in_session(["wl-copy", *extra, "--clear"], timeout=2)

    # -- the browser --------------------------------------------------------------------

    def _has_browser(self) -> bool:
        return "chromium" in self.supervisor.children

    async def _browser_urls(self) -> list[str]:
        if not self._has_browser():
            return []
        try:
            async with ClientSession(timeout=ClientTimeout(total=3)) as http:
                async with http.get(f"http://127.0.0.1:{self.session.args.cdp_port}/json/list") as resp:
                    targets = await resp.json()
        except Exception:
            return []
        return [t["url"] for t in targets if t.get("type") == "page" and not t.get("url", "").startswith("devtools:")]

    async def _stop_browser(self, clean: bool) -> None:
        if self._has_browser():
            await self.supervisor.stop("chromium", kill=not clean)

    async def _start_browser(self) -> None:
        if self._has_browser():
            await self.supervisor.start("chromium")

    async def start_browser(self, urls: list[str]) -> dict:
        """Start the browser when it is not running (OSWorld's ``google-chrome`` after
        ``pkill chrome``): on ``urls``, or, with none, as Chrome starts on its own."""
        if not self._has_browser():
            raise Busy("this session has no browser (--no-browser)")
        async with self._lock:
            child = self.supervisor.children["chromium"]
            if child.state == "up":
                return {"started": False}
            self.session.browser_urls = urls
            await self._start_browser()
            return {"started": True}

    # -- contexts -----------------------------------------------------------------------

    async def bind_context(self, ident: str, persist: bool, url: str | None) -> dict:
        """Tear the browser down and bring it back on the context's profile."""
        if not self._has_browser():
            raise Busy("this session has no browser (--no-browser)")
        async with self._lock:
            context = self.contexts.bind(ident, persist=persist)  # raises Busy when held elsewhere
            await self._stop_browser(clean=True)
            try:
                if self.context is not None and self.context.ident != ident:
                    await asyncio.to_thread(self.contexts.release, self.context, self.session.profile_dir)
                self.context = context
                await asyncio.to_thread(self.contexts.load, context, self.session.profile_dir)
            finally:
                self.session.browser_urls = [url] if url else list(self.session.urls)
                await self._start_browser()
            return context.to_json()

    async def unbind_context(self) -> dict | None:
        async with self._lock:
            if self.context is None:
                return None
            context = self.context
            urls = await self._browser_urls()
            await self._stop_browser(clean=True)
            try:
                await asyncio.to_thread(self.contexts.release, context, self.session.profile_dir)
                self.context = None
            finally:
                self.session.browser_urls = urls or list(self.session.urls)
                await self._start_browser()
            return context.to_json()

    async def close(self) -> None:
        """At the end of the session, once the browser has stopped: save the context."""
        if self.context is not None:
            await asyncio.to_thread(self.contexts.release, self.context, self.session.profile_dir)
            self.context = None
