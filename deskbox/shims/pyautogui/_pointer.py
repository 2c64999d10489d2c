"""The pointer: where it is (position()), moving it (moveTo, move), pressing and
clicking its buttons (mouseDown, mouseUp, click and its variants), dragging (dragTo,
drag) and turning the wheel (scroll, hscroll). Screen points become desktopd's
display-local points here; a duration becomes a glide through tweened points."""

from __future__ import annotations

import time
from typing import Any, Callable

from ._args import as_button, as_int, as_seconds, check_tween
from ._frame import DESKTOPD, failSafeCheck, input_call, pyautogui
from ._points import as_coords, unpack_xy
from ._screen import Point
from ._tween import getPointOnLine, linear

__all__ = [
    "LEFT", "MIDDLE", "RIGHT", "PRIMARY", "SECONDARY", "position",
    "moveTo", "move", "moveRel", "dragTo", "drag", "dragRel",
    "click", "leftClick", "rightClick", "middleClick", "doubleClick", "tripleClick",
    "mouseDown", "mouseUp", "scroll", "vscroll", "hscroll",
]

LEFT, MIDDLE, RIGHT, PRIMARY, SECONDARY = "left", "middle", "right", "primary", "secondary"

# Largest wheel count desktopd takes in one request.
_MAX_NOTCHES = 1000


def position(x: Any = None, y: Any = None) -> Point:
    """Where the pointer is: where deskbox last put it (desktopd knows no other pointer),
    or, before it has, display 0's centre, where desktopd acts then (and where an
    X server starts its pointer). A given x or y replaces that coordinate in the answer."""
    x, y = unpack_xy(x, y)
    pos = DESKTOPD.position()
    if pos is None:
        parts = DESKTOPD.screen().parts  # (desktopd's default display is 0)
        first = next((part for part in parts if part.display == 0), parts[0])
        pos = (first.left + first.width // 2, first.height // 2)
    return Point(pos[0] if x is None else as_int(x, "x"), pos[1] if y is None else as_int(y, "y"))


def _target(xy: tuple[int | None, int | None]) -> tuple[int, int] | None:
    """The screen point ``xy`` names, a missing coordinate taken from the pointer; None
    when neither is given."""
    x, y = xy
    if x is None and y is None:
        return None
    if x is None or y is None:
        here = position()
        x = here.x if x is None else x
        y = here.y if y is None else y
    return DESKTOPD.screen().clamp(x, y)


def _here() -> tuple[int, int]:
    return tuple(position())  # type: ignore[return-value]


def _local(point: tuple[int, int]) -> dict:
    display, x, y = DESKTOPD.screen().to_display(*point)
    return {"display": display, "x": x, "y": y}


def _tween_points(start: tuple[int, int], end: tuple[int, int], duration: float,
                  tween: Callable[[float], float]) -> list[tuple[int, int]]:
    """The points a move from ``start`` to ``end`` passes over ``duration`` seconds, one
    every MINIMUM_SLEEP, ending exactly at ``end``; just ``end`` for a short move."""
    if duration <= pyautogui.MINIMUM_DURATION or start == end:
        return [end]
    steps = max(2, int(duration / pyautogui.MINIMUM_SLEEP))
    points = []
    for i in range(1, steps):
        px, py = getPointOnLine(start[0], start[1], end[0], end[1], tween(i / steps))
        point = (int(px), int(py))
        if not points or points[-1] != point:
            points.append(point)
    if not points or points[-1] != end:
        points.append(end)
    return points


def _glide(start: tuple[int, int] | None, end: tuple[int, int], duration: float, tween: Callable) -> None:
    """Move the pointer to ``end``, through tweened points when there is a duration."""
    points = [end] if start is None else _tween_points(start, end, duration, tween)
    pause = duration / len(points) if duration > pyautogui.MINIMUM_DURATION else 0
    for point in points:
        DESKTOPD.pointer(action="move", **_local(point))
        if pause:
            time.sleep(pause)


def _start_or_none() -> tuple[int, int] | None:
    return DESKTOPD.position()


@input_call
def moveTo(x: Any = None, y: Any = None, duration: float = 0.0, tween: Callable = linear) -> None:
    """Move the pointer to (x, y) in screen coordinates, over ``duration`` seconds."""
    xy, duration = as_coords(x, y), as_seconds(duration, "duration")
    check_tween(tween)
    failSafeCheck()
    end = _target(xy)
    if end is None:
        return
    _glide(_start_or_none() if duration > pyautogui.MINIMUM_DURATION else None, end, duration, tween)


def _relative(xOffset: Any, yOffset: Any, duration: Any, tween: Callable) -> tuple[Any, Any, float]:
    """move() and drag()'s arguments checked (then the fail-safe): from where the pointer
    is, to that point plus the offsets (clamped to the screen), and the duration."""
    xOffset, yOffset = unpack_xy(xOffset, yOffset)
    dx = 0 if xOffset is None else as_int(xOffset, "xOffset")
    dy = 0 if yOffset is None else as_int(yOffset, "yOffset")
    duration = as_seconds(duration, "duration")
    check_tween(tween)
    failSafeCheck()
    start = _here()
    end = DESKTOPD.screen().clamp(start[0] + dx, start[1] + dy)
    return start, end, duration


@input_call
def move(xOffset: Any = None, yOffset: Any = None, duration: float = 0.0, tween: Callable = linear) -> None:
    """Move the pointer by (xOffset, yOffset) from where it is."""
    start, end, duration = _relative(xOffset, yOffset, duration, tween)
    _glide(start, end, duration, tween)


moveRel = move


def _press_at(action: str, x: Any, y: Any, button: Any, duration: float, tween: Callable) -> None:
    button, xy, duration = as_button(button), as_coords(x, y), as_seconds(duration, "duration")
    check_tween(tween)
    failSafeCheck()
    end = _target(xy)
    where: dict = {}
    if end is not None:
        if duration > pyautogui.MINIMUM_DURATION:
            _glide(_start_or_none(), end, duration, tween)
        else:
            where = _local(end)
    DESKTOPD.pointer(action=action, button=button, **where)


@input_call
def mouseDown(x: Any = None, y: Any = None, button: Any = PRIMARY, duration: float = 0.0,
              tween: Callable = linear) -> None:
    """Press a mouse button (at (x, y) when given) and keep it held."""
    _press_at("down", x, y, button, duration, tween)


@input_call
def mouseUp(x: Any = None, y: Any = None, button: Any = PRIMARY, duration: float = 0.0,
            tween: Callable = linear) -> None:
    """Release a mouse button (at (x, y) when given)."""
    _press_at("up", x, y, button, duration, tween)


@input_call
def click(x: Any = None, y: Any = None, clicks: int = 1, interval: float = 0.0, button: Any = PRIMARY,
          duration: float = 0.0, tween: Callable = linear) -> None:
    """Click ``clicks`` times (``interval`` seconds apart) at (x, y), or where the pointer is."""
    button = as_button(button)
    clicks = as_int(clicks, "clicks")
    interval = as_seconds(interval, "interval")
    duration = as_seconds(duration, "duration")
    xy = as_coords(x, y)
    check_tween(tween)
    failSafeCheck()
    end = _target(xy)
    where: dict = {}
    if end is not None:
        if duration > pyautogui.MINIMUM_DURATION or clicks < 1:
            _glide(_start_or_none() if duration > pyautogui.MINIMUM_DURATION else None, end, duration, tween)
        else:
            where = _local(end)
    if clicks < 1:
        return
    if interval == 0 and clicks <= 3:
        # One request: desktopd spaces the clicks well inside a double-click time.
        DESKTOPD.pointer(action="click", button=button, count=clicks, **where)
        return
    for i in range(clicks):
        if i and interval:
            time.sleep(interval)
        DESKTOPD.pointer(action="click", button=button, **(where if i == 0 else {}))


def leftClick(x: Any = None, y: Any = None, interval: float = 0.0, duration: float = 0.0,
              tween: Callable = linear, **kw: Any) -> None:
    click(x, y, 1, interval, LEFT, duration, tween, **kw)


def rightClick(x: Any = None, y: Any = None, interval: float = 0.0, duration: float = 0.0,
               tween: Callable = linear, **kw: Any) -> None:
    click(x, y, 1, interval, RIGHT, duration, tween, **kw)


def middleClick(x: Any = None, y: Any = None, interval: float = 0.0, duration: float = 0.0,
                tween: Callable = linear, **kw: Any) -> None:
    click(x, y, 1, interval, MIDDLE, duration, tween, **kw)


def doubleClick(x: Any = None, y: Any = None, interval: float = 0.0, button: Any = LEFT, duration: float = 0.0,
                tween: Callable = linear, **kw: Any) -> None:
    click(x, y, 2, interval, button, duration, tween, **kw)


def tripleClick(x: Any = None, y: Any = None, interval: float = 0.0, button: Any = LEFT, duration: float = 0.0,
                tween: Callable = linear, **kw: Any) -> None:
    click(x, y, 3, interval, button, duration, tween, **kw)


def _drag(start: tuple[int, int], end: tuple[int, int], duration: float, tween: Callable, button: str,
          mouse_down_up: bool) -> None:
    if not mouse_down_up:
        _glide(start, end, duration, tween)  # the caller holds (or not) the buttons
        return
    path = _tween_points(start, end, duration, tween) if tween is not linear else [end]
    first, *_ = DESKTOPD.screen().to_display(*start)
    same_display = all(DESKTOPD.screen().to_display(*p)[0] == first for p in path)
    if same_display and duration <= 10:
        # One request: desktopd presses, moves in small steps over the duration, releases.
        local = [list(DESKTOPD.screen().to_display(*p)[1:]) for p in path]
        DESKTOPD.pointer(action="drag", button=button, path=local, duration_ms=int(duration * 1000),
                          **_local(start))
        return
    DESKTOPD.pointer(action="down", button=button, **_local(start))
    try:
        _glide(start, end, duration, tween)
    finally:
        DESKTOPD.pointer(action="up", button=button)


@input_call
def dragTo(x: Any = None, y: Any = None, duration: float = 0.0, tween: Callable = linear, button: Any = PRIMARY,
           mouseDownUp: bool = True) -> None:
    """Drag from where the pointer is to (x, y) with ``button`` held: press, move, release.
    With mouseDownUp=False only the move (the caller pressed and releases)."""
    button = as_button(button)
    xy, duration = as_coords(x, y), as_seconds(duration, "duration")
    check_tween(tween)
    failSafeCheck()
    start = _here()
    end = _target(xy) or start
    _drag(start, end, duration, tween, button, mouseDownUp)


@input_call
def drag(xOffset: Any = 0, yOffset: Any = 0, duration: float = 0.0, tween: Callable = linear,
         button: Any = PRIMARY, mouseDownUp: bool = True) -> None:
    """Drag by (xOffset, yOffset) from where the pointer is."""
    button = as_button(button)
    start, end, duration = _relative(xOffset, yOffset, duration, tween)
    _drag(start, end, duration, tween, button, mouseDownUp)


dragRel = drag


def _wheel(dx: int, dy: int, x: Any, y: Any) -> None:
    xy = as_coords(x, y)
    failSafeCheck()
    end = _target(xy)
    where = _local(end) if end is not None else {}
    if dx == 0 and dy == 0:
        if where:
            DESKTOPD.pointer(action="move", **where)
        return
    while dx or dy:
        sx = max(-_MAX_NOTCHES, min(_MAX_NOTCHES, dx))
        sy = max(-_MAX_NOTCHES, min(_MAX_NOTCHES, dy))
        DESKTOPD.pointer(action="scroll", dx=sx, dy=sy, **where)
        dx, dy, where = dx - sx, dy - sy, {}


@input_call
def scroll(clicks: Any, x: Any = None, y: Any = None) -> None:
    """Turn the wheel ``clicks`` notches: positive scrolls up, negative down."""
    # desktopd's dy is the other way round: positive scrolls down.
    _wheel(0, -as_int(clicks, "clicks"), x, y)


vscroll = scroll


@input_call
def hscroll(clicks: Any, x: Any = None, y: Any = None) -> None:
    """Turn the horizontal wheel ``clicks`` notches: positive scrolls right, negative left."""
    _wheel(as_int(clicks, "clicks"), 0, x, y)

