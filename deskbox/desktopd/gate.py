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

import hmac
import time
from typing import Any

import orjson
from aiohttp import web

from ..common.errors import DeskboxError, UnauthorizedError, UnavailableError
from ..common.logging import get_logger
from ..common.service_client import ServiceClient
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


class GateClient(ServiceClient):
    """The scene's gate, with the internal secret (and the session's token)."""

    name = "gate"
    relays = False  # its refusals (a 429, 403, 409 ...) are passed on as they are
    unreachable_hint = "; this session's policy is checked there"

    def __init__(self, url: str, secret: str, *, token: str | None = None, required: bool = False) -> None:
        super().__init__(url, token, TIMEOUT_S)
        self._headers[INTERNAL_HEADER] = secret
        self.secret = secret
        self.required = required
        self._active: bool = required
        self._checked = 0.0

    def internal(self, request: web.Request) -> bool:
        return hmac.compare_digest(request.headers.get(INTERNAL_HEADER, ""), self.secret)

    async def active(self) -> bool:
        if time.monotonic() - self._checked < STATE_TTL_S:
            return self._active
        try:
            self._active = bool((await self._call("GET", "/api/v1/gate"))["active"])
        except UnavailableError:
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
        except DeskboxError as exc:  # the input happened: it is not undone for a lost record
            log.warning("gate end not recorded", step=step, error=exc.message)

    async def _call(self, method: str, path: str, body: dict | None = None) -> dict[str, Any]:
        return await self.request(method, path, json=body)


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
    except UnavailableError:
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
    except DeskboxError as exc:
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
        raise UnauthorizedError("the scene aggregator's only (the session's internal secret)", code="internal_only")
    req = await read_body(request, GateStateRequest)
    gate.told(req.active)
    return json_ok({"ok": True, "active": gate.required or req.active})
