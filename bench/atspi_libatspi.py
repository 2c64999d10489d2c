"""The baseline of ``bench.accessibility``: the libatspi walk OSWorld's server used to
read, kept here to measure the scene's reader (``deskbox.atspi.full``) against it.
A full AT-SPI walk of every application, printed as one JSON document on stdout, read
with libatspi (pyatspi) the way OSWorld's own server reads it: every node, depth up to
50, up to 1,024 children each, one synchronous call at a time.

Run as the session user with the session's ``DBUS_SESSION_BUS_ADDRESS`` (AT-SPI
answers only readers of the apps' own uid): ``python -m bench.atspi_libatspi``. Its
nodes have the full read's shape (``deskbox.atspi.full``)."""

from __future__ import annotations

import json
import sys
from typing import Any

MAX_DEPTH = 50
MAX_WIDTH = 1024
MAX_NODES = 50_000
MAX_CELLS = 2_500  # of a spreadsheet's visible part (a 1920x1080 Calc shows about 1,300)
_OFFSCREEN = -(2**31)


class _Walk:
    def __init__(self, pyatspi: Any) -> None:
        self.pyatspi = pyatspi
        self.count = 0
        self.state_names = {int(v): k.split("_", 1)[1].lower()
                            for v, k in pyatspi.StateType._enum_lookup.items() if "_" in k}

    def node(self, acc: Any, depth: int, in_sheet: bool = False) -> dict[str, Any]:
        self.count += 1
        out: dict[str, Any] = {"role": "", "name": "", "states": [], "attrs": {}, "extents": None, "text": "",
                               "value": None, "actions": {}, "image": False, "selection": False, "children": []}
        try:
            out["role"] = (acc.getRoleName() or "").strip()
            out["name"] = acc.name or ""
        except Exception:
            return out
        try:
            out["states"] = [self.state_names.get(int(s), str(int(s))) for s in acc.getState().get_states()]
        except Exception:
            pass
        try:
            out["attrs"] = {str(k): str(v) for k, v in (acc.get_attributes() or {}).items() if k}
        except Exception:
            pass
        if "visible" in out["states"] and "showing" in out["states"]:
            try:
                x, y, w, h = acc.queryComponent().getExtents(self.pyatspi.XY_WINDOW)
                if x != _OFFSCREEN and y != _OFFSCREEN:
                    out["extents"] = [x, y, w, h]
            except Exception:
                pass
        try:
            text = acc.queryText()
            out["text"] = text.getText(0, text.characterCount)
        except Exception:
            pass
        for key, query in (("image", "queryImage"), ("selection", "querySelection")):
            try:
                getattr(acc, query)()
                out[key] = True
            except Exception:
                pass
        try:
            value = acc.queryValue()
            out["value"] = {}
            for key, attr in (("value", "currentValue"), ("min", "minimumValue"), ("max", "maximumValue"),
                              ("step", "minimumIncrement")):
                try:
                    out["value"][key] = str(getattr(value, attr))
                except Exception:
                    pass
        except Exception:
            pass
        try:
            action = acc.queryAction()
            for i in range(action.nActions):
                out["actions"][action.getName(i)] = [action.getDescription(i) or "", action.getKeyBinding(i) or ""]
        except Exception:
            pass
        if depth >= MAX_DEPTH:
            return out
        in_sheet = in_sheet or out["role"] == "document spreadsheet"
        if in_sheet and out["role"] == "table" and "manages_descendants" in out["states"]:
            out["children"] = self.visible_cells(acc, depth)
            return out
        try:
            count = min(acc.childCount, MAX_WIDTH)
        except Exception:
            count = 0
        for i in range(count):
            if self.count >= MAX_NODES:
                break
            try:
                child = acc.getChildAtIndex(i)
            except Exception:
                continue
            if child is not None:
                out["children"].append(self.node(child, depth + 1, in_sheet))
        return out

    def visible_cells(self, table: Any, depth: int) -> list[dict[str, Any]]:
        """A Calc sheet's cells on screen, row by row, as OSWorld's server lists them
        (the table's own children are every cell of the sheet, made on demand: the
        first 1,024 would be row 1 far to the right). The visible part is bounded by the
        cells under the sheet's top-left and bottom-right corners."""
        xy = self.pyatspi.XY_WINDOW
        try:
            component, cells = table.queryComponent(), table.queryTable()
            x, y, w, h = component.getExtents(xy)

            def row_col(px: int, py: int) -> tuple[int, int]:
                index = component.getAccessibleAtPoint(px, py, xy).getIndexInParent()
                return cells.getRowAtIndex(index), cells.getColumnAtIndex(index)

            (top, left), (bottom, right) = row_col(x + 1, y + 1), row_col(x + w - 2, y + h - 2)
        except Exception:
            return []
        out = []
        for row in range(top, bottom + 1):
            for col in range(left, right + 1):
                if len(out) >= MAX_CELLS or self.count >= MAX_NODES:
                    return out
                try:
                    cell = cells.getAccessibleAt(row, col)
                except Exception:
                    continue
                if cell is not None:
                    out.append(self.node(cell, depth + 1, True))
        return out


def walk() -> dict[str, Any]:
    import pyatspi

    walker = _Walk(pyatspi)
    apps = []
    desktop = pyatspi.Registry.getDesktop(0)
    for i in range(desktop.childCount):
        try:
            app = desktop.getChildAtIndex(i)
            if app is None:
                continue
            node = walker.node(app, 1)
            node["pid"] = app.get_process_id()
        except Exception:
            continue
        apps.append(node)
    return {"apps": apps, "nodes": walker.count}


if __name__ == "__main__":
    json.dump(walk(), sys.stdout, ensure_ascii=False)
    sys.stdout.flush()
