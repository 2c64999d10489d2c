"""The session's control socket: ``deskbox up`` answers the session state API
(``deskbox.common.session_api``) on a Unix socket in the runtime folder, owned by the
session user and closed to everyone else. The scene aggregator publishes it to
agents; nothing here listens on a network."""

from __future__ import annotations

import os
import re
from pathlib import Path

from aiohttp import web

from ..common.errors import ActionFailedError, InvalidRequestError, NotFoundError
from ..common.logging import get_logger
from ..common.openapi import SLOW, Route, add_routes
from ..common.session_api import (
    CLAIM_HOLDER,
    SETTLE_LONGEST,
    BrowserRequest,
    ClaimRequest,
    ContextRequest,
    ExtendRequest,
    ResetRequest,
    SettleRequest,
    SnapshotRequest,
    WallpaperRequest,
)
from ..common.web import error_middleware, json_ok, read_body
from .claims import Claim, Claimed, NotHolder
from .contexts import ContextError, ContextInUse
from .state import Busy, NotFound, SessionState, StateError
from .usage import settle as settle_processes

__all__ = ["ControlServer", "create_control_app"]

log = get_logger("deskbox.control")
STATE = web.AppKey("state", SessionState)
CLAIM = web.AppKey("claim", Claim)


def _translate(exc: Exception) -> Exception:
    if isinstance(exc, NotFound):
        return NotFoundError(str(exc), code="unknown_snapshot")
    if isinstance(exc, (Busy, ContextInUse)):
        return ActionFailedError(str(exc), code="context_in_use" if isinstance(exc, ContextInUse) else "busy")
    if isinstance(exc, (StateError, ContextError)):
        return InvalidRequestError(str(exc), code="validation_error")
    return exc


@web.middleware
async def _state_errors(request: web.Request, handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except (StateError, ContextError) as exc:
        raise _translate(exc) from exc


async def session(request: web.Request) -> web.Response:
    return json_ok({**request.app[STATE].describe(), "claim": request.app[CLAIM].describe()})


async def reset(request: web.Request) -> web.Response:
    req = await read_body(request, ResetRequest) if request.body_exists else ResetRequest()
    return json_ok(await request.app[STATE].reset(req.snapshot))


async def snapshot(request: web.Request) -> web.Response:
    req = await read_body(request, SnapshotRequest)
    return json_ok(await request.app[STATE].snapshot(req.name))


async def delete_snapshot(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    request.app[STATE].delete(name)
    return json_ok({"deleted": name})


async def extend(request: web.Request) -> web.Response:
    req = await read_body(request, ExtendRequest)
    return json_ok({"expires_at": request.app[STATE].extend(req.seconds)})


async def bind_context(request: web.Request) -> web.Response:
    req = await read_body(request, ContextRequest)
    return json_ok(await request.app[STATE].bind_context(req.id, req.persist, req.url))


async def unbind_context(request: web.Request) -> web.Response:
    return json_ok({"released": await request.app[STATE].unbind_context()})


async def browser(request: web.Request) -> web.Response:
    req = await read_body(request, BrowserRequest)
    return json_ok(await request.app[STATE].start_browser(req.urls))


async def get_wallpaper(request: web.Request) -> web.Response:
    image = request.app[STATE].wallpaper()
    return json_ok({"path": str(image) if image else None})


async def set_wallpaper(request: web.Request) -> web.Response:
    req = await read_body(request, WallpaperRequest)
    image = Path(req.path)
    if not image.is_absolute() or not image.is_file():
        raise NotFoundError(f"{req.path} is not a file", code="file_not_found")
    if not await request.app[STATE].set_wallpaper(image):
        raise ActionFailedError(f"Sway did not take {req.path} as the background (is swaybg installed, "
                                "and is the file an image the session user can read?)", code="wallpaper_failed")
    return json_ok({"path": str(image)})


async def settle(request: web.Request) -> web.Response:
    req = await read_body(request, SettleRequest) if request.body_exists else SettleRequest()
    return json_ok((await settle_processes(req.quiet_share, req.for_s, req.timeout_s)).to_json())


async def claim(request: web.Request) -> web.Response:
    req = await read_body(request, ClaimRequest)
    try:
        return json_ok(request.app[CLAIM].take(req.holder, req.ttl_s))
    except Claimed as exc:
        raise ActionFailedError(str(exc), code="claimed") from exc


async def let_go(request: web.Request) -> web.Response:
    holder = request.match_info["holder"]
    if not re.fullmatch(CLAIM_HOLDER, holder):
        raise InvalidRequestError(f"holder {holder[:200]!r} does not match {CLAIM_HOLDER}", code="validation_error")
    try:
        return json_ok({"released": request.app[CLAIM].let_go(holder)})
    except NotHolder as exc:
        raise ActionFailedError(str(exc), code="not_holder") from exc


ROUTES = [
    Route("GET", "/session", session, "What the session runs, its snapshots, context and lifetime"),
    Route("POST", "/reset", reset, "Return to a snapshot", body=ResetRequest, longest=SLOW),
    Route("POST", "/snapshot", snapshot, "Save the home and browser profile", body=SnapshotRequest, longest=SLOW),
    Route("DELETE", "/snapshot/{name}", delete_snapshot, "Delete a snapshot"),
    Route("POST", "/extend", extend, "Extend the session's lifetime", body=ExtendRequest),
    Route("POST", "/context", bind_context, "Bind the browser to a persistent context", body=ContextRequest,
          longest=SLOW),
    Route("DELETE", "/context", unbind_context, "Let go of the context (saved when it persists)", longest=SLOW),
    Route("POST", "/browser", browser, "Start the browser when it is not running", body=BrowserRequest, longest=SLOW),
    Route("POST", "/settle", settle, "Wait until the session's processes are quiet", body=SettleRequest,
          longest=SETTLE_LONGEST),
    Route("POST", "/claim", claim, "Claim the session for a holder, or renew its claim", body=ClaimRequest),
    Route("DELETE", "/claim/{holder}", let_go, "Let go of a holder's claim"),
    Route("GET", "/wallpaper", get_wallpaper, "The background image"),
    Route("POST", "/wallpaper", set_wallpaper, "Set the background image", body=WallpaperRequest),
]


def create_control_app(state: SessionState, claim: Claim | None = None) -> web.Application:
    app = web.Application(middlewares=[error_middleware, _state_errors])
    app[STATE] = state
    app[CLAIM] = claim or Claim()
    add_routes(app, ROUTES)
    return app


class ControlServer:
    def __init__(self, state: SessionState, path: Path, uid: int, gid: int) -> None:
        self.state, self.path, self.uid, self.gid = state, path, uid, gid
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        self._runner = web.AppRunner(create_control_app(self.state), access_log=None)
        await self._runner.setup()
        self.path.unlink(missing_ok=True)
        await web.UnixSite(self._runner, str(self.path)).start()
        os.chmod(self.path, 0o600)
        if os.geteuid() == 0:
            os.chown(self.path, self.uid, self.gid)

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
