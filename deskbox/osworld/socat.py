"""``socat`` inside an OSWorld-mode session: the system's socat, its listening addresses
given ``reuseaddr``.

OSWorld's Chrome tasks publish the browser's DevTools with ``socat tcp-listen:9222,fork
tcp:localhost:1337``. On OSWorld's VM each task starts from a snapshot, so that port is
always free. A deskbox session serves task after task, and a reset ends the previous
task's socat: every connection it relayed that the browser closed first (each HTTP
request to DevTools, ``/json/version`` among them) left a socket in TIME_WAIT on port
9222 for a minute, and a listener without SO_REUSEADDR cannot bind the port while one
is there (Linux lets a new listener share the port with them only when both set it).
The next Chrome task's socat then exited at once, and its ``chrome_open_tabs`` step
failed to connect. socat 1.8 sets ``reuseaddr`` on listeners by default; Debian 12
ships 1.7.4, so this wrapper adds it.

``python -m deskbox.osworld.socat REAL_SOCAT ARGS`` (the session's ``bin/socat``) runs
``REAL_SOCAT`` with ``ARGS``, rewritten by :func:`with_reuseaddr`."""

from __future__ import annotations

import os
import sys

__all__ = ["with_reuseaddr", "main"]

# socat's address types that listen for TCP (and their short forms).
_LISTENING = frozenset({"tcp-listen", "tcp-l", "tcp4-listen", "tcp4-l", "tcp6-listen", "tcp6-l"})


def with_reuseaddr(argv: list[str]) -> list[str]:
    """socat's arguments with ``,reuseaddr`` added to each TCP listening address that
    does not set it; options (``-d``, ``-v`` ...) and other addresses as given."""
    out = []
    for arg in argv:
        kind, sep, rest = arg.partition(":")
        if sep and kind.lower() in _LISTENING:
            options = [o.split("=", 1)[0].lower() for o in rest.split(",")[1:]]
            if not {"reuseaddr", "so-reuseaddr"} & set(options):
                arg += ",reuseaddr"
        out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m deskbox.osworld.socat REAL_SOCAT [ARGS ...]", file=sys.stderr)
        return 2
    real, rest = args[0], args[1:]
    os.execv(real, [real, *with_reuseaddr(rest)])
    return 0  # (not reached)


if __name__ == "__main__":
    sys.exit(main())
