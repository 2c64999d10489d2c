"""Giving memory back: services that handle large buffers now and then (a 6 MB
accessibility tree, a screenshot scaled up) should not keep their peak for ever."""

from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["tune_memory", "release_memory"]

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
