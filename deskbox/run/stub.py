"""A stand-in for the model providers' APIs, answering with scripted actions in each API's
own wire format, so that an agent (OSWorld's own, unchanged) runs against a real session
without a model, a key or the network: ``deskbox run ... --model-stub SCRIPT``, or on
its own, ``python -m deskbox.run.stub SCRIPT [--port N]``, which prints the variables to
point the agent at it.

It answers:

- OpenAI chat completions, ``POST /v1/chat/completions``: OSWorld's PromptAgent (a
  fenced ``python`` block of pyautogui, or ```` ```DONE``` ````) and the UI-TARS agents
  (``Thought: ... Action: click(start_box='(x,y)')``), told apart by the prompt the
  request carries (UI-TARS's asks for ``start_box``);
- OpenAI Responses, ``POST /v1/responses``: the computer-use agent's ``computer_call``
  items, and an assistant message to end;
- Anthropic Messages, ``POST /v1/messages``: ``tool_use`` blocks of the ``computer``
  tool, and text alone to end.

**The script** (JSON) is the list of turns a conversation gets, one per request:
``{"screen": [1920, 1080], "turns": [{"click": [960, 600]}, {"type": "deskbox"},
{"key": "enter"}, "DONE"]}``. A turn is ``{"click": [x, y]}``, ``{"double_click": [x,
y]}``, ``{"type": TEXT}``, ``{"key": NAME}``, ``"DONE"``, ``"FAIL"``, ``"WAIT"``, or
``{"say": TEXT}`` (the reply's text as it is). Points are in the screen's pixels
(``screen``); each API gets them in the coordinates its agents read: the display the
request declares (Anthropic's and OpenAI's computer tools), or the screenshot it sent
(chat models point at the image). After the last turn every answer ends the task.

**Conversations.** A request that carries no earlier answer of the model begins a
conversation (a task); the ones after it, carrying its history, go on with the next turn.
Conversations are told apart by their system prompt and first user message (where the
agents put the instruction), so sessions running different tasks side by side each get
the whole script.

``GET /stub/requests`` lists what was asked (API, model, conversation, turn)."""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import io
import itertools
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..common.callers import Callers, refusal
from ..geometry import display_to_declared

__all__ = ["Script", "make_app", "StubServer", "environment", "ScriptError"]


class ScriptError(ValueError):
    """A script that cannot be read."""


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    screen: tuple[int, int] = (1920, 1080)
    turns: list[str | dict[str, Any]] = Field(default_factory=list)

    @classmethod
    def read(cls, path: Path) -> "Script":
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise ScriptError(f"{path}: {exc}") from exc
        if isinstance(data, list):
            data = {"turns": data}
        try:
            script = cls.model_validate(data)
        except ValidationError as exc:
            raise ScriptError(f"{path}: {exc}") from exc
        for turn in script.turns:
            _kind(turn)  # refused now, not mid-run
        return script


_KINDS = ("click", "double_click", "type", "key", "say")


def _kind(turn: str | dict[str, Any]) -> tuple[str, Any]:
    if isinstance(turn, str):
        if turn not in ("DONE", "FAIL", "WAIT"):
            raise ScriptError(f"turn {turn!r}: DONE, FAIL, WAIT or an object")
        return turn, None
    if len(turn) != 1 or next(iter(turn)) not in _KINDS:
        raise ScriptError(f"turn {turn!r}: one of {', '.join(_KINDS)}")
    kind, value = next(iter(turn.items()))
    if kind in ("click", "double_click") and not (isinstance(value, list) and len(value) == 2):
        raise ScriptError(f"turn {turn!r}: a point [x, y]")
    return kind, value


# -- the APIs' dialects ------------------------------------------------------------------------


def _chat_prompt(kind: str, value: Any, point: tuple[int, int] | None) -> str:
    """PromptAgent's pyautogui dialect."""
    if kind in ("DONE", "FAIL", "WAIT"):
        return f"```{kind}```"
    if kind == "say":
        return str(value)
    code = {"click": f"pyautogui.click({point[0]}, {point[1]})" if point else "",
            "double_click": f"pyautogui.doubleClick({point[0]}, {point[1]})" if point else "",
            "type": f"pyautogui.typewrite({value!r})", "key": f"pyautogui.press({value!r})"}[kind]
    return f"```python\nimport pyautogui\n{code}\n```"


_TARS_KEYS = {"enter": "enter", "return": "enter"}


def _chat_tars(kind: str, value: Any, point: tuple[int, int] | None) -> str:
    """UI-TARS's ``Thought: / Action:`` dialect."""
    action = {"DONE": "finished(content='done')", "FAIL": "error_env()", "WAIT": "wait()",
              "type": f"type(content={str(value)!r})",
              "key": f"hotkey(key='{_TARS_KEYS.get(str(value).lower(), str(value).lower())}')"}.get(kind)
    if kind == "say":
        return str(value)
    if point is not None:
        name = "left_double" if kind == "double_click" else "click"
        action = f"{name}(start_box='({point[0]},{point[1]})')"
    return f"Thought: the script's turn ({kind}).\nAction: {action}"


_CUA_KEYS = {"enter": "ENTER", "return": "ENTER", "tab": "TAB", "escape": "ESC", "esc": "ESC"}


def _responses_item(kind: str, value: Any, point: tuple[int, int] | None, n: int) -> dict[str, Any]:
    if kind in ("DONE", "FAIL", "say"):
        text = {"DONE": "Done.", "FAIL": "The task is infeasible."}.get(kind, str(value))
        return {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
    action: dict[str, Any] = {"WAIT": {"type": "wait"}, "type": {"type": "type", "text": str(value)},
                              "key": {"type": "keypress", "keys": [_CUA_KEYS.get(str(value).lower(),
                                                                                 str(value).upper())]}}.get(kind, {})
    if point is not None:
        action = ({"type": "click", "button": "left", "x": point[0], "y": point[1]} if kind == "click"
                  else {"type": "double_click", "x": point[0], "y": point[1]})
    return {"type": "computer_call", "id": f"cu_{n}", "call_id": f"call_{n}", "status": "completed",
            "action": action, "pending_safety_checks": []}


_CLAUDE_KEYS = {"enter": "Return", "return": "Return", "tab": "Tab", "escape": "Escape", "esc": "Escape"}


def _anthropic_blocks(kind: str, value: Any, point: tuple[int, int] | None, n: int) -> list[dict[str, Any]]:
    if kind in ("DONE", "FAIL", "say"):
        return [{"type": "text", "text": {"DONE": "Done.", "FAIL": "I cannot do this task."}.get(kind, str(value))}]
    tool = {"WAIT": {"action": "wait"}, "type": {"action": "type", "text": str(value)},
            "key": {"action": "key", "text": _CLAUDE_KEYS.get(str(value).lower(), str(value))}}.get(kind, {})
    if point is not None:
        tool = {"action": "left_click" if kind == "click" else "double_click", "coordinate": list(point)}
    return [{"type": "text", "text": f"The script's turn ({kind})."},
            {"type": "tool_use", "id": f"toolu_{n:04d}", "name": "computer", "input": tool}]


# -- conversations -----------------------------------------------------------------------------


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(_texts(part.get("text") or part.get("content") or "") for part in content
                        if isinstance(part, dict))
    return ""


def _image_size(content: Any) -> tuple[int, int] | None:
    """The size of the last image a chat message carries (a data URL)."""
    from PIL import Image

    found = None
    for part in content if isinstance(content, list) else []:
        url = (part.get("image_url") or {}).get("url", "") if isinstance(part, dict) else ""
        if url.startswith("data:") and "," in url:
            found = url.partition(",")[2]
    if found is None:
        return None
    try:
        with Image.open(io.BytesIO(base64.b64decode(found))) as image:
            return image.size
    except Exception:
        return None


@dataclass
class _State:
    script: Script
    turns: dict[str, int] = field(default_factory=dict)
    asked: list[dict[str, Any]] = field(default_factory=list)
    ids: itertools.count = field(default_factory=itertools.count)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def turn(self, api: str, model: str, first_user: str, continued: bool) -> tuple[int, str, Any, int]:
        """The conversation's next turn: (its index, kind, value, a number for ids)."""
        key = hashlib.sha256(f"{api}\0{first_user}".encode()).hexdigest()[:16]
        with self.lock:
            index = self.turns.get(key, -1) + 1 if continued else 0
            self.turns[key] = index
            n = next(self.ids)
            self.asked.append({"api": api, "model": model, "conversation": key, "turn": index, "t": time.time()})
        if index >= len(self.script.turns):
            return index, "DONE", None, n
        kind, value = _kind(self.script.turns[index])
        return index, kind, value, n


STATE = web.AppKey("state", _State)


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message, "type": code}}, status=status)


async def _body(request: web.Request) -> dict[str, Any] | web.Response:
    try:
        body = await request.json()
    except ValueError:
        return _error(400, "invalid_json", "the body is not JSON")
    if not isinstance(body, dict):
        return _error(400, "invalid_request", "the body is not a JSON object")
    return body


async def _asked_for(request: web.Request, key: str, code: str) -> tuple[_State, dict, list] | web.Response:
    """The stub's state, the request's body and its list ``key`` (messages, input), or
    the API's error answer."""
    body = await _body(request)
    if isinstance(body, web.Response):
        return body
    items = body.get(key)
    if not isinstance(items, list) or not items:
        return _error(400, code, f"{key}: a non-empty list")
    return request.app[STATE], body, items


def _point(state: _State, kind: str, value: Any, space: Callable[[], tuple[int, int] | None]) -> tuple[int, int] | None:
    """A pointing turn's point in ``space()`` (the API's coordinates; the screen's when
    None), or None for a turn that points nowhere."""
    if kind not in ("click", "double_click"):
        return None
    x, y = display_to_declared(state.script.screen, space() or state.script.screen, value[0], value[1])
    return round(x), round(y)


def _declared(body: dict, width: str, height: str) -> tuple[int, int] | None:
    """The display a computer tool of the request declares."""
    tool = next((t for t in body.get("tools") or [] if isinstance(t, dict) and width in t), None)
    return (int(tool[width]), int(tool[height])) if tool else None


async def _chat(request: web.Request) -> web.Response:
    asked = await _asked_for(request, "messages", "invalid_request")
    if isinstance(asked, web.Response):
        return asked
    state, body, messages = asked
    messages = [m for m in messages if isinstance(m, dict)]
    users = [m for m in messages if m.get("role") == "user"]
    continued = any(m.get("role") == "assistant" for m in messages)
    tars = "start_box" in " ".join(_texts(m.get("content")) for m in messages)
    # (PromptAgent keeps the instruction in its system message; UI-TARS in its first user's)
    first = " ".join(_texts(m.get("content")) for m in messages if m.get("role") == "system")
    first += _texts(users[0].get("content")) if users else ""
    _, kind, value, n = state.turn("chat", str(body.get("model")), first, continued)
    point = _point(state, kind, value,
                   lambda: next((s for m in reversed(users) if (s := _image_size(m.get("content")))), None))
    text = (_chat_tars if tars else _chat_prompt)(kind, value, point)
    return web.json_response({
        "id": f"chatcmpl-stub-{n}", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model"), "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})


async def _responses(request: web.Request) -> web.Response:
    asked = await _asked_for(request, "input", "invalid_request")
    if isinstance(asked, web.Response):
        return asked
    state, body, items = asked
    continued = any(isinstance(i, dict) and i.get("type") in ("computer_call_output", "computer_call")
                    for i in items)
    first = next((i for i in items if isinstance(i, dict) and i.get("role") == "user"), {})
    _, kind, value, n = state.turn("responses", str(body.get("model")), _texts(first.get("content")), continued)
    point = _point(state, kind, value, lambda: _declared(body, "display_width", "display_height"))
    return web.json_response({
        "id": f"resp_stub_{n}", "object": "response", "created_at": int(time.time()), "model": body.get("model"),
        "status": "completed", "output": [_responses_item(kind, value, point, n)],
        "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}})


async def _messages(request: web.Request) -> web.Response:
    asked = await _asked_for(request, "messages", "invalid_request_error")
    if isinstance(asked, web.Response):
        return asked
    state, body, messages = asked
    continued = any(isinstance(m, dict) and m.get("role") == "assistant" for m in messages)
    first = messages[0].get("content") if isinstance(messages[0], dict) else ""
    _, kind, value, n = state.turn("messages", str(body.get("model")), _texts(first), continued)
    point = _point(state, kind, value, lambda: _declared(body, "display_width_px", "display_height_px"))
    blocks = _anthropic_blocks(kind, value, point, n)
    return web.json_response({
        "id": f"msg_stub_{n}", "type": "message", "role": "assistant", "model": body.get("model"),
        "content": blocks, "stop_reason": "tool_use" if blocks[-1]["type"] == "tool_use" else "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}})


async def _asked(request: web.Request) -> web.Response:
    state = request.app[STATE]
    with state.lock:
        return web.json_response({"requests": list(state.asked)})


def _callers_middleware():
    """A page in a session's browser may send requests to the stub on loopback: refused as
    the services refuse them (deskbox.common.callers), in the APIs' error shape. The SDKs
    send no Origin and no Sec-Fetch-Site."""
    callers = Callers.from_env()

    @web.middleware
    async def middleware(request: web.Request, handler) -> web.StreamResponse:
        reason = refusal(callers, request.headers)
        if reason is not None:
            return _error(403, "forbidden_origin", reason)
        return await handler(request)

    return middleware


def make_app(script: Script) -> web.Application:
    """The stub's aiohttp app for ``script``."""
    app = web.Application(client_max_size=64 * 1024 * 1024,  # (screenshots, a history of them)
                          middlewares=[_callers_middleware()])
    app[STATE] = _State(script)
    for path in ("/v1/chat/completions", "/chat/completions"):
        app.router.add_post(path, _chat)
    for path in ("/v1/responses", "/responses"):
        app.router.add_post(path, _responses)
    app.router.add_post("/v1/messages", _messages)
    app.router.add_get("/stub/requests", _asked)
    return app


def environment(url: str) -> dict[str, str]:
    """The variables that point OSWorld's agents at the stub at ``url`` (keys included:
    the SDKs refuse to start without one)."""
    return {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "stub", "OPENAI_API_KEY_CUA": "stub",
            "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "stub", "DOUBAO_API_URL": f"{url}/v1",
            "DOUBAO_API_KEY": "stub"}


class StubServer:
    """The stub served on loopback in a thread of its own (``deskbox run --model-stub``)."""

    def __init__(self, script: Script, port: int = 0) -> None:
        self.script = script
        self._port = port
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="model-stub", daemon=True)
        self.url = ""

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._runner = web.AppRunner(make_app(self.script), access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", self._port)
            await site.start()
            port = self._runner.addresses[0][1]
            self.url = f"http://127.0.0.1:{port}"
            self._ready.set()

        self._loop.run_until_complete(start())
        self._loop.run_forever()

    def start(self) -> "StubServer":
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the model stub did not start")
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m deskbox.run.stub", description=__doc__.split("\n\n")[0])
    p.add_argument("script", type=Path, help="the turns to answer with (JSON)")
    p.add_argument("--port", type=int, default=0, help="on 127.0.0.1 (a free one by default)")
    args = p.parse_args(argv)
    try:
        script = Script.read(args.script)
    except ScriptError as exc:
        print(f"deskbox.run.stub: {exc}", file=sys.stderr)
        return 2
    server = StubServer(script, args.port).start()
    for name, value in environment(server.url).items():
        print(f"export {name}={value}")
    sys.stdout.flush()
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
