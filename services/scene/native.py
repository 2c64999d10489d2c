"""Native apps over AT-SPI, for an asyncio service: pyatspi is synchronous and not
thread-safe, so one worker thread owns the reader and every call goes through it.

The worker is a daemon thread, not an executor's: an app that never answers a D-Bus call
would otherwise hold the service's shutdown forever (executor threads are joined at
exit). Calls wait at most ``timeout`` seconds; while a call that timed out is still stuck
in the worker, new calls fail at once instead of queueing behind it."""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any, Callable

__all__ = ["NativeSource", "NativeSourceBusy"]


class NativeSourceBusy(RuntimeError):
    pass


class NativeSource:
    def __init__(self, timeout: float = 3.0) -> None:
        self._timeout = timeout
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._reader: Any = None
        self._busy = threading.Event()
        self._thread = threading.Thread(target=self._work, name="atspi", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, loop, future = job
            self._busy.set()
            try:
                if self._reader is None:
                    from .atspi import AtspiReader  # pyatspi needs the session's D-Bus

                    self._reader = AtspiReader()
                result, error = fn(self._reader), None
            except BaseException as exc:  # handed to the caller, whatever it is
                result, error = None, exc
            finally:
                self._busy.clear()
            loop.call_soon_threadsafe(_settle, future, result, error)

    async def _call(self, fn: Callable[[Any], Any]) -> Any:
        if self._busy.is_set():
            raise NativeSourceBusy("an earlier AT-SPI call has not returned yet")
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._jobs.put((fn, loop, future))
        try:
            return await asyncio.wait_for(asyncio.shield(future), self._timeout)
        except asyncio.TimeoutError:
            raise NativeSourceBusy(f"AT-SPI did not answer within {self._timeout:g} s") from None

    async def snapshot(self, pids: frozenset[int] | None = None) -> list[Any]:
        """Every app's nodes; with ``pids``, only those processes' apps."""
        return await self._call(lambda r: r.snapshot(prune_documents=True, pids=pids))

    async def act(self, key: str, action: str) -> bool:
        return await self._call(lambda r: r.act(key, action))

    async def close(self) -> None:
        if not self._busy.is_set() and self._reader is not None:
            try:
                await self._call(lambda r: r.close())
            except Exception:
                pass
        self._jobs.put(None)


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
