"""Gemini's computer use functions: ``POST /api/v1/computer/gemini`` with the model's
function call as the body (``{"name": "click_at", "args": {"x": 500, "y": 300}, "id"?}``).

Coordinates (and ``scroll_at``'s ``magnitude``) are on Gemini's 0-999 grid over the whole
display, whatever size the screenshot is; screenshots come back at the declared size
(``display_width`` x ``display_height``, Gemini suggests 1440x900). Keys are Playwright's
names ("Control+A", "Enter", "ArrowLeft", "Meta"). Defaults follow Gemini's reference
implementation: ``type_text_at`` clears the field first and does not press Enter unless
told; ``scroll_at`` scrolls 800; ``args.safety_decision`` (and ``intent``) are accepted and
left to the harness, which acknowledges a decision in its own function response.

Browser functions. ``navigate`` and ``search`` go through the bridge (CDP
``Page.navigate`` on the front tab): typing into the omnibox could land elsewhere, as
its inline autocompletion may extend a typed URL from history, and the reference
implementation also navigates the page directly (Playwright ``goto``). ``go_back`` and
``go_forward`` are the browser's own keys (alt+Left, alt+Right) pressed on its window:
real input, with the same effect as its toolbar buttons. ``open_web_browser`` focuses the
browser window, starting the browser first where it is not running (an OSWorld-mode
session after its reset, which leaves it closed as OSWorld's VM starts a task).

The reply is the ``FunctionResponse`` for the next turn, snake_case as the Python SDK
names its fields (``types.FunctionResponse.model_validate(reply)``; the REST API takes
those names too): ``{"name", "id", "response": {"url"}, "parts": [{"inline_data":
{"mime_type": "image/png", "data": "<base64 PNG>"}}]}``."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Awaitable, Callable, Literal, Union

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator

from ..common.errors import DeskboxError, InvalidRequestError
from ..common.logging import get_logger
from ..common.web import json_ok, read_query, validate
from .base import COMPUTER, Screen, ScreenQuery, key_name, read_object, split_combo

__all__ = ["GeminiCall", "GeminiQuery", "HANDLERS", "handle"]

log = get_logger("deskbox.computer.gemini")

DEFAULT_MAGNITUDE = 800
WAIT_S = 5.0
NAVIGATION_TIMEOUT_S = 10.0  # for the new URL to show; the screen then settles as after any action
# Back or forward with no history there does nothing: no URL change to wait for.
HISTORY_TIMEOUT_S = 3.0


class GeminiQuery(ScreenQuery):
    search_url: str = Field("https://www.google.com/", min_length=1, max_length=2048,
                            description="where search goes (Gemini's reference: the search engine's home page)")


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    safety_decision: dict[str, Any] | None = None  # for the harness: confirm, then acknowledge in its reply
    intent: str | None = Field(None, max_length=10_000)


Grid = Annotated[float, Field(ge=0, le=999)]


class NoArgs(_Args):
    pass


class Point(_Args):
    x: Grid
    y: Grid


class TypeTextArgs(Point):
    text: str = Field(max_length=64 * 1024)
    press_enter: bool = False
    clear_before_typing: bool = True


class ScrollDocumentArgs(_Args):
    direction: Literal["up", "down", "left", "right"]


class ScrollAtArgs(Point):
    direction: Literal["up", "down", "left", "right"]
    magnitude: Grid = DEFAULT_MAGNITUDE


class KeysArgs(_Args):
    keys: str = Field(min_length=1, max_length=200)


class DragArgs(Point):
    destination_x: Grid
    destination_y: Grid


class NavigateArgs(_Args):
    url: str = Field(min_length=1, max_length=8192)

    @field_validator("url")
    @classmethod
    def _a_place(cls, value: str) -> str:
        if value.strip().lower().startswith(("javascript:", "vbscript:")):
            raise ValueError("url must be a place to go to, not a script")
        return value


class _Call(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str | None = Field(None, max_length=256)


class OpenWebBrowser(_Call):
    name: Literal["open_web_browser"]
    args: NoArgs = Field(default_factory=NoArgs)


class Wait5(_Call):
    name: Literal["wait_5_seconds"]
    args: NoArgs = Field(default_factory=NoArgs)


class GoBack(_Call):
    name: Literal["go_back"]
    args: NoArgs = Field(default_factory=NoArgs)


class GoForward(_Call):
    name: Literal["go_forward"]
    args: NoArgs = Field(default_factory=NoArgs)


class Search(_Call):
    name: Literal["search"]
    args: NoArgs = Field(default_factory=NoArgs)


class Navigate(_Call):
    name: Literal["navigate"]
    args: NavigateArgs


class ClickAt(_Call):
    name: Literal["click_at"]
    args: Point


class HoverAt(_Call):
    name: Literal["hover_at"]
    args: Point


class TypeTextAt(_Call):
    name: Literal["type_text_at"]
    args: TypeTextArgs


class ScrollDocument(_Call):
    name: Literal["scroll_document"]
    args: ScrollDocumentArgs


class ScrollAt(_Call):
    name: Literal["scroll_at"]
    args: ScrollAtArgs


class KeyCombination(_Call):
    name: Literal["key_combination"]
    args: KeysArgs


class DragAndDrop(_Call):
    name: Literal["drag_and_drop"]
    args: DragArgs


class GeminiCall(RootModel):
    """The model's function call: ``name``, ``args`` and, when the API gave one, ``id``."""

    root: Annotated[Union[OpenWebBrowser, Wait5, GoBack, GoForward, Search, Navigate, ClickAt, HoverAt, TypeTextAt,
                          ScrollDocument, ScrollAt, KeyCombination, DragAndDrop], Field(discriminator="name")]


_DIRECTIONS = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}


async def _open_web_browser(s: Screen, c: OpenWebBrowser, q: GeminiQuery) -> None:
    await s.computer.focus_browser(start=True)


async def _wait_5_seconds(s: Screen, c: Wait5, q: GeminiQuery) -> None:
    await asyncio.sleep(WAIT_S)


async def _history(s: Screen, keys: str) -> None:
    await s.computer.focus_browser()
    before = await s.computer.current_url()
    await s.keyboard("key", keys=keys)
    await s.computer.wait_url(before, HISTORY_TIMEOUT_S)


async def _go_back(s: Screen, c: GoBack, q: GeminiQuery) -> None:
    await _history(s, "alt+Left")


async def _go_forward(s: Screen, c: GoForward, q: GeminiQuery) -> None:
    await _history(s, "alt+Right")


async def _open(s: Screen, url: str) -> None:
    if "://" not in url and not url.startswith(("about:", "data:", "chrome:")):
        url = "https://" + url  # the model writes "example.com" as a person would
    before = await s.computer.current_url()
    await s.computer.navigate(url)
    if url != before:
        await s.computer.wait_url(before, NAVIGATION_TIMEOUT_S)


async def _search(s: Screen, c: Search, q: GeminiQuery) -> None:
    await _open(s, q.search_url)


async def _navigate(s: Screen, c: Navigate, q: GeminiQuery) -> None:
    await _open(s, c.args.url)


async def _click_at(s: Screen, c: ClickAt, q: GeminiQuery) -> None:
    await s.pointer("click", s.grid_point(c.args.x, c.args.y))


async def _hover_at(s: Screen, c: HoverAt, q: GeminiQuery) -> None:
    await s.pointer("move", s.grid_point(c.args.x, c.args.y))


async def _type_text_at(s: Screen, c: TypeTextAt, q: GeminiQuery) -> None:
    a = c.args
    await s.pointer("click", s.grid_point(a.x, a.y))
    if a.clear_before_typing:
        await s.keyboard("key", keys=["ctrl+a", "Delete"])
    if a.text:
        await s.keyboard("type", text=a.text)
    if a.press_enter:
        await s.keyboard("key", keys="Return")


async def _scroll_document(s: Screen, c: ScrollDocument, q: GeminiQuery) -> None:
    direction = c.args.direction
    if direction in ("up", "down"):
        # A page at a time, as the reference does it (PageUp / PageDown).
        await s.keyboard("key", keys="Page_Up" if direction == "up" else "Page_Down")
        return
    # No key scrolls a page sideways: the wheel, half the display's width, at its centre.
    w, h = s.size
    ux, _ = _DIRECTIONS[direction]
    dx, _ = s.notches(ux * w / 2, 0)
    await s.pointer("scroll", (w / 2, h / 2), dx=dx)


async def _scroll_at(s: Screen, c: ScrollAt, q: GeminiQuery) -> None:
    a = c.args
    at = s.grid_point(a.x, a.y)
    ux, uy = _DIRECTIONS[a.direction]
    # magnitude is on the grid too: a share of the display's width or height.
    dist_x, dist_y = s.grid_distance(ux * a.magnitude, uy * a.magnitude)
    if dist_x == 0 and dist_y == 0:
        raise InvalidRequestError("scroll_at needs a magnitude above 0", code="validation_error")
    dx, dy = s.notches(dist_x, dist_y)
    await s.pointer("scroll", at, dx=dx, dy=dy)


async def _key_combination(s: Screen, c: KeyCombination, q: GeminiQuery) -> None:
    await s.keyboard("key", keys="+".join(key_name(k) for k in split_combo(c.args.keys)))


async def _drag_and_drop(s: Screen, c: DragAndDrop, q: GeminiQuery) -> None:
    a = c.args
    start = s.grid_point(a.x, a.y)
    end = s.grid_point(a.destination_x, a.destination_y, what="destination")
    await s.pointer("drag", start, path=[[round(end[0], 2), round(end[1], 2)]])


HANDLERS: dict[str, Callable[[Screen, Any, GeminiQuery], Awaitable[None]]] = {
    "click_at": _click_at,
    "drag_and_drop": _drag_and_drop,
    "go_back": _go_back,
    "go_forward": _go_forward,
    "hover_at": _hover_at,
    "key_combination": _key_combination,
    "navigate": _navigate,
    "open_web_browser": _open_web_browser,
    "scroll_at": _scroll_at,
    "scroll_document": _scroll_document,
    "search": _search,
    "type_text_at": _type_text_at,
    "wait_5_seconds": _wait_5_seconds,
}


async def handle(request: web.Request) -> web.Response:
    q = read_query(request, GeminiQuery)
    body = await read_object(request)
    name = body.get("name")
    if isinstance(name, str) and name not in HANDLERS:
        raise InvalidRequestError(f"unsupported function {name!r}; Gemini's computer use functions are "
                                  f"{', '.join(sorted(HANDLERS))}", code="unsupported_action")
    call = validate(GeminiCall, body).root
    handler = HANDLERS[call.name]

    async def work(s: Screen) -> None:
        await handler(s, call, q)

    computer = request.app[COMPUTER]
    screen, _ = await computer.act(q, work, settle=call.name != "wait_5_seconds", action=call.name,
                                   args=call.args.model_dump(exclude_none=True))
    shot = await screen.screenshot()
    # The action is done: a browser that does not answer now (starting, or gone) leaves
    # the reply without its URL rather than answering an error for an action that was
    # carried out, which a harness would send again.
    try:
        url = await computer.current_url()
    except DeskboxError as exc:
        log.info("gemini.reply_without_url", error=str(exc))
        url = None
    return json_ok({
        "name": call.name,
        "id": call.id,
        "response": {"url": url},
        "parts": [{"inline_data": {"mime_type": "image/png", "data": shot.b64}}],
    })
