"""When a child of the session is ready: one waiting loop (``until_ready``) and a probe
per kind of child. A child that exits while it is waited for, or is not ready in time,
is a ``SessionError`` naming its log."""

from __future__ import annotations

import asyncio
import glob
import json
import socket
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

from aiohttp import ClientSession, ClientTimeout

from .errors import SessionError
from .supervisor import Child

__all__ = ["READY_TIMEOUT", "until_ready", "HttpProbe", "http_answers", "chromium_has_a_page", "unix_socket_accepts",
           "sway_sockets", "atspi_enabled", "dbus_send"]

READY_TIMEOUT = 30.0
DBUS_SEND = "dbus-send"


async def until_ready(child: Child, what: str, log: Path | str, probe: Callable[[], Awaitable[Any]], *,
                      interval: float = 0.05, timeout: float = READY_TIMEOUT) -> Any:
    """Ask ``probe`` until it answers something true, and return that. A probe that holds
    a connection (``HttpProbe``) is closed at the end."""
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if child.proc is not None and child.proc.returncode is not None:
                raise SessionError(f"{what} exited with {child.proc.returncode}; see {log}")
            found = await probe()
            if found:
                return found
            await asyncio.sleep(interval)
        raise SessionError(f"{what} was not ready within {timeout:.0f}s; see {log}")
    finally:
        if isinstance(probe, HttpProbe):
            await probe.close()


class HttpProbe:
    """GET ``url`` on one client session for the whole wait (not one per try, every 50 ms);
    ready when ``accept`` takes the answer."""

    def __init__(self, url: str, accept: Callable[[int, bytes], bool]) -> None:
        self.url, self.accept = url, accept
        self._http: ClientSession | None = None

    async def __call__(self) -> bool:
        if self._http is None:
            self._http = ClientSession(timeout=ClientTimeout(total=2))
        try:
            async with self._http.get(self.url) as resp:
                return self.accept(resp.status, await resp.read())
        except Exception:
            return False

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()


def http_answers(url: str, *, any_status: bool = False) -> HttpProbe:
    return HttpProbe(url, lambda status, _: status == 200 or any_status)


def chromium_has_a_page(cdp_port: int) -> HttpProbe:
    """DevTools answers and a page target exists."""
    def accept(status: int, body: bytes) -> bool:
        return status == 200 and any(t.get("type") == "page" for t in json.loads(body))

    return HttpProbe(f"http://127.0.0.1:{cdp_port}/json/list", accept)


def unix_socket_accepts(path: str) -> Callable[[], Awaitable[bool]]:
    """Connecting (not just finding the file) tells a listening server from a stale socket."""
    async def probe() -> bool:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(0.5)
            try:
                s.connect(path)
            except OSError:
                return False
        return True

    return probe


def sway_sockets(runtime: Path, pid: int) -> Callable[[], Awaitable[str | None]]:
    """Sway's IPC socket, once it and the Wayland socket are there."""
    async def probe() -> str | None:
        socks = glob.glob(str(runtime / f"sway-ipc.*.{pid}.sock"))
        return socks[0] if socks and (runtime / "wayland-1").exists() else None

    return probe


async def dbus_send(address: str, path: str, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        DBUS_SEND, "--session", "--reply-timeout=2000", *args, env={"PATH": path, "DBUS_SESSION_BUS_ADDRESS": address},
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode(errors="replace")


def atspi_enabled(address: str, path: str) -> Callable[[], Awaitable[bool]]:
    """org.a11y.Bus is there, with accessibility and the screen reader switched on.

    Chromium exposes itself on AT-SPI only if ``ScreenReaderEnabled`` is already true
    when it starts, so this runs before the browser starts."""
    async def probe() -> bool:
        # Asked first, so that nothing is activated by a call to a name nobody owns yet.
        code, out = await dbus_send(address, path, "--print-reply", "--dest=org.freedesktop.DBus",
                                    "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner",
                                    "string:org.a11y.Bus")
        if code != 0 or "boolean true" not in out:
            return False
        for prop in ("IsEnabled", "ScreenReaderEnabled"):
            # --print-reply also makes it a call that expects a reply: the launcher ignores
            # a property Set sent without one (measured).
            code, _ = await dbus_send(address, path, "--print-reply", "--dest=org.a11y.Bus", "/org/a11y/bus",
                                      "org.freedesktop.DBus.Properties.Set", "string:org.a11y.Status",
                                      f"string:{prop}", "variant:boolean:true")
            if code != 0:
                return False
        code, out = await dbus_send(address, path, "--print-reply", "--dest=org.a11y.Bus", "/org/a11y/bus",
                                    "org.freedesktop.DBus.Properties.Get", "string:org.a11y.Status",
                                    "string:ScreenReaderEnabled")
        return code == 0 and "boolean true" in out

    return probe
