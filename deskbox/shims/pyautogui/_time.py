"""pyautogui's two plain time helpers, sleep() and countdown(). Neither sends input, so
neither checks the fail-safe nor rests PAUSE after it."""

from __future__ import annotations

import time

__all__ = ["sleep", "countdown"]


def sleep(seconds: float) -> None:
    time.sleep(seconds)


def countdown(seconds: int) -> None:
    for i in range(int(seconds), 0, -1):
        print(str(i), end=" ", flush=True)
        time.sleep(1)
    print()
