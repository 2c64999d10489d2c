"""What the AT-SPI events tell each reader (deskbox.atspi.events): the snapshot walks an
app again after any event of the four kinds it listens to, the full read only after an
event from an object its last read listed. Pure logic: the messages are made here."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from dbus_fast import MessageType

from deskbox.atspi.events import FULL, SNAPSHOT, Events

APP = ":1.42"


class Bus:
    def __init__(self) -> None:
        self.handlers: list = []

    def add_message_handler(self, handler) -> None:
        self.handlers.append(handler)

    def signal(self, member: str, path: str, detail: str = "", sender: str = APP) -> None:
        for handler in self.handlers:
            handler(SimpleNamespace(message_type=MessageType.SIGNAL, sender=sender, member=member, path=path,
                                    body=[detail, 0, 0, 0, {}]))


def listening() -> tuple[Events, Bus, list]:
    events, bus, calls = Events(), Bus(), []

    async def call(*args):
        calls.append(args)
        return []

    asyncio.run(events.listen_to(bus, call, [APP]))
    return events, bus, calls


def test_an_app_just_listened_to_is_walked_by_both_readers():
    events, _, calls = listening()
    assert events.heard(APP)
    assert not events.still(SNAPSHOT, APP) and not events.still(FULL, APP, {"/a"})
    # Registered once each, the match rule for that app alone.
    registered = [c[5][0] for c in calls if c[3] == "RegisterEvent"]
    assert "object:children-changed" in registered and "object:bounds-changed" in registered
    assert len(registered) == len(set(registered))
    assert [c[5][0] for c in calls if c[3] == "AddMatch"] == [
        f"type='signal',sender='{APP}',interface='org.a11y.atspi.Event.Object'"]


def test_each_reader_keeps_its_own_account():
    events, bus, _ = listening()
    events.walked(SNAPSHOT, APP)
    events.walked(FULL, APP)
    assert events.still(SNAPSHOT, APP) and events.still(FULL, APP, {"/root", "/root/1"})
    bus.signal("StateChanged", "/root/1")
    assert not events.still(SNAPSHOT, APP) and not events.still(FULL, APP, {"/root", "/root/1"})
    events.walked(SNAPSHOT, APP)  # the snapshot walked it: the full read has not
    assert events.still(SNAPSHOT, APP) and not events.still(FULL, APP, {"/root/1"})


def test_the_full_read_ignores_objects_it_did_not_list_and_the_snapshot_other_kinds():
    events, bus, _ = listening()
    events.walked(SNAPSHOT, APP)
    events.walked(FULL, APP)
    bus.signal("StateChanged", "/tooltip/7")  # an object of no tree (a tooltip made and dropped)
    assert events.still(FULL, APP, {"/root", "/root/1"}) and not events.still(SNAPSHOT, APP)
    events.walked(SNAPSHOT, APP)
    bus.signal("VisibleDataChanged", "/root/1")  # a sheet scrolled: the full read's alone
    assert events.still(SNAPSHOT, APP) and not events.still(FULL, APP, {"/root", "/root/1"})
    bus.signal("StateChanged", "/root", "focused", sender=":1.99")  # another app, not listened to
    assert events.still(SNAPSHOT, APP)


def test_too_many_objects_stirred_count_as_everything_and_gone_apps_are_forgotten():
    events, bus, _ = listening()
    events.walked(FULL, APP)
    for i in range(5000):
        bus.signal("StateChanged", f"/other/{i}")
    assert not events.still(FULL, APP, {"/root"})
    events.forget_gone_apps([])
    assert not events.heard(APP)
    events.walked(FULL, APP)  # (not listened to any more: nothing is kept)
    assert not events.still(FULL, APP, {"/root"})


def test_an_object_shown_or_hidden_has_its_subtree_read_again_any_other_only_itself():
    events, bus, _ = listening()
    events.walked(FULL, APP)
    bus.signal("StateChanged", "/frame", "active")
    bus.signal("ChildrenChanged", "/root", "add")
    bus.signal("StateChanged", "/menu", "showing")
    bus.signal("PropertyChange", "/menu", "accessible-name")  # (a later event keeps what was known)
    bus.signal("BoundsChanged", "/cell")
    assert events.stirred(FULL, APP) == {"/frame": False, "/root": False, "/menu": True, "/cell": False}
    events.walked(FULL, APP)
    assert events.stirred(FULL, APP) == {}
