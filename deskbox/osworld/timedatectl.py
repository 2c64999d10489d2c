"""``timedatectl`` for a session without systemd: what OSWorld's tasks run (its task "set
my time zone to UTC+0" is graded on ``timedatectl status``'s fourth line), answered from
the session's own zone (``deskbox.common.timezone``).

- ``status`` (the default) and ``show``: in systemd's layout. The clock is the machine's:
  no RTC is read (``n/a``), and no NTP service is the session's.
- ``list-timezones``: the zone database's names.
- ``set-timezone ZONE``: as root (``sudo``), as on Ubuntu, where timedated asks for an
  administrator; it sets the session's link where the session owns the zone (its images),
  else ``/etc/localtime`` itself. A program started afterwards follows it.
- ``set-time``, ``set-ntp``, ``set-local-rtc``: refused; the clock is the machine's.

Standard library and deskbox's zone module only: it runs as the command a task names."""

from __future__ import annotations

import os
import sys
import zoneinfo
from datetime import datetime, timezone

from ..common import timezone as tz

_REFUSED = {"set-time": "set time", "set-ntp": "set ntp", "set-local-rtc": "set local RTC mode"}
_OPTIONS_WITH_VALUE = {"-H", "--host", "-M", "--machine", "-p", "--property"}


def _zone() -> tuple[str, datetime]:
    name = tz.zone_name() or "UTC"
    try:
        now = datetime.now(zoneinfo.ZoneInfo(name))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        name, now = "UTC", datetime.now(timezone.utc)
    return name, now


def _offset(now: datetime) -> str:
    return now.strftime("%z") or "+0000"


def status() -> str:
    name, now = _zone()
    utc = now.astimezone(timezone.utc)
    rows = [("Local time", now.strftime("%a %Y-%m-%d %H:%M:%S %Z")),
            ("Universal time", utc.strftime("%a %Y-%m-%d %H:%M:%S UTC")),
            ("RTC time", "n/a"),
            ("Time zone", f"{name} ({now.strftime('%Z')}, {_offset(now)})"),
            ("System clock synchronized", "yes"),
            ("NTP service", "n/a"),
            ("RTC in local TZ", "no")]
    return "\n".join(f"{label:>25}: {value}" for label, value in rows) + "\n"


def show() -> str:
    name, now = _zone()
    return (f"Timezone={name}\nLocalRTC=no\nCanNTP=no\nNTP=no\nNTPSynchronized=yes\n"
            f"TimeUSec={now.strftime('%a %Y-%m-%d %H:%M:%S %Z')}\nRTCTimeUSec=n/a\n")


def set_timezone(zone: str) -> int:
    if not tz.known(zone):
        print(f"Failed to set time zone: Invalid or not installed time zone '{zone}'", file=sys.stderr)
        return 1
    if os.geteuid() != 0:
        # Ubuntu's timedated asks polkit, which asks for an administrator: sudo here.
        print("Failed to set time zone: Access denied", file=sys.stderr)
        return 1
    link = tz.session_link() or tz.LOCALTIME
    try:
        tz.point(link, zone)
    except OSError as exc:
        print(f"Failed to set time zone: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    words: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-h", "--help"):
            print(__doc__)
            return 0
        elif arg == "--version":
            print("timedatectl (deskbox)")
            return 0
        elif arg in _OPTIONS_WITH_VALUE:
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
    verb, rest = (words[0], words[1:]) if words else ("status", [])
    if verb == "status":
        sys.stdout.write(status())
    elif verb == "show":
        sys.stdout.write(show())
    elif verb == "list-timezones":
        sys.stdout.write("".join(f"{z}\n" for z in sorted(zoneinfo.available_timezones())))
    elif verb == "set-timezone":
        if len(rest) != 1:
            print("Failed to set time zone: give one zone (timedatectl set-timezone Europe/Berlin)", file=sys.stderr)
            return 1
        return set_timezone(rest[0])
    elif verb in _REFUSED:
        print(f"Failed to {_REFUSED[verb]}: the session's clock is its machine's", file=sys.stderr)
        return 1
    else:
        print(f"Unknown command verb {verb}.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
