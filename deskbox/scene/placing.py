"""Where elements and changes belong: the window a browser tab is shown in, the window
each native app's nodes were read from, and the processes whose windows a changed region
touches; the pages' elements placed in their windows. Pure functions over the window tree;
no source is read here."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..geometry import (
    GTK_MENU_INSET,
    Rect,
    band_of,
    device_span_to_layout,
    native_to_display,
    offset_box,
    page_placement,
    popup_origin,
    submenu_flip_shift,
    viewport_width_gap,
    visible_part,
)
from .elements import Element, page_elements
from .sources import Tree, Window

__all__ = ["region_of", "changed_pids", "window_above", "window_for_tab", "windows_for_native", "place_popups_at_pointer",
           "flip_submenus", "page_elements_in_windows", "misfit_pages", "sheets_in", "sheet_bands"]

_BUTTON_ROLES = frozenset({"push button", "toggle button"})
_MENU_ITEM_ROLES = frozenset({"menu", "menu item", "check menu item", "radio menu item", "tearoff menu item"})


def _browser_windows(tree: Tree) -> list[Window]:
    return [w for w in tree.windows if w.app_id and "chrom" in w.app_id.lower()]


def page_elements_in_windows(tabs: list[dict], tree: Tree) -> tuple[list[Element], set[str], list[str]]:
    """Elements of each browser window's front tab, in display pixels. Returns them, the ids of tabs that
    exist but were not read, and per-tab errors."""
    browser_windows = _browser_windows(tree)
    displays = {d.id: d for d in tree.displays}
    out: list[Element] = []
    alive: set[str] = set()
    errors: list[str] = []
    front = []
    for tab in tabs:
        alive.add(tab["id"])
        if tab.get("error"):
            if tab.get("active") is not False:
                errors.append(f"tab {tab['id']}: {tab['error']}")
            continue
        if tab.get("active") and tab.get("layout"):
            front.append(tab)
    used: set[str] = set()
    read: set[str] = set()
    for tab in front:
        window = window_for_tab(tab, browser_windows, used)
        if window is None or window.bounds is None or window.display_id not in displays:
            errors.append(f"tab {tab['id']}: no browser window on a display shows it")
            continue
        used.add(window.id)
        display = displays[window.display_id]
        metrics = tab["layout"].get("window") or {}
        try:
            placement = page_placement(window.bounds, (metrics["innerWidth"], metrics["innerHeight"]),
                                       metrics["devicePixelRatio"])
        except KeyError as exc:
            errors.append(f"tab {tab['id']}: layout has no {exc} to place it")
            continue
        clip = visible_part(window.bounds, Rect(0, 0, *display.size))
        if clip is None:
            continue
        out += page_elements(tab["layout"], tab_id=tab["id"], placement=placement, window_clip=clip,
                             display_id=display.id, window_id=window.id)
        read.add(tab["id"])
    # Tabs that exist but were not read (in the background, or failing) keep their
    # elements' ids alive; elements gone from a tab that was read are retired.
    return out, alive - read, errors


def misfit_pages(tabs: list[dict], tree: Tree) -> dict[str, tuple[float, float]]:
    """Browser windows whose front page is laid out for another width than the window
    has: window id -> (the window's width, the page's viewport width), device px.
    Chromium's viewport spans its window's width, so a difference means Sway resized the
    window and the page has not been laid out again yet (a tiled neighbour opened or
    closed: tens of ms on an idle machine, longer on a busy one), or the reverse. Placed
    then, its elements would be where they are not drawn. A side panel beside the page
    differs for good."""
    windows = _browser_windows(tree)
    used: set[str] = set()
    misfits: dict[str, tuple[float, float]] = {}
    for tab in tabs:
        metrics = (tab.get("layout") or {}).get("window") or {}
        if not (tab.get("active") and not tab.get("error") and "innerWidth" in metrics):
            continue
        window = window_for_tab(tab, windows, used)
        if window is None or window.bounds is None:
            continue
        used.add(window.id)
        dpr = metrics.get("devicePixelRatio") or 1.0
        if viewport_width_gap(window.bounds, metrics["innerWidth"], dpr) is not None:
            misfits[window.id] = (window.bounds.w, metrics["innerWidth"] * dpr)
    return misfits


def sheets_in(ax: list[Element]) -> dict[str, tuple[int, Rect]]:
    """The spreadsheets among a scene's elements (tables with cells: AT-SPI keys), with
    their display and box."""
    with_cells = {e.key[1].partition("#")[0] for e in ax if e.source == "atspi" and e.role == "cell"
                  and "#" in e.key[1]}
    return {e.key[1]: (e.display_id, e.bbox) for e in ax
            if e.source == "atspi" and e.role == "table" and e.key[1] in with_cells and e.bbox is not None}


def sheet_bands(sheets: dict[str, tuple[int, Rect]],
                unread: dict[int, list[tuple[int, int, int, int]]]) -> dict[str, list[tuple[float, float]]]:
    """Per sheet, the horizontal bands of it that changed since AT-SPI last read it
    (``unread``: each display's changed regions since then), as (top, height) fractions
    of its box (``[]``: none changed). The reader reads again the rows a band crosses,
    whole (a cell's text may overflow into its neighbours' boxes), and keeps the others'
    cells."""
    out: dict[str, list[tuple[float, float]]] = {}
    for key, (display_id, box) in sheets.items():
        if box.h <= 0:
            continue
        crossed = (band_of((box.x, box.y, box.w, box.h), r) for r in unread.get(display_id, ()))
        out[key] = [band for band in crossed if band is not None]
    return out


def region_of(box: Rect) -> tuple[int, int, int, int]:
    x0, y0 = int(box.x), int(box.y)
    return x0, y0, int(box.x + box.w + 0.999) - x0, int(box.y + box.h + 0.999) - y0


def changed_pids(tree: Tree, changed: dict[int, list[tuple[int, int, int, int]]]) -> frozenset[int]:
    """Processes owning a window that overlaps a changed region of its display."""
    pids = set()
    for w in tree.windows:
        if w.pid is None or w.bounds is None:
            continue
        if any(visible_part(w.bounds, Rect(*r)) is not None for r in changed.get(w.display_id, ())):
            pids.add(w.pid)
    return frozenset(pids)





def window_above(window_id: str, point: tuple[float, float], windows: list[Window]) -> Window | None:
    """The window drawn over ``point`` (display-local device pixels) of the window
    ``window_id``, or None when nothing covers it there. desktopd lists each workspace's
    windows in the order Sway draws them: the tiled ones, then the floating ones from
    bottom to top. So a floating window listed after another of its workspace is above it
    (LibreOffice's "spellcheck is complete" message can end up under its Spelling dialog,
    which then takes every click aimed at the message's OK)."""
    index = next((i for i, w in enumerate(windows) if w.id == window_id), None)
    if index is None:
        return None
    target, (x, y) = windows[index], point
    for w in windows[index + 1:]:
        if (w.floating and w.workspace == target.workspace and w.display_id == target.display_id
                and w.bounds is not None and w.bounds.contains(x, y)):
            return w
    return None


def window_for_tab(tab: dict, windows: list[Window], used: set[str]) -> Window | None:
    candidates = [w for w in windows if w.id not in used]
    if not candidates:
        return None
    title = tab.get("title") or ""
    for w in candidates:
        if title and w.title and w.title.startswith(title):
            return w
    return candidates[0] if len(candidates) == 1 else None


def windows_for_native(nodes: list[Any], windows: list[Window], displays: dict) -> list[tuple[Window, list[Any]]]:
    """Each AT-SPI frame's nodes with the Sway window that shows them. An app's only
    window takes all its frames; otherwise a frame goes to the window whose title is
    (or starts with) the frame's name, and a frame no title names (LibreOffice's "Save
    Document?" dialog is the frame "Warning") to the unclaimed window of its app whose
    size is nearest the frame's."""
    frames: dict[tuple[int, str], list[Any]] = {}
    for node in nodes:
        frames.setdefault((node.pid, node.frame), []).append(node)
    out: list[tuple[Window, list[Any]]] = []
    unmatched: list[tuple[list[Window], list[Any]]] = []
    claimed: set[str] = set()
    for (pid, title), group in frames.items():
        same_pid = [w for w in windows if w.pid == pid]
        if not same_pid:
            continue
        if len(same_pid) == 1:
            out.append((same_pid[0], group))
            continue
        named = next((w for w in same_pid if title and w.title and (w.title == title or w.title.startswith(title))),
                     None)
        if named is not None:
            claimed.add(named.id)
            out.append((named, group))
        else:
            unmatched.append((same_pid, group))
    for same_pid, group in unmatched:
        frame = next((n for n in group if n.depth == 1 and n.extents is not None), None)
        free = [w for w in same_pid if w.id not in claimed and w.bounds is not None] or same_pid
        window = min(free, key=lambda w, f=frame: _size_distance(w, f, displays))
        claimed.add(window.id)
        out.append((window, group))
    return out


def _size_distance(window: Window, frame: Any, displays: dict) -> float:
    """How far a window's size (in layout pixels) is from an AT-SPI frame's."""
    if frame is None or window.bounds is None:
        return 0.0
    scale = displays[window.display_id].scale if window.display_id in displays else 1.0
    w, h = device_span_to_layout(window.bounds.w, window.bounds.h, scale)
    return abs(w - frame.extents[2]) + abs(h - frame.extents[3])


def place_popups_at_pointer(nodes: list[Any], window: Rect, scale: float, surface: Any,
                            pointer: tuple[float, float] | None) -> list[Any]:
    """One window's native nodes (``deskbox.atspi.NativeNode``) with each popup the
    reader could not place (its window node ``unplaced``: a GTK menu that names no
    button) put below the button under the pointer, as GTK opens it (``popup_origin``
    with ``GTK_MENU_INSET``). ``pointer``: display-local device px, on this window's
    display (desktopd knows where it last put it: the click that opened the popup).
    A popup with no button under the pointer stays as it is."""
    if pointer is None or not any(getattr(n, "unplaced", False) for n in nodes):
        return nodes
    px, py = pointer
    in_popup, inside = [], False
    for node in nodes:
        if node.depth <= 1:
            inside = bool(getattr(node, "unplaced", False))
        in_popup.append(inside)
    under = [n for n, popup in zip(nodes, in_popup) if not popup and n.role in _BUTTON_ROLES
             and n.extents is not None and native_to_display(window, scale, n.extents, surface).contains(px, py)]
    if not under:
        return nodes
    button = min(under, key=lambda n: n.extents[2] * n.extents[3])
    origin = popup_origin(button.extents, GTK_MENU_INSET)
    return [dataclasses.replace(n, unplaced=False, extents=offset_box(n.extents, origin) if n.extents else None)
            if popup else n for n, popup in zip(nodes, in_popup)]


def flip_submenus(nodes: list[Any], window: Rect, scale: float, surface: Any, right_edge: float) -> list[Any]:
    """One window's native nodes (in tree order) with each open submenu that would cross
    ``right_edge`` (the display's, display-local device px) put on its item's left
    instead, where GTK 3 opens it then (``geometry.submenu_flip_shift``). The reader
    places a submenu to its item's right (``geometry.submenu_origin``): it does not know
    the display. What the submenu holds (a deeper submenu too) moves with it."""
    by_key = {n.key: n for n in nodes}
    out = list(nodes)
    for i, sub in enumerate(out):
        parent = by_key.get(sub.parent)
        if sub.role != "menu" or parent is None or parent.role != "menu" or sub.extents is None:
            continue
        end = next((j for j in range(i + 1, len(out)) if out[j].depth <= sub.depth), len(out))
        # (Its items, not the popup's own unnamed menu that holds them.)
        items = [n for n in out[i + 1:end] if n.role in _MENU_ITEM_ROLES and n.name and n.extents is not None]
        if not items:
            continue  # (a closed submenu)
        top = min(n.depth for n in items)
        items = [n for n in items if n.depth == top]
        boxes = [native_to_display(window, scale, n.extents, surface) for n in items]
        if max(b.x + b.w for b in boxes) <= right_edge:
            continue
        dx = submenu_flip_shift(sub.extents, max(n.extents[2] for n in items))
        out[i + 1:end] = [dataclasses.replace(n, extents=offset_box(n.extents, (dx, 0))) if n.extents else n
                          for n in out[i + 1:end]]
    return out
