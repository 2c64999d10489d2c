"""OS Screen Observer's ``GET /``, its web inspector: deskbox's inspector page
(``deskbox.inspect``), with the scene's read routes it uses passed through under
``/inspect`` so that the page needs nothing but this origin.

Only reads pass: the scene, its prompt text, a screenshot, ``find`` and the scene's
stream, each with the query keys that route takes (the scene validates them and its
errors come back in this API's shape). The caller's token is checked here and the
Observer's own is sent on."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from aiohttp import ClientError, ClientSession, WSMsgType, web

from ..client import AsyncClient
from ..common.errors import UnavailableError
from ..common.openapi import Route
from ..common.web import WS_PROTOCOL
from ..inspect import page_handler

__all__ = ["ROUTES", "PAGE_PATHS", "UPSTREAM", "Upstream", "stream"]


@dataclass(frozen=True)
class Upstream:
    client: AsyncClient  # the Observer's client of the scene
    token: str | None  # sent on to the scene's stream


UPSTREAM = web.AppKey("inspect_upstream", Upstream)

PREFIX = "/inspect"
PAGE_PATHS = frozenset({"/", PREFIX})  # (open: the page holds no data)

# Scene path -> the query keys passed on.
_PASSED = {
    "/api/v1/scene": ("mode", "display", "window", "interactive"),
    "/api/v1/scene/text": ("mode", "display", "window", "interactive", "max_chars", "max_tokens", "offscreen"),
    "/api/v1/screenshot": ("display", "marks", "format", "all"),
    "/api/v1/find": ("selector", "mode", "limit"),
}
_STREAM_KEYS = ("display", "window", "interactive")
_KEEP_HEADERS = ("Content-Type", "X-Deskbox-Scene-Seq", "X-Deskbox-Marks")


def _passed_through(path: str):
    keys = _PASSED[path]

    async def handler(request: web.Request) -> web.Response:
        query = {k: v for k, v in request.query.items() if k in keys}
        body, headers = await request.app[UPSTREAM].client.request("scene", "GET", path, query=query, raw=True)
        return web.Response(body=body, headers={k: headers[k] for k in _KEEP_HEADERS if k in headers})

    handler.__name__ = "inspect_" + path.rsplit("/", 1)[-1]
    return handler


async def stream(request: web.Request) -> web.StreamResponse:
    """The scene's stream, message for message, until either side closes."""
    upstream_of = request.app[UPSTREAM]
    url = upstream_of.client.urls["scene"].replace("http", "ws", 1) + "/api/v1/scene/stream"
    query = {k: v for k, v in request.query.items() if k in _STREAM_KEYS}
    ws = web.WebSocketResponse(heartbeat=30, protocols=(WS_PROTOCOL,))
    headers = {"Authorization": f"Bearer {upstream_of.token}"} if upstream_of.token else {}
    async with ClientSession(headers=headers) as http:
        try:
            upstream = await http.ws_connect(url, params=query, heartbeat=30)
        except (ClientError, OSError) as exc:
            raise UnavailableError(f"the scene's stream at {url} is not answering: {exc}",
                                   code="scene_unreachable") from exc
        async with upstream:
            await ws.prepare(request)

            async def down() -> None:
                async for msg in upstream:
                    if msg.type == WSMsgType.BINARY:
                        await ws.send_bytes(msg.data)
                    elif msg.type == WSMsgType.TEXT:
                        await ws.send_str(msg.data)
                await ws.close()  # (the scene went away: so does the page's connection, which reconnects)

            relay = asyncio.create_task(down())
            try:
                async for _ in ws:  # (the page sends nothing; this ends when it leaves)
                    pass
            finally:
                relay.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await relay
    return ws


_PAGE = page_handler(PREFIX)

ROUTES = [
    Route("GET", "/", _PAGE, "The inspector (OS Screen Observer's web UI): the screen with the scene's elements",
          responses="text/html"),
    Route("GET", PREFIX, _PAGE, "Alias of /", responses="text/html"),
    *(Route("GET", PREFIX + path, _passed_through(path), f"The scene's GET {path}, for the inspector",
            responses="*/*") for path in _PASSED),
]
