"""The AT-SPI reader in a process of its own, served in JSON lines on stdin/stdout:

    {"op": "snapshot", "prune_documents": true, "pids": null}
        -> {"nodes": [NativeNode fields ...], "walk": {...}}
    {"op": "act", "key": "...", "action": "click"}
        -> {"ok": true} | {"error": "NoSuchAction", "actions": [...]}

Why a process: the walk is thousands of small blocking D-Bus calls, and in the scene
service's process it competed for the GIL with the event loop's own work (joining a big
page), which made it several times slower; a stuck app cannot hold the service either,
since the worker is simply killed. Run ``python -m services.scene.atspi_worker`` as the
session user (AT-SPI answers only the apps' own uid)."""

from __future__ import annotations

import dataclasses
import json
import sys

from .atspi import AtspiReader, NoSuchAction


def serve(lines, out) -> None:
    reader = AtspiReader()
    try:
        for line in lines:
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
            out.write(json.dumps(reply) + "\n")
            out.flush()
    finally:
        reader.close()


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
