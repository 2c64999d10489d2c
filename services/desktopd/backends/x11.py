"""The X11 backend: an X server at $DISPLAY (Xvfb, or any X desktop) driven through
python-xlib. Pixels come from mss, pointer and keyboard input from XTest, the window
tree from EWMH properties (or the root's mapped children when no window manager runs).

Every X request, and every mss grab, runs on one dedicated thread: python-xlib is a
blocking client and mss instances are bound to the thread that made them, so one thread
keeps both correct without stalling the event loop on a round trip.
"""

from __future__ import annotations

import asyncio
import os
import select
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import mss
from Xlib import X, Xatom
from Xlib import display as xdisplay
from Xlib import error as xerror
from Xlib.ext import xtest
from Xlib.protocol import event as xevent

from ...common.errors import ActionFailed, NotFoundError, ServiceError, Unavailable
from ...common.logging import get_logger
from ...geometry import (
    Display,
    Rect,
    device_to_layout,
    device_to_root_pixel,
    display_at_layout_point,
    layout_rect_to_device,
)
from ..keys import MODIFIER_KEYSYMS
from .base import Backend, Frame, KeyEvent, Window

__all__ = ["X11Backend"]

log = get_logger("deskbox.x11")

# X core buttons for base.BUTTONS' names.
_X_BUTTONS = {"left": 1, "middle": 2, "right": 3, "back": 8, "forward": 9}
# Wheel notches are button clicks: 4 up, 5 down, 6 left, 7 right.
_WHEEL_UP, _WHEEL_DOWN, _WHEEL_LEFT, _WHEEL_RIGHT = 4, 5, 6, 7
_SHIFT_L = 0xFFE1
# Giving a spare keycode a new keysym races the focused client, which learns keyboard
# mappings late. Measured with Chromium 156 under Xvfb, typing 60 distinct CJK characters
# through the 19 spare keycodes, 15 runs each:
# - remap, press at once, key by key: a wrong character in 10 runs, always on a keycode
#   remapped a moment before (the client still read its previous keysym);
# - remap 19 keycodes, then press them at once: keys arrived as NUL or not at all;
# - remap, wait _REMAP_SETTLE, press; and before remapping a keycode that typed earlier,
#   make sure the client has handled those presses (else it reads the new keysym for
#   them): 0 failures, also with a CPU hog running. 0.03 s of settling was not enough.
# The client is known to have handled earlier events when it answers a _NET_WM_PING sent
# after them; a client that does not answer gets _SLOT_IDLE instead. Keys are grouped so
# these waits happen once per group of up to 19 new characters, not once per key.
_REMAP_SETTLE = 0.15
_SLOT_IDLE = 0.15
_PING_TIMEOUT = 1.0
# RandR sends nothing when monitors are redefined, and a dead X server is only noticed on
# a request: the watcher re-reads the monitors this often.
_WATCH_INTERVAL = 2.0
# The _NET_WM source indication for requests from a pager or tool (not an application).
_SOURCE_PAGER = 2


def _window_id(window_id: str) -> int:
    if window_id.startswith("x"):
        try:
            return int(window_id[1:], 16)
        except ValueError:
            pass
    raise NotFoundError(f"no window {window_id!r}; ids look like 'x400001' (see GET /api/v1/tree)")


class _Keymap:
    """The server's core keyboard mapping as keysym -> (keycode, shift level), plus the
    spare keycodes (no keysyms at start) that take keysyms no key produces, reused in
    least-recently-used order."""

    def __init__(self, first: int, rows: Sequence[Sequence[int]]) -> None:
        self.first = first
        self.spare = [first + i for i, row in enumerate(rows) if not any(row)]
        self.spare.reverse()  # from the top of the range, far from real keys
        self.slots: OrderedDict[int, tuple[int, float]] = OrderedDict()  # keycode -> (keysym, last pressed)
        self.load(rows)

    def load(self, rows: Sequence[Sequence[int]]) -> None:
        codes: dict[int, tuple[int, int]] = {}
        # Levels 1 and 2 of group 1 only: what the key gives plain and with shift.
        for level in (0, 1):
            for i, row in enumerate(rows):
                if len(row) > level and row[level] and row[level] not in codes:
                    codes[row[level]] = (self.first + i, level)
        self.codes = codes

    def lookup(self, keysym: int) -> tuple[int, int] | None:
        return self.codes.get(keysym)

    def pressed(self, code: int) -> None:
        if code in self.slots:
            self.slots[code] = (self.slots[code][0], time.monotonic())
            self.slots.move_to_end(code)

    def candidates(self) -> list[int]:
        """Spare keycodes in the order to give them new keysyms: never used, then LRU."""
        return [c for c in self.spare if c not in self.slots] + list(self.slots)

    def assign(self, code: int, keysym: int) -> None:
        old = self.slots.pop(code, None)
        if old is not None and self.codes.get(old[0], (None,))[0] == code:
            del self.codes[old[0]]
        self.slots[code] = (keysym, 0.0)
        self.codes[keysym] = (code, 0)


@dataclass(frozen=True, slots=True)
class _Chunk:
    """Events[start:end] can be sent once ``assign`` (keycode, keysym) is applied."""

    end: int
    assign: tuple[tuple[int, int], ...]
    reused: tuple[int, ...]  # assigned keycodes that had another keysym
    idle_wait: float  # until the reused keycodes have been idle _SLOT_IDLE


class X11Backend(Backend):
    name = "x11"

    def __init__(self, display_name: str | None = None) -> None:
        self.display_name = display_name
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="deskbox-x11")
        self._x: xdisplay.Display | None = None
        self._root: Any = None
        self._mss: Any = None
        self._displays: list[Display] = []
        self._keymap: _Keymap | None = None
        self._keymap_stale = False
        self._displays_stale = False
        self._ping_serial = 0
        self._held: dict[int, int] = {}  # keysym -> keycode
        self._forced_shift: int | None = None  # keycode of a shift we pressed for a level-2 keysym
        self._buttons: set[int] = set()
        self._position: tuple[int, float, float] | None = None
        self._dead: str | None = None
        self._atoms: dict[str, int] = {}
        self._watch_task: asyncio.Task | None = None

    # -- the X thread -------------------------------------------------------------------

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._guarded, fn, args)

    def _guarded(self, fn: Callable[..., Any], args: tuple) -> Any:
        """Run ``fn`` on the X thread; X errors become service errors here."""
        if self._x is None:
            raise Unavailable(self._dead or "the X display is not connected", code="display_unavailable")
        try:
            result = fn(*args)
            self._drain_events()
            return result
        except ServiceError:
            raise
        except xerror.ConnectionClosedError as exc:
            self._dead = f"the X connection closed: {exc}"
            raise Unavailable(self._dead, code="display_unavailable") from exc
        except xerror.XError as exc:
            raise ActionFailed(f"the X server refused a request: {exc}", code="x_error") from exc
        except OSError as exc:
            self._dead = f"the X connection failed: {exc}"
            raise Unavailable(self._dead, code="display_unavailable") from exc

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
            self._keymap_stale = True
        elif ev.type == X.ConfigureNotify and getattr(ev.window, "id", ev.window) == self._root.id:
            self._displays_stale = True

    def _atom(self, name: str) -> int:
        if name not in self._atoms:
            assert self._x is not None
            self._atoms[name] = self._x.intern_atom(name)
        return self._atoms[name]

    def _checked(self, request: Callable[..., Any], *args: Any, **kw: Any) -> None:
        """Send a request that has no reply and raise its error, if any, now."""
        assert self._x is not None
        catch = xerror.CatchError()
        request(*args, onerror=catch, **kw)
        self._x.sync()
        err = catch.get_error()
        if err is not None:
            raise err

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
            except ServiceError as exc:
                # A lost connection is recorded in _dead (health says so); keep trying
                # in case this was a passing refusal.
                log.debug("display watch failed", error=exc.message)

    def _connect(self) -> None:
        try:
            x = xdisplay.Display(self.display_name)
        except (xerror.DisplayError, xerror.XauthError, xerror.XNoAuthError, OSError) as exc:
            name = self.display_name or os.environ.get("DISPLAY") or "$DISPLAY (unset)"
            raise Unavailable(f"cannot connect to the X display {name}: {exc}",
                              code="display_unavailable") from exc
        if not x.has_extension("XTEST"):
            x.close()
            raise Unavailable(f"the X server at {x.get_display_name()} has no XTEST extension: no input possible",
                              code="display_unavailable")
        self._x = x
        self._root = x.screen().root
        # Root ConfigureNotify tells us the screen was resized (xrandr); clients answer
        # _NET_WM_PING to the root, which SubstructureNotify lets us hear.
        self._root.change_attributes(event_mask=X.StructureNotifyMask | X.SubstructureNotifyMask)
        self._keymap = _Keymap(x.display.info.min_keycode, self._read_mapping())
        self._displays = self._read_displays()
        try:
            factory = getattr(mss, "MSS", None) or mss.mss
            self._mss = factory(display=x.get_display_name())
        except Exception as exc:
            x.close()
            self._x = None
            raise Unavailable(f"mss cannot capture {x.get_display_name()}: {exc}", code="display_unavailable") from exc
        log.info("connected", display=x.get_display_name(), displays=len(self._displays),
                 spare_keycodes=len(self._keymap.spare))

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
            except ServiceError as exc:
                log.warning("X11 cleanup failed", error=exc.message)
            x, self._x = self._x, None
            await asyncio.get_running_loop().run_in_executor(self._executor, self._close_connections, x)
        self._executor.shutdown(wait=True)

    async def release_input(self) -> None:
        if self._x is not None:
            await self._call(self._release_all)

    def _shutdown(self) -> None:
        self._release_all()
        assert self._x is not None and self._keymap is not None
        # Give the spare keycodes back their emptiness.
        for code in list(self._keymap.slots):
            self._x.change_keyboard_mapping(code, [(X.NoSymbol,)])
        self._keymap.slots.clear()
        self._x.sync()

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
                raise Unavailable(self._dead, code="display_unavailable") from exc
            raise Unavailable(f"mss could not capture display {display.id}: {exc!r}", code="capture_failed") from exc
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
        i = 0
        while i < len(events):
            chunk: _Chunk = await self._call(self._plan_chunk, events, i)
            if chunk.reused:
                if not await self._call(self._client_barrier):
                    await asyncio.sleep(chunk.idle_wait)
            if chunk.assign:
                await self._call(self._remap, chunk.assign)
                await asyncio.sleep(_REMAP_SETTLE)
            await self._call(self._send_keys, events, i, chunk.end)
            i = chunk.end

    def _read_mapping(self) -> list[tuple[int, ...]]:
        assert self._x is not None
        info = self._x.display.info
        return [tuple(row) for row in self._x.get_keyboard_mapping(info.min_keycode, info.max_keycode - info.min_keycode + 1)]

    def _plan_chunk(self, events: Sequence[KeyEvent], start: int) -> _Chunk:
        """The longest run of events from ``start`` whose keysyms can all have keys at
        once, and the spare keycodes to remap for it. Keycodes held down or pressed in
        the run keep their keysyms."""
        assert self._keymap is not None
        if self._keymap_stale:
            self._keymap.load(self._read_mapping())
            self._keymap_stale = False
        keep = set(self._held.values())
        assign: dict[int, int] = {}  # keysym -> keycode
        taken: set[int] = set()
        candidates = self._keymap.candidates()
        end = start
        for event in events[start:]:
            if event.down and event.keysym not in assign and event.keysym not in self._held:
                found = self._keymap.lookup(event.keysym)
                if found is not None and found[0] not in taken:
                    keep.add(found[0])
                else:
                    code = next((c for c in candidates if c not in keep and c not in taken), None)
                    if code is None:
                        break
                    assign[event.keysym] = code
                    taken.add(code)
                    keep.add(code)
            end += 1
        if end == start:
            raise ActionFailed("every spare keycode is held down; release keys first", code="keymap_full")
        now = time.monotonic()
        reused = tuple(c for c in taken if c in self._keymap.slots)
        idle_wait = max([self._keymap.slots[c][1] + _SLOT_IDLE - now for c in reused] + [0.0])
        return _Chunk(end, tuple((c, k) for k, c in assign.items()), reused, idle_wait)

    def _remap(self, assign: Sequence[tuple[int, int]]) -> None:
        assert self._x is not None and self._keymap is not None
        catch = xerror.CatchError()
        for code, keysym in assign:
            # The same keysym on both levels: shift held by the caller does not change it.
            self._x.change_keyboard_mapping(code, [(keysym, keysym)], onerror=catch)
        self._x.sync()
        if catch.get_error() is not None:
            raise ActionFailed(f"the X server refused a keyboard mapping: {catch.get_error()}", code="keymap_error")
        for code, keysym in assign:
            self._keymap.assign(code, keysym)
        # Our own MappingNotify events need no reload: the table says what we set.
        self._drain_events()
        self._keymap_stale = False

    def _client_barrier(self) -> bool:
        """Wait until the focused client has handled every event sent before now: it
        answers a _NET_WM_PING only after them. False when it does not answer pings."""
        assert self._x is not None
        focused = self._focused_id(self._toplevel_ids())
        if focused is None:
            return False
        win = self._x.create_resource_object("window", focused)
        ping = self._atom("_NET_WM_PING")
        try:
            if ping not in (win.get_wm_protocols() or []):
                return False
            self._ping_serial = (self._ping_serial + 1) & 0xFFFFFFFF
            serial = self._ping_serial
            self._client_message(win, "WM_PROTOCOLS", [ping, serial, focused], to_root=False)
        except (xerror.BadWindow, xerror.BadDrawable):
            return False
        deadline = time.monotonic() + _PING_TIMEOUT
        while True:
            while self._x.pending_events():
                ev = self._x.next_event()
                if (ev.type == X.ClientMessage and ev.client_type == self._atom("WM_PROTOCOLS")
                        and ev.data[1][0] == ping and ev.data[1][1] == serial):
                    return True
                self._note_event(ev)
            left = deadline - time.monotonic()
            if left <= 0:
                log.info("no answer to _NET_WM_PING; waiting instead", window=f"x{focused:x}")
                return False
            select.select([self._x.fileno()], [], [], left)

    def _send_keys(self, events: Sequence[KeyEvent], start: int, end: int) -> None:
        assert self._x is not None and self._keymap is not None
        for event in events[start:end]:
            found = None
            if event.down and event.keysym not in self._held:
                found = self._keymap.lookup(event.keysym)
                if found is None:  # _plan_chunk gave every keysym a key, so this is a bug
                    raise ActionFailed(f"no key for keysym 0x{event.keysym:x}", code="keymap_error")
                self._keymap.pressed(found[0])
            self._key(event, found)
        self._x.sync()

    def _shift_held(self) -> bool:
        return any(MODIFIER_KEYSYMS.get(k) == "shift" for k in self._held)

    def _key(self, event: KeyEvent, found: tuple[int, int] | None) -> None:
        assert self._x is not None and self._keymap is not None
        if event.down:
            if event.keysym in self._held or found is None:
                return
            code, level = found
            if level == 1 and not self._shift_held() and event.keysym not in MODIFIER_KEYSYMS:
                shift = self._keymap.lookup(_SHIFT_L)
                if shift is not None:
                    xtest.fake_input(self._x, X.KeyPress, detail=shift[0])
                    self._forced_shift = shift[0]
            xtest.fake_input(self._x, X.KeyPress, detail=code)
            self._held[event.keysym] = code
        else:
            code = self._held.pop(event.keysym, None)
            if code is None:
                return
            xtest.fake_input(self._x, X.KeyRelease, detail=code)
            if self._forced_shift is not None:
                xtest.fake_input(self._x, X.KeyRelease, detail=self._forced_shift)
                self._forced_shift = None

    def _release_all(self) -> None:
        assert self._x is not None
        for code in self._held.values():
            xtest.fake_input(self._x, X.KeyRelease, detail=code)
        if self._forced_shift is not None:
            xtest.fake_input(self._x, X.KeyRelease, detail=self._forced_shift)
        for code in self._buttons:
            xtest.fake_input(self._x, X.ButtonRelease, detail=code)
        self._held.clear()
        self._buttons.clear()
        self._forced_shift = None
        self._x.sync()

    # -- windows ----------------------------------------------------------------------

    async def windows(self) -> list[Window]:
        return await self._call(self._list_windows)

    def _prop(self, win: Any, name: str, kind: int = X.AnyPropertyType) -> Any:
        prop = win.get_full_property(self._atom(name), kind)
        return None if prop is None else prop.value

    def _text(self, win: Any, name: str) -> str | None:
        prop = win.get_full_property(self._atom(name), X.AnyPropertyType)
        if prop is None or prop.format != 8:
            return None
        # STRING is Latin-1 by definition; Chromium and GTK also write WM_NAME as UTF8_STRING.
        encoding = "latin-1" if prop.property_type == Xatom.STRING else "utf-8"
        return bytes(prop.value).decode(encoding, errors="replace")

    def _window_manager(self) -> set[int] | None:
        """The atoms a running EWMH window manager supports, or None without one."""
        check = self._prop(self._root, "_NET_SUPPORTING_WM_CHECK", Xatom.WINDOW)
        if not check:
            return None
        try:
            # A crashed manager leaves the property behind; its check window is gone then.
            self._x.create_resource_object("window", check[0]).get_geometry()
        except (xerror.BadWindow, xerror.BadDrawable):
            return None
        return set(self._prop(self._root, "_NET_SUPPORTED", Xatom.ATOM) or [])

    def _toplevel_ids(self) -> list[int]:
        if self._window_manager() is not None:
            clients = self._prop(self._root, "_NET_CLIENT_LIST", Xatom.WINDOW)
            if clients is not None:
                return list(clients)
        ids = []
        for child in self._root.query_tree().children:
            try:
                attrs = child.get_attributes()
                # Override-redirect windows (menus, tooltips) are nobody's top-level.
                if attrs.map_state != X.IsViewable or attrs.override_redirect:
                    continue
                if self._text(child, "_NET_WM_NAME") is None and self._text(child, "WM_NAME") is None:
                    continue
            except (xerror.BadWindow, xerror.BadDrawable):
                continue
            ids.append(child.id)
        return ids

    def _focused_id(self, ids: list[int]) -> int | None:
        """The top-level among ``ids`` that has the keyboard focus."""
        assert self._x is not None
        active = self._prop(self._root, "_NET_ACTIVE_WINDOW", Xatom.WINDOW)
        if active and active[0] in ids:
            return active[0]
        focus = self._x.get_input_focus().focus
        wid = getattr(focus, "id", focus)
        if wid == X.PointerRoot:
            # Keys go to whatever is under the pointer.
            child = self._root.query_pointer().child
            wid = getattr(child, "id", child)
        if wid in (X.NONE, X.PointerRoot):
            return None
        wanted = set(ids)
        # The focus may sit on a child of the top-level (or the top-level inside a frame).
        while wid and wid != self._root.id:
            if wid in wanted:
                return wid
            try:
                wid = self._x.create_resource_object("window", wid).query_tree().parent.id
            except (xerror.BadWindow, xerror.BadDrawable):
                return None
        return None

    def _list_windows(self) -> list[Window]:
        assert self._x is not None
        self._displays = self._read_displays()
        ids = self._toplevel_ids()
        focused = self._focused_id(ids)
        found = []
        for wid in ids:
            try:
                found.append(self._describe(wid, focused))
            except (xerror.BadWindow, xerror.BadDrawable):
                continue  # closed while we looked
        return found

    def _describe(self, wid: int, focused: int | None) -> Window:
        assert self._x is not None
        win = self._x.create_resource_object("window", wid)
        geometry = win.get_geometry()
        # The client window's own origin in root coordinates: inside any WM frame and
        # border, so the rect is the client area the application draws.
        origin = self._root.translate_coords(win, 0, 0)
        layout = Rect(origin.x, origin.y, geometry.width, geometry.height)
        display = display_at_layout_point(self._displays, layout.x + layout.w / 2, layout.y + layout.h / 2)
        if display is None:
            display = display_at_layout_point(self._displays, layout.x, layout.y)
        wm_class = win.get_wm_class()
        pid = self._prop(win, "_NET_WM_PID", Xatom.CARDINAL)
        desktop = self._prop(win, "_NET_WM_DESKTOP", Xatom.CARDINAL)
        return Window(
            id=f"x{wid:x}",
            app_id=wm_class[1] if wm_class else None,
            pid=int(pid[0]) if pid else None,
            title=self._text(win, "_NET_WM_NAME") or self._text(win, "WM_NAME"),
            layout=layout,
            display_id=display.id if display else None,
            bounds=layout_rect_to_device(display, layout) if display else None,
            focused=wid == focused,
            floating=False,
            workspace=str(desktop[0]) if desktop else None,
            extra={"wm_instance": wm_class[0] if wm_class else None},
        )

    def _known_window(self, window_id: str) -> Any:
        wid = _window_id(window_id)
        if wid not in self._toplevel_ids():
            raise NotFoundError(f"no window {window_id!r}; see GET /api/v1/tree")
        assert self._x is not None
        return self._x.create_resource_object("window", wid)

    def _client_message(self, win: Any, type_name: str, data: list[int], *, to_root: bool) -> None:
        msg = xevent.ClientMessage(window=win, client_type=self._atom(type_name), data=(32, (data + [0] * 5)[:5]))
        if to_root:
            mask = X.SubstructureRedirectMask | X.SubstructureNotifyMask
            self._checked(self._root.send_event, msg, event_mask=mask)
        else:
            self._checked(win.send_event, msg, event_mask=0)

    async def focus_window(self, window_id: str) -> None:
        await self._call(self._focus, window_id)

    def _focus(self, window_id: str) -> None:
        win = self._known_window(window_id)
        supported = self._window_manager()
        try:
            if supported is not None and self._atom("_NET_ACTIVE_WINDOW") in supported:
                self._client_message(win, "_NET_ACTIVE_WINDOW", [_SOURCE_PAGER, X.CurrentTime, 0], to_root=True)
            else:
                self._checked(win.configure, stack_mode=X.Above)
                self._checked(win.set_input_focus, X.RevertToParent, X.CurrentTime)
        except (xerror.BadWindow, xerror.BadDrawable) as exc:
            raise NotFoundError(f"window {window_id!r} is gone", code="not_found") from exc
        except xerror.BadMatch as exc:
            raise ActionFailed(f"window {window_id!r} cannot take the focus (not viewable)", code="not_focusable") from exc

    async def close_window(self, window_id: str) -> None:
        await self._call(self._close, window_id)

    def _close(self, window_id: str) -> None:
        assert self._x is not None
        win = self._known_window(window_id)
        supported = self._window_manager()
        try:
            if supported is not None and self._atom("_NET_CLOSE_WINDOW") in supported:
                self._client_message(win, "_NET_CLOSE_WINDOW", [X.CurrentTime, _SOURCE_PAGER], to_root=True)
            elif self._atom("WM_DELETE_WINDOW") in (win.get_wm_protocols() or []):
                self._client_message(win, "WM_PROTOCOLS", [self._atom("WM_DELETE_WINDOW"), X.CurrentTime], to_root=False)
            else:
                # No way to ask: disconnect the client that owns the window, as xkill does.
                self._checked(win.kill_client)
        except (xerror.BadWindow, xerror.BadDrawable) as exc:
            raise NotFoundError(f"window {window_id!r} is gone", code="not_found") from exc
