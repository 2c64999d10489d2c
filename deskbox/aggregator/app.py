"""The scene aggregator's HTTP app: one factory, one handler per route, state under typed
app keys, every client and background task opened and closed in a cleanup context."""

from __future__ import annotations

import asyncio
import contextlib
import io
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import WSMsgType, web
from PIL import Image

from ..answers import Receipt, Scene, SceneHealth
from ..api.scene import (
    ActRequest,
    MarkedScreenshotQuery,
    ResolveRequest,
    SceneQuery,
    StreamQuery,
    TextQuery,
    VlmRequest,
)
from ..common.errors import DeskboxError, InvalidRequestError
from ..common.logging import get_logger
from ..common.metrics import add_metrics, metrics_middleware, serve_metrics
from ..common.openapi import Route, add_routes, openapi_document, typing_if
from ..common.options import DEFAULT_URLS
from ..common.session_api import SessionControl
from ..common.web import WS_PROTOCOL, error_middleware, guarded, json_ok, read_body, read_query
from ..computer import COMPUTER, Computer
from ..computer import ROUTES as COMPUTER_ROUTES
from ..geometry import device_rect
from ..inspect import page_handler
from ..mcp.http import add_mcp
from ..scene.act import Actor
from ..scene.engine import SceneEngine
from ..scene.gate import Gate, interface_middleware
from ..scene.guard import Guard
from ..scene.metrics import SCENE_METRICS, SceneMetrics
from ..scene.recording import RECORDING, Recording
from ..scene.recording import ROUTES as RECORDING_ROUTES
from ..scene.replay import REPLAYER, REPLAYS, Replayer
from ..scene.replay import ROUTES as REPLAY_ROUTES
from ..scene.resolve import resolve as resolve_match
from ..scene.session import ROUTES as SESSION_ROUTES
from ..scene.session import SESSION, SessionApi
from ..scene.sources import Bridge, Desktop, LiveView
from ..scene.text import CHARS_PER_TOKEN, scene_text
from ..scene.tracing import GATE
from ..scene.tracing import ROUTES as TRACE_ROUTES
from ..scene.vlm import VLM, VisionModel
from ..toolset.routes import ROUTES as TOOLSET_ROUTES
from ..toolset.routes import TOOLSET, Toolset

__all__ = ["create_app", "SceneConfig", "Parts", "ENGINE", "__version__"]

__version__ = "0.1.0"
log = get_logger("deskbox.scene")


@dataclass(frozen=True)
class SceneConfig:
    desktopd: str = DEFAULT_URLS["desktopd"]
    bridge: str | None = DEFAULT_URLS["bridge"]
    atspi: bool = True
    ocr: str = "off"  # "off", "fill" (where native apps expose nothing) or "all" (the whole screen)
    token: str | None = None
    watch: bool = True
    control: str | None = None  # deskbox up's control socket: the session state API
    ids_file: str | None = None  # where ids are kept across restarts of the scene
    view: str | None = None  # the live view (deskbox up --view): whether a viewer has control
    traces: str | None = None  # where traces are kept (a folder per trace)
    trace_label: str | None = None  # start a trace at once, with this label (deskbox up --trace DIR)
    secret: str | None = None  # the session's internal secret, shared with desktopd
    policy: Any = None  # a deskbox.policy.Policy: budgets, redaction, actions, confirmation, audit
    # A vision model for descriptions (deskbox.scene.vlm): nothing is sent anywhere without vlm_url.
    vlm_url: str | None = None  # an OpenAI-compatible endpoint: a base (.../v1) or .../chat/completions
    vlm_model: str | None = None
    vlm_key: str | None = field(default=None, repr=False)  # DESKBOX_VLM_KEY; never shown


ENGINE = web.AppKey("engine", SceneEngine)
ACTOR = web.AppKey("actor", Actor)
DESKTOP = web.AppKey("desktop", Desktop)
STARTED = web.AppKey("started", float)
LIVE_VIEW = web.AppKey("live_view", object)  # a sources.LiveView, or None

# The inspector's page holds no data: what it shows it reads with the token.
OPEN_PATHS = frozenset({"/api/v1/health", "/health", "/api/v1/openapi.json", "/inspect"})


@dataclass(frozen=True)
class Parts:
    """What answers the routes instead of a desktop: ``deskbox up --mock``'s scenario
    (deskbox.mock), an engine, an actor and a desktop with the same methods."""

    engine: Any
    actor: Any
    desktop: Any


def create_app(config: SceneConfig | None = None, *, parts: Parts | None = None) -> web.Application:
    config = config or SceneConfig()
    app = web.Application(
        middlewares=[metrics_middleware, error_middleware, *guarded(config.token, OPEN_PATHS), interface_middleware],
        client_max_size=1024 * 1024,
    )
    native = None
    if parts is not None:
        desktop, bridge, engine = parts.desktop, None, parts.engine
        input_lock = parts.actor.input_lock
        app[ACTOR] = parts.actor
    else:
        desktop = Desktop(config.desktopd, config.token, secret=config.secret)
        bridge = Bridge(config.bridge, config.token) if config.bridge else None
        if config.atspi:
            from ..atspi.source import NativeSource

            native = NativeSource()
        ocr = fill = None
        if config.ocr in ("all", "fill"):
            from ..scene.fill import FillIn
            from ..scene.ocr import OcrChain

            chain = OcrChain.default(enabled=True)
            ocr, fill = (chain, None) if config.ocr == "all" else (None, FillIn(chain))
        engine = SceneEngine(desktop, bridge, native, ocr, ids_file=config.ids_file, fill=fill)
        input_lock = asyncio.Lock()  # /act and the provider adapters take turns at the input
        guard = Guard(config.policy) if config.policy is not None else None
        if guard is not None:
            engine.redact = guard.redact_scene
        gate = app[GATE] = Gate(engine, desktop, bridge, traces=config.traces, secret=config.secret, policy=guard)
        app[ACTOR] = Actor(engine, desktop, bridge, input_lock, gate)
        app[REPLAYER], app[REPLAYS] = Replayer(app[ACTOR]), {}
    app[ENGINE] = engine
    app[DESKTOP] = desktop
    app[TOOLSET] = Toolset(engine, app[ACTOR], desktop, bridge)
    vlm = app[VLM] = VisionModel(config.vlm_url, config.vlm_model, config.vlm_key)
    app[RECORDING] = Recording(desktop)
    control = SessionControl(config.control)
    app[COMPUTER] = Computer(desktop, bridge, engine, input_lock, app.get(GATE), session=control)
    app[STARTED] = time.time()
    live_view = app[LIVE_VIEW] = LiveView(config.view, config.token, timeout=2.0) if config.view else None
    app[SESSION] = SessionApi(control, engine)
    app[SCENE_METRICS] = engine.metrics = SceneMetrics(add_metrics(app), control)

    async def clients_ctx(app: web.Application):
        await control.start()
        await vlm.start()
        await desktop.start()
        if live_view is not None:
            await live_view.start()
        if bridge is not None:
            await bridge.start()
        yield
        await control.close()
        await desktop.close()
        if live_view is not None:
            await live_view.close()
        if bridge is not None:
            await bridge.close()
        if native is not None:
            await native.close()
        await app[RECORDING].close()
        await vlm.close()

    async def trace_ctx(app: web.Application):
        gate = app.get(GATE)
        if gate is not None and config.trace_label is not None:
            await gate.start_trace(config.trace_label or None)
        yield
        if gate is not None and gate.tracing:
            await gate.stop_trace()  # the folder is complete when the scene stops

    async def watch_ctx(app: web.Application):
        task = asyncio.create_task(engine.watch()) if config.watch else None
        yield
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await engine.id_store.save()

    app.cleanup_ctx.append(clients_ctx)
    app.cleanup_ctx.append(watch_ctx)
    app.cleanup_ctx.append(trace_ctx)
    add_routes(app, ROUTES)
    app.router.add_get("/api/v1/scene/stream", stream)
    app.router.add_get("/api/v1/openapi.json", openapi)
    add_mcp(app, desktopd=config.desktopd, bridge=config.bridge, token=config.token)  # MCP over HTTP at /mcp
    return app


# -- observation --------------------------------------------------------------------


async def health(request: web.Request) -> web.Response:
    engine = request.app[ENGINE]
    last = engine.last
    return json_ok({
        "ok": True,
        "version": __version__,
        "pid": os.getpid(),
        "uptime_s": round(time.time() - request.app[STARTED], 1),
        "last_scene": {"seq": last.seq, "age_s": round(time.time() - last.timestamp, 2),
                       "sources": last.sources} if last else None,
        "session": await _session_health(request),
        "view": await _view_health(request),
        "vlm": request.app[VLM].status(),
    })


async def _view_health(request: web.Request) -> dict | None:
    """Whether a live viewer has taken control, and of which displays; None without the
    live view (or when it does not answer within a second)."""
    view = request.app[LIVE_VIEW]
    if view is None:
        return None
    try:
        status = await asyncio.wait_for(view.status(), 1.0)
    except (asyncio.TimeoutError, DeskboxError, OSError):
        return {"reachable": False, "control": None, "viewers_in_control": None}
    return {"reachable": True, "control": status["control"], "viewers_in_control": status["viewers_in_control"]}


async def _session_health(request: web.Request) -> dict | None:
    """Which of the session's parts are (re)starting and whether a reset runs; None
    outside deskbox up (or when it does not answer within a second)."""
    control = request.app[SESSION].control
    if not control.available:
        return None
    try:
        state = await asyncio.wait_for(control.call("GET", "/session"), 1.0)
    except (asyncio.TimeoutError, DeskboxError):
        return None
    children = state.get("children", {})
    browser = children.get("chromium")
    return {"restarting": state.get("restarting"), "resetting": state.get("resetting"),
            "resets": state.get("resets"),
            "restarts": {name: c["restarts"] for name, c in children.items() if c.get("restarts")},
            # A browser that ended on its own came back with its tabs; what lived only in
            # its pages (form input, scroll positions) did not.
            "browser": None if browser is None else {"restarts": browser["restarts"], "last_exit": browser["last_exit"],
                                                     "state": browser["state"]}}


async def get_scene(request: web.Request) -> web.Response:
    q = read_query(request, SceneQuery)
    scene = await request.app[ENGINE].scene(q.mode)
    scene.check_filters(q.display, q.window)
    return web.Response(body=orjson.dumps(scene.to_json(interactive=q.interactive, display=q.display,
                                                        window=q.window)),
                        content_type="application/json")


async def get_text(request: web.Request) -> web.Response:
    q = read_query(request, TextQuery)
    if q.max_chars is not None and q.max_tokens is not None:
        raise InvalidRequestError("give max_chars or max_tokens, not both")
    scene = await request.app[ENGINE].scene(q.mode)
    scene.check_filters(q.display, q.window)
    budget = q.max_chars if q.max_chars is not None else (
        math.floor(q.max_tokens * CHARS_PER_TOKEN) if q.max_tokens is not None else None)
    elements = [e for e in scene.ax if (not q.interactive or e.interactive)
                and (q.display is None or e.display_id == q.display)
                and (q.window is None or e.window_id == q.window)]
    ocr = [o for o in scene.ocr if q.display is None or o.display_id == q.display]
    text = scene_text(scene, elements, ocr, max_chars=budget, offscreen=q.offscreen)
    return web.Response(text=text, content_type="text/plain", headers={"X-Deskbox-Scene-Seq": str(scene.seq)})


async def post_vlm(request: web.Request) -> web.Response:
    req = await read_body(request, VlmRequest)
    request.app[ENGINE].set_vlm(req.vlm_scene, req.vlm_elements)
    return json_ok({"ok": True})


async def screenshot(request: web.Request) -> web.Response:
    q = read_query(request, MarkedScreenshotQuery)
    engine = request.app[ENGINE]
    gate = request.app.get(GATE)
    guard = gate.policy if gate is not None else None
    if guard is not None:
        guard.budgets.charge_screenshot()
    blur = guard is not None and guard.blurs
    params = {"display": str(q.display), "format": "png" if q.marks or blur else q.format}
    if not q.marks and not blur:
        body, headers = await request.app[DESKTOP].screenshot(params)
        return web.Response(body=body, content_type=headers.get("Content-Type", "image/png"))
    scene = await engine.scene("active")
    scene.check_filters(q.display, None)
    body, _ = await request.app[DESKTOP].screenshot(params)
    marks = [(e.id, device_rect(e.bbox)) for e in scene.ax
             if e.display_id == q.display and e.bbox is not None and e.visibility in ("visible", "partial")
             and (q.all or e.interactive)] if q.marks else []
    from ..scene.marks import draw_marks

    def render() -> bytes:
        image = Image.open(io.BytesIO(body)).convert("RGB")
        if blur:
            image = guard.blur_image(image, q.display, scene)  # before the marks: they stay legible
        out = draw_marks(image, marks) if marks else image
        buf = io.BytesIO()
        if q.format == "jpeg":
            out.save(buf, "JPEG", quality=85)
        else:
            out.save(buf, "PNG", compress_level=1)
        return buf.getvalue()

    data = await asyncio.to_thread(render)
    return web.Response(body=data, content_type=f"image/{q.format}",
                        headers={"X-Deskbox-Scene-Seq": str(scene.seq), "X-Deskbox-Marks": str(len(marks))})


async def act(request: web.Request) -> web.Response:
    req = await read_body(request, ActRequest)
    return json_ok(await request.app[ACTOR].act(req))


async def post_resolve(request: web.Request) -> web.Response:
    req = await read_body(request, ResolveRequest)
    scene = await request.app[ENGINE].scene("active")
    best, runner, ambiguous = resolve_match(req.role, req.name, req.bbox, elements=scene.ax, ocr=scene.ocr,
                                            display=req.display)
    return json_ok({
        "match": best.to_json() if best else None,
        "runner_up": runner.to_json() if runner else None,
        "ambiguous": ambiguous,
        "scene_seq": scene.seq,
    })


async def stream(request: web.Request) -> web.StreamResponse:
    """``WS /api/v1/scene/stream``: the current scene at once, then every new one. The
    subscription starts before the current scene is read, so that nothing built in
    between is missed; a scene already sent (the current one, published meanwhile) is
    not sent twice."""
    q = read_query(request, StreamQuery)
    engine = request.app[ENGINE]
    ws = web.WebSocketResponse(heartbeat=30, protocols=(WS_PROTOCOL,))
    await ws.prepare(request)
    queue = engine.subscribe()
    try:
        scene = await engine.scene("idle")
        await ws.send_bytes(orjson.dumps(scene.to_json(interactive=q.interactive, display=q.display, window=q.window)))
        sent = scene.seq
        receiver = asyncio.ensure_future(ws.receive())
        while not ws.closed:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter, receiver}, return_when=asyncio.FIRST_COMPLETED)
            if receiver in done:
                getter.cancel()
                msg = receiver.result()
                if msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
                    break
                receiver = asyncio.ensure_future(ws.receive())
                continue
            scene = getter.result()
            if scene.seq <= sent:
                continue
            sent = scene.seq
            await ws.send_bytes(orjson.dumps(scene.to_json(interactive=q.interactive, display=q.display,
                                                           window=q.window)))
        receiver.cancel()
    finally:
        engine.unsubscribe(queue)
    return ws


async def openapi(request: web.Request) -> web.Response:
    return json_ok(openapi_document("deskbox scene aggregator", __version__, ROUTES))


ROUTES = [
    Route("GET", "/api/v1/health", health, "Liveness and the newest scene's age and sources", answer=SceneHealth),
    Route("GET", "/health", health, "Alias of /api/v1/health", answer=SceneHealth),
    Route("GET", "/metrics", serve_metrics, "Prometheus metrics: requests per route, scene builds, actions",
          responses="text/plain"),
    Route("GET", "/api/v1/scene", get_scene, "The Scene JSON (display-local device pixels, stable ids)",
          query=SceneQuery, answer=Scene),
    Route("GET", "/api/v1/scene/text", get_text, "The scene as compact prompt text, within a budget",
          query=TextQuery, responses="text/plain"),
    Route("POST", "/api/v1/scene/vlm", post_vlm, "Set vlm_scene / vlm_elements, carried into later scenes",
          body=VlmRequest),
    Route("POST", "/api/v1/act", act, "Act on an element by id with real input; answers with a receipt",
          body=ActRequest, stops_when_client_leaves=True, longest=typing_if("text"), answer=Receipt),
    Route("POST", "/api/v1/resolve", post_resolve, "Best current element for a role, name and place",
          body=ResolveRequest),
    Route("GET", "/api/v1/screenshot", screenshot, "A display's screenshot, with element ids drawn on (marks=1)",
          query=MarkedScreenshotQuery, responses="image/*"),
    Route("GET", "/inspect", page_handler(), "The inspector: the live screen with the scene's elements over it",
          responses="text/html"),
    *TOOLSET_ROUTES,
    *RECORDING_ROUTES,
    *TRACE_ROUTES,
    *REPLAY_ROUTES,
    *COMPUTER_ROUTES,
    *SESSION_ROUTES,
]
