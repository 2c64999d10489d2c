"""``python -m deskbox.atspi``: what AT-SPI sees in this session."""

from __future__ import annotations

import asyncio

from .reader import AtspiReader
from .tree import NativeNode


def main(argv: list[str] | None = None) -> None:
    """``python -m deskbox.atspi``: print what AT-SPI sees in this session (as
    JSON lines, one per node), the walk's figures last. Run it as the session user
    with the session's DBUS_SESSION_BUS_ADDRESS."""
    import argparse
    import json
    import sys

    parser = argparse.ArgumentParser(prog="python -m deskbox.atspi", description=main.__doc__)
    parser.add_argument("--documents", action="store_true", help="also walk Chromium's page content")
    parser.add_argument("--repeat", type=int, default=1, help="walk this many times (timings)")
    args = parser.parse_args(argv)

    async def run() -> None:
        reader = AtspiReader()
        await reader.open()
        try:
            nodes: list[NativeNode] = []
            for _ in range(args.repeat):
                nodes = await reader.snapshot(prune_documents=not args.documents)
                sys.stderr.write(json.dumps(reader.last_walk) + "\n")
            for node in nodes:
                sys.stdout.write(json.dumps(dict(node.__dict__), ensure_ascii=False) + "\n")
        finally:
            await reader.close()

    asyncio.run(run())


main()
