"""Prometheus metrics, ``GET /metrics`` on every service.

Each app has a registry of its own under ``METRICS``: tests build several apps in one
process, and on the global default registry their metrics would mix (a second app's
would even be refused, its names taken). One middleware counts and times every request
by the route's pattern, never the raw path, so that unknown paths cannot multiply the
series; one handler writes the text format. A service adds its own metrics on
``app[METRICS].registry``."""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest

from .logging import get_logger

__all__ = [
    "Metrics",
    "METRICS",
    "UNMATCHED",
    "CONTENT_TYPE",
    "add_metrics",
    "metrics_middleware",
    "serve_metrics",
    "route_label",
    "method_label",
]

log = get_logger("deskbox.metrics")

UNMATCHED = "unmatched"  # the route label of a request no route took (404, 405)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# aiohttp accepts any token as a method; the rest are one label, not one each.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# Up to the slowest a route may be: input up to 60 s, /execute up to 120 s.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class Metrics:
    """One app's registry, with what every service measures: requests and their
    latency per route, and uptime."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("deskbox_http_requests", "Requests answered, by route pattern, method and status",
                                ["route", "method", "status"], registry=self.registry)
        self.latency = Histogram("deskbox_http_request_duration_seconds",
                                 "Time until the handler's response, by route pattern and method",
                                 ["route", "method"], buckets=LATENCY_BUCKETS, registry=self.registry)
        started = time.monotonic()
        Gauge("deskbox_uptime_seconds", "Seconds since this service started",
              registry=self.registry).set_function(lambda: time.monotonic() - started)
        ProcessCollector(registry=self.registry)
        self._refreshers: list[Callable[[], Awaitable[None]]] = []

    def before_scrape(self, refresh: Callable[[], Awaitable[None]]) -> None:
        """Run ``refresh`` before every scrape: for values a collector reads from
        another process (collectors cannot await). It bounds its own time and fails
        quietly; a failure leaves the other metrics served."""
        self._refreshers.append(refresh)

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        method = method_label(method)
        self.requests.labels(route, method, str(status)).inc()
        self.latency.labels(route, method).observe(seconds)

    async def render(self) -> bytes:
        results = await asyncio.gather(*(refresh() for refresh in self._refreshers), return_exceptions=True)
        for result in results:
            if isinstance(result, Exception):
                log.warning("metrics refresh failed", error=f"{type(result).__name__}: {result}")
        return generate_latest(self.registry)


METRICS = web.AppKey("metrics", Metrics)


def add_metrics(app: web.Application) -> Metrics:
    """Give ``app`` its registry; ``metrics_middleware`` goes first in its middleware
    list and a ``GET /metrics`` Route serving ``serve_metrics`` in its ROUTES."""
    app[METRICS] = metrics = Metrics()
    return metrics


def route_label(route: web.AbstractRoute) -> str:
    """The route's pattern (``/api/v1/windows/{id}/focus``), or UNMATCHED for aiohttp's
    own 404 and 405 routes, which have no resource."""
    resource = route.resource
    return resource.canonical if resource is not None else UNMATCHED


def method_label(method: str) -> str:
    return method if method in _METHODS else "other"


@web.middleware
async def metrics_middleware(request: web.Request, handler) -> web.StreamResponse:
    """First in the list, so that it sees the status error_middleware answers (and the
    auth middleware's 401s), not the exceptions under it."""
    metrics = request.app[METRICS]
    started = time.perf_counter()
    status = 500  # anything that escapes error_middleware ends as a 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as exc:  # redirects, which error_middleware lets through
        status = exc.status
        raise
    finally:
        metrics.observe(route_label(request.match_info.route), request.method, status,
                        time.perf_counter() - started)


async def serve_metrics(request: web.Request) -> web.Response:
    body = await request.app[METRICS].render()
    # (content_type= refuses a charset parameter; the header is given whole.)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})
