"""Display backends desktopd can drive; see base.Backend for the contract."""

from __future__ import annotations

from .base import Backend

__all__ = ["Backend", "make_backend"]


def make_backend(kind: str, input_kind: str = "auto") -> Backend:
    if kind == "wayland":
        from .wayland import WaylandBackend

        backend: Backend = WaylandBackend()
    elif kind == "x11":
        from .x11 import X11Backend

        backend = X11Backend()
    else:
        raise ValueError(f"unknown backend {kind!r}")
    if input_kind == "uinput":
        from .uinput import UinputInput

        backend = UinputInput.wrap(backend)
    return backend
