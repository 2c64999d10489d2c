"""OS Screen Observer's v1 routes: windows, a window's structure, description, sketch
and screenshot, and ``/api/action`` at desktop coordinates. Their errors are
``{"error": "message"}`` (``app.oso_errors``)."""

from __future__ import annotations

import base64
import io
from typing import Any

from aiohttp import web
from PIL import Image

from ..answers import Description
from ..client import DeskboxError
from ..common.errors import InvalidRequestError
from ..common.openapi import QUICK_S, Longest, Route, typing_if
from ..common.options import VLM_TIMEOUT_S
from ..common.web import read_body, read_query
from . import shapes
from .lookups import OBSERVER, as_json
from .models import (
    ActionRequest,
    DescriptionQuery,
    SketchQuery,
    StructureQuery,
    WindowQuery,
)

__all__ = ["ROUTES"]


async def list_windows(request: web.Request) -> web.Response:
    listed = shapes.windows(await request.app[OBSERVER].scene())
    return as_json({"ok": True, "count": len(listed), "is_mock": False, "windows": listed})


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
        raise InvalidRequestError(f"name_regex: {exc}", code="invalid_regex") from None
    observed = await obs.observe(window=window["window_uid"])
    return as_json({"ok": True, "window": window["title"], "window_uid": window["window_uid"],
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
    said: Description | None = None
    if q.mode in (None, "combined", "vlm"):
        try:
            said = await obs.client.description(window=uid, vlm=True)
            answer.update(vlm=said.vlm, vlm_tokens=said.vlm_tokens, vlm_model=said.vlm_model)
        except DeskboxError as exc:
            if q.mode == "vlm" or exc.code not in ("vlm_not_configured", "vlm_unavailable", "budget_exceeded"):
                raise
            if exc.code != "vlm_not_configured":  # (a model there is, that did not answer)
                answer.update(vlm=None, vlm_tokens=None, vlm_model=None,
                              vlm_error={"code": exc.code, "message": exc.message})
    text = said.text if said is not None else await obs.client.description(window=uid)
    return as_json({**answer, "accessibility": text, "description": text})


async def get_sketch(request: web.Request) -> web.Response:
    q = read_query(request, SketchQuery)
    obs = request.app[OBSERVER]
    _, window = await obs.window(q)
    drawn = await obs.client.request("scene", "GET", "/api/v1/sketch", query={
        "window": window["window_uid"], "cols": q.grid_width, "rows": q.grid_height})
    return as_json({"ok": True, "window": window["title"], "grid_width": q.grid_width, "grid_height": q.grid_height,
                   "sketch": drawn["sketch"], "legend": drawn["legend"]})


async def get_screenshot(request: web.Request) -> web.Response:
    q = read_query(request, WindowQuery)
    obs = request.app[OBSERVER]
    if q.window_uid is None and q.window_index is None:
        png = await obs.client.screenshot(0)
        return as_json({"ok": True, "window": None, "format": "png", "encoding": "base64",
                       "data": base64.b64encode(png).decode()})
    scene, window = await obs.window(q)
    box = window["physical_bounds"]
    if box is None:
        raise InvalidRequestError(f"window {window['window_uid']} has no box on a display", code="window_gone")
    png = await obs.client.screenshot(window["monitor_index"] or 0)
    image = Image.open(io.BytesIO(png))
    crop = image.crop((max(0, box["x"]), max(0, box["y"]), min(image.width, box["x"] + box["width"]),
                       min(image.height, box["y"] + box["height"])))
    out = io.BytesIO()
    crop.save(out, "PNG", compress_level=1)
    return as_json({"ok": True, "window": window["title"], "format": "png", "encoding": "base64",
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
                raise InvalidRequestError(f"({req.x:g}, {req.y:g}) is on no monitor (GET /api/monitors)",
                                          code="off_screen")
        if req.action == "click_at":
            await obs.client.pointer("click", at[1], at[2], display=at[0], button=req.button,
                                     count=2 if req.double else 1)
            return as_json({"success": True, "action": req.action, "x": req.x, "y": req.y})
        # (Its clicks are positive up; desktopd's notches positive down.)
        if at is not None:
            await obs.client.pointer("scroll", at[1], at[2], display=at[0], dy=-req.clicks)
        else:
            await obs.client.pointer("scroll", dy=-req.clicks)
        return as_json({"success": True, "action": req.action, "x": req.x, "y": req.y, "clicks": req.clicks})
    if req.action == "type":
        await obs.client.keyboard("type", text=req.value)
    else:
        await obs.client.keyboard("key", keys=req.value)
    return as_json({"success": True, "action": req.action, "value": req.value})


ROUTES = [
    Route("GET", "/api/windows", list_windows, "Top-level windows: focused first, then by title"),
    Route("GET", "/api/structure", get_structure, "A window's element tree with bounds", query=StructureQuery),
    Route("GET", "/api/description", get_description,
          "A window in prose; with a vision model (deskbox up --vlm-url), its description too", query=DescriptionQuery,
          longest=Longest(VLM_TIMEOUT_S + QUICK_S)),
    Route("GET", "/api/sketch", get_sketch, "A window as an ASCII sketch", query=SketchQuery),
    Route("GET", "/api/screenshot", get_screenshot, "A monitor or window as base64 PNG", query=WindowQuery),
    Route("POST", "/api/action", post_action, "click_at, type, key, scroll at desktop coordinates",
          body=ActionRequest, longest=typing_if("value"), stops_when_client_leaves=True),
]
