"""The session state API: its request models and its one client.

``deskbox up`` serves it on a Unix socket in the session's runtime folder (the control
socket, readable by the session user only); the scene aggregator publishes it to
agents as ``/api/v1/session/*`` and the OSWorld server uses it to start the browser and
set the background. Both call it through ``SessionControl``; its errors arrive as the
service errors they stand for."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import ClientSession, ClientTimeout, UnixConnector
from pydantic import BaseModel, ConfigDict, Field

from .errors import ActionFailedError, DeskboxError, InvalidRequestError, NotFoundError, UnavailableError
from .openapi import SLOW_S, Longest

__all__ = [
    "FORWARDED_SLOW",
    "HEALTHY_TIMEOUT_S",
    "RESET_TIMEOUT_S",
    "SCENE_RESET_S",
    "SNAPSHOT_NAME",
    "ResetRequest",
    "SnapshotRequest",
    "ExtendRequest",
    "ContextRequest",
    "BrowserRequest",
    "WallpaperRequest",
    "ClaimRequest",
    "SettleRequest",
    "SETTLE_LONGEST",
    "CLAIM_HOLDER",
    "SessionControl",
]

SNAPSHOT_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
CONTEXT_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
CLAIM_HOLDER = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$"
# The control socket's slow routes (a reset stops and starts the browser and may copy a
# large home) answer within SLOW_S, a 504 naming the bound at worst: wait a little longer
# than that for their answer. A route forwarding to them is bounded by FORWARDED_SLOW.
RESET_TIMEOUT_S = SLOW_S + 10
FORWARDED_SLOW = Longest(RESET_TIMEOUT_S + 10)
# The scene's reset answers once a scene of the new state has every source read, waiting
# at most HEALTHY_TIMEOUT_S for that after the session's reset: SCENE_RESET_S bounds the
# whole route, and a caller of it (the provider) waits a little longer still, so that the
# outermost caller is the one that waits longest.
HEALTHY_TIMEOUT_S = 20.0
SCENE_RESET_S = RESET_TIMEOUT_S + HEALTHY_TIMEOUT_S + 10


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ResetRequest(_Strict):
    """Return the session to a snapshot (default ``start``: the state right after start)."""

    snapshot: str = Field("start", pattern=SNAPSHOT_NAME)


class SnapshotRequest(_Strict):
    """Save the home folder and browser profile under ``name`` (letters, digits, ``.``,
    ``_``, ``-``; at most 64)."""

    name: str = Field(pattern=SNAPSHOT_NAME)


class ExtendRequest(_Strict):
    """Push the session's end (``--ttl``) back by ``seconds``."""

    seconds: float = Field(gt=0, le=7 * 24 * 3600)


class ContextRequest(_Strict):
    """Bind the browser to persistent context ``id``: the browser restarts on its
    profile; with ``persist`` the profile is saved back when the session lets go of it."""

    id: str = Field(pattern=CONTEXT_ID)
    persist: bool = True
    url: str | None = Field(None, max_length=8192)


class BrowserRequest(_Strict):
    """Start the browser if it is not running, on ``urls`` (none: Chrome's own start)."""

    urls: list[str] = Field(default_factory=list, max_length=64)


class WallpaperRequest(_Strict):
    """Show ``path`` (an image file the session user can read) as the background."""

    path: str = Field(min_length=1, max_length=4096)


class SettleRequest(_Strict):
    """Wait until the session is quiet: its processes used less than ``quiet_share`` of
    a core over the last ``for_s`` seconds (its apps have started and drawn), or
    ``timeout_s`` passed. Answers ``settled`` (false: the time ran out), ``waited_s``,
    ``share`` (over the last window) and ``cpu_s`` (used while waiting)."""

    quiet_share: float = Field(0.15, gt=0, le=64)
    for_s: float = Field(1.0, ge=0.25, le=60)
    timeout_s: float = Field(60.0, gt=0, le=120)


# The longest settle: its timeout, and a read of the processes after it (within the
# control socket's own bound, RESET_TIMEOUT_S).
SETTLE_LONGEST = Longest(120 + 10, lambda body, query: body.timeout_s + 10, "timeout_s + 10 s")


class ClaimRequest(_Strict):
    """Claim the session for ``holder`` (a runner's name: letters, digits, ``.``, ``_``,
    ``:``, ``@``, ``-``; at most 128) for ``ttl_s`` seconds, or renew the claim it holds.
    409 ``claimed`` while another holder's claim runs."""

    holder: str = Field(pattern=CLAIM_HOLDER)
    ttl_s: float = Field(300.0, gt=0, le=24 * 3600)


_ERRORS: dict[int, type[DeskboxError]] = {400: InvalidRequestError, 404: NotFoundError, 409: ActionFailedError}


class SessionControl:
    """The session's control socket, over HTTP."""

    def __init__(self, socket_path: str | None) -> None:
        self.socket_path = socket_path
        self._http: ClientSession | None = None

    @property
    def available(self) -> bool:
        return self.socket_path is not None

    async def start(self) -> None:
        if self.socket_path is not None:
            self._http = ClientSession(connector=UnixConnector(path=self.socket_path),
                                       timeout=ClientTimeout(total=RESET_TIMEOUT_S))

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()

    async def call(self, method: str, path: str, body: BaseModel | dict | None = None) -> Any:
        if self._http is None:
            raise UnavailableError("this service does not run under deskbox up: it has no session to manage",
                                   code="no_session")
        payload = body.model_dump() if isinstance(body, BaseModel) else body
        try:
            async with self._http.request(method, "http://session" + path, json=payload) as resp:
                data = await resp.json(content_type=None)
        except (OSError, asyncio.TimeoutError, ValueError) as exc:
            raise UnavailableError(f"the session's control socket is not answering: {exc}", code="no_session") from exc
        if resp.status >= 400:
            err = data.get("error", {}) if isinstance(data, dict) else {}
            cls = _ERRORS.get(resp.status, UnavailableError)
            raise cls(err.get("message", f"session control: {resp.status}"), code=err.get("code"))
        return data
