"""A prepared session as its parts see it.

``Layout`` is what ``lifecycle.Session`` settles while it prepares and never changes
after: its folders, who it runs as, its buses and the addresses it serves at. ``Live`` is
what the session learns while it runs (Sway's socket, Xwayland's display) and the pages
its browser opens when it next starts. ``Environments`` builds the environment each kind
of program gets from those two, and runs short helpers as the session user.

Each part of a session (its children, its state) is given these, and nothing of
``Session`` itself.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..common.options import INTERNAL_SECRET_ENV, VLM_KEY_ENV
from ..common.paths import IMPORT_ROOT, SHIMS_DIR
from ..common.settings import given
from .cursor import THEME_NAME
from .options import UpOptions
from .users import SYSTEM_PATH

__all__ = ["Layout", "Live", "Environments", "SESSION_SITE", "url_host", "beyond_loopback", "PROFILES"]

# The browser's profile in the home: where OSWorld's graders read Google Chrome's in
# OSWorld mode, Chromium's own place otherwise.
PROFILES = {True: ".config/google-chrome", False: ".config/chromium"}

# Beside the pyautogui shims (paths.SHIMS_DIR), what they import (pyscreeze, for image search), installed with
# the venv (scripts/install-deps, the Containerfile) from deskbox/shims/requirements.txt.
SESSION_SITE = Path(sys.prefix) / "session-site"
# What the services pass on from deskbox up's own environment to every program of the session.
# (Not the token: the services get it (Environments.service), the apps and Chromium do not.)
PASSED_ON = ("DESKBOX_LOG_LEVEL", "DESKBOX_CHROMIUM_FLAGS", "DESKBOX_RECORDING_MAX_S", "DESKBOX_GC",
             "DESKBOX_ALLOWED_ORIGINS", "DESKBOX_ALLOWED_HOSTS", "DESKBOX_MAX_REQUESTS", "TZ")


def beyond_loopback(host: str | None) -> bool:
    """Whether services listening on ``host`` can be reached from other machines (the
    any-address, a name, an interface's address): anything but a loopback address and
    ``localhost``."""
    name = (host or "").strip("[]").lower()
    if name in ("localhost", "localhost.") or name.endswith(".localhost"):
        return False
    try:
        return not ipaddress.ip_address(name).is_loopback
    except ValueError:
        return True  # (the any-address "" and "0.0.0.0" included: is_loopback is False for them)


def url_host(host: str) -> str:
    """``host`` as a URL names it, with the any-address taken as loopback."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if ":" in host:
        return f"[{host}]"
    return host


@dataclass(frozen=True)
class Layout:
    """A prepared session: fixed from its preparation to its end."""

    options: UpOptions  # deskbox up's options: ports, host, services, log level
    runtime: Path  # the session's own folder
    runtime_seen: Path  # that folder as programs are told it: /run/user/<uid> with --osworld
    home: Path
    uid: int
    gid: int
    user_name: str
    service_uid: int | None  # who the services run as; None: root (the user cannot read deskbox)
    dbus_address: str
    x11: bool  # whether Sway runs Xwayland
    browser_binary: str
    headless_outputs: int
    start_urls: tuple[str, ...]
    internal_secret: str  # between desktopd and the scene only
    token: str | None = None  # the services' bearer token (DESKBOX_TOKEN); the services' environment only
    chromium_sandbox: bool = True  # whether the browser runs its sandbox (the kernel may refuse it)
    traces_dir: Path | None = None
    browser_window_size: tuple[int, int] | None = None  # the first display's logical size: the browser opens at it

    @property
    def profile_dir(self) -> Path:
        """Where Chrome keeps its profile: OSWorld's graders read it there."""
        return self.home / PROFILES[bool(self.options.osworld)]

    @property
    def control_socket(self) -> Path:
        return self.runtime / "control.sock"

    def log(self, name: str) -> Path:
        return self.runtime / "logs" / f"{name}.log"

    def url(self, port: int) -> str:
        return f"http://{url_host(self.options.host)}:{port}"


@dataclass
class Live:
    """What a running session learns of itself, and what its browser opens next."""

    swaysock: str | None = None
    x_display: str | None = None  # Xwayland's, once Sway has said it
    # The pages the browser opens when it next starts; None: the tabs it had (it went on its own).
    next_pages: list[str] | None = field(default=None)


class Environments:
    """The environment of each kind of program in a session, from its layout and what it
    has learnt; and short helpers run as the session user in it."""

    def __init__(self, layout: Layout, live: Live) -> None:
        self.layout = layout
        self.live = live

    def base(self) -> dict[str, str]:
        """What every program started for the session gets, Sway and the buses included."""
        lay = self.layout
        env = {
            "PATH": SYSTEM_PATH,
            "HOME": str(lay.home),
            "USER": lay.user_name,
            "LOGNAME": lay.user_name,
            "SHELL": "/bin/bash",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "XDG_RUNTIME_DIR": str(lay.runtime_seen),
            # Caches stay out of the home: snapshots do not copy them; a reset empties them.
            "XDG_CACHE_HOME": str(lay.runtime / "cache"),
            "XCURSOR_PATH": str(lay.runtime / "icons"),
            "XCURSOR_THEME": THEME_NAME,
            "XCURSOR_SIZE": "24",
            # Everyone (Sway's clients, Chromium, native apps, the scene aggregator) talks to
            # the session's own bus; the AT-SPI bus address is asked of it (org.a11y.Bus).
            "DBUS_SESSION_BUS_ADDRESS": lay.dbus_address,
            # Qt apps otherwise only look at org.a11y.Status, which a late Qt may miss.
            "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
            # GTK 2 apps (GIMP 2.10) load the AT-SPI bridge only when asked to; GTK 3 and
            # 4 have it built in and do not read this variable.
            "GTK2_MODULES": "gail:atk-bridge",
        }
        env.update({key: os.environ[key] for key in PASSED_ON if key in os.environ})
        return env

    def session(self) -> dict[str, str]:
        """What programs inside the session (apps, the user's commands) get."""
        lay, env = self.layout, self.base()
        env["WAYLAND_DISPLAY"] = "wayland-1"
        # Programs in the session find desktopd (the pyautogui shim drives it) by this.
        env["DESKBOX_DESKTOPD"] = lay.url(lay.options.desktopd_port)
        env["PYTHONPATH"] = str(SHIMS_DIR) + (f":{SESSION_SITE}" if SESSION_SITE.is_dir() else "")
        if lay.options.osworld:
            env["PATH"] = f"{lay.runtime / 'bin'}:{env['PATH']}"
            env["DESKBOX_OSWORLD"] = lay.url(lay.options.osworld_port)
        if self.live.swaysock:
            env["SWAYSOCK"] = self.live.swaysock
        if self.live.x_display:
            env["DISPLAY"] = self.live.x_display
        return env

    def commanding(self) -> dict[str, str]:
        """The OSWorld server's (the commands it runs are the session's programs): the
        session's, and the services' token, which the pyautogui and google-chrome shims in
        those commands send. Chromium and the apps the session starts are not given it."""
        env = self.session()
        if self.layout.token:
            env["DESKBOX_TOKEN"] = self.layout.token
        return env

    def service(self) -> dict[str, str]:
        """deskbox's own services': the session's, with deskbox importable."""
        env = self.commanding()
        env["PYTHONPATH"] = str(IMPORT_ROOT)
        if self.layout.service_uid is None:
            env["HOME"] = os.path.expanduser("~root")
        return env

    def gated(self) -> dict[str, str]:
        """desktopd's and the scene's: the services', and the internal secret."""
        return {**self.service(), INTERNAL_SECRET_ENV: self.layout.internal_secret}

    def scene(self) -> dict[str, str]:
        """The scene's: desktopd's, and the vision model's key when it has a model (the
        scene alone calls it; the apps of the session never see the key)."""
        env = self.gated()
        if self.layout.options.vlm_url and (key := given(VLM_KEY_ENV)):
            env[VLM_KEY_ENV] = key
        return env

    def sway(self) -> dict[str, str]:
        env = self.base()
        env.update(WLR_BACKENDS="headless", WLR_RENDERER="pixman", WLR_LIBINPUT_NO_DEVICES="1",
                   WLR_HEADLESS_OUTPUTS=str(self.layout.headless_outputs))
        return env

    def chromium(self) -> dict[str, str]:
        # Its Wayland app id comes from this (Debian's launcher sets it): "chromium".
        return {**self.session(), "CHROME_DESKTOP": "chromium.desktop"}

    async def run(self, argv: list[str], *, timeout: float = 5.0) -> int | None:
        """Run a short helper (swaymsg, wl-copy) as the session user, in its
        environment; its exit code, or None when it could not run or took too long."""
        lay = self.layout
        kwargs: dict = {}
        if os.geteuid() == 0 and lay.uid != 0:
            kwargs.update(user=lay.uid, group=lay.gid, extra_groups=[])
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, env=self.session(), cwd=str(lay.home), stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, **kwargs)
        except OSError:
            return None
        try:
            return await asyncio.wait_for(proc.wait(), timeout)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            return None
