"""Pointer and keyboard input through desktopd land in a real Chromium on headless Sway,
where the page records what it received."""

from __future__ import annotations

import time

import pytest

from tests.conftest import open_fixture
from tests.support import css_to_device, wait_until

pytestmark = pytest.mark.desktop


def centre(session, load, element):
    r = load["rects"][element]
    return css_to_device(session.browser_window(), load, r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)


# Longer than Chromium's double-click time (500 ms unless the desktop says otherwise).
DOUBLE_CLICK_S = 0.6


def click_on(session, load, element, **extra):
    x, y = centre(session, load, element)
    session.pointer(action="click", x=x, y=y, **extra)
    return x, y


def test_click_at_button_centre_lands_on_the_button(single, pages, input_page):
    r = input_page["rects"]["submit"]
    # A click on the same spot within the double-click time before (another test's, in a
    # shuffled order) would make this one the second of a double click (detail 2).
    time.sleep(DOUBLE_CLICK_S)
    click_on(single, input_page, "submit")
    event = pages.wait_for(type="click", target="submit")
    assert abs(event["x"] - (r["x"] + r["w"] / 2)) <= 1
    assert abs(event["y"] - (r["y"] + r["h"] / 2)) <= 1
    assert event["button"] == 0 and event["detail"] == 1


def test_click_at_an_exact_pixel_reports_that_pixel(single, pages, input_page):
    # 7 px inside the button's top-left corner, at scale 1: clientX/Y match to the pixel.
    r = input_page["rects"]["submit"]
    x, y = css_to_device(single.browser_window(), input_page, r["x"] + 7, r["y"] + 7)
    single.pointer(action="click", x=x, y=y)
    event = pages.wait_for(type="click", target="submit")
    assert (event["x"], event["y"]) == (r["x"] + 7, r["y"] + 7)


def test_double_click_and_right_click(single, pages, input_page):
    click_on(single, input_page, "other", count=2)
    assert pages.wait_for(type="dblclick", target="other")["detail"] == 2
    click_on(single, input_page, "submit", button="right")
    assert pages.wait_for(type="contextmenu", target="submit")["button"] == 2


def test_click_with_a_modifier_held(single, pages, input_page):
    click_on(single, input_page, "other", modifiers=["shift"])
    event = pages.wait_for(type="click", target="other")
    assert event["shift"] is True and event["ctrl"] is False
    # The modifier was released afterwards.
    click_on(single, input_page, "submit")
    assert pages.wait_for(type="click", target="submit")["shift"] is False


def test_typed_unicode_arrives_exactly(single, pages, input_page):
    click_on(single, input_page, "text")
    text = "Héllo wörld ✓ 中文 😀 <>&\"'~`|\\ ÆØÅ ß €"
    single.keyboard(action="type", text=text)
    assert pages.wait_for(type="input", target="text", value=text)


def test_newline_and_tab_are_typed_as_keys(single, pages, input_page):
    click_on(single, input_page, "area")
    single.keyboard(action="type", text="line one\nline two\tend")
    pages.wait_for(type="input", target="area", value="line one\nline twoend")
    assert pages.wait_for(type="keydown", key="Tab", target="area")


def test_ctrl_a_then_backspace_clears_a_field(single, pages, input_page):
    click_on(single, input_page, "text")
    single.keyboard(action="type", text="to be deleted")
    pages.wait_for(type="input", target="text", value="to be deleted")
    single.keyboard(action="key", keys="ctrl+a")
    single.keyboard(action="key", keys="backspace")
    pages.wait_for(type="input", target="text", value="")


@pytest.mark.parametrize(
    "name, dom_key",
    [
        ("enter", "Enter"), ("tab", "Tab"), ("escape", "Escape"), ("backspace", "Backspace"),
        ("delete", "Delete"), ("home", "Home"), ("end", "End"), ("pageup", "PageUp"),
        ("pagedown", "PageDown"), ("up", "ArrowUp"), ("down", "ArrowDown"), ("left", "ArrowLeft"),
        ("right", "ArrowRight"), ("f2", "F2"), ("space", " "), ("a", "a"), ("A", "A"), ("<", "<"),
        ("Return", "Enter"), ("Page_Up", "PageUp"),
    ],
)
def test_key_names_people_use_produce_the_expected_key(single, pages, input_page, name, dom_key):
    click_on(single, input_page, "text")
    single.keyboard(action="key", keys=name)
    assert pages.wait_for(type="keydown", key=dom_key)


def test_key_combination_holds_modifiers_in_order(single, pages, input_page):
    click_on(single, input_page, "text")
    single.keyboard(action="key", keys="ctrl+shift+z")
    event = pages.wait_for(type="keydown", code="KeyZ")
    assert event["ctrl"] and event["shift"] and not event["alt"]


def test_key_down_and_up_hold_a_key_across_requests(single, pages, input_page):
    click_on(single, input_page, "text")
    single.keyboard(action="down", key="shift")
    single.keyboard(action="type", text="abc")
    single.keyboard(action="up", key="shift")
    single.keyboard(action="type", text="d")
    pages.wait_for(type="input", target="text", value="ABCd")


def test_a_drag_moves_a_draggable_element(single, pages, input_page):
    x, y = centre(single, input_page, "drag")
    single.pointer(action="drag", x=x, y=y, path=[[x + 60, y + 40], [x + 150, y + 90]])
    dropped = pages.wait_for(type="dropped")
    start = input_page["rects"]["drag"]
    assert abs(dropped["left"] - (start["x"] + 150)) <= 1
    assert abs(dropped["top"] - (start["y"] + 90)) <= 1


def test_scroll_scrolls_the_page_and_back(single, pages, input_page):
    x, y = centre(single, input_page, "submit")
    single.pointer(action="scroll", x=x, y=y + 300, dy=5)
    down = pages.wait_for(type="scroll")
    assert down["scrollY"] > 100
    pages.clear()
    single.pointer(action="scroll", dy=-20)
    assert pages.wait_for(type="scroll", scrollY=0)


def test_compat_tablet_and_keyboard_event_endpoints(single, pages, input_page):
    x, y = centre(single, input_page, "text")
    assert single.post("/api/v1/tablet", {"x": x, "y": y, "action": "tap"}).status == 204
    pages.wait_for(type="click", target="text")
    resp = single.post("/api/v1/keyboard_event", {"events": [
        {"keysym": "h", "state": "down"}, {"keysym": "h", "state": "up"},
        {"keysym": "i", "state": "down"}, {"keysym": "i", "state": "up"},
    ]})
    assert resp.status == 204
    pages.wait_for(type="input", target="text", value="hi")
    bx, by = centre(single, input_page, "submit")
    resp = single.post("/api/v1/tablet_event", {"events": [{"type": "click", "x": bx, "y": by, "button": "left"}]})
    assert resp.status == 204
    pages.wait_for(type="click", target="submit")


def test_text_with_more_distinct_characters_than_free_keys_types_exactly(single, pages, input_page):
    # 120 distinct CJK characters: more than the keymap's free keys, so the keyboard
    # uploads several keymaps during one request.
    text = "".join(chr(0x4E00 + i * 7) for i in range(120))
    click_on(single, input_page, "area")
    single.keyboard(action="type", text=text)
    pages.wait_for(type="input", target="area", value=text, timeout=30)


def test_typing_a_long_text_arrives_whole(single, pages):
    # 8 KiB in one request: the keyboard paces its events so the compositor never
    # overflows Chromium's connection (a single burst of 5,000 characters got Chromium
    # disconnected). Chromium itself takes seconds to insert this much into a textarea.
    load = open_fixture(single, pages, "input.html?quiet")
    r = load["rects"]["area"]
    x, y = css_to_device(single.browser_window(), load, r["x"] + 10, r["y"] + 10)
    pid = single.browser_window()["pid"]
    # The text goes where focus is: make sure the click put it in the textarea.
    wait_until(lambda: single.pointer(action="click", x=x, y=y) and pages.matching(type="focus", target="area"),
               10, interval=1.0, what="the textarea focused")
    text = "".join(f"line {i:04d} of a long text, typed key by key.\n" for i in range(200))[: 8 * 1024]
    single.keyboard(action="type", text=text)
    single.keyboard(action="key", keys="f9")
    try:
        report = pages.wait_for(type="report", timeout=120)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; Chromium pid then {pid}, now {single.browser_window()['pid']}") from None
    assert report["area"] == text
    assert single.browser_window()["pid"] == pid
