"""OS Screen Observer's shapes made from deskbox's: windows by index, element trees with
``{x, y, width, height}`` bounds in desktop-wide (layout) pixels, and its error codes.
Pure logic over Scene JSON; every coordinate goes through ``deskbox.geometry``."""

from __future__ import annotations

import re
from typing import Any

from ..geometry import Display, Rect, device_rect_to_layout, display_at_layout_point, layout_to_device

__all__ = ["displays_of", "bounds", "windows", "structure", "to_display", "oso_code", "LATER"]

# A scenario is loaded when a session starts (deskbox up --mock SCENARIO), not over the
# API: this answers 501.
LATER = (("POST", "/api/scenario/load"),)

# deskbox error codes -> OS Screen Observer's.
_CODES = {
    "unknown_element": "ElementNotFound", "stale_element": "ElementNotFound", "element_not_found": "ElementNotFound",
    "no_such_option": "ElementNotFound", "occluded": "ElementOccluded", "not_visible": "ElementOccluded",
    "disabled": "ElementDisabled", "unknown_window": "WindowGone", "window_gone": "WindowGone",
    "token_expired": "SnapshotExpired", "snapshot_expired": "SnapshotExpired", "unknown_token": "SnapshotExpired",
    "unknown_snapshot": "SnapshotExpired", "predicate_unsupported": "PredicateUnsupported",
    "unsupported_action": "PatternUnsupported", "no_default_action": "PatternUnsupported",
    "unauthorized": "PermissionDenied", "not_implemented": "PlatformUnsupported",
    "deadline_exceeded": "Timeout", "client_timeout": "Timeout", "timeout": "Timeout",
    "action_denied": "PermissionDenied", "budget_exceeded": "BudgetExceeded",
    "confirmation_required": "ConfirmationRequired", "confirmation_invalid": "ConfirmationInvalid",
    "unknown_trace": "BadRequest", "unknown_replay": "BadRequest",
}


def oso_code(code: str, status: int) -> str:
    if code in _CODES:
        return _CODES[code]
    if status == 501:
        return "PlatformUnsupported"
    return "BadRequest" if 400 <= status < 500 else "Internal"


def displays_of(scene: dict[str, Any]) -> list[Display]:
    return [Display(d["id"], d.get("name") or "", Rect(*d["layout_bounds"]), float(d.get("scale") or 1.0),
                    tuple(d["size"]), bool(d.get("primary"))) for d in scene.get("displays") or ()]


def bounds(displays: dict[int, Display], display_id: int | None, box: list[int] | None) -> dict[str, int] | None:
    """A display-local device-pixel box as desktop-wide ``{x, y, width, height}``."""
    if box is None or display_id not in displays:
        return None
    r = device_rect_to_layout(displays[display_id], Rect(*box))
    return {"x": round(r.x), "y": round(r.y), "width": round(r.w), "height": round(r.h)}


def windows(scene: dict[str, Any]) -> list[dict[str, Any]]:
    """The windows in OS Screen Observer's order: focused first, then by title; ``index``
    is the position here (it shifts when windows come and go), ``window_uid`` is
    deskbox's window id (it does not)."""
    displays = {d.id: d for d in displays_of(scene)}
    found = []
    for app in scene.get("apps") or ():
        for w in app.get("windows") or ():
            d = displays.get(w.get("display_id"))
            device = w.get("bounds")
            found.append({
                "handle": w["id"], "window_uid": w["id"], "title": w.get("title") or "", "process": app.get("name"),
                "pid": w.get("pid", app.get("pid")), "focused": bool(w.get("focused")),
                "bounds": bounds(displays, w.get("display_id"), device), "logical_bounds": bounds(
                    displays, w.get("display_id"), device),
                "physical_bounds": ({"x": device[0], "y": device[1], "width": device[2], "height": device[3]}
                                    if device else None),
                "monitor_index": w.get("display_id"), "scale_factor": d.scale if d else None})
    found.sort(key=lambda w: (not w["focused"], w["title"].lower()))
    for i, w in enumerate(found):
        w["index"] = i
    return found


def structure(scene: dict[str, Any], window: dict[str, Any], *, roles: set[str] | None = None,
              exclude_roles: set[str] | None = None, name_regex: str | None = None, visible_only: bool = False,
              max_text_len: int | None = None, prune_empty: bool = False,
              max_nodes: int | None = None) -> tuple[dict[str, Any], int, int, bool]:
    """The window's elements as one nested tree under the window: (tree, elements in it,
    nodes in it, truncated). Filters keep a node that matches or holds one that does."""
    displays = {d.id: d for d in displays_of(scene)}
    pattern = re.compile(name_regex) if name_regex else None
    mine = [e for e in scene.get("ax") or () if e.get("window_id") == window["window_uid"]]
    kids: dict[Any, list[dict]] = {}
    ids = {e["id"] for e in mine}
    for e in mine:
        kids.setdefault(e.get("parent") if e.get("parent") in ids else None, []).append(e)

    def text(value: Any) -> Any:
        if isinstance(value, str) and max_text_len is not None and len(value) > max_text_len:
            return value[:max_text_len] + "..."
        return value

    def wanted(e: dict) -> bool:
        role = (e.get("role") or "").lower()
        if roles and role not in roles or exclude_roles and role in exclude_roles:
            return False
        if pattern is not None and not pattern.search(e.get("name") or ""):
            return False
        return not visible_only or e.get("visibility") in ("visible", "partial")

    count = [0]
    truncated = [False]

    def node(e: dict) -> dict[str, Any] | None:
        children = [c for c in (node(k) for k in kids.get(e["id"], ())) if c is not None]
        keep = wanted(e) and not (prune_empty and not (e.get("name") or e.get("value")) and not children)
        if not keep and not children:
            return None
        if max_nodes is not None and count[0] >= max_nodes:
            truncated[0] = True
            return None
        count[0] += 1
        states = e.get("states") or ()
        return {"id": e["id"], "name": text(e.get("name")), "role": e.get("role"), "value": text(e.get("value")),
                "bounds": bounds(displays, e.get("display_id"), e.get("bbox")), "enabled": "disabled" not in states,
                "focused": "focused" in states, "keyboard_shortcut": None, "description": None,
                "states": list(states), "actions": e.get("actions"), "source": e.get("source"),
                "children": children}

    top = [c for c in (node(e) for e in kids.get(None, ())) if c is not None]
    tree = {"id": window["window_uid"], "name": window["title"], "role": "window", "value": None,
            "bounds": window["bounds"], "enabled": True, "focused": window["focused"], "keyboard_shortcut": None,
            "description": None, "children": top}
    return tree, count[0], count[0] + 1, truncated[0]


def to_display(displays: list[Display], x: float, y: float) -> tuple[int, float, float] | None:
    """A desktop-wide point as (display, display-local device x, y); None off every display."""
    d = display_at_layout_point(displays, x, y)
    if d is None:
        return None
    dx, dy = layout_to_device(d, x, y)
    return d.id, dx, dy
