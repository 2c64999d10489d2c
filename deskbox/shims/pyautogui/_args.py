"""pyautogui's arguments checked and normalised, with no I/O: numbers, button names and
numbers, seconds, key lists and tweens (an (x, y) pair, which may be an image to find
on the screen: ``_points``). What pyautogui
would refuse raises BadArgument (a ValueError too) before any input is sent."""

from __future__ import annotations

import collections.abc
import math
import numbers
from typing import Any

from ._errors import BadArgument

# pyautogui button names (any case) and numbers -> desktopd's buttons. Primary is the
# left button: deskbox sessions never swap buttons.
_BUTTONS: dict[Any, str] = {
    "left": "left", "primary": "left", 1: "left",
    "middle": "middle", 2: "middle",
    "right": "right", "secondary": "right", 3: "right",
}


def as_int(value: Any, what: str) -> int:
    # numbers.Real: also numpy's scalars, which scripts computing coordinates pass.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise BadArgument(f"{what} must be a number, not {value!r}")
    if not math.isfinite(value):
        raise BadArgument(f"{what} must be finite, not {value!r}")
    return int(value)


def as_button(button: Any) -> str:
    key = button.lower() if isinstance(button, str) else button
    try:
        return _BUTTONS[key]
    except (KeyError, TypeError):
        raise BadArgument(
            f"button argument must be one of ('left', 'middle', 'right', 'primary', 'secondary', 1, 2, 3), "
            f"not {button!r}"
        ) from None


def check_tween(tween: Any) -> None:
    if not callable(tween):
        raise BadArgument(f"tween must be a function of progress in [0, 1], not {tween!r}")


def as_keys(keys: Any) -> list[str]:
    if isinstance(keys, str):
        return [keys]
    if isinstance(keys, collections.abc.Iterable):
        keys = list(keys)
        if all(isinstance(k, str) for k in keys):
            return keys
    raise BadArgument(f"keys must be a key name or a list of key names, not {keys!r}")


def as_seconds(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0:
        raise BadArgument(f"{what} must be a number of seconds >= 0, not {value!r}")
    return float(value)
