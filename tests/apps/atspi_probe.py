"""Drives an ``AtspiReader`` for the tests from inside the session: the scene service's
own worker (``deskbox.atspi.worker``), started by the tests as the session user
because AT-SPI answers only readers running as the apps' own user."""

import sys

from deskbox.atspi.worker import serve

if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
