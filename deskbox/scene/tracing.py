"""Routes of the gate: traces (start, stop, status, a finished one as a tar stream), the
policy in force, and the two internal routes desktopd asks about the input it is sent
directly."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from ..common.errors import NotServedError
from ..common.openapi import SLOW, Route
from ..common.web import json_ok, read_body, send_stream, validate
from ..trace.archive import TRACE_ID, pack
from .gate import Gate

__all__ = ["GATE", "ROUTES", "gate_of"]

GATE = web.AppKey("gate", Gate)


def gate_of(request: web.Request) -> Gate:
    gate = request.app.get(GATE)
    if gate is None:
        raise NotServedError("this scene has no desktop behind it (deskbox up --mock): no traces, replay or policy",
                             code="not_served")
    return gate


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TraceStartRequest(_Strict):
    label: str | None = Field(None, max_length=200)
    shots: bool = True  # screenshots before and after steps
    shots_every: int = Field(1, ge=1, le=10_000)  # ... of every Nth step
    video: bool = False  # an mp4 of the display beside the steps
    display: int = Field(0, ge=0)  # the display the video records


class TracePath(_Strict):
    trace_id: str = Field(pattern=TRACE_ID, description="as trace/stop answered it, e.g. 20261128T153000-a1b2c3")


class ProposeRequest(_Strict):
    target: str = Field(min_length=2, max_length=32, pattern=r"^a\d+-\d+$")
    action: str = Field("click", min_length=1, max_length=32)


class GateBeginRequest(_Strict):
    interface: str = Field("desktopd", min_length=1, max_length=32)
    route: Literal["/api/v1/pointer", "/api/v1/keyboard", "/api/v1/tablet", "/api/v1/tablet_event",
                   "/api/v1/keyboard_event", "/api/v1/screenshot"]
    args: dict[str, Any] = Field(default_factory=dict)


class GateEndRequest(_Strict):
    step: str = Field(min_length=1, max_length=64)
    ok: bool
    receipt: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


async def trace_start(request: web.Request) -> web.Response:
    req = await read_body(request, TraceStartRequest)
    gate = gate_of(request)
    return json_ok(await gate.start_trace(req.label, shots_every=req.shots_every if req.shots else 0,
                                          video=req.video, video_display=req.display))


async def trace_stop(request: web.Request) -> web.Response:
    return json_ok(await gate_of(request).stop_trace())


async def trace_archive(request: web.Request) -> web.StreamResponse:
    """A finished trace's folder as a tar stream, for a runner that cannot copy files
    out of the session (deskbox.trace.archive.unpack writes it back as a folder)."""
    trace_id = validate(TracePath, dict(request.match_info)).trace_id
    folder = gate_of(request).trace_folder(trace_id)
    stream = await asyncio.to_thread(pack, folder)
    try:
        size = await asyncio.to_thread(lambda: stream.seek(0, 2))
        stream.seek(0)
        return await send_stream(request, stream, size, "application/x-tar",
                                 {"Content-Disposition": f'attachment; filename="{trace_id}.tar"'})
    finally:
        stream.close()


async def trace_delete(request: web.Request) -> web.Response:
    trace_id = validate(TracePath, dict(request.match_info)).trace_id
    return json_ok(await gate_of(request).delete_trace(trace_id))


async def trace_status(request: web.Request) -> web.Response:
    return json_ok(gate_of(request).status())


async def policy(request: web.Request) -> web.Response:
    gate = gate_of(request)
    return json_ok(gate.policy.status() if gate.policy is not None else {"ok": True, "configured": False})


async def propose(request: web.Request) -> web.Response:
    req = await read_body(request, ProposeRequest)
    return json_ok(await gate_of(request).propose(req.target, req.action))


async def gate_state(request: web.Request) -> web.Response:
    gate = gate_of(request)
    gate.check_internal(request)
    return json_ok({"active": gate.active})


async def gate_begin(request: web.Request) -> web.Response:
    gate = gate_of(request)
    gate.check_internal(request)
    req = await read_body(request, GateBeginRequest)
    return json_ok(await gate.begin_direct(req.interface, req.route, req.args))


async def gate_end(request: web.Request) -> web.Response:
    gate = gate_of(request)
    gate.check_internal(request)
    req = await read_body(request, GateEndRequest)
    await gate.end_direct(req.step, req.ok, req.receipt, req.error)
    return json_ok({"ok": True})


ROUTES = [
    Route("POST", "/api/v1/trace/start", trace_start,
          "Start a trace: every action, its element and screenshots, kept in a folder", body=TraceStartRequest),
    Route("POST", "/api/v1/trace/stop", trace_stop, "Stop the trace being recorded; answers its folder", longest=SLOW),
    Route("GET", "/api/v1/trace/status", trace_status, "The trace being recorded, if any"),
    Route("GET", "/api/v1/traces/{trace_id}", trace_archive,
          "A finished trace's folder as a tar stream (steps.jsonl, trace.json, shots/, video.mp4)",
          responses="application/x-tar", longest=SLOW),
    Route("DELETE", "/api/v1/traces/{trace_id}", trace_delete,
          "Remove a finished trace from the session (a runner that has fetched it)", longest=SLOW),
    Route("GET", "/api/v1/policy", policy, "The guard rails in force: budgets, redaction, actions, confirmation"),
    Route("POST", "/api/v1/act/propose", propose,
          "Whether an action on an element needs confirmation; if so, a token for it and what it would hit",
          body=ProposeRequest),
    Route("GET", "/api/v1/gate", gate_state, "Internal (desktopd): whether to ask about direct input"),
    Route("POST", "/api/v1/gate/begin", gate_begin, "Internal (desktopd): input sent to desktopd directly begins",
          body=GateBeginRequest),
    Route("POST", "/api/v1/gate/end", gate_end, "Internal (desktopd): that input ended", body=GateEndRequest),
]
