"""A window or display as an ASCII sketch (labelled boxes on a character grid, with a
legend for what is too small to label), and as prose (app, window, focused element, the
interactive elements in reading order). For a model with no eyes, or a person reading a
log. Pure logic over a Scene's JSON."""

from __future__ import annotations

from typing import Any

__all__ = ["sketch", "describe", "reading_order"]

# Containers worth a box even without an action of their own.
_CONTAINERS = frozenset({"dialog", "toolbar", "menubar", "menu", "tablist", "list", "listbox", "tree", "table",
                         "region", "form", "navigation", "status", "alert", "window", "group", "tabpanel"})
_ROW_PX = 16  # elements whose tops are this close read as one line


def _area(scene: dict[str, Any], window: str | None, display: int | None) -> tuple[list[int], int, str]:
    """(x, y, w, h) of what is sketched, its display, and what it is called."""
    if window is not None:
        for app in scene.get("apps") or ():
            for w in app.get("windows") or ():
                if w["id"] == window and w.get("bounds"):
                    return list(w["bounds"]), w.get("display_id") or 0, f"{app.get('name')} window {w.get('title')!r}"
        raise ValueError(f"window {window!r} has no box")
    d = next((d for d in scene.get("displays") or () if display is None or d["id"] == display), None)
    if d is None:
        raise ValueError(f"no display {display}")
    return [0, 0, *d["size"]], d["id"], f"display {d['id']} ({d['size'][0]}x{d['size'][1]})"


def _shown(e: dict) -> bool:
    return e.get("bbox") is not None and e.get("visibility") in ("visible", "partial")


def reading_order(elements: list[dict]) -> list[dict]:
    """Top to bottom, then left to right, elements on one line together."""
    return sorted(elements, key=lambda e: (e["bbox"][1] // _ROW_PX, e["bbox"][0]))


def sketch(scene: dict[str, Any], *, window: str | None = None, display: int | None = None, cols: int = 120,
           rows: int | None = None) -> dict[str, Any]:
    (ax, ay, aw, ah), display_id, title = _area(scene, window, display)
    rows = rows or max(10, min(100, round(cols * ah / aw / 2)))  # (a character is about twice as tall as wide)
    grid = [[" "] * cols for _ in range(rows)]

    def cell(x: float, y: float) -> tuple[int, int]:
        return (min(cols - 1, max(0, int((x - ax) * cols / aw))), min(rows - 1, max(0, int((y - ay) * rows / ah))))

    def put(c: int, r: int, text: str, limit: int) -> None:
        for i, ch in enumerate(text[:max(0, limit)]):
            if 0 <= c + i < cols:
                grid[r][c + i] = ch

    def frame(c0: int, r0: int, c1: int, r1: int) -> None:
        for c in range(c0, c1 + 1):
            grid[r0][c] = grid[r1][c] = "-"
        for r in range(r0, r1 + 1):
            grid[r][c0] = grid[r][c1] = "|"
        for c, r in ((c0, r0), (c1, r0), (c0, r1), (c1, r1)):
            grid[r][c] = "+"

    frame(0, 0, cols - 1, rows - 1)
    chosen = [e for e in scene.get("ax") or () if e.get("display_id") == display_id and _shown(e)
              and (window is None or e.get("window_id") == window)
              and (e.get("actions") or e.get("role") in _CONTAINERS and e.get("name"))]
    inside = []
    for e in chosen:
        x, y, w, h = e["bbox"]
        if x + w <= ax or y + h <= ay or x >= ax + aw or y >= ay + ah:
            continue
        inside.append(e)
    legend: list[dict[str, Any]] = []
    taken = [[False] * cols for _ in range(rows)]  # cells holding a label's letters
    labels: list[tuple[list[int], str, int, int]] = []  # (rows to try, label, from column, room)
    # Frames large first, so that what sits inside is drawn over them; labels small
    # first, each on a row of its box where no other label is (its top edge, else its
    # bottom edge, else inside).
    for e in sorted(inside, key=lambda e: -(e["bbox"][2] * e["bbox"][3])):
        x, y, w, h = e["bbox"]
        c0, r0 = cell(x, y)
        c1, r1 = cell(x + w - 1, y + h - 1)
        label = f"{e['id']} {e['role']} {e.get('name') or ''}".strip()
        boxed = c1 - c0 >= 4 and r1 - r0 >= 1
        if boxed:
            frame(c0, r0, c1, r1)
        if boxed and len(label) <= c1 - c0 - 1:
            labels.append(([r0, r1, *range(r0 + 1, r1)], label, c0 + 1, c1 - c0 - 1))
        elif not boxed and len(label) + 2 <= c1 - c0 + 1:
            labels.append(([r0], f"[{label}]", c0, c1 - c0 + 1))
        else:  # (too small to name: a mark, and its line in the legend)
            mark = f"[{len(legend) + 1}]"
            labels.append(([r0, r1] if boxed else [r0], mark, c0 + 1 if boxed else c0, len(mark)))
            legend.append({"mark": mark, "id": e["id"], "role": e["role"], "name": e.get("name"),
                           "bbox": e["bbox"]})
    for tries, label, c, room in reversed(labels):
        text = label[:max(0, room)]
        for r in tries:
            span = range(c, min(cols, c + len(text)))
            if not any(taken[r][i] for i in span):
                put(c, r, text, len(text))
                for i in span:
                    taken[r][i] = True
                break
    text = "\n".join([title[:cols], *("".join(row) for row in grid)])
    if legend:
        text += "\n" + "\n".join(f"{m['mark']} {m['id']} {m['role']} {m['name'] or ''}".rstrip() for m in legend)
    return {"sketch": text, "legend": legend, "cols": cols, "rows": rows, "area": [ax, ay, aw, ah],
            "display_id": display_id, "elements": len(inside)}


def _said(e: dict) -> str:
    name = (e.get("name") or "").strip()
    value = e.get("value")
    out = f"{e['role']} {name!r}" if name else e["role"]
    if value not in (None, "") and value != name:
        out += f" = {str(value)[:80]!r}"
    states = [s for s in e.get("states") or () if s in ("checked", "pressed", "selected", "expanded", "disabled")]
    if states:
        out += f" ({', '.join(states)})"
    return f"{out} [{e['id']}]"


def describe(scene: dict[str, Any], *, window: str | None = None, limit: int = 60) -> str:
    """Prose: which window is in front (or the one asked for), what has the focus, and
    what can be acted on, in reading order."""
    windows = {w["id"]: (app.get("name"), w) for app in scene.get("apps") or () for w in app.get("windows") or ()}
    wid = window or (scene.get("focused_window") or {}).get("id")
    if wid is None or wid not in windows:
        if window is not None:
            raise ValueError(f"no window {window!r}")
        return (f"No window has the focus. {len(windows)} window(s) open: "
                + "; ".join(f"{a} {w.get('title')!r} [{i}]" for i, (a, w) in windows.items()) + ".")
    app, w = windows[wid]
    x, y, width, height = w.get("bounds") or (0, 0, 0, 0)
    lines = [f"{app} window {w.get('title')!r} [{wid}]{' (focused)' if w.get('focused') else ''} "
             f"on display {w.get('display_id')}, at {x},{y}, {width}x{height} px."]
    mine = [e for e in scene.get("ax") or () if e.get("window_id") == wid]
    focused = next((e for e in mine if "focused" in (e.get("states") or ())), None)
    lines.append(f"Focused: {_said(focused)}." if focused else "Nothing in it reports the focus.")
    interactive = reading_order([e for e in mine if e.get("actions") and _shown(e)])
    if interactive:
        shown = interactive[:limit]
        more = f" and {len(interactive) - limit} more" if len(interactive) > limit else ""
        lines.append(f"{len(interactive)} interactive element(s), in reading order: "
                     + "; ".join(_said(e) for e in shown) + more + ".")
    else:
        lines.append("It shows no interactive element.")
    others = [f"{a} {o.get('title')!r} [{i}]" for i, (a, o) in windows.items() if i != wid]
    if others:
        lines.append("Other windows: " + "; ".join(others) + ".")
    return "\n".join(lines)
