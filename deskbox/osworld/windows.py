"""Windows by name, as OSWorld's server finds them: ``/setup/activate_window``,
``/setup/close_window`` and the wait of ``/setup/open_file``.

OSWorld's server asks ``wmctrl``: a name is a case-insensitive part of a window's title
(``-a``), the whole title, case and all, with ``strict`` (``-F``), or the window's
class instead of its title with ``by_class`` (``-x``). A class is X11's
``res_name.res_class`` (``Mail.thunderbird``): an X11 window (Xwayland's) has its own,
from desktopd; a native Wayland window answers to its app id and to the class the same
app's window has on OSWorld's Ubuntu (``X11_CLASSES``), since configs name them so. The
session's browser is Chromium, and OSWorld's tasks call it Google Chrome: its windows
answer to both names (``Google Chrome`` for the title, ``google-chrome`` for the class).
Unlike OSWorld's server, a name no window has answers 404 rather than 200."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path

from aiohttp import web

from ..common.web import read_body
from . import commands
from .base import CONFIG, desktopd, local_path, session_env, windows
from .models import OpenFileRequest, WindowRequest

__all__ = ["chrome_title", "names", "find", "activate_window", "close_window", "open_file", "CHROMIUM_APP_IDS",
           "X11_CLASSES"]

CHROMIUM_APP_IDS = frozenset({"chromium", "chromium-browser"})
CHROMIUM = "Chromium"
CHROME_CLASSES = ("google-chrome", "Google-chrome", "google-chrome.Google-chrome")
# The X11 class (res_name.res_class, as `wmctrl -lx` lists it on Ubuntu) of the apps
# that run as native Wayland windows here, by their Wayland app id.
X11_CLASSES = {
    "thunderbird": "Mail.thunderbird",
    "org.mozilla.thunderbird": "Mail.thunderbird",
    "org.gnome.Terminal": "gnome-terminal-server.Gnome-terminal",
    "gnome-terminal-server": "gnome-terminal-server.Gnome-terminal",  # (its app id under Sway)
    "libreoffice-calc": "libreoffice.libreoffice-calc",
    "libreoffice-writer": "libreoffice.libreoffice-writer",
    "libreoffice-impress": "libreoffice.libreoffice-impress",
    "libreoffice-draw": "libreoffice.libreoffice-draw",
    "libreoffice-math": "libreoffice.libreoffice-math",
    "libreoffice-startcenter": "libreoffice.libreoffice-startcenter",
    "org.gnome.gedit": "gedit.Gedit",
    "org.gnome.Nautilus": "org.gnome.Nautilus.Org.gnome.Nautilus",
    "org.gnome.Calculator": "gnome-calculator.Gnome-calculator",
    "gimp": "gimp.Gimp",
    "vlc": "vlc.vlc",
    "code": "code.Code",
    "chrome-code.localhost__-Default": "code.Code",  # (VS Code's workbench: deskbox.osworld.vscode)
}
OPEN_POLL_S = 0.2


def chrome_title(title: str, browser_name: str = "Google Chrome") -> str:
    """A Chromium window title as Chrome would have it (``... - Google Chrome``)."""
    if title.endswith(" - " + CHROMIUM):
        return title[: -len(CHROMIUM)] + browser_name
    if title == CHROMIUM:
        return browser_name
    return f"{title} - {browser_name}" if title else browser_name


def names(window: dict, *, by_class: bool, browser_name: str = "Google Chrome") -> list[str]:
    """What a window answers to: its titles, or its classes with ``by_class``."""
    app = window.get("app_id") or ""
    chromium = app in CHROMIUM_APP_IDS
    if by_class:
        wm_class = window.get("wm_class")
        classes = [app, ".".join(wm_class) if wm_class else X11_CLASSES.get(app, "")]
        return [c for c in classes + (list(CHROME_CLASSES) if chromium else []) if c]
    title = window.get("title") or ""
    return [title, chrome_title(title, browser_name)] if chromium else [title]


def find(all_windows: list[dict], name: str, *, strict: bool = False, by_class: bool = False,
         browser_name: str = "Google Chrome") -> dict | None:
    """The first window answering to ``name`` (wmctrl's rules; see the module)."""
    for window in all_windows:
        for candidate in names(window, by_class=by_class, browser_name=browser_name):
            if candidate == name if strict else name.lower() in candidate.lower():
                return window
    return None


async def _window_action(request: web.Request, action: str) -> tuple[WindowRequest, dict | None]:
    req = await read_body(request, WindowRequest)
    _, all_windows = await windows(request)
    window = find(all_windows, req.window_name, strict=req.strict, by_class=req.by_class,
                  browser_name=request.app[CONFIG].browser_name)
    if window is not None:
        await desktopd(request).window(window["id"], action)
    return req, window


async def activate_window(request: web.Request) -> web.Response:
    req, window = await _window_action(request, "focus")
    if window is None:
        return web.Response(text=f"Window {req.window_name} not found", status=404)
    return web.Response(text="Window activated successfully")


async def close_window(request: web.Request) -> web.Response:
    req, window = await _window_action(request, "close")
    if window is None:
        return web.Response(text=f"Window {req.window_name} not found", status=404)
    return web.Response(text="Window closed successfully.")


def _title_match(window: dict, wanted: tuple[str, ...], browser_name: str) -> bool:
    # OSWorld's server looks for the name in the whole `wmctrl -l` line, case and all.
    return any(w in t for t in names(window, by_class=False, browser_name=browser_name) for w in wanted)


async def open_file(request: web.Request) -> web.Response:
    """Open a file with its default app (or start a program named by the path) and
    answer once a window whose title holds the file's name, with or without its
    extension, exists; that window is focused first."""
    req = await read_body(request, OpenFileRequest)
    path = local_path(req.path)
    env = session_env()
    if os.path.exists(path):
        opener = shutil.which("xdg-open", path=env.get("PATH"))
        if opener is None:
            return web.Response(text=f"Failed to open {path}. Error: xdg-open is not installed", status=404)
        argv = [opener, str(path)]
        wanted = tuple(dict.fromkeys([path.name, Path(path.name).stem]))
    elif program := shutil.which(req.path, path=env.get("PATH")):
        argv, wanted = [program], (req.path,)
    else:
        return web.Response(text=f"Application/file not found: {path}", status=404)
    browser_name = request.app[CONFIG].browser_name
    _, before = await windows(request)
    known = {w["id"] for w in before}
    started = time.monotonic()
    opener = await commands.start(argv, env=env)
    while True:
        if opener.returncode not in (None, 0):
            # The opener failed: no window is coming.
            return web.Response(text=f"Failed to open {path}. Error: {argv[0]} exited with {opener.returncode}",
                                status=500)
        _, now = await windows(request)
        # A window that was already open counts too (the file may open as a tab of it),
        # the newest first.
        found = sorted((w for w in now if _title_match(w, wanted, browser_name)),
                       key=lambda w: (w["id"] in known, not w.get("focused")))
        if found:
            await desktopd(request).focus_window(found[0]["id"])
            return web.Response(text="File opened and window activated successfully")
        if time.monotonic() - started > req.timeout:
            return web.Response(text=f"Failed to find window for {path.name} within {req.timeout:g} seconds.",
                                status=500)
        await asyncio.sleep(OPEN_POLL_S)
