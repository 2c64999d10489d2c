"""The live view (``deskbox up --view``, port 8006): the desktop in a browser, view only
until the viewer clicks "take control".

One wayvnc per display, started on first view, serves VNC on a UNIX socket in the
session's runtime folder (nothing listens on TCP); this service relays a browser's
websocket to it, reading the viewer's RFB messages and dropping its input unless that
connection was opened with control (``relay``). The page is our own, on noVNC's client
(Debian's ``novnc`` package). With a token set, the page asks for it once in a form and
keeps a cookie (a token in the address is not taken: it would stay in the history); the
token is never logged. ``GET /api/status`` says who has control: the scene's health reports it."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from aiohttp import WSMsgType, web

from ..client import AsyncClient
from ..common.callers import callers_middleware
from ..common.errors import InvalidRequestError, NotFoundError, UnauthorizedError, UnavailableError
from ..common.logging import get_logger
from ..common.metrics import add_metrics, metrics_middleware, serve_metrics
from ..common.options import DEFAULT_URLS
from ..common.web import concurrency_middleware, error_middleware, json_ok, read_form
from .relay import MAX_MESSAGE, ClientStream, RfbError, forward

__all__ = ["create_app", "ViewConfig"]

log = get_logger("deskbox.view")
PAGE = Path(__file__).with_name("page.html")
NOVNC_DIR = Path("/usr/share/novnc")
COOKIE = "deskbox_view"
SOCKET_WAIT_S = 20.0
_OPEN = frozenset({"/health", "/login"})


@dataclass(frozen=True)
class ViewConfig:
    desktopd: str = DEFAULT_URLS["desktopd"]
    runtime_dir: str = "/tmp"  # where wayvnc's sockets are made
    token: str | None = None
    novnc_dir: str = str(NOVNC_DIR)


class Servers:
    """One wayvnc per display, started when first viewed, ended with the service."""

    def __init__(self, runtime: Path) -> None:
        self.runtime = runtime
        self.procs: dict[int, asyncio.subprocess.Process] = {}
        self._lock = asyncio.Lock()

    async def connect(self, display: int, output: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to the display's wayvnc, started if it is not running. wayvnc makes
        its socket a moment before it accepts on it, and starts slowly on a loaded machine:
        connecting is retried until it answers or ends."""
        path = self.runtime / f"vnc-{display}.sock"
        async with self._lock:
            proc = self.procs.get(display)
            if proc is None or proc.returncode is not None:
                exe = shutil.which("wayvnc")
                if exe is None:
                    raise UnavailableError("wayvnc is not installed (Debian package wayvnc)", code="no_wayvnc")
                path.unlink(missing_ok=True)
                proc = self.procs[display] = await asyncio.create_subprocess_exec(
                    exe, "--unix-socket", "--output", output, str(path), stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
            deadline = time.monotonic() + SOCKET_WAIT_S
            while True:
                try:
                    return await asyncio.open_unix_connection(str(path))
                except (FileNotFoundError, ConnectionRefusedError):
                    if proc.returncode is not None:
                        raise UnavailableError(f"wayvnc ended on {output} (exit {proc.returncode})",
                                               code="vnc_failed") from None
                    if time.monotonic() > deadline:
                        raise UnavailableError(f"wayvnc did not answer on {output} within {SOCKET_WAIT_S:.0f} s",
                                               code="vnc_failed") from None
                    await asyncio.sleep(0.05)

    async def close(self) -> None:
        for proc in self.procs.values():
            if proc.returncode is None:
                proc.terminate()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(proc.wait(), 5)
        self.procs.clear()


class View:
    def __init__(self, config: ViewConfig) -> None:
        self.config = config
        self.client = AsyncClient(None, config.desktopd, None, config.token)
        self.servers = Servers(Path(config.runtime_dir))
        self.sessions: set[str] = set()  # cookie values handed out after the token
        self.control: dict[int, list[float]] = {}  # display -> when each controlling viewer took it

    def authorized(self, request: web.Request) -> bool:
        token = self.config.token
        if token is None:
            return True
        given = request.headers.get("Authorization", "").encode()
        if hmac.compare_digest(given, f"Bearer {token}".encode()):
            return True
        return request.cookies.get(COOKIE, "") in self.sessions

    def login(self, token: str) -> str | None:
        if self.config.token is None or not hmac.compare_digest(token.encode(), self.config.token.encode()):
            return None
        session = secrets.token_urlsafe(24)
        self.sessions.add(session)
        return session


VIEW = web.AppKey("view", View)


@web.middleware
async def view_auth(request: web.Request, handler) -> web.StreamResponse:
    view = request.app[VIEW]
    if request.path in _OPEN or request.path.startswith("/novnc/") or view.authorized(request):
        return await handler(request)
    if request.path == "/":  # (a ?token= is not taken: it would stay in the history and the logs)
        raise web.HTTPFound("/login")
    raise UnauthorizedError("missing or wrong token: log in at /login, or send Authorization: Bearer <token>")


def create_app(config: ViewConfig | None = None) -> web.Application:
    config = config or ViewConfig()
    app = web.Application(middlewares=[metrics_middleware, error_middleware, callers_middleware(),
                                       concurrency_middleware(_OPEN), view_auth])
    add_metrics(app)
    app[VIEW] = view = View(config)

    async def ctx(app: web.Application):
        yield
        await view.servers.close()
        await view.client.close()

    app.cleanup_ctx.append(ctx)
    app.router.add_get("/", page)
    app.router.add_get("/login", login_form)
    app.router.add_post("/login", login_post)
    app.router.add_get("/health", health)
    app.router.add_get("/api/displays", displays)
    app.router.add_get("/api/status", status)
    app.router.add_get("/websockify", relay)
    app.router.add_get("/metrics", serve_metrics)
    if Path(config.novnc_dir).is_dir():
        app.router.add_static("/novnc/", config.novnc_dir)
    return app


async def page(request: web.Request) -> web.Response:
    if not Path(request.app[VIEW].config.novnc_dir).is_dir():
        raise UnavailableError("noVNC is not installed (Debian package novnc)", code="no_novnc")
    return web.FileResponse(PAGE, headers={"Cache-Control": "no-store"})


_FORM = """<!doctype html><html><head><meta charset="utf-8"><title>deskbox: log in</title></head>
<body style="font: 14px sans-serif; margin: 3em"><form method="post" action="/login">
<label>token <input type="password" name="token" autofocus></label> <button>view</button>{note}</form></body></html>"""


async def login_form(request: web.Request) -> web.Response:
    return web.Response(text=_FORM.format(note=""), content_type="text/html")


def _logged_in(request: web.Request, session: str) -> web.Response:
    resp = web.HTTPFound("/")
    resp.set_cookie(COOKIE, session, httponly=True, samesite="Strict", path="/")
    return resp


async def login_post(request: web.Request) -> web.Response:
    form = await read_form(request)
    session = request.app[VIEW].login(str(form.get("token", "")))
    if session is None:
        return web.Response(text=_FORM.format(note=" <p>That is not the token.</p>"), content_type="text/html",
                            status=401)
    raise _logged_in(request, session)


async def health(request: web.Request) -> web.Response:
    return json_ok({"ok": True})


async def displays(request: web.Request) -> web.Response:
    listed = (await request.app[VIEW].client.displays()).displays
    return json_ok({"displays": [{"id": d.id, "name": d.name, "size": d.size} for d in listed]})


async def status(request: web.Request) -> web.Response:
    view = request.app[VIEW]
    return json_ok({"viewers_in_control": {str(d): len(v) for d, v in view.control.items() if v},
                    "control": any(view.control.values()),
                    "vnc_servers": sorted(d for d, p in view.servers.procs.items() if p.returncode is None)})


async def relay(request: web.Request) -> web.StreamResponse:
    view = request.app[VIEW]
    try:
        display = int(request.query.get("display", "0"))
    except ValueError:
        raise InvalidRequestError("display is a number") from None
    control = request.query.get("control", "0") in ("1", "true")
    listed = {d.id: d for d in (await view.client.displays()).displays}
    if display not in listed:
        raise NotFoundError(f"no display {display}; the session has {sorted(listed)}", code="unknown_display")
    reader, writer = await view.servers.connect(display, listed[display].name)
    ws = web.WebSocketResponse(protocols=("binary",), max_msg_size=MAX_MESSAGE + 64)
    await ws.prepare(request)
    stream = ClientStream(control=control)
    took = time.time()
    if control:
        view.control.setdefault(display, []).append(took)
        log.info("control taken", display=display)

    async def server_to_viewer() -> None:
        await forward(reader, ws.send_bytes)
        await ws.close()  # (the page sees the loss and connects again)

    pump = asyncio.create_task(server_to_viewer())
    try:
        async for msg in ws:
            if msg.type != WSMsgType.BINARY:
                continue
            try:
                writer.write(stream.feed(msg.data))
            except RfbError as exc:
                log.warning("viewer sent what the relay does not pass", error=str(exc))
                break
            await writer.drain()
    finally:
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await pump
        writer.close()
        if control:
            view.control[display].remove(took)
            log.info("control given back", display=display)
        await ws.close()
    return ws
