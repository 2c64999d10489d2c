"""A small asyncio client for sway's IPC socket (the i3 IPC wire format)."""

from __future__ import annotations

import asyncio
import json
import os
import struct
from typing import Any, AsyncIterator

from ....common.errors import UnavailableError

__all__ = ["SwayIPC", "RUN_COMMAND", "GET_OUTPUTS", "GET_TREE", "GET_SEATS"]

_MAGIC = b"i3-ipc"
_HEADER = struct.Struct("<6sII")
RUN_COMMAND, GET_WORKSPACES, SUBSCRIBE, GET_OUTPUTS, GET_TREE = 0, 1, 2, 3, 4
GET_VERSION, GET_SEATS = 7, 101


class SwayIPC:
    def __init__(self, path: str | None = None) -> None:
        self.path = path or os.environ.get("SWAYSOCK") or ""
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()

    async def _connect(self) -> None:
        if not self.path:
            raise UnavailableError("sway IPC socket unknown: SWAYSOCK is not set", code="compositor_unavailable")
        try:
            self._reader, self._writer = await asyncio.open_unix_connection(self.path)
        except OSError as exc:
            raise UnavailableError(f"cannot reach sway IPC at {self.path}: {exc}",
                                   code="compositor_unavailable") from exc

    async def _read_message(self) -> tuple[int, Any]:
        assert self._reader is not None
        header = await self._reader.readexactly(_HEADER.size)
        magic, length, kind = _HEADER.unpack(header)
        if magic != _MAGIC:
            raise UnavailableError("sway IPC answered with a bad header", code="compositor_unavailable")
        payload = await self._reader.readexactly(length)
        return kind, json.loads(payload) if payload else None

    async def request(self, kind: int, payload: str = "") -> Any:
        async with self._lock:
            for attempt in (1, 2):
                if self._writer is None:
                    await self._connect()
                assert self._writer is not None
                data = payload.encode()
                try:
                    self._writer.write(_HEADER.pack(_MAGIC, len(data), kind) + data)
                    await self._writer.drain()
                    _kind, reply = await self._read_message()
                    return reply
                except (OSError, asyncio.IncompleteReadError) as exc:
                    self._close()
                    if attempt == 2:
                        raise UnavailableError(f"sway IPC failed: {exc}", code="compositor_unavailable") from exc

    async def command(self, command: str) -> list[dict]:
        return await self.request(RUN_COMMAND, command)

    async def subscribe(self, events: list[str]) -> AsyncIterator[tuple[int, Any]]:
        """A separate connection that yields (event type, payload) until closed."""
        reader, writer = await asyncio.open_unix_connection(self.path)
        data = json.dumps(events).encode()
        writer.write(_HEADER.pack(_MAGIC, len(data), SUBSCRIBE) + data)
        await writer.drain()
        try:
            while True:
                header = await reader.readexactly(_HEADER.size)
                _magic, length, kind = _HEADER.unpack(header)
                payload = await reader.readexactly(length)
                yield kind, json.loads(payload) if payload else None
        finally:
            writer.close()

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None

    async def close(self) -> None:
        self._close()
