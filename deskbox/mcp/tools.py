"""The MCP tools: one table, each tool one entry (name, description for a model, input
schema, hints, and how it calls the session through ``deskbox.AsyncClient``), and one
dispatch point, ``call``.

Input schemas come from the services' own pydantic models, and arguments go to the
services as they are: the services validate them, and what they refuse comes back as a
tool error carrying their error body (``isError: true``), as does every other failure."""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, get_args

from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from mcp.types import Tool as McpTool
from PIL import Image
from pydantic import BaseModel

from ..api.computer import AnthropicAction, AnthropicQuery
from ..api.scene import ActRequest, MarkedScreenshotQuery
from ..api.toolset import AssertRequest, DescribeQuery, FindQuery, ObserveQuery, WaitRequest
from ..bridge.models import NavigateRequest
from ..client import AsyncClient, DeskboxError
from ..common.logging import get_logger
from ..common.options import VLM_TIMEOUT_S
from ..desktopd.models import KeyboardRequest, PointerRequest

__all__ = ["Tool", "TOOLS", "call", "listed"]

log = get_logger("deskbox.mcp")
Run = Callable[[AsyncClient, dict[str, Any]], Awaitable[CallToolResult]]


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    schema: dict[str, Any]
    run: Run
    read_only: bool = False
    destructive: bool = False  # (meaningful only when not read_only)
    idempotent: bool = False
    open_world: bool = False  # reaches past the session (the web)

    def listed(self) -> McpTool:
        return McpTool(name=self.name, title=self.title, description=self.description, input_schema=self.schema,
                       annotations=ToolAnnotations(title=self.title, read_only_hint=self.read_only,
                                                   destructive_hint=self.destructive,
                                                   idempotent_hint=self.idempotent, open_world_hint=self.open_world))


# -- schemas from the services' models --------------------------------------------------


def _untitled(node: Any, names: bool = False) -> Any:
    """A JSON schema without pydantic's ``title`` keywords (tokens a model need not read);
    ``names``: ``node`` maps names to schemas, where a property called title stays."""
    if isinstance(node, dict):
        return {k: _untitled(v, k in ("properties", "$defs")) for k, v in node.items() if names or k != "title"}
    if isinstance(node, list):
        return [_untitled(v) for v in node]
    return node


def schema_of(model: type[BaseModel], *, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    schema = _untitled(model.model_json_schema())
    for name in drop:
        schema["properties"].pop(name, None)
        if name in schema.get("required", []):
            schema["required"].remove(name)
    schema.pop("description", None)
    return schema


def _optional(prop: dict[str, Any]) -> dict[str, Any]:
    """``X | None = None`` as plain ``X``: in a merged schema every field is optional anyway."""
    prop = {k: v for k, v in prop.items() if k != "default" or v is not None}
    branches = [b for b in prop.get("anyOf", []) if b != {"type": "null"}]
    if "anyOf" in prop and len(branches) == 1:
        rest = {k: v for k, v in prop.items() if k != "anyOf"}
        return {**branches[0], **rest}
    return prop


def flat_union(model: type[BaseModel]) -> tuple[dict[str, Any], list[str]]:
    """One object schema for a union of action models told apart by ``action`` (MCP hosts
    want ``type: object`` at the root, without ``oneOf``): ``action`` is an enum of them
    all, each other field says which actions take it, keeping what all its forms agree
    on. Also one line per action (``name(required, optional?)``) for the description."""
    root = _untitled(model.model_json_schema())
    variants = [root["$defs"][ref["$ref"].rsplit("/", 1)[1]] for ref in root["oneOf"]]
    actions: list[str] = []
    props: dict[str, dict[str, Any]] = {}
    users: dict[str, list[str]] = {}
    descriptions: dict[str, list[str]] = {}
    lines = []
    for v in variants:
        action = v["properties"]["action"]
        names = action.get("enum") or [action["const"]]
        actions += names
        fields = [f if f in v.get("required", []) else f + "?" for f in v["properties"] if f != "action"]
        lines.append(f"{' | '.join(names)}({', '.join(fields)})")
        for name, prop in v["properties"].items():
            if name == "action":
                continue
            prop = _optional(prop)
            users.setdefault(name, []).extend(names)
            if prop.get("description") and prop["description"] not in descriptions.setdefault(name, []):
                descriptions[name].append(prop["description"])
            prop = {k: val for k, val in prop.items() if k != "description"}
            props[name] = prop if name not in props else {k: val for k, val in props[name].items()
                                                          if prop.get(k) == val}
    for name, prop in props.items():
        said = "; ".join(descriptions.get(name, []))
        prop["description"] = f"{said + ' ' if said else ''}(for {', '.join(users[name])})"
    schema = {"type": "object", "properties": {"action": {"type": "string", "enum": actions}, **props},
              "required": ["action"], "additionalProperties": False}
    return schema, lines


# -- replies ------------------------------------------------------------------------------


def _json(data: Any) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=json.dumps(data, ensure_ascii=False))],
                          structured_content=data if isinstance(data, dict) else {"result": data})


def _failure(exc: DeskboxError) -> CallToolResult:
    """The error's body, with the HTTP status the service answered (None: no service did)."""
    body = {**exc.to_json(), "status": exc.status}
    return CallToolResult(content=[TextContent(text=json.dumps(body, ensure_ascii=False))],
                          structured_content=body, is_error=True)


def _image(data: bytes, mime: str) -> ImageContent:
    return ImageContent(data=base64.b64encode(data).decode(), mime_type=mime)


# -- the tools' calls -------------------------------------------------------------------


async def _observe(client: AsyncClient, args: dict[str, Any]) -> CallToolResult:
    answer = await client.request("scene", "GET", "/api/v1/observe", query={**args, "text": True,
                                                                           "observation": False})
    if answer["format"] != "full":
        return _json({k: answer[k] for k in ("token", "base_token", "seq", "unchanged", "format", "changes")})
    text = answer["text"]  # (the text of the very scene the token is for)
    token = answer["token"]
    head = f"token {token} (observe with since={token} for only what changes from now on)\n\n"
    return CallToolResult(content=[TextContent(text=head + text)],
                          structured_content={k: answer[k] for k in ("token", "seq", "tree_hash")})


async def _screenshot(client: AsyncClient, args: dict[str, Any]) -> CallToolResult:
    data, headers = await client.request("scene", "GET", "/api/v1/screenshot", query=args, raw=True)
    mime = headers.get("Content-Type", "image/png").split(";")[0]
    width, height = Image.open(io.BytesIO(data)).size  # (reads the header only)
    marks = headers.get("X-Deskbox-Marks")
    note = f"display {args.get('display', 0)}: {width}x{height} pixels, the coordinates pointer and computer take"
    return CallToolResult(content=[_image(data, mime), TextContent(text=note + (f"; {marks} ids drawn" if marks else ""))])


async def _find(client: AsyncClient, args: dict[str, Any]) -> CallToolResult:
    return _json(await client.request("scene", "GET", "/api/v1/find", query=args))


async def _describe(client: AsyncClient, args: dict[str, Any]) -> CallToolResult:
    asks_model = args.get("vlm") in (True, 1, "1", "true")
    answer = await client.request("scene", "GET", "/api/v1/description", query=args,
                                  timeout=client.timeout + VLM_TIMEOUT_S if asks_model else None)
    text = answer["text"]
    if "vlm" in answer:
        text += f"\n\nThe vision model ({answer['vlm_model']}, {answer['vlm_tokens']} tokens) says:\n{answer['vlm']}"
    return CallToolResult(content=[TextContent(text=text)], structured_content=answer)


async def _act(client: AsyncClient, args: dict[str, Any]) -> CallToolResult:
    return _json(await client.request("scene", "POST", "/api/v1/act_and_observe", body=args))


async def _pointer(client: AsyncClient, args: dict[str, Any]) -> CallToolResult:
    return _json(await client.request("desktopd", "POST", "/api/v1/pointer", body=args))


async def _keyboard(client: AsyncClient, args: dict[str, Any]) -> CallToolResult:
    return _json(await client.request("desktopd", "POST", "/api/v1/keyboard", body=args))


async def _wait_for(client: AsyncClient, args: dict[str, Any]) -> CallToolResult:
    wait_ms = args.get("timeout_ms", 10_000)
    wait_s = wait_ms / 1000 if isinstance(wait_ms, (int, float)) else 0
    return _json(await client.request("scene", "POST", "/api/v1/wait_for", body=args, timeout=client.timeout + wait_s))


async def _assert_state(client: AsyncClient, args: dict[str, Any]) -> CallToolResult:
    return _json(await client.request("scene", "POST", "/api/v1/assert_state", body=args))


async def _windows(client: AsyncClient, args: dict[str, Any]) -> CallToolResult:
    return _json(await client.request("desktopd", "GET", "/api/v1/tree", query=args))


async def _tabs(client: AsyncClient, args: dict[str, Any]) -> CallToolResult:
    tabs = await client.request("bridge", "GET", "/tabs", query=args)
    return _json({"tabs": [{"id": t.get("id"), "title": t.get("title"), "url": t.get("url")} for t in tabs]})


async def _navigate(client: AsyncClient, args: dict[str, Any]) -> CallToolResult:
    return _json(await client.request("bridge", "POST", "/navigate", body=args))


async def _computer(client: AsyncClient, args: dict[str, Any]) -> CallToolResult:
    action = {k: v for k, v in args.items() if k != "display"}
    reply = await client.request("scene", "POST", "/api/v1/computer/anthropic", body=action,
                                 query={"display": args.get("display")})
    content: list[TextContent | ImageContent] = []
    if reply.get("output") is not None:
        content.append(TextContent(text=reply["output"]))
    if reply.get("base64_image"):
        content.append(ImageContent(data=reply["base64_image"], mime_type="image/png"))
    return CallToolResult(content=content or [TextContent(text="done")])


# -- the table ----------------------------------------------------------------------------

_COMPUTER_SCHEMA, _COMPUTER_ACTIONS = flat_union(AnthropicAction)
_COMPUTER_SCHEMA["properties"]["display"] = _untitled(AnthropicQuery.model_json_schema()["properties"]["display"])

# What an action's own arguments are for, said for those ActRequest has.
_ACT_ARGUMENTS = {
    "text": "text: for type (typed into the element) and set_value (replaces its value; \"\" clears it). ",
    "option": "option (its name) or option_index: the option select picks. ",
    "keys": "keys: what key presses with the element focused (\"ctrl+a\", or a list in turn). ",
    "to": "to: where drag ends, {target: id} or {point: [x, y]}. ",
}
_ELEMENTS = ("Element ids look like a0-12 (a: accessibility, t: OCR text; the digit after it is the display); "
             "boxes are [x, y, w, h] in screenshot pixels of that display.")

TOOLS: list[Tool] = [
    Tool("observe", "Observe the desktop",
         "Read the desktop as text: the focused window, the windows, and every element on screen (buttons, "
         "links, fields, text, native apps' controls) with its id in brackets, role, name, value and box. "
         f"{_ELEMENTS} Use the ids with act. The answer starts with a token: observe again with since=TOKEN "
         "to get only what changed since then (far shorter than reading it all again). interactive: true keeps "
         "only elements that take input; mode agent-turn forces a fresh full read.",
         schema_of(ObserveQuery, drop=("text", "observation")), _observe, read_only=True, idempotent=True),
    Tool("screenshot", "Screenshot a display",
         "A screenshot of one display as an image, in the pixels every box is given in and pointer and computer "
         "take. marks: true draws the interactive elements' ids on it (all: true, every element with a box), "
         "to tie what you see to the ids of observe and find.",
         schema_of(MarkedScreenshotQuery), _screenshot, read_only=True, idempotent=True),
    Tool("find", "Find elements",
         "Find elements with a selector; answers their ids, roles, names, values, states and boxes. A selector is "
         "a role and predicates: button[name=\"Submit\"], textbox[name*=\"mail\"] (contains, any case), "
         "link[name~=\"Next.*\"] (regex), *:has-text(\"Total\"), states such as checkbox:checked, "
         "button:disabled, textbox:focused; descendants with a space (window[name*=\"Calc\"] button), children "
         f"with >, [index=0] for the first. {_ELEMENTS}",
         schema_of(FindQuery), _find, read_only=True, idempotent=True),
    Tool("describe", "Describe a window",
         "A window in prose, the focused one by default (window: an id from windows or observe): its app and "
         "title, what has the focus, and its interactive elements with their ids in reading order. vlm: true "
         "also asks the session's vision model, which is shown the window's screenshot and sketch: slower, "
         "and it spends the session's model tokens; it fails with vlm_not_configured when the session has "
         "no model.",
         schema_of(DescribeQuery), _describe, read_only=True, open_world=True),
    Tool("act", "Act on an element",
         "Act on an element by its id (from observe or find) with real mouse and keyboard input. action: "
         f"{', '.join(get_args(ActRequest.model_fields['action'].annotation))} (default click). "
         + "".join(hint for field, hint in _ACT_ARGUMENTS.items() if field in ActRequest.model_fields)
         + "Waits for the screen to settle, then answers a receipt and what changed (elements added, removed, "
         "changed). It fails with stale_element when the element is gone (observe again), occluded when "
         "something covers it, not_visible when it is off screen and cannot be scrolled to.",
         schema_of(ActRequest), _act, destructive=True),
    Tool("pointer", "Mouse at coordinates",
         "Mouse input at a point of a display, in screenshot pixels: move; click (button left, right or middle; "
         "count 2 or 3 for double and triple clicks); down and up; drag along path [[x, y], ...] starting at "
         "x, y (or where the pointer is); scroll dx, dy wheel notches at x, y (positive dy scrolls down). "
         "modifiers are keys held meanwhile, e.g. [\"ctrl\"]. Prefer act when the target has an id.",
         schema_of(PointerRequest), _pointer, destructive=True),
    Tool("keyboard", "Keyboard",
         "Keyboard input to whatever has the focus: type (text, any Unicode); key (keys: a combination such as "
         "\"ctrl+s\", \"Return\", \"alt+Tab\", or a list of them pressed in turn); down or up (key: hold or "
         "release one key).",
         schema_of(KeyboardRequest), _keyboard, destructive=True),
    Tool("wait_for", "Wait for a condition",
         "Wait until any of the conditions holds, or timeout_ms passes (then matched is false: not an error). "
         "Conditions by type: element_appears (selector), element_disappears (selector or element_id), "
         "text_visible (text or regex), window_appears / window_disappears, url_matches (a tab's URL, regex), "
         "tree_changes (since an observe token), focus_changes, screen_idle (no pixel changed for quiet_ms).",
         schema_of(WaitRequest), _wait_for, read_only=True),
    Tool("assert_state", "Check the state",
         "Check predicates against the desktop now; each answers passed and what was observed. Predicates by "
         "kind: element_exists / element_absent (selector), value_equals / value_matches (the value of the "
         "element a selector finds), text_visible, window_focused, window_exists, tree_hash_equals, "
         "screenshot_similar.",
         schema_of(AssertRequest), _assert_state, read_only=True, idempotent=True),
    Tool("windows", "List windows",
         "The displays (id, size in pixels, scale) and the windows: id, app, title, pid, box on its display, "
         "and which one has the focus.",
         {"type": "object", "properties": {}, "additionalProperties": False}, _windows, read_only=True,
         idempotent=True),
    Tool("tabs", "List browser tabs",
         "The browser's open tabs: id, title and URL (pass an id as navigate's tab).",
         {"type": "object", "properties": {}, "additionalProperties": False}, _tabs, read_only=True,
         idempotent=True),
    Tool("navigate", "Open a URL",
         "Load a URL (http, https, file, about, data) in a browser tab, by default the first. It answers once "
         "the navigation has started: wait_for url_matches or element_appears before relying on the page.",
         schema_of(NavigateRequest), _navigate, destructive=True, idempotent=True, open_world=True),
    Tool("computer", "Computer use (Anthropic's computer tool)",
         "Anthropic's computer tool (computer_20251124) on one display: coordinates [x, y] in that display's "
         "screenshot pixels; answers a screenshot after the action (cursor_position answers text). Keys use "
         "xdotool names (\"ctrl+a\", \"Return\"); modifiers of a click or scroll go in text. Actions: "
         + "; ".join(_COMPUTER_ACTIONS) + ".",
         _COMPUTER_SCHEMA, _computer, destructive=True),
]
_BY_NAME = {t.name: t for t in TOOLS}


def listed() -> list[McpTool]:
    return [t.listed() for t in TOOLS]


async def call(client: AsyncClient, name: str, arguments: dict[str, Any] | None) -> CallToolResult:
    """Run tool ``name``; every failure is a tool error, never an exception."""
    tool = _BY_NAME.get(name)
    if tool is None:
        return _failure(DeskboxError(f"no tool {name!r}; the tools are {', '.join(_BY_NAME)}", code="unknown_tool",
                                     recoverable=True, status=None))
    try:
        return await tool.run(client, dict(arguments or {}))
    except DeskboxError as exc:
        return _failure(exc)
    except Exception as exc:  # a bug here must not end the MCP session
        log.exception("tool failed", tool=name)
        return _failure(DeskboxError(f"{name} failed: {exc!r}", code="internal", status=None))
