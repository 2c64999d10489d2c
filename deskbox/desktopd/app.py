"""desktopd's HTTP app: built in one factory, one handler per route, shared state under
typed app keys, the backend opened and closed in a cleanup context."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import Counter

from ..answers import DesktopdHealth, DisplayList, InputDone, PointerPosition, WindowDone, WindowTree
from ..common.errors import DeadlineExceededError, InvalidRequestError
from ..common.metrics import add_metrics, metrics_middleware, serve_metrics
from ..common.openapi import Longest, Route, add_routes, openapi_document
from ..common.web import client_left, error_middleware, guarded, json_ok, read_body, read_query
from .actions import (
    Keys,
    Pause,
    Planner,
    Press,
    Step,
    execute,
    left_down,
    plan_keyboard,
    plan_pointer,
    planned_seconds,
    slices,
)
from .backends.base import Backend, KeyEvent
from .gate import BLUR, GATE_CLIENT, GateClient, gate_middleware, gate_state
from .keys import UnknownKey, parse_key
from .models import (
    GateStateRequest,
    KeyboardEventsRequest,
    KeyboardRequest,
    MoveWindowRequest,
    PointerRequest,
    ScreenshotQuery,
    TabletEventsRequest,
    TabletRequest,
)
from .screenshots import Screenshots

__all__ = ["create_app", "DesktopdConfig", "BACKEND", "__version__"]

__version__ = "0.1.0"


@dataclass(frozen=True)
class DesktopdConfig:
    token: str | None = None
    gate: str | None = None  # the scene aggregator's URL: its gate is told of direct input
    secret: str | None = None  # the session's internal secret (the scene's requests carry it)
    gate_required: bool = False  # a policy is in force: refuse input while the gate is unreachable


BACKEND = web.AppKey("backend", Backend)
SHOTS = web.AppKey("screenshots", Screenshots)
INPUT_LOCK = web.AppKey("input_lock", asyncio.Lock)
STARTED = web.AppKey("started", float)


class DesktopdMetrics:
    """desktopd's own metrics, beside those every service has (``deskbox.common.metrics``)."""

    def __init__(self, app: web.Application) -> None:
        registry = add_metrics(app).registry
        self.inputs = Counter("deskbox_desktopd_input_actions",
                              "Input actions carried out, by device (pointer, keyboard) and action: one per "
                              "request, one per event of the compatibility batches", ["device", "action"],
                              registry=registry)
        self.screenshots = Counter("deskbox_desktopd_screenshots",
                                   "Screenshots answered, by format and outcome (sent, not_modified: 304)",
                                   ["format", "outcome"], registry=registry)


DESKTOPD_METRICS = web.AppKey("desktopd_metrics", DesktopdMetrics)

OPEN_PATHS = frozenset({"/api/v1/health", "/health", "/api/v1/openapi.json"})


def create_app(backend: Backend, config: DesktopdConfig | None = None) -> web.Application:
    config = config or DesktopdConfig()
    app = web.Application(
        middlewares=[metrics_middleware, error_middleware, *guarded(config.token, OPEN_PATHS), gate_middleware],
        client_max_size=1024 * 1024,
    )
    app[BACKEND] = backend
    if config.gate and config.secret:
        gate = app[GATE_CLIENT] = GateClient(config.gate, config.secret, token=config.token,
                                              required=config.gate_required)

        async def gate_ctx(app: web.Application):
            await gate.start()
            yield
            await gate.close()

        app.cleanup_ctx.append(gate_ctx)
    app[SHOTS] = Screenshots(backend)
    app[INPUT_LOCK] = asyncio.Lock()
    app[STARTED] = time.time()
    app[DESKTOPD_METRICS] = DesktopdMetrics(app)

    async def backend_ctx(app: web.Application):
        await backend.start()
        yield
        await backend.close()

    app.cleanup_ctx.append(backend_ctx)
    add_routes(app, ROUTES)
    app.router.add_get("/api/v1/openapi.json", openapi)
    return app


# -- observation --------------------------------------------------------------------


async def health(request: web.Request) -> web.Response:
    backend = request.app[BACKEND]
    details = backend.health()
    ok = details.get("error") is None
    return json_ok(
        {
            "ok": ok,
            "backend": backend.name,
            "displays": len(backend.displays()),
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(time.time() - request.app[STARTED], 1),
            "error": details.get("error"),
        },
        status=200 if ok else 503,
    )


def _display_json(d) -> dict:
    return {
        "id": d.id,
        "name": d.name,
        "bounds": [d.layout.x, d.layout.y, d.layout.w, d.layout.h],
        "scale": d.scale,
        "primary": d.primary,
        "size": list(d.size),
    }


async def displays(request: web.Request) -> web.Response:
    backend = request.app[BACKEND]
    return json_ok({"displays": [_display_json(d) for d in await backend.refresh_displays()]})


async def screenshot(request: web.Request) -> web.Response:
    q = read_query(request, ScreenshotQuery)
    planner = Planner(request.app[BACKEND])
    display = planner.display(q.display)
    shot = await request.app[SHOTS].take(display, q, request.headers.get("If-None-Match"), blur=request.get(BLUR, ()))
    request.app[DESKTOPD_METRICS].screenshots.labels(q.format, "not_modified" if shot.not_modified else "sent").inc()
    if shot.not_modified:
        return web.Response(status=304, headers=shot.headers())
    return web.Response(body=shot.body, content_type=shot.content_type, headers=shot.headers())


async def tree(request: web.Request) -> web.Response:
    backend = request.app[BACKEND]
    windows = await backend.windows()
    return json_ok(
        {
            "displays": [_display_json(d) for d in backend.displays()],
            "windows": [w.to_json() for w in windows],
            "focused": next((w.id for w in windows if w.focused), None),
        }
    )


async def window_focus(request: web.Request) -> web.Response:
    await request.app[BACKEND].focus_window(request.match_info["id"])
    return json_ok({"ok": True, "id": request.match_info["id"], "action": "focus"})


async def window_close(request: web.Request) -> web.Response:
    await request.app[BACKEND].close_window(request.match_info["id"])
    return json_ok({"ok": True, "id": request.match_info["id"], "action": "close"})


async def window_move(request: web.Request) -> web.Response:
    req = await read_body(request, MoveWindowRequest)
    backend = request.app[BACKEND]
    display = Planner(backend).display(req.display)
    await backend.move_window(request.match_info["id"], display)
    return json_ok({"ok": True, "id": request.match_info["id"], "action": "move", "display": display.id})


# -- input --------------------------------------------------------------------------


# What one input request may take: its pauses (interval_ms, duration_ms) are checked
# against this before anything is sent; the whole request, however slow the keymap
# uploads, stops here.
INPUT_DEADLINE_S = 60.0


class _Gone(Exception):
    """The client went away: the rest of its input is not sent."""


# Input's route bound: the deadline above, then letting go of what it held and answering.
INPUT_LONGEST = Longest(INPUT_DEADLINE_S + 10)


async def _run(request: web.Request, steps: list[Step]) -> None:
    """Apply ``steps`` slice by slice (``actions.slices``), taking the input lock for each
    slice only, so that concurrent requests take turns (in the order they asked: the
    lock is first come, first served) and a long one cannot hold everyone up. A client
    that disconnects stops its input at the next slice; a request that overruns
    INPUT_DEADLINE_S stops there too (504). Either way every key and button it pressed
    and had not released is released."""
    backend, lock = request.app[BACKEND], request.app[INPUT_LOCK]
    if planned_seconds(steps) > INPUT_DEADLINE_S:
        raise InvalidRequestError(f"this input would take over {INPUT_DEADLINE_S:g} s (its pauses alone); "
                                  "send it in several requests", code="too_long")
    deadline = time.monotonic() + INPUT_DEADLINE_S
    done: list[Step] = []
    try:
        for part in slices(steps):
            if client_left(request):
                raise _Gone()
            if time.monotonic() > deadline:
                raise DeadlineExceededError(f"input did not finish within {INPUT_DEADLINE_S:g} s; "
                                            f"{len(done)} of {len(steps)} steps were sent")
            if len(part) == 1 and isinstance(part[0], Pause):
                await asyncio.sleep(part[0].seconds)
                continue
            async with lock:
                await execute(backend, part)
            done += part
    except BaseException as exc:
        keys, buttons = left_down(done)
        if keys or buttons:
            async with lock:
                await execute(backend, [Keys(tuple(KeyEvent(k, False) for k in reversed(keys))),
                                        *(Press(b, False) for b in buttons)])
        if not isinstance(exc, _Gone):
            raise


async def pointer(request: web.Request) -> web.Response:
    req = await read_body(request, PointerRequest)
    backend = request.app[BACKEND]
    steps = plan_pointer(Planner(backend), req)
    started = time.perf_counter()
    await _run(request, steps)
    _count(request, "pointer", [req.action])
    return json_ok(_receipt(backend, req.action, started))


async def keyboard(request: web.Request) -> web.Response:
    req = await read_body(request, KeyboardRequest)
    backend = request.app[BACKEND]
    steps = plan_keyboard(Planner(backend), req)
    started = time.perf_counter()
    await _run(request, steps)
    _count(request, "keyboard", [req.action])
    return json_ok(_receipt(backend, req.action, started))


async def release_input(request: web.Request) -> web.Response:
    """Let go of every key and button deskbox holds (a session reset calls this)."""
    async with request.app[INPUT_LOCK]:
        await request.app[BACKEND].release_input()
    return json_ok({"ok": True, "action": "release"})


def _pointer_json(backend: Backend) -> dict | None:
    pos = backend.pointer_position()
    return None if pos is None else {"display": pos[0], "x": pos[1], "y": pos[2]}


async def pointer_position(request: web.Request) -> web.Response:
    """Where desktopd last put the pointer, display-local device pixels; nulls until
    it has moved the pointer (it only knows what it did itself)."""
    return json_ok(_pointer_json(request.app[BACKEND]) or {"display": None, "x": None, "y": None})


def _count(request: web.Request, device: str, actions: list[str]) -> None:
    """Count input once ``_run`` returned: a request refused, or stopped at its deadline, is not."""
    for action in actions:
        request.app[DESKTOPD_METRICS].inputs.labels(device, action).inc()


def _receipt(backend: Backend, action: str, started: float) -> dict:
    return {
        "ok": True,
        "action": action,
        "pointer": _pointer_json(backend),
        "ms": round((time.perf_counter() - started) * 1000, 2),
    }


# -- compatibility with the desktopd API existing clients call ---------------------


# Compatibility action names -> (pointer action, click count, button or None to keep).
_COMPAT_POINTER = {
    "tap": ("click", 1, None),
    "click": ("click", 1, None),
    "double_tap": ("click", 2, None),
    "double_click": ("click", 2, None),
    "right_click": ("click", 1, "right"),
    "move": ("move", 1, None),
    "down": ("down", 1, None),
    "up": ("up", 1, None),
    "scroll": ("scroll", 1, None),
}


def _compat_pointer(planner: Planner, kind: str, **fields) -> list[Step]:
    action, count, button = _COMPAT_POINTER[kind]
    if button is not None:
        fields["button"] = button
    if action != "scroll":
        fields.pop("dx", None), fields.pop("dy", None)
    try:
        req = PointerRequest(action=action, count=count, **fields)
    except ValueError as exc:
        raise InvalidRequestError(f"bad {kind} event: {exc}", code="validation_error") from exc
    return plan_pointer(planner, req)


async def tablet(request: web.Request) -> web.Response:
    req = await read_body(request, TabletRequest)
    planner = Planner(request.app[BACKEND])
    await _run(request, _compat_pointer(planner, req.action, display=req.display, x=req.x, y=req.y))
    _count(request, "pointer", [req.action])
    return web.Response(status=204)


async def tablet_event(request: web.Request) -> web.Response:
    req = await read_body(request, TabletEventsRequest)
    planner = Planner(request.app[BACKEND])
    steps: list[Step] = []
    for e in req.events:
        steps += _compat_pointer(planner, e.type, display=e.display, x=e.x, y=e.y, button=e.button, dx=e.dx, dy=e.dy)
    await _run(request, steps)
    _count(request, "pointer", [e.type for e in req.events])
    return web.Response(status=204)


async def keyboard_event(request: web.Request) -> web.Response:
    req = await read_body(request, KeyboardEventsRequest)
    planner = Planner(request.app[BACKEND])
    events: list[KeyEvent] = []
    for event in req.events:
        try:
            key = parse_key(event.keysym)
        except UnknownKey as exc:
            raise InvalidRequestError(str(exc), code="unknown_key") from exc
        if event.state in ("down", "press"):
            events.append(KeyEvent(key.keysym, True))
        if event.state in ("up", "press"):
            events.append(KeyEvent(key.keysym, False))
    planner.check_keysyms(events)
    await _run(request, [Keys(tuple(events))])
    _count(request, "keyboard", [event.state for event in req.events])
    return web.Response(status=204)


async def openapi(request: web.Request) -> web.Response:
    return json_ok(openapi_document("desktopd", __version__, ROUTES))


ROUTES = [
    Route("GET", "/api/v1/health", health, "Liveness and what this desktopd drives", answer=DesktopdHealth),
    Route("GET", "/health", health, "Alias of /api/v1/health", answer=DesktopdHealth),
    Route("GET", "/metrics", serve_metrics, "Prometheus metrics: requests per route, input actions, screenshots",
          responses="text/plain"),
    Route("GET", "/api/v1/displays", displays, "Displays: layout bounds, scale, device pixel size", answer=DisplayList),
    Route("GET", "/api/v1/screenshot", screenshot, "One display as PNG, JPEG or WebP", query=ScreenshotQuery,
          success=(200, 304),
          responses="image/*"),
    Route("GET", "/api/v1/pointer", pointer_position, "Where desktopd last put the pointer (nulls until it has)",
          answer=PointerPosition),
    Route("POST", "/api/v1/pointer", pointer, "Move, click, press, release, drag or scroll", body=PointerRequest,
          longest=INPUT_LONGEST, answer=InputDone),
    Route("POST", "/api/v1/keyboard", keyboard, "Type text, press key combinations, hold keys", body=KeyboardRequest,
          longest=INPUT_LONGEST, answer=InputDone),
    Route("POST", "/api/v1/input/release", release_input, "Release every key and button deskbox holds"),
    Route("POST", "/api/v1/gate", gate_state, "Internal (the scene): whether to take direct input to its gate",
          body=GateStateRequest),
    Route("GET", "/api/v1/tree", tree, "Windows with display-local bounds", answer=WindowTree),
    Route("POST", "/api/v1/windows/{id}/focus", window_focus, "Focus a window", answer=WindowDone),
    Route("POST", "/api/v1/windows/{id}/close", window_close, "Ask a window to close", answer=WindowDone),
    Route("POST", "/api/v1/windows/{id}/move", window_move, "Move a window to a display", body=MoveWindowRequest,
          answer=WindowDone),
    Route("POST", "/api/v1/tablet", tablet, "Compatibility: tap at a point", body=TabletRequest, success=(204,)),
    Route("POST", "/api/v1/tablet_event", tablet_event, "Compatibility: pointer events", body=TabletEventsRequest,
          success=(204,), longest=INPUT_LONGEST),
    Route("POST", "/api/v1/keyboard_event", keyboard_event, "Compatibility: key events by keysym name",
          body=KeyboardEventsRequest, success=(204,), longest=INPUT_LONGEST),
]
