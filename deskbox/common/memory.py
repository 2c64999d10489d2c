"""Giving memory back: services that handle large buffers now and then (a 6 MB
accessibility tree, a screenshot scaled up) should not keep their peak for ever."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

from .settings import env

__all__ = ["tune_memory", "tune_gc", "release_memory"]

_M_MMAP_THRESHOLD = -3


def _libc():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:  # not glibc: nothing to tune
        return None


_LIBC = _libc()


def tune_memory() -> None:
    """Large buffers (a reply or a tree of tens of MB) in their own mappings, which go
    back to the system when freed: glibc otherwise raises its threshold after the first
    big free and serves later ones from a heap that does not shrink."""
    if _LIBC is not None and hasattr(_LIBC, "mallopt"):
        _LIBC.mallopt(_M_MMAP_THRESHOLD, 1 << 20)


def release_memory() -> None:
    """Hand freed heap pages back to the system (after a big buffer was dropped)."""
    if _LIBC is not None and hasattr(_LIBC, "malloc_trim"):
        _LIBC.malloc_trim(0)


# Net allocations between collections of the youngest generation (CPython's default: 700).
GC_YOUNG_THRESHOLD = 50_000


def tune_gc() -> None:
    """Fewer full collections in a service whose heap is large and long-lived (the scene's
    elements and ids, the bridge's page trees, the AT-SPI worker's objects). With
    CPython's defaults a full collection came every three or four agent-turns in the
    scene aggregator beside a 1,000-element page and a Calc sheet, and each walked the
    whole heap inside a request: 36-68 ms (measured, 7 in 25 turns). The youngest
    generation is now collected every ``GC_YOUNG_THRESHOLD`` net allocations (a full
    collection some 70 times less often, each as long), and what exists at start is
    frozen out of every collection. Called once, at start. ``DESKBOX_GC=default`` keeps
    CPython's own settings (``bench.apps`` measures both)."""
    if env("DESKBOX_GC") == "default":
        return
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)
