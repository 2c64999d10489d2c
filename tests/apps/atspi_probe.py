"""Drives an ``AtspiReader`` for the tests from inside the session.

AT-SPI answers only readers running as the apps' own user, so the tests (often root)
start this as the session user and talk to it in JSON lines on stdin/stdout:

    {"op": "snapshot", "prune_documents": true, "pids": null}
        -> {"nodes": [NativeNode fields ...], "walk": {...}}
    {"op": "act", "key": "...", "action": "click"}
        -> {"ok": true} | {"error": "NoSuchAction", "actions": [...]}

One reader serves every request, in this process's main thread, as in the scene service.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from services.scene.atspi import AtspiReader, NoSuchAction


def main() -> None:
    reader = AtspiReader()
    try:
        for line in sys.stdin:
            request = json.loads(line)
            if request["op"] == "snapshot":
                nodes = reader.snapshot(prune_documents=request.get("prune_documents", True),
                                        pids=request.get("pids"))
                reply = {"nodes": [dataclasses.asdict(n) for n in nodes], "walk": reader.last_walk}
            elif request["op"] == "act":
                try:
                    reply = {"ok": reader.act(request["key"], request["action"])}
                except NoSuchAction as exc:
                    reply = {"error": "NoSuchAction", "actions": list(exc.actions)}
            else:
                reply = {"error": f"unknown op {request['op']!r}"}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    finally:
        reader.close()


if __name__ == "__main__":
    main()
