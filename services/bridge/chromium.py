"""Launching Chromium, watching it, and launching it again (same profile, same tabs)
when it dies."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass, field

from aiohttp import ClientSession, ClientTimeout

from ..common.errors import Unavailable
from ..common.logging import get_logger

__all__ = ["ChromiumConfig", "Chromium", "chromium_argv"]

log = get_logger("deskbox.chromium")

BASE_FLAGS = [
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--password-store=basic",
    "--force-renderer-accessibility",
    "--hide-crash-restore-bubble",
]


@dataclass
class ChromiumConfig:
    executable: str = "chromium"
    cdp_port: int = 9222
    user_data_dir: str = ""
    urls: list[str] = field(default_factory=lambda: ["about:blank"])
    extra_flags: list[str] = field(default_factory=list)
    ready_timeout: float = 30.0


def chromium_argv(config: ChromiumConfig, env: dict[str, str], urls: list[str]) -> list[str]:
    """Native Wayland when the session has a Wayland display, X11 otherwise."""
    platform = "wayland" if env.get("WAYLAND_DISPLAY") else "x11"
    argv = [config.executable, f"--ozone-platform={platform}", *BASE_FLAGS,
            "--remote-debugging-address=127.0.0.1", f"--remote-debugging-port={config.cdp_port}",
            f"--user-data-dir={config.user_data_dir}"]
    if os.geteuid() == 0:
        # Chromium's sandbox refuses root; deskbox up runs it as the session user.
        argv.append("--no-sandbox")
    return [*argv, *config.extra_flags, *urls]


class Chromium:
    """One Chromium process and its DevTools endpoint. ``on_restart`` runs after every
    relaunch so connections can be made again."""

    def __init__(self, config: ChromiumConfig) -> None:
        self.config = config
        self.proc: asyncio.subprocess.Process | None = None
        self.ws_url: str | None = None
        self.restarts = 0
        self.up = asyncio.Event()
        self.tab_urls: list[str] = list(config.urls)
        self._watch: asyncio.Task | None = None
        self._stopping = False
        self.on_restart = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.returncode is None else None

    @property
    def http_base(self) -> str:
        return f"http://127.0.0.1:{self.config.cdp_port}"

    async def start(self) -> None:
        await self._launch(self.tab_urls)
        self._watch = asyncio.create_task(self._supervise(), name="chromium-watch")

    async def _launch(self, urls: list[str]) -> None:
        env = dict(os.environ)
        argv = chromium_argv(self.config, env, urls or ["about:blank"])
        self.proc = await asyncio.create_subprocess_exec(
            *argv, env=env, stdin=asyncio.subprocess.DEVNULL, start_new_session=True,
        )
        log.info("chromium started", pid=self.proc.pid, port=self.config.cdp_port)
        deadline = time.monotonic() + self.config.ready_timeout
        async with ClientSession(timeout=ClientTimeout(total=2)) as http:
            while time.monotonic() < deadline:
                if self.proc.returncode is not None:
                    raise Unavailable(f"chromium exited with {self.proc.returncode} at start", code="browser_down")
                try:
                    async with http.get(self.http_base + "/json/version") as resp:
                        if resp.status == 200:
                            self.ws_url = (await resp.json())["webSocketDebuggerUrl"]
                            self.up.set()
                            return
                except Exception:
                    pass
                await asyncio.sleep(0.1)
        raise Unavailable(f"chromium's DevTools did not answer within {self.config.ready_timeout}s", code="browser_down")

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
            if time.monotonic() - started > 30:
                backoff = 0.5
            log.warning("chromium exited; relaunching", code=code, delay_s=backoff, tabs=len(self.tab_urls))
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 30)
            try:
                await self._launch(self.tab_urls)
                self.restarts += 1
                if self.on_restart is not None:
                    await self.on_restart()
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
