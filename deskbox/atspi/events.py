"""Which apps changed since their last walk, as their AT-SPI events tell.

What it owns: registering event listeners with the registry, a match rule per app it
listens to, and the set of those apps that sent an event since they were last walked.
It must not know what a walk keeps: the reader asks ``still(bus)``.

Events are registered only once an app of ``EVENT_APPS`` runs: every app atk-bridge
serves then sends them to the bus, and the bus passes on only those of the apps
listened to. Measured (Sway headless, Chromium on a 1,000-element page, Calc,
gnome-calculator): idle, none sent any in 8 s; two values typed into Calc brought
1,262 from LibreOffice (it rebuilds its toolbars) and a navigation 18 from Chromium.
A page rewriting 50 texts every 100 ms made Chromium send 580 a second, for no
measurable CPU: its processes used 0.225 s a second without listeners, 0.229 with.
What LibreOffice sends for one value typed into a Calc cell and Return: 883 events, most
from objects no walk has seen, because it rebuilds its sidebar's Properties panel
(children removed and added, the old ones defunct) and swaps the formula bar's buttons;
so an edit costs a whole walk of it, not of the cell's row alone.

Two readers of the events keep their own account, each told apart by name:
``SNAPSHOT`` (the scene's snapshot: any event of the four kinds it always listened to
makes the app walked again) and ``FULL`` (OSWorld's full read, which keeps the object
paths: only an event from an object its last read of that app listed makes it read
again). The full read can be that precise because it lists every object of the app:
an object that joins the tree is announced by its parent's ``children-changed``, and
one measured reading showed the rest are objects of no tree (Calc, a mouse moved over
its toolbar: five events, none from an object the read lists; a scroll: the sheet's
``visible-data-changed`` and its scroll bar's value)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import Any

from dbus_fast import MessageType

from .tree import A11Y, REGISTRY, DBusError

# LibreOffice, the costliest app to walk, is measured to send events for what it
# changes (a chart it lists after drawing it included).
EVENT_APPS = frozenset({"soffice"})
# The four the snapshot always listened to, and what else changes a full read: a box
# (a window resized, a panel dragged wider), what a sheet shows (scrolled), which of
# a table's descendants is active or selected, an object's attributes.
_EVENTS = ("object:children-changed", "object:state-changed", "object:property-change", "object:text-changed")
_FULL_EVENTS = _EVENTS + ("object:bounds-changed", "object:visible-data-changed",
                          "object:active-descendant-changed", "object:selection-changed",
                          "object:attributes-changed")
_SNAPSHOT_MEMBERS = frozenset({"ChildrenChanged", "StateChanged", "PropertyChange", "TextChanged"})
SNAPSHOT, FULL = "snapshot", "full"
# An object that gains or loses one of these may have changed what lies below it (a
# menu shown, a panel hidden, a window made an icon) without an event from each
# descendant.
_SUBTREE_STATES = frozenset({"showing", "visible", "iconified", "defunct"})
# Paths kept per app and reader between its walks; past this, "something changed".
_MAX_PATHS = 4096


class Events:
    def __init__(self) -> None:
        self._heard: set[str] = set()  # bus names listened to
        # Per reader: bus name -> the objects that sent an event since that reader's
        # last walk of the app (None: not known, walked again whatever it lists), each
        # with whether what lies below it may have changed too (``_SUBTREE_STATES``).
        self._stirred: dict[str, dict[str, dict[str, bool] | None]] = {SNAPSHOT: {}, FULL: {}}
        self._registered = False

    async def listen_to(self, bus: Any, call: Callable[..., Awaitable[list[Any]]], names: list[str]) -> None:
        """Listen to these apps' events (once each); ``call`` is the reader's call."""
        new = [name for name in names if name not in self._heard]
        if not new:
            return
        try:
            if not self._registered:
                bus.add_message_handler(self._on_message)
                for event in _FULL_EVENTS:
                    await call(REGISTRY, "/org/a11y/atspi/registry", A11Y + "Registry", "RegisterEvent", "sass",
                               [event, [], ""])
                self._registered = True
            for name in new:
                await call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", "s",
                           [f"type='signal',sender='{name}',interface='{A11Y}Event.Object'"])
                self._heard.add(name)
                for stirred in self._stirred.values():
                    stirred[name] = None  # (what came before is not known)
        except DBusError:
            pass  # (a registry that cannot: those apps are walked every time)

    def heard(self, name: str) -> bool:
        return name in self._heard

    def still(self, reader: str, name: str, paths: Collection[str] | None = None) -> bool:
        """Listened to, and since ``reader``'s last walk of it no event came from it
        (with ``paths``: from none of those objects)."""
        if name not in self._heard:
            return False
        stirred = self._stirred[reader].get(name)
        if stirred is None:
            return False
        return not stirred if paths is None else stirred.keys().isdisjoint(paths)

    def stirred(self, reader: str, name: str) -> dict[str, bool] | None:
        """The objects of that app that sent an event since ``reader``'s last walk of
        it, each with whether what lies below it may have changed too (it was shown or
        hidden: ``_SUBTREE_STATES``); None: not known."""
        found = self._stirred[reader].get(name) if name in self._heard else None
        return dict(found) if found is not None else None

    def walked(self, reader: str, name: str) -> None:
        """``reader`` walks the app now: what it sends from now on is news to it."""
        if name in self._heard:
            self._stirred[reader][name] = {}

    def forget_gone_apps(self, live: Collection[str]) -> None:
        self._heard &= set(live)
        for reader, stirred in self._stirred.items():
            self._stirred[reader] = {k: v for k, v in stirred.items() if k in self._heard}

    def _on_message(self, msg: Any) -> None:
        if msg.message_type != MessageType.SIGNAL or msg.sender not in self._heard:
            return
        for reader, stirred in self._stirred.items():
            if reader == SNAPSHOT and msg.member not in _SNAPSHOT_MEMBERS:
                continue
            paths = stirred.get(msg.sender)
            if paths is not None:
                paths[msg.path] = paths.get(msg.path, False) or (
                    msg.member == "StateChanged" and bool(msg.body) and msg.body[0] in _SUBTREE_STATES)
                if len(paths) > _MAX_PATHS:
                    stirred[msg.sender] = None
