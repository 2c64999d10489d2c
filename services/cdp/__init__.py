"""An asyncio Chrome DevTools Protocol client on websockets.

One websocket to the browser carries every target as a flat session
(``Target.attachToTarget`` with ``flatten``), so commands to many tabs are pipelined on
one persistent connection and never wait for each other. Errors are translated into
:class:`CDPError` (the protocol answered with an error) and :class:`CDPClosed` (the
connection is gone) where they enter.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import defaultdict
from typing import Any, Callable

import orjson
import websockets
from websockets.asyncio.client import ClientConnection

__all__ = ["CDPConnection", "CDPError", "CDPClosed", "Handler"]

Handler = Callable[[dict, "str | None"], None]


class CDPError(Exception):
    def __init__(self, method: str, error: dict) -> None:
        self.method = method
        self.code = error.get("code")
        self.message = error.get("message", "")
        super().__init__(f"{method}: {self.message} ({self.code})")


class CDPClosed(Exception):
    pass


class CDPConnection:
    def __init__(self) -> None:
        self._ws: ClientConnection | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, asyncio.Future]] = {}
        self._handlers: dict[str, list[Handler]] = defaultdict(list)
        self._reader: asyncio.Task | None = None
        self.closed = asyncio.Event()

    async def connect(self, url: str, timeout: float = 10) -> None:
        try:
            self._ws = await asyncio.wait_for(
                websockets.connect(url, max_size=None, ping_interval=None, compression=None), timeout
            )
        except (OSError, asyncio.TimeoutError, websockets.InvalidHandshake) as exc:
            raise CDPClosed(f"cannot connect to {url}: {exc}") from exc
        self.closed.clear()
        self._reader = asyncio.create_task(self._read(), name="cdp-reader")

    def on(self, event: str, handler: Handler) -> None:
        self._handlers[event].append(handler)

    async def send(self, method: str, params: dict | None = None, *, session: str | None = None,
                   timeout: float = 15) -> dict:
        if self._ws is None or self.closed.is_set():
            raise CDPClosed("not connected")
        msg_id = next(self._ids)
        message: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        future = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = (method, future)
        try:
            await self._ws.send(json.dumps(message))
            return await asyncio.wait_for(future, timeout)
        except websockets.ConnectionClosed as exc:
            raise CDPClosed(f"connection closed during {method}") from exc
        except asyncio.TimeoutError as exc:
            raise CDPError(method, {"code": -32000, "message": f"no answer within {timeout}s"}) from exc
        finally:
            self._pending.pop(msg_id, None)

    async def _read(self) -> None:
        assert self._ws is not None
        try:
            async for raw in self._ws:
                # Replies reach tens of MB (full AX trees): orjson parses them several times faster.
                message = orjson.loads(raw)
                if "id" in message:
                    entry = self._pending.get(message["id"])
                    if entry is None or entry[1].done():
                        continue
                    method, future = entry
                    if "error" in message:
                        future.set_exception(CDPError(method, message["error"]))
                    else:
                        future.set_result(message.get("result", {}))
                else:
                    for handler in self._handlers.get(message.get("method", ""), ()):
                        handler(message.get("params", {}), message.get("sessionId"))
        except websockets.ConnectionClosed:
            pass
        finally:
            self.closed.set()
            for _method, future in self._pending.values():
                if not future.done():
                    future.set_exception(CDPClosed("connection closed"))

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            try:
                await self._reader
            except Exception:
                pass
        self.closed.set()
