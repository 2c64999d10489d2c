"""Which apps changed since their last walk, as their AT-SPI events tell.

What it owns: registering event listeners with the registry, a match rule per app it
listens to, and the set of those apps that sent an event since they were last walked.
It must not know what a walk keeps: the reader asks ``still(bus)``.

Events are registered only once an app of ``_EVENT_APPS`` runs: every app atk-bridge
serves then sends them to the bus, and the bus passes on only those of the apps
listened to. Measured (Sway headless, Chromium on a 1,000-element page, Calc,
gnome-calculator): idle, none sent any in 8 s; two values typed into Calc brought
1,262 from LibreOffice (it rebuilds its toolbars) and a navigation 18 from Chromium.
A page rewriting 50 texts every 100 ms made Chromium send 580 a second, for no
measurable CPU: its processes used 0.225 s a second without listeners, 0.229 with.
What LibreOffice sends for one value typed into a Calc cell and Return: 883 events, most
from objects no walk has seen, because it rebuilds its sidebar's Properties panel
(children removed and added, the old ones defunct) and swaps the formula bar's buttons;
so an edit costs a whole walk of it, not of the cell's row alone."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import Any

from dbus_fast import MessageType

from .tree import _A11Y, _REGISTRY, _DBusError

# LibreOffice, the costliest app to walk, is measured to send events for what it
# changes (a chart it lists after drawing it included).
_EVENT_APPS = frozenset({"soffice"})
_EVENTS = ("object:children-changed", "object:state-changed", "object:property-change", "object:text-changed")


class _Events:
    def __init__(self) -> None:
        self._heard: set[str] = set()  # bus names listened to
        self._stirred: set[str] = set()  # of those, the ones that sent an event since their last walk
        self._registered = False

    async def listen_to(self, bus: Any, call: Callable[..., Awaitable[list[Any]]], names: list[str]) -> None:
        """Listen to these apps' events (once each); ``call`` is the reader's call."""
        new = [name for name in names if name not in self._heard]
        if not new:
            return
        try:
            if not self._registered:
                bus.add_message_handler(self._on_message)
                for event in _EVENTS:
                    await call(_REGISTRY, "/org/a11y/atspi/registry", _A11Y + "Registry", "RegisterEvent", "sass",
                               [event, [], ""])
                self._registered = True
            for name in new:
                await call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", "s",
                           [f"type='signal',sender='{name}',interface='{_A11Y}Event.Object'"])
                self._heard.add(name)
                self._stirred.add(name)  # (what came before is not known)
        except _DBusError:
            pass  # (a registry that cannot: those apps are walked every time)

    def heard(self, name: str) -> bool:
        return name in self._heard

    def still(self, name: str) -> bool:
        """Listened to, and no event since its last walk."""
        return name in self._heard and name not in self._stirred

    def walked(self, name: str) -> None:
        self._stirred.discard(name)

    def forget_gone_apps(self, live: Collection[str]) -> None:
        self._heard &= set(live)
        self._stirred &= set(live)

    def _on_message(self, msg: Any) -> None:
        if msg.message_type == MessageType.SIGNAL and msg.sender in self._heard:
            self._stirred.add(msg.sender)
