"""The shim's errors, one hierarchy:

    PyAutoGUIException
    ├── FailSafeException      the pointer sat in a screen corner while FAILSAFE is on
    ├── ImageNotFoundException an image searched for is not on the screen (with
    │                          useImageNotFoundException() on, or an image given as a point)
    ├── BadArgument            also a ValueError: arguments pyautogui would refuse
    │   └── UnsupportedKey     a key no deskbox keyboard has
    └── DesktopdError          desktopd refused the input (status, code, message) or
                               could not be reached (status None)
"""

from __future__ import annotations

__all__ = [
    "PyAutoGUIException", "FailSafeException", "ImageNotFoundException", "BadArgument", "UnsupportedKey",
    "DesktopdError",
]


class PyAutoGUIException(Exception):
    """Base of every error the shim raises."""


class FailSafeException(PyAutoGUIException):
    """Raised when a call starts with the pointer in a corner of the screen."""


class ImageNotFoundException(PyAutoGUIException):
    """An image searched for is not on the screen."""


class BadArgument(PyAutoGUIException, ValueError):
    """An argument pyautogui would refuse: both a PyAutoGUIException and a ValueError,
    whichever a caller catches."""


class UnsupportedKey(BadArgument):
    """A key name deskbox cannot press."""


class DesktopdError(PyAutoGUIException):
    """desktopd refused or failed a request (``status``, ``code`` from its JSON error),
    or could not be reached (``status`` None)."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
