"""The session's time zone: which one it is, and, where the session owns it, setting it.

The system's zone is ``/etc/localtime``, a link into ``/usr/share/zoneinfo`` (what
systemd's timedated reads and writes, and what every program without ``TZ`` follows). In
deskbox's images it is a link to a second link, ``/var/lib/deskbox/localtime``, which the
session user owns: the session sets its start zone there (``deskbox up --timezone``) and a
reset puts it back, with nothing written under ``/etc`` and nothing shared between
containers. Elsewhere (a session on a machine's own user) ``/etc/localtime`` is the
machine's, and only read."""

from __future__ import annotations

import os
import zoneinfo
from pathlib import Path

__all__ = ["ZONEINFO", "LOCALTIME", "OSWORLD_TIMEZONE", "zone_name", "session_link", "known", "point",
           "TimezoneError"]

ZONEINFO = Path("/usr/share/zoneinfo")
LOCALTIME = Path("/etc/localtime")

# Where an OSWorld-mode session's clock starts. OSWorld does not publish its VM's zone, but
# it is not UTC+0: one of its tasks asks to set UTC+0 and is graded on `timedatectl`, and a
# session in UTC, a container's default, passed it for an agent that did nothing. A zone
# an hour or two from UTC keeps short the hours in which the session's date and a grader's
# (in UTC, on most machines that run them) are different days.
OSWORLD_TIMEZONE = "Europe/Berlin"


class TimezoneError(ValueError):
    """A zone that is not one, or a zone that cannot be set here."""


def known(zone: str) -> bool:
    """``zone`` is a zone name of the system's database (``Europe/Berlin``, ``UTC``)."""
    return zone in zoneinfo.available_timezones() or zone in ("UTC", "Etc/UTC")


def zone_name(localtime: Path | None = None) -> str | None:
    """The zone ``localtime`` (the system's) names, through its links (``Etc/UTC``); None
    when it is not a link into the zone database."""
    localtime = localtime or LOCALTIME
    try:
        target = localtime.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    for base in (ZONEINFO.resolve(), ZONEINFO):
        try:
            name = target.relative_to(base).as_posix()
        except ValueError:
            continue
        return name.removeprefix("posix/")
    return None


def session_link(localtime: Path | None = None) -> Path | None:
    """The link the zone is set through when the session owns it: ``localtime`` (the
    system's) a link to another link in a folder this process may write. None when it is
    the machine's own."""
    localtime = localtime or LOCALTIME
    try:
        inner = Path(os.readlink(localtime))
    except OSError:
        return None
    if not inner.is_absolute():
        inner = localtime.parent / inner
    if not inner.is_symlink() or str(inner).startswith(str(ZONEINFO)):
        return None
    return inner if os.access(inner.parent, os.W_OK) else None


def point(link: Path, zone: str) -> None:
    """Make ``link`` name ``zone`` (replaced whole: a reader sees the old zone or the new)."""
    if not known(zone):
        raise TimezoneError(f"{zone!r} is not a time zone of {ZONEINFO} (timedatectl list-timezones lists them)")
    tmp = link.with_name(f".{link.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    os.symlink(ZONEINFO / zone, tmp)
    os.replace(tmp, link)
