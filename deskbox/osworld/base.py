"""What every part of the OSWorld-compatible server shares: its configuration, the app
keys, its clients of desktopd and the bridge, OSWorld's error shape, form bodies and paths.

Paths are taken as OSWorld's server takes them: ``~`` and ``$VARS`` expanded, and a
relative path is relative to the session user's home (OSWorld's server runs from it)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import ClientSession, web

from ..atspi.source import NativeSource
from ..common.recording import Recorder
from ..common.service_client import BridgeClient, DesktopdClient
from ..common.session_api import SessionControl
from ..common.web import read_form, validate
from .warm import WarmPython

__all__ = [
    "OsworldConfig", "CONFIG", "DESKTOPD", "BRIDGE", "OUTSIDE", "RECORDER", "WORK", "STARTED", "ATSPI", "CONTROL",
    "osworld_error", "desktopd", "windows", "form", "local_path", "home", "session_env",
]


@dataclass(frozen=True)
class OsworldConfig:
    desktopd: str
    bridge: str | None = None
    cdp_port: int | None = None
    browser_name: str = "Google Chrome"
    token: str | None = None
    work_dir: str | None = None  # scripts and recordings (default: a private temp folder)
    control: str | None = None  # deskbox up's control socket (start the browser, set the background)
    recording_max_s: float | None = None  # default: recording.MAX_DURATION_S
    warm_python: bool = True  # /execute forks `python -c` from a warm interpreter (deskbox.osworld.warm)


CONFIG = web.AppKey("config", OsworldConfig)
# The clients of the session's own services: they carry the token.
DESKTOPD = web.AppKey("desktopd", DesktopdClient)
BRIDGE = web.AppKey("bridge", BridgeClient)  # absent without a browser
# The client of URLs a task config names: no token, no cookies (common.net.outside_session).
OUTSIDE = web.AppKey("outside", ClientSession)
RECORDER = web.AppKey("recorder", Recorder)
WORK = web.AppKey("work", Path)
STARTED = web.AppKey("started", float)
ATSPI = web.AppKey("atspi", NativeSource)
CONTROL = web.AppKey("control", SessionControl)
WARM = web.AppKey("warm", WarmPython)  # absent with --cold-python


def osworld_error(message: str, status: int = 500, **extra: Any) -> web.Response:
    return web.json_response({"status": "error", "message": message, **extra}, status=status)


def desktopd(request: web.Request) -> DesktopdClient:
    return request.app[DESKTOPD]


async def windows(request: web.Request) -> tuple[list[dict], list[dict]]:
    """desktopd's displays and windows."""
    tree = await desktopd(request).window_tree()
    return tree["displays"], tree["windows"]


async def form(request: web.Request, model):
    data = await read_form(request)
    return validate(model, {k: v for k, v in data.items() if isinstance(v, str)})


def home() -> Path:
    """The session user's home: this server runs as that user, with its HOME."""
    return Path(os.path.expanduser("~"))


def local_path(raw: str) -> Path:
    """``~`` and ``$VARS`` expanded, relative to the home, as OSWorld's server (which
    runs from the home folder) takes it."""
    path = Path(os.path.expandvars(os.path.expanduser(raw)))
    return path if path.is_absolute() else home() / path


def session_env() -> dict[str, str]:
    # Commands it runs name themselves to desktopd (the pyautogui shim sends it as the
    # interface of the input they make: traces and the policy call it "osworld").
    return {**os.environ, "DESKBOX_INTERFACE": "osworld"}
