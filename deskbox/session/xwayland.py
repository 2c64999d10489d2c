"""X11 apps in the session (GIMP 2.10 and VLC 3 speak only X11): Sway's Xwayland, and
what an X app needs to join the session's accessibility and D-Bus activation.

Where the machine has ``Xwayland``, ``deskbox up --osworld`` (or ``--xwayland``; the
apps image's entrypoint always) turns Sway's Xwayland on (started with Sway, see
``sway_line``); other sessions go without its 65 MB. Sway gives ``DISPLAY`` only to the
programs it starts itself; the session asks it for the value (``swaymsg exec``) and puts
it in the session's environment, so that apps started by the OSWorld server, xdg-open or
a test find it too. Native Wayland apps are unaffected: GTK, Qt and LibreOffice prefer
Wayland when ``WAYLAND_DISPLAY`` is set.

Two things an app started later cannot do for itself (measured, Sway 1.7, Debian 12):

- Qt 5 looks for the accessibility bus first in the X root window's ``AT_SPI_BUS``
  property; without it, its asynchronous lookup on the session bus lost a race in 7 of
  8 VLC starts and VLC never appeared on AT-SPI. The session sets the property.
- Services the session bus starts on demand (``gnome-terminal-server``) inherit the
  bus's environment, which has no ``WAYLAND_DISPLAY``: the terminal server exited with
  status 10. The session hands the bus the display variables
  (``UpdateActivationEnvironment``), with or without Xwayland."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Awaitable, Callable

from ..common.logging import get_logger
from .readiness import dbus_send

__all__ = ["XWAYLAND", "available", "sway_line", "find_display", "set_atspi_bus_argv", "update_activation_env"]

log = get_logger("deskbox.xwayland")

XWAYLAND = "Xwayland"
XPROP = "xprop"  # x11-utils
DISPLAY_FILE = "xwayland-display"


def available() -> bool:
    """Whether this machine can run X11 apps in a session (Xwayland, and xprop to
    announce the accessibility bus)."""
    return shutil.which(XWAYLAND) is not None and shutil.which(XPROP) is not None


def sway_line(enabled: bool) -> str:
    """The Sway config line. Xwayland is started with Sway (``force``), not lazily: a
    lazy one ends when its last client goes (``-terminate``) and takes the root
    window's ``AT_SPI_BUS`` with it, and an app connecting while it ends gets no X
    server (VLC then falls back to its text interface and quits). It costs about 65 MB."""
    return "xwayland force" if enabled else "xwayland disable"


async def find_display(runtime: Path, run: Callable[[list[str]], Awaitable[int | None]],
                       timeout: float = 5.0) -> str | None:
    """Sway's ``DISPLAY`` (``:0``, ``:1`` ...), asked of Sway by a command it starts
    (``run`` runs a command as the session user, with ``SWAYSOCK``); None when Sway has
    no Xwayland. (Sway splits a command at ``;`` and ``,``: the shell line has neither.)"""
    path = runtime / DISPLAY_FILE
    path.unlink(missing_ok=True)
    partial = path.with_suffix(".partial")
    code = await run(["swaymsg", "exec", f"printenv DISPLAY > {partial} && mv {partial} {path}"])
    if code != 0:
        return None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        try:
            text = path.read_text().strip()
        except OSError:
            await asyncio.sleep(0.02)
            continue
        return text or None
    return None


def set_atspi_bus_argv(address: str) -> list[str]:
    """The command (run as the session user: Xwayland admits only its own user) that puts
    the accessibility bus's address in the X root window's ``AT_SPI_BUS`` property."""
    return [XPROP, "-root", "-f", "AT_SPI_BUS", "8s", "-set", "AT_SPI_BUS", address]


async def atspi_bus_address(dbus_address: str, path: str) -> str | None:
    code, out = await dbus_send(dbus_address, path, "--print-reply=literal", "--dest=org.a11y.Bus", "/org/a11y/bus",
                                "org.a11y.Bus.GetAddress")
    return out.strip() if code == 0 and out.strip() else None


async def update_activation_env(dbus_address: str, path: str, values: dict[str, str]) -> bool:
    """Give the session bus's activated services these variables."""
    pairs = ",".join(f"{k},{v}" for k, v in values.items())
    code, out = await dbus_send(dbus_address, path, "--print-reply", "--dest=org.freedesktop.DBus",
                                "/org/freedesktop/DBus", "org.freedesktop.DBus.UpdateActivationEnvironment",
                                f"dict:string:string:{pairs}")
    if code != 0:
        log.warning("bus activation environment not updated", error=out.strip())
    return code == 0
