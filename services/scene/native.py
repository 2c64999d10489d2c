"""Native apps over AT-SPI, for an asyncio service: pyatspi is synchronous and not
thread-safe, so one worker thread owns the reader and every call goes through it."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["NativeSource"]


class NativeSource:
    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="atspi")
        self._reader: Any = None

    def _get(self) -> Any:
        if self._reader is None:
            from .atspi import AtspiReader  # imports pyatspi, which needs the session's D-Bus

            self._reader = AtspiReader()
        return self._reader

    async def _call(self, fn, *args, **kwargs):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, lambda: fn(self._get(), *args, **kwargs))

    async def snapshot(self) -> list[Any]:
        return await self._call(lambda r: r.snapshot(prune_documents=True))

    async def act(self, key: str, action: str) -> bool:
        return await self._call(lambda r: r.act(key, action))

    async def close(self) -> None:
        if self._reader is not None:
            await self._call(lambda r: r.close())
        self._pool.shutdown(wait=False, cancel_futures=True)
