"""desktopd's side of the gate (deskbox.scene.gate): input and screenshots desktopd is
sent directly (by the OSWorld server's pyautogui commands, the MCP server's pointer
tools, any raw client) are told to the scene aggregator before and after they are
carried out, so that the session's policy refuses what it must and the trace and the
audit log see every action.

The scene's own requests carry the session's internal secret and pass straight
through: the scene has already put them through its gate. Whether to ask at all is
the scene's to say: it tells desktopd when a trace starts or stops (``POST
/api/v1/gate``), and desktopd asks again at most once a second (``GET /api/v1/gate`` on
the scene: a restarted scene, a restarted desktopd); while the scene cannot be reached, input passes unless the session has a policy (``required``),
in which case it is refused: a guard rail the scene cannot check is not waived. When the
policy blurs secrets in screenshots, the scene's answer for a screenshot names the boxes,
and desktopd blurs them before the picture leaves (``BLUR``)."""

from __future__ import annotations

import asyncio
import hmac
import time
from typing import Any

import orjson
from aiohttp import ClientError, ClientSession, ClientTimeout, web

from ..common.errors import ServiceError, Unauthorized, Unavailable, error_body
from ..common.logging import get_logger
from ..common.web import INTERFACE_HEADER, INTERNAL_HEADER, json_ok, read_body, require_json
from .models import GateStateRequest

__all__ = ["GateClient", "GATE_CLIENT", "BLUR", "gate_middleware", "gate_state"]

log = get_logger("deskbox.desktopd.gate")

GATED = frozenset({("POST", "/api/v1/pointer"), ("POST", "/api/v1/keyboard"), ("POST", "/api/v1/tablet"),
                   ("POST", "/api/v1/tablet_event"), ("POST", "/api/v1/keyboard_event"),
                   ("GET", "/api/v1/screenshot")})
# The token a 409 confirmation_required answered, for input sent to desktopd directly.
CONFIRM_HEADER = "X-Deskbox-Confirm-Token"
STATE_TTL_S = 1.0
TIMEOUT_S = 10.0


class _GateError(ServiceError):
    """An answer of the scene's gate, passed on as it is (a 429, 403, 409 ...)."""

    def __init__(self, status: int, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message", "")), code=str(error.get("code", "refused")),
                         suggested_next_tool=error.get("suggested_next_tool"), context=error.get("context"),
                         recoverable=bool(error.get("recoverable", False)))
        self.status = status


class GateClient:
    def __init__(self, url: str, secret: str, *, token: str | None = None, required: bool = False) -> None:
        self.url = url.rstrip("/")
        self.secret = secret
        self.required = required
        self._headers = {INTERNAL_HEADER: secret, **({"Authorization": f"Bearer {token}"} if token else {})}
        self._http: ClientSession | None = None
        self._active: bool = required
        self._checked = 0.0

    async def start(self) -> None:
        self._http = ClientSession(timeout=ClientTimeout(total=TIMEOUT_S), headers=self._headers)

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()

    def internal(self, request: web.Request) -> bool:
        return hmac.compare_digest(request.headers.get(INTERNAL_HEADER, ""), self.secret)

    async def active(self) -> bool:
        if time.monotonic() - self._checked < STATE_TTL_S:
            return self._active
        try:
            self._active = bool((await self._call("GET", "/api/v1/gate"))["active"])
        except Unavailable:
            self._active = self.required
        self._checked = time.monotonic()
        return self._active

    def told(self, active: bool) -> None:
        """The scene said so (a trace started or stopped): no need to wait for the next ask."""
        self._active = active or self.required
        self._checked = time.monotonic()

    async def begin(self, interface: str, route: str, args: dict[str, Any]) -> dict[str, Any]:
        """The scene's answer: ``step`` (None: nothing to record), and for a screenshot
        the boxes to ``blur`` (display-local device px)."""
        return await self._call("POST", "/api/v1/gate/begin", {"interface": interface, "route": route, "args": args})

    async def end(self, step: str, ok: bool, receipt: dict | None, error: dict | None) -> None:
        try:
            await self._call("POST", "/api/v1/gate/end", {"step": step, "ok": ok, "receipt": receipt, "error": error})
        except ServiceError as exc:  # the input happened: it is not undone for a lost record
            log.warning("gate end not recorded", step=step, error=exc.message)

    async def _call(self, method: str, path: str, body: dict | None = None) -> dict[str, Any]:
        assert self._http is not None
        try:
            async with self._http.request(method, self.url + path,
                                          data=orjson.dumps(body) if body is not None else None,
                                          headers={"Content-Type": "application/json"} if body is not None else None
                                          ) as resp:
                data = await resp.read()
                if resp.status >= 400:
                    error = error_body(data) or {"code": "gate_error", "message": data[:200].decode(errors="replace")}
                    raise _GateError(resp.status, error)
                return orjson.loads(data)
        except (ClientError, asyncio.TimeoutError, OSError) as exc:
            raise Unavailable(f"the scene aggregator's gate at {self.url} is not answering: {exc!r}; "
                              "this session's policy is checked there", code="gate_unavailable") from exc


GATE_CLIENT = web.AppKey("gate_client", GateClient)
# On a screenshot request: the boxes the policy blurs in it (display-local device px).
BLUR = "deskbox_blur"


async def _args(request: web.Request) -> dict[str, Any]:
    if request.method == "GET":
        return dict(request.query)
    if request.body_exists:
        require_json(request)  # (before the policy is asked about a body the route will refuse)
    try:
        body = orjson.loads(await request.read())  # (aiohttp keeps the body for the handler)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {"events": body} if isinstance(body, list) else {}


@web.middleware
async def gate_middleware(request: web.Request, handler):
    gate = request.app.get(GATE_CLIENT)
    if gate is None or (request.method, request.path) not in GATED or gate.internal(request):
        return await handler(request)
    if not await gate.active():
        return await handler(request)
    interface = request.headers.get(INTERFACE_HEADER) or "desktopd"
    args = await _args(request)
    confirm = request.headers.get(CONFIRM_HEADER)
    if confirm:
        args["confirm_token"] = confirm[:64]  # (desktopd's own bodies have no field for it)
    try:
        answer = await gate.begin(interface[:32], request.path, args)
    except Unavailable:
        if gate.required:
            raise
        answer = {}  # only a trace missed this one: the input is not refused for it
    step = answer.get("step")
    blur = answer.get("blur")
    if isinstance(blur, list):
        # The policy blurs secrets in screenshots: in this one too, before it leaves.
        request[BLUR] = tuple(tuple(box) for box in blur if isinstance(box, list) and len(box) == 4)
    if step is None:
        return await handler(request)
    try:
        response = await handler(request)
    except ServiceError as exc:
        await gate.end(step, False, None, exc.to_json()["error"])
        raise
    except BaseException as exc:
        await gate.end(step, False, None, {"code": "internal", "message": repr(exc)[:200]})
        raise
    receipt = None
    if response.content_type == "application/json" and isinstance(getattr(response, "body", None), bytes):
        try:
            receipt = orjson.loads(response.body)
        except ValueError:
            receipt = None
    await gate.end(step, True, receipt, None)
    return response


async def gate_state(request: web.Request) -> web.Response:
    """``POST /api/v1/gate {active}``: the scene, saying whether to ask it (internal)."""
    gate = request.app.get(GATE_CLIENT)
    if gate is None or not gate.internal(request):
        raise Unauthorized("the scene aggregator's only (the session's internal secret)", code="internal_only")
    req = await read_body(request, GateStateRequest)
    gate.told(req.active)
    return json_ok({"ok": True, "active": gate.required or req.active})
