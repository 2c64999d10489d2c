"""The X11 backend: an X server at $DISPLAY (Xvfb, or any X desktop) driven through
python-xlib. Pixels come from mss, pointer and keyboard input from XTest, the window
tree from EWMH properties (or the root's mapped children when no window manager runs).

Every X request, and every mss grab, runs on one dedicated thread: python-xlib is a
blocking client and mss instances are bound to the thread that made them, so one thread
keeps both correct without stalling the event loop on a round trip.

X11Backend owns the connection, that thread, the event queue, displays, screenshots and
the pointer. The keyboard (x11_keyboard.X11Keyboard) and the window tree
(x11_windows.X11Windows) are collaborators it owns: plain synchronous code handed the
connection, which the backend only ever calls through ``_call``, so every X request
still goes through one door onto one thread.
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import mss
from Xlib import X
from Xlib import display as xdisplay
from Xlib import error as xerror
from Xlib.ext import xtest

from ...common.errors import ActionFailedError, DeskboxError, UnavailableError
from ...common.logging import get_logger
from ...geometry import Display, Rect, device_to_layout, device_to_root_pixel
from .base import Backend, Frame, KeyEvent, Window
from .x11_keyboard import REMAP_SETTLE, Chunk, X11Keyboard
from .x11_windows import X11Windows

__all__ = ["X11Backend"]

log = get_logger("deskbox.x11")

# X core buttons for base.BUTTONS' names.
_X_BUTTONS = {"left": 1, "middle": 2, "right": 3, "back": 8, "forward": 9}
# Wheel notches are button clicks: 4 up, 5 down, 6 left, 7 right.
_WHEEL_UP, _WHEEL_DOWN, _WHEEL_LEFT, _WHEEL_RIGHT = 4, 5, 6, 7

# RandR sends nothing when monitors are redefined, and a dead X server is only noticed on
# a request: the watcher re-reads the monitors this often.
_WATCH_INTERVAL = 2.0


class X11Backend(Backend):
    name = "x11"

    def __init__(self, display_name: str | None = None) -> None:
        self.display_name = display_name
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="deskbox-x11")
        self._x: xdisplay.Display | None = None
        self._root: Any = None
        self._mss: Any = None
        self._displays: list[Display] = []
        self._displays_stale = False
        self._windows = X11Windows()
        self._keyboard = X11Keyboard(self._windows, drain_events=self._drain_events, note_event=self._note_event)
        self._buttons: set[int] = set()
        self._position: tuple[int, float, float] | None = None
        self._dead: str | None = None
        self._watch_task: asyncio.Task | None = None

    # -- the X thread -------------------------------------------------------------------

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._guarded, fn, args)

    def _guarded(self, fn: Callable[..., Any], args: tuple) -> Any:
        """Run ``fn`` on the X thread; X errors become service errors here."""
        if self._x is None:
            raise UnavailableError(self._dead or "the X display is not connected", code="display_unavailable")
        try:
            result = fn(*args)
            self._drain_events()
            return result
        except DeskboxError:
            raise
        except xerror.ConnectionClosedError as exc:
            self._dead = f"the X connection closed: {exc}"
            raise UnavailableError(self._dead, code="display_unavailable") from exc
        except xerror.XError as exc:
            raise ActionFailedError(f"the X server refused a request: {exc}", code="x_error") from exc
        except OSError as exc:
            self._dead = f"the X connection failed: {exc}"
            raise UnavailableError(self._dead, code="display_unavailable") from exc

    def _drain_events(self) -> None:
        # Nobody reads events on this connection except here; unread ones would pile up.
        assert self._x is not None
        while self._x.pending_events():
            self._note_event(self._x.next_event())
        if self._displays_stale:
            self._displays_stale = False
            self._displays = self._read_displays()

    def _note_event(self, ev: Any) -> None:
        if ev.type == X.MappingNotify and ev.request == X.MappingKeyboard:
            self._keyboard.mapping_changed()
        elif ev.type == X.ConfigureNotify and getattr(ev.window, "id", ev.window) == self._root.id:
            self._displays_stale = True

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._connect)
        self._watch_task = asyncio.create_task(self._watch(), name="x11-watch")

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(_WATCH_INTERVAL)
            try:
                self._displays = await self._call(self._read_displays)
            except DeskboxError as exc:
                # A lost connection is recorded in _dead (health says so); keep trying
                # in case this was a passing refusal.
                log.debug("display watch failed", error=exc.message)

    def _connect(self) -> None:
        try:
            x = xdisplay.Display(self.display_name)
        except (xerror.DisplayError, xerror.XauthError, xerror.XNoAuthError, OSError) as exc:
            name = self.display_name or os.environ.get("DISPLAY") or "$DISPLAY (unset)"
            raise UnavailableError(f"cannot connect to the X display {name}: {exc}",
                                   code="display_unavailable") from exc
        if not x.has_extension("XTEST"):
            x.close()
            raise UnavailableError(f"the X server at {x.get_display_name()} has no XTEST extension: no input possible",
                                   code="display_unavailable")
        self._x = x
        self._root = x.screen().root
        # Root ConfigureNotify tells us the screen was resized (xrandr); clients answer
        # _NET_WM_PING to the root, which SubstructureNotify lets us hear.
        self._root.change_attributes(event_mask=X.StructureNotifyMask | X.SubstructureNotifyMask)
        self._windows.attach(x, self._root)
        self._keyboard.attach(x)
        self._displays = self._read_displays()
        try:
            factory = getattr(mss, "MSS", None) or mss.mss
            self._mss = factory(display=x.get_display_name())
        except Exception as exc:
            x.close()
            self._x = None
            raise UnavailableError(f"mss cannot capture {x.get_display_name()}: {exc}",
                                   code="display_unavailable") from exc
        log.info("connected", display=x.get_display_name(), displays=len(self._displays),
                 spare_keycodes=self._keyboard.spare_count())

    async def close(self) -> None:
        if self._watch_task is not None:
            self._watch_task.cancel()
            try:
                await self._watch_task
            except (asyncio.CancelledError, Exception):
                pass
        if self._x is not None:
            try:
                await self._call(self._shutdown)
            except DeskboxError as exc:
                log.warning("X11 cleanup failed", error=exc.message)
            x, self._x = self._x, None
            await asyncio.get_running_loop().run_in_executor(self._executor, self._close_connections, x)
        self._executor.shutdown(wait=True)

    async def release_input(self) -> None:
        if self._x is not None:
            await self._call(self._release_all)

    def _release_all(self) -> None:
        assert self._x is not None
        self._keyboard.release_all()
        for code in self._buttons:
            xtest.fake_input(self._x, X.ButtonRelease, detail=code)
        self._buttons.clear()
        self._x.sync()

    def _shutdown(self) -> None:
        self._release_all()
        self._keyboard.restore_spare()

    def _close_connections(self, x: xdisplay.Display) -> None:
        for close in (self._mss.close if self._mss is not None else None, x.close):
            try:
                if close is not None:
                    close()
            except Exception as exc:  # the server may be gone already; nothing left to free
                log.debug("closing the X connection failed", error=str(exc))

    def health(self) -> dict[str, Any]:
        return {"x11_connected": self._x is not None and self._dead is None, "error": self._dead}

    # -- displays and pixels ----------------------------------------------------------

    def displays(self) -> list[Display]:
        return list(self._displays)

    async def refresh_displays(self) -> list[Display]:
        self._displays = await self._call(self._read_displays)
        return self.displays()

    def _read_displays(self) -> list[Display]:
        """RandR monitors left to right (ties top to bottom), else the whole screen."""
        assert self._x is not None
        rects: list[tuple[str, int, int, int, int]] = []
        if self._x.has_extension("RANDR"):
            try:
                version = self._x.xrandr_query_version()
                if (version.major_version, version.minor_version) >= (1, 5):
                    for m in self._root.xrandr_get_monitors(is_active=True).monitors:
                        name = self._x.get_atom_name(m.name) if m.name else f"monitor-{len(rects)}"
                        rects.append((name, m.x, m.y, m.width_in_pixels, m.height_in_pixels))
            except xerror.XError as exc:
                log.warning("RandR monitors unreadable; using the whole screen", error=str(exc))
                rects = []
        if not rects:
            screen = self._x.screen()
            rects = [("screen0", 0, 0, screen.width_in_pixels, screen.height_in_pixels)]
        rects.sort(key=lambda r: (r[1], r[2], r[0]))
        return [
            Display(id=i, name=name, layout=Rect(x, y, w, h), scale=1.0, size=(w, h), primary=i == 0)
            for i, (name, x, y, w, h) in enumerate(rects)
        ]

    async def capture(self, display: Display, *, cursor: bool) -> Frame:
        return await self._call(self._grab, display)

    def _grab(self, display: Display) -> Frame:
        x, y = device_to_layout(display, 0, 0)
        w, h = display.size
        try:
            shot = self._mss.grab({"left": int(x), "top": int(y), "width": w, "height": h})
        except Exception as exc:  # mss reports a lost server as a bare AssertionError
            if self._dead is not None:
                raise UnavailableError(self._dead, code="display_unavailable") from exc
            raise UnavailableError(f"mss could not capture display {display.id}: {exc!r}",
                                   code="capture_failed") from exc
        # A copy: mss may reuse its (shared memory) buffer for the next grab.
        return Frame(width=shot.width, height=shot.height, stride=shot.width * 4, mode="BGRX", data=bytes(shot.raw))

    # -- pointer ----------------------------------------------------------------------

    async def pointer_move(self, display: Display, x: float, y: float) -> None:
        await self._call(self._move, display, x, y)
        self._position = (display.id, x, y)

    def _move(self, display: Display, x: float, y: float) -> None:
        assert self._x is not None
        rx, ry = device_to_root_pixel(display, x, y)
        xtest.fake_input(self._x, X.MotionNotify, detail=0, root=self._root.id, x=rx, y=ry)
        self._x.sync()

    async def pointer_button(self, button: str, down: bool) -> None:
        await self._call(self._button, _X_BUTTONS[button], down)

    def _button(self, code: int, down: bool) -> None:
        assert self._x is not None
        xtest.fake_input(self._x, X.ButtonPress if down else X.ButtonRelease, detail=code)
        (self._buttons.add if down else self._buttons.discard)(code)
        self._x.sync()

    async def pointer_scroll(self, dx: float, dy: float) -> None:
        await self._call(self._scroll, dx, dy)

    def _scroll(self, dx: float, dy: float) -> None:
        assert self._x is not None
        for notches, positive, negative in ((dy, _WHEEL_DOWN, _WHEEL_UP), (dx, _WHEEL_RIGHT, _WHEEL_LEFT)):
            if not notches:
                continue
            # A wheel has no half clicks: round, but never drop a small scroll entirely.
            clicks = max(1, round(abs(notches)))
            code = positive if notches > 0 else negative
            for _ in range(clicks):
                xtest.fake_input(self._x, X.ButtonPress, detail=code)
                xtest.fake_input(self._x, X.ButtonRelease, detail=code)
        self._x.sync()

    def pointer_position(self) -> tuple[int, float, float] | None:
        return self._position

    # -- keyboard ---------------------------------------------------------------------

    async def keys(self, events: Sequence[KeyEvent]) -> None:
        # Why chunks, the client barrier and the settle: see x11_keyboard's constants.
        i = 0
        while i < len(events):
            chunk: Chunk = await self._call(self._keyboard.plan_chunk, events, i)
            if chunk.reused:
                if not await self._call(self._keyboard.client_barrier):
                    await asyncio.sleep(chunk.idle_wait)
            if chunk.assign:
                await self._call(self._keyboard.remap, chunk.assign)
                await asyncio.sleep(REMAP_SETTLE)
            await self._call(self._keyboard.send_keys, events, i, chunk.end)
            i = chunk.end

    # -- windows ----------------------------------------------------------------------

    async def windows(self) -> list[Window]:
        return await self._call(self._list_windows)

    def _list_windows(self) -> list[Window]:
        assert self._x is not None
        self._displays = self._read_displays()
        return self._windows.list_windows(self._displays)

    async def focus_window(self, window_id: str) -> None:
        await self._call(self._windows.focus, window_id)

    async def close_window(self, window_id: str) -> None:
        await self._call(self._windows.close, window_id)
