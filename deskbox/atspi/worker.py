"""The AT-SPI reader in a process of its own, served in JSON lines on stdin/stdout:

    {"op": "snapshot", "prune_documents": true, "pids": null, "sheet_bands": {"<sheet key>": [[top, height], ...]},
     "still": [pid, ...]}
        -> {"nodes": [NativeNode fields ...], "walk": {...}}
    {"op": "act", "key": "...", "action": "click"}
        -> {"ok": true} | {"error": "NoSuchAction", "actions": [...]}
    {"op": "tree", "app_timeout": 10}
        -> {"apps": [full nodes ...], "nodes": N, "left_out": [...], "walk": {...}}  (deskbox.atspi.full)

Why a process: decoding a snapshot's D-Bus replies is CPU work that would compete with
the scene service's event loop for the GIL (joining a big page), and a worker that is
stuck is simply killed. Run ``python -m deskbox.atspi.worker`` as the session
user (AT-SPI answers only the apps' own uid)."""

from __future__ import annotations

import asyncio
import json
import sys

from ..common.memory import tune_gc
from .full import FULL_APP_TIMEOUT_S
from .reader import AtspiReader
from .tree import AtspiError, NoSuchAction


async def _handle(reader: AtspiReader, request: dict) -> dict:
    if request["op"] == "snapshot":
        nodes = await reader.snapshot(prune_documents=request.get("prune_documents", True), pids=request.get("pids"),
                                      sheet_bands={k: [tuple(b) for b in v]
                                                   for k, v in (request.get("sheet_bands") or {}).items()},
                                      still=request.get("still") or ())
        # Fields as they are (tuples go out as lists): dataclasses.asdict copies every
        # tuple deeply, 17-36 ms for a sheet's 730 nodes against 2-5 ms (measured).
        return {"nodes": [dict(n.__dict__) for n in nodes], "walk": reader.last_walk}
    if request["op"] == "tree":
        try:
            return await reader.full_tree(app_timeout=float(request.get("app_timeout", FULL_APP_TIMEOUT_S)))
        except AtspiError as exc:
            return {"error": str(exc)}
    if request["op"] == "act":
        try:
            return {"ok": await reader.act(request["key"], request["action"])}
        except NoSuchAction as exc:
            return {"error": "NoSuchAction", "actions": list(exc.actions)}
    return {"error": f"unknown op {request['op']!r}"}


def serve(lines, out) -> None:
    """Answer each request line in turn; one event loop (and one bus connection) for
    the worker's life. Between requests nothing runs: the AT-SPI events the reader
    listens to (``events``) wait on its connection and are read at the next request."""
    tune_gc()
    loop = asyncio.new_event_loop()
    reader = AtspiReader()
    try:
        loop.run_until_complete(reader.open())
        for line in lines:
            reply = loop.run_until_complete(_handle(reader, json.loads(line)))
            out.write(json.dumps(reply) + "\n")
            out.flush()
    finally:
        loop.run_until_complete(reader.close())
        loop.close()


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
