"""The observer toolset's routes on the scene aggregator: find, observe (with diffs since
a token), wait_for, assert_state, snapshots, and actions that answer with what they
changed. Element ids are the Scene's ids throughout.

One ``Toolset`` per app (under ``TOOLSET``) keeps the tokens and snapshots; each handler
reads its request through a pydantic model and answers every key (null when empty)."""

from __future__ import annotations

import asyncio
import io
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web
from PIL import Image

from ..answers import (
    ActObserved,
    Checked,
    Description,
    Dropped,
    Matches,
    Observed,
    Sketch,
    Snapshot,
    SnapshotDiff,
    SnapshotInfo,
    SnapshotList,
    WaitResult,
)
from ..api.scene import ActRequest
from ..api.toolset import (
    ActObserveRequest,
    AssertRequest,
    DescribeQuery,
    FindQuery,
    KeyObserveRequest,
    ObserveQuery,
    SketchQuery,
    SnapshotDiffRequest,
    SnapshotRequest,
    TypeObserveRequest,
    WaitRequest,
)
from ..common.errors import ActionFailedError, InvalidRequestError, UnavailableError
from ..common.openapi import ACTION, QUICK_S, TYPING, Longest, Route, typing_if, waiting
from ..common.options import VLM_TIMEOUT_S
from ..common.web import json_ok, read_body, read_query, taking_turn
from ..scene.act import Actor
from ..scene.engine import SceneEngine
from ..scene.frames import changed_regions
from ..scene.gate import traced
from ..scene.sources import Bridge, Desktop
from ..scene.text import scene_text
from ..scene.tracing import GATE
from ..scene.vlm import VLM, VisionModel
from .checks import Look, check
from .observation import diff, document, tree_hash
from .selector import nodes_of, parse, select_bounded
from .sketch import describe, sketch
from .store import Store

if TYPE_CHECKING:
    from ..scene.guard import Guard
    from ..scene.scene_json import Scene

__all__ = ["Toolset", "TOOLSET", "ROUTES"]

TOKENS_KEPT, TOKEN_TTL_S = 64, 600.0
SNAPSHOTS_KEPT, SNAPSHOT_TTL_S = 32, 300.0


class Toolset:
    def __init__(self, engine: SceneEngine, actor: Actor, desktop: Desktop, bridge: Bridge | None) -> None:
        self.engine, self.actor, self.desktop, self.bridge = engine, actor, desktop, bridge
        self.tokens = Store("o", cap=TOKENS_KEPT, ttl_s=TOKEN_TTL_S, what="token",
                            instead="observe again without since= for the whole state and a fresh token")
        self.snapshots = Store("s", cap=SNAPSHOTS_KEPT, ttl_s=SNAPSHOT_TTL_S, what="snapshot",
                               instead="save a new one (POST /api/v1/snapshots)")
        self._ocr = None

    # -- one look at the session ---------------------------------------------------

    async def look(self, mode: str = "active") -> Look:
        scene = await self.engine.scene(mode)
        return Look(scene, tabs=self._tabs, screenshot=self.screenshot, ocr=self._read_text, kept=self._kept)

    def _kept(self, ident: str):
        return (self.tokens if ident.startswith("o") else self.snapshots).get(ident)

    async def _tabs(self) -> list[dict]:
        if self.bridge is None:
            raise UnavailableError("this scene aggregator runs without the CDP bridge (no browser)", code="no_browser")
        return await self.bridge.tabs()

    async def screenshot(self, display: int) -> bytes:
        body, _ = await self.desktop.screenshot({"display": str(display), "format": "png"})
        return body

    async def _read_text(self, png: bytes) -> list[str]:
        if self._ocr is None:
            from ..scene.ocr import OcrChain

            self._ocr = OcrChain.default(enabled=True)
        if not self._ocr.enabled:
            raise UnavailableError("OCR needs tesseract, which this machine lacks", code="ocr_unavailable")

        def read() -> list[str]:
            image = Image.open(io.BytesIO(png)).convert("RGB")
            return [w.text for w in self._ocr.read(image, [(0, 0, image.width, image.height)])[0]]
        return await asyncio.to_thread(read)

    # -- observations ----------------------------------------------------------------

    def observe_doc(self, scene, view: dict[str, Any]) -> dict:
        scene.check_filters(view.get("display"), view.get("window"))
        return document(scene.to_json(**view))

    def changes_since(self, since: str | None, view: dict[str, Any], doc: dict, seq: int,
                      form: str) -> dict[str, Any]:
        """A fresh token for ``doc``, and what changed since ``since`` (None: the whole)."""
        base = self.tokens.get(since) if since is not None else None
        if base is not None and base.extra["view"] != view:
            raise InvalidRequestError(f"token {since} was observed with {base.extra['view']}; observe with the same "
                                      "interactive, display and window to diff against it", code="view_differs",
                                      context={"token": since, "view": base.extra["view"]})
        token = self.tokens.put(doc, seq, view=view)
        old = base.doc if base is not None else None
        answer: dict[str, Any] = {"token": token.id, "base_token": since, "seq": seq, "tree_hash": tree_hash(doc),
                                  "base_tree_hash": tree_hash(old) if old is not None else None}
        if old is None:
            return {**answer, "format": "full", "unchanged": None, "changes": None, "observation": doc}
        return {**answer, "format": form, "unchanged": answer["base_tree_hash"] == answer["tree_hash"],
                "changes": diff(old, doc, form), "observation": None}


TOOLSET = web.AppKey("toolset", Toolset)


def _view(q: Any) -> dict[str, Any]:
    return {"interactive": q.interactive, "display": q.display, "window": q.window}


def _match(n: dict) -> dict[str, Any]:
    return {"id": n["id"], "kind": n.get("kind", "element"), "role": n.get("role"), "name": n.get("name"),
            "value": n.get("value"), "bbox": n.get("bbox"), "states": n.get("states"), "actions": n.get("actions"),
            "source": n.get("source"), "window_id": n.get("window_id"), "display_id": n.get("display_id"),
            "app": n.get("app"), "parent": n.get("parent"), "visibility": n.get("visibility")}


async def find(request: web.Request) -> web.Response:
    q = read_query(request, FindQuery)
    selector = parse(q.selector)  # (a bad selector answers before anything is read)
    scene = await request.app[TOOLSET].engine.scene(q.mode)
    found = await select_bounded(selector, nodes_of(scene.to_json()))
    return json_ok({"selector": q.selector, "count": len(found), "ambiguous": len(found) > 1,
                    "truncated": len(found) > q.limit, "matches": [_match(n) for n in found[:q.limit]],
                    "scene_seq": scene.seq})


async def observe(request: web.Request) -> web.Response:
    q = read_query(request, ObserveQuery)
    tools = request.app[TOOLSET]
    if q.since is not None:
        tools.tokens.get(q.since)  # (an expired token answers before anything is read)
    view = _view(q)
    scene = await tools.engine.scene(q.mode)
    answer = tools.changes_since(q.since, view, tools.observe_doc(scene, view), scene.seq, q.format)
    answer["text"] = None
    if q.text and q.since is None:
        elements = [e for e in scene.ax if (not q.interactive or e.interactive)
                    and (q.display is None or e.display_id == q.display)
                    and (q.window is None or e.window_id == q.window)]
        answer["text"] = scene_text(scene, elements, [o for o in scene.ocr
                                                      if q.display is None or o.display_id == q.display],
                                    max_chars=None)
    if not q.observation:
        answer["observation"] = None
    return json_ok(answer)


async def wait_for(request: web.Request) -> web.Response:
    req = await read_body(request, WaitRequest)
    tools = request.app[TOOLSET]
    for cond in req.any_of:  # (selectors and tokens are checked before the wait begins)
        if getattr(cond, "selector", None):
            parse(cond.selector)
        if cond.type == "tree_changes":
            tools.tokens.get(cond.since)
    started = time.monotonic()
    deadline = started + req.timeout_ms / 1000
    quiet: dict[int, tuple[Any, float]] = {}  # display -> (its last signature, when it last changed)
    first: Look | None = None
    polls = 0
    last_observed: list[Any] = [None] * len(req.any_of)
    while True:
        look = await tools.look("active")
        first = first or look
        polls += 1
        now = time.monotonic()
        for i, cond in enumerate(req.any_of):
            if cond.type == "screen_idle":
                sig = (await tools.engine.frame_signatures([cond.display]))[cond.display]
                before = quiet.get(cond.display)
                if before is None or changed_regions(before[0], sig):
                    quiet[cond.display] = before = (sig, started if before is None else now)
                still_ms = round((now - before[1]) * 1000)
                passed, observed = still_ms >= cond.quiet_ms, {"still_ms": still_ms}
            else:
                passed, observed = await check(cond, look, first)
            last_observed[i] = observed
            if passed:
                return json_ok({"matched": True, "matched_index": i, "condition": cond.model_dump(),
                                "observed": observed, "last_observed": None,
                                "elapsed_ms": round((time.monotonic() - started) * 1000), "polls": polls,
                                "scene_seq": look.seq})
        if time.monotonic() >= deadline:
            return json_ok({"matched": False, "matched_index": None, "condition": None, "observed": None,
                            "last_observed": last_observed,
                            "elapsed_ms": round((time.monotonic() - started) * 1000), "polls": polls,
                            "scene_seq": look.seq})
        await asyncio.sleep(min(req.poll_ms / 1000, max(0.0, deadline - time.monotonic())))


async def assert_state(request: web.Request) -> web.Response:
    req = await read_body(request, AssertRequest)
    tools = request.app[TOOLSET]
    for p in req.predicates:
        if getattr(p, "selector", None):
            parse(p.selector)
    look = await tools.look(req.mode)
    results = []
    for p in req.predicates:
        passed, observed = await check(p, look)
        results.append({"kind": p.kind, "passed": passed, "observed": observed,
                        "args": p.model_dump(exclude={"kind", "reference_png"})})
    return json_ok({"all_passed": all(r["passed"] for r in results), "results": results, "scene_seq": look.seq})


# -- snapshots ---------------------------------------------------------------------------


def _snapshot_json(kept, *, full: bool) -> dict[str, Any]:
    doc = kept.doc
    out = {"id": kept.id, "seq": kept.seq, "label": kept.extra["label"], "created": round(kept.created, 3),
           "expires_in_s": round(kept.expires - time.monotonic(), 1), "tree_hash": tree_hash(doc),
           "screenshots": sorted(kept.extra["screenshots"]),
           "summary": {"windows": len(doc["windows"]), "elements": len(doc["elements"]), "text": len(doc["text"])}}
    if full:
        out["observation"] = doc
    return out


async def snapshot_save(request: web.Request) -> web.Response:
    req = await read_body(request, SnapshotRequest)
    tools = request.app[TOOLSET]
    view = _view(req)
    scene = await tools.engine.scene(req.mode)
    doc = tools.observe_doc(scene, view)
    shots: dict[int, bytes] = {}
    if req.screenshot:
        for d in scene.displays:
            if req.display is None or d.id == req.display:
                shots[d.id] = await tools.screenshot(d.id)
    kept = tools.snapshots.put(doc, scene.seq, ttl_s=req.ttl_s, view=view, label=req.label, screenshots=shots)
    return json_ok(_snapshot_json(kept, full=False))


async def snapshot_list(request: web.Request) -> web.Response:
    tools = request.app[TOOLSET]
    return json_ok({"snapshots": [_snapshot_json(k, full=False) for k in tools.snapshots.items()],
                    "cap": tools.snapshots.cap, "default_ttl_s": tools.snapshots.ttl_s})


async def snapshot_get(request: web.Request) -> web.Response:
    kept = request.app[TOOLSET].snapshots.get(_snapshot_id(request))
    return json_ok(_snapshot_json(kept, full=True))


async def snapshot_delete(request: web.Request) -> web.Response:
    return json_ok({"dropped": request.app[TOOLSET].snapshots.drop(_snapshot_id(request))})


def _snapshot_id(request: web.Request) -> str:
    ident = request.match_info["snapshot_id"]
    if not (ident.startswith("s") and ident[1:].isdigit() and len(ident) <= 32):
        raise InvalidRequestError(f"{ident!r} is not a snapshot id (s1, s2 ...)", code="invalid_snapshot_id")
    return ident


async def snapshot_diff(request: web.Request) -> web.Response:
    req = await read_body(request, SnapshotDiffRequest)
    tools = request.app[TOOLSET]
    a = tools.snapshots.get(req.a)
    if req.b == "now":
        scene = await tools.engine.scene("active")
        b_doc, b_seq = tools.observe_doc(scene, a.extra["view"]), scene.seq
    else:
        b = tools.snapshots.get(req.b)
        b_doc, b_seq = b.doc, b.seq
    a_doc = a.doc
    return json_ok({"a": req.a, "b": req.b, "b_seq": b_seq, "format": req.format,
                    "unchanged": tree_hash(a_doc) == tree_hash(b_doc), "changes": diff(a_doc, b_doc, req.format)})


# -- act, then observe ----------------------------------------------------------------


async def _before(tools: Toolset, since: str | None, view: dict) -> str:
    """The token to diff against after the action: ``since``, or one for the state now."""
    if since is not None:
        tools.tokens.get(since)  # (an expired token answers before anything is done)
        return since
    scene = await tools.engine.scene("active")
    return tools.tokens.put(tools.observe_doc(scene, view), scene.seq, view=view).id


async def _observed_after(tools: Toolset, base: str, form: str, receipt: dict, view: dict) -> dict:
    scene = await tools.engine.scene("active")
    return {"receipt": receipt, **tools.changes_since(base, view, tools.observe_doc(scene, view), scene.seq, form)}


_NO_VIEW = {"interactive": False, "display": None, "window": None}


async def act_and_observe(request: web.Request) -> web.Response:
    req = await read_body(request, ActObserveRequest)
    tools = request.app[TOOLSET]
    before = await _before(tools, req.since, _NO_VIEW)
    receipt = await tools.actor.act(ActRequest(**req.model_dump(include=set(ActRequest.model_fields))))
    return json_ok(await _observed_after(tools, before, req.format, receipt, _NO_VIEW))


async def _keys_and_observe(request: web.Request, req: Any, keyboard: dict[str, Any]) -> web.Response:
    tools = request.app[TOOLSET]
    before = await _before(tools, req.since, _NO_VIEW)
    started = time.monotonic()
    async with taking_turn(tools.actor.input_lock):
        scene = tools.engine.last
        display = (scene.focused_window.display_id if scene is not None and scene.focused_window is not None
                   and scene.focused_window.display_id is not None else 0)
        sig = (await tools.engine.frame_signatures([display]))[display]
        async with traced(getattr(tools.actor, "gate", None), keyboard["action"], keyboard,
                          display=display) as step:
            await tools.desktop.keyboard(**keyboard)
            changed, settled = await tools.engine.settle(display, sig, req.settle_ms)
            step.receipt = {"changed": changed, "settled": settled}
        tools.engine.mark_dirty()
    receipt = {"ok": True, "action": keyboard["action"], "display_id": display, "changed": changed,
               "settled": settled, "elapsed_ms": round((time.monotonic() - started) * 1000)}
    return json_ok(await _observed_after(tools, before, req.format, receipt, _NO_VIEW))


async def type_and_observe(request: web.Request) -> web.Response:
    req = await read_body(request, TypeObserveRequest)
    return await _keys_and_observe(request, req, {"action": "type", "text": req.text})


async def key_and_observe(request: web.Request) -> web.Response:
    req = await read_body(request, KeyObserveRequest)
    return await _keys_and_observe(request, req, {"action": "key", "keys": req.keys})


async def get_sketch(request: web.Request) -> web.Response:
    q = read_query(request, SketchQuery)
    scene = await request.app[TOOLSET].engine.scene(q.mode)
    scene.check_filters(q.display, q.window)
    try:
        out = sketch(scene.to_json(), window=q.window, display=q.display, cols=q.cols, rows=q.rows)
    except ValueError as exc:  # (a window without a box)
        raise InvalidRequestError(str(exc), code="nothing_to_sketch") from None
    return json_ok({**out, "scene_seq": scene.seq})


async def get_description(request: web.Request) -> web.Response:
    """The window in prose from its elements; with ``vlm=1`` also the session's vision
    model's description of its picture and sketch (``vlm``, ``vlm_tokens``, ``vlm_model``)."""
    q = read_query(request, DescribeQuery)
    vlm = request.app[VLM]
    gate = request.app.get(GATE)
    guard = gate.policy if gate is not None else None
    if q.vlm:  # (refused before anything is read: no model, or its budget spent)
        vlm.require()
        if guard is not None:
            guard.budgets.check_vlm_tokens()
    scene = await request.app[TOOLSET].engine.scene(q.mode)
    scene.check_filters(None, q.window)
    doc = scene.to_json()
    answer: dict[str, Any] = {"text": describe(doc, window=q.window, limit=q.limit), "scene_seq": scene.seq}
    if q.vlm:
        answer.update(await _ask_model(request.app[TOOLSET], vlm, guard, scene, doc, q.window))
    return json_ok(answer)


async def _ask_model(tools: Toolset, vlm: VisionModel, guard: Guard | None, scene: Scene, doc: dict,
                     window: str | None) -> dict[str, Any]:
    """One call of the vision model about ``window`` (else the focused one), its tokens
    charged to the policy's budget. The picture is blurred where the policy blurs
    screenshots, and the answer redacted as any text is: the model read the screen."""
    wid = window or (doc.get("focused_window") or {}).get("id")
    if wid is None:
        raise ActionFailedError("no window has the focus: give window= (GET /api/v1/scene lists them under apps)",
                                code="no_window")
    app, title = next(((a.get("name"), w.get("title")) for a in doc.get("apps") or () for w in a.get("windows") or ()
                       if w["id"] == wid), (None, None))
    try:
        drawn = sketch(doc, window=wid)
    except ValueError as exc:  # (a window without a box)
        raise InvalidRequestError(str(exc), code="nothing_to_sketch") from None
    display = drawn["display_id"]
    png = await tools.screenshot(display)
    picture, size = await asyncio.to_thread(_window_picture, png, drawn["area"], guard, display, scene)
    said, tokens = await vlm.describe(picture, size, sketch=drawn["sketch"], title=title, app=app)
    if guard is not None:
        guard.budgets.charge_vlm_tokens(tokens)
        said = guard.redactor.text(said)
    return {"vlm": said, "vlm_tokens": tokens, "vlm_model": vlm.model}


def _window_picture(png: bytes, box: list[int], guard: Guard | None, display: int,
                    scene: Scene) -> tuple[bytes, tuple[int, int]]:
    """The display's screenshot cut to the window's box (display-local device pixels, the
    screenshot's own), as a PNG, and its size."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    if guard is not None:
        image = guard.blur_image(image, display, scene)  # (on the whole display: the boxes are its)
    x, y, w, h = box
    left, top, right, bottom = max(0, x), max(0, y), min(image.width, x + w), min(image.height, y + h)
    if right <= left or bottom <= top:
        raise ActionFailedError(f"window at {box} shows nothing on display {display}", code="not_visible")
    out = io.BytesIO()
    image.crop((left, top, right, bottom)).save(out, "PNG")
    return out.getvalue(), (right - left, bottom - top)


# A description asks the vision model only when told to (vlm=1).
DESCRIBED = Longest(VLM_TIMEOUT_S + QUICK_S, lambda body, query: VLM_TIMEOUT_S + QUICK_S if query.vlm else QUICK_S,
                    f"{QUICK_S:g} s, or {VLM_TIMEOUT_S + QUICK_S:g} s when it asks the vision model")

ROUTES = [
    Route("GET", "/api/v1/sketch", get_sketch, "A window or display as labelled boxes on a character grid",
          query=SketchQuery, answer=Sketch),
    Route("GET", "/api/v1/description", get_description,
          "A window in prose: app, focus, interactive elements in reading order; vlm=1 also asks the session's "
          "vision model", query=DescribeQuery, longest=DESCRIBED, answer=Description),
    Route("GET", "/api/v1/find", find, "Elements (and windows) a selector matches, with ids and boxes",
          query=FindQuery, answer=Matches),
    Route("GET", "/api/v1/observe", observe, "The state with a token; with since=TOKEN only what changed",
          query=ObserveQuery, answer=Observed),
    Route("POST", "/api/v1/wait_for", wait_for, "Wait until any of the conditions holds, or the timeout",
          body=WaitRequest, stops_when_client_leaves=True, longest=waiting("timeout_ms", 60, unit_s=0.001),
          answer=WaitResult),
    Route("POST", "/api/v1/assert_state", assert_state, "Check predicates; each answers what was observed",
          body=AssertRequest, answer=Checked),
    Route("POST", "/api/v1/snapshots", snapshot_save, "Save the current state under an id (a TTL, at most 32)",
          body=SnapshotRequest, answer=SnapshotInfo),
    Route("GET", "/api/v1/snapshots", snapshot_list, "The snapshots kept", answer=SnapshotList),
    Route("GET", "/api/v1/snapshots/{snapshot_id}", snapshot_get, "One snapshot's state", answer=Snapshot),
    Route("DELETE", "/api/v1/snapshots/{snapshot_id}", snapshot_delete, "Drop a snapshot", answer=Dropped),
    Route("POST", "/api/v1/snapshots/diff", snapshot_diff, "What changed between two snapshots, or one and now",
          body=SnapshotDiffRequest, answer=SnapshotDiff),
    Route("POST", "/api/v1/act_and_observe", act_and_observe, "Act on an element by id, then what changed",
          body=ActObserveRequest, stops_when_client_leaves=True, longest=typing_if("text"), answer=ActObserved),
    Route("POST", "/api/v1/type_and_observe", type_and_observe, "Type text where the focus is, then what changed",
          body=TypeObserveRequest, stops_when_client_leaves=True, longest=TYPING, answer=ActObserved),
    Route("POST", "/api/v1/key_and_observe", key_and_observe, "Press keys, then what changed",
          body=KeyObserveRequest, stops_when_client_leaves=True, longest=ACTION, answer=ActObserved),
]
