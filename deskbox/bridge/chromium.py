"""The Chromium the bridge reads: either one it launches itself (``chromium_with_api.py``
on its own: launched, watched, launched again with the same tabs when it dies) or one
somebody else runs (``deskbox up`` supervises the session's browser as a process of its
own, so that a bridge restart leaves the tabs, their scroll positions and form input
alone): the bridge then only watches its DevTools endpoint and connects again whenever
a new browser answers there.

Both offer the same face to the rest of the bridge: ``up`` (set while a browser
answers), ``ws_url``, ``pid``, ``restarts``, ``tab_urls`` and ``on_up``, a callback run
every time a browser has come up (the first time too)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable

from aiohttp import ClientSession, ClientTimeout

from ..cdp import CDPConnection, CDPError
from ..common.chromium import chromium_argv
from ..common.errors import UnavailableError
from ..common.logging import get_logger
from ..common.waiting import until

__all__ = ["ChromiumConfig", "Chromium", "AttachedChromium", "BrowserProcess"]

log = get_logger("deskbox.chromium")


@dataclass
class ChromiumConfig:
    executable: str = "chromium"
    cdp_port: int = 9222
    user_data_dir: str = ""
    urls: list[str] = field(default_factory=lambda: ["about:blank"])
    extra_flags: list[str] = field(default_factory=list)
    ready_timeout: float = 30.0
    # Somebody else runs the browser: watch its DevTools port, never launch it.
    attach: bool = False
    # Where the open tabs' URLs are written whenever they change (JSON list): what
    # whoever runs the browser opens again after a crash.
    tabs_file: str | None = None


class BrowserProcess:
    """What the two variants share."""

    def __init__(self, config: ChromiumConfig) -> None:
        self.config = config
        self.ws_url: str | None = None
        self.restarts = 0
        self.up = asyncio.Event()
        self.tab_urls: list[str] = list(config.urls)
        self.on_up: Callable[[], Awaitable[None]] | None = None
        self._pid: int | None = None

    @property
    def pid(self) -> int | None:
        return self._pid if self.up.is_set() else None

    def remember_tabs(self, urls: list[str]) -> None:
        self.tab_urls = urls
        if self.config.tabs_file:
            path = Path(self.config.tabs_file)
            tmp = path.with_name(path.name + ".tmp")
            try:
                tmp.write_text(json.dumps(urls))
                tmp.replace(path)
            except OSError as exc:
                log.warning("cannot write the tabs file", path=str(path), error=str(exc))

    @property
    def http_base(self) -> str:
        return f"http://127.0.0.1:{self.config.cdp_port}"

    async def _version(self, http: ClientSession) -> dict | None:
        try:
            async with http.get(self.http_base + "/json/version") as resp:
                if resp.status == 200:
                    return await resp.json()
        except Exception:
            pass
        return None

    async def _came_up(self, ws_url: str, pid: int | None) -> None:
        self.ws_url, self._pid = ws_url, pid
        self.up.set()
        if self.on_up is not None:
            try:
                await self.on_up()
            except Exception as exc:  # the next request connects again
                log.warning("connecting to the browser failed", error=str(exc))

    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        raise NotImplementedError


class Chromium(BrowserProcess):
    """One Chromium process the bridge launched, launched again when it dies."""

    def __init__(self, config: ChromiumConfig) -> None:
        super().__init__(config)
        self.proc: asyncio.subprocess.Process | None = None
        self._watch: asyncio.Task | None = None
        self._stopping = False

    async def start(self) -> None:
        await self._launch(self.tab_urls)
        self._watch = asyncio.create_task(self._supervise(), name="chromium-watch")

    async def _launch(self, urls: list[str]) -> None:
        env = dict(os.environ)
        argv = chromium_argv(self.config.executable, cdp_port=self.config.cdp_port,
                             user_data_dir=self.config.user_data_dir, wayland=bool(env.get("WAYLAND_DISPLAY")),
                             extra_flags=self.config.extra_flags, urls=urls or ["about:blank"])
        self.proc = await asyncio.create_subprocess_exec(
            *argv, env=env, stdin=asyncio.subprocess.DEVNULL, start_new_session=True,
        )
        log.info("chromium started", pid=self.proc.pid, port=self.config.cdp_port)
        proc = self.proc
        async with ClientSession(timeout=ClientTimeout(total=2)) as http:

            async def answers() -> dict | None:
                if proc.returncode is not None:
                    raise UnavailableError(f"chromium exited with {proc.returncode} at start", code="browser_down")
                return await self._version(http)

            try:
                version = await until(answers, self.config.ready_timeout, 0.1, "chromium's DevTools")
            except TimeoutError:
                raise UnavailableError(f"chromium's DevTools did not answer within {self.config.ready_timeout}s",
                                       code="browser_down") from None
        await self._came_up(version["webSocketDebuggerUrl"], proc.pid)

    async def _supervise(self) -> None:
        backoff = 0.5
        while not self._stopping:
            assert self.proc is not None
            started = time.monotonic()
            code = await self.proc.wait()
            self.up.clear()
            self._kill_group()
            if self._stopping:
                return
            if code == 0 or time.monotonic() - started > 30:
                backoff = 0.5  # closed on purpose, or it had been running well
            log.warning("chromium exited; relaunching", code=code, delay_s=backoff, tabs=len(self.tab_urls))
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 30)
            try:
                await self._launch(self.tab_urls)
                self.restarts += 1
            except Exception as exc:
                log.error("chromium relaunch failed", error=str(exc))

    def _kill_group(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    async def stop(self) -> None:
        self._stopping = True
        if self._watch is not None:
            self._watch.cancel()
        if self.proc is not None and self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except asyncio.TimeoutError:
                pass
        self._kill_group()
        self.up.clear()


class AttachedChromium(BrowserProcess):
    """A browser somebody else runs on ``config.cdp_port``. Its DevTools endpoint is
    polled until it answers; then a connection of its own is held open, and when that
    closes (the browser went) the endpoint is polled again. A browser answering with a
    new websocket URL is a new browser: ``restarts`` counts them.

    The polls come every POLL seconds at first (a browser restarting is back within a
    second or two), then further apart, up to POLL_MAX: a session whose browser stays
    closed (OSWorld mode after a reset, until a task starts Chrome) spends next to no CPU
    on it. Measured in an idle apps session with Calc open: ten polls a second were
    0.43 CPU s a minute, the most of any process in it."""

    POLL = 0.1
    POLL_MAX = 0.5

    def __init__(self, config: ChromiumConfig) -> None:
        super().__init__(config)
        self._watch: asyncio.Task | None = None

    async def start(self) -> None:
        self._watch = asyncio.create_task(self._follow(), name="chromium-follow")

    async def _follow(self) -> None:
        seen = None
        wait = self.POLL
        async with ClientSession(timeout=ClientTimeout(total=2)) as http:
            while True:
                version = await self._version(http)
                if version is None:
                    await asyncio.sleep(wait)
                    wait = min(self.POLL_MAX, wait * 1.25)
                    continue
                ws_url = version["webSocketDebuggerUrl"]
                conn = CDPConnection()
                try:
                    await conn.connect(ws_url)
                    pid = await _browser_pid(conn)
                except Exception:
                    await conn.close()
                    await asyncio.sleep(self.POLL)
                    continue
                wait = self.POLL  # (once it goes away, it may well be back soon)
                if seen is not None and ws_url != seen:
                    self.restarts += 1
                seen = ws_url
                log.info("browser is up", pid=pid, port=self.config.cdp_port)
                await self._came_up(ws_url, pid)
                await conn.closed.wait()
                self.up.clear()
                await conn.close()
                log.warning("browser went away; waiting for it", port=self.config.cdp_port)

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            try:
                await self._watch
            except (asyncio.CancelledError, Exception):
                pass
        self.up.clear()


async def _browser_pid(conn: CDPConnection) -> int | None:
    try:
        info = await conn.send("SystemInfo.getProcessInfo")
    except CDPError:
        return None
    return next((p["id"] for p in info.get("processInfo", []) if p.get("type") == "browser"), None)
