"""Routes as data: one table per service gives both the aiohttp router and an OpenAPI
document whose schemas come from the same pydantic models that validate requests."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from aiohttp import web
from pydantic import BaseModel

from .web import stop_when_client_leaves

__all__ = ["Route", "add_routes", "openapi_document"]


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


def add_routes(app: web.Application, routes: list[Route]) -> None:
    app.router.add_routes([web.route(r.method, r.path, stop_when_client_leaves(r.handler)
                                     if r.stops_when_client_leaves else r.handler) for r in routes])


def openapi_document(title: str, version: str, routes: list[Route]) -> dict[str, Any]:
    paths: dict[str, dict] = {}
    schemas: dict[str, Any] = {}
    for route in routes:
        responses: dict[str, Any] = {}
        for status in route.success:
            responses[str(status)] = ({"description": "success", "content": {route.responses: {}}}
                                      if status == 200 else {"description": {204: "done", 304: "not modified", 408: "no condition held in time",
                                                              501: "not served yet"}.get(status, "success")})
        for status in ERROR_STATUSES:
            responses[str(status)] = {"description": _ERROR_TEXT[status] + _ERROR_SHAPE,
                                      "content": {"application/json": {}}}
        op: dict[str, Any] = {"summary": route.summary, "responses": responses}
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
            name = route.body.__name__
            schema = route.body.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas.update(schema.pop("$defs", {}))
            schemas[name] = schema
            op["requestBody"] = {"required": True,
                                 "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}
        paths.setdefault(route.path, {})[route.method.lower()] = op
    return {"openapi": "3.1.0", "info": {"title": title, "version": version}, "paths": paths,
            "components": {"schemas": schemas}}
