"""OS Screen Observer's REST API (v1 and v2) on deskbox: ``deskbox up --observer`` serves
it on port 5001, so that agents and tool schemas written for it work unchanged.

Every route is a mapping onto the scene aggregator's toolset and desktopd, through
deskbox's own client: windows by index (focused first, then by title), element ids are
the Scene's, bounds are desktop-wide layout pixels (``shapes``). v1 routes answer errors
as ``{"error": "message"}`` and ``/api/action`` as ``{"success": false, "error": ...}``,
as its clients read them; v2 routes as ``{"ok": false, "success": false, "error": {code,
message, recoverable, suggested_next_tool, context}}`` with its codes. Traces, replay,
budgets, redaction and confirmation are the scene's (its gate); loading a scenario over
the API answers 501 (a mock session loads its scenario as it starts)."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from ..client import AsyncClient
from ..common.errors import DeskboxError, NotServedError
from ..common.metrics import add_metrics, metrics_middleware, serve_metrics
from ..common.openapi import Route, add_routes, openapi_document
from ..common.options import DEFAULT_URLS
from ..common.web import error_middleware, guarded
from . import gate, inspector, shapes, v1, v2
from .lookups import OBSERVER, PROTOCOL_VERSION, Observer, __version__, as_json

__all__ = ["create_app", "ObserverConfig", "__version__", "PROTOCOL_VERSION"]

OPEN_PATHS = frozenset({"/api/healthz", "/api/openapi.json"}) | inspector.PAGE_PATHS
_LEGACY = frozenset({"/api/windows", "/api/structure", "/api/description", "/api/sketch", "/api/screenshot"})


@dataclass(frozen=True)
class ObserverConfig:
    scene: str = DEFAULT_URLS["scene"]
    desktopd: str = DEFAULT_URLS["desktopd"]
    bridge: str | None = DEFAULT_URLS["bridge"]
    token: str | None = None  # asked of callers, and sent to the services


@web.middleware
async def oso_errors(request: web.Request, handler) -> web.StreamResponse:
    """Errors in the shapes OS Screen Observer's clients read (see the module docstring)."""
    try:
        return await handler(request)
    except DeskboxError as exc:
        status = exc.http_status
        code = exc.code
        oso = shapes.oso_code(code, status)
        context = dict(getattr(exc, "context", None) or {})
        context["deskbox_code"] = code
        if getattr(exc, "details", None) is not None:
            context["details"] = exc.details
        if request.path == "/api/action":
            return as_json({"success": False, "error": exc.message, "code": oso}, status)
        if request.path in _LEGACY:
            return as_json({"error": exc.message, "code": oso, "context": context}, status)
        return as_json({"ok": False, "success": False, "error": {
            "code": oso, "message": exc.message, "recoverable": bool(exc.recoverable),
            "suggested_next_tool": getattr(exc, "suggested_next_tool", None), "context": context}}, status)


def create_app(config: ObserverConfig | None = None) -> web.Application:
    config = config or ObserverConfig()
    app = web.Application(middlewares=[metrics_middleware, error_middleware, *guarded(config.token, OPEN_PATHS),
                                       oso_errors], client_max_size=1024 * 1024)
    add_metrics(app)
    client = AsyncClient(config.scene, config.desktopd, config.bridge, config.token, timeout=120, interface="observer")
    app[OBSERVER] = Observer(client)
    app[inspector.UPSTREAM] = inspector.Upstream(client, config.token)

    async def client_ctx(app: web.Application):
        yield
        await client.close()

    app.cleanup_ctx.append(client_ctx)
    add_routes(app, ROUTES)
    app.router.add_get(inspector.PREFIX + "/api/v1/scene/stream", inspector.stream)
    return app


async def later(request: web.Request) -> web.Response:
    raise NotServedError(f"{request.path}: a scenario is loaded as the session starts (deskbox up --mock SCENARIO)",
                         context={"path": request.path})


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(openapi_document("deskbox: OS Screen Observer-compatible API", __version__, ROUTES))


ROUTES = [
    *inspector.ROUTES,
    *v1.ROUTES,
    *v2.ROUTES,
    Route("GET", "/api/metrics", serve_metrics, "Prometheus metrics", responses="text/plain"),
    Route("GET", "/metrics", serve_metrics, "Prometheus metrics", responses="text/plain"),
    *gate.ROUTES,
    *[Route(method, path, later, "Not served: scenarios load at start (501)", success=(501,))
      for method, path in shapes.LATER],
    Route("GET", "/api/openapi.json", openapi, "This document"),
]
