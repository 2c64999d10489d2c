"""Routes as data: one table per service gives both the aiohttp router and an OpenAPI
document whose schemas come from the same pydantic models that validate requests."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from aiohttp import web
from pydantic import BaseModel

__all__ = ["Route", "add_routes", "openapi_document"]


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    summary: str
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    responses: str = "application/json"


def add_routes(app: web.Application, routes: list[Route]) -> None:
    app.router.add_routes([web.route(r.method, r.path, r.handler) for r in routes])


def openapi_document(title: str, version: str, routes: list[Route]) -> dict[str, Any]:
    paths: dict[str, dict] = {}
    schemas: dict[str, Any] = {}
    for route in routes:
        op: dict[str, Any] = {
            "summary": route.summary,
            "responses": {
                "200": {"description": "success", "content": {route.responses: {}}},
                "4XX": {"description": "invalid request: {\"error\": {\"code\", \"message\"}}"},
            },
        }
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
