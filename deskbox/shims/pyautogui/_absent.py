"""What pyautogui has and deskbox's shim does not (message boxes, window objects, a
window's image search): the package's module ``__getattr__`` makes each such name a clear
AttributeError that says what is missing, and any other unknown name the usual one."""

from __future__ import annotations

from typing import Any

_ABSENT = {
    "locateOnWindow": "image search in a window by its title", "alert": "message boxes", "confirm": "message boxes",
    "prompt": "message boxes", "password": "message boxes", "mouseInfo": "the MouseInfo app",
    "displayMousePosition": "the mouse position display", "getWindowsWithTitle": "window objects",
    "getActiveWindow": "window objects", "getAllWindows": "window objects", "getAllTitles": "window objects",
}


def __getattr__(name: str) -> Any:
    if name in _ABSENT:
        raise AttributeError(
            f"deskbox's pyautogui has no {name}(): {_ABSENT[name]} is not supported in deskbox sessions "
            "(desktopd gives screenshots, input and the window tree over HTTP)"
        )
    raise AttributeError(f"module 'pyautogui' has no attribute {name!r}")

