"""The screen as pyautogui sees it: its size and its pixels (screenshot()), with the
Point and Size tuples the calls return (which points lie on it, and their colours:
``_points``). The only
module that needs Pillow, and only when screenshot() is called."""

from __future__ import annotations

import io
from typing import Any, NamedTuple

from ._args import as_int
from ._errors import BadArgument, PyAutoGUIException
from ._frame import DESKTOPD

__all__ = ["Point", "Size", "size", "resolution", "screenshot"]


class Point(NamedTuple):
    x: int
    y: int


class Size(NamedTuple):
    width: int
    height: int


def size() -> Size:
    """The screen's width and height in pixels (all displays side by side)."""
    screen = DESKTOPD.screen(fresh=True)
    return Size(screen.width, screen.height)


resolution = size


def _pil():
    try:
        from PIL import Image
    except ImportError:
        raise PyAutoGUIException(
            "pyautogui.screenshot() returns a PIL Image and this Python has no Pillow: "
            "install it (pip install Pillow, or apt install python3-pil), or take the PNG from "
            "desktopd's GET /api/v1/screenshot"
        ) from None
    return Image


def screenshot(imageFilename: Any = None, region: Any = None, allScreens: bool = True):
    """The screen (or ``region`` = (left, top, width, height) of it) as a PIL Image in
    RGB, saved to ``imageFilename`` when given."""
    Image = _pil()
    screen = DESKTOPD.screen(fresh=True)
    if region is None:
        left, top, width, height = 0, 0, screen.width, screen.height
    else:
        try:
            left, top, width, height = (as_int(v, "region") for v in region)
        except (TypeError, ValueError):
            raise BadArgument(f"region must be (left, top, width, height), not {region!r}") from None
        if width <= 0 or height <= 0:
            raise BadArgument(f"region needs a positive width and height, not {region!r}")
    canvas = Image.new("RGB", (width, height))
    for part in screen.parts:
        # The part of the region on this display, in display pixels.
        x0, y0 = max(left, part.left), max(top, 0)
        x1, y1 = min(left + width, part.left + part.width), min(top + height, part.height)
        if x0 >= x1 or y0 >= y1:
            continue
        png = DESKTOPD.screenshot(part.display, (x0 - part.left, y0, x1 - x0, y1 - y0))
        with Image.open(io.BytesIO(png)) as shot:
            canvas.paste(shot.convert("RGB"), (x0 - left, y0 - top))
    if imageFilename is not None:
        canvas.save(imageFilename)
    return canvas
