"""HTTP plumbing shared by the services: one middleware that turns every error into
``{"error": {"code", "message", "recoverable", "suggested_next_tool", "context"}}`` with an explicit status and logs one canonical line
per request, optional bearer-token auth, and pydantic validation at the edge."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, BinaryIO, Callable, TypeVar

import structlog
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from pydantic import BaseModel, ValidationError

from .callers import callers_middleware
from .errors import (
    ClientGoneError,
    DeskboxError,
    InputBusyError,
    InvalidRequestError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedMediaTypeError,
)
from .logging import get_logger
from .settings import env_int

__all__ = [
    "error_middleware",
    "auth_middleware",
    "concurrency_middleware",
    "guarded",
    "read_body",
    "require_json",
    "read_query",
    "read_form",
    "validate",
    "BODY_ERRORS",
    "json_ok",
    "ModelT",
    "stop_when_client_leaves",
    "send_and_remove",
    "send_stream",
    "client_left",
    "taking_turn",
    "TURN_WAIT_S",
    "WS_PROTOCOL",
    "WS_TOKEN_PREFIX",
]

log = get_logger("deskbox.http")
ModelT = TypeVar("ModelT", bound=BaseModel)

# aiohttp's own HTTP errors (404 unknown route, 405, 413 body too large) keep their
# status but get our body shape and a stable code.
_HTTP_CODES = {
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def _error_response(status: int, code: str, message: str, details: Any = None) -> web.Response:
    # (A wrong route or method is mended by another call; a crash is not.)
    body: dict[str, Any] = {"code": code, "message": message, "recoverable": status < 500,
                            "suggested_next_tool": None, "context": None}
    if details is not None:
        body["details"] = details
    return web.json_response({"error": body}, status=status)


@web.middleware
async def error_middleware(request: web.Request, handler) -> web.StreamResponse:
    request_id = request.headers.get("X-Request-Id") or uuid.uuid4().hex[:12]
    structlog.contextvars.bind_contextvars(request_id=request_id)
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        response.headers["X-Request-Id"] = request_id
        return response
    except DeskboxError as exc:
        status = exc.http_status
        resp = web.json_response(exc.to_json(), status=status)
        resp.headers["X-Request-Id"] = request_id
        if status == 503:
            resp.headers["Retry-After"] = "1"  # a component is coming back
        return resp
    except web.HTTPException as exc:
        status = exc.status
        if exc.status < 400:
            raise
        code = _HTTP_CODES.get(exc.status, "http_error")
        resp = _error_response(exc.status, code, exc.reason or code)
        resp.headers["X-Request-Id"] = request_id
        return resp
    except Exception:
        status = 500
        log.exception("unhandled error")
        return _error_response(500, "internal", "internal error; see the service log")
    finally:
        log.info(
            "request",
            method=request.method,
            path=request.path,
            status=status,
            ms=round((time.perf_counter() - started) * 1000, 2),
        )
        structlog.contextvars.unbind_contextvars("request_id")


# The scene's own requests to desktopd carry the session's internal secret in this header
# (deskbox.common.options.INTERNAL_SECRET_ENV); a client names the interface it is (the MCP
# server, OS Screen Observer's API) in the other, for traces and the policy.
INTERNAL_HEADER = "X-Deskbox-Internal"
INTERFACE_HEADER = "X-Deskbox-Interface"


# A browser's WebSocket cannot send an Authorization header, and a token in the URL
# ends up in logs and history. A page opening a websocket offers two subprotocols
# instead: WS_PROTOCOL, which the server answers with, and WS_TOKEN_PREFIX followed by
# the token in unpadded base64url (subprotocol names allow few characters).
WS_PROTOCOL = "deskbox"
WS_TOKEN_PREFIX = "deskbox.token."


def _websocket_token(request: web.Request) -> bytes | None:
    if request.headers.get("Upgrade", "").lower() != "websocket":
        return None
    for offered in request.headers.get("Sec-WebSocket-Protocol", "").split(","):
        offered = offered.strip()
        if offered.startswith(WS_TOKEN_PREFIX):
            encoded = offered[len(WS_TOKEN_PREFIX):]
            with contextlib.suppress(ValueError):
                return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    return None


def auth_middleware(token: str | None, open_paths: frozenset[str]):
    """Bearer-token auth when ``token`` is set; ``open_paths`` (health probes) stay open.
    A websocket may carry the token in its subprotocols instead (``WS_TOKEN_PREFIX``)."""

    expected = f"Bearer {token}".encode() if token else None

    @web.middleware
    async def middleware(request: web.Request, handler) -> web.StreamResponse:
        if expected is not None and request.path not in open_paths:
            given = request.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                offered = _websocket_token(request)
                if offered is None or not hmac.compare_digest(b"Bearer " + offered, expected):
                    raise UnauthorizedError("missing or wrong bearer token (Authorization: Bearer <token>)")
        return await handler(request)

    return middleware


def concurrency_middleware(open_paths: frozenset[str], limit: int | None = None):
    """At most ``limit`` requests in the service at once (``DESKBOX_MAX_REQUESTS``; a
    websocket counts while it is open), ``open_paths`` (health probes) aside: beyond it,
    503 ``overloaded`` with ``Retry-After`` before any work, so that a flood (a page,
    a runaway harness) costs the session a refusal each rather than its memory."""
    most = limit if limit is not None else env_int("DESKBOX_MAX_REQUESTS")
    in_flight = 0

    @web.middleware
    async def middleware(request: web.Request, handler) -> web.StreamResponse:
        nonlocal in_flight
        if request.path in open_paths:
            return await handler(request)
        if in_flight >= most:
            raise UnavailableError(f"the service is answering {in_flight} requests, its most at once "
                              "(DESKBOX_MAX_REQUESTS); try again in a moment", code="overloaded",
                              context={"in_flight": in_flight, "limit": most})
        in_flight += 1
        try:
            return await handler(request)
        finally:
            in_flight -= 1

    return middleware


def guarded(token: str | None, open_paths: frozenset[str]) -> list:
    """What every service puts in front of its handlers, in this order: who may call
    (``callers``: web pages, DNS rebinding), how many at once, and the token."""
    return [callers_middleware(), concurrency_middleware(open_paths), auth_middleware(token, open_paths)]


def _validation_message(exc: ValidationError) -> tuple[str, list[dict[str, Any]]]:
    details = []
    parts = []
    for err in exc.errors(include_url=False, include_context=False, include_input=False):
        loc = ".".join(str(p) for p in err["loc"]) or "body"
        details.append({"field": loc, "message": err["msg"]})
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts), details


def validate(model: type[ModelT], data: Any, *, context: dict[str, Any] | None = None) -> ModelT:
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        message, details = _validation_message(exc)
        raise InvalidRequestError(message, code="validation_error", details=details) from exc


def require_json(request: web.Request) -> None:
    """A 415 unless the body says it is JSON (``application/json`` or a ``+json`` type).
    The types a web page may send to another origin without asking first (``text/plain``,
    a form, no type at all) are what a page uses to make a service act for it
    (``common.callers``), so a JSON route takes none of them, whatever its body holds."""
    media = request.content_type  # (aiohttp: "application/octet-stream" when none is given)
    if media != "application/json" and not (media.startswith("application/") and media.endswith("+json")):
        given = request.headers.get("Content-Type")
        raise UnsupportedMediaTypeError(
            f"the body must be sent as JSON, with Content-Type: application/json (it was "
            f"{'not given' if given is None else repr(given)}); with curl: --json '{{...}}'")


async def read_body(request: web.Request, model: type[ModelT], *, context: dict[str, Any] | None = None) -> ModelT:
    """Parse the JSON body into ``model`` or raise a 400 that says what is wrong. Parsed
    once per request and model (a route whose time bound depends on the body reads it
    before its handler does)."""
    parsed: dict[type, Any] = request.setdefault(_PARSED_BODIES, {})
    if context is None and model in parsed:
        return parsed[model]
    raw = await request.read()
    if not raw:
        raise InvalidRequestError("request body is empty; send a JSON object", code="invalid_json")
    require_json(request)
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidRequestError(f"request body is not valid JSON: {exc}", code="invalid_json") from exc
    except RecursionError as exc:
        raise InvalidRequestError("request body is nested too deeply", code="invalid_json") from exc
    if not isinstance(data, dict):
        raise InvalidRequestError("request body must be a JSON object", code="invalid_json")
    body = validate(model, data, context=context)
    if context is None:
        parsed[model] = body
    return body


_PARSED_BODIES = web.RequestKey("deskbox_parsed_bodies", dict)  # model -> its validated body


def read_query(request: web.Request, model: type[ModelT], *, context: dict[str, Any] | None = None) -> ModelT:
    """Parse query parameters into ``model``; a repeated parameter is an error."""
    data: dict[str, str] = {}
    for key, value in request.query.items():
        if key in data:
            raise InvalidRequestError(f"query parameter {key!r} given more than once", code="validation_error")
        data[key] = value
    return validate(model, data, context=context)


def json_ok(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status)


# What aiohttp raises for a form or multipart body it cannot parse (its multipart parser
# raises HTTP parse errors for a part's broken headers).
BODY_ERRORS = (ValueError, AssertionError, UnicodeDecodeError, HttpProcessingError)


async def read_form(request: web.Request) -> Any:
    """The form fields of a urlencoded or multipart body; a body aiohttp cannot parse as
    one (a multipart type with no boundary, a broken part) is a 400, not a 500."""
    try:
        return await request.post()
    except BODY_ERRORS as exc:
        raise InvalidRequestError(f"the form body cannot be read: {exc}", code="validation_error") from exc


_FILE_CHUNK = 1 << 20


async def send_stream(request: web.Request, stream: BinaryIO, size: int, content_type: str,
                      headers: dict[str, str] | None = None) -> web.StreamResponse:
    """``size`` bytes of ``stream`` (a file, a spooled archive) sent in chunks read off the
    event loop, rather than read whole first."""
    resp = web.StreamResponse(headers=headers)
    resp.content_type = content_type
    resp.content_length = size
    await resp.prepare(request)
    while chunk := await asyncio.to_thread(stream.read, _FILE_CHUNK):
        await resp.write(chunk)
    await resp.write_eof()
    return resp


async def send_and_remove(request: web.Request, path: Path, content_type: str,
                          headers: dict[str, str] | None = None) -> web.StreamResponse:
    """``path`` (a file made for this answer alone: a recording, up to gigabytes) sent with
    :func:`send_stream` and removed: unlinked as soon as it is open, so it is gone whether
    or not the client reads it to the end."""
    f = await asyncio.to_thread(open, path, "rb")
    try:
        await asyncio.to_thread(path.unlink, True)
        return await send_stream(request, f, os.fstat(f.fileno()).st_size, content_type, headers)
    finally:
        f.close()


# How often a long request looks whether its client is still there.
_GONE_POLL_S = 0.1

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def client_left(request: web.Request) -> bool:
    """The client closed its connection (its answer can no longer be given)."""
    transport = request.transport
    return transport is None or transport.is_closing()


def stop_when_client_leaves(handler: Handler) -> Handler:
    """``handler`` cancelled when its client closes the connection before the answer,
    so that input it was sending stops and what it held is let go (its ``finally``
    blocks run). aiohttp leaves a handler running after its client has gone unless told
    otherwise for the whole server; this is for the routes whose work is input or a
    wait, which nobody may want once the asker has left."""

    async def watched(request: web.Request) -> web.StreamResponse:
        task = asyncio.ensure_future(handler(request))
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=_GONE_POLL_S)
                if done:
                    return task.result()
                if client_left(request):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                    raise ClientGoneError(f"the client left {request.method} {request.path} before its answer")
        finally:
            if not task.done():  # cancelled from outside (the route's bound): its finally blocks run first
                task.cancel()
                await asyncio.wait({task})

    watched.__name__ = getattr(handler, "__name__", "watched")
    watched.__doc__ = handler.__doc__
    return watched


# The longest a request waits for its turn at a session's input before it answers 409
# input_busy (another request is holding a key, waiting, typing ...).
TURN_WAIT_S = 10.0


@contextlib.asynccontextmanager
async def taking_turn(lock: asyncio.Lock, what: str = "the input", wait_s: float | None = None) -> AsyncIterator[None]:
    """``lock`` held for the block, or :class:`InputBusyError` when it is not free within
    ``wait_s`` (default :data:`TURN_WAIT_S`)."""
    wait = TURN_WAIT_S if wait_s is None else wait_s
    try:
        await asyncio.wait_for(lock.acquire(), wait)
    except asyncio.TimeoutError:
        raise InputBusyError(f"{what} has been another request's for over {wait:g} s (a hold, a wait or a long text); "
                   "try again when it is done", context={"waited_s": wait}) from None
    try:
        yield
    finally:
        lock.release()
