"""One long-lived Wayland connection inside desktopd, driven by the asyncio loop.

It binds wl_shm, the seat, every wl_output (named through xdg-output), the wlr
screencopy manager (twice: one for captures, one for damage watching, since damage is
tracked per manager instance), the wlr virtual pointer manager and the virtual keyboard
manager. Events are read when the socket is readable (``loop.add_reader``); requests
are flushed after every batch. Nothing here blocks the loop except the roundtrips at
start-up and after a keymap upload.
"""

from __future__ import annotations

import asyncio
import mmap
import os
import select
from dataclasses import dataclass
from typing import Any

from pywayland.client import Display as WlDisplay
from pywayland.protocol.wayland import WlOutput, WlSeat, WlShm
from pywayland.protocol.xdg_output_unstable_v1 import ZxdgOutputManagerV1

from ....common.errors import UnavailableError
from ....common.logging import get_logger
from . import protocols

__all__ = ["WaylandClient", "OutputInfo", "ShmBuffer"]

log = get_logger("deskbox.wayland")


@dataclass
class OutputInfo:
    global_name: int
    proxy: Any
    name: str | None = None
    xdg: Any = None


class ShmBuffer:
    """A wl_buffer over a memfd, mapped once and reused for every capture of a size."""

    def __init__(self, shm: Any, width: int, height: int, stride: int, fmt: int) -> None:
        self.width, self.height, self.stride, self.format = width, height, stride, fmt
        self.size = stride * height
        self.fd = os.memfd_create("deskbox-shm", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, self.size)
        self.map = mmap.mmap(self.fd, self.size)
        self.pool = shm.create_pool(self.fd, self.size)
        self.buffer = self.pool.create_buffer(0, width, height, stride, fmt)

    def matches(self, width: int, height: int, stride: int, fmt: int) -> bool:
        return (self.width, self.height, self.stride, self.format) == (width, height, stride, fmt)

    def destroy(self) -> None:
        self.buffer.destroy()
        self.pool.destroy()
        self.map.close()
        os.close(self.fd)


class WaylandClient:
    def __init__(self, display_name: str | None = None) -> None:
        self.display_name = display_name
        self.display: WlDisplay | None = None
        self.shm: Any = None
        self.seat: Any = None
        self.outputs: dict[int, OutputInfo] = {}
        self.screencopy: Any = None
        self.damage_screencopy: Any = None
        self.screencopy_version = 0
        self.pointer_manager: Any = None
        self.pointer_manager_version = 0
        self.keyboard_manager: Any = None
        self._xdg_manager: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fd: int | None = None
        self.dead: str | None = None
        self.protocols = protocols.load()

    # -- connection ---------------------------------------------------------------

    def connect(self) -> None:
        try:
            self.display = WlDisplay(self.display_name)
            self.display.connect()
        except Exception as exc:  # pywayland raises ValueError/RuntimeError
            raise UnavailableError(
                f"cannot connect to Wayland display {self.display_name or os.environ.get('WAYLAND_DISPLAY')!r}: {exc}",
                code="compositor_unavailable",
            ) from exc
        registry = self.display.get_registry()
        registry.dispatcher["global"] = self._on_global
        registry.dispatcher["global_remove"] = self._on_global_remove
        self._registry = registry
        self.display.roundtrip()
        # Second roundtrip: xdg-output names arrive after the outputs were bound.
        self.display.roundtrip()
        missing = [
            name
            for name, obj in (
                ("wl_shm", self.shm),
                ("wl_seat", self.seat),
                ("zwlr_screencopy_manager_v1", self.screencopy),
                ("zwlr_virtual_pointer_manager_v1", self.pointer_manager),
                ("zwp_virtual_keyboard_manager_v1", self.keyboard_manager),
            )
            if obj is None
        ]
        if missing:
            raise UnavailableError(
                "the compositor lacks protocols desktopd needs: " + ", ".join(missing),
                code="compositor_unsupported",
            )

    def _on_global(self, registry: Any, name: int, interface: str, version: int) -> None:
        p = self.protocols
        if interface == "wl_shm":
            self.shm = registry.bind(name, WlShm, 1)
        elif interface == "wl_seat" and self.seat is None:
            self.seat = registry.bind(name, WlSeat, min(version, 5))
        elif interface == "wl_output":
            proxy = registry.bind(name, WlOutput, min(version, 3))
            info = OutputInfo(global_name=name, proxy=proxy)
            self.outputs[name] = info
            if self._xdg_manager is not None:
                self._watch_output_name(info)
        elif interface == "zxdg_output_manager_v1":
            self._xdg_manager = registry.bind(name, ZxdgOutputManagerV1, min(version, 3))
            for info in self.outputs.values():
                self._watch_output_name(info)
        elif interface == "zwlr_screencopy_manager_v1":
            iface = p["wlr_screencopy_unstable_v1"].ZwlrScreencopyManagerV1
            self.screencopy_version = min(version, 3)
            self.screencopy = registry.bind(name, iface, self.screencopy_version)
            self.damage_screencopy = registry.bind(name, iface, self.screencopy_version)
        elif interface == "zwlr_virtual_pointer_manager_v1":
            iface = p["wlr_virtual_pointer_unstable_v1"].ZwlrVirtualPointerManagerV1
            self.pointer_manager_version = min(version, 2)
            self.pointer_manager = registry.bind(name, iface, self.pointer_manager_version)
        elif interface == "zwp_virtual_keyboard_manager_v1":
            iface = p["virtual_keyboard_unstable_v1"].ZwpVirtualKeyboardManagerV1
            self.keyboard_manager = registry.bind(name, iface, 1)

    def _watch_output_name(self, info: OutputInfo) -> None:
        xdg = self._xdg_manager.get_xdg_output(info.proxy)

        def on_name(_proxy: Any, name: str) -> None:
            info.name = name

        xdg.dispatcher["name"] = on_name
        info.xdg = xdg

    def _on_global_remove(self, _registry: Any, name: int) -> None:
        info = self.outputs.pop(name, None)
        if info is not None:
            log.info("output removed", output=info.name)

    def output_by_name(self, name: str) -> OutputInfo | None:
        for info in self.outputs.values():
            if info.name == name:
                return info
        return None

    # -- asyncio integration --------------------------------------------------------

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        assert self.display is not None
        self._loop = loop
        self._fd = self.display.get_fd()
        loop.add_reader(self._fd, self._on_readable)

    def _on_readable(self) -> None:
        assert self.display is not None
        try:
            self.display.read()
            self.display.dispatch(block=False)
            self.display.flush()
        except Exception as exc:
            self._die(f"Wayland connection lost: {exc}")

    def pump(self) -> None:
        """Read at once whatever the compositor has sent (its going away too), before
        answering from what was known of it."""
        if self.dead is None and self._fd is not None and select.select([self._fd], [], [], 0)[0]:
            self._on_readable()

    def _die(self, reason: str) -> None:
        if self.dead is None:
            self.dead = reason
            log.error("wayland connection failed", reason=reason)
            if self._loop is not None and self._fd is not None:
                self._loop.remove_reader(self._fd)

    def flush(self) -> None:
        if self.dead:
            raise UnavailableError(self.dead, code="compositor_unavailable")
        assert self.display is not None
        self.display.dispatch(block=False)
        self.display.flush()

    def roundtrip(self) -> None:
        if self.dead:
            raise UnavailableError(self.dead, code="compositor_unavailable")
        assert self.display is not None
        self.display.roundtrip()

    def close(self) -> None:
        if self._loop is not None and self._fd is not None and self.dead is None:
            self._loop.remove_reader(self._fd)
        if self.display is not None:
            try:
                self.display.flush()
                self.display.disconnect()
            except Exception:
                pass
            self.display = None
