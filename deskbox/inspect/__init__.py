"""The inspector: one page that shows what an agent is given, the live screen with the
Scene's elements drawn over it, the element under the pointer, a searchable tree and the
prompt text, with the same ids.

The scene aggregator serves it at ``/inspect`` (its API under the same origin); the
Observer API serves it at ``/`` (OS Screen Observer's inspector) with the scene's read
routes passed through under ``/inspect`` (``deskbox.observer.inspect``). The page holds
no data of its own and is served without the token; everything it reads is behind the
token, which the page asks for once and keeps in the tab's ``sessionStorage``. It sends it
as ``Authorization: Bearer`` and, for the scene's stream, as a websocket subprotocol
(``common.web.WS_TOKEN_PREFIX``): never in a URL."""

from __future__ import annotations

import base64
import hashlib
import re
from functools import lru_cache
from pathlib import Path
from typing import Awaitable, Callable

from aiohttp import web

__all__ = ["page_handler", "PAGE"]

PAGE = Path(__file__).with_name("page.html")
_API_PLACEHOLDER = 'content="%API%"'
_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


@lru_cache(maxsize=4)
def _page(api: str) -> tuple[str, dict[str, str]]:
    """The page for ``api``, and its headers: the one inline script allowed by its hash
    (names and text in a scene come from web pages and apps)."""
    html = PAGE.read_text()
    assert _API_PLACEHOLDER in html
    html = html.replace(_API_PLACEHOLDER, f'content="{api}"')
    script = _SCRIPT.search(html).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return html, {
        "Cache-Control": "no-store",
        "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
                                   "img-src 'self' blob: data:; connect-src 'self' ws: wss:; frame-ancestors 'none'; "
                                   "base-uri 'none'; form-action 'none'",
    }


def page_handler(api: str = "") -> Callable[[web.Request], Awaitable[web.Response]]:
    """A handler answering the page, whose API calls go to ``api`` + ``/api/v1/...`` on
    the same origin ("" for the scene aggregator itself)."""

    async def inspect_page(request: web.Request) -> web.Response:
        html, headers = _page(api)
        return web.Response(text=html, content_type="text/html", headers=headers)

    return inspect_page
