"""The D-Bus reader: every call of a round in flight at once (see the package docstring)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ..geometry import band_span
from .selection import _reads_text, _Selection
from .tree import (
    _A11Y,
    _ACCESSIBLE,
    _BROWSER_TOOLKITS,
    _CACHE_PATH,
    _DEFUNCT,
    _DESKTOP_COORDS,
    _MAX_ROUNDS,
    _MAX_VALUE_CHARS,
    _OFFSCREEN,
    _PROPERTIES,
    _REGISTRY,
    _ROOT,
    _SHOWING,
    _VISIBLE,
    _WINDOW_COORDS,
    APP_TIMEOUT_S,
    MAX_CACHED_CELLS,
    MAX_IN_FLIGHT,
    MAX_SHEET_CELLS,
    AtspiError,
    NativeNode,
    NoSuchAction,
    _action_index,
    _App,
    _Cell,
    _Names,
    _Needs,
    _Obj,
    _obj_from_item,
    _Tree,
)


class _AppUnresponsive(Exception):
    pass


class AtspiReader:
    """Reads every application on the session's accessibility bus, over D-Bus
    directly (dbus-fast, asyncio), with every call of a round in flight at once.

    ``await reader.open()`` first; one snapshot or action at a time."""

    def __init__(self, *, bus_address: str | None = None, app_timeout: float = APP_TIMEOUT_S) -> None:
        self._session_address = bus_address or os.environ.get("DBUS_SESSION_BUS_ADDRESS")
        if not self._session_address:
            raise AtspiError("DBUS_SESSION_BUS_ADDRESS is not set: AT-SPI needs the session's D-Bus bus")
        self._timeout = app_timeout
        self._names = _Names()
        self._bus: Any = None
        # Apps that offer a peer-to-peer socket (atk-bridge: Chromium, GTK 3) are asked
        # there: a call through the bus daemon costs twice as long (113 against 54 us
        # a call, pipelined, measured with Chromium). Bus name -> connection.
        self._direct: dict[str, Any] = {}
        self._apps: dict[str, _App] = {}
        # What an object never changes while it lives (its actions; role and interfaces
        # when they do not come from a cache) is asked once.
        self._actions: dict[str, tuple[str, ...]] = {}
        self._static: dict[str, tuple[int, frozenset[str]]] = {}  # key -> role, interfaces
        self._toolkits: dict[str, str] = {}  # key -> the toolkit its attributes name
        self._hidden: set[str] = set()  # keys of objects neither showing nor visible last time
        # What the last walk of each app read level by level: asked at once next time.
        self._shapes: dict[str, _Needs] = {}
        self._known: dict[str, int] = {}  # key -> pid, as of the latest snapshot
        # A sheet's cells, by (row, column): the object LibreOffice made for each when
        # it was first asked. LibreOffice makes a new object at every GetAccessibleAt and
        # atk-bridge keeps every one it has handed out, for as long as the app lives:
        # asking again each turn would cost a call a cell and grow the app by some
        # 1,300 objects a turn on a full-screen sheet. An object keeps reading its
        # cell's current content (measured, LibreOffice 7.4). Sheet key -> cells.
        self._cells: dict[str, dict[tuple[int, int], str]] = {}
        # What each sheet's visible cells read, and the sheet's box then (see snapshot).
        self._sheet_read: dict[str, tuple[tuple[int, int, int, int] | None, list[_Cell]]] = {}
        self._sheet_bands: Mapping[str, Sequence[tuple[float, float]]] = {}
        self._cells_kept = 0
        # Calls in flight at once. dbus-fast writes a burst of calls without waiting for
        # the socket to drain and fails with EAGAIN when its buffer fills (seen with
        # LibreOffice: some 1,400 objects); a few hundred in flight lose nothing of
        # the pipelining.
        self._in_flight = asyncio.Semaphore(MAX_IN_FLIGHT)
        self.last_walk: dict[str, float | int] = {}

    async def open(self) -> None:
        from dbus_fast.aio import MessageBus

        try:
            session = await MessageBus(bus_address=self._session_address).connect()
            try:
                reply = await self._call_on(session, "org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress")
            finally:
                session.disconnect()
            self._bus = await MessageBus(bus_address=reply[0]).connect()
        except (OSError, _DBusError) as exc:
            raise AtspiError(f"cannot reach the accessibility bus: {exc}") from exc

    async def close(self) -> None:
        for conn in self._direct.values():
            conn.disconnect()
        self._direct.clear()
        if self._bus is not None:
            self._bus.disconnect()
            self._bus = None

    # -- public -----------------------------------------------------------------------

    async def snapshot(self, *, prune_documents: bool = True, pids: Collection[int] | None = None,
                       sheet_bands: Mapping[str, Sequence[tuple[float, float]]] | None = None) -> list[NativeNode]:
        """Every application's on-screen nodes, in tree order (see the module docstring
        for what is kept); with ``pids``, only those processes' apps. An app that does
        not answer within the call timeout is left out of this snapshot. ``last_walk``
        holds the figures of the latest walk: seconds, objects visited, nodes kept, and
        milliseconds per app; all apps are read at the same time.

        ``sheet_bands`` says, per sheet (its table's key), which horizontal bands of its
        box changed since the previous snapshot, as (top, height) fractions of the box:
        the rows a band crosses are read again, whole (a cell's text may overflow into
        its neighbours), and the other rows' cells are taken from the previous read when
        the sheet's box is the same (what a sheet's cells show is drawn in its box; the
        caller watches the pixels). A sheet it does not name is read whole."""
        self._sheet_bands, self._cells_kept = dict(sheet_bands or {}), 0
        started = time.perf_counter()
        try:
            refs = await self._within(self._call(_REGISTRY, _ROOT, _ACCESSIBLE, "GetChildren"), "the registry")
        except (_DBusError, _AppUnresponsive) as exc:
            raise AtspiError(f"the accessibility registry did not list the apps: {exc}") from exc
        buses = [bus for bus, _ in refs[0]]
        apps = await asyncio.gather(*(self._within(self._app(bus), bus) for bus in buses), return_exceptions=True)
        self._apps = {a.bus: a for a in apps if isinstance(a, _App)}
        chosen = [a for a in apps if isinstance(a, _App) and (pids is None or a.pid in pids)]
        walks = await asyncio.gather(*(self._within(self._walk(a, prune_documents), a.name) for a in chosen),
                                     return_exceptions=True)
        out: list[NativeNode] = []
        stats: dict[str, float | int] = {"visited": 0, "kept": 0}
        walked: set[int] = set()
        for app, walk in zip(chosen, walks):
            if isinstance(walk, BaseException):
                if not isinstance(walk, (_AppUnresponsive, _DBusError)):
                    raise walk
                continue
            nodes, visited, ms = walk
            walked.add(app.pid)
            out += nodes
            stats["visited"] += visited
            stats["kept"] += len(nodes)
            stats[f"app:{app.name or '?'}:{app.pid}:ms"] = ms
        known = {n.key: n.pid for n in out}
        if pids is not None:
            # Keys of the apps not walked this time stay actionable.
            known = {**{k: p for k, p in self._known.items() if p not in walked}, **known}
        self._known = known
        live_buses = set(self._apps)
        for bus in [b for b in self._direct if b not in live_buses]:
            self._drop_direct(bus)
        self._shapes = {b: v for b, v in self._shapes.items() if b in live_buses}
        self._actions = {k: v for k, v in self._actions.items() if k.split("/", 1)[0] in live_buses}
        self._static = {k: v for k, v in self._static.items() if k.split("/", 1)[0] in live_buses}
        self._toolkits = {k: v for k, v in self._toolkits.items() if k.split("/", 1)[0] in live_buses}
        self._hidden = {k for k in self._hidden if k.split("/", 1)[0] in live_buses}
        self._cells = {k: v for k, v in self._cells.items() if k.split("/", 1)[0] in live_buses}
        self._sheet_read = {k: v for k, v in self._sheet_read.items() if k.split("/", 1)[0] in live_buses}
        stats["seconds"] = time.perf_counter() - started
        stats["cells_kept"] = self._cells_kept
        self.last_walk = stats
        return out

    async def act(self, key: str, action: str) -> bool:
        """Do the named action (``click``, ``press``, ``activate`` ...) on the node with
        this key. ``click`` also means a node's ``press``, ``activate``, ``toggle``,
        ``jump``, ``open`` or ``doDefault`` when it has no ``click``; ``focus`` is the
        Component interface's GrabFocus. False when the node is gone; NoSuchAction when
        it lives but has no such action."""
        if key not in self._known:
            await self.snapshot()
            if key not in self._known:
                return False
        try:
            return await self._within(self._act(key, action), key)
        except (_DBusError, _AppUnresponsive):
            self._known.pop(key, None)
            return False

    async def _act(self, key: str, action: str) -> bool:
        bus, _, rest = key.partition("/")
        path = "/" + rest
        state = await self._call(bus, path, _ACCESSIBLE, "GetState")
        lo, hi = state[0]
        if (lo | hi << 32) >> _DEFUNCT & 1:
            self._known.pop(key, None)
            return False
        if action == "focus":
            return bool((await self._call(bus, path, _A11Y + "Component", "GrabFocus"))[0])
        names = self._actions.get(key)
        if names is None:
            names = self._actions[key] = await self._action_names(bus, path)
        index = _action_index(names, action)
        if index is None:
            raise NoSuchAction(key, action, names)
        return bool((await self._call(bus, path, _A11Y + "Action", "DoAction", "i", [index]))[0])

    # -- internals ----------------------------------------------------------------------

    async def _app(self, bus: str) -> _App:
        app = self._apps.get(bus)
        if app is not None:
            return app
        pid = (await self._call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                "GetConnectionUnixProcessID", "s", [bus]))[0]
        name, toolkit, version = await asyncio.gather(
            self._prop(bus, _ROOT, _ACCESSIBLE, "Name"),
            self._prop(bus, _ROOT, _A11Y + "Application", "ToolkitName"),
            self._prop(bus, _ROOT, _A11Y + "Application", "Version"),
        )
        toolkit = (toolkit or "").lower()
        browser = toolkit in _BROWSER_TOOLKITS
        await self._connect_direct(bus)
        # A browser's cache, once some client turns AT-SPI events on, holds every page
        # node too (1,382 objects and 27 ms for a 1,000-element page, measured) while
        # only its own UI is wanted here: it is walked level by level, pages pruned.
        # LibreOffice's holds every object it ever made (the cells of a sheet, the
        # items of every menu: 1,888 objects, 160-270 ms a call, measured) and works
        # out each one's states when asked: it is walked level by level too, closed
        # menus left unopened (110-240 ms).
        return _App(bus=bus, pid=pid, name=name or "", gtk4=toolkit == "gtk" and (version or "").startswith("4."),
                    browser=browser, cache=not browser and name != "soffice", get_all=toolkit != "qt",
                    desktop_coords=toolkit == "qt", prefetch=name != "soffice")

    async def _walk(self, app: _App, prune_documents: bool) -> tuple[list[NativeNode], int, float]:
        t0 = time.perf_counter()
        items: list[Any] = []
        if app.cache:
            try:
                items = (await self._call(app.bus, _CACHE_PATH, _A11Y + "Cache", "GetItems"))[0]
            except _DBusError:
                # GTK 3's atk-bridge offers its cache only once some client has turned
                # AT-SPI events on, and an app that has just started may not have it yet
                # (measured): this time its tree is read level by level. Asked again
                # next time: a failed call costs a fraction of a millisecond.
                pass
        tree = _Tree({o.path: o for o in map(_obj_from_item, items)})
        extents: dict[str, tuple[int, int, int, int] | None] = {}
        values: dict[str, str | None] = {}
        toolkits = {"/" + k.partition("/")[2]: v for k, v in self._toolkits.items() if k.startswith(app.bus + "/")}
        sheets: dict[str, list[_Cell]] = {}
        actions = {"/" + k.partition("/")[2]: v for k, v in self._actions.items() if k.startswith(app.bus + "/")}
        shape = self._shapes.get(app.bus) if not items and app.prefetch else None
        if shape is not None:
            # Read level by level, a tree as deep as Chromium's UI (eleven levels) costs
            # eleven rounds. What the last walk read is most likely what this one needs:
            # it is asked at once, and the passes below fetch only what changed.
            await self._fetch(app, tree, _Needs(children=set(shape.children), objects=set(shape.objects),
                                                extents=set(shape.extents)), extents, actions, values, toolkits, sheets)
        for _ in range(_MAX_ROUNDS):
            selection = _Selection(app, tree, self._names, prune_documents, extents, actions, values, toolkits,
                                   sheets)
            nodes = selection.run()
            needs = selection.needs
            if not needs:
                if not items:
                    self._shapes[app.bus] = _Needs(children=set(tree.asked), objects=set(tree.objects),
                                                   extents={p for p, box in extents.items() if box is not None})
                return nodes, selection.visited, round((time.perf_counter() - t0) * 1000, 2)
            await self._fetch(app, tree, needs, extents, actions, values, toolkits, sheets)
        raise _AppUnresponsive(f"{app.name}: its tree kept changing while it was read")

    async def _fetch(self, app: _App, tree: _Tree, needs: _Needs, extents: dict, actions: dict, values: dict,
                     toolkits: dict, sheets: dict) -> None:
        """One round: everything ``needs`` names, asked at once."""
        bus = app.bus

        async def children(path: str) -> None:
            refs = (await self._call(bus, path, _ACCESSIBLE, "GetChildren"))[0]
            tree.asked[path] = [p for _, p in refs]
            # (Objects this round asks for anyway are not asked twice.)
            await asyncio.gather(*(obj(kid) for kid in tree.asked[path]
                                   if kid not in tree.objects and kid not in needs.objects))

        async def props_of(path: str) -> list[Any]:
            """Properties.GetAll's reply for the Accessible interface (asked one by one
            of an app that cannot answer GetAll)."""
            if app.get_all:
                return await self._call(bus, path, _PROPERTIES, "GetAll", "s", [_ACCESSIBLE])
            names = ("Name", "Description", "ChildCount", "Parent")
            replies = await asyncio.gather(*(self._call(bus, path, _PROPERTIES, "Get", "ss", [_ACCESSIBLE, n])
                                             for n in names))
            return [{n: r[0] for n, r in zip(names, replies)}]

        async def obj(path: str) -> None:
            key = bus + path
            static = self._static.get(key)
            props: Any = None
            if static is None:
                props, state, role, ifaces = await asyncio.gather(
                    props_of(path),
                    self._call(bus, path, _ACCESSIBLE, "GetState"),
                    self._call(bus, path, _ACCESSIBLE, "GetRole"),
                    self._call(bus, path, _ACCESSIBLE, "GetInterfaces"),
                )
                static = self._static[key] = (role[0], frozenset(i.removeprefix(_A11Y) for i in ifaces[0]))
            elif key in self._hidden and path != _ROOT:
                # Hidden last time (most of a browser's UI: 98 of its 139 objects): its
                # state alone says whether it still is, and then nothing else is read.
                # (Not the application itself: never showing, its children are the apps'
                # frames, counted in its properties.)
                state = await self._call(bus, path, _ACCESSIBLE, "GetState")
            else:
                props, state = await asyncio.gather(
                    props_of(path),
                    self._call(bus, path, _ACCESSIBLE, "GetState"),
                )
            lo, hi = state[0]
            states = lo | hi << 32
            shown = bool((states >> _SHOWING | states >> _VISIBLE) & 1)
            # (Calc's Input line says it is defunct, and nothing else: its name tells.)
            calc_line = app.name == "soffice" and states == 1 << _DEFUNCT
            if props is None and (shown or calc_line):
                props = await props_of(path)
            if shown:
                self._hidden.discard(key)
            else:
                self._hidden.add(key)
            p = {k: v.value for k, v in props[0].items()} if props is not None else {}
            parent_bus, parent = p.get("Parent", ("", ""))
            tree.objects[path] = _Obj(
                path=path, parent=parent if parent_bus == bus else "", index=-1, child_count=p.get("ChildCount", 0),
                interfaces=static[1], name=p.get("Name", ""), role=static[0], description=p.get("Description", ""),
                states=states)

        coords = _DESKTOP_COORDS if app.desktop_coords else _WINDOW_COORDS

        async def box(path: str) -> None:
            x, y, w, h = (await self._call(bus, path, _A11Y + "Component", "GetExtents", "u", [coords]))[0]
            extents[path] = None if x == _OFFSCREEN or y == _OFFSCREEN else (x, y, w, h)

        async def acts(path: str) -> None:
            names = await self._action_names(bus, path)
            actions[path] = self._actions[bus + path] = names

        async def value(path: str) -> None:
            o = tree.objects[path]
            role = self._names.role(o.role)
            if _reads_text(o, role):
                text = (await self._call(bus, path, _A11Y + "Text", "GetText", "ii", [0, -1]))[0]
                values[path] = text[:_MAX_VALUE_CHARS]
            else:
                number = await self._prop(bus, path, _A11Y + "Value", "CurrentValue")
                values[path] = None if number is None else f"{number:g}"

        async def toolkit(path: str) -> None:
            attributes = (await self._call(bus, path, _ACCESSIBLE, "GetAttributes"))[0]
            toolkits[path] = self._toolkits[bus + path] = attributes.get("toolkit", "")

        async def sheet(path: str) -> None:
            box = extents.get(path)
            last = self._sheet_read.get(bus + path)
            bands = self._sheet_bands.get(bus + path)
            kept = last[1] if last is not None and last[0] == box and bands is not None else None
            if kept is not None and not bands:
                sheets[path] = kept
                self._cells_kept += len(kept)
                return
            sheets[path] = await self._sheet_cells(bus, path, box, kept, bands or ())
            self._sheet_read[bus + path] = (box, sheets[path])

        jobs = [*map(children, needs.children), *map(obj, needs.objects), *map(box, needs.extents),
                *map(acts, needs.actions), *map(value, needs.values), *map(toolkit, needs.toolkits),
                *map(sheet, needs.sheets)]
        results = await asyncio.gather(*jobs, return_exceptions=True)
        for result in results:
            if isinstance(result, _AppUnresponsive):
                raise result
        # An object that vanished mid-read (an error for it) is simply absent next pass;
        # its box and value are recorded as missing so the pass does not ask again.
        for path in needs.extents:
            extents.setdefault(path, None)
        for path in needs.values:
            values.setdefault(path, None)
        for path in needs.actions:
            actions.setdefault(path, ())
        for path in needs.toolkits:
            toolkits.setdefault(path, "")
        for path in needs.sheets:
            sheets.setdefault(path, [])
        for path in needs.children:
            tree.asked.setdefault(path, [])
        for path in needs.objects:
            if path not in tree.objects:
                tree.gone.add(path)
        for path in needs.children:
            tree.gone.update(p for p in tree.asked[path] if p not in tree.objects)

    async def _sheet_cells(self, bus: str, path: str, box: tuple[int, int, int, int] | None,
                           kept: list[_Cell] | None = None, bands: Sequence[tuple[float, float]] = ()) -> list[_Cell]:
        """The cells of a sheet's visible part. The visible part is bounded by the cells
        under its top-left and bottom-right corners; each row's height and column's
        width come from the first column's and row's cells, and a cell's object is made
        once (``_cells``), so a cell costs one call a turn (its text) rather than five.
        With ``kept`` (the previous read of the same box), a cell of a row no band
        crosses keeps its text when its box is the one read then."""
        if box is None:
            return []
        x, y, w, h = box
        table = _A11Y + "Table"

        async def cell_at_point(px: int, py: int) -> tuple[int, int] | None:
            ref = (await self._call(bus, path, _A11Y + "Component", "GetAccessibleAtPoint", "iiu",
                                    [px, py, _WINDOW_COORDS]))[0]
            if not ref or not ref[1] or ref[1] == "/org/a11y/atspi/null":
                return None
            index = (await self._call(bus, ref[1], _ACCESSIBLE, "GetIndexInParent"))[0]
            row, col = await asyncio.gather(self._call(bus, path, table, "GetRowAtIndex", "i", [index]),
                                            self._call(bus, path, table, "GetColumnAtIndex", "i", [index]))
            return row[0], col[0]

        first, last = await asyncio.gather(cell_at_point(x + 1, y + 1), cell_at_point(x + w - 2, y + h - 2))
        if first is None or last is None or last[0] < first[0] or last[1] < first[1]:
            return []
        rows = range(first[0], last[0] + 1)
        cols = range(first[1], last[1] + 1)
        while len(rows) * len(cols) > MAX_SHEET_CELLS and len(rows) > 1:
            rows = rows[:-1]

        known = self._cells.setdefault(bus + path, {})
        if len(known) > MAX_CACHED_CELLS:
            known.clear()

        async def read(ref: str, box: bool) -> tuple[str, Any]:
            if box:
                return "", (await self._call(bus, ref, _A11Y + "Component", "GetExtents", "u", [_WINDOW_COORDS]))[0]
            return (await self._call(bus, ref, _A11Y + "Text", "GetText", "ii", [0, -1]))[0], None

        async def cell(row: int, col: int, *, box: bool = False) -> tuple[str, Any]:
            ref = known.get((row, col))
            if ref is not None:
                try:
                    return await read(ref, box)
                except _DBusError:
                    pass  # gone (rows deleted, the sheet rebuilt): asked for afresh
            ref = known[row, col] = (await self._call(bus, path, table, "GetAccessibleAt", "ii", [row, col]))[0][1]
            return await read(ref, box)

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
        self._cells_kept += len(known_text)
        return [_Cell(row=r, col=c, text=(known_text[r, c] if (r, c) in known_text else texts[r, c][0])[:_MAX_VALUE_CHARS],
                      extents=place) for (r, c), place in places.items()]

    async def _action_names(self, bus: str, path: str) -> tuple[str, ...]:
        # Unlocalized names, one call each (GetActions gives localized ones, or none
        # at all from Chromium: measured).
        count = await self._prop(bus, path, _A11Y + "Action", "NActions")
        replies = await asyncio.gather(*(self._call(bus, path, _A11Y + "Action", "GetName", "i", [i])
                                         for i in range(count or 0)))
        return tuple(r[0] for r in replies)

    async def _prop(self, bus: str, path: str, interface: str, name: str) -> Any:
        try:
            return (await self._call(bus, path, _PROPERTIES, "Get", "ss", [interface, name]))[0].value
        except _DBusError:
            return None

    async def _call(self, bus: str, path: str, interface: str, member: str, signature: str = "",
                    body: list[Any] | None = None) -> list[Any]:
        if self._bus is None:
            raise AtspiError("the reader is not open")
        direct = self._direct.get(bus)
        async with self._in_flight:
            if direct is None:
                return await self._call_on(self._bus, bus, path, interface, member, signature, body)
            return await self._direct_call(direct, bus, path, interface, member, signature, body)

    async def _direct_call(self, direct: Any, bus: str, path: str, interface: str, member: str, signature: str,
                           body: list[Any] | None) -> list[Any]:
        try:
            return await self._call_on(direct, bus, path, interface, member, signature, body)
        except _DBusError:
            raise
        except Exception as exc:  # the app's socket went away with the app
            self._drop_direct(bus)
            raise _DBusError(f"{bus}: its connection closed ({exc!r})") from exc

    async def _connect_direct(self, bus: str) -> None:
        from dbus_fast.aio import MessageBus

        try:
            address = (await self._call(bus, _ROOT, _A11Y + "Application", "GetApplicationBusAddress"))[0]
        except _DBusError:
            return  # GTK 4 answers on the bus only
        if not address:
            return
        try:
            self._direct[bus] = await asyncio.wait_for(MessageBus(bus_address=address).connect(), self._timeout)
        except Exception:  # refused, gone, or too slow: the bus will do
            pass

    def _drop_direct(self, bus: str) -> None:
        conn = self._direct.pop(bus, None)
        if conn is not None:
            conn.disconnect()

    async def _within(self, awaitable: Any, what: str) -> Any:
        """``awaitable``, or _AppUnresponsive after the timeout. Applied to a whole app's
        walk (not to each call: a timer per call costs more than the call)."""
        try:
            return await asyncio.wait_for(awaitable, self._timeout)
        except asyncio.TimeoutError:
            raise _AppUnresponsive(f"{what} did not answer within {self._timeout:g} s") from None

    @staticmethod
    async def _call_on(conn: Any, bus: str, path: str, interface: str, member: str, signature: str = "",
                       body: list[Any] | None = None) -> list[Any]:
        from dbus_fast import Message, MessageType

        reply = await conn.call(Message(destination=bus, path=path, interface=interface, member=member,
                                        signature=signature, body=body or []))
        if reply.message_type == MessageType.ERROR:
            raise _DBusError(f"{reply.error_name}: {reply.body[0] if reply.body else ''}")
        return reply.body


class _DBusError(Exception):
    """An app answered a call with an error (most often: the object is gone)."""


async def _none() -> None:
    return None


def main(argv: list[str] | None = None) -> None:
    """``python -m services.atspi``: print what AT-SPI sees in this session (as
    JSON lines, one per node), the walk's figures last. Run it as the session user
    with the session's DBUS_SESSION_BUS_ADDRESS."""
    import argparse
    import json
    import sys

    parser = argparse.ArgumentParser(prog="python -m services.atspi", description=main.__doc__)
    parser.add_argument("--documents", action="store_true", help="also walk Chromium's page content")
    parser.add_argument("--repeat", type=int, default=1, help="walk this many times (timings)")
    args = parser.parse_args(argv)

    async def run() -> None:
        reader = AtspiReader()
        await reader.open()
        try:
            nodes: list[NativeNode] = []
            for _ in range(args.repeat):
                nodes = await reader.snapshot(prune_documents=not args.documents)
                sys.stderr.write(json.dumps(reader.last_walk) + "\n")
            for node in nodes:
                sys.stdout.write(json.dumps(dict(node.__dict__), ensure_ascii=False) + "\n")
        finally:
            await reader.close()

    asyncio.run(run())


if __name__ == "__main__":
    main()
