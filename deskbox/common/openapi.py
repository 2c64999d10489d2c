"""Routes as data: one table per service gives both the aiohttp router and an OpenAPI
document whose schemas come from the same pydantic models that validate requests.

Every route has a longest time (:class:`Longest`): published in the document as
``x-deskbox-longest-s`` and enforced, so no request runs on unbounded. Past it the work is
cancelled (its ``finally`` blocks let go of any key or button it held) and the answer is
504 ``deadline_exceeded``."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from aiohttp import web
from pydantic import BaseModel, TypeAdapter

from .errors import DeadlineExceededError
from .web import Handler, read_body, read_query, stop_when_client_leaves

__all__ = ["ACTION", "ACTION_S", "QUICK", "QUICK_S", "SLOW", "SLOW_S", "TYPING", "TYPING_S", "Longest", "Route",
           "add_routes", "openapi_document", "typing_if", "waiting"]


# The bounds most routes take. A read, a lookup or one input event answers in well under
# a second; QUICK_S is its bound on a machine as loaded as the fleet bench leaves it (a
# scene build or a LibreOffice tree then takes up to 4 s), with a wait for its turn at the
# input (TURN_WAIT_S, 10 s) inside it. An action that settles and observes afterwards (its
# turn, the input, up to 10 s of settling, a scene) is bounded by ACTION_S. What restarts
# or copies part of the session (a reset, a snapshot, encoding a recording) by SLOW_S.
QUICK_S = 30.0
ACTION_S = 60.0
SLOW_S = 180.0
# An action that types a text (up to 64 KiB): desktopd's input deadline (60 s) is inside it.
TYPING_S = 2 * ACTION_S


@dataclass(frozen=True)
class Longest:
    """How long a route may take. ``seconds`` bounds any valid request. A route whose
    time depends on what is asked (a hold's duration, a wait's timeout) also has
    ``per_request``: the bound of one request from its validated body and query (either
    None when the route has none), never more than ``seconds``; ``says`` is that rule in
    words for the document."""

    seconds: float
    per_request: Callable[[Any, Any], float] | None = None
    says: str = ""

    def __post_init__(self) -> None:
        if self.per_request is not None and not self.says:
            raise ValueError("a per-request bound needs its rule in words (says)")


QUICK = Longest(QUICK_S)
ACTION = Longest(ACTION_S)
TYPING = Longest(TYPING_S)
SLOW = Longest(SLOW_S)


def typing_if(field: str) -> Longest:
    """The bound of an action that types its body's ``field`` when it has one."""
    return Longest(TYPING_S, lambda body, query: TYPING_S if getattr(body, field) else ACTION_S,
                   f"{ACTION_S:g} s, or {TYPING_S:g} s when it types a text")


def waiting(field: str, most_s: float, *, unit_s: float = 1.0, then_s: float = QUICK_S) -> Longest:
    """The bound of a route that waits ``field`` (of its body, in units of ``unit_s``
    seconds, at most ``most_s`` seconds), then answers within ``then_s``."""
    return Longest(most_s + then_s, lambda body, query: getattr(body, field) * unit_s + then_s,
                   f"its {field}{'' if unit_s == 1 else f' (x {unit_s:g} s)'} plus {then_s:g} s")


# What any route may answer besides success: invalid (400), no or a wrong token (401),
# not found (404), method not allowed (405), valid but not now (409), a token or snapshot
# expired (410), body too large
# (413), wrong content type (415), beyond a documented limit (422), a component down
# (503, with Retry-After), past its deadline (504).
ERROR_STATUSES = (400, 401, 404, 405, 409, 410, 413, 415, 422, 503, 504)
_ERROR_TEXT = {400: "invalid request", 401: "missing or wrong bearer token", 404: "not found",
               405: "method not allowed", 409: "valid, but it cannot be applied now",
               410: "a token or snapshot that expired", 413: "body too large",
               415: "unsupported media type", 422: "beyond a documented limit",
               503: "a component the request needs is down (Retry-After)", 504: "it did not finish in time"}

_ERROR_SHAPE = ': {"error": {"code", "message", "recoverable", "suggested_next_tool", "context"}}'


@dataclass(frozen=True)
class Route:
    """One route of a service. ``body`` and ``query`` validate what comes in; ``answer``
    is what a 200 carries (a ``deskbox.answers`` model, a list of one, or a provider's
    typed dict): published in the document, and what the client's method for the route
    returns (tests/unit/test_answer_routes.py ties the two, and the real-session tests check
    each answer has no field its model lacks)."""

    method: str
    path: str
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    summary: str
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    responses: str = "application/json"
    success: tuple[int, ...] = (200,)
    # Input or a wait: stopped (held keys let go) when the client leaves before its answer.
    stops_when_client_leaves: bool = False
    longest: Longest = QUICK
    answer: Any = None


def add_routes(app: web.Application, routes: list[Route]) -> None:
    app.router.add_routes([web.route(r.method, r.path, bounded(r)) for r in routes])


def bounded(route: Route) -> Handler:
    """``route``'s handler, stopped when its client leaves if the route says so, and
    cancelled past its longest time with a 504 that names the bound."""
    handler = stop_when_client_leaves(route.handler) if route.stops_when_client_leaves else route.handler

    async def within(request: web.Request) -> web.StreamResponse:
        limit = await _limit(route, request)
        timer = asyncio.timeout(limit)
        try:
            async with timer:
                return await handler(request)
        except TimeoutError:
            if not timer.expired():
                raise  # the handler's own timeout, not the route's bound
            raise DeadlineExceededError(f"{request.method} {route.path} did not finish within {limit:g} s, its longest "
                                        "time; the work was stopped and any key or button it held let go",
                                        context={"longest_s": limit}) from None

    within.__name__ = getattr(route.handler, "__name__", "within")
    within.__doc__ = route.handler.__doc__
    return within


async def _limit(route: Route, request: web.Request) -> float:
    """The bound of this request: its own when the route computes one and the request is
    valid; otherwise the route's (an invalid request answers 400 long before it)."""
    longest = route.longest
    if longest.per_request is None:
        return longest.seconds
    try:
        body = await read_body(request, route.body) if route.body is not None else None
        query = read_query(request, route.query) if route.query is not None else None
    except Exception:  # noqa: BLE001 - the handler says what is wrong with the request
        return longest.seconds
    return max(0.0, min(longest.seconds, longest.per_request(body, query)))


def openapi_document(title: str, version: str, routes: list[Route]) -> dict[str, Any]:
    # Every body and answer in one pass, so pydantic names the components apart when two
    # models share a name (two providers' ``Click``), and each reference finds its own.
    typed = [(key, t) for route in routes for key, t in (("body", route.body), ("answer", route.answer))
             if t is not None]
    refs, defs = TypeAdapter.json_schemas([((key, id(t)), "validation", TypeAdapter(t)) for key, t in typed],
                                          ref_template="#/components/schemas/{model}")
    paths: dict[str, dict] = {}
    for route in routes:
        responses: dict[str, Any] = {}
        for status in route.success:
            answer = {} if route.answer is None else {"schema": refs[("answer", id(route.answer)), "validation"]}
            responses[str(status)] = ({"description": "success", "content": {route.responses: answer}}
                                      if status == 200 else {"description": {204: "done", 304: "not modified", 408: "no condition held in time",
                                                              501: "not served yet"}.get(status, "success")})
        for status in ERROR_STATUSES:
            responses[str(status)] = {"description": _ERROR_TEXT[status] + _ERROR_SHAPE,
                                      "content": {"application/json": {}}}
        op: dict[str, Any] = {"summary": route.summary, "responses": responses,
                              "x-deskbox-longest-s": route.longest.seconds}
        if route.longest.says:
            op["description"] = f"Takes at most {route.longest.says} ({route.longest.seconds:g} s at most)."
        params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
                  for n in re.findall(r"{(\w+)}", route.path)]
        if route.query is not None:
            schema = route.query.model_json_schema()
            for name, prop in schema.get("properties", {}).items():
                params.append({"name": name, "in": "query", "required": name in schema.get("required", []),
                               "schema": prop})
        if params:
            op["parameters"] = params
        if route.body is not None:
            op["requestBody"] = {"required": True,
                                 "content": {"application/json": {"schema": refs[("body", id(route.body)), "validation"]}}}
        paths.setdefault(route.path, {})[route.method.lower()] = op
    return {"openapi": "3.1.0", "info": {"title": title, "version": version}, "paths": paths,
            "components": {"schemas": defs.get("$defs", {})}}
