"""The keyboard: typing text (typewrite/write), pressing keys (press, hotkey), holding
them (keyDown, keyUp, hold) and pyautogui's questions about key names (isValidKey,
isShiftCharacter). Key names become desktopd's through ``_keys``; a bad name is refused
before any key goes down."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from ._args import as_int, as_keys, as_seconds
from ._frame import DESKTOPD, failSafeCheck, input_call
from ._keys import KEYBOARD_KEYS, desktopd_key, is_shift_character

__all__ = ["typewrite", "write", "press", "hotkey", "keyDown", "keyUp", "hold", "isValidKey", "isShiftCharacter"]

# Characters per typing request: desktopd takes 64 KiB of UTF-8, 4 bytes a character at most.
_TYPE_CHUNK = 16 * 1024


def _interval_ms(interval: float) -> int | None:
    """desktopd spaces keys by itself up to a second apart; None when longer."""
    return int(round(interval * 1000)) if interval <= 1 else None


@input_call
def typewrite(message: Any, interval: float = 0.0) -> None:
    """Type ``message``: a string is typed literally, character by character ("<", "é",
    "\\n" as Enter); a list is a sequence of key names, each pressed in turn."""
    interval = as_seconds(interval, "interval")
    if isinstance(message, str):
        failSafeCheck()
        ms = _interval_ms(interval)
        if ms is None:
            for ch in message:
                DESKTOPD.keyboard(action="type", text=ch)
                time.sleep(interval)
            return
        for i in range(0, len(message), _TYPE_CHUNK):
            DESKTOPD.keyboard(action="type", text=message[i:i + _TYPE_CHUNK], interval_ms=ms)
        return
    keys = [desktopd_key(k) for k in as_keys(message)]
    failSafeCheck()
    _press_keys(keys, interval)


write = typewrite


def _press_keys(keys: list[str], interval: float) -> None:
    """Press and release each key in turn, ``interval`` seconds apart."""
    if not keys:
        return
    ms = _interval_ms(interval)
    if ms is None:
        for key in keys:
            DESKTOPD.keyboard(action="key", keys=key)
            time.sleep(interval)
        return
    for i in range(0, len(keys), 1000):
        DESKTOPD.keyboard(action="key", keys=keys[i:i + 1000], interval_ms=ms)


@input_call
def press(keys: Any, presses: int = 1, interval: float = 0.0) -> None:
    """Press and release each of ``keys`` (a name or a list), ``presses`` times, waiting
    ``interval`` seconds after each round."""
    names = [desktopd_key(k) for k in as_keys(keys)]
    presses = as_int(presses, "presses")
    interval = as_seconds(interval, "interval")
    failSafeCheck()
    if presses < 1:
        return
    if interval == 0:
        _press_keys(names * presses, 0)
        return
    for _ in range(presses):
        _press_keys(names, 0)
        time.sleep(interval)


@input_call
def hotkey(*args: Any, interval: float = 0.0) -> None:
    """Press the keys in order and release them in reverse: hotkey('ctrl', 'shift', 't')."""
    if len(args) == 1 and not isinstance(args[0], str):
        args = tuple(as_keys(args[0]))
    names = [desktopd_key(k) for k in as_keys(args)]
    interval = as_seconds(interval, "interval")
    failSafeCheck()
    if not names:
        return
    if interval == 0:
        DESKTOPD.keyboard(action="key", keys="+".join(names))
        return
    pressed: list[str] = []
    try:
        for name in names:
            DESKTOPD.keyboard(action="down", key=name)
            pressed.append(name)
            time.sleep(interval)
    finally:
        # Released even when a later press failed: no key stays held behind an error.
        for name in reversed(pressed):
            DESKTOPD.keyboard(action="up", key=name)
            time.sleep(interval)


@input_call
def keyDown(key: Any) -> None:
    """Press ``key`` and keep it held (until keyUp)."""
    name = desktopd_key(key)
    failSafeCheck()
    DESKTOPD.keyboard(action="down", key=name)


@input_call
def keyUp(key: Any) -> None:
    """Release ``key``."""
    name = desktopd_key(key)
    failSafeCheck()
    DESKTOPD.keyboard(action="up", key=name)


@contextlib.contextmanager
def hold(keys: Any, interval: float = 0.0, **kw: Any):
    """``with hold('shift'): ...`` holds the keys for the block."""
    names = as_keys(keys)
    for name in names:
        desktopd_key(name)  # refuse a bad name before pressing anything
    pressed: list[str] = []
    try:
        for name in names:
            keyDown(name, **kw)
            pressed.append(name)
            if interval:
                time.sleep(interval)
        yield
    finally:
        for name in reversed(pressed):
            keyUp(name, **kw)
            if interval:
                time.sleep(interval)


def isValidKey(key: str) -> bool:
    """Whether ``key`` is one of pyautogui's KEYBOARD_KEYS."""
    return key in KEYBOARD_KEYS


def isShiftCharacter(character: str) -> bool:
    return is_shift_character(character)

