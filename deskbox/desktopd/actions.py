"""Pointer and keyboard actions: each one a planner in a table, then one executor.

A request is first turned into a complete plan (display looked up, every coordinate
checked against the display, every key name resolved). Only a plan that fully
validated is executed, so a rejected request sends no input at all.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Callable, Sequence, Union

from ..common.errors import InvalidRequestError, NotFoundError
from ..geometry import Display
from .backends.base import Backend, KeyEvent
from .keys import Key, UnknownKey, keysym_for_char, parse_combo, parse_key
from .models import KeyboardRequest, PointerRequest

__all__ = ["Planner", "plan_pointer", "plan_keyboard", "execute", "slices", "left_down", "planned_seconds",
           "POINTER_ACTIONS", "KEYBOARD_ACTIONS", "SLICE_EVENTS"]


@dataclass(frozen=True, slots=True)
class Move:
    display: Display
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class Press:
    button: str
    down: bool


@dataclass(frozen=True, slots=True)
class Scroll:
    dx: float
    dy: float


@dataclass(frozen=True, slots=True)
class Keys:
    events: tuple[KeyEvent, ...]


@dataclass(frozen=True, slots=True)
class Pause:
    seconds: float


Step = Union[Move, Press, Scroll, Keys, Pause]

# Between the clicks of a double click: well inside any double-click interval.
CLICK_GAP = 0.03
DRAG_STEP_PX = 24
DRAG_STEP_PAUSE = 0.008


class Planner:
    """Semantic checks against the live session: displays, bounds, key names."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.displays = {d.id: d for d in backend.displays()}

    def display(self, display_id: int) -> Display:
        try:
            return self.displays[display_id]
        except KeyError:
            ids = ", ".join(str(i) for i in sorted(self.displays)) or "none"
            raise NotFoundError(f"unknown display {display_id}; displays are: {ids}", code="unknown_display") from None

    def point(self, display: Display, x: float, y: float) -> Move:
        w, h = display.size
        if not (math.isfinite(x) and math.isfinite(y)) or not (0 <= x < w and 0 <= y < h):
            raise InvalidRequestError(
                f"({x}, {y}) is outside display {display.id}, which is {w}x{h} device pixels",
                code="out_of_bounds",
            )
        return Move(display, x, y)

    def here(self, req_display: int, x: float | None, y: float | None) -> list[Step]:
        """Move to (x, y) when given; otherwise act where the pointer is. A pointer
        desktopd has never placed is at the display's centre, where an X server starts
        it: a script that scrolls or clicks before it moves (pyautogui.scroll(-2) right
        after an app opens) acts there rather than failing."""
        if x is not None and y is not None:
            target = self.point(self.display(req_display), x, y)
            return [_approach(target), target]
        if self.backend.pointer_position() is None:
            display = self.display(req_display)
            return [Move(display, display.size[0] // 2, display.size[1] // 2)]
        return []

    def key(self, name: str) -> Key:
        try:
            return parse_key(name)
        except UnknownKey as exc:
            raise InvalidRequestError(str(exc), code="unknown_key") from exc

    def combo(self, combo: str) -> list[Key]:
        try:
            return parse_combo(combo)
        except UnknownKey as exc:
            raise InvalidRequestError(str(exc), code="unknown_key") from exc

    def modifiers(self, names: Sequence[str]) -> list[Key]:
        keys = [self.key(n) for n in names]
        for name, key in zip(names, keys):
            if key.modifier is None:
                raise InvalidRequestError(f"{name!r} is not a modifier (shift, ctrl, alt, super)", code="unknown_key")
        return keys

    def check_keysyms(self, events: Sequence[KeyEvent]) -> None:
        try:
            self.backend.check_keysyms({e.keysym for e in events})
        except UnknownKey as exc:
            raise InvalidRequestError(str(exc), code="unknown_key") from exc


def _approach(target: Move) -> Move:
    """A point one pixel beside ``target``, moved to just before it. An X11 app (through
    Xwayland) takes a button only after a motion inside the window the pointer entered:
    a click whose one motion entered a dialog just mapped over VLC's window was lost, and
    so was the next at the same point, where the first motion inside it made it land.
    Two motions, the last one the target, always give it one."""
    x = target.x - 1 if target.x >= 1 else target.x + 1
    return Move(target.display, x, target.y)


def _with_modifiers(planner: Planner, names: Sequence[str], steps: list[Step]) -> list[Step]:
    mods = planner.modifiers(names)
    if not mods:
        return steps
    down = Keys(tuple(KeyEvent(k.keysym, True) for k in mods))
    up = Keys(tuple(KeyEvent(k.keysym, False) for k in reversed(mods)))
    return [down, *steps, up]


def _clicks(button: str, count: int) -> list[Step]:
    steps: list[Step] = []
    for i in range(count):
        if i:
            steps.append(Pause(CLICK_GAP))
        steps += [Press(button, True), Press(button, False)]
    return steps


def _pointer_move(p: Planner, r: PointerRequest) -> list[Step]:
    return p.here(r.display, r.x, r.y)


def _pointer_click(p: Planner, r: PointerRequest) -> list[Step]:
    return p.here(r.display, r.x, r.y) + _clicks(r.button, r.count)


def _pointer_down(p: Planner, r: PointerRequest) -> list[Step]:
    return p.here(r.display, r.x, r.y) + [Press(r.button, True)]


def _pointer_up(p: Planner, r: PointerRequest) -> list[Step]:
    return p.here(r.display, r.x, r.y) + [Press(r.button, False)]


def _pointer_scroll(p: Planner, r: PointerRequest) -> list[Step]:
    return p.here(r.display, r.x, r.y) + [Scroll(r.dx, r.dy)]


def _pointer_drag(p: Planner, r: PointerRequest) -> list[Step]:
    display = p.display(r.display)
    start = p.here(r.display, r.x, r.y)
    points = [p.point(display, x, y) for x, y in r.path or []]
    if start:
        prev = start[0]
    else:
        pos = p.backend.pointer_position()
        assert pos is not None
        prev = p.point(p.display(pos[0]), pos[1], pos[2])
    moves: list[Step] = []
    for target in points:
        n = max(1, int(math.hypot(target.x - prev.x, target.y - prev.y) // DRAG_STEP_PX))
        for i in range(1, n + 1):
            t = i / n
            moves.append(Move(display, prev.x + (target.x - prev.x) * t, prev.y + (target.y - prev.y) * t))
        prev = target
    pause = max(DRAG_STEP_PAUSE, r.duration_ms / 1000 / max(1, len(moves)))
    paced: list[Step] = []
    for move in moves:
        paced += [Pause(pause), move]
    return start + [Press(r.button, True), *paced, Pause(DRAG_STEP_PAUSE), Press(r.button, False)]


POINTER_ACTIONS: dict[str, Callable[[Planner, PointerRequest], list[Step]]] = {
    "click": _pointer_click,
    "down": _pointer_down,
    "drag": _pointer_drag,
    "move": _pointer_move,
    "scroll": _pointer_scroll,
    "up": _pointer_up,
}


def plan_pointer(planner: Planner, req: PointerRequest) -> list[Step]:
    steps = POINTER_ACTIONS[req.action](planner, req)
    return _with_modifiers(planner, req.modifiers, steps)


def _type_events(planner: Planner, text: str, interval: float) -> list[Step]:
    events: list[KeyEvent] = []
    for ch in text.replace("\r\n", "\n"):
        try:
            keysym = keysym_for_char(ch)
        except UnknownKey as exc:
            raise InvalidRequestError(str(exc), code="unknown_key") from exc
        events += [KeyEvent(keysym, True), KeyEvent(keysym, False)]
    if not interval:
        return [Keys(tuple(events))] if events else []
    steps: list[Step] = []
    for i in range(0, len(events), 2):
        if i:
            steps.append(Pause(interval))
        steps.append(Keys(tuple(events[i : i + 2])))
    return steps


def _keyboard_type(p: Planner, r: KeyboardRequest) -> list[Step]:
    return _type_events(p, r.text or "", r.interval_ms / 1000)


def _keyboard_key(p: Planner, r: KeyboardRequest) -> list[Step]:
    combos = [r.keys] if isinstance(r.keys, str) else list(r.keys or [])
    steps: list[Step] = []
    for i, combo in enumerate(combos):
        keys = p.combo(combo)
        if i and r.interval_ms:
            steps.append(Pause(r.interval_ms / 1000))
        events = [KeyEvent(k.keysym, True) for k in keys] + [KeyEvent(k.keysym, False) for k in reversed(keys)]
        steps.append(Keys(tuple(events)))
    return steps


def _keyboard_down(p: Planner, r: KeyboardRequest) -> list[Step]:
    return [Keys((KeyEvent(p.key(r.key or "").keysym, True),))]


def _keyboard_up(p: Planner, r: KeyboardRequest) -> list[Step]:
    return [Keys((KeyEvent(p.key(r.key or "").keysym, False),))]


KEYBOARD_ACTIONS: dict[str, Callable[[Planner, KeyboardRequest], list[Step]]] = {
    "down": _keyboard_down,
    "key": _keyboard_key,
    "type": _keyboard_type,
    "up": _keyboard_up,
}


def plan_keyboard(planner: Planner, req: KeyboardRequest) -> list[Step]:
    steps = KEYBOARD_ACTIONS[req.action](planner, req)
    planner.check_keysyms([e for s in steps if isinstance(s, Keys) for e in s.events])
    return steps


# Long input is applied in slices of at most this many key events (a typed text of
# 64 KiB is thousands of them): other clients' input may come between two slices, and
# a client that went away stops its input there.
SLICE_EVENTS = 64


def slices(steps: Sequence[Step]) -> list[list[Step]]:
    """``steps`` in the pieces they are applied in: a pause alone (nothing is held
    while waiting), a long run of key events cut between two keys, the rest as it
    comes. A key combination (its downs and ups) is never cut."""
    out: list[list[Step]] = []
    current: list[Step] = []
    for step in steps:
        if isinstance(step, Pause):
            if current:
                out.append(current)
                current = []
            out.append([step])
        elif isinstance(step, Keys) and len(step.events) > SLICE_EVENTS and _balanced(step.events):
            if current:
                out.append(current)
                current = []
            out += [[Keys(part)] for part in _cut(step.events)]
        else:
            current.append(step)
    if current:
        out.append(current)
    return out


def _balanced(events: Sequence[KeyEvent]) -> bool:
    """Typed text: every key down is followed at once by its up."""
    return all(events[i].down and not events[i + 1].down and events[i].keysym == events[i + 1].keysym
               for i in range(0, len(events) - 1, 2)) and len(events) % 2 == 0


def _cut(events: tuple[KeyEvent, ...]) -> list[tuple[KeyEvent, ...]]:
    return [events[i:i + SLICE_EVENTS] for i in range(0, len(events), SLICE_EVENTS)]


def left_down(steps: Sequence[Step]) -> tuple[list[int], list[str]]:
    """Keys (keysyms) and buttons that ``steps`` pressed and did not release."""
    keys: dict[int, None] = {}
    buttons: dict[str, None] = {}
    for step in steps:
        if isinstance(step, Keys):
            for e in step.events:
                if e.down:
                    keys[e.keysym] = None
                else:
                    keys.pop(e.keysym, None)
        elif isinstance(step, Press):
            if step.down:
                buttons[step.button] = None
            else:
                buttons.pop(step.button, None)
    return list(keys), list(buttons)


def planned_seconds(steps: Sequence[Step]) -> float:
    return sum(s.seconds for s in steps if isinstance(s, Pause))


async def execute(backend: Backend, steps: Sequence[Step]) -> None:
    for step in steps:
        if isinstance(step, Move):
            await backend.pointer_move(step.display, step.x, step.y)
        elif isinstance(step, Press):
            await backend.pointer_button(step.button, step.down)
        elif isinstance(step, Scroll):
            await backend.pointer_scroll(step.dx, step.dy)
        elif isinstance(step, Keys):
            await backend.keys(step.events)
        elif isinstance(step, Pause):
            await asyncio.sleep(step.seconds)
