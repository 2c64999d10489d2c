"""OpenAI's computer use tool: ``POST /api/v1/computer/openai`` with the ``computer_call``'s
``action`` as the body (``{"type": "click", "x": 10, "y": 20, "button": "left"}``), or the
whole ``computer_call`` item (``{"type": "computer_call", "call_id", "action" | "actions",
"pending_safety_checks", ...}``: its ``call_id`` is answered, its other fields are the
harness's business and are not looked at; ``actions``, a batch, runs in order).

Coordinates are pixels of the declared screen (the tool's ``display_width`` x
``display_height``); scroll distances are pixels too (turned into wheel notches). Keys are
OpenAI's names (``["CTRL", "A"]``, ``"ENTER"``, ``"ARROWLEFT"``), pressed together.

The reply is the ``computer_call_output`` input item, ready for the next request's
``input``: ``{"type": "computer_call_output", "call_id", "output": {"type":
"computer_screenshot", "image_url": "data:image/png;base64,..."}}`` (``call_id`` from the
item or ``?call_id=``; null when neither gave it). Safety checks are not acknowledged
here: that is the harness's (or its user's) decision, added as
``acknowledged_safety_checks``."""

from __future__ import annotations

import asyncio
from typing import Annotated, Awaitable, Callable, Literal, Union

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, RootModel, model_validator

from ..common.errors import InvalidRequestError
from ..common.web import json_ok, read_query, validate
from .base import COMPUTER, Screen, ScreenQuery, key_name, read_object

__all__ = ["OpenAIAction", "ComputerCall", "OpenAIQuery", "HANDLERS", "handle"]

# OpenAI's wait carries no duration; its reference implementation waits a second.
WAIT_S = 1.0


class OpenAIQuery(ScreenQuery):
    call_id: str | None = Field(None, max_length=256, description="the computer_call's call_id, echoed in the reply")


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid")


Keys = list[Annotated[str, Field(min_length=1, max_length=64)]]


class Click(_Action):
    type: Literal["click"]
    x: float
    y: float
    button: Literal["left", "right", "wheel", "back", "forward"] = "left"
    keys: Keys | None = Field(None, max_length=8, description="modifier keys held while clicking")


class DoubleClick(_Action):
    type: Literal["double_click"]
    x: float
    y: float
    keys: Keys | None = Field(None, max_length=8)


class PathPoint(_Action):
    x: float
    y: float


class Drag(_Action):
    type: Literal["drag"]
    path: list[PathPoint] = Field(min_length=2, max_length=10_000, description="from the first point to the last")
    keys: Keys | None = Field(None, max_length=8)


class Keypress(_Action):
    type: Literal["keypress"]
    keys: Keys = Field(min_length=1, max_length=16, description="pressed together, released in reverse")


class Move(_Action):
    type: Literal["move"]
    x: float
    y: float
    keys: Keys | None = Field(None, max_length=8)


class Screenshot(_Action):
    type: Literal["screenshot"]


class Scroll(_Action):
    type: Literal["scroll"]
    x: float
    y: float
    scroll_x: float = Field(ge=-40_000, le=40_000, description="pixels; positive scrolls right")
    scroll_y: float = Field(ge=-40_000, le=40_000, description="pixels; positive scrolls down")
    keys: Keys | None = Field(None, max_length=8)


class Type(_Action):
    type: Literal["type"]
    text: str = Field(max_length=64 * 1024)


class Wait(_Action):
    type: Literal["wait"]


Action = Annotated[Union[Click, DoubleClick, Drag, Keypress, Move, Screenshot, Scroll, Type, Wait],
                   Field(discriminator="type")]


class OpenAIAction(RootModel):
    """A ``computer_call``'s ``action``."""

    root: Action


class ComputerCall(BaseModel):
    """A whole ``computer_call`` output item. Fields other than these (``id``,
    ``status``, ``pending_safety_checks``, ...) are OpenAI's and ignored here."""

    model_config = ConfigDict(extra="ignore")
    type: Literal["computer_call"]
    call_id: str | None = Field(None, max_length=256)
    action: Action | None = None
    actions: list[Action] | None = Field(None, min_length=1, max_length=100)

    @model_validator(mode="after")
    def _one(self) -> "ComputerCall":
        if (self.action is None) == (self.actions is None):
            raise ValueError("a computer_call carries an action or a list of actions")
        return self


_BUTTONS = {"left": "left", "right": "right", "wheel": "middle", "back": "back", "forward": "forward"}


def _mods(keys: list[str] | None) -> list[str]:
    return [key_name(k) for k in keys or []]


def _combo(keys: list[str]) -> str:
    return "+".join(key_name(k) for k in keys)


class _Plan:
    """An action turned into display pixels, checked before anything is sent."""

    def __init__(self, run: Callable[[], Awaitable[None]]) -> None:
        self.run = run


def _click(s: Screen, a: Click) -> _Plan:
    at = s.point(a.x, a.y)
    return _Plan(lambda: s.pointer("click", at, button=_BUTTONS[a.button], modifiers=_mods(a.keys)))


def _double_click(s: Screen, a: DoubleClick) -> _Plan:
    at = s.point(a.x, a.y)
    return _Plan(lambda: s.pointer("click", at, count=2, modifiers=_mods(a.keys)))


def _drag(s: Screen, a: Drag) -> _Plan:
    points = [s.point(p.x, p.y, what=f"path[{i}]") for i, p in enumerate(a.path)]
    path = [[round(x, 2), round(y, 2)] for x, y in points[1:]]
    return _Plan(lambda: s.pointer("drag", points[0], path=path, modifiers=_mods(a.keys)))


def _keypress(s: Screen, a: Keypress) -> _Plan:
    combo = _combo(a.keys)
    return _Plan(lambda: s.keyboard("key", keys=combo))


def _move(s: Screen, a: Move) -> _Plan:
    at = s.point(a.x, a.y)
    return _Plan(lambda: s.pointer("move", at, modifiers=_mods(a.keys)))


def _screenshot(s: Screen, a: Screenshot) -> _Plan:
    async def nothing() -> None:
        return None

    return _Plan(nothing)


def _scroll(s: Screen, a: Scroll) -> _Plan:
    at = s.point(a.x, a.y)
    if a.scroll_x == 0 and a.scroll_y == 0:
        raise InvalidRequestError("scroll needs scroll_x or scroll_y (pixels)", code="validation_error")
    dx, dy = s.wheel(a.scroll_x, a.scroll_y)
    return _Plan(lambda: s.pointer("scroll", at, dx=dx, dy=dy, modifiers=_mods(a.keys)))


def _type(s: Screen, a: Type) -> _Plan:
    return _Plan(lambda: s.keyboard("type", text=a.text))


def _wait(s: Screen, a: Wait) -> _Plan:
    return _Plan(lambda: asyncio.sleep(WAIT_S))


HANDLERS: dict[str, Callable[[Screen, object], _Plan]] = {
    "click": _click,
    "double_click": _double_click,
    "drag": _drag,
    "keypress": _keypress,
    "move": _move,
    "screenshot": _screenshot,
    "scroll": _scroll,
    "type": _type,
    "wait": _wait,
}


def _check_names(actions: list[object]) -> None:
    for item in actions:
        kind = item.get("type") if isinstance(item, dict) else None
        if isinstance(kind, str) and kind not in HANDLERS:
            raise InvalidRequestError(f"unsupported action {kind!r}; OpenAI computer_call actions are "
                                      f"{', '.join(sorted(HANDLERS))}", code="unsupported_action")


async def handle(request: web.Request) -> web.Response:
    q = read_query(request, OpenAIQuery)
    body = await read_object(request)
    call_id = q.call_id
    if body.get("type") == "computer_call":
        inner = body.get("actions") if isinstance(body.get("actions"), list) else [body.get("action")]
        _check_names(inner)
        call = validate(ComputerCall, body)
        actions = call.actions if call.actions is not None else [call.action]
        if call.call_id and call_id and call.call_id != call_id:
            raise InvalidRequestError("call_id differs between the item and the query", code="validation_error")
        call_id = call.call_id or call_id
    else:
        _check_names([body])
        actions = [validate(OpenAIAction, body).root]

    async def work(s: Screen) -> None:
        plans = [HANDLERS[a.type](s, a) for a in actions]  # every point checked first
        for plan in plans:
            await plan.run()

    looking = all(a.type in ("screenshot", "wait") for a in actions)
    screen, _ = await request.app[COMPUTER].act(
        q, work, settle=not looking, action="+".join(a.type for a in actions),
        args={"actions": [a.model_dump(exclude_none=True) for a in actions]})
    shot = await screen.screenshot()
    return json_ok({
        "type": "computer_call_output",
        "call_id": call_id,
        "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64," + shot.b64},
    })
