"""An asyncio Chrome DevTools Protocol client on websockets.

One websocket to the browser carries every target as a flat session
(``Target.attachToTarget`` with ``flatten``), so commands to many tabs are pipelined on
one persistent connection and never wait for each other. Errors are translated into
:class:`CDPError` (the protocol answered with an error) and :class:`CDPClosed` (the
connection is gone) where they enter.

Replies are parsed in two steps: the envelope (id, method, session) first, keeping the
``result`` as raw bytes, so that a caller can ask for those bytes (``raw=True``) and
decode a large reply (a full accessibility tree is several MB) into exactly what it
needs. Building Python dicts for every AX node costs ten times more than the decoding
the bridge does with them.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import defaultdict
from typing import Any, Callable

import orjson
import websockets
from websockets.asyncio.client import ClientConnection

try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec is a dependency; this keeps a bare venv working
    msgspec = None

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


if msgspec is not None:
    _ABSENT = msgspec.Raw()

    class _Envelope(msgspec.Struct, gc=False):
        id: int | None = None
        method: str | None = None
        sessionId: str | None = None
        # Raw cannot be part of a union: an empty Raw stands for "absent".
        result: msgspec.Raw = _ABSENT
        error: msgspec.Raw = _ABSENT
        params: msgspec.Raw = _ABSENT

    _decode_envelope = msgspec.json.Decoder(_Envelope).decode

    def _split(message: bytes) -> tuple[int | None, str | None, str | None, Any, Any, Any]:
        env = _decode_envelope(message)
        return (env.id, env.method, env.sessionId, env.result or None, env.error or None, env.params or None)

    def _load(raw: Any) -> Any:
        return orjson.loads(memoryview(raw)) if raw is not None else {}

    def _raw(raw: Any) -> bytes:
        return bytes(raw) if raw is not None else b"{}"
else:  # pragma: no cover
    def _split(message: bytes) -> tuple[int | None, str | None, str | None, Any, Any, Any]:
        msg = orjson.loads(message)
        return msg.get("id"), msg.get("method"), msg.get("sessionId"), msg.get("result"), msg.get("error"), msg.get("params")

    def _load(raw: Any) -> Any:
        return raw if raw is not None else {}

    def _raw(raw: Any) -> bytes:
        return orjson.dumps(raw) if raw is not None else b"{}"


class CDPConnection:
    def __init__(self) -> None:
        self._ws: ClientConnection | None = None
        self._ids = itertools.count(1)
        # message id -> (method, future, whether the caller wants the raw result bytes)
        self._pending: dict[int, tuple[str, asyncio.Future, bool]] = {}
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
                   timeout: float = 15, raw: bool = False) -> Any:
        """The command's result: a dict, or with ``raw`` the result object's JSON bytes."""
        if self._ws is None or self.closed.is_set():
            raise CDPClosed("not connected")
        msg_id = next(self._ids)
        message: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        future = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = (method, future, raw)
        try:
            await self._ws.send(orjson.dumps(message).decode())
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
            while True:
                message = await self._ws.recv(decode=False)
                msg_id, method, session, result, error, params = _split(message)
                if msg_id is not None:
                    entry = self._pending.get(msg_id)
                    if entry is None or entry[1].done():
                        continue
                    name, future, want_raw = entry
                    if error is not None:
                        future.set_exception(CDPError(name, _load(error)))
                    else:
                        future.set_result(_raw(result) if want_raw else _load(result))
                elif method is not None:
                    handlers = self._handlers.get(method)
                    if handlers:
                        event = _load(params)
                        for handler in handlers:
                            try:
                                handler(event, session)
                            except Exception:  # one bad handler must not stop the reader
                                continue
        except websockets.ConnectionClosed:
            pass
        finally:
            self.closed.set()
            for _method, future, _raw_wanted in self._pending.values():
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
