"""The pyautogui shim's pure logic: key names, the screen over several displays,
argument normalisation, tweening, computer_13 parsing, and what Python it needs."""

from __future__ import annotations

import ast
import sys
from fractions import Fraction

import pytest

from deskbox.common.paths import SHIMS_DIR
from deskbox.desktopd.keys import parse_combo, parse_key
from deskbox.shims import pyautogui
from deskbox.shims.pyautogui import _args, _keys, _pointer, _points, _tween, computer13
from deskbox.shims.pyautogui._desktopd import Screen
from deskbox.shims.pyautogui._errors import BadArgument, PyAutoGUIException, UnsupportedKey

# -- keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize("key", [k for k in _keys.KEYBOARD_KEYS if k not in _keys.UNSUPPORTED])
def test_every_supported_pyautogui_key_is_one_key_desktopd_knows(key):
    name = _keys.desktopd_key(key)
    assert len(parse_combo(name)) == 1
    # ...also inside a combination, where "+" and blanks would otherwise split or vanish.
    ctrl, pressed = parse_combo("ctrl+" + name)
    assert ctrl.name == "Control_L" and pressed == parse_key(name)


def test_characters_map_to_themselves_and_names_ignore_case():
    assert parse_key(_keys.desktopd_key("<")).keysym == ord("<")
    assert parse_key(_keys.desktopd_key("A")).keysym == ord("A")
    assert parse_key(_keys.desktopd_key(" ")).keysym == ord(" ")
    assert parse_key(_keys.desktopd_key("+")).keysym == ord("+")
    assert parse_key(_keys.desktopd_key("\n")).name == "Return"
    assert _keys.desktopd_key("ENTER") == "enter"
    assert parse_key(_keys.desktopd_key("PgDn")).name == "Page_Down"
    assert parse_key(_keys.desktopd_key("optionleft")).name == "Alt_L"
    assert parse_key(_keys.desktopd_key("num7")).keysym == ord("7")
    assert parse_key(_keys.desktopd_key("add")).keysym == ord("+")


@pytest.mark.parametrize("key", ["volumemute", "browserback", "fn", "Kana", "ctrl+a", "", 5, None])
def test_keys_deskbox_cannot_press_are_refused_not_dropped(key):
    with pytest.raises(UnsupportedKey) as info:
        _keys.desktopd_key(key)
    assert isinstance(info.value, ValueError) and isinstance(info.value, PyAutoGUIException)


def test_is_valid_key_and_shift_characters():
    assert pyautogui.isValidKey("enter") and pyautogui.isValidKey("<") and not pyautogui.isValidKey("hyper")
    assert pyautogui.isShiftCharacter("<") and pyautogui.isShiftCharacter("A")
    assert not pyautogui.isShiftCharacter("a") and not pyautogui.isShiftCharacter(",")


# -- the screen over displays ------------------------------------------------------------------


def display(id, bounds, size, scale=1.0):
    return {"id": id, "name": f"HEADLESS-{id + 1}", "bounds": bounds, "scale": scale, "primary": id == 0,
            "size": size}


def test_one_display_is_the_screen_pixel_for_pixel():
    screen = Screen([display(0, [0, 0, 1280, 800], [1280, 800])])
    assert (screen.width, screen.height) == (1280, 800)
    assert screen.to_display(100, 200) == (0, 100, 200)
    assert screen.to_screen(0, 100.7, 200.2) == (100, 200)
    assert screen.corners == [(0, 0), (1279, 0), (0, 799), (1279, 799)]
    assert screen.contains(1279, 799) and not screen.contains(1280, 0) and not screen.contains(-1, 5)


def test_points_past_the_edge_are_clamped_to_it():
    screen = Screen([display(0, [0, 0, 1280, 800], [1280, 800])])
    assert screen.to_display(5000, 5000) == (0, 1279, 799)
    assert screen.to_display(-10, -3) == (0, 0, 0)


def test_several_displays_sit_left_to_right_in_device_pixels():
    # Given out of order; display 1 is HiDPI (device pixels 2x its layout size).
    screen = Screen([display(1, [1280, 0, 960, 540], [1920, 1080], 2.0), display(0, [0, 0, 1280, 800], [1280, 800])])
    assert (screen.width, screen.height) == (1280 + 1920, 1080)
    assert screen.to_display(1279, 10) == (0, 1279, 10)
    assert screen.to_display(1280, 10) == (1, 0, 10)
    assert screen.to_display(3199, 1079) == (1, 1919, 1079)
    assert screen.to_screen(1, 5, 6) == (1285, 6)
    # Below the shorter display: clamped onto it, not onto the neighbour.
    assert screen.to_display(100, 1000) == (0, 100, 799)
    assert not screen.contains(100, 1000) and screen.contains(2000, 1000)


# -- argument normalisation -----------------------------------------------------------------


def test_buttons_by_name_any_case_and_number():
    norm = _args.as_button
    assert [norm(b) for b in ("left", "PRIMARY", 1)] == ["left"] * 3
    assert [norm(b) for b in ("right", "secondary", 3)] == ["right"] * 3
    assert [norm(b) for b in ("middle", "Middle", 2)] == ["middle"] * 3
    for bad in ("thumb", 9, None, 1.5):
        with pytest.raises(ValueError, match="button argument must be one of"):
            norm(bad)


def test_coordinates_take_a_pair_in_x_and_refuse_nonsense():
    assert _points.as_coords((10, 20), None) == (10, 20)
    assert _points.as_coords(10.9, 20.2) == (10, 20)
    assert _points.as_coords(None, 5) == (None, 5)
    assert _points.as_coords(Fraction(21, 2), 5) == (10, 5)  # any numbers.Real, numpy's too
    for x, y in (((1, 2), 3), ((1, 2, 3), None), (float("nan"), 1), (True, 1)):
        with pytest.raises(BadArgument):
            _points.as_coords(x, y)


def test_a_glide_passes_tweened_points_and_ends_exactly_on_target():
    points = _pointer._tween_points((0, 0), (100, 50), 0.5, _tween.linear)
    assert points[-1] == (100, 50) and len(points) == int(0.5 / pyautogui.MINIMUM_SLEEP)
    assert all(a[0] <= b[0] for a, b in zip(points, points[1:]))
    eased = _pointer._tween_points((0, 0), (100, 0), 0.5, _tween.easeInQuad)
    assert eased[0][0] < points[0][0]  # slow start
    assert _pointer._tween_points((0, 0), (100, 50), 0.05, _tween.linear) == [(100, 50)]


@pytest.mark.parametrize("name", [n for n in _tween.__all__ if n != "getPointOnLine"])
def test_every_tween_starts_at_zero_and_ends_at_one(name):
    tween = getattr(pyautogui, name)
    assert tween(0.0) == pytest.approx(0.0, abs=1e-9) and tween(1.0) == pytest.approx(1.0, abs=1e-9)
    with pytest.raises(ValueError):
        tween(1.5)


def test_what_the_shim_lacks_is_an_attribute_error_that_says_so():
    with pytest.raises(AttributeError, match="message boxes is not supported"):
        pyautogui.alert  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'teleport'"):
        pyautogui.teleport  # noqa: B018


# -- computer_13 ------------------------------------------------------------------------------


def call(function, *args, **kwargs):
    return computer13.Call(function, args, kwargs)


@pytest.mark.parametrize("action, calls", [
    ({"action_type": "MOVE_TO", "parameters": {"x": 1, "y": 2}}, [call("moveTo", 1, 2)]),
    ({"action_type": "MOVE_TO", "parameters": {}}, []),
    ({"action_type": "CLICK", "parameters": {}}, [call("click")]),
    ({"action_type": "CLICK", "parameters": {"button": "right", "x": 5, "y": 6, "num_clicks": 2}},
     [call("click", x=5, y=6, clicks=2, button="right")]),
    ({"action_type": "CLICK", "x": 5, "y": 6}, [call("click", x=5, y=6)]),
    ({"action_type": "MOUSE_DOWN", "parameters": {"button": "middle"}}, [call("mouseDown", button="middle")]),
    ({"action_type": "MOUSE_UP"}, [call("mouseUp")]),
    ({"action_type": "RIGHT_CLICK", "parameters": {"x": 3, "y": 4}}, [call("rightClick", x=3, y=4)]),
    ({"action_type": "DOUBLE_CLICK", "parameters": {}}, [call("doubleClick")]),
    ({"action_type": "DRAG_TO", "parameters": {"x": 7, "y": 8}},
     [call("dragTo", 7, 8, duration=1.0, button="left", mouseDownUp=True)]),
    ({"action_type": "SCROLL", "parameters": {"dx": 2, "dy": -3}}, [call("hscroll", 2), call("vscroll", -3)]),
    ({"action_type": "SCROLL", "parameters": {"dy": 5}}, [call("vscroll", 5)]),
    ({"action_type": "TYPING", "parameters": {"text": "a<b"}}, [call("typewrite", "a<b")]),
    ({"action_type": "PRESS", "parameters": {"key": "Enter"}}, [call("press", "Enter")]),
    ({"action_type": "KEY_DOWN", "parameters": {"key": "shift"}}, [call("keyDown", "shift")]),
    ({"action_type": "KEY_UP", "parameters": {"key": "shift"}}, [call("keyUp", "shift")]),
    ({"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "c"]}}, [call("hotkey", "ctrl", "c")]),
    ({"action_type": "WAIT", "parameters": {"seconds": 0.5}}, [call("sleep", 0.5)]),
    ("WAIT", [call("sleep", computer13.WAIT_SECONDS)]),
    ("FAIL", []),
    ('{"action_type": "DONE"}', []),
])
def test_computer_13_actions_become_the_pyautogui_calls_osworld_makes(action, calls):
    assert computer13.parse(action) == calls


def test_the_parsed_action_types_are_all_sixteen():
    assert set(computer13._ACTIONS) == set(computer13.ACTION_TYPES) and len(computer13.ACTION_TYPES) == 16


@pytest.mark.parametrize("action, message", [
    ({"action_type": "JUMP"}, "unknown action_type"),
    ({"parameters": {}}, "computer_13 action is"),
    ({"action_type": "MOVE_TO", "parameters": {"x": 1}}, "both x and y"),
    ({"action_type": "DRAG_TO", "parameters": {}}, "x and y are required"),
    ({"action_type": "CLICK", "parameters": {"num_clicks": 4}}, "1, 2 or 3"),
    ({"action_type": "CLICK", "parameters": {"button": "thumb"}}, "button must be one of"),
    ({"action_type": "CLICK", "parameters": {"x": "10", "y": 2}}, "x must be a number"),
    ({"action_type": "CLICK", "parameters": {"where": 1}}, "unknown: where"),
    ({"action_type": "SCROLL", "parameters": {}}, "dx, dy or both"),
    ({"action_type": "SCROLL", "parameters": {"dy": 1.5}}, "dy must be an integer"),
    ({"action_type": "TYPING", "parameters": {}}, "TYPING needs text"),
    ({"action_type": "PRESS", "parameters": {"key": "hyper"}}, "KEYBOARD_KEYS"),
    ({"action_type": "HOTKEY", "parameters": {"keys": "ctrl+c"}}, "a list of key names"),
    ({"action_type": "WAIT", "parameters": {"seconds": -1}}, "cannot wait"),
    ("{not json", "not a computer_13 action"),
])
def test_bad_computer_13_actions_are_refused(action, message):
    with pytest.raises(BadArgument, match=message):
        computer13.parse(action)


# -- what it needs to run -----------------------------------------------------------------------


SOURCES = sorted((SHIMS_DIR / "pyautogui").glob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_the_shim_parses_as_python_3_9_and_imports_only_the_standard_library(path):
    tree = ast.parse(path.read_text(), filename=str(path), feature_version=(3, 9))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            imported.add(node.module.split(".")[0])
    # Pillow only where screenshot() asks for it, pyscreeze only where an image is searched
    # for, and both calls explain their absence.
    assert imported - {"PIL", "pyscreeze"} <= set(sys.stdlib_module_names)
    assert "PIL" not in imported or path.name == "_screen.py"
    assert "pyscreeze" not in imported or path.name == "_locate.py"
    assert len(SOURCES) >= 6
