"""The full read: every node of an application's tree with all it has, the material of
OSWorld's accessibility tree (``deskbox.osworld.accessibility`` renders it as XML).

What it owns: walking one app's whole tree (``_FullRead.app``) through the reader's
connections and caches, the shape of a node, and each app's last read, kept to be given
again or taken from (``FullReads``, which ``AtspiReader.full_tree`` hands over to). It
must not know about XML, windows or display pixels: a node's box is AT-SPI's WINDOW
coordinates, as the snapshot's are.

A node is a dict: ``role`` (libatspi's name: ``push button``), ``name``, ``states``
(OSWorld's spelling: ``multi_line``) and ``children`` always; ``attrs`` (object
attributes), ``extents`` (for a node both visible and showing, and on screen),
``text``, ``value`` (``value``, ``min``, ``max``, ``step``: a node with the Value
interface), ``actions`` (name -> [description, key binding]), ``image`` and
``selection`` (true: it has those interfaces) when it has them (the rest is left out
to keep the worker's reply short); an application also has ``pid``.

Unlike the snapshot nothing is pruned, and every node is read, as OSWorld's own
server walks (depth up to ``MAX_DEPTH``, at most ``MAX_WIDTH`` children a node), with
two exceptions it also makes: a spreadsheet's table lists only its visible cells,
row by row (it reports every cell of the sheet), and the walk stops at ``MAX_NODES``.

How it is fast: a node's calls go out together, and its children are read while its
box, text, value and actions are still on their way, so a round trip is paid per tree
level rather than per call. An app's cache (``Cache.GetItems``) gives the name, role,
states and child count of every object it lists in one call, read when asked; a
node it lists then costs its attributes, box, text, value and actions, and its
children (asked, but of GTK 4, whose cache is whole). An object's role, interfaces and
actions are asked once while it lives (an action's key binding may change with no event
from it: LibreOffice's menus change some as the document's mode does, and a reader
that lives long then shows the one it first read).

What it takes from the app's last read (``Listing``, for an app whose AT-SPI events are
listened to, ``deskbox.atspi.events``): given the objects that sent an event since that
read began, a closed menu none of them lies in is that read's again. LibreOffice's
menus are two thirds of its tree (1,600 of a Calc window's 2,440 nodes), and they are
GTK's, which sends an event from each item it renames, enables or disables, and
``showing`` from a menu that opens. Nothing else is taken: what shows has boxes, and a
box may move with no event from it (its parent laid out anew); and LibreOffice's own
objects do not all tell (the formula bar's paragraph, which shows no ``showing``,
changed its text with no event from it: measured, against a read from scratch after
each of 17 actions). Below an object shown or hidden since, everything is read again;
any other object that sent an event (LibreOffice's app root at a click, for a window it
made and dropped; the frame, made active) is read again, and each of its children may
still be taken. An object of which some call failed is read again whole next time,
and its app's read is not given again whole: LibreOffice, making a sheet's cells anew,
answers their states and not their boxes or texts for a moment, and no later event
would mend such a read. (The reader asks again the role, interfaces and actions of an object
that sent an event.)"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..geometry import frame_relative
from .events import FULL
from .sheets import Sheets
from .tree import (
    A11Y,
    ACCESSIBLE,
    CACHE_PATH,
    DESKTOP_COORDS,
    MANAGES_DESCENDANTS,
    OFFSCREEN,
    PROPERTIES,
    ROOT,
    SHOWING,
    VISIBLE,
    WINDOW_COORDS,
    App,
    AppUnresponsive,
    DBusError,
    Obj,
    Tree,
    interface_set,
    obj_from_item,
)


class ReaderCalls(Protocol):
    """What a full read asks of the reader that owns it (``reader.AtspiReader``): its
    D-Bus calls, what it keeps of every object's actions, and its sheets' cells."""

    action_details: dict[str, tuple[tuple[str, str, str], ...]]
    sheets: Sheets

    def send(self, bus: str, path: str, interface: str, member: str, signature: str = "",
             body: list[Any] | None = None) -> asyncio.Future: ...

    async def call(self, bus: str, path: str, interface: str, member: str, signature: str = "",
                   body: list[Any] | None = None) -> list[Any]: ...

    async def prop(self, bus: str, path: str, interface: str, name: str) -> Any: ...

MAX_DEPTH = 50
MAX_WIDTH = 1024
MAX_NODES = 50_000
# An app's whole tree is read at most this long (LibreOffice with a sheet on screen
# takes about a second on a quiet machine).
FULL_APP_TIMEOUT_S = 10.0
# What a closed menu is made of: the subtrees a read may take from the last (see the
# module docstring).
MENU_ROLES = frozenset({"menu", "menu item", "check menu item", "radio menu item", "separator",
                         "tearoff menu item"})
_VALUE_KEYS = (("value", "CurrentValue"), ("min", "MinimumValue"), ("max", "MaximumValue"),
               ("step", "MinimumIncrement"))


@dataclass
class Listing:
    """An app's full read by object: its tree, each object's node and its children's
    paths, and each object's parent (all of them objects the read listed)."""

    tree: dict[str, Any]
    nodes: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = field(default_factory=dict)
    parents: dict[str, str] = field(default_factory=dict)
    # Objects of which some call failed: the read is not given again whole, and they
    # are read again whole, as if they had been shown or hidden.
    failed: frozenset[str] = frozenset()


@dataclass
class _Takeable:
    """What a read may take of an app's last read: its listing, the objects whose
    subtrees may have changed since it began (read again, whole), and the objects that
    sent an event and their ancestors (read again, each child possibly taken)."""

    last: Listing
    stirred: frozenset[str]
    tainted: set[str]


class FullReads:
    """A reader's full reads, each app's last read kept (``keep``) to be given again
    while none of its objects sent an event, or to take its closed menus from."""

    def __init__(self, reader: ReaderCalls, *, keep: bool = True) -> None:
        self.r = reader
        self.keep = keep
        self.last: dict[str, Listing] = {}  # bus name -> its last read, by object

    async def tree(self, *, app_timeout: float = FULL_APP_TIMEOUT_S) -> dict[str, Any]:
        """Every application's whole tree. An app that does not answer within
        ``app_timeout`` is left out and named in ``left_out``.

        An app whose AT-SPI events are listened to (``EVENT_APPS``) gives its last read
        again while none of the objects that read listed sent an event since it began
        (``events``): named in ``walk["kept"]``. Its app's ``pid`` is as it was then.
        Read again, such an app takes its closed menus from its last read while they
        sent no event (see the module docstring): ``walk["taken"]`` counts those nodes."""
        started = time.perf_counter()
        r = self.r
        apps = await r.list_apps()
        await r.listen(apps)
        kept = {a.bus: last for a in apps if (last := self.last.get(a.bus)) is not None and not last.failed
                and r.events.still(FULL, a.bus, last.nodes.keys())}
        read = _FullRead(r)
        trees = await asyncio.gather(*(_given(kept[a.bus].tree) if a.bus in kept
                                       else r.within(self._app(read, a), a.name, app_timeout) for a in apps),
                                     return_exceptions=True)
        out, left_out, ms, kept_names, taken = [], [], {}, [], {}
        nodes = read.count
        for app, tree in zip(apps, trees):
            name = f"{app.name or '?'}:{app.pid}"
            if isinstance(tree, BaseException):
                if not isinstance(tree, (AppUnresponsive, DBusError)):
                    raise tree
                left_out.append(f"{app.name or '?'} (pid {app.pid}): {tree}")
                continue
            out.append(tree)
            if app.bus in kept:
                kept_names.append(name)
                nodes += len(kept[app.bus].nodes)
            else:
                ms[name] = read.ms.get(app.bus, 0.0)
                if read.taken.get(app.bus):
                    taken[name] = read.taken[app.bus]
        r.forget_gone_apps()
        return {"apps": out, "nodes": nodes, "left_out": left_out,
                "walk": {"seconds": time.perf_counter() - started, "app_ms": ms, "kept": kept_names,
                         "taken": taken}}

    def forget_gone_apps(self, live: Collection[str]) -> None:
        self.last = {b: v for b, v in self.last.items() if b in live}

    async def _app(self, read: _FullRead, app: App) -> dict[str, Any]:
        # What its objects sent since its last read says what of it may be taken (and
        # an event while it is read marks it again: the next read walks it).
        r = self.r
        last, stirred = self.last.pop(app.bus, None), r.events.stirred(FULL, app.bus)
        r.events.walked(FULL, app.bus)
        if stirred is not None:
            # What is asked once of an object (role, interfaces, actions) is asked again
            # of one that sent an event: a menu item renamed has a new key binding.
            for path in stirred:
                r.kinds.pop(app.bus + path, None)
                r.action_details.pop(app.bus + path, None)
            if last is not None:
                read.may_take(app.bus, last, stirred)
        tree = await read.app(app)
        if self.keep and r.events.heard(app.bus):
            self.last[app.bus] = read.listings[app.bus]
        return tree


class _FullRead:
    """One full read of the session's apps; ``count`` nodes read, ``ms`` per app bus,
    ``listings`` each app's read by object, ``taken`` nodes taken per app bus."""

    def __init__(self, reader: ReaderCalls) -> None:
        self.r = reader
        self.count = 0
        self.ms: dict[str, float] = {}
        self.listings: dict[str, Listing] = {}
        self.taken: dict[str, int] = {}
        # Per app bus, the objects of which some call failed (gone, or answering half
        # their calls while LibreOffice makes its cells anew): ``Listing.failed``.
        self.failed: dict[str, set[str]] = {}
        self._takeable: dict[str, _Takeable] = {}

    def may_take(self, bus: str, last: Listing, stirred: Mapping[str, bool]) -> None:
        """Read that app taking what it can of ``last``, given the objects that sent an
        event since ``last`` began, each with whether what lies below it may have
        changed too (True: its subtree is read again whole; False: it is read again,
        and each of its children may still be taken)."""
        stirred = {**stirred, **dict.fromkeys(last.failed, True)}
        tainted: set[str] = set()
        for path in stirred:
            while path in last.nodes and path not in tainted:
                tainted.add(path)
                path = last.parents.get(path, "")
        self._takeable[bus] = _Takeable(last, frozenset(p for p, itself in stirred.items() if itself), tainted)

    async def app(self, app: App) -> dict[str, Any]:
        t0 = time.perf_counter()
        items: list[Any] = []
        if app.cache or app.browser:
            try:
                items = (await self.r.call(app.bus, CACHE_PATH, A11Y + "Cache", "GetItems"))[0]
            except DBusError:
                pass  # no cache (yet): every object is asked
        tree = Tree({o.path: o for o in map(obj_from_item, items)})
        listing = self.listings[app.bus] = Listing(tree={})
        self.taken[app.bus] = 0
        node = listing.tree = await self.node(app, tree, ROOT, 1, in_sheet=False, origin=None)
        listing.failed = frozenset(self.failed.get(app.bus, ()))
        node["pid"] = app.pid
        self.ms[app.bus] = round((time.perf_counter() - t0) * 1000, 2)
        return node

    def _take(self, bus: str, path: str, fresh: bool) -> dict[str, Any] | None:
        """The last read's node of that object and its subtree, when it may be taken."""
        takeable = self._takeable.get(bus)
        if fresh or takeable is None or path in takeable.tainted:
            return None
        found = takeable.last.nodes.get(path)
        if found is None or found[0]["role"] not in MENU_ROLES or "showing" in found[0]["states"]:
            return None
        listing, last, level = self.listings[bus], takeable.last, [path]
        while level:
            below = []
            for p in level:
                node, children = listing.nodes[p] = last.nodes[p]
                listing.parents.update((c, p) for c in children)
                below += children
            self.count += len(level)
            self.taken[bus] += len(level)
            level = below
        return found[0]

    async def node(self, app: App, tree: Tree, path: str, depth: int, *, in_sheet: bool,
                   origin: tuple[int, int] | None, fresh: bool = False) -> dict[str, Any]:
        """``fresh``: nothing of this subtree is taken from the last read."""
        r, bus = self.r, app.bus
        takeable = self._takeable.get(bus)
        fresh = fresh or (takeable is not None and path in takeable.stirred)
        taken = self._take(bus, path, fresh)
        if taken is not None:
            return taken
        self.count += 1
        out: dict[str, Any] = {"role": "", "name": "", "states": [], "children": []}
        listing = self.listings[bus]
        listing.nodes[path] = (out, ())
        obj = tree.objects.get(path)
        # (Futures, not coroutines: thousands of calls gathered cost no task each.)
        attrs = r.send(bus, path, ACCESSIBLE, "GetAttributes")
        try:
            if obj is None:
                static = r.kinds.get(bus + path)
                asked = [r.send(bus, path, ACCESSIBLE, "GetState"),
                         r.send(bus, path, PROPERTIES, "GetAll", "s", [ACCESSIBLE]) if app.get_all
                         else asyncio.ensure_future(r.props_of(app, path))]
                if static is None:
                    asked += [r.send(bus, path, ACCESSIBLE, "GetRole"), r.send(bus, path, ACCESSIBLE, "GetInterfaces")]
                found = await asyncio.gather(*asked, return_exceptions=True)
                for result in found:
                    if isinstance(result, BaseException):
                        raise result
                if static is None:
                    static = r.kinds[bus + path] = (found[2][0], interface_set(found[3][0]))
                obj = _obj_from_replies(bus, path, found[1], found[0], static)
        except DBusError:
            attrs.cancel()
            self.failed.setdefault(bus, set()).add(path)
            return out  # gone while it was read
        names = r.names
        out["role"] = names.role(obj.role)
        out["name"] = obj.name
        out["states"] = names.state_keys_of(obj.states)
        for key, iface in (("image", "Image"), ("selection", "Selection")):
            if iface in obj.interfaces:
                out[key] = True
        in_sheet = in_sheet or out["role"] == "document spreadsheet"
        shown = obj.has(SHOWING) and obj.has(VISIBLE) and "Component" in obj.interfaces
        coords = DESKTOP_COORDS if app.desktop_coords else WINDOW_COORDS
        box = r.send(bus, path, A11Y + "Component", "GetExtents", "u", [coords]) if shown else None
        text = r.send(bus, path, A11Y + "Text", "GetText", "ii", [0, app.text_end]) if "Text" in obj.interfaces else None
        # Four Gets, never one GetAll: Properties.GetAll on the Value interface aborts
        # Chromium (at-spi2-atk writes a variant it has no type for; libdbus aborts the
        # process: measured with Debian's Chromium, and the session lost its browser).
        # A sheet cell's bounds never change while it lives (and a sheet shows hundreds of
        # cells, re-read at every step): asked once per cell, then only its value.
        bounds = r.value_bounds.get(bus + path) if in_sheet and out["role"] == "table cell" else None
        values = ([r.send(bus, path, PROPERTIES, "Get", "ss", [A11Y + "Value", name])
                   for _, name in (_VALUE_KEYS[:1] if bounds is not None else _VALUE_KEYS)]
                  if "Value" in obj.interfaces else [])
        actions: Any = None
        if "Action" in obj.interfaces:
            actions = r.action_details.get(bus + path) or asyncio.ensure_future(self._actions(bus, path))
        if app.desktop_coords and depth == 2:
            # A frame of an app whose boxes are DESKTOP coordinates (Qt): its box is the
            # origin of its descendants' (as in the snapshot), so it is read first.
            frame = _box(await self._got(bus, path, box))
            origin = frame[:2] if frame else None
        if depth < MAX_DEPTH:
            sheet = in_sheet and out["role"] == "table" and obj.has(MANAGES_DESCENDANTS)
            places: list[tuple[int, int]] = []
            if sheet:
                places, paths = await self._cells(app, path, _box(await self._got(bus, path, box)))
            else:
                paths = await self._children(app, tree, obj)
            paths = paths[:max(0, MAX_NODES - self.count)]
            listing.nodes[path] = (out, tuple(paths))
            listing.parents.update((p, path) for p in paths)
            out["children"] = list(await asyncio.gather(*(
                self.node(app, tree, p, depth + 1, in_sheet=in_sheet, origin=origin, fresh=fresh) for p in paths)))
            if sheet:
                await self._cells_gone(app, tree, path, depth, places, paths, out["children"])
        # Awaited one by one: by now most have their answer, and a future that has costs
        # nothing to await (a gather would schedule a callback for each).
        found = await self._got(bus, path, attrs)
        if found is not None and found[0]:
            out["attrs"] = {str(k): str(v) for k, v in found[0].items() if k}
        extents = _box(await self._got(bus, path, box))
        if extents is not None:
            if origin is not None:
                extents = frame_relative(extents, origin)
            out["extents"] = list(extents)
        found = await self._got(bus, path, text)
        if found is not None and found[0]:
            out["text"] = found[0]
        if values:
            out["value"] = {}
            for (key, _), future in zip(_VALUE_KEYS, values):
                found = await self._got(bus, path, future)
                if found is not None:
                    out["value"][key] = str(found[0].value)
            if bounds is not None:
                out["value"].update((k, v) for k, v in zip(("min", "max", "step"), bounds) if v is not None)
            elif in_sheet and out["role"] == "table cell" and len(r.value_bounds) < MAX_NODES:
                v = out["value"]
                r.value_bounds[bus + path] = (v.get("min"), v.get("max"), v.get("step"))
        if isinstance(actions, asyncio.Future):
            actions = await self._got(bus, path, actions)
        if actions:
            out["actions"] = {name: [desc, kb] for name, desc, kb in actions}
        return out

    async def _got(self, bus: str, path: str, future: asyncio.Future | None) -> Any:
        """A call's reply, or None when it was not made or the object answered an error
        (then named in ``failed``)."""
        if future is None:
            return None
        try:
            return await future
        except DBusError:
            self.failed.setdefault(bus, set()).add(path)
            return None

    async def _children(self, app: App, tree: Tree, obj: Obj) -> list[str]:
        # An object's children are asked of it: a cache's lists are not the truth.
        # atk-bridge's (Chromium, GTK 3) lists an object only once it was handed to some
        # client, and keeps those it handed out after they left the tree: after a
        # navigation the document's parent still lists the old page there, with the
        # same number of children (measured with Chromium). GTK 4.8's lists a few
        # objects, the app's root among them with no children. Only a count read live
        # is believed when it says none: GetAll's, and atk-bridge's cache's.
        if obj.child_count <= 0 and not (app.gtk4 and obj.path in tree.objects):
            return []
        try:
            if obj.child_count <= MAX_WIDTH:
                refs = (await self.r.send(app.bus, obj.path, ACCESSIBLE, "GetChildren"))[0]
                return [p for b, p in refs if b == app.bus][:MAX_WIDTH]
            refs = await asyncio.gather(*(self.r.send(app.bus, obj.path, ACCESSIBLE, "GetChildAtIndex", "i", [i])
                                          for i in range(MAX_WIDTH)), return_exceptions=True)
            return [r[0][1] for r in refs if not isinstance(r, BaseException) and r[0][0] == app.bus]
        except DBusError:
            return []

    async def _cells(self, app: App, path: str,
                     box: tuple[int, int, int, int] | None) -> tuple[list[tuple[int, int]], list[str]]:
        """A sheet's visible cells, row by row: their places and objects."""
        try:
            visible = await self.r.sheets.visible(app.bus, path, box)
            if visible is None:
                return [], []
            rows, cols = visible
            places = [(r, c) for r in rows for c in cols][:max(0, MAX_NODES - self.count)]
            return places, list(await asyncio.gather(*(self.r.sheets.cell_ref(app.bus, path, r, c) for r, c in places)))
        except DBusError:
            return [], []

    async def _cells_gone(self, app: App, tree: Tree, path: str, depth: int, places: list[tuple[int, int]],
                          paths: list[str], cells: list[dict[str, Any]]) -> None:
        """A cell whose object, kept from an earlier read, was gone or half gone (the
        sheet's objects made anew: it answers its states and fails its box and text, or
        is ``defunct``) is asked for afresh and read again, in place."""
        failed = self.failed.get(app.bus, set())
        gone = [i for i, cell in enumerate(cells)
                if not cell["role"] or paths[i] in failed or "defunct" in cell["states"]]
        if not gone:
            return
        failed.difference_update(paths[i] for i in gone)  # (each is read again below)
        refs = await asyncio.gather(*(self.r.sheets.cell_ref(app.bus, path, *places[i], fresh=True) for i in gone),
                                    return_exceptions=True)
        again = [(i, ref) for i, ref in zip(gone, refs) if isinstance(ref, str)]
        read = await asyncio.gather(*(self.node(app, tree, ref, depth + 1, in_sheet=True, origin=None, fresh=True)
                                      for _, ref in again))
        for (i, ref), cell in zip(again, read):
            paths[i], cells[i] = ref, cell
        listing = self.listings[app.bus]
        listing.nodes[path] = (listing.nodes[path][0], tuple(paths))
        listing.parents.update((p, path) for p in paths)

    async def _actions(self, bus: str, path: str) -> tuple[tuple[str, str, str], ...]:
        key = bus + path
        found = self.r.action_details.get(key)
        if found is None:
            action = A11Y + "Action"
            count = await self.r.prop(bus, path, action, "NActions") or 0
            replies = await asyncio.gather(*(self.r.send(bus, path, action, member, "i", [i])
                                             for i in range(count)
                                             for member in ("GetName", "GetDescription", "GetKeyBinding")))
            texts = [r[0] or "" for r in replies]
            found = self.r.action_details[key] = tuple(zip(texts[0::3], texts[1::3], texts[2::3]))
        return found




async def _given(tree: dict[str, Any]) -> dict[str, Any]:
    return tree


def _box(reply: Any) -> tuple[int, int, int, int] | None:
    """A GetExtents reply as a box (None: an error, no call, or off screen)."""
    if reply is None:
        return None
    x, y, w, h = reply[0]
    return None if x == OFFSCREEN or y == OFFSCREEN else (x, y, w, h)


def _obj_from_replies(bus: str, path: str, props: list[Any], state: list[Any],
                      static: tuple[int, frozenset[str]]) -> Obj:
    p = {k: getattr(v, "value", v) for k, v in props[0].items()}
    lo, hi = state[0]
    parent_bus, parent = p.get("Parent", ("", ""))
    return Obj(path=path, parent=parent if parent_bus == bus else "", index=-1, child_count=p.get("ChildCount", 0),
                interfaces=static[1], name=p.get("Name", ""), role=static[0], description=p.get("Description", ""),
                states=lo | hi << 32)
