"""``google-chrome`` inside an OSWorld-mode session.

OSWorld's Chrome tasks start the browser as ``google-chrome --remote-debugging-port=1337
[URL ...]`` and then publish that port with ``socat tcp-listen:9222,fork
tcp:localhost:1337``. In deskbox the session's Chromium already runs (the CDP bridge
launched it, DevTools on the session's internal CDP port), so this wrapper does what
real Chrome does when its profile is in use by a running instance: it hands the URLs to
the running browser (new tabs) and returns at once. The requested debugging port is
made to reach the real DevTools port by a relay the OSWorld service keeps for the
session's life (``Relays``): the wrapper process itself owns nothing.

``python -m deskbox.osworld.chrome ARGS`` (the session's ``bin/google-chrome``) posts
its arguments to the OSWorld service at ``$DESKBOX_OSWORLD``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ..common.settings import env

__all__ = ["ChromeArgs", "parse_args", "Relays", "RelayError", "main"]


@dataclass(frozen=True)
class ChromeArgs:
    port: int | None
    urls: list[str]


def _url(arg: str) -> str:
    """A local file named on the command line becomes a file: URL, as Chrome takes it."""
    if "://" in arg or arg.startswith(("about:", "data:", "chrome:", "javascript:")):
        return arg
    path = Path(os.path.expanduser(arg))
    if path.is_absolute() or os.path.exists(path):
        return path.absolute().as_uri()
    return arg


def parse_args(args: list[str]) -> ChromeArgs:
    """The debugging port and the URLs of a Chrome command line; other switches are
    accepted and have no effect on the running browser."""
    port = None
    urls = []
    it = iter(args)
    for arg in it:
        if arg.startswith("--remote-debugging-port"):
            _, eq, value = arg.partition("=")
            if not eq:
                value = next(it, "")
            if not value.isdigit() or not 0 < int(value) < 65536:
                raise ValueError(f"bad --remote-debugging-port: {value!r}")
            port = int(value)
        elif not arg.startswith("-"):
            urls.append(_url(arg))
    return ChromeArgs(port, urls)


class RelayError(Exception):
    pass


class Relays:
    """Loopback TCP relays from a requested debugging port to the real one."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target_host, self.target_port = target_host, target_port
        self.servers: dict[int, list[asyncio.AbstractServer]] = {}
        self._conns: set[asyncio.Task] = set()

    async def ensure(self, port: int) -> bool:
        """Listen on ``port`` (127.0.0.1, and ::1 where there is IPv6) unless already
        relaying it or it is the real port; False when nothing new was opened."""
        if port == self.target_port or port in self.servers:
            return False
        servers = []
        try:
            servers.append(await asyncio.start_server(self._serve, "127.0.0.1", port))
        except OSError as exc:
            raise RelayError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from exc
        try:
            servers.append(await asyncio.start_server(self._serve, "::1", port))
        except OSError:
            pass  # no IPv6 loopback here: 127.0.0.1 is enough for localhost
        self.servers[port] = servers
        return True

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._conns.add(task)
        try:
            up_reader, up_writer = await asyncio.open_connection(self.target_host, self.target_port)
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            for w in (writer, up_writer):
                w.close()
            if task is not None:
                self._conns.discard(task)

    async def close(self) -> None:
        for servers in self.servers.values():
            for server in servers:
                server.close()
        for task in list(self._conns):
            task.cancel()
        self.servers.clear()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.write_eof()
        except (OSError, RuntimeError):
            pass


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    base = env("DESKBOX_OSWORLD")
    if not base:
        print("google-chrome: DESKBOX_OSWORLD is not set: run inside a `deskbox up --osworld` session",
              file=sys.stderr)
        return 1
    req = urllib.request.Request(base.rstrip("/") + "/deskbox/chrome", data=json.dumps({"args": args}).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    token = env("DESKBOX_TOKEN")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            resp.read()
    except urllib.error.HTTPError as err:
        print(f"google-chrome: {err.read().decode(errors='replace')}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"google-chrome: the session's browser service is not reachable: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
