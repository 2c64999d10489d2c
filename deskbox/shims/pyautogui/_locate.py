"""Image search, as pyautogui does it: through pyscreeze's ``locate``/``locateAll`` (a
needle image, a file name or a PIL image, found in a haystack image), over the shim's own
screenshots of desktopd, so the boxes are in screenshot pixels: pyautogui's screen
coordinates. pyscreeze's own screen capture (scrot, gnome-screenshot) is never used.

pyscreeze and Pillow are the only imports beyond the standard library, and only when an
image is searched; the session puts pyscreeze beside this shim on PYTHONPATH where the
install made it (``<venv>/session-site``).

Not found: None, unless ``useImageNotFoundException()`` is on, then
:class:`ImageNotFoundException` (pyautogui's, which also catches pyscreeze's name)."""

from __future__ import annotations

import time
from typing import Any, Iterator

from ._errors import ImageNotFoundException, PyAutoGUIException
from ._screen import Point, screenshot

__all__ = ["locate", "locateAll", "locateOnScreen", "locateAllOnScreen", "locateCenterOnScreen", "center",
           "useImageNotFoundException", "locate_center"]

_raise_when_not_found = False


class Box(tuple):
    """pyscreeze's box: (left, top, width, height), also by name."""

    __slots__ = ()

    def __new__(cls, left: int, top: int, width: int, height: int) -> "Box":
        return super().__new__(cls, (left, top, width, height))

    left = property(lambda self: self[0])
    top = property(lambda self: self[1])
    width = property(lambda self: self[2])
    height = property(lambda self: self[3])

    def __repr__(self) -> str:
        return f"Box(left={self[0]}, top={self[1]}, width={self[2]}, height={self[3]})"


def _pyscreeze():
    try:
        import pyscreeze
    except ImportError:
        raise PyAutoGUIException(
            "image search needs pyscreeze (as pyautogui's does), which this Python cannot import: deskbox's "
            "install puts it in the session's PYTHONPATH (<venv>/session-site); or pip install pyscreeze"
        ) from None
    pyscreeze.USE_IMAGE_NOT_FOUND_EXCEPTION = False  # (this module decides, by useImageNotFoundException)
    return pyscreeze


def useImageNotFoundException(value: bool | None = None) -> None:
    """When on (``value`` None means on), a failed search raises ImageNotFoundException
    instead of answering None."""
    global _raise_when_not_found
    _raise_when_not_found = True if value is None else bool(value)


def _not_found() -> None:
    if _raise_when_not_found:
        raise ImageNotFoundException("Could not locate the image.")


def _box(found: Any) -> Box:
    return Box(int(found[0]), int(found[1]), int(found[2]), int(found[3]))


def locateAll(needleImage: Any, haystackImage: Any, **kwargs: Any) -> Iterator[Box]:
    """Every place ``needleImage`` appears in ``haystackImage``."""
    for found in _pyscreeze().locateAll(needleImage, haystackImage, **kwargs) or ():
        yield _box(found)


def locate(needleImage: Any, haystackImage: Any, **kwargs: Any) -> Box | None:
    """The first place ``needleImage`` appears in ``haystackImage``."""
    kwargs["limit"] = 1
    found = next(iter(locateAll(needleImage, haystackImage, **kwargs)), None)
    if found is None:
        _not_found()
    return found


def locateAllOnScreen(image: Any, **kwargs: Any) -> Iterator[Box]:
    """Every place ``image`` appears on the screen, in screen pixels."""
    return locateAll(image, screenshot(), **kwargs)


def locateOnScreen(image: Any, minSearchTime: float = 0, **kwargs: Any) -> Box | None:
    """Where ``image`` is on the screen; with ``minSearchTime``, looks again on fresh
    screenshots until it is found or that many seconds have passed."""
    started = time.monotonic()
    while True:
        kwargs["limit"] = 1
        found = next(iter(locateAll(image, screenshot(), **kwargs)), None)
        if found is not None or time.monotonic() - started >= minSearchTime:
            break
        time.sleep(0.05)
    if found is None:
        _not_found()
    return found


def center(coords: Any) -> Point:
    """The middle of a box (left, top, width, height)."""
    left, top, width, height = coords
    return Point(int(left + width / 2), int(top + height / 2))


def locateCenterOnScreen(image: Any, **kwargs: Any) -> Point | None:
    """The middle of where ``image`` is on the screen."""
    found = locateOnScreen(image, **kwargs)
    return None if found is None else center(found)


def locate_center(image: str) -> Point:
    """For ``click("button.png")``: where an image named instead of a point is, or
    ImageNotFoundException, as pyautogui's own calls do."""
    found = locateOnScreen(image)
    if found is None:
        raise ImageNotFoundException(f"Could not locate {image!r} on the screen.")
    return center(found)
