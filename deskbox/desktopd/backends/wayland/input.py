"""Long-lived virtual pointer and virtual keyboard on the desktopd connection.

Facts measured on headless Sway that shape this: it has no pointer until a virtual
pointer exists, and clicks need a ``frame`` after each event; a fresh keyboard per
request lost its first key, so one keyboard lives for the whole session and every
keymap upload is followed by a roundtrip before keys are sent.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any, Sequence

from ....common.errors import ActionFailedError
from ....geometry import Display, absolute_motion
from ...keys import MODIFIER_KEYSYMS
from ..base import BUTTONS, KeyEvent
from .client import WaylandClient
from .keymap import MOD_MASKS, KeymapFull, SlotKeymap

__all__ = ["VirtualPointer", "VirtualKeyboard"]

_AXIS_VERTICAL, _AXIS_HORIZONTAL = 0, 1
_AXIS_SOURCE_WHEEL = 0
# One wheel notch, in the units libinput reports for a mouse wheel (degrees).
_WHEEL_STEP = 15.0
_KEYMAP_FORMAT_XKB_V1 = 1
# Key events go out in small batches with a pause between them. Sent in one burst, a few
# thousand characters overflowed the compositor's buffer towards Chromium, and the
# compositor disconnected it (Chromium restarted with the text lost). A batch of 64
# events (32 characters) is under 2 KB on the wire.
KEY_BATCH = 64
KEY_BATCH_PAUSE = 0.004
# And over time, across requests: what the focused client has not read waits in its
# socket (212,992 bytes by default, some 8,000 key events) and Chromium, inserting into
# a textarea, reads a few thousand events a second. At the batches' pace (16,000 a
# second) 8 KiB of text overran it ("Fatal Wayland communication error: Broken pipe",
# 1 run in 3). A burst of KEY_BURST events goes at once; beyond it the keyboard sends
# KEY_RATE events a second, so 8 KiB of text takes about 5 s, and the largest request
# (64 KiB) about 45 s, inside a request's 60 s.
KEY_BURST = 1024
KEY_RATE = 3000.0


def _now_ms() -> int:
    return int(time.monotonic() * 1000) & 0xFFFFFFFF


class VirtualPointer:
    def __init__(self, client: WaylandClient) -> None:
        self.client = client
        seat = client.seat
        self.proxy: Any = client.pointer_manager.create_virtual_pointer(seat)
        client.flush()
        self.position: tuple[int, float, float] | None = None
        self.pressed: set[int] = set()

    def move(self, displays: list[Display], display: Display, x: float, y: float) -> None:
        ax, ay, ex, ey = absolute_motion(displays, display, x, y)
        self.proxy.motion_absolute(_now_ms(), ax, ay, ex, ey)
        self.proxy.frame()
        self.client.flush()
        self.position = (display.id, x, y)

    def button(self, button: str, down: bool) -> None:
        code = BUTTONS[button]
        self.proxy.button(_now_ms(), code, 1 if down else 0)
        self.proxy.frame()
        self.client.flush()
        (self.pressed.add if down else self.pressed.discard)(code)

    def scroll(self, dx: float, dy: float) -> None:
        t = _now_ms()
        for axis, notches in ((_AXIS_VERTICAL, dy), (_AXIS_HORIZONTAL, dx)):
            if not notches:
                continue
            self.proxy.axis_source(_AXIS_SOURCE_WHEEL)
            steps = int(round(notches))
            if steps and steps == notches:
                self.proxy.axis_discrete(t, axis, _WHEEL_STEP * steps, steps)
            else:
                self.proxy.axis(t, axis, _WHEEL_STEP * notches)
            self.proxy.frame()
        self.client.flush()

    def release_all(self) -> None:
        for code in list(self.pressed):
            self.proxy.button(_now_ms(), code, 0)
            self.proxy.frame()
        self.pressed.clear()
        self.client.flush()


class VirtualKeyboard:
    def __init__(self, client: WaylandClient) -> None:
        self.client = client
        self.keymap = SlotKeymap()
        self.proxy: Any = client.keyboard_manager.create_virtual_keyboard(client.seat)
        self.held: dict[int, int] = {}  # keysym -> keycode
        self._forced_shift = False
        # Events that may go now (see KEY_BURST), as of _allowance_at.
        self._allowance, self._allowance_at = float(KEY_BURST), time.monotonic()
        self._upload()

    async def _pace(self, sent: int) -> None:
        """After ``sent`` events: the batch pause, or longer while more than KEY_BURST
        have gone out faster than KEY_RATE allows."""
        now = time.monotonic()
        self._allowance = min(float(KEY_BURST), self._allowance + (now - self._allowance_at) * KEY_RATE) - sent
        self._allowance_at = now
        await asyncio.sleep(max(KEY_BATCH_PAUSE, -self._allowance / KEY_RATE))

    def _upload(self) -> None:
        text = self.keymap.text().encode() + b"\0"
        fd = os.memfd_create("deskbox-keymap", os.MFD_CLOEXEC)
        try:
            os.write(fd, text)
            os.lseek(fd, 0, os.SEEK_SET)
            self.proxy.keymap(_KEYMAP_FORMAT_XKB_V1, fd, len(text))
            # The compositor has taken the keymap once it answered a sync after it.
            self.client.roundtrip()
        finally:
            os.close(fd)

    def _mods(self) -> int:
        mask = 0
        for keysym in self.held:
            mod = MODIFIER_KEYSYMS.get(keysym)
            if mod:
                mask |= MOD_MASKS[mod]
        if self._forced_shift:
            mask |= MOD_MASKS["shift"]
        return mask

    def _send_mods(self) -> None:
        self.proxy.modifiers(self._mods(), 0, 0, 0)

    async def send(self, events: Sequence[KeyEvent]) -> None:
        """Send key events, uploading a new keymap before a chunk whose characters
        have no key yet."""
        i = 0
        n = len(events)
        while i < n:
            # The longest run of events whose slot characters fit in the keymap at once.
            chunk_syms: set[int] = set()
            slotted = 0
            j = i
            budget = self.keymap.capacity - len(self.held)
            while j < n:
                keysym = events[j].keysym
                if keysym not in chunk_syms and self.keymap.needs_slot(keysym):
                    if slotted == budget:
                        break
                    slotted += 1
                chunk_syms.add(keysym)
                j += 1
            try:
                changed = self.keymap.ensure(chunk_syms, pinned=set(self.held.values()))
            except KeymapFull as exc:
                raise ActionFailedError(str(exc), code="keymap_full") from exc
            if changed:
                self._upload()
            for start in range(i, j, KEY_BATCH):
                batch = events[start : min(j, start + KEY_BATCH)]
                for event in batch:
                    self._key(event)
                self.client.flush()
                await self._pace(len(batch))
            i = j

    def _key(self, event: KeyEvent) -> None:
        found = self.keymap.lookup(event.keysym)
        if found is None:  # ensure() ran for this chunk, so this is a bug
            raise ActionFailedError(f"no key for keysym 0x{event.keysym:x}", code="keymap_error")
        code, needs_shift = found
        evdev = code - 8
        is_modifier = event.keysym in MODIFIER_KEYSYMS
        if event.down:
            if event.keysym in self.held:
                return
            if needs_shift and not is_modifier:
                self._forced_shift = True
                self._send_mods()
            self.proxy.key(_now_ms(), evdev, 1)
            self.held[event.keysym] = code
            if is_modifier:
                self._send_mods()
        else:
            if event.keysym not in self.held:
                return
            self.proxy.key(_now_ms(), evdev, 0)
            del self.held[event.keysym]
            if is_modifier or self._forced_shift:
                self._forced_shift = False
                self._send_mods()

    def release_all(self) -> None:
        for code in list(self.held.values()):
            self.proxy.key(_now_ms(), code - 8, 0)
        self.held.clear()
        self._forced_shift = False
        self._send_mods()
        self.client.flush()
