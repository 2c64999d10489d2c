"""pyautogui scripts, run as programs inside a session, drive the real desktop through
desktopd: on headless Sway (Wayland) and on desktopd's X11 backend (Xvfb). A fixture
page in a real Chromium records what arrives (the desks: tests/pyautogui_desk.py)."""

from __future__ import annotations

import pytest

from deskbox.common.paths import SHIMS_DIR
from tests.pyautogui_desk import SWATCH, desk, page, shared_dir  # noqa: F401  (fixtures)
from tests.support import css_to_device, http

# -- the module itself ---------------------------------------------------------------------


def test_import_pyautogui_finds_the_shim_with_only_the_standard_library(desk):
    out = desk.output("""
        import json, sys
        from pyautogui import computer13
        foreign = sorted(m for m in sys.modules
                         if m.split(".")[0] not in {*sys.stdlib_module_names, "pyautogui", "__main__"})
        print(json.dumps({"file": pyautogui.__file__, "foreign": foreign, "keys": len(pyautogui.KEYBOARD_KEYS)}))
    """)
    assert out["file"] == str(SHIMS_DIR / "pyautogui" / "__init__.py")
    assert out["foreign"] == [] and out["keys"] > 150


def test_size_is_the_display_size_and_screenshots_have_it(desk, page, shared_dir):
    (display,) = desk.desktopd_get("/api/v1/displays")["displays"]
    swatch = desk.centre(page, "swatch")
    saved = shared_dir / "shot.png"
    out = desk.output(f"""
        import json
        shot = pyautogui.screenshot({str(saved)!r})
        part = pyautogui.screenshot(region=(10, 20, 30, 40))
        s = pyautogui.size()
        print(json.dumps({{"size": [s.width, s.height], "shot": list(shot.size), "mode": shot.mode,
                          "part": list(part.size), "swatch": pyautogui.pixel{swatch},
                          "onscreen": [pyautogui.onScreen(0, 0), pyautogui.onScreen(s.width, 0),
                                       pyautogui.onScreen((s.width - 1, s.height - 1))]}}))
    """, stdlib_only=False)
    assert out["size"] == display["size"] == out["shot"]
    assert out["mode"] == "RGB" and out["part"] == [30, 40]
    assert tuple(out["swatch"]) == SWATCH
    assert out["onscreen"] == [True, False, True]
    assert saved.read_bytes().startswith(b"\x89PNG")


def test_screenshot_without_pillow_says_so(desk):
    code, _, err = desk.run("pyautogui.screenshot()", ok=False)
    assert code != 0 and "PyAutoGUIException" in err and "Pillow" in err


# -- pointer ----------------------------------------------------------------------------------


def test_clicks_land_on_their_targets_with_their_button_and_count(desk, page):
    single, double, triple, right, middle = (desk.centre(page, t)
                                             for t in ("single", "double", "triple", "right", "middle"))
    desk.run(f"""
        pyautogui.click{single}
        pyautogui.doubleClick{double}
        pyautogui.tripleClick{triple}
        pyautogui.rightClick{right}
        pyautogui.middleClick{middle}
    """)
    pages = desk.pages
    click = pages.wait_for(type="click", target="single")
    assert click["button"] == 0 and click["detail"] == 1
    assert pages.wait_for(type="dblclick", target="double")["detail"] == 2
    assert pages.wait_for(type="click", target="triple", detail=3)["button"] == 0
    assert pages.wait_for(type="contextmenu", target="right")["button"] == 2
    assert pages.wait_for(type="auxclick", target="middle")["button"] == 1
    pages.settle(0.3)
    # Each target got exactly its own clicks: nothing degraded to a left click elsewhere.
    assert [e["detail"] for e in pages.matching(type="click", target="triple")] == [1, 2, 3]
    assert pages.matching(type="click", target="right") == [] and pages.matching(type="click", target="middle") == []
    assert {e["button"] for e in pages.matching(type="mousedown", target="right")} == {2}


def test_an_image_on_the_screen_is_found_and_clicked_as_pyautogui_finds_it(desk, page, shared_dir):
    """locateCenterOnScreen (pyscreeze's search, over desktopd's screenshots) finds a
    picture of the "single" button, and a click at its answer lands on that button; a
    picture of "triple" given to click() is found and clicked the same way. (Each picture
    is taken before anything is clicked: a clicked button draws its focus ring.)"""
    import io

    from PIL import Image

    window = desk.window()
    shot = Image.open(io.BytesIO(http("GET", desk.desktopd + "/api/v1/screenshot").body)).convert("RGB")
    boxes = {}
    for name in ("single", "triple"):
        r = page["rects"][name]
        x0, y0 = css_to_device(window, page, r["x"] + 2, r["y"] + 2)
        x1, y1 = css_to_device(window, page, r["x"] + r["w"] - 2, r["y"] + r["h"] - 2)
        boxes[name] = [int(x0), int(y0), int(x1) - int(x0), int(y1) - int(y0)]
        shot.crop((int(x0), int(y0), int(x1), int(y1))).save(shared_dir / f"{name}.png")
    single, triple = shared_dir / "single.png", shared_dir / "triple.png"
    absent = shared_dir / "absent.png"
    Image.effect_noise((40, 30), 90).convert("RGB").save(absent)
    out = desk.output(f"""
        import json
        found = pyautogui.locateOnScreen({str(single)!r})
        every = len(list(pyautogui.locateAllOnScreen({str(single)!r})))
        centre = pyautogui.locateCenterOnScreen({str(single)!r})
        pyautogui.click(centre)
        pyautogui.click({str(triple)!r})
        missing = pyautogui.locateOnScreen({str(absent)!r})
        pyautogui.useImageNotFoundException()
        try:
            pyautogui.locateCenterOnScreen({str(absent)!r})
            raised = None
        except pyautogui.ImageNotFoundException as exc:
            raised = type(exc).__name__
        print(json.dumps({{"found": list(found), "every": every, "missing": missing, "raised": raised,
                          "grab": list(pyautogui.grab().size)}}))
    """, stdlib_only=False)
    assert out["found"] == boxes["single"] and out["every"] == 1, (out, boxes)
    assert out["missing"] is None and out["raised"] == "ImageNotFoundException"
    assert desk.pages.wait_for(type="click", target="single")["detail"] == 1
    assert desk.pages.wait_for(type="click", target="triple")["detail"] == 1


def test_click_takes_a_point_tuple_keyword_coordinates_and_button_aliases(desk, page):
    x, y = desk.centre(page, "single")
    rx, ry = desk.centre(page, "right")
    desk.run(f"""
        pyautogui.click(({x}, {y}))
        pyautogui.click(x={rx}, y={ry}, button='secondary')
    """)
    assert desk.pages.wait_for(type="click", target="single")["button"] == 0
    assert desk.pages.wait_for(type="contextmenu", target="right")["button"] == 2


def test_mousedown_moveto_mouseup_drags_and_position_follows(desk, page):
    x, y = desk.centre(page, "drag")
    out = desk.output(f"""
        import json
        pyautogui.moveTo({x}, {y})
        before = pyautogui.position()
        pyautogui.mouseDown()
        pyautogui.moveTo({x + 150}, {y + 90}, duration=0.3)
        pyautogui.mouseUp()
        after = pyautogui.position()
        print(json.dumps({{"before": [before.x, before.y], "after": list(after)}}))
    """)
    assert out == {"before": [x, y], "after": [x + 150, y + 90]}
    dropped = desk.pages.wait_for(type="dropped")
    start = page["rects"]["drag"]
    assert (dropped["left"], dropped["top"]) == (start["x"] + 150, start["y"] + 90)


def test_dragto_and_drag_press_move_and_release(desk, page):
    x, y = desk.centre(page, "drag")
    desk.run(f"""
        pyautogui.moveTo({x}, {y})
        pyautogui.dragTo({x + 100}, {y + 60}, duration=0.4, tween=pyautogui.easeInOutQuad)
        pyautogui.drag(-40, 30, button='left')
    """)
    start = page["rects"]["drag"]
    first = desk.pages.wait_for(type="dropped", left=start["x"] + 100, top=start["y"] + 60)
    assert first
    assert desk.pages.wait_for(type="dropped", left=start["x"] + 60, top=start["y"] + 90)
    # The moves happened with the button held, in several steps.
    held = desk.pages.matching(type="mousemove", buttons=1)
    assert len(held) >= 4


def test_scroll_positive_is_up_negative_down_and_hscroll_right(desk, page):
    x, y = desk.centre(page, "swatch")
    desk.run(f"pyautogui.scroll(-5, x={x}, y={y + 200})")
    down = desk.pages.wait_for(type="scroll")
    assert down["scrollY"] > 100 and down["scrollX"] == 0
    desk.pages.clear()
    desk.run("pyautogui.scroll(30)")
    assert desk.pages.wait_for(type="scroll", scrollY=0)
    desk.pages.clear()
    desk.run("pyautogui.hscroll(4)")
    right = desk.pages.wait_for(type="scroll")
    assert right["scrollX"] > 50 and right["scrollY"] == 0


def test_the_failsafe_corner_raises_and_can_be_turned_off(desk, page):
    out = desk.output("""
        import json
        pyautogui.moveTo(0, 0)
        try:
            pyautogui.moveTo(300, 300)
            raised = None
        except pyautogui.FailSafeException as exc:
            raised = str(exc)
        stuck = list(pyautogui.position())
        pyautogui.FAILSAFE = False
        pyautogui.moveTo(300, 300)
        free = list(pyautogui.position())
        pyautogui.FAILSAFE = True
        w, h = pyautogui.size()
        pyautogui.moveTo(w + 50, h + 50)  # clamped into the bottom-right corner
        try:
            pyautogui.press('shift')
            corner = None
        except pyautogui.FailSafeException:
            corner = list(pyautogui.position())
        print(json.dumps({"raised": raised, "stuck": stuck, "free": free, "corner": corner, "size": [w, h]}))
    """)
    assert out["raised"] and "fail-safe" in out["raised"]
    assert out["stuck"] == [0, 0] and out["free"] == [300, 300]
    w, h = out["size"]
    assert out["corner"] == [w - 1, h - 1]


@pytest.mark.parametrize("desk", [pytest.param("x11", marks=pytest.mark.x11)], indirect=True)
def test_two_displays_make_one_screen_left_to_right(desk, page):
    from Xlib import display as xdisplay
    from Xlib.ext import randr

    from tests.test_x11_backend import _SetMonitor

    conn = xdisplay.Display(desk.xvfb.display)
    root = conn.screen().root
    names = [conn.intern_atom("PYAUTOGUI-A"), conn.intern_atom("PYAUTOGUI-B")]
    opcode = conn.display.get_extension_major(randr.extname)
    outputs = list(root.xrandr_get_screen_resources().outputs)
    try:
        for name, x, outs in ((names[0], 0, outputs), (names[1], 640, [])):
            _SetMonitor(display=conn.display, opcode=opcode, window=root, name=name, primary=False, automatic=False,
                        x=x, y=0, width=640, height=800, width_mm=169, height_mm=212, outputs=outs)
        conn.sync()
        assert len(desk.desktopd_get("/api/v1/displays")["displays"]) == 2
        out = desk.output("""
            import json
            pyautogui.moveTo(700, 20)
            print(json.dumps({"size": list(pyautogui.size()), "at": list(pyautogui.position()),
                              "shot": list(pyautogui.screenshot().size)}))
        """, stdlib_only=False)
        # Screen x 700 is 60 px into the right-hand display: there in desktopd's terms,
        # and there on the X server's root window.
        assert desk.desktopd_get("/api/v1/pointer") == {"display": 1, "x": 60, "y": 20}
        pointer = root.query_pointer()
        assert (pointer.root_x, pointer.root_y) == (700, 20)
        assert out == {"size": [1280, 800], "at": [700, 20], "shot": [1280, 800]}
    finally:
        for name in names:
            root.xrandr_delete_monitor(name)
        conn.sync()
        conn.close()
    # desktopd re-reads its displays when asked for them; input uses what it read last.
    assert len(desk.desktopd_get("/api/v1/displays")["displays"]) == 1


# -- keyboard -------------------------------------------------------------------------------


def test_typewrite_types_characters_literally(desk, page):
    x, y = desk.centre(page, "text")
    desk.run(f"""
        pyautogui.click({x}, {y})
        pyautogui.typewrite('<a|b>é')
        pyautogui.write(' +~', interval=0.02)
    """)
    assert desk.pages.wait_for(type="input", target="text", value="<a|b>é +~")


def test_typewrite_of_a_list_presses_named_keys(desk, page):
    x, y = desk.centre(page, "text")
    desk.run(f"""
        pyautogui.click({x}, {y})
        pyautogui.typewrite(['a', 'b', 'c', 'left', 'left', 'X', 'space', 'backspace'])
    """)
    assert desk.pages.wait_for(type="input", target="text", value="aXbc")


def test_press_enter_twice_makes_two_lines(desk, page):
    x, y = desk.centre(page, "area")
    desk.run(f"""
        pyautogui.click({x}, {y})
        pyautogui.write('one')
        pyautogui.press('enter', presses=2)
        pyautogui.press(['t', 'w', 'o'])
    """)
    assert desk.pages.wait_for(type="input", target="area", value="one\n\ntwo")
    assert len(desk.pages.matching(type="keydown", key="Enter", target="area")) == 2


def test_hotkey_ctrl_a_then_backspace_clears_a_field(desk, page):
    x, y = desk.centre(page, "text")
    desk.run(f"""
        pyautogui.click({x}, {y})
        pyautogui.typewrite('to be deleted')
    """)
    desk.pages.wait_for(type="input", target="text", value="to be deleted")
    desk.run("""
        pyautogui.hotkey('ctrl', 'a', interval=0.05)
        pyautogui.press('backspace')
    """)
    assert desk.pages.wait_for(type="input", target="text", value="")


def test_keydown_shift_holds_it_until_keyup(desk, page):
    x, y = desk.centre(page, "text")
    desk.run(f"""
        pyautogui.click({x}, {y})
        pyautogui.keyDown('shift')
        pyautogui.typewrite('abc')
        pyautogui.keyUp('shift')
        pyautogui.typewrite('d')
        with pyautogui.hold('shift'):
            pyautogui.press('e')
        try:
            with pyautogui.hold(['shift', 'volumemute']):
                pass
        except pyautogui.UnsupportedKey:
            pyautogui.typewrite('f')  # shift was never pressed
    """)
    assert desk.pages.wait_for(type="input", target="text", value="ABCdEf")
    assert desk.pages.wait_for(type="keyup", key="Shift")


def test_desktopd_refusals_and_bad_arguments_raise_pyautoguis_exceptions(desk, page):
    out = desk.output("""
        import json
        def error(call):
            try:
                call()
            except Exception as exc:
                return [type(exc).__name__, isinstance(exc, pyautogui.PyAutoGUIException),
                        isinstance(exc, ValueError), str(exc)]
        print(json.dumps({
            "bell": error(lambda: pyautogui.typewrite('bell\\a')),
            "button": error(lambda: pyautogui.click(10, 10, button='thumb')),
            "media": error(lambda: pyautogui.press('volumemute')),
            "sequence": error(lambda: pyautogui.moveTo((1, 2), 3)),
        }))
    """)
    name, base, _, message = out["bell"]
    assert name == "DesktopdError" and base and "U+0007" in message
    assert out["button"][:3] == ["BadArgument", True, True] and "thumb" in out["button"][3]
    assert out["media"][:3] == ["UnsupportedKey", True, True]
    assert out["sequence"][:3] == ["BadArgument", True, True]
    desk.pages.settle(0.3)
    # None of them sent any input.
    assert desk.pages.matching(type="mousedown") == [] and desk.pages.matching(type="keydown") == []
