"""GTK popups the reader cannot place alone: a menu that names no button (LibreOffice's
Field drop-down) placed below the button under the pointer, and a submenu that would
leave the display opened on its item's left. Pure logic over AT-SPI nodes."""

from __future__ import annotations

from deskbox.atspi import NativeNode
from deskbox.geometry import Rect
from deskbox.scene.placing import flip_submenus, place_popups_at_pointer


def node(key: str, role: str, extents, depth: int, **extra) -> NativeNode:
    # (A popup's own menu is unnamed, as GTK's is.)
    return NativeNode(key=key, pid=7, app="soffice", role=role, name="" if "popup" in key else key, value=None,
                      states=("showing",), actions=(), extents=extents, frame="", depth=depth, **extra)


WINDOW = Rect(0, 0, 1280, 800)
NODES = [
    node("frame", "frame", (0, 0, 1280, 800), 1),
    node("Field", "push button", (797, 28, 44, 35), 5),
    node("Table", "push button", (600, 28, 44, 35), 5),
    node("popup", "window", (0, 0, 170, 230), 1, unplaced=True),
    node("menu", "menu", (0, 0, 170, 230), 2),
    node("Page Number", "menu item", (6, 9, 156, 26), 3),
]


def test_the_popup_opens_below_the_button_under_the_pointer_less_gtks_margin():
    placed = {n.key: n for n in place_popups_at_pointer(NODES, WINDOW, 1.0, None, (810, 40))}
    # Measured: the item is drawn from the button's left edge, 4 px below its bottom.
    assert placed["Page Number"].extents == (797, 67, 156, 26)
    assert not placed["popup"].unplaced
    assert placed["Field"].extents == (797, 28, 44, 35) and placed["frame"].extents == (0, 0, 1280, 800)


def test_at_scale_2_the_pointer_is_in_device_pixels_and_boxes_stay_in_layout_pixels():
    placed = {n.key: n for n in place_popups_at_pointer(NODES, Rect(0, 0, 2560, 1600), 2.0, None, (1220, 80))}
    assert placed["Page Number"].extents == (600, 67, 156, 26)


def test_nothing_moves_without_a_button_under_the_pointer_or_an_unplaced_popup():
    assert place_popups_at_pointer(NODES, WINDOW, 1.0, None, (5, 700)) == NODES
    assert place_popups_at_pointer(NODES, WINDOW, 1.0, None, None) == NODES
    settled = [n for n in NODES if n.key != "popup"]
    assert place_popups_at_pointer(settled, WINDOW, 1.0, None, (810, 40)) == settled


# LibreOffice beside Chromium at 1920x1080 (its window at x 960), Tools > AutoCorrect open.
MENUS = [
    node("frame", "frame", (0, 0, 960, 1080), 1),
    node("bar", "menu bar", (0, 0, 960, 26), 3, parent="frame"),
    node("Tools", "menu", (429, 0, 52, 26), 4, parent="bar"),
    node("tools popup", "menu", (423, 21, 345, 400), 5, parent="Tools"),
    node("AutoCorrect", "menu", (429, 183, 333, 26), 6, parent="tools popup"),
    node("autocorrect popup", "menu", (755, 178, 244, 120), 7, parent="AutoCorrect"),
    node("While Typing", "check menu item", (761, 183, 232, 26), 8, parent="autocorrect popup"),
    node("Apply", "menu item", (761, 209, 232, 26), 8, parent="autocorrect popup"),
    node("AutoText...", "menu item", (429, 209, 333, 26), 6, parent="tools popup"),
]


def test_a_submenu_that_would_leave_the_display_opens_on_its_items_left_as_gtk_draws_it():
    flipped = {n.key: n for n in flip_submenus(MENUS, Rect(960, 0, 960, 1080), 1.0, None, 1920)}
    # Measured: the submenu's items drawn from 1156 (window x 196), ending 1 px left of AutoCorrect.
    assert flipped["While Typing"].extents == (196, 183, 232, 26)
    assert flipped["Apply"].extents[0] == 196 and flipped["autocorrect popup"].extents[0] == 190
    # Nothing else moves.
    assert flipped["AutoCorrect"].extents == (429, 183, 333, 26) and flipped["AutoText..."].extents[0] == 429


def test_a_submenu_with_room_on_the_right_stays_there():
    assert flip_submenus(MENUS, Rect(0, 0, 960, 1080), 1.0, None, 1920) == MENUS
