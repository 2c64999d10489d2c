"""What desktopd asks of a display backend (Wayland, X11, uinput input).

A backend speaks in display-local device pixels and X keysyms; it converts to its own
space through :mod:`deskbox.geometry`. Handlers validate everything before they call a
backend, so a backend method either applies fully or raises a DeskboxError.
"""

from __future__ import annotations

import abc
import asyncio
from dataclasses import dataclass, field
from typing import Callable, Sequence, TypeVar

from PIL import Image

from ...geometry import Display, Rect

__all__ = ["Backend", "Frame", "Window", "KeyEvent", "BUTTONS"]

T = TypeVar("T")

# Linux input button codes, used by the Wayland and uinput backends; X11 maps them.
BUTTONS = {"left": 0x110, "right": 0x111, "middle": 0x112, "back": 0x116, "forward": 0x115}


@dataclass(slots=True)
class Frame:
    """Raw pixels of one display, as captured. ``mode`` is Pillow's raw mode."""

    width: int
    height: int
    stride: int
    mode: str
    data: bytes | memoryview
    y_invert: bool = False

    def to_image(self) -> Image.Image:
        orientation = -1 if self.y_invert else 1
        # frombytes, not frombuffer: for raw "RGBX" Pillow's frombuffer maps the buffer
        # as an RGBX image instead of decoding to the RGB asked for.
        return Image.frombytes("RGB", (self.width, self.height), self.data, "raw", self.mode, self.stride, orientation)


@dataclass(slots=True)
class Window:
    id: str
    app_id: str | None
    pid: int | None
    title: str | None
    layout: Rect
    display_id: int | None
    bounds: Rect | None
    focused: bool
    floating: bool
    workspace: str | None
    extra: dict = field(default_factory=dict)
    # An X11 window's WM_CLASS (instance, class): X11 clients, Xwayland's included. A
    # native Wayland window has only its app id.
    wm_class: tuple[str, str] | None = None

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "app_id": self.app_id,
            "pid": self.pid,
            "title": self.title,
            "bounds": self.bounds.as_list() if self.bounds else None,
            "layout_bounds": self.layout.as_list(),
            "display_id": self.display_id,
            "focused": self.focused,
            "floating": self.floating,
            "workspace": self.workspace,
            "wm_class": list(self.wm_class) if self.wm_class else None,
        }


@dataclass(frozen=True, slots=True)
class KeyEvent:
    keysym: int
    down: bool


class Backend(abc.ABC):
    name: str = "abstract"

    async def start(self) -> None:
        """Open connections; raise UnavailableError when the display server is not there."""

    async def close(self) -> None:
        """Release every key and button still held, then close connections."""

    async def release_input(self) -> None:
        """Release every key and button deskbox holds down."""

    @abc.abstractmethod
    def displays(self) -> list[Display]: ...

    async def refresh_displays(self) -> list[Display]:
        return self.displays()

    @abc.abstractmethod
    async def capture(self, display: Display, *, cursor: bool) -> Frame: ...

    async def capture_with(self, display: Display, consume: Callable[[Frame], T]) -> T:
        """Capture and run ``consume`` on the frame in a worker thread. Backends with a
        reusable capture buffer override this to hand over the buffer without a copy;
        ``consume`` must not keep the frame's data beyond its return."""
        frame = await self.capture(display, cursor=False)
        return await asyncio.get_running_loop().run_in_executor(None, consume, frame)

    def frame_generation(self, display: Display) -> int | None:
        """A counter that changes whenever the display's content may have changed, or
        None when the backend cannot tell (then every screenshot is captured afresh)."""
        return None

    @abc.abstractmethod
    async def pointer_move(self, display: Display, x: float, y: float) -> None: ...

    @abc.abstractmethod
    async def pointer_button(self, button: str, down: bool) -> None: ...

    @abc.abstractmethod
    async def pointer_scroll(self, dx: float, dy: float) -> None:
        """Scroll by wheel notches; positive dy scrolls content down (as a wheel turned
        towards the user), positive dx scrolls right."""

    def check_keysyms(self, keysyms: set[int]) -> None:
        """Raise UnknownKey for a keysym this backend cannot produce."""

    @abc.abstractmethod
    async def keys(self, events: Sequence[KeyEvent]) -> None: ...

    @abc.abstractmethod
    async def windows(self) -> list[Window]: ...

    @abc.abstractmethod
    async def focus_window(self, window_id: str) -> None: ...

    @abc.abstractmethod
    async def close_window(self, window_id: str) -> None: ...

    async def move_window(self, window_id: str, display: Display) -> None:
        from ...common.errors import ActionFailedError

        raise ActionFailedError(f"the {self.name} backend cannot move windows between displays", code="unsupported")

    def pointer_position(self) -> tuple[int, float, float] | None:
        """(display id, x, y) of the last pointer position desktopd set, if known."""
        return None

    def health(self) -> dict:
        return {}
