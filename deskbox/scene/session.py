"""``/api/v1/session/*``: the session state API, published to agents by the scene
aggregator (the session's front door) and carried out by ``deskbox up`` over its
control socket (``deskbox.common.session_api``).

The scene's own part is the id epoch: while a reset runs no scene is built, and every
id handed out before it is retired afterwards, so an agent acting on an old id gets
409 ``stale_element``, never a click on whatever took that element's place."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from aiohttp import web

from ..common.errors import ServiceError
from ..common.logging import get_logger
from ..common.openapi import Route
from ..common.session_api import (
    ClaimRequest,
    ContextRequest,
    ExtendRequest,
    ResetRequest,
    SessionControl,
    SnapshotRequest,
)
from ..common.web import json_ok, read_body, validate
from .engine import SceneEngine
from .sources import Bridge

__all__ = ["SessionApi", "SESSION", "ROUTES"]

log = get_logger("deskbox.scene.session")

# How long a reset waits for the browser to be readable again before answering anyway
# (with "healthy": false).
HEALTHY_TIMEOUT_S = 20.0


@dataclass
class SessionApi:
    control: SessionControl
    engine: SceneEngine


SESSION = web.AppKey("session", SessionApi)


def _engine(request: web.Request) -> SceneEngine:
    return request.app[SESSION].engine


def _control(request: web.Request) -> SessionControl:
    return request.app[SESSION].control


def _bridge(request: web.Request) -> Bridge | None:
    return _engine(request).bridge


async def get_session(request: web.Request) -> web.Response:
    state = await _control(request).call("GET", "/session")
    return json_ok({**state, "id_epoch": _engine(request).epoch})


async def reset(request: web.Request) -> web.Response:
    req = await read_body(request, ResetRequest) if request.can_read_body else ResetRequest()
    started = time.perf_counter()
    engine = _engine(request)
    async with engine.new_epoch():
        done = await _control(request).call("POST", "/reset", req)
    healthy = await _healthy(request)
    return json_ok({**done, "reset_ms": round((time.perf_counter() - started) * 1000, 1),
                    "session_reset_ms": done["reset_ms"], "healthy": healthy, "id_epoch": engine.epoch})


async def _healthy(request: web.Request) -> bool:
    """Wait for a scene built from the new state with every source read (the browser
    connected again and its page readable)."""
    deadline = time.monotonic() + HEALTHY_TIMEOUT_S
    bridge = _bridge(request)
    # A source this scene runs without (no browser, no AT-SPI, no OCR) is missing by design.
    absent = {"ocr"} | ({"cdp"} if bridge is None else set()) | ({"atspi"} if _engine(request).atspi is None else set())
    while True:
        problem = None
        try:
            if bridge is not None and (await bridge.health()).get("status") != "ok":
                problem = "the browser is not connected yet"
            else:
                scene = await _engine(request).scene("agent-turn")
                problem = next((f"{k}: {v}" for k, v in scene.sources.items() if v and k not in absent), None)
        except ServiceError as exc:
            problem = exc.message
        if problem is None:
            return True
        if time.monotonic() > deadline:
            log.warning("the session is not healthy after the reset", problem=problem)
            return False
        await asyncio.sleep(0.05)


async def snapshot(request: web.Request) -> web.Response:
    req = await read_body(request, SnapshotRequest)
    return json_ok(await _control(request).call("POST", "/snapshot", req))


async def delete_snapshot(request: web.Request) -> web.Response:
    name = validate(SnapshotRequest, {"name": request.match_info["name"]}).name
    return json_ok(await _control(request).call("DELETE", f"/snapshot/{name}"))


async def extend(request: web.Request) -> web.Response:
    req = await read_body(request, ExtendRequest)
    return json_ok(await _control(request).call("POST", "/extend", req))


async def bind_context(request: web.Request) -> web.Response:
    req = await read_body(request, ContextRequest)
    return json_ok(await _control(request).call("POST", "/context", req))


async def unbind_context(request: web.Request) -> web.Response:
    return json_ok(await _control(request).call("DELETE", "/context"))


async def claim(request: web.Request) -> web.Response:
    req = await read_body(request, ClaimRequest)
    return json_ok(await _control(request).call("POST", "/claim", req))


async def let_go(request: web.Request) -> web.Response:
    holder = validate(ClaimRequest, {"holder": request.match_info["holder"]}).holder
    return json_ok(await _control(request).call("DELETE", f"/claim/{holder}"))


ROUTES = [
    Route("GET", "/api/v1/session", get_session,
          "What the session runs: snapshots, browser context, lifetime, children and what is restarting"),
    Route("POST", "/api/v1/session/reset", reset,
          "Return the session to a snapshot (default: as right after start); answers once it is healthy",
          body=ResetRequest),
    Route("POST", "/api/v1/session/snapshot", snapshot, "Save the home folder and browser profile under a name",
          body=SnapshotRequest),
    Route("DELETE", "/api/v1/session/snapshot/{name}", delete_snapshot, "Delete a snapshot"),
    Route("POST", "/api/v1/session/extend", extend, "Extend the session's lifetime (--ttl)", body=ExtendRequest),
    Route("POST", "/api/v1/session/context", bind_context,
          "Bind the browser to a persistent context (cookies, storage, logins); 409 while another session holds it",
          body=ContextRequest),
    Route("DELETE", "/api/v1/session/context", unbind_context, "Let go of the context, saving it when it persists"),
    Route("POST", "/api/v1/session/claim", claim,
          "Claim the session for a holder (a runner drawing from a pool of sessions), or renew its claim; "
          "409 claimed while another holder's claim runs",
          body=ClaimRequest),
    Route("DELETE", "/api/v1/session/claim/{holder}", let_go,
          "Let go of the holder's claim (released: false when it had already run out)"),
]
