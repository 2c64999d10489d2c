"""Tweening functions for moveTo/dragTo's ``tween`` argument: each maps progress
n in [0, 1] to a fraction of the way travelled (Robert Penner's easing equations,
the same names pyautogui exposes)."""

from __future__ import annotations

import math

__all__ = [
    "linear", "getPointOnLine",
    "easeInQuad", "easeOutQuad", "easeInOutQuad",
    "easeInCubic", "easeOutCubic", "easeInOutCubic",
    "easeInQuart", "easeOutQuart", "easeInOutQuart",
    "easeInQuint", "easeOutQuint", "easeInOutQuint",
    "easeInSine", "easeOutSine", "easeInOutSine",
    "easeInExpo", "easeOutExpo", "easeInOutExpo",
    "easeInCirc", "easeOutCirc", "easeInOutCirc",
    "easeInElastic", "easeOutElastic", "easeInOutElastic",
    "easeInBack", "easeOutBack", "easeInOutBack",
    "easeInBounce", "easeOutBounce", "easeInOutBounce",
]


def _check(n: float) -> float:
    if not 0.0 <= n <= 1.0:
        raise ValueError("tween argument must be between 0.0 and 1.0")
    return n


def linear(n: float) -> float:
    return _check(n)


def getPointOnLine(x1: float, y1: float, x2: float, y2: float, n: float) -> tuple[float, float]:
    """The point a fraction ``n`` of the way from (x1, y1) to (x2, y2)."""
    return x1 + (x2 - x1) * n, y1 + (y2 - y1) * n


def _power(p: int):
    def ease_in(n: float) -> float:
        return _check(n) ** p

    def ease_out(n: float) -> float:
        return 1 - (1 - _check(n)) ** p

    def ease_in_out(n: float) -> float:
        n = _check(n)
        return ease_in(2 * n) / 2 if n < 0.5 else 1 - ease_in(2 - 2 * n) / 2

    return ease_in, ease_out, ease_in_out


easeInQuad, easeOutQuad, easeInOutQuad = _power(2)
easeInCubic, easeOutCubic, easeInOutCubic = _power(3)
easeInQuart, easeOutQuart, easeInOutQuart = _power(4)
easeInQuint, easeOutQuint, easeInOutQuint = _power(5)


def easeInSine(n: float) -> float:
    return 1 - math.cos(_check(n) * math.pi / 2)


def easeOutSine(n: float) -> float:
    return math.sin(_check(n) * math.pi / 2)


def easeInOutSine(n: float) -> float:
    return (1 - math.cos(math.pi * _check(n))) / 2


def easeInExpo(n: float) -> float:
    return 0.0 if _check(n) == 0 else 2 ** (10 * (n - 1))


def easeOutExpo(n: float) -> float:
    return 1.0 if _check(n) == 1 else 1 - 2 ** (-10 * n)


def easeInOutExpo(n: float) -> float:
    n = _check(n)
    if n in (0.0, 1.0):
        return n
    return 2 ** (20 * n - 10) / 2 if n < 0.5 else 1 - 2 ** (-20 * n + 10) / 2


def easeInCirc(n: float) -> float:
    return 1 - math.sqrt(1 - _check(n) ** 2)


def easeOutCirc(n: float) -> float:
    return math.sqrt(1 - (_check(n) - 1) ** 2)


def easeInOutCirc(n: float) -> float:
    n = _check(n)
    return easeInCirc(2 * n) / 2 if n < 0.5 else 0.5 + easeOutCirc(2 * n - 1) / 2


def easeOutElastic(n: float, amplitude: float = 1, period: float = 0.3) -> float:
    n = _check(n)
    if n in (0.0, 1.0):
        return n
    s = period / (2 * math.pi) * math.asin(1 / amplitude) if amplitude >= 1 else period / 4
    return amplitude * 2 ** (-10 * n) * math.sin((n - s) * 2 * math.pi / period) + 1


def easeInElastic(n: float, amplitude: float = 1, period: float = 0.3) -> float:
    return 1 - easeOutElastic(1 - _check(n), amplitude, period)


def easeInOutElastic(n: float, amplitude: float = 1, period: float = 0.5) -> float:
    n = _check(n)
    if n < 0.5:
        return easeInElastic(2 * n, amplitude, period) / 2
    return 0.5 + easeOutElastic(2 * n - 1, amplitude, period) / 2


def easeInBack(n: float, s: float = 1.70158) -> float:
    n = _check(n)
    return n * n * ((s + 1) * n - s)


def easeOutBack(n: float, s: float = 1.70158) -> float:
    return 1 - easeInBack(1 - _check(n), s)


def easeInOutBack(n: float, s: float = 1.70158) -> float:
    n = _check(n)
    return easeInBack(2 * n, s * 1.525) / 2 if n < 0.5 else 0.5 + easeOutBack(2 * n - 1, s * 1.525) / 2


def easeOutBounce(n: float) -> float:
    n = _check(n)
    if n < 1 / 2.75:
        return 7.5625 * n * n
    if n < 2 / 2.75:
        n -= 1.5 / 2.75
        return 7.5625 * n * n + 0.75
    if n < 2.5 / 2.75:
        n -= 2.25 / 2.75
        return 7.5625 * n * n + 0.9375
    n -= 2.625 / 2.75
    return 7.5625 * n * n + 0.984375


def easeInBounce(n: float) -> float:
    return 1 - easeOutBounce(1 - _check(n))


def easeInOutBounce(n: float) -> float:
    n = _check(n)
    return easeInBounce(2 * n) / 2 if n < 0.5 else 0.5 + easeOutBounce(2 * n - 1) / 2
