"""The X11 backend's keyboard: the server's keymap (keysym -> keycode and shift level),
the spare keycodes given keysyms no key produces, planning key events into chunks whose
keysyms fit those keycodes at once, remapping them, the client barrier that makes a
remap safe, and pressing and releasing keys through XTest (with the shift it presses
for a level-2 keysym). It is handed the X connection and is only ever called on the
backend's X thread, one step per call; the backend runs the steps in order and does the
waits between them (REMAP_SETTLE, a chunk's idle_wait) on the event loop. It must not
know that thread, how the connection is opened or guarded, the pointer, or how windows
are found: the focused window comes from X11Windows, and events it reads that are not
its ping's answer go back to the backend through ``note_event``.
"""

from __future__ import annotations

import select
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from Xlib import X
from Xlib import display as xdisplay
from Xlib import error as xerror
from Xlib.ext import xtest

from ...common.errors import ActionFailedError
from ...common.logging import get_logger
from ..keys import MODIFIER_KEYSYMS
from .base import KeyEvent
from .x11_windows import X11Windows

__all__ = ["X11Keyboard", "Chunk", "REMAP_SETTLE"]

log = get_logger("deskbox.x11")

_SHIFT_L = 0xFFE1
# Giving a spare keycode a new keysym races the focused client, which learns keyboard
# mappings late. Measured with Chromium 156 under Xvfb, typing 60 distinct CJK characters
# through the 19 spare keycodes, 15 runs each:
# - remap, press at once, key by key: a wrong character in 10 runs, always on a keycode
#   remapped a moment before (the client still read its previous keysym);
# - remap 19 keycodes, then press them at once: keys arrived as NUL or not at all;
# - remap, wait REMAP_SETTLE, press; and before remapping a keycode that typed earlier,
#   make sure the client has handled those presses (else it reads the new keysym for
#   them): 0 failures, also with a CPU hog running. 0.03 s of settling was not enough.
# The client is known to have handled earlier events when it answers a _NET_WM_PING sent
# after them; a client that does not answer gets _SLOT_IDLE instead. Keys are grouped so
# these waits happen once per group of up to 19 new characters, not once per key.
REMAP_SETTLE = 0.15
_SLOT_IDLE = 0.15
_PING_TIMEOUT = 1.0


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
class Chunk:
    """Events[start:end] can be sent once ``assign`` (keycode, keysym) is applied."""

    end: int
    assign: tuple[tuple[int, int], ...]
    reused: tuple[int, ...]  # assigned keycodes that had another keysym
    idle_wait: float  # until the reused keycodes have been idle _SLOT_IDLE


class X11Keyboard:
    """Keys through XTest, with spare keycodes remapped for keysyms no key produces."""

    def __init__(self, windows: X11Windows, *, drain_events: Callable[[], None],
                 note_event: Callable[[Any], None]) -> None:
        self._windows = windows
        self._drain_events = drain_events
        self._note_event = note_event
        self._x: xdisplay.Display | None = None
        self._keymap: _Keymap | None = None
        self._keymap_stale = False
        self._ping_serial = 0
        self._held: dict[int, int] = {}  # keysym -> keycode
        self._forced_shift: int | None = None  # keycode of a shift we pressed for a level-2 keysym

    def attach(self, x: xdisplay.Display) -> None:
        self._x = x
        self._keymap = _Keymap(x.display.info.min_keycode, self._read_mapping())

    def spare_count(self) -> int:
        assert self._keymap is not None
        return len(self._keymap.spare)

    def mapping_changed(self) -> None:
        """The server's keyboard mapping changed (MappingNotify): reload it before planning."""
        self._keymap_stale = True

    def _read_mapping(self) -> list[tuple[int, ...]]:
        assert self._x is not None
        info = self._x.display.info
        return [tuple(row) for row in self._x.get_keyboard_mapping(info.min_keycode, info.max_keycode - info.min_keycode + 1)]

    def plan_chunk(self, events: Sequence[KeyEvent], start: int) -> Chunk:
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
            raise ActionFailedError("every spare keycode is held down; release keys first", code="keymap_full")
        now = time.monotonic()
        reused = tuple(c for c in taken if c in self._keymap.slots)
        idle_wait = max([self._keymap.slots[c][1] + _SLOT_IDLE - now for c in reused] + [0.0])
        return Chunk(end, tuple((c, k) for k, c in assign.items()), reused, idle_wait)

    def remap(self, assign: Sequence[tuple[int, int]]) -> None:
        assert self._x is not None and self._keymap is not None
        catch = xerror.CatchError()
        for code, keysym in assign:
            # The same keysym on both levels: shift held by the caller does not change it.
            self._x.change_keyboard_mapping(code, [(keysym, keysym)], onerror=catch)
        self._x.sync()
        if catch.get_error() is not None:
            raise ActionFailedError(f"the X server refused a keyboard mapping: {catch.get_error()}",
                                    code="keymap_error")
        for code, keysym in assign:
            self._keymap.assign(code, keysym)
        # Our own MappingNotify events need no reload: the table says what we set.
        self._drain_events()
        self._keymap_stale = False

    def client_barrier(self) -> bool:
        """Wait until the focused client has handled every event sent before now: it
        answers a _NET_WM_PING only after them. False when it does not answer pings."""
        assert self._x is not None
        focused = self._windows.focused_id(self._windows.toplevel_ids())
        if focused is None:
            return False
        win = self._x.create_resource_object("window", focused)
        ping = self._windows.atom("_NET_WM_PING")
        try:
            if ping not in (win.get_wm_protocols() or []):
                return False
            self._ping_serial = (self._ping_serial + 1) & 0xFFFFFFFF
            serial = self._ping_serial
            self._windows.client_message(win, "WM_PROTOCOLS", [ping, serial, focused], to_root=False)
        except (xerror.BadWindow, xerror.BadDrawable):
            return False
        deadline = time.monotonic() + _PING_TIMEOUT
        while True:
            while self._x.pending_events():
                ev = self._x.next_event()
                if (ev.type == X.ClientMessage and ev.client_type == self._windows.atom("WM_PROTOCOLS")
                        and ev.data[1][0] == ping and ev.data[1][1] == serial):
                    return True
                self._note_event(ev)
            left = deadline - time.monotonic()
            if left <= 0:
                log.info("no answer to _NET_WM_PING; waiting instead", window=f"x{focused:x}")
                return False
            select.select([self._x.fileno()], [], [], left)

    def send_keys(self, events: Sequence[KeyEvent], start: int, end: int) -> None:
        assert self._x is not None and self._keymap is not None
        for event in events[start:end]:
            found = None
            if event.down and event.keysym not in self._held:
                found = self._keymap.lookup(event.keysym)
                if found is None:  # plan_chunk gave every keysym a key, so this is a bug
                    raise ActionFailedError(f"no key for keysym 0x{event.keysym:x}", code="keymap_error")
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

    def release_all(self) -> None:
        """Queue a release of every key we hold. The caller syncs, with its buttons'."""
        assert self._x is not None
        for code in self._held.values():
            xtest.fake_input(self._x, X.KeyRelease, detail=code)
        if self._forced_shift is not None:
            xtest.fake_input(self._x, X.KeyRelease, detail=self._forced_shift)
        self._held.clear()
        self._forced_shift = None

    def restore_spare(self) -> None:
        """Give the spare keycodes back their emptiness."""
        assert self._x is not None and self._keymap is not None
        for code in list(self._keymap.slots):
            self._x.change_keyboard_mapping(code, [(X.NoSymbol,)])
        self._keymap.slots.clear()
        self._x.sync()
