"""desktopd's X11 backend against a real Xvfb: screenshot pixels, XTest clicks and typing
that land in a real Chromium, and the EWMH window tree with focus and close."""

from __future__ import annotations

import io
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from PIL import Image
from Xlib import X
from Xlib import display as xdisplay
from Xlib import error as xerror
from Xlib.ext import randr
from Xlib.protocol import rq

from tests.support import ROOT, PageServer, css_to_device, free_port, http, wait_until

pytestmark = pytest.mark.x11

RED = (255, 0, 0)


def _stop(proc: subprocess.Popen | None, sig: int = signal.SIGTERM, timeout: float = 10) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def display_is_free(number: int) -> bool:
    return not (os.path.exists(f"/tmp/.X{number}-lock") or os.path.exists(f"/tmp/.X11-unix/X{number}"))


class XvfbDesktop:
    """An Xvfb of our own on a free display number, and desktopd on it."""

    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="deskbox-x11-test-"))
        self.number: int | None = None
        self.xvfb: subprocess.Popen | None = None
        self.desktopd: subprocess.Popen | None = None
        self.port = free_port()

    @property
    def display(self) -> str:
        return f":{self.number}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "XvfbDesktop":
        for number in range(90, 100):
            if display_is_free(number):
                self.xvfb = self._xvfb(number)
                if self.xvfb is not None:
                    self.number = number
                    break
        else:
            raise AssertionError("no free X display number in :90-:99")
        env = {**os.environ, "DISPLAY": self.display}
        with open(self.tmp / "desktopd.log", "wb") as log:
            self.desktopd = subprocess.Popen(
                [sys.executable, "-m", "deskbox.desktopd", "--backend", "x11", "--listen", f"127.0.0.1:{self.port}"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            )

        def healthy() -> bool:
            if self.desktopd.poll() is not None:
                raise AssertionError(f"desktopd exited:\n{self.log()[-3000:]}")
            try:
                return self.get("/api/v1/health").status == 200
            except OSError:
                return False

        wait_until(healthy, 20, what="desktopd on X11")
        return self

    def _xvfb(self, number: int) -> subprocess.Popen | None:
        """Xvfb on :number once its socket is there; None if it lost the number to another."""
        with open(self.tmp / f"xvfb-{number}.log", "wb") as log:
            proc = subprocess.Popen(["Xvfb", f":{number}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                                    stdout=log, stderr=subprocess.STDOUT)
        socket_path = f"/tmp/.X11-unix/X{number}"
        try:
            wait_until(lambda: os.path.exists(socket_path) or proc.poll() is not None, 10, what=f"Xvfb :{number}")
        except AssertionError:
            _stop(proc)
            raise
        return proc if proc.poll() is None else None

    def stop(self) -> None:
        _stop(self.desktopd, signal.SIGINT)
        _stop(self.xvfb)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def log(self) -> str:
        return (self.tmp / "desktopd.log").read_text(errors="replace")

    def get(self, path: str):
        return http("GET", self.url + path, timeout=10)

    def post(self, path: str, body=None):
        return http("POST", self.url + path, body if body is not None else {}, timeout=30)

    def ok(self, method: str, path: str, body=None):
        resp = self.get(path) if method == "GET" else self.post(path, body)
        assert resp.status == 200, f"{method} {path} -> {resp.status} {resp.body[:500]!r}"
        return resp.json()

    def pointer(self, **body):
        return self.ok("POST", "/api/v1/pointer", body)

    def keyboard(self, **body):
        return self.ok("POST", "/api/v1/keyboard", body)

    def windows(self) -> list[dict]:
        return self.ok("GET", "/api/v1/tree")["windows"]

    def screenshot(self, display: int = 0) -> Image.Image:
        resp = self.get(f"/api/v1/screenshot?display={display}")
        assert resp.status == 200, resp.body[:300]
        assert resp.headers["content-type"] == "image/png"
        return Image.open(io.BytesIO(resp.body)).convert("RGB")


@pytest.fixture(scope="module")
def desk():
    desktop = XvfbDesktop()
    try:
        yield desktop.start()
    finally:
        desktop.stop()


@pytest.fixture(scope="module")
def xconn(desk):
    """The test's own X connection, for windows the tests create."""
    conn = xdisplay.Display(desk.display)
    yield conn
    conn.close()


def make_window(conn, x: int, y: int, w: int, h: int, rgb: tuple[int, int, int], title: str, *,
                protocols: list[str] = ()):
    screen = conn.screen()
    pixel = (rgb[0] << 16) | (rgb[1] << 8) | rgb[2]  # TrueColor 24-bit visual
    win = screen.root.create_window(x, y, w, h, 0, screen.root_depth, X.InputOutput, X.CopyFromParent,
                                    background_pixel=pixel, override_redirect=False)
    win.set_wm_name(title)
    win.set_wm_class(title.lower(), "DeskboxTest")
    win.change_property(conn.intern_atom("_NET_WM_PID"), conn.intern_atom("CARDINAL"), 32, [os.getpid()])
    if protocols:
        win.set_wm_protocols([conn.intern_atom(p) for p in protocols])
    win.map()
    conn.sync()
    return win


def tree_entry(desk, title: str) -> dict | None:
    return next((w for w in desk.windows() if w["title"] == title), None)


# -- displays and pixels -----------------------------------------------------------------


def test_health_and_one_display_the_size_of_the_screen(desk):
    health = desk.ok("GET", "/api/v1/health")
    assert health["backend"] == "x11" and health["ok"] is True and health["error"] is None
    (display,) = desk.ok("GET", "/api/v1/displays")["displays"]
    assert display["id"] == 0 and display["primary"] is True and display["scale"] == 1.0
    assert display["size"] == [1280, 800] and display["bounds"] == [0, 0, 1280, 800]


def test_screenshot_shows_a_red_window_where_it_was_mapped(desk, xconn):
    win = make_window(xconn, 50, 60, 200, 100, RED, "red square")
    try:
        wait_until(lambda: tree_entry(desk, "red square"), 5, what="the red window in the tree")
        image = desk.screenshot(0)
        assert image.size == (1280, 800)
        assert image.getpixel((50 + 100, 60 + 50)) == RED
        assert image.getpixel((50, 60)) == RED and image.getpixel((249, 159)) == RED
        assert image.getpixel((250, 160)) != RED and image.getpixel((49, 59)) != RED
    finally:
        win.destroy()
        xconn.sync()


def test_tree_lists_a_window_with_its_class_pid_and_geometry(desk, xconn):
    win = make_window(xconn, 300, 200, 160, 120, (0, 0, 255), "blue box")
    try:
        entry = wait_until(lambda: tree_entry(desk, "blue box"), 5, what="the blue window in the tree")
        assert entry["id"] == f"x{win.id:x}"
        assert entry["app_id"] == "DeskboxTest" and entry["pid"] == os.getpid()
        assert entry["bounds"] == [300, 200, 160, 120] and entry["layout_bounds"] == [300, 200, 160, 120]
        assert entry["display_id"] == 0 and entry["floating"] is False and entry["workspace"] is None
    finally:
        win.destroy()
        xconn.sync()


def next_client_message(conn, type_name: str, timeout: float = 5):
    """The next ClientMessage of ``type_name`` this connection hears, or None."""
    wanted = conn.intern_atom(type_name)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not conn.pending_events():
            select.select([conn.fileno()], [], [], 0.1)
            continue
        ev = conn.next_event()
        if ev.type == X.ClientMessage and ev.client_type == wanted:
            return ev
    return None


def test_with_a_window_manager_the_tree_and_actions_go_through_ewmh(desk, xconn):
    # The test plays a minimal EWMH window manager: it announces itself on the root,
    # frames one client, lists it in _NET_CLIENT_LIST and hears the requests desktopd
    # sends it (as a real manager would, with SubstructureNotify on the root).
    root = xconn.screen().root
    atom = xconn.intern_atom
    cardinal, window_type, atom_type = atom("CARDINAL"), atom("WINDOW"), atom("ATOM")
    check = root.create_window(-10, -10, 1, 1, 0, X.CopyFromParent)
    frame = make_window(xconn, 100, 100, 300, 240, (40, 40, 40), "frame")
    client = make_window(xconn, 0, 0, 280, 200, (0, 0, 200), "managed")
    client.reparent(frame, 10, 30)
    client.change_property(atom("_NET_WM_DESKTOP"), cardinal, 32, [1])
    loose = make_window(xconn, 600, 500, 50, 50, (0, 200, 0), "unmanaged")
    root.change_attributes(event_mask=X.SubstructureNotifyMask)
    check.change_property(atom("_NET_SUPPORTING_WM_CHECK"), window_type, 32, [check.id])
    root.change_property(atom("_NET_SUPPORTING_WM_CHECK"), window_type, 32, [check.id])
    root.change_property(atom("_NET_SUPPORTED"), atom_type, 32,
                         [atom(a) for a in ("_NET_CLIENT_LIST", "_NET_ACTIVE_WINDOW", "_NET_CLOSE_WINDOW")])
    root.change_property(atom("_NET_CLIENT_LIST"), window_type, 32, [client.id])
    root.change_property(atom("_NET_ACTIVE_WINDOW"), window_type, 32, [client.id])
    xconn.sync()
    try:
        tree = desk.ok("GET", "/api/v1/tree")
        (entry,) = tree["windows"]  # the frame and the loose window are nobody's clients
        assert entry["id"] == f"x{client.id:x}" and entry["title"] == "managed"
        # The client area inside the frame, in root coordinates.
        assert entry["bounds"] == [110, 130, 280, 200]
        assert entry["workspace"] == "1" and entry["focused"] is True and tree["focused"] == entry["id"]

        desk.ok("POST", f"/api/v1/windows/{entry['id']}/focus")
        asked = next_client_message(xconn, "_NET_ACTIVE_WINDOW")
        assert asked is not None and asked.window.id == client.id and asked.data[1][0] == 2  # from a pager/tool
        desk.ok("POST", f"/api/v1/windows/{entry['id']}/close")
        asked = next_client_message(xconn, "_NET_CLOSE_WINDOW")
        assert asked is not None and asked.window.id == client.id
        # A window the manager does not list is not a window desktopd acts on.
        resp = desk.post(f"/api/v1/windows/x{loose.id:x}/close")
        assert resp.status == 404
    finally:
        root.change_attributes(event_mask=0)
        for name in ("_NET_SUPPORTING_WM_CHECK", "_NET_SUPPORTED", "_NET_CLIENT_LIST", "_NET_ACTIVE_WINDOW"):
            root.delete_property(atom(name))
        for win in (check, loose, frame):
            win.destroy()
        xconn.sync()
    assert tree_entry(desk, "unmanaged") is None and tree_entry(desk, "frame") is None


class _SetMonitor(rq.Request):
    """RandR 1.5 SetMonitor, spelled out: python-xlib 0.33's own cannot pack its request."""

    _request = rq.Struct(
        rq.Card8("opcode"), rq.Opcode(43), rq.RequestLength(), rq.Window("window"),
        rq.Card32("name"), rq.Bool("primary"), rq.Bool("automatic"), rq.LengthOf("outputs", 2),
        rq.Int16("x"), rq.Int16("y"), rq.Card16("width"), rq.Card16("height"),
        rq.Card32("width_mm"), rq.Card32("height_mm"), rq.List("outputs", rq.Card32Obj),
    )


def test_two_randr_monitors_are_two_displays_with_their_own_pixels(desk, xconn):
    root = xconn.screen().root
    outputs = list(root.xrandr_get_screen_resources().outputs)
    names = [xconn.intern_atom("DESKBOX-B"), xconn.intern_atom("DESKBOX-A")]
    opcode = xconn.display.get_extension_major(randr.extname)
    # Defined right to left: display ids must still run left to right.
    for name, x, outs in ((names[0], 640, []), (names[1], 0, outputs)):
        _SetMonitor(display=xconn.display, opcode=opcode, window=root, name=name, primary=False, automatic=False,
                    x=x, y=0, width=640, height=800, width_mm=169, height_mm=212, outputs=outs)
    xconn.sync()
    win = make_window(xconn, 700, 100, 100, 50, RED, "on the right")
    try:
        displays = desk.ok("GET", "/api/v1/displays")["displays"]
        assert [(d["id"], d["name"], d["bounds"], d["size"]) for d in displays] == [
            (0, "DESKBOX-A", [0, 0, 640, 800], [640, 800]),
            (1, "DESKBOX-B", [640, 0, 640, 800], [640, 800]),
        ]
        entry = wait_until(lambda: tree_entry(desk, "on the right"), 5, what="the window in the tree")
        assert entry["display_id"] == 1 and entry["bounds"] == [60, 100, 100, 50]
        assert entry["layout_bounds"] == [700, 100, 100, 50]
        image = desk.screenshot(1)
        assert image.size == (640, 800)
        assert image.getpixel((60, 100)) == RED and image.getpixel((159, 149)) == RED
        assert image.getpixel((59, 100)) != RED and image.getpixel((160, 149)) != RED
        # Display-local (10, 20) on display 1 is root (650, 20).
        desk.pointer(action="move", display=1, x=10, y=20)
        pointer = root.query_pointer()
        assert (pointer.root_x, pointer.root_y) == (650, 20)
        resp = desk.post("/api/v1/pointer", {"action": "move", "display": 1, "x": 640, "y": 10})
        assert resp.status == 400 and resp.json()["error"]["code"] == "out_of_bounds"
    finally:
        win.destroy()
        for name in names:
            root.xrandr_delete_monitor(name)
        xconn.sync()
    assert len(desk.ok("GET", "/api/v1/displays")["displays"]) == 1


def test_desktopd_refuses_to_start_without_an_x_server():
    number = next(n for n in range(80, 90) if display_is_free(n))
    port = free_port()
    proc = subprocess.run(
        [sys.executable, "-m", "deskbox.desktopd", "--backend", "x11", "--listen", f"127.0.0.1:{port}"],
        cwd=ROOT, env={**os.environ, "DISPLAY": f":{number}"}, capture_output=True, text=True, timeout=30,
    )
    assert proc.returncode != 0
    assert f"cannot connect to the X display :{number}" in proc.stdout + proc.stderr


def test_health_reports_a_lost_x_server():
    desktop = XvfbDesktop()
    try:
        desktop.start()
        desktop.xvfb.terminate()
        desktop.xvfb.wait(10)

        def unhealthy():
            resp = desktop.get("/api/v1/health")
            return resp if resp.status == 503 else None

        health = wait_until(unhealthy, 15, what="health to report the lost X server").json()
        assert health["ok"] is False and "X connection" in health["error"]
        resp = desktop.get("/api/v1/screenshot?display=0")
        assert resp.status == 503 and resp.json()["error"]["code"] == "display_unavailable"
    finally:
        desktop.stop()


# -- input into a real Chromium ------------------------------------------------------------


@pytest.fixture(scope="module")
def page_server():
    return PageServer().start()


@pytest.fixture(scope="module")
def chromium(desk, page_server):
    """Chromium on the input fixture page, full screen on the Xvfb; yields its process."""
    profile = tempfile.mkdtemp(prefix="deskbox-x11-chromium-", dir=desk.tmp)
    argv = ["chromium", "--ozone-platform=x11", "--no-sandbox", "--no-first-run", "--no-default-browser-check",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-gpu",
            f"--user-data-dir={profile}", "--window-position=0,0", "--window-size=1280,800",
            f"--app={page_server.url('input.html')}"]
    env = {**os.environ, "DISPLAY": desk.display}
    with open(desk.tmp / "chromium.log", "wb") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        page_server.wait_for(type="load", page="/input.html", timeout=30)
        yield proc
    finally:
        _stop(proc)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # helpers Chromium started in its own group
        except ProcessLookupError:
            pass


def chromium_window(desk) -> dict:
    def find():
        return next((w for w in desk.windows() if "chromium" in (w["app_id"] or "").lower()), None)

    return wait_until(find, 20, what="a Chromium window in the tree")


@pytest.fixture
def input_page(desk, chromium, page_server):
    """The input page freshly loaded; returns its load report (element rects, viewport)."""
    window = chromium_window(desk)
    # Reload so every test starts from an empty page.
    desk.ok("POST", f"/api/v1/windows/{window['id']}/focus")
    page_server.clear()
    desk.keyboard(action="key", keys="F5")
    load = page_server.wait_for(type="load", page="/input.html", timeout=20)
    page_server.settle(0.2)
    page_server.clear()
    return load


def centre(desk, load, element):
    r = load["rects"][element]
    return css_to_device(chromium_window(desk), load, r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)


def click_on(desk, load, element, **extra):
    x, y = centre(desk, load, element)
    desk.pointer(action="click", x=x, y=y, **extra)
    return x, y


def test_the_tree_lists_chromium_with_its_pid_and_the_client_area(desk, chromium, input_page):
    window = chromium_window(desk)
    assert window["id"].startswith("x") and window["pid"] is not None
    # The pid is Chromium's browser process: the one we started.
    assert window["pid"] == chromium.pid
    x, y, w, h = window["bounds"]
    assert (x, y) == (0, 0) and 1200 <= w <= 1280 and 700 <= h <= 800
    assert window["layout_bounds"] == window["bounds"] and window["display_id"] == 0
    # The page's viewport fits inside the client area.
    assert input_page["innerWidth"] <= w and input_page["innerHeight"] <= h


def test_click_at_the_submit_buttons_centre_lands_on_submit(desk, page_server, input_page):
    r = input_page["rects"]["submit"]
    click_on(desk, input_page, "submit")
    event = page_server.wait_for(type="click", target="submit")
    assert abs(event["x"] - (r["x"] + r["w"] / 2)) <= 1
    assert abs(event["y"] - (r["y"] + r["h"] / 2)) <= 1
    assert event["button"] == 0 and event["detail"] == 1


def test_click_at_an_exact_pixel_reports_that_pixel(desk, page_server, input_page):
    r = input_page["rects"]["submit"]
    x, y = css_to_device(chromium_window(desk), input_page, r["x"] + 7, r["y"] + 7)
    desk.pointer(action="click", x=x, y=y)
    event = page_server.wait_for(type="click", target="submit")
    assert (event["x"], event["y"]) == (r["x"] + 7, r["y"] + 7)


def test_right_and_double_click(desk, page_server, input_page):
    click_on(desk, input_page, "other", count=2)
    assert page_server.wait_for(type="dblclick", target="other")["detail"] == 2
    click_on(desk, input_page, "submit", button="right")
    assert page_server.wait_for(type="contextmenu", target="submit")["button"] == 2


def test_typed_unicode_arrives_exactly(desk, page_server, input_page):
    click_on(desk, input_page, "text")
    text = "Héllo wörld ✓ 中文 😀"
    desk.keyboard(action="type", text=text)
    assert page_server.wait_for(type="input", target="text", value=text)


def test_more_distinct_characters_than_spare_keycodes_type_exactly(desk, page_server, input_page):
    # Xvfb's keymap has about 19 keycodes without keysyms; 40 distinct characters reuse them.
    text = "".join(chr(0x4E00 + i * 7) for i in range(40)) + " ÆØÅ ß € <>&\"'~`|\\"
    click_on(desk, input_page, "area")
    desk.keyboard(action="type", text=text)
    page_server.wait_for(type="input", target="area", value=text, timeout=20)


def test_ctrl_a_then_backspace_clears_the_field(desk, page_server, input_page):
    click_on(desk, input_page, "text")
    desk.keyboard(action="type", text="to be deleted")
    page_server.wait_for(type="input", target="text", value="to be deleted")
    desk.keyboard(action="key", keys="ctrl+a")
    desk.keyboard(action="key", keys="backspace")
    page_server.wait_for(type="input", target="text", value="")


def test_shift_held_across_requests_and_level_two_keys(desk, page_server, input_page):
    click_on(desk, input_page, "text")
    desk.keyboard(action="down", key="shift")
    desk.keyboard(action="type", text="abc")
    desk.keyboard(action="up", key="shift")
    desk.keyboard(action="type", text="d!A")
    page_server.wait_for(type="input", target="text", value="ABCd!A")
    desk.keyboard(action="key", keys="ctrl+shift+z")
    event = page_server.wait_for(type="keydown", code="KeyZ")
    assert event["ctrl"] and event["shift"] and not event["alt"]


def test_scroll_scrolls_the_page_down_and_back(desk, page_server, input_page):
    x, y = centre(desk, input_page, "submit")
    desk.pointer(action="scroll", x=x, y=y + 300, dy=5)
    down = page_server.wait_for(type="scroll")
    assert down["scrollY"] > 100
    page_server.clear()
    desk.pointer(action="scroll", dy=-20)
    assert page_server.wait_for(type="scroll", scrollY=0)


def test_a_drag_moves_a_draggable_element(desk, page_server, input_page):
    x, y = centre(desk, input_page, "drag")
    desk.pointer(action="drag", x=x, y=y, path=[[x + 60, y + 40], [x + 150, y + 90]])
    dropped = page_server.wait_for(type="dropped")
    start = input_page["rects"]["drag"]
    assert abs(dropped["left"] - (start["x"] + 150)) <= 1
    assert abs(dropped["top"] - (start["y"] + 90)) <= 1


def test_a_click_outside_the_display_is_rejected(desk, page_server, input_page):
    for x, y in ((1280, 10), (10, 800), (-1, 5)):
        resp = desk.post("/api/v1/pointer", {"action": "click", "x": x, "y": y})
        assert resp.status == 400, resp.body
        assert resp.json()["error"]["code"] == "out_of_bounds"
    resp = desk.post("/api/v1/pointer", {"action": "click", "display": 1, "x": 10, "y": 10})
    assert resp.status == 404 and resp.json()["error"]["code"] == "unknown_display"
    page_server.settle(0.2)
    assert page_server.matching(type="click") == []


# -- focus and close ------------------------------------------------------------------------


def test_focus_moves_the_keyboard_focus_to_a_window(desk, xconn, chromium):
    win = make_window(xconn, 900, 500, 200, 150, (0, 160, 0), "focus me")
    try:
        entry = wait_until(lambda: tree_entry(desk, "focus me"), 5, what="the window in the tree")
        desk.ok("POST", f"/api/v1/windows/{entry['id']}/focus")
        tree = desk.ok("GET", "/api/v1/tree")
        assert tree["focused"] == entry["id"]
        assert xconn.get_input_focus().focus.id == win.id
        chrome = chromium_window(desk)
        desk.ok("POST", f"/api/v1/windows/{chrome['id']}/focus")
        assert desk.ok("GET", "/api/v1/tree")["focused"] == chrome["id"]
    finally:
        win.destroy()
        xconn.sync()


def test_close_asks_a_window_that_takes_wm_delete_window(desk, xconn):
    win = make_window(xconn, 600, 300, 120, 80, (200, 200, 0), "polite", protocols=["WM_DELETE_WINDOW"])
    entry = wait_until(lambda: tree_entry(desk, "polite"), 5, what="the window in the tree")
    desk.ok("POST", f"/api/v1/windows/{entry['id']}/close")
    # The client is asked, not killed: it gets WM_PROTOCOLS / WM_DELETE_WINDOW and obeys.
    deadline = time.monotonic() + 5
    asked = None
    while asked is None and time.monotonic() < deadline:
        if not xconn.pending_events():
            select.select([xconn.fileno()], [], [], 0.1)
            continue
        ev = xconn.next_event()
        if ev.type == X.ClientMessage and ev.window.id == win.id:
            asked = ev
    assert asked is not None, "no WM_DELETE_WINDOW message arrived"
    assert asked.client_type == xconn.intern_atom("WM_PROTOCOLS")
    assert asked.data[1][0] == xconn.intern_atom("WM_DELETE_WINDOW")
    win.destroy()
    xconn.sync()
    wait_until(lambda: tree_entry(desk, "polite") is None, 5, what="the window to leave the tree")


def test_close_disconnects_a_client_that_cannot_be_asked(desk):
    other = xdisplay.Display(desk.display)
    try:
        make_window(other, 700, 400, 100, 100, (120, 0, 120), "rude")
        entry = wait_until(lambda: tree_entry(desk, "rude"), 5, what="the window in the tree")
        desk.ok("POST", f"/api/v1/windows/{entry['id']}/close")
        wait_until(lambda: tree_entry(desk, "rude") is None, 5, what="the window to leave the tree")
        with pytest.raises((xerror.ConnectionClosedError, OSError)):
            other.get_input_focus()
    finally:
        try:
            other.close()
        except Exception:
            pass


def test_unknown_window_ids_are_not_found(desk):
    for wid in ("x1", "w12", "xzz"):
        for action in ("focus", "close"):
            resp = desk.post(f"/api/v1/windows/{wid}/{action}")
            assert resp.status == 404, (wid, action, resp.body)
            assert resp.json()["error"]["code"] == "not_found"
