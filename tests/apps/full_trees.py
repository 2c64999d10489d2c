"""Prints, as one JSON line, every app's whole AT-SPI tree read by the scene's reader
(``deskbox.atspi.full``), then by the libatspi walk OSWorld's server used before
(``bench.atspi_libatspi``), then by the reader again: when the reader's two reads agree,
the desktop held still while the walk read it, and the two may be compared. Run inside
the session as its user (AT-SPI answers only the apps' own uid), from the project's
root."""

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
        before = await reader.full_tree()
        walk = subprocess.run([sys.executable, "-m", "bench.atspi_libatspi"], capture_output=True, text=True,
                              check=True)
        after = await reader.full_tree()
    finally:
        await reader.close()
    json.dump({"reader": before, "libatspi": json.loads(walk.stdout), "reader_after": after}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
