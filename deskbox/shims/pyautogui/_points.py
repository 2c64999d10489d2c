"""Points as pyautogui takes them: an (x, y) pair given in x, or an image file whose
centre on the screen is the point; whether one lies on the screen, and its colour."""

from __future__ import annotations

import collections.abc
from typing import Any

from ._args import as_int
from ._errors import BadArgument
from ._frame import DESKTOPD
from ._locate import locate_center
from ._screen import screenshot

__all__ = ["unpack_xy", "as_coords", "onScreen", "pixel", "pixelMatchesColor"]


def unpack_xy(x: Any, y: Any) -> tuple[Any, Any]:
    """pyautogui's x may be a 2-sequence (x, y) when y is not given, or a string: an
    image file to find on the screen, whose centre is the point."""
    if isinstance(x, str):
        return tuple(locate_center(x))
    if isinstance(x, collections.abc.Sequence):
        if y is not None:
            raise BadArgument(f"when x is a sequence (received {x!r}), y must not be given (received {y!r})")
        if len(x) != 2:
            raise BadArgument(f"x as a sequence must be (x, y), received {x!r}")
        x, y = x
    return x, y


def as_coords(x: Any, y: Any) -> tuple[int | None, int | None]:
    x, y = unpack_xy(x, y)
    return (None if x is None else as_int(x, "x")), (None if y is None else as_int(y, "y"))


def onScreen(x: Any, y: Any = None) -> bool:
    x, y = unpack_xy(x, y)
    return DESKTOPD.screen().contains(as_int(x, "x"), as_int(y, "y"))


def pixel(x: Any, y: Any = None) -> tuple[int, int, int]:
    """The (r, g, b) colour of one screen pixel."""
    x, y = unpack_xy(x, y)
    return screenshot(region=(as_int(x, "x"), as_int(y, "y"), 1, 1)).getpixel((0, 0))


def pixelMatchesColor(x: Any, y: Any, expectedRGBColor: tuple, tolerance: int = 0) -> bool:
    actual = pixel(x, y)
    return all(abs(a - e) <= tolerance for a, e in zip(actual, expectedRGBColor[:3]))
