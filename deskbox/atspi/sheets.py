"""A Calc sheet's visible cells, read by row and column (see the package docstring).

What it owns: which cells of a sheet are on screen, the object LibreOffice made for
each, and what each sheet's visible cells read last. It must not know what becomes of
the cells (the snapshot's nodes, the full read's); it reads through the reader's
``call`` (one D-Bus call, its connections and limits).

What a cell costs LibreOffice 7.4 (400 cells, pipelined, this 2-core machine): its text
(``Text.GetText``) 0.43 ms, as much as everything else read of it; its ``Value``
0.04 ms and its ``CharacterCount`` 0.1 ms, but neither says what the cell shows (a
number's format, a text). A sheet scrolled a page is therefore some 250 ms of
LibreOffice's time at 1920x1080, whatever the reader does: the rows kept between reads
are the only saving."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any

from ..geometry import band_span
from .tree import (
    A11Y,
    ACCESSIBLE,
    MAX_CACHED_CELLS,
    MAX_SHEET_CELLS,
    MAX_VALUE_CHARS,
    WINDOW_COORDS,
    Cell,
    DBusError,
)

_Box = tuple[int, int, int, int]


class Sheets:
    def __init__(self, call: Callable[..., Awaitable[list[Any]]]) -> None:
        self._call = call
        # A sheet's cells, by (row, column): the object LibreOffice made for each when
        # it was first asked. LibreOffice makes a new object at every GetAccessibleAt and
        # atk-bridge keeps every one it has handed out, for as long as the app lives:
        # asking again each turn would cost a call a cell and grow the app by some
        # 1,300 objects a turn on a full-screen sheet. An object keeps reading its
        # cell's current content (measured, LibreOffice 7.4). Sheet key -> cells.
        self._objects: dict[str, dict[tuple[int, int], str]] = {}
        # What each sheet's visible cells read, and the sheet's box then.
        self._read: dict[str, tuple[_Box | None, list[Cell]]] = {}
        self.kept = 0  # cells taken from an earlier read, since the count was reset

    def keys_of(self, bus: str) -> list[str]:
        """The sheets of that app read so far (their tables' keys)."""
        return [key for key in self._read if key.startswith(bus + "/")]

    def forget_gone_apps(self, live: Collection[str]) -> None:
        self._objects = {k: v for k, v in self._objects.items() if k.split("/", 1)[0] in live}
        self._read = {k: v for k, v in self._read.items() if k.split("/", 1)[0] in live}

    async def read(self, bus: str, path: str, box: _Box | None,
                   bands: Sequence[tuple[float, float]] | None) -> list[Cell]:
        """The sheet's visible cells. ``bands``: which horizontal bands of its box
        changed since the last read, as (top, height) fractions of the box (None: not
        known, all is read); the rows they cross are read again, whole (a cell's text
        may overflow into its neighbours), the others' cells are taken from the last
        read when the sheet's box is the same."""
        last = self._read.get(bus + path)
        kept = last[1] if last is not None and last[0] == box and bands is not None else None
        if kept is not None and not bands:
            self.kept += len(kept)
            return kept
        cells = await self._cells(bus, path, box, kept, bands or ())
        self._read[bus + path] = (box, cells)
        return cells

    async def _cells(self, bus: str, path: str, box: tuple[int, int, int, int] | None,
                     kept: list[Cell] | None = None, bands: Sequence[tuple[float, float]] = ()) -> list[Cell]:
        """The cells of a sheet's visible part. The visible part is bounded by the cells
        under its top-left and bottom-right corners; each row's height and column's
        width come from the first column's and row's cells, and a cell's object is made
        once (``_objects``), so a cell costs one call a turn (its text) rather than five.
        With ``kept`` (the previous read of the same box), a cell of a row no band
        crosses keeps its text when its box is the one read then."""
        visible = await self.visible(bus, path, box)
        if visible is None:
            return []
        rows, cols = visible

        async def read(ref: str, box: bool) -> tuple[str, Any]:
            if box:
                return "", (await self._call(bus, ref, A11Y + "Component", "GetExtents", "u", [WINDOW_COORDS]))[0]
            return (await self._call(bus, ref, A11Y + "Text", "GetText", "ii", [0, -1]))[0], None

        async def cell(row: int, col: int, *, box: bool = False) -> tuple[str, Any]:
            ref = await self.cell_ref(bus, path, row, col)
            try:
                return await read(ref, box)
            except DBusError:
                # Gone (rows deleted, the sheet rebuilt): asked for afresh.
                return await read(await self.cell_ref(bus, path, row, col, fresh=True), box)

        # Geometry: the first visible row gives the columns, the first visible column the rows.
        col_boxes, row_boxes = await asyncio.gather(
            asyncio.gather(*(cell(rows[0], c, box=True) for c in cols)),
            asyncio.gather(*(cell(r, cols[0], box=True) for r in rows)))
        places = {}
        for r in range(len(rows)):
            for c in range(len(cols)):
                if col_boxes[c][1] is not None and row_boxes[r][1] is not None:
                    cx, _, cw, _ = col_boxes[c][1]
                    _, ry, _, rh = row_boxes[r][1]
                    places[rows[r], cols[c]] = (cx, ry, cw, rh)
        known_text = {}
        if kept is not None:
            spans = [band_span(box, band) for band in bands]
            known_text = {(k.row, k.col): k.text for k in kept if places.get((k.row, k.col)) == k.extents
                          and not any(k.extents[1] < bottom and k.extents[1] + k.extents[3] > top
                                      for top, bottom in spans)}
        wanted = [place for place in places if place not in known_text]
        texts = dict(zip(wanted, await asyncio.gather(*(cell(r, c) for r, c in wanted))))
        self.kept += len(known_text)
        return [Cell(row=r, col=c, text=(known_text[r, c] if (r, c) in known_text else texts[r, c][0])[:MAX_VALUE_CHARS],
                      extents=place) for (r, c), place in places.items()]

    async def visible(self, bus: str, path: str,
                      box: tuple[int, int, int, int] | None) -> tuple[range, range] | None:
        """The rows and columns of a sheet's visible part (at most ``MAX_SHEET_CELLS``
        cells): bounded by the cells under its top-left and bottom-right corners."""
        if box is None:
            return None
        x, y, w, h = box
        table = A11Y + "Table"

        async def cell_at_point(px: int, py: int) -> tuple[int, int] | None:
            ref = (await self._call(bus, path, A11Y + "Component", "GetAccessibleAtPoint", "iiu",
                                    [px, py, WINDOW_COORDS]))[0]
            if not ref or not ref[1] or ref[1] == "/org/a11y/atspi/null":
                return None
            index = (await self._call(bus, ref[1], ACCESSIBLE, "GetIndexInParent"))[0]
            row, col = await asyncio.gather(self._call(bus, path, table, "GetRowAtIndex", "i", [index]),
                                            self._call(bus, path, table, "GetColumnAtIndex", "i", [index]))
            return row[0], col[0]

        first, last = await asyncio.gather(cell_at_point(x + 1, y + 1), cell_at_point(x + w - 2, y + h - 2))
        if first is None or last is None or last[0] < first[0] or last[1] < first[1]:
            return None
        rows = range(first[0], last[0] + 1)
        cols = range(first[1], last[1] + 1)
        while len(rows) * len(cols) > MAX_SHEET_CELLS and len(rows) > 1:
            rows = rows[:-1]
        return rows, cols

    async def cell_ref(self, bus: str, path: str, row: int, col: int, *, fresh: bool = False) -> str:
        """The object of a sheet's cell, made once (see ``_objects``); ``fresh``: asked
        again (the one kept is gone)."""
        known = self._objects.setdefault(bus + path, {})
        ref = None if fresh else known.get((row, col))
        if ref is None:
            if len(known) > MAX_CACHED_CELLS:
                known.clear()
            ref = known[row, col] = (await self._call(bus, path, A11Y + "Table", "GetAccessibleAt", "ii",
                                                      [row, col]))[0][1]
        return ref
