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
  (``UpdateActivationEnvironment``), with or without Xwayland.

Every X server of the machine puts its socket in one folder, ``/tmp/.X11-unix``, and
wlroots starts Xwayland only when that folder is root's or the session user's. One
missing is made by the first Xwayland, as its user's: every session of another user
then had no Xwayland ("not owned by root or us" in sway.log; seen after a bench's
session user came first, and GIMP and VLC never started in the sessions after it).
``deskbox up`` as root makes the folder what an init system makes it: root's, 1777."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
from pathlib import Path
from typing import Awaitable, Callable

from ..common.logging import get_logger
from .readiness import dbus_send

__all__ = ["XWAYLAND", "available", "sway_line", "socket_dir_problem", "find_display", "set_atspi_bus_argv",
           "update_activation_env"]

log = get_logger("deskbox.xwayland")

XWAYLAND = "Xwayland"
XPROP = "xprop"  # x11-utils
DISPLAY_FILE = "xwayland-display"
X11_SOCKETS = Path("/tmp/.X11-unix")


def available() -> bool:
    """Whether this machine can run X11 apps in a session (Xwayland, and xprop to
    announce the accessibility bus)."""
    return shutil.which(XWAYLAND) is not None and shutil.which(XPROP) is not None


def socket_dir_problem(uid: int, path: Path = X11_SOCKETS) -> str | None:
    """Makes ``path`` (the machine's X socket folder) one that Xwayland of the session
    user ``uid`` accepts, where this process may: as root, root's with mode 1777 (made,
    or taken back from the user who made it first). None when it is fit, else what is
    wrong with it."""
    if os.geteuid() == 0:
        try:
            if path.is_symlink() or (path.exists() and not path.is_dir()):
                return f"{path} is not a folder"
            path.mkdir(mode=0o1777, exist_ok=True)
            st = path.stat()
            if st.st_uid != 0 or st.st_gid != 0:
                os.chown(path, 0, 0)
            if stat.S_IMODE(st.st_mode) != 0o1777:
                os.chmod(path, 0o1777)
        except OSError as exc:
            return f"{path}: {exc}"
        return None
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None  # Xwayland makes it, as this user's
    except OSError as exc:
        return f"{path}: {exc}"
    if st.st_uid not in (0, uid):
        return f"{path} belongs to uid {st.st_uid}: wlroots starts Xwayland only when it is root's or the session user's"
    return None


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
