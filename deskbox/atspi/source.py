"""Native apps over AT-SPI, for an asyncio service: the reader runs in a worker process
(``deskbox.atspi.worker``) spoken to in JSON lines, one request at a time.

A process rather than a thread: decoding the walk's D-Bus replies does not compete
with the event loop for the GIL, and an app that never answers cannot hold the
service: a call waits at most ``timeout`` seconds, after which the worker is killed and
the next call starts a new one."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from .tree import NativeNode, NoSuchAction

__all__ = ["NativeSource", "NativeSourceBusy"]

_LINE_LIMIT = 64 * 1024 * 1024  # one snapshot is one line


class NativeSourceBusy(RuntimeError):
    pass


class NativeSource:
    def __init__(self, timeout: float = 3.0) -> None:
        self._timeout = timeout
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self.last_walk: dict[str, Any] = {}  # the worker's figures of its latest walk

    async def _worker(self) -> asyncio.subprocess.Process:
        if self._proc is None or self._proc.returncode is not None:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "deskbox.atspi.worker",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=_LINE_LIMIT)
        return self._proc

    async def _call(self, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        timeout = self._timeout if timeout is None else timeout
        async with self._lock:
            proc = await self._worker()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write((json.dumps(request) + "\n").encode())
                await proc.stdin.drain()
                line = await asyncio.wait_for(proc.stdout.readline(), timeout)
            except asyncio.TimeoutError:
                self._kill()
                raise NativeSourceBusy(f"AT-SPI did not answer within {timeout:g} s") from None
            except (BrokenPipeError, ConnectionResetError) as exc:
                self._kill()
                raise NativeSourceBusy(f"the AT-SPI worker died: {exc}") from exc
            except asyncio.CancelledError:
                # Its reply would be read as the next request's: the worker goes.
                self._kill()
                raise
            if not line:
                self._kill()
                raise NativeSourceBusy("the AT-SPI worker exited (see the service log)")
            return json.loads(line)

    def _kill(self) -> None:
        if self._proc is not None and self._proc.returncode is None:
            self._proc.kill()
        self._proc = None

    async def snapshot(self, pids: frozenset[int] | None = None,
                       sheet_bands: Mapping[str, Sequence[tuple[float, float]]] | None = None,
                       still: frozenset[int] = frozenset()) -> list[NativeNode]:
        """Every app's nodes; with ``pids``, only those processes' apps; ``sheet_bands``:
        what changed of each sheet on screen; ``still``: processes whose windows held
        still since the previous snapshot (``AtspiReader.snapshot``)."""
        reply = await self._call({"op": "snapshot", "prune_documents": True, "still": sorted(still),
                                  "pids": sorted(pids) if pids is not None else None,
                                  "sheet_bands": {k: [list(b) for b in v] for k, v in (sheet_bands or {}).items()}})
        self.last_walk = reply.get("walk") or {}
        return [_node(n) for n in reply["nodes"]]

    async def tree(self, app_timeout: float, timeout: float) -> dict[str, Any]:
        """Every app's whole tree (``deskbox.atspi.full``): an app that takes longer
        than ``app_timeout`` is left out (named in ``left_out``); the whole read waits
        at most ``timeout``."""
        reply = await self._call({"op": "tree", "app_timeout": app_timeout}, timeout)
        if "apps" not in reply:
            raise NativeSourceBusy(f"the AT-SPI worker could not read the tree: {reply.get('error')}")
        return reply

    async def act(self, key: str, action: str) -> bool:
        reply = await self._call({"op": "act", "key": key, "action": action})
        if reply.get("error") == "NoSuchAction":
            raise NoSuchAction(key, action, tuple(reply.get("actions") or ()))
        return bool(reply.get("ok"))

    async def close(self) -> None:
        if self._proc is not None and self._proc.returncode is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                await asyncio.wait_for(self._proc.wait(), 2)
            except asyncio.TimeoutError:
                self._proc.kill()
        self._proc = None


def _node(fields: dict[str, Any]) -> NativeNode:
    extents = fields.get("extents")
    return NativeNode(**{**fields, "extents": tuple(extents) if extents is not None else None,
                         "states": tuple(fields["states"]), "actions": tuple(fields["actions"]),
                         "spans": tuple(tuple(s) for s in fields.get("spans") or ())})
