"""Kernel input devices (uinput, through python-evdev) in place of a backend's own
pointer and keyboard.

Where /dev/uinput exists, desktopd can create an absolute pointer and a keyboard that
every consumer of kernel input sees: an X server, or a compositor with a libinput
backend (for Sway: ``WLR_BACKENDS=headless,libinput``). Screenshots and windows stay
with the wrapped backend. The keyboard types what the US layout has; other characters
need the virtual keyboard of the Wayland backend (there is no keymap to upload here).

The kernel of the machines deskbox is developed on has no uinput, so only the mapping
logic and the clear refusal are tested there.
"""

from __future__ import annotations

import os
from typing import Sequence

from ...common.errors import UnavailableError
from ...geometry import Display, absolute_motion
from ..keys import BASE_LAYOUT, UnknownKey
from .base import BUTTONS, Backend, Frame, KeyEvent, Window

__all__ = ["UinputInput", "evdev_key_for"]

UINPUT_PATH = "/dev/uinput"
_SHIFT_EVDEV = 42
_KEY_FOR_KEYSYM: dict[int, tuple[int, bool]] = {}
for _code, _lower, _upper in BASE_LAYOUT:
    _KEY_FOR_KEYSYM.setdefault(_lower, (_code, False))
    if _upper is not None:
        _KEY_FOR_KEYSYM.setdefault(_upper, (_code, True))


def evdev_key_for(keysym: int) -> tuple[int, bool]:
    """(evdev key code, needs shift) for a keysym the US layout produces."""
    try:
        return _KEY_FOR_KEYSYM[keysym]
    except KeyError:
        raise UnknownKey(
            f"keysym 0x{keysym:x} is not on the US layout the uinput keyboard has; "
            "use desktopd's default (virtual) input for other characters"
        ) from None


class UinputInput(Backend):
    """Delegates pixels and windows to ``inner``; sends input through uinput devices."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = f"{inner.name}+uinput"
        self._pointer = None
        self._keyboard = None
        self._extent: tuple[int, int] | None = None
        self._position: tuple[int, float, float] | None = None
        self._held: set[int] = set()
        self._buttons: set[int] = set()

    @classmethod
    def wrap(cls, inner: Backend) -> "UinputInput":
        return cls(inner)

    async def start(self) -> None:
        if not os.path.exists(UINPUT_PATH):
            raise UnavailableError(f"{UINPUT_PATH} does not exist: this kernel offers no uinput",
                                   code="uinput_unavailable")
        if not os.access(UINPUT_PATH, os.W_OK):
            raise UnavailableError(f"{UINPUT_PATH} is not writable by this user", code="uinput_unavailable")
        await self.inner.start()
        from evdev import UInput, ecodes

        keys = sorted({code for code, _, _ in BASE_LAYOUT})
        self._keyboard = UInput({ecodes.EV_KEY: keys}, name="deskbox-keyboard")
        self._ecodes = ecodes
        self._make_pointer()

    def _make_pointer(self) -> None:
        from evdev import AbsInfo, UInput

        e = self._ecodes
        displays = self.inner.displays()
        _, _, ex, ey = absolute_motion(displays, displays[0], 0, 0)
        if self._pointer is not None:
            self._pointer.close()
        self._pointer = UInput(
            {
                e.EV_KEY: list(BUTTONS.values()),
                e.EV_REL: [e.REL_WHEEL, e.REL_HWHEEL],
                e.EV_ABS: [
                    (e.ABS_X, AbsInfo(0, 0, ex, 0, 0, 0)),
                    (e.ABS_Y, AbsInfo(0, 0, ey, 0, 0, 0)),
                ],
            },
            name="deskbox-pointer",
        )
        self._extent = (ex, ey)

    async def close(self) -> None:
        for device in (self._pointer, self._keyboard):
            if device is not None:
                device.close()
        await self.inner.close()

    # -- delegated ------------------------------------------------------------------

    def displays(self) -> list[Display]:
        return self.inner.displays()

    async def refresh_displays(self) -> list[Display]:
        return await self.inner.refresh_displays()

    async def capture(self, display: Display, *, cursor: bool) -> Frame:
        return await self.inner.capture(display, cursor=cursor)

    async def capture_with(self, display: Display, consume):
        return await self.inner.capture_with(display, consume)

    def frame_generation(self, display: Display) -> int | None:
        return self.inner.frame_generation(display)

    async def windows(self) -> list[Window]:
        return await self.inner.windows()

    async def focus_window(self, window_id: str) -> None:
        await self.inner.focus_window(window_id)

    async def close_window(self, window_id: str) -> None:
        await self.inner.close_window(window_id)

    async def move_window(self, window_id: str, display: Display) -> None:
        await self.inner.move_window(window_id, display)

    def health(self) -> dict:
        return self.inner.health()

    def pointer_position(self) -> tuple[int, float, float] | None:
        return self._position

    # -- input ------------------------------------------------------------------------

    async def pointer_move(self, display: Display, x: float, y: float) -> None:
        e = self._ecodes
        displays = self.inner.displays()
        ax, ay, ex, ey = absolute_motion(displays, display, x, y)
        if (ex, ey) != self._extent:
            self._make_pointer()
        self._pointer.write(e.EV_ABS, e.ABS_X, ax)
        self._pointer.write(e.EV_ABS, e.ABS_Y, ay)
        self._pointer.syn()
        self._position = (display.id, x, y)

    async def pointer_button(self, button: str, down: bool) -> None:
        self._pointer.write(self._ecodes.EV_KEY, BUTTONS[button], 1 if down else 0)
        self._pointer.syn()
        (self._buttons.add if down else self._buttons.discard)(BUTTONS[button])

    async def release_input(self) -> None:
        e = self._ecodes
        for code in list(self._held):
            self._keyboard.write(e.EV_KEY, code, 0)
        self._keyboard.syn()
        for code in list(self._buttons):
            self._pointer.write(e.EV_KEY, code, 0)
        self._pointer.syn()
        self._held.clear()
        self._buttons.clear()

    async def pointer_scroll(self, dx: float, dy: float) -> None:
        e = self._ecodes
        # Kernel wheel values are positive away from the user (content up).
        if dy:
            self._pointer.write(e.EV_REL, e.REL_WHEEL, -int(round(dy)))
        if dx:
            self._pointer.write(e.EV_REL, e.REL_HWHEEL, int(round(dx)))
        self._pointer.syn()

    def check_keysyms(self, keysyms: set[int]) -> None:
        for keysym in keysyms:
            evdev_key_for(keysym)

    async def keys(self, events: Sequence[KeyEvent]) -> None:
        e = self._ecodes
        for event in events:
            code, shift = evdev_key_for(event.keysym)
            forced = shift and _SHIFT_EVDEV not in self._held and event.down
            if forced:
                self._keyboard.write(e.EV_KEY, _SHIFT_EVDEV, 1)
            self._keyboard.write(e.EV_KEY, code, 1 if event.down else 0)
            if forced:
                self._keyboard.write(e.EV_KEY, _SHIFT_EVDEV, 0)
            (self._held.add if event.down else self._held.discard)(code)
            self._keyboard.syn()
