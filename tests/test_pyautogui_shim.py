"""pyautogui scripts and OSWorld computer_13 actions, run as programs inside a session,
drive the real desktop through desktopd: on headless Sway (Wayland) and on desktopd's X11
backend (Xvfb). A fixture page in a real Chromium records what arrives."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import urllib.parse
from pathlib import Path

import pytest

from deskbox.common.paths import SHIMS_DIR
from deskbox.session.layout import SESSION_SITE
from tests.conftest import open_fixture
from tests.support import css_to_device, free_port, http, wait_until
from tests.test_x11_backend import XvfbDesktop, _stop

PAGE = "pyautogui.html"
SWATCH = (12, 200, 34)


class Desk:
    """One backend under test: where pyautogui programs run, and the page they act on."""

    def __init__(self, name: str, pages, desktopd_url: str) -> None:
        self.name = name
        self.pages = pages
        self.desktopd = desktopd_url

    # -- running pyautogui programs -------------------------------------------------------

    def env(self) -> dict[str, str]:
        raise NotImplementedError

    def popen(self, argv: list[str]) -> subprocess.Popen:
        return subprocess.Popen(argv, env=self.env(), cwd="/", stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def run(self, code: str, *, stdlib_only: bool = True, ok: bool = True, timeout: float = 90):
        """Run ``code`` (after ``import pyautogui``) in a new Python inside the session.
        ``stdlib_only``: with -S, no site-packages at all, as a bare system Python."""
        argv = [sys.executable, *(["-S"] if stdlib_only else []), "-c",
                "import pyautogui\n" + textwrap.dedent(code)]
        proc = self.popen(argv)
        out, err = proc.communicate(timeout=timeout)
        if ok:
            assert proc.returncode == 0, f"pyautogui program failed:\n{err[-3000:]}"
        return proc.returncode, out, err

    def output(self, code: str, **kw) -> dict:
        """Run ``code`` that prints one JSON object last; return it."""
        _, out, _ = self.run(code, **kw)
        return json.loads(out.strip().splitlines()[-1])

    # -- the page -------------------------------------------------------------------------

    def desktopd_get(self, path: str) -> dict:
        resp = http("GET", self.desktopd + path)
        assert resp.status == 200, resp.body[:300]
        return resp.json()

    def window(self) -> dict:
        def find():
            tree = self.desktopd_get("/api/v1/tree")
            return next((w for w in tree["windows"] if "chromium" in (w["app_id"] or "").lower()), None)

        return wait_until(find, 20, what="a Chromium window")

    def open(self) -> dict:
        raise NotImplementedError

    def centre(self, load: dict, element: str) -> tuple[int, int]:
        r = load["rects"][element]
        x, y = css_to_device(self.window(), load, r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
        return int(x), int(y)


class WaylandDesk(Desk):
    def __init__(self, session, pages) -> None:
        super().__init__("wayland", pages, session.desktopd)
        self.session = session

    def env(self) -> dict[str, str]:
        return self.session.app_env()

    def popen(self, argv: list[str]) -> subprocess.Popen:
        # As the session's user, as OSWorld's commands run.
        return self.session.launch(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def open(self) -> dict:
        return open_fixture(self.session, self.pages, PAGE)


class X11Desk(Desk):
    """Xvfb, desktopd --backend x11, and Chromium on it with a DevTools port to open pages."""

    def __init__(self, pages) -> None:
        self.xvfb = XvfbDesktop()
        super().__init__("x11", pages, self.xvfb.url)
        self.chromium: subprocess.Popen | None = None
        self.cdp = f"http://127.0.0.1:{free_port()}"

    def start(self) -> "X11Desk":
        self.xvfb.start()
        profile = tempfile.mkdtemp(prefix="deskbox-pyautogui-chromium-", dir=self.xvfb.tmp)
        port = urllib.parse.urlsplit(self.cdp).port
        argv = ["chromium", "--ozone-platform=x11", "--no-sandbox", "--no-first-run", "--no-default-browser-check",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-gpu",
                f"--user-data-dir={profile}", "--window-position=0,0", "--window-size=1280,800",
                "--remote-debugging-address=127.0.0.1", f"--remote-debugging-port={port}", "about:blank"]
        with open(self.xvfb.tmp / "chromium.log", "wb") as log:
            self.chromium = subprocess.Popen(argv, env={**os.environ, "DISPLAY": self.xvfb.display}, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(lambda: self._tabs() is not None, 30, what="Chromium's DevTools on X11")
        return self

    def stop(self) -> None:
        if self.chromium is not None:
            _stop(self.chromium)
            try:
                os.killpg(self.chromium.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.xvfb.stop()

    def _tabs(self) -> list[dict] | None:
        try:
            return [t for t in http("GET", self.cdp + "/json/list", timeout=5).json() if t["type"] == "page"]
        except (OSError, ValueError):
            return None

    def env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/"),
                "PYTHONPATH": f"{SHIMS_DIR}:{SESSION_SITE}", "DESKBOX_DESKTOPD": self.desktopd}

    def open(self) -> dict:
        self.pages.clear()
        old = self._tabs() or []
        url = self.pages.url(PAGE)
        tab = http("PUT", self.cdp + "/json/new?" + urllib.parse.quote(url, safe=":/?=&")).json()
        for t in old:
            http("GET", self.cdp + f"/json/close/{t['id']}")
        http("GET", self.cdp + f"/json/activate/{tab['id']}")
        load = self.pages.wait_for(type="load", page="/" + PAGE, timeout=20)
        self.pages.settle(0.2)
        self.pages.clear()
        return load


@pytest.fixture(scope="module", params=[pytest.param("wayland", marks=pytest.mark.desktop),
                                        pytest.param("x11", marks=pytest.mark.x11)])
def desk(request, pages):
    if request.param == "wayland":
        yield WaylandDesk(request.getfixturevalue("single"), pages)
        return
    x11 = X11Desk(pages)
    try:
        yield x11.start()
    finally:
        x11.stop()


@pytest.fixture
def shared_dir():
    """A folder the session's user may write to."""
    path = Path(tempfile.mkdtemp(prefix="deskbox-pyautogui-test-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def page(desk):
    """The fixture page, fresh; the pointer parked mid-screen (away from the fail-safe
    corners) by a plain desktopd move. Returns the page's load report."""
    load = desk.open()
    resp = http("POST", desk.desktopd + "/api/v1/pointer", {"action": "move", "x": 640, "y": 600})
    assert resp.status == 200, resp.body
    return load


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


# -- OSWorld's computer_13 -----------------------------------------------------------------------


def test_every_computer_13_action_type(desk, page):
    single, double, right = (desk.centre(page, t) for t in ("single", "double", "right"))
    box = desk.centre(page, "drag")
    text = desk.centre(page, "text")

    def at(point):
        return {"x": point[0], "y": point[1]}

    actions = [
        {"action_type": "MOVE_TO", "parameters": at(single)},
        {"action_type": "CLICK", "parameters": {"button": "left", "num_clicks": 1}},
        {"action_type": "DOUBLE_CLICK", "parameters": at(double)},
        {"action_type": "RIGHT_CLICK", "parameters": at(right)},
        {"action_type": "MOVE_TO", "parameters": at(box)},
        {"action_type": "MOUSE_DOWN", "parameters": {"button": "left"}},
        {"action_type": "MOVE_TO", "parameters": {"x": box[0] + 50, "y": box[1] + 20}},
        {"action_type": "MOUSE_UP", "parameters": {"button": "left"}},
        {"action_type": "DRAG_TO", "parameters": {"x": box[0] + 80, "y": box[1] + 40}},
        {"action_type": "CLICK", **at(text)},  # parameters beside action_type, as OSWorld allows
        {"action_type": "TYPING", "parameters": {"text": "x<y"}},
        {"action_type": "KEY_DOWN", "parameters": {"key": "shift"}},
        {"action_type": "PRESS", "parameters": {"key": "z"}},
        {"action_type": "KEY_UP", "parameters": {"key": "shift"}},
        {"action_type": "WAIT", "parameters": {"seconds": 0.3}},
    ]
    out = desk.output(f"""
        import json, time
        from pyautogui import computer13
        verdicts = [computer13.run(a) for a in {actions!r}]
        started = time.monotonic()
        verdicts.append(computer13.run({{"action_type": "WAIT", "parameters": {{"seconds": 0.3}}}}))
        waited = time.monotonic() - started
        verdicts += [computer13.run("FAIL"), computer13.run({{"action_type": "DONE"}})]
        print(json.dumps({{"verdicts": verdicts, "waited": waited, "at": list(pyautogui.position())}}))
    """)
    assert out["verdicts"] == [None] * (len(actions) + 1) + ["FAIL", "DONE"]
    assert out["waited"] >= 0.3
    pages = desk.pages
    assert pages.wait_for(type="click", target="single")["detail"] == 1
    assert pages.wait_for(type="dblclick", target="double")
    assert pages.wait_for(type="contextmenu", target="right")["button"] == 2
    start = page["rects"]["drag"]
    assert pages.wait_for(type="dropped", left=start["x"] + 50, top=start["y"] + 20)
    # DRAG_TO starts where the pointer is: the box's grip point, 50/20 px on.
    assert pages.wait_for(type="dropped", left=start["x"] + 80, top=start["y"] + 40)
    assert pages.wait_for(type="input", target="text", value="x<yZ")

    # HOTKEY, then PRESS, clear the field; SCROLL (positive dy is up, as in pyautogui).
    x, y = desk.centre(page, "swatch")
    desk.run(f"""
        from pyautogui import computer13
        for action in [{{"action_type": "HOTKEY", "parameters": {{"keys": ["ctrl", "a"]}}}},
                       {{"action_type": "PRESS", "parameters": {{"key": "backspace"}}}},
                       {{"action_type": "MOVE_TO", "parameters": {{"x": {x}, "y": {y + 200}}}}},
                       {{"action_type": "SCROLL", "parameters": {{"dx": 0, "dy": -4}}}}]:
            computer13.run(action)
    """)
    assert pages.wait_for(type="input", target="text", value="")
    assert pages.wait_for(type="scroll")["scrollY"] > 100


def test_computer_13_from_the_command_line(desk, page):
    x, y = desk.centre(page, "single")
    proc = desk.popen([sys.executable, "-S", "-m", "pyautogui.computer13",
                       json.dumps([{"action_type": "CLICK", "parameters": {"x": x, "y": y}}, "DONE"])])
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out) == {"verdict": "DONE"}
    assert desk.pages.wait_for(type="click", target="single")
    proc = desk.popen([sys.executable, "-S", "-m", "pyautogui.computer13", '{"action_type": "JUMP"}'])
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "unknown action_type 'JUMP'" in err


# -- desktopd's GET /api/v1/pointer, which position() reads ---------------------------------------


@pytest.mark.x11
def test_pointer_position_is_null_until_desktopd_moves_the_pointer_and_the_token_is_sent(monkeypatch):
    token = "pyautogui-test-token"
    monkeypatch.setenv("DESKBOX_TOKEN", token)  # the desktopd started below requires it
    auth = {"Authorization": f"Bearer {token}"}
    desktop = XvfbDesktop()

    def get(path: str) -> dict:
        resp = http("GET", desktop.url + path, headers=auth)
        assert resp.status == 200, resp.body[:300]
        return resp.json()

    def shim(code: str, **env: str) -> subprocess.CompletedProcess:
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(SHIMS_DIR), "DESKBOX_DESKTOPD": desktop.url,
               **env}
        return subprocess.run([sys.executable, "-S", "-c", "import pyautogui\n" + code], env=env,
                              capture_output=True, text=True, timeout=60)

    try:
        desktop.start()
        assert get("/api/v1/pointer") == {"display": None, "x": None, "y": None}
        # Before deskbox has placed it, the pointer is at the display's centre, as an X
        # server starts it: position() says so, and a click or a scroll without a point
        # acts there (a setup script's pyautogui.scroll(-2) right after an app opens).
        width, height = get("/api/v1/displays")["displays"][0]["size"]
        proc = shim("print(tuple(pyautogui.position()))", DESKBOX_TOKEN=token)
        assert proc.stdout.strip() == str((width // 2, height // 2)), proc.stderr
        proc = shim("pyautogui.scroll(-2)", DESKBOX_TOKEN=token)
        assert proc.returncode == 0, proc.stderr
        assert get("/api/v1/pointer") == {"display": 0, "x": width // 2, "y": height // 2}
        resp = http("POST", desktop.url + "/api/v1/pointer", {"action": "move", "x": 12, "y": 34}, headers=auth)
        assert resp.status == 200, resp.body
        assert get("/api/v1/pointer") == {"display": 0, "x": 12, "y": 34}
        proc = shim("print(tuple(pyautogui.position()))", DESKBOX_TOKEN=token)
        assert proc.stdout.strip() == "(12, 34)", proc.stderr
        # Without the token desktopd says no, and so does the shim.
        proc = shim("pyautogui.position()")
        assert proc.returncode != 0 and "DesktopdError" in proc.stderr and "bearer token" in proc.stderr
        assert {"get", "post"} <= set(get("/api/v1/openapi.json")["paths"]["/api/v1/pointer"])
    finally:
        desktop.stop()

