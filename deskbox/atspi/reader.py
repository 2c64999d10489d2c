"""The D-Bus reader: every call of a round in flight at once (see the package docstring)."""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from functools import partial
from typing import Any

from dbus_fast import Message, MessageType

from .events import EVENT_APPS, SNAPSHOT, Events
from .full import FULL_APP_TIMEOUT_S, FullReads
from .selection import Selection, reads_text
from .sheets import Sheets
from .tree import (
    A11Y,
    ACCESSIBLE,
    APP_TIMEOUT_S,
    BROWSER_TOOLKITS,
    CACHE_PATH,
    DEFUNCT,
    DESKTOP_COORDS,
    MAX_IN_FLIGHT,
    MAX_ROUNDS,
    MAX_VALUE_CHARS,
    OFFSCREEN,
    PROPERTIES,
    REGISTRY,
    ROOT,
    SHOWING,
    VISIBLE,
    WINDOW_COORDS,
    App,
    AppUnresponsive,
    AtspiError,
    Cell,
    DBusError,
    Names,
    NativeNode,
    Needs,
    NoSuchAction,
    Obj,
    Tree,
    action_index,
    obj_from_item,
)


class AtspiReader:
    """Reads every application on the session's accessibility bus, over D-Bus
    directly (dbus-fast, asyncio), with every call of a round in flight at once.

    ``await reader.open()`` first; one snapshot or action at a time."""

    def __init__(self, *, bus_address: str | None = None, app_timeout: float = APP_TIMEOUT_S,
                 keep: bool = True) -> None:
        self._session_address = bus_address or os.environ.get("DBUS_SESSION_BUS_ADDRESS")
        if not self._session_address:
            raise AtspiError("DBUS_SESSION_BUS_ADDRESS is not set: AT-SPI needs the session's D-Bus bus")
        self._timeout = app_timeout
        # Public, for the full read (full.py) and the sheets: ``names`` (role and state
        # names), ``kinds`` and ``action_details`` (what an object never changes, asked
        # once), ``sheets``, ``events``, the calls ``send``, ``call``, ``prop`` and
        # ``props_of``, and ``list_apps``, ``listen``, ``within`` and ``forget_gone_apps``.
        self.names = Names()
        self._bus: Any = None
        # Apps that offer a peer-to-peer socket (atk-bridge: Chromium, GTK 3) are asked
        # there: a call through the bus daemon costs twice as long (113 against 54 us
        # a call, pipelined, measured with Chromium). Bus name -> connection.
        self._direct: dict[str, Any] = {}
        self._apps: dict[str, App] = {}
        # What an object never changes while it lives (its actions; role and interfaces
        # when they do not come from a cache) is asked once.
        self._actions: dict[str, tuple[str, ...]] = {}
        # The full read's: key -> (name, description, key binding) per action.
        self.action_details: dict[str, tuple[tuple[str, str, str], ...]] = {}
        self.kinds: dict[str, tuple[int, frozenset[str]]] = {}  # key -> role, interfaces
        # The full read's: a sheet cell's Value bounds, key -> (min, max, step) as text.
        self.value_bounds: dict[str, tuple[str | None, str | None, str | None]] = {}
        self._toolkits: dict[str, str] = {}  # key -> the toolkit its attributes name
        self._hidden: set[str] = set()  # keys of objects neither showing nor visible last time
        # What the last walk of each app read level by level: asked at once next time.
        self._shapes: dict[str, Needs] = {}
        self._known: dict[str, int] = {}  # key -> pid, as of the latest snapshot
        self.sheets = Sheets(self.call)
        self._sheet_bands: Mapping[str, Sequence[tuple[float, float]]] = {}
        # Calls in flight at once. dbus-fast writes a burst of calls without waiting for
        # the socket to drain and fails with EAGAIN when its buffer fills (seen with
        # LibreOffice: some 1,400 objects); a few hundred in flight lose nothing of
        # the pipelining. The others wait in order (see send).
        self._flying = 0
        self._waiting: deque[tuple[Any, asyncio.Future, Any]] = deque()
        self.last_walk: dict[str, float | int] = {}
        # Apps whose last walk a snapshot may give again while they hold still (see
        # _keepable): bus name -> that walk's nodes and objects visited. Which of them
        # sent AT-SPI events since is ``events``' to say.
        self._last: dict[str, tuple[list[NativeNode], int]] = {}
        # Which app sent AT-SPI events since its last walk (the snapshot's) or read (the
        # full read's): ``deskbox.atspi.events``.
        self.events = Events()
        # The full reads, with each app's last one kept (``keep`` False: none is, every
        # full read reads each app whole: a bench's baseline).
        self._full = FullReads(self, keep=keep)

    async def open(self) -> None:
        from dbus_fast.aio import MessageBus

        try:
            session = await MessageBus(bus_address=self._session_address).connect()
            try:
                reply = await self._call_on(session, "org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress")
            finally:
                session.disconnect()
            self._bus = await MessageBus(bus_address=reply[0]).connect()
        except (OSError, DBusError) as exc:
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
                       sheet_bands: Mapping[str, Sequence[tuple[float, float]]] | None = None,
                       still: Collection[int] = ()) -> list[NativeNode]:
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
        caller watches the pixels). A sheet it does not name is read whole.

        ``still``: processes whose windows the caller saw hold still since the previous
        snapshot. Such an app, if it is one whose AT-SPI events are listened to
        (``EVENT_APPS``) and it sent none since its last walk, and no band of its
        sheets changed, gives that walk again (``last_walk["kept:<name>:<pid>"]``)."""
        self._sheet_bands, self.sheets.kept = dict(sheet_bands or {}), 0
        started = time.perf_counter()
        apps = await self.list_apps()
        chosen = [a for a in apps if pids is None or a.pid in pids]
        await self.listen(chosen)
        kept = {a.bus: self._last[a.bus] for a in chosen if a.pid in still and self._keepable(a)}
        walks = await asyncio.gather(*(_given(kept[a.bus]) if a.bus in kept
                                       else self.within(self._walk(a, prune_documents), a.name) for a in chosen),
                                     return_exceptions=True)
        out: list[NativeNode] = []
        stats: dict[str, float | int] = {"visited": 0, "kept": 0}
        walked: set[int] = set()
        for app, walk in zip(chosen, walks):
            if app.bus in kept and not isinstance(walk, BaseException):
                out += walk[0]
                stats["kept"] += len(walk[0])
                stats[f"kept:{app.name or '?'}:{app.pid}"] = 1
                walked.add(app.pid)
                continue
            if isinstance(walk, BaseException):
                if not isinstance(walk, (AppUnresponsive, DBusError)):
                    raise walk
                continue
            nodes, visited, ms = walk
            if self.events.heard(app.bus):
                self._last[app.bus] = (nodes, visited)
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
        self.forget_gone_apps()
        stats["seconds"] = time.perf_counter() - started
        stats["cells_kept"] = self.sheets.kept
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
            return await self.within(self._act(key, action), key)
        except (DBusError, AppUnresponsive):
            self._known.pop(key, None)
            return False

    async def _act(self, key: str, action: str) -> bool:
        bus, _, rest = key.partition("/")
        path = "/" + rest
        state = await self.call(bus, path, ACCESSIBLE, "GetState")
        lo, hi = state[0]
        if (lo | hi << 32) >> DEFUNCT & 1:
            self._known.pop(key, None)
            return False
        if action == "focus":
            return bool((await self.call(bus, path, A11Y + "Component", "GrabFocus"))[0])
        names = self._actions.get(key)
        if names is None:
            names = self._actions[key] = await self._action_names(bus, path)
        index = action_index(names, action)
        if index is None:
            raise NoSuchAction(key, action, names)
        return bool((await self.call(bus, path, A11Y + "Action", "DoAction", "i", [index]))[0])

    async def full_tree(self, *, app_timeout: float = FULL_APP_TIMEOUT_S) -> dict[str, Any]:
        """Every application's whole tree, every node with all it has: what OSWorld's
        accessibility tree is made of (``deskbox.atspi.full.FullReads``)."""
        return await self._full.tree(app_timeout=app_timeout)

    # -- internals ----------------------------------------------------------------------

    def _keepable(self, app: App) -> bool:
        if not self.events.still(SNAPSHOT, app.bus) or app.bus not in self._last:
            return False
        # Each of its sheets named, with nothing changed in it.
        return all(len(self._sheet_bands.get(key, (None,))) == 0 for key in self.sheets.keys_of(app.bus))

    async def list_apps(self) -> list[App]:
        """The registry's applications, in its order (those that answer)."""
        try:
            refs = await self.within(self.call(REGISTRY, ROOT, ACCESSIBLE, "GetChildren"), "the registry")
        except (DBusError, AppUnresponsive) as exc:
            raise AtspiError(f"the accessibility registry did not list the apps: {exc}") from exc
        buses = [bus for bus, _ in refs[0]]
        apps = await asyncio.gather(*(self.within(self._app(bus), bus) for bus in buses), return_exceptions=True)
        self._apps = {a.bus: a for a in apps if isinstance(a, App)}
        return [a for a in apps if isinstance(a, App)]

    async def listen(self, apps: Collection[App]) -> None:
        """Listen to the AT-SPI events of those of ``apps`` whose events tell what
        changed (``EVENT_APPS``): ``events`` says which sent one since."""
        if self._bus is not None:
            await self.events.listen_to(self._bus, self.call, [a.bus for a in apps if a.name in EVENT_APPS])

    def forget_gone_apps(self) -> None:
        """Drop what is kept of apps no longer on the bus (their connections, caches)."""
        live = set(self._apps)
        for bus in [b for b in self._direct if b not in live]:
            self._drop_direct(bus)
        self._shapes = {b: v for b, v in self._shapes.items() if b in live}
        for name in ("_actions", "action_details", "kinds", "_toolkits", "value_bounds"):
            setattr(self, name, {k: v for k, v in getattr(self, name).items() if k.split("/", 1)[0] in live})
        self.sheets.forget_gone_apps(live)
        self._hidden = {k for k in self._hidden if k.split("/", 1)[0] in live}
        self._last = {b: v for b, v in self._last.items() if b in live}
        self._full.forget_gone_apps(live)
        self.events.forget_gone_apps(live)

    async def _app(self, bus: str) -> App:
        app = self._apps.get(bus)
        if app is not None:
            return app
        pid = (await self.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                "GetConnectionUnixProcessID", "s", [bus]))[0]
        name, toolkit, version = await asyncio.gather(
            self.prop(bus, ROOT, ACCESSIBLE, "Name"),
            self.prop(bus, ROOT, A11Y + "Application", "ToolkitName"),
            self.prop(bus, ROOT, A11Y + "Application", "Version"),
        )
        toolkit = (toolkit or "").lower()
        browser = toolkit in BROWSER_TOOLKITS
        await self._connect_direct(bus)
        # A browser's cache, once some client turns AT-SPI events on, holds every page
        # node too (1,382 objects and 27 ms for a 1,000-element page, measured) while
        # only its own UI is wanted here: it is walked level by level, pages pruned.
        # LibreOffice's holds every object it ever made (the cells of a sheet, the
        # items of every menu: 1,888 objects, 160-270 ms a call, measured) and works
        # out each one's states when asked: it is walked level by level too, closed
        # menus left unopened (110-240 ms).
        return App(bus=bus, pid=pid, name=name or "", gtk4=toolkit == "gtk" and (version or "").startswith("4."),
                    browser=browser, cache=not browser and name != "soffice", get_all=toolkit != "qt",
                    desktop_coords=toolkit == "qt", prefetch=name != "soffice")

    async def _walk(self, app: App, prune_documents: bool) -> tuple[list[NativeNode], int, float]:
        t0 = time.perf_counter()
        # (An event while it is read marks it again: the next snapshot walks it.)
        self.events.walked(SNAPSHOT, app.bus)
        self._last.pop(app.bus, None)
        items: list[Any] = []
        if app.cache:
            try:
                items = (await self.call(app.bus, CACHE_PATH, A11Y + "Cache", "GetItems"))[0]
            except DBusError:
                # GTK 3's atk-bridge offers its cache only once some client has turned
                # AT-SPI events on, and an app that has just started may not have it yet
                # (measured): this time its tree is read level by level. Asked again
                # next time: a failed call costs a fraction of a millisecond.
                pass
        tree = Tree({o.path: o for o in map(obj_from_item, items)})
        extents: dict[str, tuple[int, int, int, int] | None] = {}
        values: dict[str, str | None] = {}
        toolkits = {"/" + k.partition("/")[2]: v for k, v in self._toolkits.items() if k.startswith(app.bus + "/")}
        sheets: dict[str, list[Cell]] = {}
        actions = {"/" + k.partition("/")[2]: v for k, v in self._actions.items() if k.startswith(app.bus + "/")}
        shape = self._shapes.get(app.bus) if not items and app.prefetch else None
        if shape is not None:
            # Read level by level, a tree as deep as Chromium's UI (eleven levels) costs
            # eleven rounds. What the last walk read is most likely what this one needs:
            # it is asked at once, and the passes below fetch only what changed.
            await self._fetch(app, tree, Needs(children=set(shape.children), objects=set(shape.objects),
                                                extents=set(shape.extents)), extents, actions, values, toolkits, sheets)
        settled: dict = {}
        for _ in range(MAX_ROUNDS):
            selection = Selection(app, tree, self.names, prune_documents, extents, actions, values, toolkits,
                                   sheets, settled)
            nodes = selection.run()
            needs = selection.needs
            if not needs:
                if not items:
                    self._shapes[app.bus] = Needs(children=set(tree.asked), objects=set(tree.objects),
                                                   extents={p for p, box in extents.items() if box is not None})
                return nodes, selection.visited, round((time.perf_counter() - t0) * 1000, 2)
            await self._fetch(app, tree, needs, extents, actions, values, toolkits, sheets)
        raise AppUnresponsive(f"{app.name}: its tree kept changing while it was read")

    async def _fetch(self, app: App, tree: Tree, needs: Needs, extents: dict, actions: dict, values: dict,
                     toolkits: dict, sheets: dict) -> None:
        """One round: everything ``needs`` names, asked at once."""
        bus = app.bus

        async def children(path: str) -> None:
            refs = (await self.call(bus, path, ACCESSIBLE, "GetChildren"))[0]
            tree.asked[path] = [p for _, p in refs]
            # (Objects this round asks for anyway are not asked twice.)
            await asyncio.gather(*(obj(kid) for kid in tree.asked[path]
                                   if kid not in tree.objects and kid not in needs.objects))

        async def obj(path: str) -> None:
            key = bus + path
            static = self.kinds.get(key)
            props: Any = None
            if static is None:
                props, state, role, ifaces = await asyncio.gather(
                    self.props_of(app, path),
                    self.call(bus, path, ACCESSIBLE, "GetState"),
                    self.call(bus, path, ACCESSIBLE, "GetRole"),
                    self.call(bus, path, ACCESSIBLE, "GetInterfaces"),
                )
                static = self.kinds[key] = (role[0], frozenset(i.removeprefix(A11Y) for i in ifaces[0]))
            elif key in self._hidden and path != ROOT:
                # Hidden last time (most of a browser's UI: 98 of its 139 objects): its
                # state alone says whether it still is, and then nothing else is read.
                # (Not the application itself: never showing, its children are the apps'
                # frames, counted in its properties.)
                state = await self.call(bus, path, ACCESSIBLE, "GetState")
            else:
                props, state = await asyncio.gather(
                    self.props_of(app, path),
                    self.call(bus, path, ACCESSIBLE, "GetState"),
                )
            lo, hi = state[0]
            states = lo | hi << 32
            shown = bool((states >> SHOWING | states >> VISIBLE) & 1)
            # (Calc's Input line says it is defunct, and nothing else: its name tells.)
            calc_line = app.name == "soffice" and states == 1 << DEFUNCT
            if props is None and (shown or calc_line):
                props = await self.props_of(app, path)
            if shown:
                self._hidden.discard(key)
            else:
                self._hidden.add(key)
            p = {k: v.value for k, v in props[0].items()} if props is not None else {}
            parent_bus, parent = p.get("Parent", ("", ""))
            tree.objects[path] = Obj(
                path=path, parent=parent if parent_bus == bus else "", index=-1, child_count=p.get("ChildCount", 0),
                interfaces=static[1], name=p.get("Name", ""), role=static[0], description=p.get("Description", ""),
                states=states)

        coords = DESKTOP_COORDS if app.desktop_coords else WINDOW_COORDS

        async def box(path: str) -> None:
            x, y, w, h = (await self.call(bus, path, A11Y + "Component", "GetExtents", "u", [coords]))[0]
            extents[path] = None if x == OFFSCREEN or y == OFFSCREEN else (x, y, w, h)

        async def acts(path: str) -> None:
            names = await self._action_names(bus, path)
            actions[path] = self._actions[bus + path] = names

        async def value(path: str) -> None:
            o = tree.objects[path]
            role = self.names.role(o.role)
            if reads_text(o, role):
                text = (await self.call(bus, path, A11Y + "Text", "GetText", "ii", [0, app.text_end]))[0]
                values[path] = text[:MAX_VALUE_CHARS]
            else:
                number = await self.prop(bus, path, A11Y + "Value", "CurrentValue")
                values[path] = None if number is None else f"{number:g}"

        async def toolkit(path: str) -> None:
            attributes = (await self.call(bus, path, ACCESSIBLE, "GetAttributes"))[0]
            toolkits[path] = self._toolkits[bus + path] = attributes.get("toolkit", "")

        async def sheet(path: str) -> None:
            sheets[path] = await self.sheets.read(bus, path, extents.get(path), self._sheet_bands.get(bus + path))

        jobs = [*map(children, needs.children), *map(obj, needs.objects), *map(box, needs.extents),
                *map(acts, needs.actions), *map(value, needs.values), *map(toolkit, needs.toolkits),
                *map(sheet, needs.sheets)]
        results = await asyncio.gather(*jobs, return_exceptions=True)
        for result in results:
            if isinstance(result, AppUnresponsive):
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

    async def props_of(self, app: App, path: str) -> list[Any]:
        """Properties.GetAll's reply for the Accessible interface (asked one by one of
        an app that cannot answer GetAll)."""
        if app.get_all:
            return await self.call(app.bus, path, PROPERTIES, "GetAll", "s", [ACCESSIBLE])
        names = ("Name", "Description", "ChildCount", "Parent")
        replies = await asyncio.gather(*(self.call(app.bus, path, PROPERTIES, "Get", "ss", [ACCESSIBLE, n])
                                         for n in names))
        return [{n: r[0] for n, r in zip(names, replies)}]

    async def _action_names(self, bus: str, path: str) -> tuple[str, ...]:
        # Unlocalized names, one call each (GetActions gives localized ones, or none
        # at all from Chromium: measured).
        count = await self.prop(bus, path, A11Y + "Action", "NActions")
        replies = await asyncio.gather(*(self.call(bus, path, A11Y + "Action", "GetName", "i", [i])
                                         for i in range(count or 0)))
        return tuple(r[0] for r in replies)

    async def prop(self, bus: str, path: str, interface: str, name: str) -> Any:
        try:
            return (await self.call(bus, path, PROPERTIES, "Get", "ss", [interface, name]))[0].value
        except DBusError:
            return None

    async def call(self, bus: str, path: str, interface: str, member: str, signature: str = "",
                    body: list[Any] | None = None) -> list[Any]:
        return await self.send(bus, path, interface, member, signature, body)

    def send(self, bus: str, path: str, interface: str, member: str, signature: str = "",
              body: list[Any] | None = None) -> asyncio.Future:
        """One call, as a future of its reply's body (``DBusError`` for an error reply
        or a lost connection). A future rather than a coroutine: gathering thousands of
        them costs no task each, and the reply comes through a callback (dbus-fast's
        coroutine API, a semaphore and a task a call cost twice the CPU: 60 against
        27-33 us a call, measured with Chromium). Sent on the app's own socket when it
        has one, on the accessibility bus otherwise."""
        if self._bus is None:
            raise AtspiError("the reader is not open")
        future = asyncio.get_running_loop().create_future()
        msg = Message(destination=bus, path=path, interface=interface, member=member, signature=signature,
                      body=body or [])
        self._waiting.append((self._direct.get(bus), future, msg))
        self._pump()
        return future

    def _pump(self) -> None:
        while self._waiting and self._flying < MAX_IN_FLIGHT:
            direct, future, msg = self._waiting.popleft()
            if future.done():  # cancelled (an app's walk timed out)
                continue
            conn = direct if direct is not None and self._direct.get(msg.destination) is direct else self._bus
            self._flying += 1
            done = partial(self._replied, future, msg.destination, conn if conn is direct else None)
            try:
                conn._call(msg, done)  # (dbus-fast's callback form of MessageBus.call)
            except Exception as exc:  # the connection is closed
                done(None, exc)

    def _replied(self, future: asyncio.Future, bus: str, direct: Any, reply: Any, err: Exception | None) -> None:
        self._flying -= 1
        if not future.done():
            if err is not None or reply is None:
                if direct is not None and self._direct.get(bus) is direct:
                    self._drop_direct(bus)  # the app's socket went away with the app
                future.set_exception(DBusError(f"{bus}: its connection closed ({err!r})"))
            elif reply.message_type == MessageType.ERROR:
                future.set_exception(DBusError(f"{reply.error_name}: {reply.body[0] if reply.body else ''}"))
            else:
                future.set_result(reply.body)
        self._pump()

    async def _connect_direct(self, bus: str) -> None:
        from dbus_fast.aio import MessageBus

        try:
            address = (await self.call(bus, ROOT, A11Y + "Application", "GetApplicationBusAddress"))[0]
        except DBusError:
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

    async def within(self, awaitable: Any, what: str, timeout: float | None = None) -> Any:
        """``awaitable``, or AppUnresponsive after the timeout. Applied to a whole app's
        walk (not to each call: a timer per call costs more than the call)."""
        timeout = self._timeout if timeout is None else timeout
        try:
            return await asyncio.wait_for(awaitable, timeout)
        except asyncio.TimeoutError:
            raise AppUnresponsive(f"{what} did not answer within {timeout:g} s") from None

    @staticmethod
    async def _call_on(conn: Any, bus: str, path: str, interface: str, member: str, signature: str = "",
                       body: list[Any] | None = None) -> list[Any]:
        from dbus_fast import Message, MessageType

        reply = await conn.call(Message(destination=bus, path=path, interface=interface, member=member,
                                        signature=signature, body=body or []))
        if reply.message_type == MessageType.ERROR:
            raise DBusError(f"{reply.error_name}: {reply.body[0] if reply.body else ''}")
        return reply.body


async def _given(walk: tuple[list[NativeNode], int]) -> tuple[list[NativeNode], int, float]:
    return walk[0], walk[1], 0.0
