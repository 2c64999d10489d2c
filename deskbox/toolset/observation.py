"""What an observation holds, and what changed between two.

An observation is a plain document made from a Scene's JSON::

    {"focused_window": id | null, "focused_element": id | null,
     "windows":  {window id: {app, title, bounds, display_id, focused}},
     "elements": {element id: the element's Scene JSON},
     "text":     {OCR text id: its Scene JSON}}

keyed by id, so that a change is a path into it. ``diff`` says what changed in two forms:
RFC 6902 JSON Patch operations (applied to the older document they give the newer) and
a compact form for a prompt (elements added, removed, and changed fields with both
sides). Pure logic."""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import orjson

__all__ = ["document", "diff", "tree_hash", "apply_patch", "DiffFormat"]

DiffFormat = Literal["json-patch", "compact"]
_MAPS = ("windows", "elements", "text")
_SCALARS = ("focused_window", "focused_element")


def document(scene_json: dict[str, Any]) -> dict[str, Any]:
    windows = {}
    for app in scene_json.get("apps") or ():
        for w in app.get("windows") or ():
            windows[w["id"]] = {"app": app.get("name"), "title": w.get("title"), "bounds": w.get("bounds"),
                                "display_id": w.get("display_id"), "focused": bool(w.get("focused"))}
    elements = {e["id"]: e for e in scene_json.get("ax") or ()}
    focused = next((e["id"] for e in elements.values() if "focused" in (e.get("states") or ())), None)
    focused_window = (scene_json.get("focused_window") or {}).get("id")
    return {"focused_window": focused_window, "focused_element": focused, "windows": windows, "elements": elements,
            "text": {t["id"]: t for t in scene_json.get("ocr") or ()}}


def tree_hash(doc: dict[str, Any]) -> str:
    """A short hash of what the document holds (the same state, the same hash)."""
    return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def _pointer(*parts: str) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def diff(old: dict[str, Any], new: dict[str, Any], form: DiffFormat = "compact") -> Any:
    """What changed from ``old`` to ``new``: a JSON Patch (a list of operations) or the
    compact form (a dict, every key present)."""
    if form == "json-patch":
        return _patch(old, new)
    return _compact(old, new)


def _patch(old: dict, new: dict) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    for key in _SCALARS:
        if old.get(key) != new.get(key):
            ops.append({"op": "replace", "path": _pointer(key), "value": new.get(key)})
    for section in _MAPS:
        a, b = old.get(section) or {}, new.get(section) or {}
        for item in a:
            if item not in b:
                ops.append({"op": "remove", "path": _pointer(section, item)})
        for item, value in b.items():
            before = a.get(item)
            if before is None:
                ops.append({"op": "add", "path": _pointer(section, item), "value": value})
                continue
            for f in before:
                if f not in value:
                    ops.append({"op": "remove", "path": _pointer(section, item, f)})
            for f, v in value.items():
                if f not in before:
                    ops.append({"op": "add", "path": _pointer(section, item, f), "value": v})
                elif before[f] != v:
                    ops.append({"op": "replace", "path": _pointer(section, item, f), "value": v})
    return ops


def _brief(e: dict) -> dict[str, Any]:
    return {"id": e.get("id"), "role": e.get("role"), "name": e.get("name")}


def _compact(old: dict, new: dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for section, label in (("elements", ""), ("windows", "windows_"), ("text", "text_")):
        a, b = old.get(section) or {}, new.get(section) or {}
        added = [({"id": k, **v} if section == "windows" else v) for k, v in b.items() if k not in a]
        removed = [({"id": k, "title": v.get("title")} if section == "windows" else _brief(v))
                   for k, v in a.items() if k not in b]
        changed = []
        for k, v in b.items():
            before = a.get(k)
            if before is None or before == v:
                continue
            fields = {f: {"from": before.get(f), "to": v.get(f)} for f in sorted({*before, *v})
                      if before.get(f) != v.get(f)}
            entry = {"id": k, "title": v.get("title")} if section == "windows" else _brief(v)
            changed.append({**entry, "fields": fields})
        out[label + "added"], out[label + "removed"], out[label + "changed"] = added, removed, changed
    out["focus"] = ({"from": old.get("focused_element"), "to": new.get("focused_element")}
                    if old.get("focused_element") != new.get("focused_element") else None)
    out["focused_window"] = ({"from": old.get("focused_window"), "to": new.get("focused_window")}
                             if old.get("focused_window") != new.get("focused_window") else None)
    return out


def apply_patch(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """``ops`` (as ``diff`` makes them: add, remove, replace on object members) applied to
    a copy of ``doc``; what a client does with a json-patch answer."""
    out = orjson.loads(orjson.dumps(doc))
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        target = out
        for p in parts[:-1]:
            target = target[p]
        if op["op"] == "remove":
            del target[parts[-1]]
        elif op["op"] in ("add", "replace"):
            target[parts[-1]] = op["value"]
        else:
            raise ValueError(f"unsupported op {op['op']!r}")
    return out
