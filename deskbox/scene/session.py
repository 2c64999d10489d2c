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
from pydantic import BaseModel

from ..answers import Deleted, Extended, Released, SavedState, SessionClaim, SessionInfo, SessionReset, Settled
from ..common.errors import DeskboxError
from ..common.logging import get_logger
from ..common.openapi import Longest, Route
from ..common.session_api import (
    FORWARDED_SLOW,
    HEALTHY_TIMEOUT_S,
    SCENE_RESET_S,
    SETTLE_LONGEST,
    ClaimRequest,
    ContextRequest,
    ExtendRequest,
    ResetRequest,
    SessionControl,
    SettleRequest,
    SnapshotRequest,
)
from ..common.web import Handler, json_ok, read_body, validate
from .engine import SceneEngine
from .sources import Bridge

__all__ = ["SessionApi", "SESSION", "ROUTES"]

log = get_logger("deskbox.scene.session")

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
    req = await read_body(request, ResetRequest) if request.body_exists else ResetRequest()
    started = time.perf_counter()
    engine = _engine(request)
    async with engine.new_epoch():
        done = await _control(request).call("POST", "/reset", req)
    healthy = await _healthy(request, browser=done.get("browser", True))
    return json_ok({**done, "reset_ms": round((time.perf_counter() - started) * 1000, 1),
                    "session_reset_ms": done["reset_ms"], "healthy": healthy, "id_epoch": engine.epoch})


async def _healthy(request: web.Request, browser: bool = True) -> bool:
    """Wait for a scene built from the new state with every source read (the browser
    connected again and its page readable, unless the reset left it closed)."""
    deadline = time.monotonic() + HEALTHY_TIMEOUT_S
    bridge = _bridge(request) if browser else None
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
        except DeskboxError as exc:
            problem = exc.message
        if problem is None:
            return True
        if time.monotonic() > deadline:
            log.warning("the session is not healthy after the reset", problem=problem)
            return False
        await asyncio.sleep(0.05)


def _forward(method: str, path: str, body: type[BaseModel] | None = None) -> Handler:
    """A handler that validates ``body`` and hands it to the session's own ``path``."""

    async def handler(request: web.Request) -> web.Response:
        req = await read_body(request, body) if body is not None else None
        return json_ok(await _control(request).call(method, path, req))

    handler.__name__ = path.strip("/").replace("/", "_") or "session"
    return handler


def _forward_named(path: str, model: type[BaseModel], field: str) -> Handler:
    """A DELETE naming what it deletes in the URL (``{field}``), checked by ``model``
    before it reaches the session."""

    async def handler(request: web.Request) -> web.Response:
        value = getattr(validate(model, {field: request.match_info[field]}), field)
        return json_ok(await _control(request).call("DELETE", f"{path}/{value}"))

    handler.__name__ = "delete_" + path.strip("/")
    return handler


ROUTES = [
    Route("GET", "/api/v1/session", get_session,
          "What the session runs: snapshots, browser context, lifetime, children and what is restarting",
          answer=SessionInfo),
    Route("POST", "/api/v1/session/reset", reset,
          "Return the session to a snapshot (default: as right after start); answers once it is healthy",
          body=ResetRequest, longest=Longest(SCENE_RESET_S), answer=SessionReset),
    Route("POST", "/api/v1/session/snapshot", _forward("POST", "/snapshot", SnapshotRequest),
          "Save the home folder and browser profile under a name", body=SnapshotRequest, longest=FORWARDED_SLOW,
          answer=SavedState),
    Route("DELETE", "/api/v1/session/snapshot/{name}", _forward_named("/snapshot", SnapshotRequest, "name"),
          "Delete a snapshot", answer=Deleted),
    Route("POST", "/api/v1/session/extend", _forward("POST", "/extend", ExtendRequest),
          "Extend the session's lifetime (--ttl)", body=ExtendRequest, answer=Extended),
    Route("POST", "/api/v1/session/context", _forward("POST", "/context", ContextRequest),
          "Bind the browser to a persistent context (cookies, storage, logins); 409 while another session holds it",
          body=ContextRequest, longest=FORWARDED_SLOW),
    Route("DELETE", "/api/v1/session/context", _forward("DELETE", "/context"),
          "Let go of the context, saving it when it persists", longest=FORWARDED_SLOW),
    Route("POST", "/api/v1/session/settle", _forward("POST", "/settle", SettleRequest),
          "Wait until the session is quiet: its processes used less than quiet_share of a core over the last "
          "for_s seconds (the apps a task started have started and drawn), or timeout_s passed",
          body=SettleRequest, longest=SETTLE_LONGEST, answer=Settled),
    Route("POST", "/api/v1/session/claim", _forward("POST", "/claim", ClaimRequest),
          "Claim the session for a holder (a runner drawing from a pool of sessions), or renew its claim; "
          "409 claimed while another holder's claim runs",
          body=ClaimRequest, answer=SessionClaim),
    Route("DELETE", "/api/v1/session/claim/{holder}", _forward_named("/claim", ClaimRequest, "holder"),
          "Let go of the holder's claim (released: false when it had already run out)", answer=Released),
]
