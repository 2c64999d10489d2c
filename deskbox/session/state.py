"""What a session holds between tasks, and putting it back: reset, named snapshots,
browser contexts and the session's lifetime.

A reset ends every app of the session (deskbox's own processes stay), lets go of any
key or button, empties the clipboard and the caches, puts the home back as a snapshot
has it (default: as it was right after start; GNOME's settings are a file of it, see
``gnome_settings``), shows the home's background again, and starts the browser on the
snapshot's pages (not, in OSWorld mode, for ``start``). Resets and snapshots take turns:
one at a time, the next waits.

A browser context (``contexts.py``) binds the session's browser profile to a folder
that outlives the session; with ``persist`` it is saved back when the session ends.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from aiohttp import ClientSession, ClientTimeout

from ..client import AsyncClient, DeskboxError
from ..common import timezone
from ..common.logging import get_logger
from ..common.recording import FIRST_BYTES_S, output_of
from . import gnome_settings, processes, wallpaper
from .contexts import Context, Contexts
from .home import START, Home, HomeError
from .supervisor import Supervisor

__all__ = ["SessionState", "StateConfig", "SessionActs", "StateError", "NotFound", "Busy"]

log = get_logger("deskbox.state")

MAX_EXTEND_S = 7 * 24 * 3600
# How long a reset lets the session's apps end on SIGTERM before SIGKILL.
APP_GRACE_S = 1.0
RECORDERS = frozenset({"wf-recorder"})
RECORDER_GRACE_S = 5.0
# How many times a reset looks again for processes started while it ended the others.
LATE_ROUNDS = 5


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


@dataclass(frozen=True)
class StateConfig:
    """What the state needs to know of its session, fixed once the session is prepared."""

    user_name: str
    uid: int
    gid: int
    runtime: Path
    profile_dir: Path  # the browser's profile, in the home
    outputs: list[str]
    start_urls: list[str]
    osworld: bool
    cdp_port: int
    desktopd_url: str
    token: str | None = None
    ttl: float | None = None  # seconds, from the session's start
    context: str | None = None  # bound at start
    context_persist: bool = True
    contexts_dir: str | None = None
    default_wallpaper: Path | None = None
    # Whether a reset to ``start`` starts the browser (OSWorld mode may leave it closed, as
    # OSWorld's VM starts a task with no browser open).
    browser_at_reset: bool = True
    # Where the session owns its time zone: the link it is set through, and the start zone
    # a reset puts back (deskbox.common.timezone).
    zone: tuple[Path, str] | None = None


class SessionActs(Protocol):
    """What the state asks of the running session (``Session`` does these)."""

    def app_pids(self) -> set[int]:
        """Every process of the session that is not deskbox's own."""
        ...

    async def apply_wallpaper(self) -> bool:
        """Show the background the home names."""
        ...

    async def run_in_session(self, argv: list[str], *, timeout: float = 5.0) -> int | None:
        """A short helper run as the session user."""
        ...

    def open_next(self, urls: list[str]) -> None:
        """The pages the browser opens when it next starts."""
        ...


class SessionState:
    """Reset, snapshots, contexts, lifetime and background of one session, given its
    config, its home, its supervisor (the browser is one of its children), the acts it
    needs of the session and the event that ends it."""

    def __init__(self, config: StateConfig, home: Home, supervisor: Supervisor, acts: SessionActs,
                 stop_event: asyncio.Event) -> None:
        self.config = config
        self.home = home
        self.supervisor = supervisor
        self.acts = acts
        self.stop_event = stop_event
        self._lock = asyncio.Lock()
        self.resetting = False
        self.resets = 0
        self.started_at = time.time()
        self.expires_at: float | None = None  # set once the session is up (--ttl counts from then)
        self._expiry_changed = asyncio.Event()
        self.contexts = Contexts(config.contexts_dir, uid=config.uid, gid=config.gid)
        self.context: Context | None = None

    # -- lifetime -----------------------------------------------------------------------

    async def wait_for_end(self) -> None:
        """Until SIGINT/SIGTERM, or the session's lifetime runs out (counted from now:
        the session is up)."""
        if self.config.ttl:
            self.expires_at = time.time() + self.config.ttl
        stop = asyncio.ensure_future(self.stop_event.wait())
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
        c = self.config
        return {
            "user": c.user_name,
            "home": str(self.home.path),
            "osworld": c.osworld,
            "outputs": list(c.outputs),
            "start_urls": list(c.start_urls),
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
        self.home.save(START, {"urls": list(self.config.start_urls)})
        if self.config.context:
            self.context = self.contexts.bind(self.config.context, persist=self.config.context_persist)
            self.contexts.load(self.context, self.config.profile_dir)

    async def snapshot(self, name: str) -> dict:
        if name == START:
            raise Busy("'start' is the state right after start: it cannot be replaced")
        async with self._lock:
            self._check_name(name)
            urls = await self._browser_urls()
            await self._stop_browser(clean=True)  # its profile flushed to disk, as a closed Chrome leaves it
            try:
                info = await asyncio.to_thread(self.home.save, name, {"urls": urls or list(self.config.start_urls)})
            finally:
                self.acts.open_next(urls or list(self.config.start_urls))
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
        meta = self.home.info(name).meta
        await self._stop_browser(clean=False)
        apps = self.acts.app_pids()
        names = sorted(processes.describe(p, short=True) for p in apps)
        # A screen recording in progress is finished first, as its recorder finishes it
        # on SIGINT (wf-recorder writes the mp4's index): the recording is still there
        # to be collected after the reset.
        recorders = [p for p in apps if processes.describe(p, short=True) in RECORDERS]
        await _first_bytes(recorders)
        await processes.end_processes(recorders, grace=RECORDER_GRACE_S, first=signal.SIGINT)
        await processes.end_processes(apps, grace=APP_GRACE_S)
        # An app may start another process as it is ended (one restarting itself, a
        # child forked on the way out): not in that list, it would outlive the reset
        # and hold what the next task starts fresh (a profile, a port, a bus name).
        # The session is looked at again until none of its apps is left.
        for _ in range(LATE_ROUNDS):
            late = self.acts.app_pids() - apps
            if not late:
                break
            names = sorted(names + [processes.describe(p, short=True) for p in late])
            apps |= late
            await processes.end_processes(late, grace=APP_GRACE_S)
        # deskbox up adopted what detached (it is the session's subreaper): their zombies
        # are reaped now, not at the reaper's next rounds, so that the reset's caller
        # finds them gone.
        await processes.reap_ended(apps, skip=self.supervisor.spawned_pids())
        released = await self._release_input()
        await self._clear_clipboard()
        restored = await asyncio.to_thread(self._restore_files, name)
        await self.acts.apply_wallpaper()
        self.acts.open_next(list(meta.get("urls") or self.config.start_urls))
        # Started again, but by a reset to ``start`` in OSWorld mode (unless asked): the
        # VM starts a task with no browser, and the task starts it itself if it uses one,
        # through google-chrome. Most of OSWorld's tasks do not, and Chromium's start was
        # four fifths of a reset's CPU.
        browser = self._has_browser() and (self.config.browser_at_reset or name != START)
        if browser:
            await self._start_browser()
        return {"ended": names, "input_released": released, "files": restored, "browser": browser}

    def _restore_files(self, name: str) -> dict:
        counts = self.home.restore(name)
        gnome_settings.flag_changed(self.config.runtime)
        if self.config.zone is not None:
            link, zone = self.config.zone
            if timezone.zone_name() != zone:
                timezone.point(link, zone)
        cache = self.config.runtime / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(exist_ok=True)
        self.home.chown(cache)
        if self.context is not None:
            self.contexts.load(self.context, self.config.profile_dir)
        return counts

    async def _release_input(self) -> bool:
        try:
            async with AsyncClient(None, self.config.desktopd_url, None, self.config.token, timeout=5) as client:
                await client.request("desktopd", "POST", "/api/v1/input/release")
                return True
        except DeskboxError as exc:
            log.warning("could not release held input", error=str(exc))
            return False

    async def _clear_clipboard(self) -> None:
        if shutil.which("wl-copy"):
            for extra in ([], ["--primary"]):
                await self.acts.run_in_session(["wl-copy", *extra, "--clear"], timeout=2)

    # -- the browser --------------------------------------------------------------------

    def _has_browser(self) -> bool:
        return "chromium" in self.supervisor.children

    async def _browser_urls(self) -> list[str]:
        if not self._has_browser():
            return []
        try:
            async with ClientSession(timeout=ClientTimeout(total=3)) as http:
                async with http.get(f"http://127.0.0.1:{self.config.cdp_port}/json/list") as resp:
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
            self.acts.open_next(urls)
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
                    await asyncio.to_thread(self.contexts.release, self.context, self.config.profile_dir)
                self.context = context
                await asyncio.to_thread(self.contexts.load, context, self.config.profile_dir)
            finally:
                self.acts.open_next([url] if url else list(self.config.start_urls))
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
                await asyncio.to_thread(self.contexts.release, context, self.config.profile_dir)
                self.context = None
            finally:
                self.acts.open_next(urls or list(self.config.start_urls))
                await self._start_browser()
            return context.to_json()

    async def close(self) -> None:
        """At the end of the session, once the browser has stopped: save the context."""
        if self.context is not None:
            await asyncio.to_thread(self.contexts.release, self.context, self.config.profile_dir)
            self.context = None

    # -- the background -----------------------------------------------------------------

    def wallpaper(self) -> Path | None:
        """The background shown: the home's own, else the session's default."""
        return wallpaper.current(self.home.path) or self.config.default_wallpaper

    async def set_wallpaper(self, image: Path) -> bool:
        """Remember ``image`` as the home's background and show it; False when Sway
        refused it. In OSWorld mode GNOME's setting names it too: OSWorld's /wallpaper
        reads it there."""
        setting = wallpaper.remember(self.home.path, image)
        self.home.chown(setting.parent)
        self.home.chown(setting)
        if self.config.osworld:
            for argv in gnome_settings.background_commands(image):
                if await self.acts.run_in_session(argv) != 0:
                    log.warning("GNOME's background setting was not changed", command=argv)
        return await self.acts.apply_wallpaper()
