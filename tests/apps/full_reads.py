"""Answers each line on stdin with one JSON line comparing two ways of reading every
app's whole AT-SPI tree (``deskbox.atspi.full``): the reader this process keeps, which
takes what did not change from its last read (as OSWorld's server's worker does), and a
reader made for the occasion, which reads everything. The kept reader reads before and
after the new one; when those two reads agree, the desktop held still meanwhile and the
comparison counts. Run inside the session as its user (AT-SPI answers only the apps'
own uid), from the project's root.

    -> {"still": bool, "differences": [[where, what, kept reader's, new reader's], ...],
        "walk": the kept reader's first read's figures}"""

import asyncio
import json
import sys
from typing import Any

from deskbox.atspi.reader import AtspiReader

SHOWN = 12


def _compared(node: dict[str, Any], key: str) -> Any:
    # An action's key binding is asked once while its object lives, by both readers:
    # AT-SPI sends no event when it changes (LibreOffice's menus change some as the
    # document's mode does), so a reader that lives long may show an older one.
    if key == "actions":
        return {name: details[0] for name, details in (node.get("actions") or {}).items()}
    return node.get(key)


def differences(a: dict[str, Any], b: dict[str, Any], where: str, out: list[list[str]]) -> None:
    """Where two trees differ, node by node: the node (child indexes, role and name),
    the field, and the two values (actions without their key bindings)."""
    here = f"{where}/{a.get('role')}:{a.get('name', '')[:40]}"
    for key in sorted((a.keys() | b.keys()) - {"children", "pid"}):
        if _compared(a, key) != _compared(b, key):
            out.append([here, key, repr(a.get(key)), repr(b.get(key))])
    if len(a["children"]) != len(b["children"]):
        out.append([here, "children", str(len(a["children"])), str(len(b["children"]))])
        return
    for i, (x, y) in enumerate(zip(a["children"], b["children"])):
        differences(x, y, f"{where}/{i}", out)


async def main() -> None:
    kept = AtspiReader()
    await kept.open()
    try:
        for _ in sys.stdin:
            first = await kept.full_tree()
            new = AtspiReader()
            await new.open()
            try:
                fresh = await new.full_tree()
            finally:
                await new.close()
            second = await kept.full_tree()
            found: list[list[str]] = []
            if len(first["apps"]) != len(fresh["apps"]):
                found.append(["/", "apps", str(len(first["apps"])), str(len(fresh["apps"]))])
            for a, b in zip(first["apps"], fresh["apps"]):
                differences(a, b, "", found)
            print(json.dumps({"still": first["apps"] == second["apps"], "differences": found[:SHOWN],
                              "count": len(found), "walk": first["walk"]}), flush=True)
    finally:
        await kept.close()


if __name__ == "__main__":
    asyncio.run(main())
