"""OS Screen Observer's v2 routes: discovery (health, capabilities, monitors, find), actions
on elements with their receipts, hover and drag, and observing, waiting, snapshots and
assertions. Their errors are ``{"ok": false, "error": {code, message, ...}}``."""

from __future__ import annotations

import time
from typing import Any, Awaitable, Callable

from aiohttp import web

from ..client import DeskboxError
from ..common.errors import InvalidRequestError, NotFoundError
from ..common.openapi import ACTION, TYPING, Route, typing_if, waiting
from ..common.web import read_body, read_query, validate
from . import shapes
from .lookups import OBSERVER, PROTOCOL_VERSION, Observer, __version__, as_json, ok
from .models import (
    AssertRequest,
    DragRequest,
    ElementRequest,
    FindQuery,
    HoverRequest,
    KeyRequest,
    ObserveQuery,
    SnapshotDiffRequest,
    TypeRequest,
    WaitIdleRequest,
    WaitRequest,
)

__all__ = ["ROUTES"]


async def healthz(request: web.Request) -> web.Response:
    obs = request.app[OBSERVER]
    return ok(uptime_s=round(time.time() - obs.started, 1), step_count=obs.step_count, adapter="deskbox",
              version=__version__)


async def capabilities(request: web.Request) -> web.Response:
    return ok(platform="linux-wayland", adapter="deskbox", version=__version__, protocol_version=PROTOCOL_VERSION,
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
    return bool((getattr(health, "vlm", None) or {}).get("configured"))


async def monitors(request: web.Request) -> web.Response:
    scene = await request.app[OBSERVER].scene("idle")
    out = []
    for d in shapes.displays_of(scene):
        logical = {"x": round(d.layout.x), "y": round(d.layout.y), "width": round(d.layout.w),
                   "height": round(d.layout.h)}
        out.append({"index": d.id, "name": d.name, "primary": d.primary, "bounds": logical, "scale_factor": d.scale,
                    "logical_bounds": logical,
                    "physical_bounds": {"x": 0, "y": 0, "width": d.size[0], "height": d.size[1]}})
    return ok(monitors=out)


def _match(m: dict, displays: dict) -> dict[str, Any]:
    return {"element_id": m["id"], "bounds": shapes.bounds(displays, m.get("display_id"), m.get("bbox")),
            "name": m.get("name"), "role": m.get("role"), "window_uid": m.get("window_id")}


async def find_element(request: web.Request) -> web.Response:
    q = read_query(request, FindQuery)
    obs = request.app[OBSERVER]
    scene, window = await obs.window(q) if (q.window_uid or q.window_index is not None) else (await obs.scene(), None)
    found = await obs.find(q.selector, limit=1000)
    matches = [m for m in found["matches"] if window is None or m.get("window_id") == window["window_uid"]]
    if not matches:
        raise NotFoundError(f"no element matches selector {q.selector!r}", code="element_not_found",
                            suggested_next_tool="get_element_tree",
                            context={"selector": q.selector, "window_uid": window and window["window_uid"]})
    displays = {d.id: d for d in shapes.displays_of(scene)}
    first = _match(matches[0], displays)
    return ok(window_uid=first["window_uid"], element_id=first["element_id"], selector=q.selector,
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
        return ok(step_id=step, caused_by_step_id=None, action=action, dry_run=True, target=target, before=None,
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
    return ok(**answer)


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
        raise InvalidRequestError("set_value needs value")
    return {"action": "set_value", "text": req.value} if req.clear_first else {"action": "type", "text": req.value}


def _select(req: ElementRequest) -> dict[str, Any]:
    if (req.option_name is None) == (req.option_index is None):
        raise InvalidRequestError("select needs option_name or option_index")
    return ({"action": "select", "option": req.option_name} if req.option_name is not None
            else {"action": "select", "option_index": req.option_index})


def _key(req: ElementRequest) -> dict[str, Any]:
    if not req.keys:
        raise InvalidRequestError("key needs keys")
    return {"action": "key", "keys": req.keys}


async def hover(request: web.Request) -> web.Response:
    req = await read_body(request, HoverRequest)
    obs = request.app[OBSERVER]
    if req.x is not None:
        obs.step()
        at = shapes.to_display(shapes.displays_of(await obs.scene("idle")), req.x, req.y)
        if at is None:
            raise InvalidRequestError(f"({req.x:g}, {req.y:g}) is on no monitor", code="off_screen")
        await obs.client.pointer("move", at[1], at[2], display=at[0])
        return ok(action="hover", x=req.x, y=req.y)
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
                raise InvalidRequestError(f"({end.x:g}, {end.y:g}) is on no monitor", code="off_screen")
            return at
        _, _, e = await obs.target(ElementRequest(element_id=end.element_id, selector=end.selector,
                                                  window_uid=req.window_uid, window_index=req.window_index))
        if e.get("bbox") is None:
            raise InvalidRequestError(f"{e['id']} has no box", code="not_visible")
        x, y, w, h = e["bbox"]
        return e["display_id"], x + w / 2, y + h / 2

    start, end = await point(req.from_), await point(req.to)
    if start[0] != end[0]:
        raise InvalidRequestError("a drag stays on one monitor", code="cross_display")
    obs.step()
    await obs.client.pointer("drag", start[1], start[2], display=start[0], path=[(end[1], end[2])],
                             modifiers=req.modifiers or None, duration_ms=round(req.duration_s * 1000))
    return ok(action="drag", dry_run=False)


# -- v2: observing, waiting, asserting ---------------------------------------------------------


async def observe(request: web.Request) -> web.Response:
    q = read_query(request, ObserveQuery)
    obs = request.app[OBSERVER]
    scene, window = await obs.window(q)
    form = "json-patch" if q.format == "json-patch" else "compact"
    seen = await obs.observe(q.since, window=window["window_uid"], format=form)
    if seen["format"] == "full":
        tree, *_ = shapes.structure(scene, window)
        return ok(format="full", tree=tree, tree_token=seen["token"], base_token=None, tree_hash=seen["tree_hash"],
                  window_uid=window["window_uid"])
    return ok(format=q.format, changes=seen["changes"], tree_token=seen["token"], base_token=seen["base_token"],
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
    if out.matched:
        return ok(matched_index=out.matched_index, matched_detail=out.observed, elapsed_ms=out.elapsed_ms,
                  polls=out.polls)
    return as_json({"ok": False, "success": False, "elapsed_ms": out.elapsed_ms, "polls": out.polls,
                   "error": {"code": "Timeout", "message": f"no condition held within {timeout_ms} ms",
                             "recoverable": True, "suggested_next_tool": "observe",
                             "context": {"last_observed": out.last_observed}}}, 408)


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
    return ok(step_id=step, caused_by_step_id=None, action=done["receipt"]["action"], dry_run=False, target=None,
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
    return ok(snapshot_id=saved.id, ts=saved.created, summary=saved.summary)


async def snapshot_get(request: web.Request) -> web.Response:
    obs = request.app[OBSERVER]
    kept = await obs.client.snapshot(request.match_info["snapshot_id"])
    doc = kept.observation.model_dump(exclude_unset=True) if kept.observation else {"windows": {}, "elements": {}}
    trees: dict[str, list] = {uid: [] for uid in doc["windows"]}
    for e in doc["elements"].values():
        trees.setdefault(e.get("window_id"), []).append(e)
    return ok(windows=[{"window_uid": k, **v} for k, v in doc["windows"].items()], trees=trees,
              tree_hashes={"all": kept.tree_hash}, ts=kept.created)


async def snapshot_diff(request: web.Request) -> web.Response:
    req = await read_body(request, SnapshotDiffRequest)
    obs = request.app[OBSERVER]
    form = "json-patch" if req.format == "json-patch" else "compact"
    out = await obs.client.snapshot_diff(req.a, req.b, format=form)
    changes = out.changes
    if form == "compact":
        per_window: dict[str, dict] = {}
        for key in ("added", "removed", "changed"):
            for e in changes[key]:
                uid = e.get("window_id") or "unknown"
                per_window.setdefault(uid, {"format": "custom", "changes": {"added": [], "removed": [], "changed": []}})
                per_window[uid]["changes"][key].append(e)
        return ok(windows_added=[w["id"] for w in changes["windows_added"]],
                  windows_removed=[w["id"] for w in changes["windows_removed"]], per_window_changes=per_window,
                  unchanged=out.unchanged)
    return ok(windows_added=[], windows_removed=[], per_window_changes={"all": {"format": "json-patch",
                                                                                "changes": changes}},
              unchanged=out.unchanged)


async def snapshot_delete(request: web.Request) -> web.Response:
    obs = request.app[OBSERVER]
    out = await obs.client.snapshot_delete(request.match_info["snapshot_id"])
    return ok(dropped=out.dropped)


async def assert_state(request: web.Request) -> web.Response:
    req = await read_body(request, AssertRequest)
    predicates = []
    for p in req.predicate:
        if p.get("kind") == "screenshot_similar" and "reference_path" in p:
            raise InvalidRequestError("screenshot_similar takes reference_png (base64) or a snapshot here, not a path "
                                      "on the server", code="predicate_unsupported")
        predicates.append(p)
    out = await request.app[OBSERVER].client.assert_state(predicates)
    return ok(all_passed=out.all_passed, results=[r.model_dump(exclude_unset=True) for r in out.results])


def _element(path: str, action: str, act: Callable[[ElementRequest], dict], summary: str,
             observe: bool = False) -> Route:
    return Route("POST", path, _element_route(action, act, observe), summary, body=ElementRequest,
                 stops_when_client_leaves=True, longest=typing_if("value"))


ROUTES = [
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
    Route("POST", "/api/hover", hover, "Hover a point or an element", body=HoverRequest,
          longest=ACTION, stops_when_client_leaves=True),
    Route("POST", "/api/drag", drag, "Drag between points or elements", body=DragRequest,
          longest=ACTION, stops_when_client_leaves=True),
    Route("GET", "/api/observe", observe, "A window's tree and token, or what changed since one",
          query=ObserveQuery),
    Route("POST", "/api/wait_for", wait_for, "Wait until any condition holds (408 on timeout)", body=WaitRequest,
          success=(200, 408), longest=waiting("timeout_ms", 60, unit_s=0.001), stops_when_client_leaves=True),
    Route("POST", "/api/wait_idle", wait_idle, "Wait until the screen stops changing", body=WaitIdleRequest,
          success=(200, 408), longest=waiting("timeout_ms", 60, unit_s=0.001), stops_when_client_leaves=True),
    Route("POST", "/api/type_and_observe", type_and_observe, "Type, then what changed", body=TypeRequest,
          longest=TYPING, stops_when_client_leaves=True),
    Route("POST", "/api/key_and_observe", key_and_observe, "Press keys, then what changed", body=KeyRequest,
          longest=ACTION, stops_when_client_leaves=True),
    Route("POST", "/api/snapshot", snapshot_save, "Save the state"),
    Route("POST", "/api/snapshot/diff", snapshot_diff, "Diff two snapshots (or one and now)",
          body=SnapshotDiffRequest),
    Route("GET", "/api/snapshot/{snapshot_id}", snapshot_get, "A saved state"),
    Route("DELETE", "/api/snapshot/{snapshot_id}", snapshot_delete, "Drop a snapshot"),
    Route("POST", "/api/assert_state", assert_state, "Check predicates", body=AssertRequest),
]
