"""OS Screen Observer's REST API (v1 and v2) on deskbox: ``deskbox up --observer`` serves
it on port 5001, so that agents and tool schemas written for it work unchanged.

Every route is a mapping onto the scene aggregator's toolset and desktopd, through
deskbox's own client: windows by index (focused first, then by title), element ids are
the Scene's, bounds are desktop-wide layout pixels (``shapes``). v1 routes answer errors
as ``{"error": "message"}`` and ``/api/action`` as ``{"success": false, "error": ...}``,
as its clients read them; v2 routes as ``{"ok": false, "success": false, "error": {code,
message, recoverable, suggested_next_tool, context}}`` with its codes. Traces, replay,
budgets, redaction and confirmation are the scene's (its gate); loading a scenario over
the API answers 501 (a mock session loads its scenario as it starts)."""

from __future__ import annotations

import base64
import io
import itertools
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from aiohttp import web
from PIL import Image

from ..client import Client, DeskboxError
from ..common.errors import InvalidRequest, NotFoundError, NotServed, ServiceError
from ..common.metrics import add_metrics, metrics_middleware, serve_metrics
from ..common.openapi import Route, add_routes, openapi_document
from ..common.web import auth_middleware, error_middleware, read_body, read_query, validate
from . import inspector, shapes
from .models import (
    ActionRequest,
    AssertRequest,
    DescriptionQuery,
    DragRequest,
    ElementRequest,
    FindQuery,
    HoverRequest,
    KeyRequest,
    ObserveQuery,
    ProposeRequest,
    ReplayIdRequest,
    ReplayStartRequest,
    SketchQuery,
    SnapshotDiffRequest,
    StructureQuery,
    TraceStartRequest,
    TypeRequest,
    WaitIdleRequest,
    WaitRequest,
    WindowQuery,
)

__all__ = ["create_app", "ObserverConfig", "__version__", "PROTOCOL_VERSION"]

__version__ = "0.1.0"
PROTOCOL_VERSION = 2
OPEN_PATHS = frozenset({"/api/healthz", "/api/openapi.json"}) | inspector.PAGE_PATHS
_LEGACY = frozenset({"/api/windows", "/api/structure", "/api/description", "/api/sketch", "/api/screenshot"})


@dataclass(frozen=True)
class ObserverConfig:
    scene: str = "http://127.0.0.1:8000"
    desktopd: str = "http://127.0.0.1:8080"
    bridge: str | None = "http://127.0.0.1:8122"
    token: str | None = None  # asked of callers, and sent to the services


class Observer:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.steps = itertools.count(1)
        self.step_count = 0
        self.started = time.time()

    def step(self) -> int:
        self.step_count += 1
        return next(self.steps)

    async def scene(self, mode: str = "active") -> dict[str, Any]:
        return await self.client.scene(mode)

    async def window(self, q: Any, scene: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """(the scene, the window ``window_uid`` or ``window_index`` names, else the focused
        one, else the first)."""
        scene = scene or await self.scene()
        listed = shapes.windows(scene)
        uid, index = getattr(q, "window_uid", None), getattr(q, "window_index", None)
        if uid is not None:
            found = next((w for w in listed if w["window_uid"] == uid), None)
        elif index is not None:
            found = listed[index] if index < len(listed) else None
        else:
            found = listed[0] if listed else None
        if found is None:
            raise NotFoundError(f"no window {uid or index}; GET /api/windows lists them ({len(listed)} now)",
                                code="unknown_window", context={"window_uid": uid, "window_index": index})
        return scene, found

    async def target(self, req: ElementRequest) -> tuple[dict, dict, dict]:
        """(scene, window, element) for ``element_id`` or ``selector`` within the window."""
        scene, window = await self.window(req) if (req.window_uid or req.window_index is not None) else (
            await self.scene(), None)
        if req.element_id is not None:
            element = next((e for e in scene.get("ax") or () if e["id"] == req.element_id), None)
        else:
            found = await self.client.find(req.selector)
            matches = [m for m in found["matches"] if m["kind"] == "element"
                       and (window is None or m["window_id"] == window["window_uid"])]
            element = matches[0] if matches else None
        if element is None:
            what = req.element_id or req.selector
            raise NotFoundError(f"no element matches {what!r}", code="element_not_found",
                                suggested_next_tool="find_element",
                                context={"selector": req.selector, "element_id": req.element_id,
                                         "window_uid": window["window_uid"] if window else None})
        if window is None:
            window = next((w for w in shapes.windows(scene) if w["window_uid"] == element.get("window_id")), None)
        return scene, window or {}, element


OBSERVER = web.AppKey("observer", Observer)


def _json(body: dict[str, Any], status: int = 200) -> web.Response:
    return web.json_response(body, status=status)


def _ok(**body: Any) -> web.Response:
    return _json({"ok": True, "success": True, **body})


@web.middleware
async def oso_errors(request: web.Request, handler) -> web.StreamResponse:
    """Errors in the shapes OS Screen Observer's clients read (see the module docstring)."""
    try:
        return await handler(request)
    except (ServiceError, DeskboxError) as exc:
        status = getattr(exc, "status", None) or 503
        code = exc.code
        oso = shapes.oso_code(code, status)
        context = dict(getattr(exc, "context", None) or {})
        context["deskbox_code"] = code
        if getattr(exc, "details", None) is not None:
            context["details"] = exc.details
        if request.path == "/api/action":
            return _json({"success": False, "error": exc.message, "code": oso}, status)
        if request.path in _LEGACY:
            return _json({"error": exc.message, "code": oso, "context": context}, status)
        return _json({"ok": False, "success": False, "error": {
            "code": oso, "message": exc.message, "recoverable": bool(exc.recoverable),
            "suggested_next_tool": getattr(exc, "suggested_next_tool", None), "context": context}}, status)


def create_app(config: ObserverConfig | None = None) -> web.Application:
    config = config or ObserverConfig()
    app = web.Application(middlewares=[metrics_middleware, error_middleware, auth_middleware(config.token, OPEN_PATHS),
                                       oso_errors], client_max_size=1024 * 1024)
    add_metrics(app)
    client = Client(config.scene, config.desktopd, config.bridge, config.token, timeout=120, interface="observer")
    app[OBSERVER] = Observer(client)
    app[inspector.UPSTREAM] = inspector.Upstream(client, config.token)

    async def client_ctx(app: web.Application):
        yield
        await client.close()

    app.cleanup_ctx.append(client_ctx)
    add_routes(app, ROUTES)
    app.router.add_get(inspector.PREFIX + "/api/v1/scene/stream", inspector.stream)
    return app


# -- v1 ----------------------------------------------------------------------------------


async def list_windows(request: web.Request) -> web.Response:
    listed = shapes.windows(await request.app[OBSERVER].scene())
    return _json({"ok": True, "count": len(listed), "is_mock": False, "windows": listed})


async def get_structure(request: web.Request) -> web.Response:
    q = read_query(request, StructureQuery)
    obs = request.app[OBSERVER]
    scene, window = await obs.window(q, await obs.scene("agent-turn"))
    try:
        tree, elements, nodes, truncated = shapes.structure(
            scene, window, roles=_roles(q.roles), exclude_roles=_roles(q.exclude_roles), name_regex=q.name_regex,
            visible_only=q.visible_only, max_text_len=q.max_text_len, prune_empty=q.prune_empty,
            max_nodes=q.max_nodes)
    except Exception as exc:  # (a bad name_regex)
        raise InvalidRequest(f"name_regex: {exc}", code="invalid_regex") from None
    observed = await obs.client.observe(window=window["window_uid"])
    return _json({"ok": True, "window": window["title"], "window_uid": window["window_uid"],
                  "element_count": elements, "node_count": nodes, "tree": tree, "tree_hash": observed["tree_hash"],
                  "tree_token": observed["token"], "truncated": truncated, "next_cursor": None})


def _roles(listed: str | None) -> set[str] | None:
    return {r.strip().lower() for r in listed.split(",") if r.strip()} if listed else None


async def get_description(request: web.Request) -> web.Response:
    """A window in prose, as OS Screen Observer's combined description: ``accessibility``
    (the scene's prose of its elements; ``description`` repeats it) and ``vlm``, the
    session's vision model's, when it has one. ``mode`` picks the sources: ``accessibility``
    and ``ocr`` skip the model (a paid call, and the one source that sends the window off
    the machine); ``vlm`` insists on it (its failures are the answer: 409
    ``vlm_not_configured`` without a model, 503 ``vlm_unavailable``, 429 for its budget);
    ``combined`` or none adds it when there is a model, a failure of the model then said in
    ``vlm_error`` beside a null ``vlm``. ``mode`` and ``effective_mode`` say "combined"
    whatever was asked, as its clients expect; no OCR text is added."""
    q = read_query(request, DescriptionQuery)
    obs = request.app[OBSERVER]
    _, window = await obs.window(q)
    uid = window["window_uid"]
    answer: dict[str, Any] = {"ok": True, "mode": "combined", "effective_mode": "combined", "window": window["title"]}
    said: dict[str, Any] | None = None
    if q.mode in (None, "combined", "vlm"):
        try:
            said = await obs.client.description(window=uid, vlm=True)
            answer.update(vlm=said["vlm"], vlm_tokens=said["vlm_tokens"], vlm_model=said["vlm_model"])
        except DeskboxError as exc:
            if q.mode == "vlm" or exc.code not in ("vlm_not_configured", "vlm_unavailable", "budget_exceeded"):
                raise
            if exc.code != "vlm_not_configured":  # (a model there is, that did not answer)
                answer.update(vlm=None, vlm_tokens=None, vlm_model=None,
                              vlm_error={"code": exc.code, "message": exc.message})
    text = said["text"] if said is not None else await obs.client.description(window=uid)
    return _json({**answer, "accessibility": text, "description": text})


async def get_sketch(request: web.Request) -> web.Response:
    q = read_query(request, SketchQuery)
    obs = request.app[OBSERVER]
    _, window = await obs.window(q)
    drawn = await obs.client.request("scene", "GET", "/api/v1/sketch", query={
        "window": window["window_uid"], "cols": q.grid_width, "rows": q.grid_height})
    return _json({"ok": True, "window": window["title"], "grid_width": q.grid_width, "grid_height": q.grid_height,
                  "sketch": drawn["sketch"], "legend": drawn["legend"]})


async def get_screenshot(request: web.Request) -> web.Response:
    q = read_query(request, WindowQuery)
    obs = request.app[OBSERVER]
    if q.window_uid is None and q.window_index is None:
        png = await obs.client.screenshot(0)
        return _json({"ok": True, "window": None, "format": "png", "encoding": "base64",
                      "data": base64.b64encode(png).decode()})
    scene, window = await obs.window(q)
    box = window["physical_bounds"]
    if box is None:
        raise InvalidRequest(f"window {window['window_uid']} has no box on a display", code="window_gone")
    png = await obs.client.screenshot(window["monitor_index"] or 0)
    image = Image.open(io.BytesIO(png))
    crop = image.crop((max(0, box["x"]), max(0, box["y"]), min(image.width, box["x"] + box["width"]),
                       min(image.height, box["y"] + box["height"])))
    out = io.BytesIO()
    crop.save(out, "PNG", compress_level=1)
    return _json({"ok": True, "window": window["title"], "format": "png", "encoding": "base64",
                  "data": base64.b64encode(out.getvalue()).decode()})


async def post_action(request: web.Request) -> web.Response:
    req = await read_body(request, ActionRequest)
    obs = request.app[OBSERVER]
    obs.step()
    if req.action in ("click_at", "scroll"):
        displays = shapes.displays_of(await obs.scene("idle"))
        at = None
        if req.x is not None and req.y is not None:
            at = shapes.to_display(displays, req.x, req.y)
            if at is None:
                raise InvalidRequest(f"({req.x:g}, {req.y:g}) is on no monitor (GET /api/monitors)",
                                     code="off_screen")
        if req.action == "click_at":
            await obs.client.pointer("click", at[1], at[2], display=at[0], button=req.button,
                                     count=2 if req.double else 1)
            return _json({"success": True, "action": req.action, "x": req.x, "y": req.y})
        # (Its clicks are positive up; desktopd's notches positive down.)
        if at is not None:
            await obs.client.pointer("scroll", at[1], at[2], display=at[0], dy=-req.clicks)
        else:
            await obs.client.pointer("scroll", dy=-req.clicks)
        return _json({"success": True, "action": req.action, "x": req.x, "y": req.y, "clicks": req.clicks})
    if req.action == "type":
        await obs.client.keyboard("type", text=req.value)
    else:
        await obs.client.keyboard("key", keys=req.value)
    return _json({"success": True, "action": req.action, "value": req.value})


# -- v2: discovery -------------------------------------------------------------------------


async def healthz(request: web.Request) -> web.Response:
    obs = request.app[OBSERVER]
    return _ok(uptime_s=round(time.time() - obs.started, 1), step_count=obs.step_count, adapter="deskbox",
               version=__version__)


async def capabilities(request: web.Request) -> web.Response:
    return _ok(platform="linux-wayland", adapter="deskbox", version=__version__, protocol_version=PROTOCOL_VERSION,
               supports={"accessibility_tree": True, "uia_invoke": True, "occlusion_detection": True, "drag": True,
                         "ocr": True, "vlm": await _has_model(request), "redaction": True, "scenarios": False,
                         "tracing": True, "replay": True, "image_blur": True},
               config={"tree_max_depth": None, "ascii_grid": {"width": 72, "height": 24}})


async def _has_model(request: web.Request) -> bool:
    """Whether the scene has a vision model (its health says); False when it does not answer."""
    try:
        health = await request.app[OBSERVER].client.health("scene")
    except DeskboxError:
        return False
    return bool((health.get("vlm") or {}).get("configured"))


async def monitors(request: web.Request) -> web.Response:
    scene = await request.app[OBSERVER].scene("idle")
    out = []
    for d in shapes.displays_of(scene):
        logical = {"x": round(d.layout.x), "y": round(d.layout.y), "width": round(d.layout.w),
                   "height": round(d.layout.h)}
        out.append({"index": d.id, "name": d.name, "primary": d.primary, "bounds": logical, "scale_factor": d.scale,
                    "logical_bounds": logical,
                    "physical_bounds": {"x": 0, "y": 0, "width": d.size[0], "height": d.size[1]}})
    return _ok(monitors=out)


def _match(m: dict, displays: dict) -> dict[str, Any]:
    return {"element_id": m["id"], "bounds": shapes.bounds(displays, m.get("display_id"), m.get("bbox")),
            "name": m.get("name"), "role": m.get("role"), "window_uid": m.get("window_id")}


async def find_element(request: web.Request) -> web.Response:
    q = read_query(request, FindQuery)
    obs = request.app[OBSERVER]
    scene, window = await obs.window(q) if (q.window_uid or q.window_index is not None) else (await obs.scene(), None)
    found = await obs.client.find(q.selector, limit=1000)
    matches = [m for m in found["matches"] if window is None or m.get("window_id") == window["window_uid"]]
    if not matches:
        raise NotFoundError(f"no element matches selector {q.selector!r}", code="element_not_found",
                            suggested_next_tool="get_element_tree",
                            context={"selector": q.selector, "window_uid": window and window["window_uid"]})
    displays = {d.id: d for d in shapes.displays_of(scene)}
    first = _match(matches[0], displays)
    return _ok(window_uid=first["window_uid"], element_id=first["element_id"], selector=q.selector,
               bounds=first["bounds"], ambiguous_matches=len(matches) > 1,
               all_matches=[_match(m, displays) for m in matches[:100]])


# -- v2: element actions -----------------------------------------------------------------------


async def _receipt(request: web.Request, action: str, act: dict[str, Any], *, observe: bool = False,
                   req: ElementRequest | None = None) -> web.Response:
    """Resolve the target, act through /act_and_observe, answer OS Screen Observer's receipt."""
    req = req or await read_body(request, ElementRequest)
    obs = request.app[OBSERVER]
    step = obs.step()
    started = time.monotonic()
    scene, window, element = await obs.target(req)
    displays = {d.id: d for d in shapes.displays_of(scene)}
    target = {"window_uid": window.get("window_uid"), "element_id": element["id"], "selector": req.selector,
              "bounds": shapes.bounds(displays, element.get("display_id"), element.get("bbox"))}
    if req.dry_run:
        return _ok(step_id=step, caused_by_step_id=None, action=action, dry_run=True, target=target, before=None,
                   after=None, changed=False, new_dialogs=[], duration_ms=0)
    body = {"target": element["id"], "settle_ms": req.wait_after_ms, **act}
    if req.since is not None:
        body["since"] = req.since
    if req.confirm_token is not None:
        body["confirm_token"] = req.confirm_token
    done = await obs.client.request("scene", "POST", "/api/v1/act_and_observe",
                                    body={**body, "format": "compact"})
    changes = done["changes"] or {}
    focus = changes.get("focus") or {}
    dialogs = [e["id"] for e in changes.get("added", ()) if e.get("role") in ("dialog", "alert")]
    dialogs += [w["id"] for w in changes.get("windows_added", ())]
    answer = {"step_id": step, "caused_by_step_id": None, "action": action, "dry_run": False, "target": target,
              "before": {"tree_hash": done["base_tree_hash"], "focused_selector": focus.get("from")},
              "after": {"tree_hash": done["tree_hash"], "focused_selector": focus.get("to")},
              "changed": bool(done["receipt"].get("changed")) or not done["unchanged"], "new_dialogs": dialogs,
              "duration_ms": round((time.monotonic() - started) * 1000)}
    if observe:
        answer["observation"] = {"format": "custom", "changes": changes, "tree_token": done["token"],
                                 "base_token": done["base_token"], "unchanged": done["unchanged"],
                                 "tree_hash": done["tree_hash"]}
    return _ok(**answer)


def _element_route(action: str, act: Callable[[ElementRequest], dict[str, Any]],
                   observe: bool = False) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        req = await read_body(request, ElementRequest)
        return await _receipt(request, action, act(req), observe=observe, req=req)
    handler.__name__ = f"element_{action}"
    return handler


def _click(req: ElementRequest) -> dict[str, Any]:
    if req.button == "right":
        return {"action": "right_click"}
    return {"action": "double_click" if req.count >= 2 else "click"}


def _set_value(req: ElementRequest) -> dict[str, Any]:
    if req.value is None:
        raise InvalidRequest("set_value needs value")
    return {"action": "set_value", "text": req.value} if req.clear_first else {"action": "type", "text": req.value}


def _select(req: ElementRequest) -> dict[str, Any]:
    if (req.option_name is None) == (req.option_index is None):
        raise InvalidRequest("select needs option_name or option_index")
    return ({"action": "select", "option": req.option_name} if req.option_name is not None
            else {"action": "select", "option_index": req.option_index})


def _key(req: ElementRequest) -> dict[str, Any]:
    if not req.keys:
        raise InvalidRequest("key needs keys")
    return {"action": "key", "keys": req.keys}


async def hover(request: web.Request) -> web.Response:
    req = await read_body(request, HoverRequest)
    obs = request.app[OBSERVER]
    if req.x is not None:
        obs.step()
        at = shapes.to_display(shapes.displays_of(await obs.scene("idle")), req.x, req.y)
        if at is None:
            raise InvalidRequest(f"({req.x:g}, {req.y:g}) is on no monitor", code="off_screen")
        await obs.client.pointer("move", at[1], at[2], display=at[0])
        return _ok(action="hover", x=req.x, y=req.y)
    element = validate(ElementRequest, {"element_id": req.element_id, "selector": req.selector,
                                        "window_uid": req.window_uid, "window_index": req.window_index})
    return await _receipt(request, "hover", {"action": "hover"}, req=element)


async def drag(request: web.Request) -> web.Response:
    req = await read_body(request, DragRequest)
    obs = request.app[OBSERVER]
    scene = await obs.scene()
    displays = shapes.displays_of(scene)

    async def point(end) -> tuple[int, float, float]:
        if end.x is not None:
            at = shapes.to_display(displays, end.x, end.y)
            if at is None:
                raise InvalidRequest(f"({end.x:g}, {end.y:g}) is on no monitor", code="off_screen")
            return at
        _, _, e = await obs.target(ElementRequest(element_id=end.element_id, selector=end.selector,
                                                  window_uid=req.window_uid, window_index=req.window_index))
        if e.get("bbox") is None:
            raise InvalidRequest(f"{e['id']} has no box", code="not_visible")
        x, y, w, h = e["bbox"]
        return e["display_id"], x + w / 2, y + h / 2

    start, end = await point(req.from_), await point(req.to)
    if start[0] != end[0]:
        raise InvalidRequest("a drag stays on one monitor", code="cross_display")
    obs.step()
    await obs.client.pointer("drag", start[1], start[2], display=start[0], path=[(end[1], end[2])],
                             modifiers=req.modifiers or None, duration_ms=round(req.duration_s * 1000))
    return _ok(action="drag", dry_run=False)


# -- v2: observing, waiting, asserting ---------------------------------------------------------


async def observe(request: web.Request) -> web.Response:
    q = read_query(request, ObserveQuery)
    obs = request.app[OBSERVER]
    scene, window = await obs.window(q)
    form = "json-patch" if q.format == "json-patch" else "compact"
    seen = await obs.client.observe(q.since, window=window["window_uid"], format=form)
    if seen["format"] == "full":
        tree, *_ = shapes.structure(scene, window)
        return _ok(format="full", tree=tree, tree_token=seen["token"], base_token=None, tree_hash=seen["tree_hash"],
                   window_uid=window["window_uid"])
    return _ok(format=q.format, changes=seen["changes"], tree_token=seen["token"], base_token=seen["base_token"],
               unchanged=seen["unchanged"], tree_hash=seen["tree_hash"], window_uid=window["window_uid"])


def _condition(c: dict[str, Any]) -> dict[str, Any]:
    """A wait condition as the toolset takes it (the same names but two)."""
    c = dict(c)
    if c.get("type") == "focused_changes":
        c["type"] = "focus_changes"
    if c.get("type") == "window_appears" and "title_regex" not in c and "app" not in c:
        c["title_regex"] = ".*"
    return c


async def _wait(obs: Observer, conditions: list[dict], timeout_ms: int, poll_ms: int) -> web.Response:
    out = await obs.client.wait_for(conditions, timeout_ms=timeout_ms, poll_ms=poll_ms)
    if out["matched"]:
        return _ok(matched_index=out["matched_index"], matched_detail=out["observed"], elapsed_ms=out["elapsed_ms"],
                   polls=out["polls"])
    return _json({"ok": False, "success": False, "elapsed_ms": out["elapsed_ms"], "polls": out["polls"],
                  "error": {"code": "Timeout", "message": f"no condition held within {timeout_ms} ms",
                            "recoverable": True, "suggested_next_tool": "observe",
                            "context": {"last_observed": out["last_observed"]}}}, 408)


async def wait_for(request: web.Request) -> web.Response:
    req = await read_body(request, WaitRequest)
    return await _wait(request.app[OBSERVER], [_condition(c) for c in req.any_of], req.timeout_ms, req.poll_ms)


async def wait_idle(request: web.Request) -> web.Response:
    req = await read_body(request, WaitIdleRequest)
    obs = request.app[OBSERVER]
    display = 0
    if req.window_uid or req.window_index is not None:
        _, window = await obs.window(req)
        display = window["monitor_index"] or 0
    return await _wait(obs, [{"type": "screen_idle", "quiet_ms": req.quiet_ms, "display": display}], req.timeout_ms,
                       req.poll_ms)


async def _keys_and_observe(request: web.Request, path: str, body: dict, since: str | None) -> web.Response:
    obs = request.app[OBSERVER]
    step = obs.step()
    done = await obs.client.request("scene", "POST", path, body={**body, **({"since": since} if since else {})})
    return _ok(step_id=step, caused_by_step_id=None, action=done["receipt"]["action"], dry_run=False, target=None,
               before={"tree_hash": done["base_tree_hash"]}, after={"tree_hash": done["tree_hash"]},
               changed=bool(done["receipt"]["changed"]) or not done["unchanged"],
               duration_ms=done["receipt"]["elapsed_ms"],
               observation={"format": "custom", "changes": done["changes"], "tree_token": done["token"],
                            "base_token": done["base_token"], "unchanged": done["unchanged"]})


async def type_and_observe(request: web.Request) -> web.Response:
    req = await read_body(request, TypeRequest)
    return await _keys_and_observe(request, "/api/v1/type_and_observe",
                                   {"text": req.text, "settle_ms": req.wait_after_ms}, req.since)


async def key_and_observe(request: web.Request) -> web.Response:
    req = await read_body(request, KeyRequest)
    return await _keys_and_observe(request, "/api/v1/key_and_observe",
                                   {"keys": req.keys, "settle_ms": req.wait_after_ms}, req.since)


async def snapshot_save(request: web.Request) -> web.Response:
    obs = request.app[OBSERVER]
    saved = await obs.client.snapshot_save()
    return _ok(snapshot_id=saved["id"], ts=saved["created"], summary=saved["summary"])


async def snapshot_get(request: web.Request) -> web.Response:
    obs = request.app[OBSERVER]
    kept = await obs.client.snapshot(request.match_info["snapshot_id"])
    doc = kept["observation"]
    trees: dict[str, list] = {uid: [] for uid in doc["windows"]}
    for e in doc["elements"].values():
        trees.setdefault(e.get("window_id"), []).append(e)
    return _ok(windows=[{"window_uid": k, **v} for k, v in doc["windows"].items()], trees=trees,
               tree_hashes={"all": kept["tree_hash"]}, ts=kept["created"])


async def snapshot_diff(request: web.Request) -> web.Response:
    req = await read_body(request, SnapshotDiffRequest)
    obs = request.app[OBSERVER]
    form = "json-patch" if req.format == "json-patch" else "compact"
    out = await obs.client.snapshot_diff(req.a, req.b, format=form)
    changes = out["changes"]
    if form == "compact":
        per_window: dict[str, dict] = {}
        for key in ("added", "removed", "changed"):
            for e in changes[key]:
                uid = e.get("window_id") or "unknown"
                per_window.setdefault(uid, {"format": "custom", "changes": {"added": [], "removed": [], "changed": []}})
                per_window[uid]["changes"][key].append(e)
        return _ok(windows_added=[w["id"] for w in changes["windows_added"]],
                   windows_removed=[w["id"] for w in changes["windows_removed"]], per_window_changes=per_window,
                   unchanged=out["unchanged"])
    return _ok(windows_added=[], windows_removed=[], per_window_changes={"all": {"format": "json-patch",
                                                                                 "changes": changes}},
               unchanged=out["unchanged"])


async def snapshot_delete(request: web.Request) -> web.Response:
    obs = request.app[OBSERVER]
    out = await obs.client.snapshot_delete(request.match_info["snapshot_id"])
    return _ok(dropped=out["dropped"])


async def assert_state(request: web.Request) -> web.Response:
    req = await read_body(request, AssertRequest)
    predicates = []
    for p in req.predicate:
        if p.get("kind") == "screenshot_similar" and "reference_path" in p:
            raise InvalidRequest("screenshot_similar takes reference_png (base64) or a snapshot here, not a path "
                                 "on the server", code="predicate_unsupported")
        predicates.append(p)
    out = await request.app[OBSERVER].client.assert_state(predicates)
    return _ok(all_passed=out["all_passed"], results=out["results"])


async def later(request: web.Request) -> web.Response:
    raise NotServed(f"{request.path}: a scenario is loaded as the session starts (deskbox up --mock SCENARIO)",
                    context={"path": request.path})


# -- traces, replay and guard rails: the scene's, in OS Screen Observer's shapes ---------


async def trace_start(request: web.Request) -> web.Response:
    req = await read_body(request, TraceStartRequest)
    out = await request.app[OBSERVER].client.request("scene", "POST", "/api/v1/trace/start",
                                                     body={"label": req.label})
    return _ok(trace_id=out["trace_id"], started_at=out["started_at"], dir=out["dir"])


async def trace_stop(request: web.Request) -> web.Response:
    out = await request.app[OBSERVER].client.request("scene", "POST", "/api/v1/trace/stop", body={})
    return _ok(trace_id=out["trace_id"], path=out["path"], step_count=out["step_count"],
               duration_ms=out["duration_ms"])


async def trace_status(request: web.Request) -> web.Response:
    out = await request.app[OBSERVER].client.request("scene", "GET", "/api/v1/trace/status")
    return _ok(active_trace_id=out["active_trace_id"], step_count=out["step_count"], dir=out["dir"])


async def replay_start(request: web.Request) -> web.Response:
    req = await read_body(request, ReplayStartRequest)
    out = await request.app[OBSERVER].client.request("scene", "POST", "/api/v1/replay/start", body={
        "trace": req.path, "mode": req.mode, "on_divergence": req.on_divergence})
    return _ok(replay_id=out["replay_id"], total=out["total"], mode=out["mode"], label=out["label"])


async def replay_step(request: web.Request) -> web.Response:
    req = await read_body(request, ReplayIdRequest)
    out = await request.app[OBSERVER].client.request("scene", "POST", "/api/v1/replay/step",
                                                     body={"replay_id": req.replay_id})
    result = out["result"]
    return _ok(position=out["position"], total=out["total"], tool=result["action"], divergence=out["divergence"],
               actual_summary={"ok": result["ok"], "resolved_by": result["resolved_by"],
                               "resolution": result["resolution"], "error": result["error"]},
               finished=out["finished"])


async def replay_status(request: web.Request) -> web.Response:
    req = await read_body(request, ReplayIdRequest)
    out = await request.app[OBSERVER].client.request("scene", "POST", "/api/v1/replay/status",
                                                     body={"replay_id": req.replay_id})
    return _ok(position=out["position"], total=out["total"], finished=out["finished"],
               divergences=out["divergences"])


async def replay_stop(request: web.Request) -> web.Response:
    req = await read_body(request, ReplayIdRequest)
    out = await request.app[OBSERVER].client.request("scene", "POST", "/api/v1/replay/stop",
                                                     body={"replay_id": req.replay_id})
    return _ok(stopped=out["stopped"])


async def _policy(request: web.Request) -> dict[str, Any]:
    return await request.app[OBSERVER].client.request("scene", "GET", "/api/v1/policy")


async def budget_status(request: web.Request) -> web.Response:
    policy = await _policy(request)
    if not policy.get("configured"):
        return _ok(configured=False, actions=None, screenshots=None, vlm_tokens=None, session_seconds=None,
                   actions_per_minute=None)
    used = policy["budget_status"]
    return _ok(configured=True, actions=used["max_actions"], screenshots=used["max_screenshots"],
               vlm_tokens=used.get("max_vlm_tokens"), session_seconds=used["max_session_seconds"],
               actions_per_minute=used["actions_per_minute"])


async def redaction_status(request: web.Request) -> web.Response:
    policy = await _policy(request)
    redaction = policy.get("redaction") or {}
    done = policy.get("redaction_status") or {}
    patterns = sum(redaction.get(k) or 0 for k in ("element_name_patterns", "window_title_patterns", "text_patterns"))
    return _ok(enabled=bool(redaction.get("enabled")), active=bool(done.get("enabled")), patterns_count=patterns,
               applied_count=done.get("applied_count", 0), blur_screenshots=bool(redaction.get("blur_screenshots")))


# OS Screen Observer's tool names -> the scene's actions.
_PROPOSED = {"click_element": "click", "click": "click", "double_click": "double_click",
             "right_click": "right_click", "invoke": "invoke", "invoke_element": "invoke", "set_value": "set_value",
             "select": "select", "select_option": "select", "type_text": "type", "press_key": "key", "key": "key",
             "clear_text": "clear_text", "drag": "drag"}


async def propose_action(request: web.Request) -> web.Response:
    req = await read_body(request, ProposeRequest)
    obs = request.app[OBSERVER]
    try:
        target = ElementRequest(**{k: v for k, v in req.args.items() if k in ElementRequest.model_fields})
    except ValueError as exc:
        raise InvalidRequest(f"args: {exc}", code="validation_error") from None
    scene, window, element = await obs.target(target)
    out = await obs.client.request("scene", "POST", "/api/v1/act/propose", body={
        "target": element["id"], "action": _PROPOSED.get(req.action, req.action)})
    would = out["would_target"] or {}
    displays = {d.id: d for d in shapes.displays_of(scene)}
    return _ok(needed=out["needed"], confirm_token=out["confirm_token"], expires_at=out["expires_at"],
               would_target={"window_uid": window.get("window_uid"), "selector": target.selector,
                             "element_id": element["id"],
                             "bounds": shapes.bounds(displays, element.get("display_id"), element.get("bbox")),
                             "screenshot_b64": would.get("screenshot_b64")})


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(openapi_document("deskbox: OS Screen Observer-compatible API", __version__, ROUTES))


def _element(path: str, action: str, act: Callable[[ElementRequest], dict], summary: str,
             observe: bool = False) -> Route:
    return Route("POST", path, _element_route(action, act, observe), summary, body=ElementRequest)


ROUTES = [
    *inspector.ROUTES,
    Route("GET", "/api/windows", list_windows, "Top-level windows: focused first, then by title"),
    Route("GET", "/api/structure", get_structure, "A window's element tree with bounds", query=StructureQuery),
    Route("GET", "/api/description", get_description,
          "A window in prose; with a vision model (deskbox up --vlm-url), its description too", query=DescriptionQuery),
    Route("GET", "/api/sketch", get_sketch, "A window as an ASCII sketch", query=SketchQuery),
    Route("GET", "/api/screenshot", get_screenshot, "A monitor or window as base64 PNG", query=WindowQuery),
    Route("POST", "/api/action", post_action, "click_at, type, key, scroll at desktop coordinates",
          body=ActionRequest),
    Route("GET", "/api/healthz", healthz, "Liveness"),
    Route("GET", "/api/capabilities", capabilities, "What this adapter supports"),
    Route("GET", "/api/monitors", monitors, "Monitors with logical and physical bounds"),
    Route("GET", "/api/find_element", find_element, "Elements a selector matches", query=FindQuery),
    _element("/api/element/click", "click", _click, "Click an element (button, count)"),
    _element("/api/element/focus", "focus", lambda r: {"action": "focus"}, "Focus an element"),
    _element("/api/element/invoke", "invoke", lambda r: {"action": "invoke"}, "An element's default action"),
    _element("/api/element/set_value", "set_value", _set_value, "Set a field's text"),
    _element("/api/element/select", "select", _select, "Pick an option"),
    _element("/api/element/right_click", "right_click", lambda r: {"action": "right_click"}, "Right-click"),
    _element("/api/element/double_click", "double_click", lambda r: {"action": "double_click"}, "Double-click"),
    _element("/api/element/key", "key", _key, "Focus an element, then press keys"),
    _element("/api/element/clear_text", "clear_text", lambda r: {"action": "clear_text"}, "Empty a field"),
    _element("/api/element/click_and_observe", "click", _click, "Click, then what changed", observe=True),
    Route("POST", "/api/hover", hover, "Hover a point or an element", body=HoverRequest),
    Route("POST", "/api/drag", drag, "Drag between points or elements", body=DragRequest),
    Route("GET", "/api/observe", observe, "A window's tree and token, or what changed since one",
          query=ObserveQuery),
    Route("POST", "/api/wait_for", wait_for, "Wait until any condition holds (408 on timeout)", body=WaitRequest,
          success=(200, 408)),
    Route("POST", "/api/wait_idle", wait_idle, "Wait until the screen stops changing", body=WaitIdleRequest,
          success=(200, 408)),
    Route("POST", "/api/type_and_observe", type_and_observe, "Type, then what changed", body=TypeRequest),
    Route("POST", "/api/key_and_observe", key_and_observe, "Press keys, then what changed", body=KeyRequest),
    Route("POST", "/api/snapshot", snapshot_save, "Save the state"),
    Route("POST", "/api/snapshot/diff", snapshot_diff, "Diff two snapshots (or one and now)",
          body=SnapshotDiffRequest),
    Route("GET", "/api/snapshot/{snapshot_id}", snapshot_get, "A saved state"),
    Route("DELETE", "/api/snapshot/{snapshot_id}", snapshot_delete, "Drop a snapshot"),
    Route("POST", "/api/assert_state", assert_state, "Check predicates", body=AssertRequest),
    Route("GET", "/api/metrics", serve_metrics, "Prometheus metrics", responses="text/plain"),
    Route("GET", "/metrics", serve_metrics, "Prometheus metrics", responses="text/plain"),
    Route("POST", "/api/trace/start", trace_start, "Start a trace", body=TraceStartRequest),
    Route("POST", "/api/trace/stop", trace_stop, "Stop the trace"),
    Route("GET", "/api/trace/status", trace_status, "The trace being recorded"),
    Route("POST", "/api/replay/start", replay_start, "Begin replaying a trace", body=ReplayStartRequest),
    Route("POST", "/api/replay/step", replay_step, "Replay the next step", body=ReplayIdRequest),
    Route("POST", "/api/replay/status", replay_status, "Where a replay is", body=ReplayIdRequest),
    Route("POST", "/api/replay/stop", replay_stop, "Stop a replay", body=ReplayIdRequest),
    Route("GET", "/api/budget_status", budget_status, "Budgets: limits, used, remaining"),
    Route("GET", "/api/redaction_status", redaction_status, "Redaction: on, patterns, replacements made"),
    Route("POST", "/api/propose_action", propose_action, "A confirmation token for a risky action",
          body=ProposeRequest),
    *[Route(method, path, later, "Not served: scenarios load at start (501)", success=(501,))
      for method, path in shapes.LATER],
    Route("GET", "/api/openapi.json", openapi, "This document"),
]
