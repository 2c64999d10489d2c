"""MCP over streamable HTTP at ``/mcp`` of the scene aggregator, behind its bearer token
and its check of who calls (``common.callers``: DNS rebinding, other sites' pages) like
every other route of it.

The SDK's streamable HTTP transport is an ASGI application and aiohttp is not an ASGI
server, so each aiohttp request is handed to the SDK's session manager as one ASGI call
(scope, receive, send) by the adapter below: no second server, no second port. The
manager runs stateless with JSON answers: every POST is answered on its own, nothing
lives between requests (a restarted scene loses no MCP session), and as the tools send
no server-to-client messages, a GET (the stream for them) is answered 405.

The tools reach the session through ``deskbox.AsyncClient``, as the stdio server does: the
scene over the local address the request came in on, desktopd and the bridge at the
scene's own URLs for them, with its token. The SDK (about a second of imports) is loaded
on the first ``/mcp`` request rather than at every start of the scene; the manager then
runs in a task of its own (its anyio task group must start and end in one task) until
the app's cleanup."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from aiohttp import web

from ..client import AsyncClient
from ..common.errors import UnavailableError
from ..common.web import client_left

__all__ = ["McpEndpoint", "MCP", "add_mcp"]


class McpEndpoint:
    def __init__(self, desktopd: str | None, bridge: str | None, token: str | None) -> None:
        self._urls = {"desktopd": desktopd, "bridge": bridge}
        self._token = token
        self._manager: Any = None
        self._client: AsyncClient | None = None
        self._task: asyncio.Task | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()

    async def _started(self, request: web.Request) -> Any:
        async with self._lock:
            if self._manager is None:
                from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
                from mcp.server.transport_security import TransportSecuritySettings

                from .server import build_server

                own = _own_url(request)
                # (No desktopd URL: this app serves desktopd's routes itself, as mock mode does.)
                urls = {**self._urls, "desktopd": self._urls["desktopd"] or own}
                self._client = AsyncClient(own, token=self._token, interface="mcp", **urls)
                # (Host and Origin are checked for /mcp as for every route of the scene, by
                # common.callers, with the same names and allow-lists: the SDK's own check,
                # which takes exact host:port patterns only, would refuse a session reached
                # by an address nobody listed.)
                security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
                manager = StreamableHTTPSessionManager(build_server(self._client), stateless=True, json_response=True,
                                                       security_settings=security)
                running = asyncio.Event()
                self._task = asyncio.create_task(self._run(manager, running))
                waiter = asyncio.create_task(running.wait())
                await asyncio.wait({self._task, waiter}, return_when=asyncio.FIRST_COMPLETED)
                if not running.is_set():
                    waiter.cancel()
                    self._task.result()  # (raises what stopped it)
                    raise UnavailableError("the MCP session manager ended at start", code="mcp_unavailable")
                self._manager = manager
        return self._manager

    async def _run(self, manager: Any, running: asyncio.Event) -> None:
        async with manager.run():
            running.set()
            await self._stop.wait()

    async def close(self) -> None:
        if self._task is not None:
            self._stop.set()
            with contextlib.suppress(Exception):
                await self._task
        if self._client is not None:
            await self._client.close()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.method == "GET":
            # The stream a GET opens is for messages the server sends unasked: these tools
            # send none, and a stateless manager would hold it open for nothing.
            raise web.HTTPMethodNotAllowed("GET", ["POST"])
        # The whole body first, within the scene's request size (client_max_size: 413
        # beyond it), rather than passed on chunk by chunk with no end.
        body = await request.read()
        manager = await self._started(request)
        exchange = _Exchange(request, body)
        await manager.handle_request(exchange.scope(), exchange.receive, exchange.send)
        if exchange.response is None:
            raise UnavailableError("the MCP transport gave no answer", code="mcp_unavailable")
        return exchange.response


class _Exchange:
    """One aiohttp request as an ASGI HTTP call: the body in, the response out as it is
    written (JSON, or an event stream), and ``http.disconnect`` once the answer is done
    or the client has gone."""

    def __init__(self, request: web.Request, body: bytes) -> None:
        self.request = request
        self.response: web.StreamResponse | None = None
        self._body = body
        self._body_read = False
        self._done = asyncio.Event()

    def scope(self) -> dict[str, Any]:
        r = self.request
        transport = r.transport
        peer = transport.get_extra_info("peername") if transport else None
        sock = transport.get_extra_info("sockname") if transport else None
        return {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
                "http_version": f"{r.version.major}.{r.version.minor}", "method": r.method, "scheme": r.scheme,
                "path": r.path, "raw_path": r.rel_url.raw_path.encode(), "query_string": r.query_string.encode(),
                "root_path": "", "headers": [(k.lower(), v) for k, v in r.raw_headers],
                "client": tuple(peer[:2]) if isinstance(peer, tuple) else None,
                "server": tuple(sock[:2]) if isinstance(sock, tuple) else None, "state": {}}

    async def receive(self) -> dict[str, Any]:
        if not self._body_read:
            self._body_read = True
            return {"type": "http.request", "body": self._body, "more_body": False}
        # aiohttp does not cancel a handler whose client went away: look now and then.
        while not self._done.is_set() and not self._gone():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._done.wait(), 1.0)
        return {"type": "http.disconnect"}

    def _gone(self) -> bool:
        return client_left(self.request)

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.response = web.StreamResponse(status=message["status"])
            for name, value in message.get("headers", ()):
                self.response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            await self.response.prepare(self.request)
        elif message["type"] == "http.response.body" and self.response is not None:
            if message.get("body"):
                await self.response.write(message["body"])
            if not message.get("more_body", False):
                await self.response.write_eof()
                self._done.set()


def _own_url(request: web.Request) -> str:
    """This server's URL as seen from itself: the local end of the request's connection."""
    sock = request.transport.get_extra_info("sockname") if request.transport else None
    if not isinstance(sock, tuple):
        raise UnavailableError("MCP over HTTP needs the scene on a TCP socket", code="mcp_unavailable")
    host = f"[{sock[0]}]" if ":" in sock[0] else sock[0]
    return f"http://{host}:{sock[1]}"


MCP = web.AppKey("mcp", McpEndpoint)


def add_mcp(app: web.Application, *, desktopd: str | None, bridge: str | None, token: str | None,
            path: str = "/mcp") -> None:
    """Serve MCP on ``path`` of ``app``; what it opened closes with the app."""
    endpoint = McpEndpoint(desktopd, bridge, token)
    app[MCP] = endpoint

    async def mcp_ctx(app: web.Application):
        yield
        await endpoint.close()

    app.cleanup_ctx.append(mcp_ctx)
    app.router.add_route("*", path, endpoint.handle)
