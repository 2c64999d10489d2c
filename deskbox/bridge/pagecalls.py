"""The bridge's calls into one page's session: the scripts it runs there (deskbox/bridge/
page/: the change watcher, the metrics, the take) and what their answers mean, the
DOMSnapshot capture, and CDP failures translated where they enter (``TabGone`` when the
page does not answer, None where a failure is expected). It knows one session at a time
and must not know tabs, targets, kept trees or how a layout is patched or served.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from importlib import resources

from ..cdp import CDPClosed, CDPConnection, CDPError
from .layout import SNAPSHOT_STYLES

__all__ = ["BINDING", "WATCH_SOURCE", "METRICS_EXPRESSION", "MEASURE_MAX_ELEMENTS", "MEASURE_MAX_MOVED", "TabGone",
           "Measured", "capture_snapshot", "take", "safe", "safe_json", "evaluate_json"]

BINDING = "__deskboxChanged"


def _page_script(name: str) -> str:
    """One of the scripts the bridge runs in pages (deskbox/bridge/page/, package data)."""
    return resources.files(__package__).joinpath("page", name).read_text(encoding="utf-8")


# Installed in every page and frame: a counter that moves when the DOM, the scroll
# position, the viewport, focus or a form field changes, and the elements touched since
# the bridge last asked: "subtree" (the element and everything in it may differ) and
# "node" (the element alone: focus moved, a radio button of its group was checked).
WATCH_SOURCE = _page_script("watch.js").replace("__BINDING__", BINDING)

# "changes" covers this document and every same-origin frame in it (their counters and
# identities): a change in any of them makes a new key.
METRICS_EXPRESSION = _page_script("metrics.js")

# The page keeps the boxes of at most this many elements; a refresh takes boxes from the
# page when at most this many nodes moved (each is one DOM.describeNode), from a new
# DOMSnapshot otherwise.
MEASURE_MAX_ELEMENTS = 50000
MEASURE_MAX_MOVED = 300

# What changed since the last call, in this document and every same-origin frame in it:
# [windows, overflow, 'S', subtree elements..., 'C', elements whose children changed...,
# 'N', single elements...], or 'full' when the document element or body changed as a
# whole (an attribute: a class on <body> can restyle everything). "windows" names the
# documents visited (a frame that navigated or cannot be reached shows there). Elements whose accessible name comes
# from a touched element (labels, aria-labelledby and its kind) are listed as single
# elements. With reset, only clears, and returns the windows.
_TAKE_FUNCTION = (_page_script("take.js").replace("__MAX_TRACKED__", str(MEASURE_MAX_ELEMENTS))
                  .replace("__MAX_MOVED__", str(MEASURE_MAX_MOVED)))


class TabGone(Exception):
    pass


@dataclass
class Measured:
    """Boxes the page measured (CSS px, document-relative) of the nodes that moved or came
    since it last measured, by backend id, and its scroll offset then."""

    scroll: tuple[float, float]
    boxes: dict[int, tuple[float, float, float, float]]


async def capture_snapshot(conn: CDPConnection, session: str) -> dict:
    return await conn.send("DOMSnapshot.captureSnapshot", {"computedStyles": SNAPSHOT_STYLES,
                                                            "includeDOMRects": False}, session=session, timeout=60)


async def take(conn: CDPConnection, session: str, reset: bool):
    """What the page listed as changed since last asked: (windows, overflow, subtree,
    parent and single backend ids, boxes it measured), "full", or with ``reset`` the
    page's windows."""
    group = "deskbox-take"
    try:
        reply = await conn.send("Runtime.evaluate", {
            "expression": f"({_TAKE_FUNCTION})({'true' if reset else 'false'}, {json.dumps(WATCH_SOURCE)})",
            "objectGroup": group,
            "returnByValue": reset}, session=session)
        result = reply.get("result", {})
        if reset or result.get("type") != "object":
            return result.get("value")
        props = await conn.send("Runtime.getProperties", {"objectId": result["objectId"], "ownProperties": True},
                                session=session)
        items = sorted(((int(p["name"]), p.get("value", {})) for p in props.get("result", []) if p["name"].isdigit()))
        values = [v for _, v in items]
        described = await asyncio.gather(*[
            safe(conn.send("DOM.describeNode", {"objectId": v["objectId"]}, session=session))
            for v in values if v.get("subtype") == "node"
        ])
    except (CDPError, CDPClosed):
        return None
    finally:
        asyncio.ensure_future(_safe_release(conn, session, group))
    backends = [(d or {}).get("node", {}).get("backendNodeId") for d in described]
    return _read_changes(values, backends)


def _number(value: dict) -> float:
    return float(value.get("value", 0.0))  # -0 comes as an unserializableValue


def _read_changes(values: list[dict], backends: list[int | None]):
    """The take function's array as Runtime.getProperties lists it, with the backend id
    of each node in it (in order) -> (windows, overflow, subtree, parents, single,
    Measured or None)."""
    nodes = iter(backends)
    windows, overflow = values[0].get("value"), values[1].get("value")
    subtree: list[int] = []
    parents: list[int] = []
    single: list[int] = []
    target: list[int] | None = None
    measured: Measured | None = None
    rest = iter(values[2:])
    for v in rest:
        if v.get("type") == "string" and v.get("value") == "G":
            measured = Measured((_number(next(rest)), _number(next(rest))), {})
            for node in rest:
                box = tuple(_number(next(rest)) for _ in range(4))
                backend = next(nodes) if node.get("subtype") == "node" else None
                if backend is not None:
                    measured.boxes[backend] = box
            break
        if v.get("type") == "string":
            target = {"S": subtree, "C": parents, "N": single}.get(v.get("value"))
        elif v.get("subtype") == "node":
            backend = next(nodes)
            if backend is not None and target is not None:
                target.append(backend)
    return windows, bool(overflow), subtree, parents, single, measured


async def _safe_release(conn: CDPConnection, session: str, group: str) -> None:
    try:
        await conn.send("Runtime.releaseObjectGroup", {"objectGroup": group}, session=session)
    except (CDPError, CDPClosed):
        pass


async def safe(awaitable):
    try:
        return await awaitable
    except CDPError:
        return None


async def safe_json(conn: CDPConnection, session: str, expression: str) -> dict | None:
    try:
        return await evaluate_json(conn, session, expression)
    except (TabGone, CDPClosed):
        return None


async def evaluate_json(conn: CDPConnection, session: str, expression: str) -> dict:
    try:
        reply = await conn.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)
    except CDPError as exc:
        raise TabGone(str(exc)) from exc
    value = reply.get("result", {}).get("value")
    if not isinstance(value, str):
        raise TabGone(f"the page did not answer: {reply.get('exceptionDetails', {}).get('text', 'no value')}")
    return json.loads(value)
