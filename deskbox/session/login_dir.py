"""``/run/user/<uid>``: where a systemd login puts a user's runtime folder, and with it the
session bus at ``/run/user/<uid>/bus``. OSWorld's task configs name that address outright
(``export DBUS_SESSION_BUS_ADDRESS='unix:path=/run/user/1000/bus'; gnome-terminal ...``),
so with ``--osworld`` a session's runtime folder is reached there too: the path is a
symbolic link to the session's own folder (which stays where it is, on disk rather than
in /run's memory).

The link is only ever made where nothing else lives: absent (made when this process may
write /run/user, that is as root), or a link left by a session that has ended (its folder
is gone). A real folder there is a real login's, and a link to a folder that exists is
another session's: both are left alone and the session keeps its bus in its own folder.
The container's image holds the link for its user, to the runtime folder its entrypoint
names, so that a session there needs no privilege for it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..common.logging import get_logger

__all__ = ["LOGIN_ROOT", "Claim", "claim", "release"]

LOGIN_ROOT = Path("/run/user")
log = get_logger("deskbox.session")


@dataclass(frozen=True)
class Claim:
    path: Path  # /run/user/<uid>, a link to the session's runtime folder
    made: bool  # made by this session (and removed when it ends), or found in place


def claim(uid: int, runtime: Path, root: Path = LOGIN_ROOT) -> Claim | None:
    """``root/<uid>`` as a link to ``runtime``, or None (and why, in the log) when that
    place is not free."""
    link = root / str(uid)
    target = runtime.resolve()
    if link.is_symlink():
        pointed = Path(os.path.realpath(link))
        if pointed == target:
            return Claim(link, made=False)
        if pointed.exists():
            log.info("the login folder is another session's: the bus stays in the session's folder",
                     path=str(link), points_to=str(pointed))
            return None
        try:
            link.unlink()  # (a session that ended without removing it)
        except OSError as exc:
            log.info("a stale login folder link cannot be replaced", path=str(link), error=str(exc))
            return None
    elif link.exists():
        log.info("the login folder is a real login's: the bus stays in the session's folder", path=str(link))
        return None
    try:
        root.mkdir(mode=0o755, parents=True, exist_ok=True)
        link.symlink_to(target, target_is_directory=True)
    except OSError as exc:
        log.info("no login folder link (it needs root, or the image's link)", path=str(link), error=str(exc))
        return None
    return Claim(link, made=True)


def release(held: Claim, runtime: Path) -> None:
    """Remove the link this session made, if it still points at its folder."""
    if not held.made:
        return
    try:
        if held.path.is_symlink() and Path(os.path.realpath(held.path)) == runtime.resolve():
            held.path.unlink()
    except OSError as exc:
        log.warning("the login folder link was not removed", path=str(held.path), error=str(exc))
