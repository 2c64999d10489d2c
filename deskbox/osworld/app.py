"""The OSWorld-compatible server: OSWorld's in-VM HTTP API (same paths, methods, body
shapes and replies) over a deskbox session. Built in one factory, one handler per
route, found through ``ROUTES``; the desktopd client, the recorder and the CDP relays
are opened and closed in cleanup contexts.

Errors: where OSWorld's server defines a reply (``500 {"status": "error", "message"}``
from /execute, ``404 {"error": "File not found"}`` from /file ...) that reply is
given, because OSWorld's controllers read it; everything else answers deskbox's
``{"error": {"code", "message"}}`` (``deskbox.common.web``).

Security: this app runs programs (/execute, /run_python, /run_bash_script, /setup/*).
It exists only in a session started with ``--osworld``, runs as the session user
(never root: ``create_app`` refuses), and asks for the bearer token when one is set.
"""

from __future__ import annotations

import asyncio
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from aiohttp import ClientError, ClientTimeout, web

from ..atspi.source import NativeSource
from ..common.errors import ActionFailedError, DeskboxError, InvalidRequestError, NotFoundError, UnavailableError
from ..common.metrics import add_metrics, metrics_middleware, serve_metrics
from ..common.net import outside_session
from ..common.openapi import ACTION, ACTION_S, QUICK_S, SLOW, Longest, Route, add_routes, openapi_document, waiting
from ..common.recording import Recorder, RecordingError
from ..common.service_client import BridgeClient, ConnectError, DesktopdClient
from ..common.session_api import RESET_TIMEOUT_S, SessionControl
from ..common.waiting import until
from ..common.web import error_middleware, guarded, json_ok, read_body, send_and_remove
from . import accessibility, commands, files, windows
from .base import (
    ATSPI,
    BRIDGE,
    CONFIG,
    CONTROL,
    DESKTOPD,
    OUTSIDE,
    RECORDER,
    STARTED,
    WARM,
    WORK,
    OsworldConfig,
    desktopd,
    form,
    local_path,
    osworld_error,
    session_env,
)
from .base import windows as window_tree
from .chrome import RelayError, Relays, parse_args
from .models import (
    MAX_TIMEOUT_S,
    OPEN_FILE_TIMEOUT_S,
    ChromeRequest,
    CommandRequest,
    DownloadRequest,
    LaunchRequest,
    OpenFileRequest,
    PathRequest,
    RunBashRequest,
    RunPythonRequest,
    VerifiedCommandRequest,
    WindowRequest,
    WindowSizeForm,
)
from .warm import WarmPython

__all__ = ["create_app", "OsworldConfig", "__version__"]

__version__ = "0.1.0"

OPEN_PATHS = frozenset({"/health", "/openapi.json"})
RELAYS = web.AppKey("relays", Relays)


def create_app(config: OsworldConfig) -> web.Application:
    if os.geteuid() == 0:
        raise PermissionError("the OSWorld server runs commands: it must not run as root")
    app = web.Application(
        middlewares=[metrics_middleware, error_middleware, *guarded(config.token, OPEN_PATHS)],
        client_max_size=16 * 1024 * 1024,
    )
    app[CONFIG] = config
    app[STARTED] = time.time()
    add_metrics(app)
    work = Path(config.work_dir) if config.work_dir else Path(tempfile.mkdtemp(prefix="deskbox-osworld-"))
    work.mkdir(mode=0o700, parents=True, exist_ok=True)
    app[WORK] = work
    app[RECORDER] = Recorder(folder=str(work))
    if config.recording_max_s:
        app[RECORDER].max_duration_s = config.recording_max_s
    app[RELAYS] = Relays(config.cdp_port or 0)
    # The scene's AT-SPI reader, in a worker process of its own that lives as long as
    # the server (its connections and caches too): one read at a time, as graders poll.
    app[ATSPI] = NativeSource(timeout=accessibility.WALK_TIMEOUT_S)
    app[CONTROL] = SessionControl(config.control)

    async def http_ctx(app: web.Application):
        app[DESKTOPD] = DesktopdClient(config.desktopd, config.token)
        await app[DESKTOPD].start()
        if config.bridge:
            app[BRIDGE] = BridgeClient(config.bridge, config.token)
            await app[BRIDGE].start()
        app[OUTSIDE] = outside_session(ClientTimeout(total=DOWNLOAD_TRY_S))
        await app[CONTROL].start()
        yield
        await app[CONTROL].close()
        await app[OUTSIDE].close()
        if BRIDGE in app:
            await app[BRIDGE].close()
        await app[DESKTOPD].close()

    async def recorder_ctx(app: web.Application):
        yield
        await app[RECORDER].close()

    async def relays_ctx(app: web.Application):
        yield
        await app[RELAYS].close()

    async def atspi_ctx(app: web.Application):
        yield
        await app[ATSPI].close()

    async def warm_ctx(app: web.Application):
        yield
        if WARM in app:
            await app[WARM].close()

    if config.warm_python:
        app[WARM] = WarmPython()
    app.cleanup_ctx.extend([http_ctx, recorder_ctx, relays_ctx, atspi_ctx, warm_ctx])
    add_routes(app, ROUTES)
    return app


# -- observation ------------------------------------------------------------------


async def health(request: web.Request) -> web.Response:
    return json_ok({"ok": True, "version": __version__, "pid": os.getpid(),
                    "uptime_s": round(time.time() - request.app[STARTED], 1)})


async def screenshot(request: web.Request) -> web.Response:
    body, _ = await desktopd(request).screenshot({"display": "0", "cursor": "1"})
    return web.Response(body=body, content_type="image/png", headers={"Cache-Control": "no-store"})


async def _accessibility_xml(request: web.Request) -> tuple[str, dict[str, Any]]:
    """The XML, and the AT-SPI read's figures (``walk``: seconds, and which apps gave
    their last read again)."""
    # desktopd's windows and the AT-SPI read do not wait for each other.
    windows, tree = await asyncio.gather(window_tree(request), accessibility.walk(request.app[ATSPI]),
                                         return_exceptions=True)
    if isinstance(tree, accessibility.WalkFailed):
        raise UnavailableError(str(tree)) from tree
    for result in (windows, tree):
        if isinstance(result, BaseException):
            raise result
    xml = accessibility.build_xml(tree, accessibility.placed_windows(*windows), request.app[CONFIG].browser_name)
    return xml, tree.get("walk") or {}


async def accessibility_tree(request: web.Request) -> web.Response:
    xml, walk = await _accessibility_xml(request)
    response = json_ok({"AT": xml})
    # How the tree was read, in the standard header for it: the walk's time, each app
    # that gave its last read again (nothing it listed changed since), and how many
    # nodes of an app read again were taken from its last read (subtrees that did not
    # show and did not change).
    timings = [f"atspi;dur={walk.get('seconds', 0) * 1000:.1f}"]
    timings += [f'kept;desc="{name}"' for name in walk.get("kept") or ()]
    timings += [f'taken;desc="{name} {count}"' for name, count in (walk.get("taken") or {}).items()]
    response.headers["Server-Timing"] = ", ".join(timings)
    return response


async def terminal(request: web.Request) -> web.Response:
    xml, _ = await _accessibility_xml(request)
    return json_ok({"output": accessibility.terminal_output(xml), "status": "success"})


async def screen_size(request: web.Request) -> web.Response:
    displays = await desktopd(request).display_list()
    if not displays:
        raise UnavailableError("desktopd reports no display")
    width, height = displays[0]["size"]
    return json_ok({"width": width, "height": height})


async def window_size(request: web.Request) -> web.Response:
    req = await form(request, WindowSizeForm)
    _, all_windows = await window_tree(request)
    wanted = req.app_class_name.lower()
    for w in all_windows:
        if (w.get("app_id") or "").lower() == wanted and w.get("bounds"):
            return json_ok({"width": w["bounds"][2], "height": w["bounds"][3]})
    raise NotFoundError(f"no window of app {req.app_class_name!r}", code="no_window")


async def platform_name(request: web.Request) -> web.Response:
    return web.Response(text=platform.system())


async def cursor_position(request: web.Request) -> web.Response:
    """``[x, y]`` as OSWorld's server answers (pyautogui's position). desktopd knows
    where it put the pointer; before it has moved it, the pointer is at (0, 0)."""
    reply = await desktopd(request).pointer_at() or {}
    if reply.get("x") is None or reply.get("y") is None:
        return json_ok([0, 0])
    return json_ok([round(reply["x"]), round(reply["y"])])


# -- programs ---------------------------------------------------------------------


def _missing_program(argv: list[str], env: dict[str, str]) -> web.Response | None:
    """404 naming the program when it is not installed (OSWorld's server would answer
    500 with the OSError)."""
    if shutil.which(argv[0], path=env.get("PATH")) is None:
        return osworld_error(f"{argv[0]}: no such program in this session (not installed, or not on PATH)", 404)
    return None


async def _execute(request: web.Request, req: CommandRequest) -> tuple[dict | None, web.Response | None]:
    """Run ``req``'s command as /execute does: OSWorld's reply, or the error to answer."""
    env = session_env()
    try:
        argv = commands.prepare_argv(req.command, req.shell)
        if (missing := _missing_program(argv, env)) is not None:
            return None, missing
        done = await commands.run(argv, timeout=req.timeout, env=env, warm=request.app.get(WARM))
    except commands.CommandTimeout as exc:
        # OSWorld's reply for a timeout, with what the command had said so far.
        return None, osworld_error(str(exc), output=exc.stdout, error=exc.stderr)
    except ValueError as exc:  # (a command that cannot be split: unbalanced quotes ...)
        return None, osworld_error(str(exc), status=400)
    except OSError as exc:
        return None, osworld_error(str(exc))
    return {"status": "success", "output": done.stdout, "error": done.stderr, "returncode": done.returncode}, None


async def execute(request: web.Request) -> web.Response:
    reply, failed = await _execute(request, await read_body(request, CommandRequest))
    return failed if failed is not None else json_ok(reply)


async def execute_with_verification(request: web.Request) -> web.Response:
    req = await read_body(request, VerifiedCommandRequest)
    started = time.monotonic()
    reply, failed = await _execute(request, req)
    if failed is not None:
        return failed
    assert reply is not None
    env = session_env()
    check = req.verification
    if check is None or (check.window_exists is None and check.command_success is None):
        return json_ok(reply)
    async def verified() -> bool:
        ok = True
        if check.window_exists is not None:
            _, all_windows = await window_tree(request)
            ok = windows.find(all_windows, check.window_exists, browser_name=request.app[CONFIG].browser_name) is not None
        if ok and check.command_success is not None:
            try:
                ok = (await commands.run(["/bin/sh", "-c", check.command_success], timeout=5, env=env)).returncode == 0
            except (OSError, commands.CommandTimeout):
                ok = False
        return ok

    try:
        await until(verified, req.max_wait_time, req.check_interval, "the verification")
    except TimeoutError:
        return json_ok({**reply, "status": "verification_failed", "verification": "failed",
                        "wait_time": round(time.monotonic() - started, 2)}, status=500)
    return json_ok({**reply, "verification": "passed", "wait_time": round(time.monotonic() - started, 2)})


# A download: three tries, as OSWorld's server makes, of at most 300 s each.
DOWNLOAD_TRIES = 3
DOWNLOAD_TRY_S = 300.0


async def download_file(request: web.Request) -> web.Response:
    """Fetch a URL into a path of the session. A download stopped part way (its bound,
    or the server stopping) leaves no partial file."""
    req = await read_body(request, DownloadRequest)
    dest = local_path(req.path)
    last = ""
    for _ in range(DOWNLOAD_TRIES):
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            size = 0
            async with request.app[OUTSIDE].get(req.url) as resp:
                resp.raise_for_status()
                with open(dest, "wb") as out:
                    async for chunk in resp.content.iter_chunked(1024 * 1024):
                        size += len(chunk)
                        if size > files.MAX_UPLOAD_BYTES:
                            raise InvalidRequestError(f"{req.url} is over {files.MAX_UPLOAD_BYTES} bytes",
                                                      code="too_large")
                        out.write(chunk)
            return web.Response(text=f"File downloaded successfully: {size} bytes")
        except PermissionError as exc:
            return web.Response(text=f"Failed to download {req.url}: permission denied: {exc.filename}", status=403)
        except (OSError, asyncio.TimeoutError, ClientError) as exc:
            last = str(exc) or type(exc).__name__
            dest.unlink(missing_ok=True)
        except asyncio.CancelledError:
            dest.unlink(missing_ok=True)
            raise
    return web.Response(text=f"Failed to download {req.url}. No retries left. Error: {last}", status=502)


async def launch(request: web.Request) -> web.Response:
    req = await read_body(request, LaunchRequest)
    env = session_env()
    try:
        argv = commands.prepare_argv(req.command, req.shell)
        if (missing := _missing_program(argv, env)) is not None:
            return missing
        await commands.launch(argv, env=env)
    except ValueError as exc:
        return osworld_error(str(exc), status=400)
    except OSError as exc:
        return osworld_error(str(exc))
    shown = req.command if isinstance(req.command, str) else " ".join(req.command)
    return json_ok({"status": "success", "message": f"{shown} launched successfully"})


async def run_python(request: web.Request) -> web.Response:
    req = await read_body(request, RunPythonRequest)
    cwd = str(local_path(req.working_dir)) if req.working_dir else None
    fd, name = tempfile.mkstemp(prefix="python_exec_", suffix=".py", dir=request.app[WORK])
    with os.fdopen(fd, "w") as f:
        f.write(req.code)
    try:
        done = await commands.run(["python3", name], timeout=req.timeout, cwd=cwd, env=session_env())
    except commands.CommandTimeout as exc:
        return osworld_error("Execution timeout: Code took too long to execute", error="TimeoutExpired",
                             need_more=False, output=exc.stdout or None)
    except OSError as exc:
        return osworld_error(f"Execution error: {exc}", error=str(exc), need_more=False, output=None)
    finally:
        os.unlink(name)
    error = done.stderr
    if done.returncode != 0 and not error:
        error = f"Process exited with code {done.returncode}"
    message = "\n".join(p for p in (done.stdout, error) if p)
    return json_ok({"status": "success" if done.returncode == 0 else "error", "message": message,
                    "need_more": False, "output": done.stdout, "error": error, "return_code": done.returncode})


async def run_bash_script(request: web.Request) -> web.Response:
    req = await read_body(request, RunBashRequest)
    cwd = None
    if req.working_dir:
        cwd = str(local_path(req.working_dir))
        if not os.path.isdir(cwd):
            return web.json_response({"status": "error", "output": f"Working directory does not exist: {cwd}",
                                      "error": "", "returncode": -1}, status=400)
    script = req.script if "#!/bin/bash" in req.script else "#!/bin/bash\n\n" + req.script
    fd, name = tempfile.mkstemp(prefix="bash_script_", suffix=".sh", dir=request.app[WORK])
    with os.fdopen(fd, "w") as f:
        f.write(script)
    try:
        done = await commands.run(["/bin/bash", name], timeout=req.timeout, cwd=cwd, env=session_env(),
                                  merge_stderr=True)
    except commands.CommandTimeout as exc:
        said = f"\n{exc.stdout}" if exc.stdout else ""
        return web.json_response({"status": "error", "returncode": -1, "error": "",
                                  "output": f"Script execution timed out after {req.timeout:g} seconds{said}"},
                                 status=500)
    except OSError as exc:
        return web.json_response({"status": "error", "output": f"Failed to execute script: {exc}",
                                  "error": "", "returncode": -1}, status=500)
    finally:
        os.unlink(name)
    return json_ok({"status": "success" if done.returncode == 0 else "error", "output": done.stdout,
                    "error": "", "returncode": done.returncode})


# -- recording --------------------------------------------------------------------


async def start_recording(request: web.Request) -> web.Response:
    recorder = request.app[RECORDER]
    if recorder.recording:
        return osworld_error("Recording is already in progress.", status=409)
    displays = await desktopd(request).display_list()
    try:
        # The output is named: with several, wf-recorder would ask which on its stdin.
        await recorder.start(displays[0]["name"] if displays else None)
    except RecordingError as exc:
        return osworld_error(str(exc))
    return json_ok({"status": "success", "message": "Started recording."})


async def end_recording(request: web.Request) -> web.StreamResponse:
    recorder = request.app[RECORDER]
    if not recorder.recording:
        return osworld_error("No recording in progress to stop.", status=400)
    try:
        path = await recorder.stop()
    except RecordingError as exc:
        return osworld_error(str(exc))
    headers = {"Content-Disposition": 'attachment; filename="recording.mp4"'}
    if recorder.limit:
        headers["X-Deskbox-Recording-Limit"] = recorder.limit  # it was ended by its limit, finished
    return await send_and_remove(request, path, "video/mp4", headers)


# -- the session's google-chrome wrapper --------------------------------------------


async def chrome(request: web.Request) -> web.Response:
    req = await read_body(request, ChromeRequest)
    config = request.app[CONFIG]
    try:
        parsed = parse_args(req.args)
    except ValueError as exc:
        raise InvalidRequestError(str(exc), code="validation_error") from exc
    if config.bridge is None or config.cdp_port is None:
        raise UnavailableError("this session has no browser (started with --no-browser)")
    relayed = None
    if parsed.port is not None:
        try:
            await request.app[RELAYS].ensure(parsed.port)
        except RelayError as exc:
            raise ActionFailedError(str(exc), code="port_in_use") from exc
        relayed = parsed.port
    # Not running (after a reset, or `pkill chrome`): start it on these URLs, as running
    # google-chrome would. Chromium 156 does not open its own pages (chrome://settings...)
    # given on its command line, and shows a new tab instead: those open as tabs once it
    # is up.
    internal = [url for url in parsed.urls if url.startswith(INTERNAL_SCHEMES)]
    first = [url for url in parsed.urls if url not in internal]
    started = (await request.app[CONTROL].call("POST", "/browser", {"urls": first}))["started"]
    tabs = [await _open_tab(request, url) for url in (internal if started else parsed.urls)]
    return json_ok({"ok": True, "started": started, "debugging_port": relayed, "cdp_port": config.cdp_port,
                    "tabs": tabs})


INTERNAL_SCHEMES = ("chrome:", "chrome-untrusted:", "devtools:", "chrome-extension:")

# A browser that has just been started (by another google-chrome a moment ago) takes a
# moment more to be read by the bridge: a new tab waits for it that long.
BROWSER_COMING_S = 20.0


async def _open_tab(request: web.Request, url: str) -> dict:
    bridge = request.app[BRIDGE]
    last: DeskboxError | None = None

    async def opened() -> dict | None:
        nonlocal last
        try:
            return await bridge.new_tab(url)
        except ConnectError as exc:
            raise UnavailableError(f"the CDP bridge is not reachable: {exc}") from exc
        except UnavailableError as exc:  # only a browser still coming up is worth waiting for
            last = exc
            return None
        except DeskboxError as exc:
            raise ActionFailedError(f"the bridge did not open {url!r}: {exc}") from exc

    try:
        return await until(opened, BROWSER_COMING_S, 0.1, f"a tab on {url!r}")
    except TimeoutError:
        raise ActionFailedError(f"the bridge did not open {url!r}: {last}") from None


async def openapi(request: web.Request) -> web.Response:
    return json_ok(openapi_document("deskbox osworld", __version__, ROUTES))


# What the OSWorld server's routes take at most: a command its timeout (then its output
# drained and answered), a verified one its timeout and its wait, a download its tries.
COMMAND = waiting("timeout", MAX_TIMEOUT_S)
VERIFIED = Longest(2 * MAX_TIMEOUT_S + QUICK_S,
                   lambda body, query: body.timeout + body.max_wait_time + QUICK_S,
                   f"its timeout plus its max_wait_time plus {QUICK_S:g} s")
DOWNLOAD = Longest(DOWNLOAD_TRIES * DOWNLOAD_TRY_S + QUICK_S)

ROUTES = [
    Route("GET", "/health", health, "Liveness"),
    Route("GET", "/openapi.json", openapi, "This document"),
    Route("GET", "/metrics", serve_metrics, "Prometheus metrics: requests per route", responses="text/plain"),
    Route("GET", "/screenshot", screenshot, "PNG of the first display with the pointer drawn in", responses="image/png"),
    Route("GET", "/accessibility", accessibility_tree, "OSWorld's AT-SPI XML tree: {\"AT\": xml}", longest=ACTION),
    Route("GET", "/terminal", terminal, "Text of the focused gnome-terminal", longest=ACTION),
    Route("POST", "/screen_size", screen_size, "The first display's size in pixels"),
    Route("POST", "/window_size", window_size, "Size of an app's window (form app_class_name)"),
    Route("POST", "/desktop_path", files.desktop_path, "~/Desktop, if it exists"),
    Route("POST", "/wallpaper", files.wallpaper, "The background image", responses="image/png"),
    Route("GET", "/wallpaper", files.wallpaper, "Same as POST /wallpaper", responses="image/png"),
    Route("GET", "/platform", platform_name, "\"Linux\""),
    Route("GET", "/cursor_position", cursor_position, "[x, y] of the pointer"),
    Route("POST", "/list_directory", files.list_directory, "A folder's tree", body=PathRequest),
    Route("POST", "/file", files.get_file, "A file's bytes (form file_path)", responses="application/octet-stream"),
    Route("POST", "/setup/upload", files.upload, "Write a file (multipart file_path + file_data)", longest=SLOW),
    Route("POST", "/setup/change_wallpaper", files.change_wallpaper, "Set the background image", body=PathRequest),
    Route("POST", "/execute", execute, "Run a command, wait up to 120 s", body=CommandRequest, longest=COMMAND),
    Route("POST", "/setup/execute", execute, "Same as /execute", body=CommandRequest, longest=COMMAND),
    Route("POST", "/execute_with_verification", execute_with_verification,
          "Run a command, then wait for a window or a command to succeed", body=VerifiedCommandRequest,
          longest=VERIFIED),
    Route("POST", "/setup/execute_with_verification", execute_with_verification,
          "Same as /execute_with_verification", body=VerifiedCommandRequest, longest=VERIFIED),
    Route("POST", "/setup/launch", launch, "Start a command, do not wait", body=LaunchRequest),
    Route("POST", "/setup/download_file", download_file, "Fetch a URL into a file of the session",
          body=DownloadRequest, longest=DOWNLOAD),
    Route("POST", "/setup/open_file", windows.open_file, "Open a file with its default app and wait for its window",
          body=OpenFileRequest, longest=waiting("timeout", OPEN_FILE_TIMEOUT_S)),
    Route("POST", "/setup/activate_window", windows.activate_window, "Focus a window by title or app",
          body=WindowRequest),
    Route("POST", "/setup/close_window", windows.close_window, "Close a window by title or app", body=WindowRequest),
    Route("POST", "/run_python", run_python, "Run Python code", body=RunPythonRequest, longest=COMMAND),
    Route("POST", "/run_bash_script", run_bash_script, "Run a bash script", body=RunBashRequest, longest=COMMAND),
    Route("POST", "/start_recording", start_recording, "Start an mp4 recording of the screen"),
    Route("POST", "/end_recording", end_recording, "Stop the recording and return the mp4", responses="video/mp4",
          longest=SLOW),
    Route("POST", "/deskbox/chrome", chrome, "For the session's google-chrome wrapper: open URLs (starting the "
          "browser when it is not running), relay a debugging port", body=ChromeRequest,
          longest=Longest(RESET_TIMEOUT_S + ACTION_S)),
]
