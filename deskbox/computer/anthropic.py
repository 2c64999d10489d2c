"""Anthropic's computer tool (``computer_20250124``, ``computer_20251124``):
``POST /api/v1/computer/anthropic`` with the tool_use block's ``input`` as the body.

Coordinates are pixels of the declared screen (the tool's ``display_width_px`` x
``display_height_px``, given as ``display_width``/``display_height``); screenshots come back
at that size. Click and scroll modifiers are in ``text`` ("shift", "ctrl+shift"), as the
tool documents (``key`` is taken too: Anthropic's reference implementation reads it);
keys use xdotool's names ("ctrl+a", "Return", "alt+Tab", several separated by spaces).

The reply carries the result three ways so a harness can pass any of them straight back:
``output``/``error``/``base64_image`` (the reference implementation's ToolResult),
``content`` (the tool_result's content blocks: text, then a base64 PNG image block), and,
with ``?tool_use_id=``, ``tool_result`` (the whole block for the next user message)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Awaitable, Callable

from aiohttp import web

from ..api.computer import (
    AnthropicAction,
    AnthropicQuery,
    Click,
    CursorPosition,
    Drag,
    HoldKey,
    Key,
    MouseButton,
    MouseMove,
    Screenshot,
    Scroll,
    Type,
    Wait,
    Zoom,
)
from ..common.errors import InvalidRequestError
from ..common.web import json_ok, read_query, validate
from .base import COMPUTER, Screen, Shot, read_object, split_combo

__all__ = ["AnthropicAction", "AnthropicQuery", "HANDLERS", "handle"]


@dataclass
class Outcome:
    output: str | None = None
    image: Shot | None = None
    screenshot: bool = True  # a screenshot of the screen after the action


def _modifiers(text: str | None) -> list[str]:
    return split_combo(text) if text else []


async def _key(s: Screen, a: Key) -> Outcome:
    await s.keyboard("key", keys=a.text.split())
    return Outcome()


async def _hold_key(s: Screen, a: HoldKey) -> Outcome:
    await s.hold(split_combo(a.text), a.duration)
    return Outcome()


async def _type(s: Screen, a: Type) -> Outcome:
    await s.keyboard("type", text=a.text)
    return Outcome()


async def _cursor_position(s: Screen, a: CursorPosition) -> Outcome:
    x, y = await s.cursor()
    return Outcome(output=f"X={x},Y={y}", screenshot=False)


async def _mouse_move(s: Screen, a: MouseMove) -> Outcome:
    await s.pointer("move", s.point(*a.coordinate))
    return Outcome()


async def _mouse_button(s: Screen, a: MouseButton) -> Outcome:
    at = s.point(*a.coordinate) if a.coordinate is not None else None
    await s.pointer("down" if a.action == "left_mouse_down" else "up", at, button="left")
    return Outcome()


_CLICKS = {"left_click": ("left", 1), "right_click": ("right", 1), "middle_click": ("middle", 1),
           "double_click": ("left", 2), "triple_click": ("left", 3)}


async def _click(s: Screen, a: Click) -> Outcome:
    if a.text and a.key and a.text != a.key:
        raise InvalidRequestError("give the modifier keys in text or key, not both", code="validation_error")
    button, count = _CLICKS[a.action]
    at = s.point(*a.coordinate) if a.coordinate is not None else None
    await s.pointer("click", at, button=button, count=count, modifiers=_modifiers(a.text or a.key))
    return Outcome()


async def _drag(s: Screen, a: Drag) -> Outcome:
    start = s.point(*a.start_coordinate, what="start_coordinate") if a.start_coordinate is not None else None
    end = s.point(*a.coordinate)
    await s.pointer("drag", start, path=[[round(end[0], 2), round(end[1], 2)]])
    return Outcome()


_DIRECTIONS = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}


async def _scroll(s: Screen, a: Scroll) -> Outcome:
    at = s.point(*a.coordinate) if a.coordinate is not None else None
    ux, uy = _DIRECTIONS[a.scroll_direction]
    await s.pointer("scroll", at, dx=ux * a.scroll_amount, dy=uy * a.scroll_amount, modifiers=_modifiers(a.text))
    return Outcome()


async def _wait(s: Screen, a: Wait) -> Outcome:
    await asyncio.sleep(a.duration)
    return Outcome()


async def _screenshot(s: Screen, a: Screenshot) -> Outcome:
    return Outcome()


async def _zoom(s: Screen, a: Zoom) -> Outcome:
    return Outcome(image=await s.zoom(s.region(*a.region)), screenshot=False)


Handler = Callable[[Screen, object], Awaitable[Outcome]]
HANDLERS: dict[str, Handler] = {
    "cursor_position": _cursor_position,
    "double_click": _click,
    "hold_key": _hold_key,
    "key": _key,
    "left_click": _click,
    "left_click_drag": _drag,
    "left_mouse_down": _mouse_button,
    "left_mouse_up": _mouse_button,
    "middle_click": _click,
    "mouse_move": _mouse_move,
    "right_click": _click,
    "screenshot": _screenshot,
    "scroll": _scroll,
    "triple_click": _click,
    "type": _type,
    "wait": _wait,
    "zoom": _zoom,
}
# Actions that only look: nothing to wait for afterwards.
_LOOKING = frozenset({"cursor_position", "screenshot", "zoom", "wait"})


def _unsupported(body: dict) -> None:
    action = body.get("action")
    if isinstance(action, str) and action not in HANDLERS:
        raise InvalidRequestError(f"unsupported action {action!r}; Anthropic's computer tool actions are "
                                  f"{', '.join(sorted(HANDLERS))}", code="unsupported_action")


async def handle(request: web.Request) -> web.Response:
    q = read_query(request, AnthropicQuery)
    body = await read_object(request)
    _unsupported(body)
    action = validate(AnthropicAction, body).root
    if action.action == "zoom" and q.tool != "computer_20251124":
        raise InvalidRequestError("zoom is an action of computer_20251124 only", code="unsupported_action")
    handler = HANDLERS[action.action]
    screen, outcome = await request.app[COMPUTER].act(q, lambda s: handler(s, action),
                                                      settle=action.action not in _LOOKING, action=action.action,
                                                      args=action.model_dump(exclude={"action"}, exclude_none=True))
    image = outcome.image if outcome.image is not None else (await screen.screenshot() if outcome.screenshot else None)
    b64 = image.b64 if image is not None else None
    content: list[dict] = []
    if outcome.output is not None:
        content.append({"type": "text", "text": outcome.output})
    if b64 is not None:
        content.append({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}})
    return json_ok({
        "output": outcome.output,
        "error": None,
        "base64_image": b64,
        "content": content,
        "tool_result": {"type": "tool_result", "tool_use_id": q.tool_use_id, "content": content}
        if q.tool_use_id else None,
    })

