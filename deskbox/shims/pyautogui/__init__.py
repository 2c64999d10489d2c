"""deskbox's pyautogui: pyautogui's documented API, driving deskbox's desktopd over HTTP.

Inside a deskbox session ``import pyautogui`` finds this module first (the session puts
its folder first on PYTHONPATH), so pyautogui scripts and OSWorld's pyautogui action
strings move the real pointer and type on the Wayland (or X11) desktop through desktopd:
DESKBOX_DESKTOPD names it (default http://127.0.0.1:8080), DESKBOX_TOKEN is its bearer
token when it has one. Only the standard library is needed; screenshot() returns a
Pillow image and so needs Pillow.

Coordinates are pyautogui's screen coordinates: with one display (the usual session)
exactly that display's device pixels, the pixels of its screenshot. With several, the
displays sit side by side left to right in desktopd's order, tops at y = 0; size() and
screenshot() cover them all, as pyautogui's do on Linux. A point past the screen's edge
is clamped to it, as an X server keeps its pointer on screen. Fractional coordinates are
truncated.

Nothing degrades silently: a right click is a right click, a drag is a press, moves and
a release; what deskbox cannot do (a key its keyboards lack, message boxes) raises.
Image search (locateOnScreen and friends) is pyscreeze's, over desktopd's screenshots. The
errors are drawn in ``_errors``: bad arguments raise PyAutoGUIException subclasses that
are also ValueErrors; desktopd's refusals raise DesktopdError with its message and code.
"""

from __future__ import annotations

from . import _tween
from ._absent import __getattr__  # noqa: F401  (PEP 562: pyautogui.locateOnScreen says what is missing)
from ._errors import (
    DesktopdError,
    FailSafeException,
    ImageNotFoundException,
    PyAutoGUIException,
    UnsupportedKey,
)
from ._frame import failSafeCheck
from ._keyboard import hold, hotkey, isShiftCharacter, isValidKey, keyDown, keyUp, press, typewrite, write
from ._keys import KEY_NAMES, KEYBOARD_KEYS
from ._locate import (
    center,
    locate,
    locateAll,
    locateAllOnScreen,
    locateCenterOnScreen,
    locateOnScreen,
    useImageNotFoundException,
)
from ._pointer import (
    LEFT,
    MIDDLE,
    PRIMARY,
    RIGHT,
    SECONDARY,
    click,
    doubleClick,
    drag,
    dragRel,
    dragTo,
    hscroll,
    leftClick,
    middleClick,
    mouseDown,
    mouseUp,
    move,
    moveRel,
    moveTo,
    position,
    rightClick,
    scroll,
    tripleClick,
    vscroll,
)
from ._points import onScreen, pixel, pixelMatchesColor
from ._screen import Point, Size, resolution, screenshot, size
from ._time import countdown, sleep
from ._tween import *  # noqa: F401,F403  (easeInQuad and friends, as pyautogui exports them)
from ._tween import getPointOnLine, linear

grab = screenshot  # (pyscreeze's name for it, which pyautogui scripts also use)

__version__ = "0.9.54+deskbox"

__all__ = [
    "PyAutoGUIException", "FailSafeException", "ImageNotFoundException", "DesktopdError", "UnsupportedKey",
    "Point", "Size", "PAUSE", "FAILSAFE", "FAILSAFE_POINTS", "MINIMUM_DURATION", "MINIMUM_SLEEP",
    "KEYBOARD_KEYS", "KEY_NAMES", "LEFT", "MIDDLE", "RIGHT", "PRIMARY", "SECONDARY",
    "position", "size", "resolution", "onScreen", "isValidKey", "isShiftCharacter",
    "moveTo", "move", "moveRel", "dragTo", "drag", "dragRel",
    "click", "leftClick", "rightClick", "middleClick", "doubleClick", "tripleClick",
    "mouseDown", "mouseUp", "scroll", "vscroll", "hscroll",
    "typewrite", "write", "press", "hotkey", "keyDown", "keyUp", "hold",
    "screenshot", "grab", "pixel", "pixelMatchesColor", "sleep", "countdown", "failSafeCheck",
    "locate", "locateAll", "locateOnScreen", "locateAllOnScreen", "locateCenterOnScreen", "center",
    "useImageNotFoundException",
    "linear", "getPointOnLine", *_tween.__all__,
]

# -- pyautogui's settings, read at every call ------------------------------------------
# Scripts set them on this package (pyautogui.FAILSAFE = False); the calls in the private
# modules read them from it when they run, through _frame.pyautogui, never a copy.

PAUSE = 0.1
FAILSAFE = True
# Where FAILSAFE trips besides the screen's four corners (which it always checks).
FAILSAFE_POINTS: list[tuple[int, int]] = [(0, 0)]
MINIMUM_DURATION = 0.1
MINIMUM_SLEEP = 0.05
DARWIN_CATCH_UP_TIME = 0.01
LOG_SCREENSHOTS = False
