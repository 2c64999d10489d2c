"""Test support: a real deskbox session, a page server that records what pages receive,
and a small synchronous HTTP client."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

from aiohttp import web

from deskbox.common import waiting
from deskbox.common.net import free_ports
from deskbox.session.spawn import SessionFailed, SpawnedSession

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "tests" / "pages"


def load_jsonc(path: Path) -> Any:
    """JSON with // comments (outside strings), as layout_schema.jsonc is written."""
    out, in_string, escaped, i, text = [], False, False, 0, path.read_text()
    while i < len(text):
        ch = text[i]
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif text.startswith("//", i):
            i = text.find("\n", i)
            if i == -1:
                break
            continue
        else:
            out.append(ch)
        i += 1
    return json.loads("".join(out))


def fuzz_seed() -> str:
    """The fuzz tests' seed: ``DESKBOX_FUZZ_SEED``, else one taken from the commit checked
    out, so that each commit is fuzzed differently and a run of the same commit (CI's, a
    developer's) draws the same cases again. Printed in pytest's header."""
    given = os.environ.get("DESKBOX_FUZZ_SEED")
    if given:
        return given
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return str(int(head.stdout[:8], 16) % 100_000) if head.returncode == 0 and head.stdout[:8] else "1"


def free_port() -> int:
    return free_ports(1)[0]


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def http(method: str, url: str, body: Any = None, *, raw: bytes | None = None,
         headers: dict[str, str] | None = None, timeout: float = 30) -> Response:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None and "Content-Type" not in (headers or {}):
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return Response(resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read())
    except urllib.error.HTTPError as err:
        return Response(err.code, {k.lower(): v for k, v in err.headers.items()}, err.read())


def wait_until(predicate: Callable[[], Any], timeout: float = 10, interval: float = 0.05, what: str = "condition") -> Any:
    """deskbox.common.waiting's, failing the test (AssertionError) when it times out."""
    return waiting.wait_until(predicate, timeout, interval, what, error=AssertionError)


class LoopbackHTTP:
    """A plain HTTP server on loopback, in a thread of its own: ``answer(path, headers)``
    (the request's path with its query, its headers with lower-case names) gives each
    GET's status, extra headers and body."""

    def __init__(self, answer: Callable[[str, dict[str, str]], tuple[int, dict[str, str], bytes]]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, headers, body = answer(self.path, {k.lower(): v for k, v in self.headers.items()})
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class PageServer:
    """Serves tests/pages on loopback and records the events pages POST to /events."""

    def __init__(self) -> None:
        self.port = free_port()
        self.events: list[dict] = []
        self._cond = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._ready = threading.Event()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, page: str) -> str:
        return f"{self.base}/{page}"

    def start(self) -> "PageServer":
        self._thread.start()
        self._ready.wait(10)
        return self

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()

        async def record(request: web.Request) -> web.Response:
            event = json.loads(await request.text())
            with self._cond:
                self.events.append(event)
                self._cond.notify_all()
            return web.Response(status=204)

        app.router.add_post("/events", record)
        app.router.add_static("/", PAGES)
        runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(runner.setup())
        self._loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", self.port).start())
        self._ready.set()
        self._loop.run_forever()

    def clear(self) -> None:
        with self._cond:
            self.events.clear()

    def matching(self, **fields: Any) -> list[dict]:
        with self._cond:
            return [e for e in self.events if all(e.get(k) == v for k, v in fields.items())]

    def wait_for(self, timeout: float = 10, **fields: Any) -> dict:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self.events:
                    if all(event.get(k) == v for k, v in fields.items()):
                        return event
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [{k: e.get(k) for k in ("type", "target", "key", "value")} for e in self.events[-15:]]
                    raise AssertionError(f"no event {fields} within {timeout}s; last events: {seen}")
                self._cond.wait(left)

    def settle(self, quiet: float = 0.3, timeout: float = 5) -> None:
        """Wait until no new event arrived for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            count = len(self.events)
        while time.monotonic() < deadline:
            time.sleep(quiet)
            with self._cond:
                if len(self.events) == count:
                    return
                count = len(self.events)


def mp4_video_size(data: bytes) -> tuple[int, int] | None:
    """The width and height of an MP4's video track, from its boxes (moov > trak > tkhd):
    what ffprobe would say, with no ffmpeg installed. None when there is no such track."""

    def boxes(buf: bytes, start: int, end: int):
        while start + 8 <= end:
            size = int.from_bytes(buf[start:start + 4], "big")
            kind = buf[start + 4:start + 8]
            header = 8
            if size == 1:
                size, header = int.from_bytes(buf[start + 8:start + 16], "big"), 16
            elif size == 0:
                size = end - start
            if size < header:
                return
            yield kind, start + header, start + size
            start += size

    for kind, body, end in boxes(data, 0, len(data)):
        if kind != b"moov":
            continue
        for trak, tbody, tend in boxes(data, body, end):
            if trak != b"trak":
                continue
            for box, bbody, _ in boxes(data, tbody, tend):
                if box == b"tkhd":
                    at = bbody + (88 if data[bbody] == 1 else 76)  # version 1 has 64-bit times
                    width, height = (int.from_bytes(data[at + i:at + i + 4], "big") >> 16 for i in (0, 4))
                    if width and height:
                        return width, height
    return None


def osworld_upload(osworld: str, path: str, data: bytes) -> None:
    """A file put into the session through the OSWorld server's /setup/upload, as
    desktop-env's SetupController sends it (a multipart form)."""
    boundary = "deskboxtestboundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file_path\"\r\n\r\n{path}\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file_data\"; filename=\"f\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    resp = http("POST", osworld + "/setup/upload", raw=body,
                headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert resp.status == 200, resp.body[:300]


def require_apps(*programs: str) -> None:
    """The apps of the apps image a test needs (programs on PATH, or files). Missing ones
    skip it on a developer's machine (``make test`` stays quick) and fail it under CI,
    where ``make test APPS=1`` installs them: a skip there would hide a missing install
    step."""
    missing = [p for p in programs if (not Path(p).exists() if "/" in p else shutil.which(p) is None)]
    if not missing:
        return
    message = f"the apps are not installed ({', '.join(missing)}); `make test APPS=1` installs them"
    if os.environ.get("CI"):
        raise RuntimeError(message)
    import pytest

    pytest.skip(message, allow_module_level=True)


class Session(SpawnedSession):
    """``deskbox up`` on free ports, with helpers for the tests."""

    def __init__(self, outputs: list[str], *, extra_env: dict[str, str] | None = None, browser: bool = True,
                 extra_args: list[str] | None = None, **spawn: Any) -> None:
        self.outputs = outputs
        self.desktopd_port, self.cdp_port, self.bridge_port, self.scene_port = free_ports(4)
        args = ["--desktopd-port", str(self.desktopd_port), "--cdp-port", str(self.cdp_port),
                "--bridge-port", str(self.bridge_port), "--scene-port", str(self.scene_port)]
        for output in outputs:
            args += ["--output", output]
        if not browser:
            args.append("--no-browser")
        args += extra_args or []
        super().__init__(args, env=extra_env, prefix="deskbox-test-", **spawn)

    def start(self, timeout: float = 60) -> "Session":
        for attempt in range(3):
            try:
                super().start(timeout)
                return self
            except SessionFailed as exc:
                # A port free when chosen can be taken before deskbox up binds it (one
                # CI run lost a module to Chromium holding a session's scene port): the
                # session refuses it, and is started again on fresh ports.
                if ("is held by" not in str(exc) and "is in use by" not in str(exc)) or attempt == 2:
                    raise
                self._new_ports()
        return self

    def _new_ports(self) -> None:
        at = [i + 1 for i, arg in enumerate(self.args[:-1]) if arg.startswith("--") and arg.endswith("-port")]
        for i, port in zip(at, free_ports(len(at))):
            self.args[i] = str(port)
        ports = dict(zip(self.args, self.args[1:]))
        self.desktopd_port, self.cdp_port = int(ports["--desktopd-port"]), int(ports["--cdp-port"])
        self.bridge_port, self.scene_port = int(ports["--bridge-port"]), int(ports["--scene-port"])

    @property
    def desktopd(self) -> str:
        return f"http://127.0.0.1:{self.desktopd_port}"

    @property
    def bridge(self) -> str:
        return f"http://127.0.0.1:{self.bridge_port}"

    @property
    def scene(self) -> str:
        return f"http://127.0.0.1:{self.scene_port}"

    def app_env(self, **extra: str) -> dict[str, str]:
        """The environment the session gives its apps (Wayland, D-Bus, XDG folders)."""
        return {**self.state["env"], **extra}

    def launch(self, argv: list[str], **popen: Any) -> subprocess.Popen:
        """Start a program inside the session, as the session's user (AT-SPI only
        answers readers of the apps' own uid), in a process group of its own; stop
        it with ``os.killpg(proc.pid, ...)``."""
        user = self.state["user"]
        if os.getuid() == 0 and user["uid"] != 0:
            popen.update(user=user["uid"], group=user["gid"], extra_groups=[])
        popen.setdefault("env", self.app_env())
        popen.setdefault("cwd", "/")
        popen.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.Popen(argv, start_new_session=True, **popen)

    def chromium_pid(self) -> int:
        return http("GET", self.bridge + "/health").json()["chromium_pid"]

    def children_up(self, token: str | None = None, timeout: float = 90) -> dict[str, dict]:
        """The session's children (name -> state, pid ...) once every one it wants is up:
        a test before may have killed one (or the compositor, which takes the others
        with it) and ended while the supervisor was starting them again."""
        headers = {"Authorization": f"Bearer {token}"} if token else None

        def up() -> dict | None:
            try:
                children = http("GET", self.scene + "/api/v1/session", headers=headers, timeout=5).json()["children"]
            except (OSError, ValueError, KeyError):
                return None
            return children if all(c["state"] in ("up", "stopped") for c in children.values()) else None

        return wait_until(up, timeout, 0.2, what="every child of the session up")

    @property
    def cdp(self) -> str:
        return f"http://127.0.0.1:{self.cdp_port}"

    # -- desktopd ----------------------------------------------------------------------

    def get(self, path: str, **kw: Any) -> Response:
        return http("GET", self.desktopd + path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Response:
        return http("POST", self.desktopd + path, body, **kw)

    def ok(self, path: str, body: Any = None) -> Any:
        resp = self.post(path, body) if body is not None or path.endswith(("/focus", "/close")) else self.get(path)
        assert resp.status == 200, f"{path} -> {resp.status} {resp.body[:500]!r}"
        return resp.json()

    def pointer(self, **body: Any) -> Any:
        return self.ok("/api/v1/pointer", body)

    def keyboard(self, **body: Any) -> Any:
        return self.ok("/api/v1/keyboard", body)

    def windows(self, app_id: str | None = None) -> list[dict]:
        tree = self.ok("/api/v1/tree")
        return [w for w in tree["windows"] if app_id is None or w["app_id"] == app_id]

    def browser_window(self) -> dict:
        return wait_until(lambda: next(iter(self.windows("chromium")), None), 20, what="a Chromium window")

    # -- Chromium over its DevTools HTTP endpoints (no CDP client needed) ----------------

    def tabs(self) -> list[dict]:
        return [t for t in http("GET", self.cdp + "/json/list").json() if t["type"] == "page"]

    def open_page(self, url: str) -> dict:
        """Open ``url`` in a new tab, close the others, and wait until it is shown: the
        others gone and the new one visible. Chromium closes a tab a while after it was
        asked to, a busy one later still (one that was just typed 8 KiB into): a click
        sent in between lands on the old page, and the new one never sees it."""
        old = self.tabs()
        tab = http("PUT", self.cdp + "/json/new?" + urllib.parse.quote(url, safe=":/?=&")).json()
        for t in old:
            http("GET", self.cdp + f"/json/close/{t['id']}")
        http("GET", self.cdp + f"/json/activate/{tab['id']}")
        gone = {t["id"] for t in old}

        def shown() -> bool:
            if any(t["id"] in gone for t in self.tabs()):
                return False
            try:
                return run_js(self, tab["id"], "document.visibilityState") == "visible"
            except (KeyError, StopIteration, AssertionError, OSError):
                return False  # (a navigation under way replaced the context asked)

        wait_until(shown, 20, 0.1, what=f"the new tab of {url} shown and the others closed")
        return tab


def run_js(session: "Session", tab_id: str, expression: str):
    """Evaluate in a tab (any page target, chrome:// ones too), over a DevTools connection
    of the test's own."""
    from websockets.sync.client import connect

    target = next(t for t in http("GET", session.cdp + "/json/list").json() if t["id"] == tab_id)
    with connect(target["webSocketDebuggerUrl"], max_size=None) as ws:
        ws.send(json.dumps({"id": 1, "method": "Runtime.evaluate",
                            "params": {"expression": expression, "returnByValue": True, "awaitPromise": True}}))
        reply = json.loads(ws.recv())
    assert "exceptionDetails" not in reply["result"], reply
    return reply["result"]["result"].get("value")


def browser_cdp(session: "Session", method: str, params: dict | None = None) -> dict:
    """One DevTools call on the browser itself (not a tab)."""
    from websockets.sync.client import connect

    version = http("GET", session.cdp + "/json/version").json()
    with connect(version["webSocketDebuggerUrl"], max_size=None) as ws:
        ws.send(json.dumps({"id": 1, "method": method, "params": params or {}}))
        reply = json.loads(ws.recv())
    assert "error" not in reply, reply
    return reply["result"]


def css_to_device(window: dict, layout: dict, x: float, y: float) -> tuple[float, float]:
    """Where a CSS point of the page lands on the display, in device pixels: the viewport
    is the bottom-right part of the window (Chromium's toolbar is above it)."""
    wx, wy, ww, wh = window["bounds"]
    dpr = layout["dpr"]
    left = wx + ww - layout["innerWidth"] * dpr
    top = wy + wh - layout["innerHeight"] * dpr
    return left + x * dpr, top + y * dpr


class Process:
    """A program started inside the session whose stdout is JSON lines."""

    def __init__(self, session: Session, argv: list[str], **popen: Any) -> None:
        self.proc = session.launch(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)
        self.pid = self.proc.pid
        self.lines: queue.Queue[dict] = queue.Queue()
        self.seen: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                pass

    def next(self, timeout: float = 20) -> dict:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"{self.proc.args[-1]} said nothing within {timeout}s; "
                                 f"stderr: {self._stderr()}") from None

    def wait_for(self, timeout: float = 10, **fields: Any) -> dict:
        deadline = time.monotonic() + timeout
        for event in self.seen:
            if all(event.get(k) == v for k, v in fields.items()):
                self.seen.remove(event)
                return event
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {fields} within {timeout}s; saw {self.seen[-10:]}")
            try:
                event = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if all(event.get(k) == v for k, v in fields.items()):
                return event
            self.seen.append(event)

    def latest(self, **fields: Any) -> dict | None:
        """The last event matching ``fields`` among everything said so far."""
        while True:
            try:
                self.seen.append(self.lines.get_nowait())
            except queue.Empty:
                break
        found = [e for e in self.seen if all(e.get(k) == v for k, v in fields.items())]
        return found[-1] if found else None

    def _stderr(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return "(still running)"
        return self.proc.stderr.read().decode(errors="replace")[-2000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def osworld_session(outputs: list[str], *extra_args: str) -> Session:
    """``deskbox up --osworld`` on free ports (OSWorld's server's and VLC's too), started,
    with its browser's window up. ``chrome_debug_port`` and ``chrome_relay_port``: what an
    OSWorld Chrome task gives google-chrome and socat (1337 and 9222 in OSWorld's VM,
    machine-wide here), picked once the session's services hold their own ports: chosen
    earlier and let go, one was once handed to the session's scene, and socat could not
    listen on it."""
    port, vlc = free_ports(2)
    session = Session(outputs, extra_args=["--osworld", "--osworld-port", str(port), "--vlc-port", str(vlc),
                                           *extra_args])
    session.osworld_port, session.vlc_port = port, vlc  # type: ignore[attr-defined]
    session.start(120)
    session.browser_window()
    session.chrome_debug_port, session.chrome_relay_port = free_ports(2)  # type: ignore[attr-defined]
    return session


def osworld_environment(session: Session, name: str, **ports: int) -> Any:
    """An OSWorld-mode test session as ``deskbox run`` sees one (an attached
    ``deskbox.provider.Environment``), with its other services' ports and ``ports``."""
    from deskbox.run.sessions import AttachedEnvironment

    found = AttachedEnvironment(name, f"http://127.0.0.1:{session.osworld_port}",  # type: ignore[attr-defined]
                                session.scene)
    found.ports.update(desktopd=session.desktopd_port, bridge=session.bridge_port, **ports)
    return found
