"""Prints, as one JSON line, every app's whole AT-SPI tree read twice at once-ish: by
the scene's reader (``deskbox.atspi.full``) and by the libatspi walk OSWorld's server
used before (``bench.atspi_libatspi``). Run inside the session as its user (AT-SPI
answers only the apps' own uid), from the project's root."""

import asyncio
import json
import subprocess
import sys

from deskbox.atspi.reader import AtspiReader


async def main() -> None:
    reader = AtspiReader()
    await reader.open()
    try:
        await reader.full_tree()  # (the first read fills the caches a later one relies on)
        ours = await reader.full_tree()
    finally:
        await reader.close()
    walk = subprocess.run([sys.executable, "-m", "bench.atspi_libatspi"], capture_output=True, text=True, check=True)
    json.dump({"reader": ours, "libatspi": json.loads(walk.stdout)}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
