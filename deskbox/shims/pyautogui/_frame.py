"""What every input call shares: the one desktopd client they all send through, the
package whose settings (PAUSE, FAILSAFE, MINIMUM_DURATION...) they read at the moment they
run, failSafeCheck() before a call sends input and the PAUSE of rest after it."""

from __future__ import annotations

import functools
import sys
import time
from typing import Any, Callable

from ._desktopd import Desktopd
from ._errors import FailSafeException

__all__ = ["failSafeCheck"]

# The package itself. Scripts set its settings (pyautogui.FAILSAFE = False,
# pyautogui.PAUSE = 0), so every call reads them from it when it runs: a copy taken
# here at import would miss the script's change.
pyautogui = sys.modules[__package__]

DESKTOPD = Desktopd()


def failSafeCheck() -> None:
    """Raise FailSafeException if FAILSAFE is on and the pointer is in a corner of the
    screen (or on one of FAILSAFE_POINTS)."""
    if not pyautogui.FAILSAFE:
        return
    pos = DESKTOPD.position()
    if pos is None:
        return  # desktopd has not placed the pointer yet: it is in no corner we put it in
    if pos in DESKTOPD.screen().corners or pos in [tuple(p) for p in pyautogui.FAILSAFE_POINTS]:
        raise FailSafeException(
            "PyAutoGUI fail-safe triggered from the pointer sitting in a corner of the screen "
            f"at {pos}. To disable it set pyautogui.FAILSAFE = False (not recommended)."
        )


def input_call(func: Callable) -> Callable:
    """pyautogui's frame around every input call: its ``_pause`` and ``logScreenshot``
    keywords, and PAUSE seconds of rest after it. The call itself checks its arguments,
    then runs failSafeCheck() before it sends any input."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        pause = kwargs.pop("_pause", True)
        kwargs.pop("logScreenshot", None)
        result = func(*args, **kwargs)
        if pause and pyautogui.PAUSE:
            time.sleep(pyautogui.PAUSE)
        return result

    return wrapper
