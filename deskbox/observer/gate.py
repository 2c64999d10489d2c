"""Traces, replay and guard rails (budgets, redaction, confirmation) on the Observer API:
the scene's own (its gate), answered in OS Screen Observer's shapes."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..common.errors import InvalidRequestError
from ..common.openapi import SLOW, TYPING, Route
from ..common.web import read_body
from . import shapes
from .lookups import OBSERVER, ok
from .models import (
    ElementRequest,
    ProposeRequest,
    ReplayIdRequest,
    ReplayStartRequest,
    TraceStartRequest,
)

__all__ = ["ROUTES"]


async def trace_start(request: web.Request) -> web.Response:
    req = await read_body(request, TraceStartRequest)
    out = await request.app[OBSERVER].client.request("scene", "POST", "/api/v1/trace/start",
                                                     body={"label": req.label})
    return ok(trace_id=out["trace_id"], started_at=out["started_at"], dir=out["dir"])


async def trace_stop(request: web.Request) -> web.Response:
    out = await request.app[OBSERVER].client.request("scene", "POST", "/api/v1/trace/stop", body={})
    return ok(trace_id=out["trace_id"], path=out["path"], step_count=out["step_count"],
              duration_ms=out["duration_ms"])


async def trace_status(request: web.Request) -> web.Response:
    out = await request.app[OBSERVER].client.request("scene", "GET", "/api/v1/trace/status")
    return ok(active_trace_id=out["active_trace_id"], step_count=out["step_count"], dir=out["dir"])


async def replay_start(request: web.Request) -> web.Response:
    req = await read_body(request, ReplayStartRequest)
    out = await request.app[OBSERVER].client.request("scene", "POST", "/api/v1/replay/start", body={
        "trace": req.path, "mode": req.mode, "on_divergence": req.on_divergence})
    return ok(replay_id=out["replay_id"], total=out["total"], mode=out["mode"], label=out["label"])


async def replay_step(request: web.Request) -> web.Response:
    req = await read_body(request, ReplayIdRequest)
    out = await request.app[OBSERVER].client.request("scene", "POST", "/api/v1/replay/step",
                                                     body={"replay_id": req.replay_id})
    result = out["result"]
    return ok(position=out["position"], total=out["total"], tool=result["action"], divergence=out["divergence"],
              actual_summary={"ok": result["ok"], "resolved_by": result["resolved_by"],
                              "resolution": result["resolution"], "error": result["error"]},
              finished=out["finished"])


async def replay_status(request: web.Request) -> web.Response:
    req = await read_body(request, ReplayIdRequest)
    out = await request.app[OBSERVER].client.request("scene", "POST", "/api/v1/replay/status",
                                                     body={"replay_id": req.replay_id})
    return ok(position=out["position"], total=out["total"], finished=out["finished"],
              divergences=out["divergences"])


async def replay_stop(request: web.Request) -> web.Response:
    req = await read_body(request, ReplayIdRequest)
    out = await request.app[OBSERVER].client.request("scene", "POST", "/api/v1/replay/stop",
                                                     body={"replay_id": req.replay_id})
    return ok(stopped=out["stopped"])


async def _policy(request: web.Request) -> dict[str, Any]:
    return await request.app[OBSERVER].client.request("scene", "GET", "/api/v1/policy")


async def budget_status(request: web.Request) -> web.Response:
    policy = await _policy(request)
    if not policy.get("configured"):
        return ok(configured=False, actions=None, screenshots=None, vlm_tokens=None, session_seconds=None,
                  actions_per_minute=None)
    used = policy["budget_status"]
    return ok(configured=True, actions=used["max_actions"], screenshots=used["max_screenshots"],
              vlm_tokens=used.get("max_vlm_tokens"), session_seconds=used["max_session_seconds"],
              actions_per_minute=used["actions_per_minute"])


async def redaction_status(request: web.Request) -> web.Response:
    policy = await _policy(request)
    redaction = policy.get("redaction") or {}
    done = policy.get("redaction_status") or {}
    patterns = sum(redaction.get(k) or 0 for k in ("element_name_patterns", "window_title_patterns", "text_patterns"))
    return ok(enabled=bool(redaction.get("enabled")), active=bool(done.get("enabled")), patterns_count=patterns,
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
        raise InvalidRequestError(f"args: {exc}", code="validation_error") from None
    scene, window, element = await obs.target(target)
    out = await obs.client.request("scene", "POST", "/api/v1/act/propose", body={
        "target": element["id"], "action": _PROPOSED.get(req.action, req.action)})
    would = out["would_target"] or {}
    displays = {d.id: d for d in shapes.displays_of(scene)}
    return ok(needed=out["needed"], confirm_token=out["confirm_token"], expires_at=out["expires_at"],
              would_target={"window_uid": window.get("window_uid"), "selector": target.selector,
                            "element_id": element["id"],
                            "bounds": shapes.bounds(displays, element.get("display_id"), element.get("bbox")),
                            "screenshot_b64": would.get("screenshot_b64")})


ROUTES = [
    Route("POST", "/api/trace/start", trace_start, "Start a trace", body=TraceStartRequest),
    Route("POST", "/api/trace/stop", trace_stop, "Stop the trace", longest=SLOW),
    Route("GET", "/api/trace/status", trace_status, "The trace being recorded"),
    Route("POST", "/api/replay/start", replay_start, "Begin replaying a trace", body=ReplayStartRequest),
    Route("POST", "/api/replay/step", replay_step, "Replay the next step", body=ReplayIdRequest,
          longest=TYPING, stops_when_client_leaves=True),
    Route("POST", "/api/replay/status", replay_status, "Where a replay is", body=ReplayIdRequest),
    Route("POST", "/api/replay/stop", replay_stop, "Stop a replay", body=ReplayIdRequest),
    Route("GET", "/api/budget_status", budget_status, "Budgets: limits, used, remaining"),
    Route("GET", "/api/redaction_status", redaction_status, "Redaction: on, patterns, replacements made"),
    Route("POST", "/api/propose_action", propose_action, "A confirmation token for a risky action",
          body=ProposeRequest),
]
