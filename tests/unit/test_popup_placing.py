"""A GTK menu that names no button (LibreOffice's Field drop-down) placed below the
button under the pointer: pure logic over AT-SPI nodes."""

from __future__ import annotations

from deskbox.atspi import NativeNode
from deskbox.geometry import Rect
from deskbox.scene.placing import place_popups_at_pointer


def node(key: str, role: str, extents, depth: int, **extra) -> NativeNode:
    return NativeNode(key=key, pid=7, app="soffice", role=role, name=key, value=None, states=("showing",), actions=(),
                      extents=extents, frame="", depth=depth, **extra)


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
