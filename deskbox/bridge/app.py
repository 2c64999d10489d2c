"""The CDP bridge's HTTP app (default 127.0.0.1:8122): Chromium's accessibility trees
with layout boxes, its targets and tabs. It knows nothing about screens."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

import orjson
from aiohttp import ClientSession, ClientTimeout, web

from ..answers import BridgeHealth, Navigated, Tab, TabDone
from ..cdp import CDPClosed, CDPError
from ..common.errors import ActionFailedError, NotFoundError, UnavailableError
from ..common.metrics import add_metrics, metrics_middleware, serve_metrics
from ..common.openapi import Route, add_routes, openapi_document
from ..common.web import error_middleware, guarded, json_ok, read_body, read_query
from .browser import Browser, TabGone
from .chromium import AttachedChromium, BrowserProcess, Chromium, ChromiumConfig
from .element import element_action
from .models import ElementRequest, LayoutQuery, NavigateRequest, TabsRequest

__all__ = ["create_app", "BridgeConfig"]

__version__ = "0.1.0"


@dataclass(frozen=True)
class BridgeConfig:
    chromium: ChromiumConfig
    token: str | None = None


CHROMIUM = web.AppKey("chromium", BrowserProcess)
BROWSER = web.AppKey("browser", Browser)
OPEN_PATHS = frozenset({"/health", "/openapi.json"})


def create_app(config: BridgeConfig) -> web.Application:
    app = web.Application(middlewares=[metrics_middleware, error_middleware, *guarded(config.token, OPEN_PATHS)],
                          client_max_size=1024 * 1024)
    chromium = AttachedChromium(config.chromium) if config.chromium.attach else Chromium(config.chromium)
    browser = Browser(chromium)
    app[CHROMIUM] = chromium
    app[BROWSER] = browser
    add_metrics(app)

    async def chromium_ctx(app: web.Application):
        # Every browser that comes up (a launched one at once, an attached one whenever
        # it answers) gets a fresh connection: old sessions and caches do not carry over.
        chromium.on_up = browser.connect
        await chromium.start()
        yield
        await browser.close()
        await chromium.stop()

    app.cleanup_ctx.append(chromium_ctx)
    add_routes(app, ROUTES)
    return app


def _translate(exc: Exception) -> Exception:
    if isinstance(exc, CDPClosed):
        return UnavailableError(f"Chromium connection lost: {exc}", code="browser_down")
    return exc


async def _pages(request: web.Request) -> list[dict]:
    try:
        return await request.app[BROWSER].page_targets()
    except (CDPClosed, CDPError) as exc:
        raise UnavailableError(f"Chromium is not answering: {exc}", code="browser_down") from exc


async def layout(request: web.Request) -> web.StreamResponse:
    q = read_query(request, LayoutQuery)
    browser = request.app[BROWSER]
    pages = await _pages(request)
    if q.tab is not None:
        pages = [p for p in pages if p["targetId"] == q.tab]
        if not pages:
            raise NotFoundError(f"no tab {q.tab!r}; GET /tabs lists them", code="unknown_tab")

    async def one(page: dict) -> list[bytes]:
        """This tab's JSON, in pieces."""
        tab = {"id": page["targetId"], "url": page["url"], "title": page["title"], "type": page["type"]}
        try:
            snapshot = await browser.layout(page, q.fresh)
        except (TabGone, CDPError, CDPClosed, UnavailableError) as exc:
            # One tab failing (closed or navigating mid-request) never fails the others.
            return [orjson.dumps({**tab, "active": None, "error": str(exc), "layout": None})]
        meta = orjson.dumps({**tab, "title": snapshot.title or page["title"], "active": snapshot.visible, "error": None})
        # The nodes are the bytes serialized when they last changed, written in batches
        # rather than joined into one more copy of the whole layout.
        return [meta[:-1] + b',"layout":', *snapshot.chunks(q.interesting), b"}"]

    tabs = await asyncio.gather(*[one(p) for p in pages])
    pieces = [b'{"tabs":[', *[piece for i, tab in enumerate(tabs) for piece in ([b","] if i else []) + tab], b"]}"]
    # How each tab's layout was made (cache, warm, full), in tab order: for benches and logs.
    paths = ",".join(browser.last_path.get(p["targetId"], "none") for p in pages)
    resp = web.StreamResponse(headers={"X-Deskbox-Layout": paths})
    resp.content_type = "application/json"
    resp.content_length = sum(len(piece) for piece in pieces)
    await resp.prepare(request)
    for piece in pieces:
        await resp.write(piece)
    await resp.write_eof()
    return resp


async def targets(request: web.Request) -> web.Response:
    return json_ok(await _json_list(request))


async def tabs(request: web.Request) -> web.Response:
    return json_ok([t for t in await _json_list(request) if t.get("type") == "page"])


async def _json_list(request: web.Request) -> list[dict]:
    chromium = request.app[CHROMIUM]
    try:
        async with ClientSession(timeout=ClientTimeout(total=5)) as http:
            async with http.get(chromium.http_base + "/json/list") as resp:
                return await resp.json()
    except Exception as exc:
        raise UnavailableError(f"Chromium's DevTools endpoint is not answering: {exc}", code="browser_down") from exc


async def health(request: web.Request) -> web.Response:
    chromium = request.app[CHROMIUM]
    up = chromium.up.is_set()
    body = {"status": "ok" if up else "down", "pid": os.getpid(), "chromium_pid": chromium.pid,
            "restarts": chromium.restarts, "attached": chromium.config.attach,
            "cdp_port": chromium.config.cdp_port, "version": __version__, "layouts": request.app[BROWSER].made,
            "box_checks": request.app[BROWSER].checks}
    resp = json_ok(body, status=200 if up else 503)
    if not up:
        resp.headers["Retry-After"] = "1"  # (Chromium is being started again, as every 503 says)
    return resp


async def post_tabs(request: web.Request) -> web.Response:
    req = await read_body(request, TabsRequest)
    browser = request.app[BROWSER]
    try:
        if req.action == "new":
            tab = await browser.new_tab(req.url or "about:blank")
            return json_ok({"ok": True, "action": "new", **tab})
        assert req.id is not None
        if req.action == "activate":
            await browser.activate(req.id)
        else:
            await browser.close_tab(req.id)
    except (CDPClosed, CDPError) as exc:
        raise _translate(exc) from exc
    return json_ok({"ok": True, "action": req.action, "id": req.id})


async def navigate(request: web.Request) -> web.Response:
    req = await read_body(request, NavigateRequest)
    browser = request.app[BROWSER]
    pages = await _pages(request)
    if req.tab is not None:
        if not any(p["targetId"] == req.tab for p in pages):
            raise NotFoundError(f"no tab {req.tab!r}", code="unknown_tab")
        target = req.tab
    else:
        if not pages:
            raise NotFoundError("there is no tab to navigate", code="unknown_tab")
        target = pages[0]["targetId"]
    try:
        return json_ok({"ok": True, **await browser.navigate(target, req.url)})
    except (TabGone, CDPClosed) as exc:
        raise UnavailableError(str(exc), code="browser_down") from exc


async def element(request: web.Request) -> web.Response:
    req = await read_body(request, ElementRequest)
    try:
        return json_ok(await element_action(request.app[BROWSER], req.action, req.tab, req.frameId,
                                            req.backendDOMNodeId, req.x, req.y, option=req.option,
                                            option_index=req.option_index))
    except CDPClosed as exc:
        raise _translate(exc) from exc
    except CDPError as exc:
        raise ActionFailedError(f"Chromium refused: {exc}", code="cdp_error") from exc


async def openapi(request: web.Request) -> web.Response:
    return json_ok(openapi_document("CDP bridge", __version__, ROUTES))


ROUTES = [
    Route("GET", "/", layout, "Every tab's accessibility tree with boxes (same as /layout)", query=LayoutQuery),
    Route("GET", "/layout", layout, "Every tab's accessibility tree with boxes and layout metrics", query=LayoutQuery),
    Route("GET", "/targets", targets, "Chromium's DevTools target list"),
    Route("GET", "/tabs", tabs, "The page targets", answer=list[Tab]),
    Route("POST", "/tabs", post_tabs, "Open, activate or close a tab", body=TabsRequest, answer=TabDone),
    Route("POST", "/navigate", navigate, "Navigate a tab (default: the first)", body=NavigateRequest, answer=Navigated),
    Route("POST", "/element", element, "One DOM node: hit-test a point, scroll it into view, focus it",
          body=ElementRequest),
    Route("GET", "/health", health, "Chromium's state", answer=BridgeHealth),
    Route("GET", "/metrics", serve_metrics, "Prometheus metrics: requests per route", responses="text/plain"),
    Route("GET", "/openapi.json", openapi, "This document"),
]
