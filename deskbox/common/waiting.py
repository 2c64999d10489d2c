"""Waiting for a condition: one loop, sync and async, for the code, the tests and the
benches. The predicate's first true answer is returned; ``tolerate`` names exceptions
that mean "not yet" (a service still starting); past ``timeout`` seconds ``error`` is
raised, naming ``what`` and the last exception tolerated."""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any, Awaitable, Callable

__all__ = ["wait_until", "until"]


def _timed_out(error: type[Exception], timeout: float, what: str, last: Exception | None) -> Exception:
    return error(f"timed out after {timeout:g}s waiting for {what}" + (f" (last: {last!r})" if last else ""))


def wait_until(predicate: Callable[[], Any], timeout: float = 10, interval: float = 0.05, what: str = "condition",
               *, tolerate: tuple[type[Exception], ...] = (), error: type[Exception] = TimeoutError) -> Any:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except tolerate as exc:
            last = exc
        if time.monotonic() > deadline:
            raise _timed_out(error, timeout, what, last)
        time.sleep(interval)


async def until(predicate: Callable[[], Awaitable[Any] | Any], timeout: float = 10, interval: float = 0.05,
                what: str = "condition", *, tolerate: tuple[type[Exception], ...] = (),
                error: type[Exception] = TimeoutError) -> Any:
    """``wait_until`` on an event loop: ``predicate`` may be a coroutine function, or a
    plain one whose answer other tasks change while this one sleeps."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while True:
        try:
            value = predicate()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
        except tolerate as exc:
            last = exc
        if time.monotonic() > deadline:
            raise _timed_out(error, timeout, what, last)
        await asyncio.sleep(interval)
