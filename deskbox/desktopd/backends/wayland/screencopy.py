"""Screen capture through wlr-screencopy into reused shm buffers, plus a damage watcher.

A capture asks for the next frame of an output and copies it into a buffer mapped in
our memory (a few ms at 1080p). The damage watcher keeps one ``copy_with_damage``
armed per output on its own manager instance: it returns only when the screen changed,
so its generation counter tells the screenshot cache whether a cached image is still
what the screen shows. It never runs on a request path (on a still screen it waits
forever, by design).
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, TypeVar

from ....common.errors import ActionFailedError, UnavailableError
from ....common.logging import get_logger
from ..base import Frame
from .client import OutputInfo, ShmBuffer, WaylandClient

__all__ = ["Screencopy", "DamageWatcher"]

log = get_logger("deskbox.screencopy")

# wl_shm formats -> Pillow raw modes (memory byte order, little-endian host).
_ARGB8888, _XRGB8888 = 0, 1
_FOURCC_XBGR8888 = 0x34324258
_FOURCC_ABGR8888 = 0x34324241
_RAW_MODES = {_ARGB8888: "BGRX", _XRGB8888: "BGRX", _FOURCC_XBGR8888: "RGBX", _FOURCC_ABGR8888: "RGBX"}
_Y_INVERT = 1
CAPTURE_TIMEOUT = 5.0
T = TypeVar("T")


class _FrameRequest:
    """Drives one zwlr_screencopy_frame_v1 to ready/failed, resolving a future."""

    def __init__(self, client: WaylandClient, frame: Any, buffers: dict, *, with_damage: bool) -> None:
        self.client = client
        self.frame = frame
        self.buffers = buffers
        self.with_damage = with_damage
        self.shm_info: tuple[int, int, int, int] | None = None
        self.flags = 0
        self.buffer: ShmBuffer | None = None
        self.future: asyncio.Future = asyncio.get_running_loop().create_future()
        frame.dispatcher["buffer"] = self._on_buffer
        frame.dispatcher["flags"] = self._on_flags
        frame.dispatcher["ready"] = self._on_ready
        frame.dispatcher["failed"] = self._on_failed
        frame.dispatcher["buffer_done"] = self._on_buffer_done
        frame.dispatcher["damage"] = lambda *_: None
        frame.dispatcher["linux_dmabuf"] = lambda *_: None
        self._copied = False

    def _on_buffer(self, _frame: Any, fmt: int, width: int, height: int, stride: int) -> None:
        self.shm_info = (fmt, width, height, stride)
        if self.client.screencopy_version < 3:
            self._copy()

    def _on_buffer_done(self, _frame: Any) -> None:
        self._copy()

    def _copy(self) -> None:
        if self._copied or self.future.done():
            return
        self._copied = True
        if self.shm_info is None:
            self.future.set_exception(ActionFailedError("compositor offered no shm buffer for capture",
                                                        code="capture_failed"))
            return
        fmt, width, height, stride = self.shm_info
        if fmt not in _RAW_MODES:
            self.future.set_exception(ActionFailedError(f"unsupported pixel format 0x{fmt:x}", code="capture_failed"))
            return
        key = "damage" if self.with_damage else "capture"
        buf = self.buffers.get(key)
        if buf is None or not buf.matches(width, height, stride, fmt):
            if buf is not None:
                buf.destroy()
            buf = ShmBuffer(self.client.shm, width, height, stride, fmt)
            self.buffers[key] = buf
        self.buffer = buf
        if self.with_damage:
            self.frame.copy_with_damage(buf.buffer)
        else:
            self.frame.copy(buf.buffer)
        self.client.display.flush()

    def _on_flags(self, _frame: Any, flags: int) -> None:
        self.flags = flags

    def _on_ready(self, _frame: Any, *_timestamp: int) -> None:
        if not self.future.done():
            self.future.set_result(True)

    def _on_failed(self, _frame: Any) -> None:
        if not self.future.done():
            self.future.set_exception(ActionFailedError("the compositor could not copy the frame",
                                                        code="capture_failed"))

    def destroy(self) -> None:
        try:
            self.frame.destroy()
            self.client.display.flush()
        except Exception:
            pass


class Screencopy:
    def __init__(self, client: WaylandClient) -> None:
        self.client = client
        self._buffers: dict[str, dict] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def capture(self, output: OutputInfo, *, cursor: bool, consume: Callable[[Frame], T] | None = None):
        """The next frame of ``output``. With ``consume``, the frame's pixels are the
        shared buffer itself (no copy) and ``consume`` runs on it in a worker thread
        while the buffer is held; its result is returned. Without, a copied Frame."""
        name = output.name or str(output.global_name)
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            buffers = self._buffers.setdefault(name, {})
            frame = self.client.screencopy.capture_output(1 if cursor else 0, output.proxy)
            request = _FrameRequest(self.client, frame, buffers, with_damage=False)
            self.client.flush()
            try:
                await asyncio.wait_for(request.future, CAPTURE_TIMEOUT)
            except asyncio.TimeoutError as exc:
                raise UnavailableError(f"no frame from output {name} within {CAPTURE_TIMEOUT}s",
                                       code="capture_timeout") from exc
            finally:
                request.destroy()
            buf = request.buffer
            assert buf is not None and request.shm_info is not None
            fmt = request.shm_info[0]
            y_invert = bool(request.flags & _Y_INVERT)
            if consume is None:
                # Copy out while holding the lock: the buffer is reused by the next capture.
                return Frame(buf.width, buf.height, buf.stride, _RAW_MODES[fmt], buf.map[:], y_invert)
            view = memoryview(buf.map)
            try:
                shared = Frame(buf.width, buf.height, buf.stride, _RAW_MODES[fmt], view, y_invert)
                return await asyncio.get_running_loop().run_in_executor(None, consume, shared)
            finally:
                view.release()

    def close(self) -> None:
        for buffers in self._buffers.values():
            for buf in buffers.values():
                buf.destroy()
        self._buffers.clear()


class DamageWatcher:
    """Per output: a generation counter that moves whenever the screen changed.

    ``stable(name)`` is the generation a cached screenshot may be keyed on, or None
    while the watcher is not armed (then nothing is cached). A watcher re-arms at most
    every ``min_interval`` seconds so an animating screen does not cost a copy per frame;
    while disarmed, screenshots are simply captured afresh.
    """

    def __init__(self, client: WaylandClient, min_interval: float = 0.05) -> None:
        self.client = client
        self.min_interval = min_interval
        self.generation: dict[str, int] = {}
        self.armed: dict[str, bool] = {}
        self._buffers: dict[str, dict] = {}
        self._tasks: dict[str, asyncio.Task] = {}

    def watch(self, output: OutputInfo) -> None:
        name = output.name or str(output.global_name)
        if name in self._tasks and not self._tasks[name].done():
            return
        self.generation.setdefault(name, 0)
        self._tasks[name] = asyncio.get_running_loop().create_task(self._run(name, output), name=f"damage-{name}")

    def stable(self, name: str) -> int | None:
        if not self.armed.get(name):
            return None
        return self.generation.get(name)

    def invalidate(self) -> None:
        """Our own input may change the screen before the compositor reports it."""
        for name in self.generation:
            self.generation[name] += 1

    async def _run(self, name: str, output: OutputInfo) -> None:
        buffers = self._buffers.setdefault(name, {})
        while self.client.dead is None and output.global_name in self.client.outputs:
            frame = self.client.damage_screencopy.capture_output(0, output.proxy)
            request = _FrameRequest(self.client, frame, buffers, with_damage=True)
            try:
                self.client.flush()
                # Armed from here: any change after this point fires this frame (the
                # first one may also fire at once with full damage; that only costs
                # one needless invalidation).
                self.armed[name] = True
                await request.future
            except asyncio.CancelledError:
                self.armed[name] = False
                request.destroy()
                raise
            except Exception as exc:
                self.armed[name] = False
                log.warning("damage watch failed", output=name, error=str(exc))
                request.destroy()
                await asyncio.sleep(1.0)
                continue
            self.armed[name] = False
            self.generation[name] = self.generation.get(name, 0) + 1
            request.destroy()
            await asyncio.sleep(self.min_interval)
        self.armed[name] = False

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        for task in self._tasks.values():
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        for buffers in self._buffers.values():
            for buf in buffers.values():
                buf.destroy()
