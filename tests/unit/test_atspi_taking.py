"""What a full read may take from an app's last read (deskbox.atspi.full): closed menus
none of whose objects sent an event, and nothing below an object shown, hidden or
failed. Pure logic over a listing made here (the real reads: tests/test_apps.py)."""

from __future__ import annotations

from deskbox.atspi.full import Listing, _FullRead


def node(role: str, name: str, *states: str) -> dict:
    return {"role": role, "name": name, "states": list(states), "children": []}


def last_read() -> Listing:
    """app -> frame (showing) -> menu bar (showing) -> File (showing) -> its closed
    submenu's items; and a push button beside the menu bar."""
    shapes = {
        "/app": (node("application", "soffice"), ("/frame",)),
        "/frame": (node("frame", "Calc", "showing"), ("/bar", "/button")),
        "/bar": (node("menu bar", "", "showing"), ("/file",)),
        "/file": (node("menu", "File", "showing"), ("/new", "/recent")),
        "/new": (node("menu item", "New"), ()),
        "/recent": (node("menu", "Recent Documents"), ("/recent/1",)),
        "/recent/1": (node("menu item", "a.xlsx"), ()),
        "/button": (node("push button", "Save"), ()),
    }
    listing = Listing(tree=shapes["/app"][0])
    for path, (out, children) in shapes.items():
        out["children"] = [shapes[c][0] for c in children]
        listing.nodes[path] = (out, children)
        listing.parents.update((c, path) for c in children)
    return listing


def reading(last: Listing, stirred: dict[str, bool]) -> _FullRead:
    read = _FullRead(reader=None)  # type: ignore[arg-type]  (taking asks nothing of it)
    read.listings["app"] = Listing(tree={})
    read.taken["app"] = 0
    read.may_take("app", last, stirred)
    return read


def test_a_closed_menu_that_sent_nothing_is_taken_whole_with_its_objects_listed():
    last = last_read()
    read = reading(last, {"/new": False})  # an item renamed: its menu's other items stay
    taken = read._take("app", "/recent", fresh=False)
    assert taken is last.nodes["/recent"][0]
    assert set(read.listings["app"].nodes) == {"/recent", "/recent/1"} and read.taken["app"] == 2
    assert read.listings["app"].parents["/recent/1"] == "/recent"


def test_what_shows_what_is_not_a_menu_and_what_lies_on_an_events_way_are_read_again():
    read = reading(last_read(), {"/new": False})
    assert read._take("app", "/file", fresh=False) is None  # showing
    assert read._take("app", "/button", fresh=False) is None  # not a menu
    assert read._take("app", "/new", fresh=False) is None  # sent an event
    assert read._take("app", "/recent", fresh=True) is None  # below an object read whole
    assert read.taken["app"] == 0


def test_below_an_object_shown_or_hidden_or_one_that_failed_nothing_is_taken():
    read = reading(last_read(), {"/recent": True})
    assert "/recent" in read._takeable["app"].stirred and read._take("app", "/recent", fresh=False) is None
    failed = last_read()
    failed.failed = frozenset({"/recent/1"})
    read = reading(failed, {})
    assert read._takeable["app"].stirred == {"/recent/1"}
    assert {"/recent", "/file", "/bar", "/frame", "/app"} <= read._takeable["app"].tainted
    assert read._take("app", "/recent", fresh=False) is None
