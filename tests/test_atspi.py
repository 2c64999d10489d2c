"""Native apps over AT-SPI in a real session: the buses `deskbox up` starts, what the
reader lists for a GTK3 app, gnome-calculator (GTK4) and Chromium's own UI, and that a
click at a node's box mapped to display pixels lands on that node.

The session has one display at scale 2, so every box crosses from layout to device
pixels. The reader runs as the session user (AT-SPI answers only the apps' own uid) in
tests/apps/atspi_probe.py; the apps report what they receive on stdout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from deskbox.atspi import NativeNode, visible_window
from tests.support import ROOT, PageServer, Process, Session, http, wait_until

pytestmark = pytest.mark.desktop

OUTPUT = "2560x1600@2"
FIXTURE_APP = ROOT / "tests" / "apps" / "gtk3_buttons.py"
PROBE = ROOT / "tests" / "apps" / "atspi_probe.py"
# GTK comes from Debian's python3-gi: the fixture app runs on the system Python.
SYSTEM_PYTHON = "/usr/bin/python3"


class Probe(Process):
    """An AtspiReader living in the session, as the session user."""

    def __init__(self, session: Session) -> None:
        super().__init__(session, [sys.executable, str(PROBE)], stdin=subprocess.PIPE,
                         env=session.app_env(PYTHONPATH=str(ROOT)))

    def call(self, **request: Any) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()
        return self.next(30)

    def snapshot(self, **options: Any) -> list[NativeNode]:
        reply = self.call(op="snapshot", **options)
        return [NativeNode(**{**n, "extents": _tuple(n["extents"]), "states": tuple(n["states"]),
                              "actions": tuple(n["actions"]), "spans": tuple(map(tuple, n["spans"]))})
                for n in reply["nodes"]]

    def act(self, key: str, action: str) -> dict:
        return self.call(op="act", key=key, action=action)


def _tuple(value: Any) -> Any:
    return tuple(value) if value is not None else None


@pytest.fixture(scope="module")
def session():
    s = Session([OUTPUT]).start()
    s.browser_window()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def probe(session):
    # Started before any native app: apps that come later must show up all the same.
    p = Probe(session)
    yield p
    p.stop()


@pytest.fixture(scope="module")
def gtk_app(session, probe):
    app = Process(session, [SYSTEM_PYTHON, str(FIXTURE_APP)])
    app.wait_for(event="ready", timeout=30)
    window_of(session, app.pid)
    yield app
    app.stop()


# -- helpers ------------------------------------------------------------------------------


def window_of(session: Session, pid: int) -> dict:
    return wait_until(lambda: next((w for w in session.windows() if w["pid"] == pid), None), 20,
                      what=f"a window of pid {pid}")


def display_scale(session: Session, window: dict) -> float:
    return next(d for d in session.ok("/api/v1/displays")["displays"] if d["id"] == window["display_id"])["scale"]


def nodes_of(nodes: list[NativeNode], pid: int) -> list[NativeNode]:
    return [n for n in nodes if n.pid == pid]


def find(nodes: list[NativeNode], role: str, name: str) -> NativeNode:
    found = [n for n in nodes if n.role == role and n.name == name]
    assert found, f"no {role} {name!r} among {[(n.role, n.name) for n in nodes]}"
    return found[0]


def frame_of(nodes: list[NativeNode], node: NativeNode) -> NativeNode:
    return next(n for n in nodes if n.depth == 1 and n.pid == node.pid and n.name == node.frame)


def to_device(session: Session, nodes: list[NativeNode], node: NativeNode) -> tuple[float, float, float, float]:
    """The formula in deskbox/atspi/__init__.py's docstring: a node's extents -> display-
    local device pixels, from Sway's content rect of its window and the display scale."""
    window = window_of(session, node.pid)
    scale = display_scale(session, window)
    lx, ly, lw, lh = window["layout_bounds"]
    dx, dy = window["bounds"][:2]
    vx, vy, vw, vh = visible_window(frame_of(nodes, node), (lw, lh))
    cx = max(0.0, (lw - vw) / 2)
    cy = max(0.0, (lh - vh) / 2)
    x, y, w, h = node.extents
    return dx + (cx + x - vx) * scale, dy + (cy + y - vy) * scale, w * scale, h * scale


def centre(box: tuple[float, float, float, float]) -> tuple[int, int]:
    x, y, w, h = box
    return round(x + w / 2), round(y + h / 2)


def snapshot_until(probe: Probe, predicate, what: str, timeout: float = 10, **options: Any) -> list[NativeNode]:
    last: list[NativeNode] = []

    def attempt():
        nonlocal last
        last = probe.snapshot(**options)
        return last if predicate(last) else None

    try:
        return wait_until(attempt, timeout, interval=0.2, what=what)
    except AssertionError:
        raise AssertionError(f"{what}; last snapshot: {[(n.pid, n.role, n.name) for n in last]}") from None


def sway(session: Session, command: str) -> None:
    subprocess.run(["swaymsg", "-s", session.state["swaysock"], command], check=True, capture_output=True)


# -- the session's buses -------------------------------------------------------------------


def _dbus_get(session: Session, prop: str) -> str:
    return subprocess.run(
        ["dbus-send", "--session", "--print-reply", "--dest=org.a11y.Bus", "/org/a11y/bus",
         "org.freedesktop.DBus.Properties.Get", "string:org.a11y.Status", f"string:{prop}"],
        env={"PATH": os.environ["PATH"], "DBUS_SESSION_BUS_ADDRESS": session.state["dbus_session_bus_address"]},
        capture_output=True, text=True, check=True,
    ).stdout


def test_the_session_bus_has_accessibility_and_the_screen_reader_switched_on(session):
    assert "boolean true" in _dbus_get(session, "IsEnabled")
    assert "boolean true" in _dbus_get(session, "ScreenReaderEnabled")


def test_sway_and_the_services_share_the_session_bus(session):
    """(Chromium rewrites its own environment block; that it got the bus shows in the
    Chromium tests below: it is on AT-SPI.)"""
    address = session.state["dbus_session_bus_address"]
    assert address == f"unix:path={session.state['runtime_dir']}/bus"
    assert session.app_env()["DBUS_SESSION_BUS_ADDRESS"] == address
    # The children as they are now: a test may have killed one and the supervisor
    # started it again, so the pids the session started with can be gone.
    names = ("atspi", "sway", "desktopd", "bridge", "scene")
    pids = {name: child["pid"] for name, child in session.children_up().items()}
    for name in names:
        env = Path(f"/proc/{pids[name]}/environ").read_bytes().split(b"\0")
        assert f"DBUS_SESSION_BUS_ADDRESS={address}".encode() in env, name
    assert session.state["scene"] == session.scene
    assert http("GET", session.scene + "/api/v1/health").status == 200


# -- a GTK3 app --------------------------------------------------------------------------


def test_fixture_buttons_are_listed_with_names_roles_actions_and_boxes(session, probe, gtk_app):
    # Read once the app holds still: windows a test before opened or closed beside it
    # resized it, and GTK lays it out again (and reports it) a moment after Sway does.
    seen: list = []

    def settled(ns: list[NativeNode]) -> bool:
        mine = sorted((n.role, n.name, n.extents) for n in ns if n.pid == gtk_app.pid)
        size = window_of(session, gtk_app.pid)["layout_bounds"][2:]
        still = bool(mine) and seen == [mine, size]
        seen[:] = [mine, size]
        return still

    nodes = nodes_of(snapshot_until(probe, settled, "the fixture app on AT-SPI, holding still"), gtk_app.pid)
    frame = find(nodes, "frame", "deskbox GTK3 fixture")
    assert frame.depth == 1 and frame.app == FIXTURE_APP.name
    for name in ("Alpha", "Beta", "Gamma", "Grow", "Rename"):
        button = find(nodes, "push button", name)
        assert button.actions == ("click",) and "focusable" in button.states and button.frame == frame.name
    assert "click" in find(nodes, "toggle button", "Delta").actions
    entry = find(nodes, "text", "Name")
    assert entry.value == "" and "editable" in entry.states
    # A plain GtkWindow gets server-side decorations from Sway: its surface is the window
    # Sway shows, and extents are GTK's own layout-pixel boxes of the widgets in it.
    layout = gtk_app.latest(event="layout") or gtk_app.latest(event="ready")
    window = window_of(session, gtk_app.pid)
    assert frame.extents == (0, 0, window["layout_bounds"][2], window["layout_bounds"][3])
    for name, box in layout["widgets"].items():
        role = {"Delta": "toggle button", "Name": "text"}.get(name, "push button")
        assert find(nodes, role, name).extents == tuple(box), name
    # Nothing that only lays out: no unnamed panel, and no label repeating its button.
    assert not [n for n in nodes if n.role in ("panel", "filler") and not n.name]


def test_a_click_at_a_buttons_mapped_centre_is_received_by_that_button(session, probe):
    # An app of its own: the toggle and the text it leaves would be the module fixture's
    # state for the tests after it.
    app = Process(session, [SYSTEM_PYTHON, str(FIXTURE_APP), "--title", "Clicking fixture"])
    try:
        app.wait_for(event="ready", timeout=30)
        window_of(session, app.pid)
        # Once its widgets hold still: the windows tiled beside it moved when it came.
        seen: list[dict] = []

        def laid_out(ns: list[NativeNode]) -> bool:
            mine = {(n.role, n.name): n.extents for n in ns if n.pid == app.pid}
            settled = bool(seen) and seen[0] == mine and ("toggle button", "Delta") in mine
            seen[:] = [mine]
            return settled

        nodes = snapshot_until(probe, laid_out, "the clicking fixture on AT-SPI, laid out")
        for role, name in [("push button", "Alpha"), ("push button", "Gamma"), ("toggle button", "Delta"),
                           ("push button", "Beta")]:
            x, y = centre(to_device(session, nodes, find(nodes_of(nodes, app.pid), role, name)))
            session.pointer(action="click", x=x, y=y)
            if role == "toggle button":
                assert app.wait_for(event="toggle", widget=name)["active"] is True
            else:
                app.wait_for(event="click", widget=name)
        # The entry too: a click there gives it the keyboard.
        x, y = centre(to_device(session, nodes, find(nodes_of(nodes, app.pid), "text", "Name")))
        session.pointer(action="click", x=x, y=y)
        session.keyboard(action="type", text="hi")
        app.wait_for(event="text", widget="Name", text="hi")
        nodes = snapshot_until(probe, lambda ns: find(nodes_of(ns, app.pid), "text", "Name").value == "hi",
                               "the entry's new text")
        assert "checked" in find(nodes_of(nodes, app.pid), "toggle button", "Delta").states
    finally:
        app.stop()


def test_reader_act_clicks_a_fixture_button(probe, gtk_app):
    nodes = nodes_of(probe.snapshot(), gtk_app.pid)
    assert probe.act(find(nodes, "push button", "Beta").key, "click") == {"ok": True}
    gtk_app.wait_for(event="click", widget="Beta")
    # "click" on an entry is its "activate"; an action it does not have is refused.
    reply = probe.act(find(nodes, "push button", "Alpha").key, "expand")
    assert reply == {"error": "NoSuchAction", "actions": ["click"]}
    assert probe.act("nobody:/org/a11y/atspi/accessible/1", "click") == {"ok": False}


def test_the_reader_sees_widgets_added_and_renamed_after_its_last_look(session, probe):
    # An app of its own: the module's fixture app keeps its buttons as the other tests
    # expect them, whatever order they run in.
    app = Process(session, [SYSTEM_PYTHON, str(FIXTURE_APP), "--title", "Renaming fixture"])
    try:
        app.wait_for(event="ready", timeout=30)
        nodes = nodes_of(snapshot_until(probe, lambda ns: any(n.pid == app.pid and n.name == "Rename" for n in ns),
                                        "the renaming fixture on AT-SPI"), app.pid)
        probe.act(find(nodes, "push button", "Grow").key, "click")
        app.wait_for(event="click", widget="Grow")
        probe.act(find(nodes, "push button", "Rename").key, "click")
        app.wait_for(event="click", widget="Rename")
        nodes = snapshot_until(probe, lambda ns: {"Extra 1", "Renamed 1"} <= {n.name for n in ns if n.pid == app.pid},
                               "the new button and the new name")
        extra = find(nodes_of(nodes, app.pid), "push button", "Extra 1")
        assert probe.act(extra.key, "click") == {"ok": True}
        app.wait_for(event="click", widget="Extra 1")
        assert "Rename" not in {n.name for n in nodes if n.pid == app.pid}
    finally:
        app.stop()


def test_a_floating_header_bar_window_maps_past_its_shadow(session, probe, gtk_app):
    """Client-side decorations: a floating GTK3 window with a GtkHeaderBar draws a shadow
    around itself; extents are relative to the shadowed surface, Sway places the window."""
    app = Process(session, [SYSTEM_PYTHON, str(FIXTURE_APP), "--headerbar", "--title", "Header bar fixture"])
    try:
        app.wait_for(event="ready", timeout=30)
        window_of(session, app.pid)
        sway(session, f"[pid={app.pid}] floating enable, move position 600 300")
        wait_until(lambda: window_of(session, app.pid)["floating"]
                   and window_of(session, app.pid)["layout_bounds"][:2] == [600, 300], 10, what="floating")

        def settled(ns):
            # The frame's extents take in the shadow first; the buttons follow once GTK has
            # laid the floating window out, which it reports: click only after both.
            mine = nodes_of(ns, app.pid)
            layout = app.latest(event="layout")
            if (not mine or mine[0].extents[2] <= window_of(session, app.pid)["layout_bounds"][2]
                    or layout is None or list(mine[0].extents[2:]) != layout["surface_size"]):
                return False
            buttons = {n.name: n.extents for n in mine if n.role == "push button"}
            return all(buttons.get(name) == tuple(layout["widgets"][name]) for name in ("Alpha", "Gamma"))

        nodes = snapshot_until(probe, settled, "the window's shadow in its extents and the buttons laid out again")
        mine = nodes_of(nodes, app.pid)
        frame = find(mine, "frame", "Header bar fixture")
        content = window_of(session, app.pid)["layout_bounds"]
        vx, vy, vw, vh = visible_window(frame, (content[2], content[3]))
        assert vx > 0 and vy > 0 and (vw, vh) == (content[2], content[3])
        for name in ("Alpha", "Gamma"):
            x, y = centre(to_device(session, nodes, find(mine, "push button", name)))
            session.pointer(action="click", x=x, y=y)
            app.wait_for(event="click", widget=name)
    finally:
        app.stop()


# -- gnome-calculator (GTK4) -------------------------------------------------------------


def test_a_calculator_key_clicked_at_its_mapped_centre_is_typed(session, probe):
    calc = Process(session, ["gnome-calculator"])
    try:
        window_of(session, calc.pid)

        def ready(ns):
            return any(n.pid == calc.pid and n.role == "push button" and n.name == "7" for n in ns)

        nodes = snapshot_until(probe, ready, "gnome-calculator's keypad", timeout=20)
        mine = nodes_of(nodes, calc.pid)
        # GTK 4.8 names: "7 7" and "GtkButton" are repaired to what the keys show.
        assert {"7", "8", "+", "=", "π"} <= {n.name for n in mine if n.role == "push button"}
        assert not [n for n in mine if n.name.startswith(("Gtk", "Adw"))]
        for key in ("7", "+", "8"):
            x, y = centre(to_device(session, nodes, find(mine, "push button", key)))
            session.pointer(action="click", x=x, y=y)

        def display(ns):
            return [n.value for n in nodes_of(ns, calc.pid) if n.role == "text" and n.value]

        nodes = snapshot_until(probe, lambda ns: "7+8" in display(ns), "7+8 in the calculator")
        # And through AT-SPI itself.
        assert probe.act(find(nodes_of(nodes, calc.pid), "push button", "=").key, "click") == {"ok": True}
        snapshot_until(probe, lambda ns: "15" in display(ns), "the result")
    finally:
        calc.stop()


# -- Chromium's own UI ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def page(session):
    server = PageServer().start()
    session.open_page(server.url("input.html"))
    server.wait_for(type="load", page="/input.html", timeout=20)
    return server


def test_chromium_address_bar_is_an_entry_with_the_url_and_no_page_content_is_listed(session, probe, page):
    host = page.base.split("//")[1]

    def shows_page(ns):
        bars = [n for n in ns if n.role == "entry" and n.name == "Address and search bar"]
        return bars and (bars[0].value or "").endswith(f"{host}/input.html")

    nodes = snapshot_until(probe, shows_page, "the page's URL in the address bar", timeout=20)
    browser = [n for n in nodes if n.app == "Chromium"]
    bar = find(browser, "entry", "Address and search bar")
    # The frame's title and Sway's follow the page's title each at their own moment
    # (either can still say "Untitled"): the process is what ties the bar to the window.
    chromium = window_of(session, session.browser_window()["pid"])
    assert bar.pid == chromium["pid"] and bar.frame.endswith(" - Chromium")
    assert "focusable" in bar.states and bar.actions[0] == "activate"
    for role, name in [("push button", "Back"), ("push button", "Reload"), ("push button", "New Tab")]:
        find(browser, role, name)
    assert [n for n in browser if n.role == "page tab"]
    # The page is not there: no document, no node from inside it.
    assert not [n for n in browser if n.role == "document web"]
    page_names = {"Submit", "Other"}
    assert not [n for n in browser if n.name in page_names]
    # ... though it is one option away: the pruning is what leaves it out.
    everything = probe.snapshot(prune_documents=False)
    assert [n for n in everything if n.app == "Chromium" and n.role == "document web"]


def test_chromium_keeps_a_margin_around_its_window_and_a_click_on_the_mapped_address_bar_focuses_it(
        session, probe, page):
    nodes = probe.snapshot()
    bar = find([n for n in nodes if n.app == "Chromium"], "entry", "Address and search bar")
    frame = frame_of(nodes, bar)
    content = window_of(session, bar.pid)["layout_bounds"]
    vx, vy, _, vh = visible_window(frame, (content[2], content[3]))
    assert (vx, vy, vh) == (10, 10, content[3])  # measured: 10 px on every side
    x, y = centre(to_device(session, nodes, bar))
    session.pointer(action="click", x=x, y=y)
    snapshot_until(probe, lambda ns: "focused" in find(ns, "entry", "Address and search bar").states,
                   "the address bar focused")
    session.keyboard(action="key", keys="escape")


def test_walk_figures_are_reported(probe, gtk_app):
    reply = probe.call(op="snapshot")
    walk = reply["walk"]
    assert walk["kept"] == len(reply["nodes"]) and walk["visited"] >= walk["kept"] and walk["seconds"] > 0
    assert any(k.startswith("app:Chromium:") for k in walk)


def test_a_snapshot_of_some_processes_walks_only_their_apps_and_keeps_the_others_actionable(probe, gtk_app, session):
    everything = probe.snapshot()
    beta = find(nodes_of(everything, gtk_app.pid), "push button", "Beta")
    chromium = session.chromium_pid()
    only = probe.snapshot(pids=[chromium])
    assert only and {n.pid for n in only} == {chromium}
    assert probe.act(beta.key, "click") == {"ok": True}
    gtk_app.wait_for(event="click", widget="Beta")


def test_a_bridge_that_dies_leaves_the_browser_as_it_is_and_the_new_bridge_reads_it(session, probe):
    old_bridge, old_browser = session.children_up()["bridge"]["pid"], session.chromium_pid()
    os.kill(old_bridge, signal.SIGKILL)

    def bridge_back():
        try:
            resp = http("GET", session.bridge + "/health", timeout=2)
        except OSError:
            return None
        return resp.json() if resp.status == 200 and resp.json()["pid"] != old_bridge else None

    health = wait_until(bridge_back, 60, interval=0.2, what="a new bridge reading the browser")
    # The browser is its own process of the session: the same one, still on AT-SPI.
    assert health["chromium_pid"] == old_browser and _alive(old_browser)
    snapshot_until(probe, lambda ns: any(n.pid == old_browser and n.name == "Address and search bar" for n in ns),
                   "the browser's address bar", timeout=30)


def test_stopping_a_session_ends_the_apps_started_in_it():
    s = Session(["800x600"], browser=False).start()
    try:
        app = Process(s, [SYSTEM_PYTHON, str(FIXTURE_APP)])
        app.wait_for(event="ready", timeout=30)
        runtime = s.state["runtime_dir"]
    finally:
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(30) == 0
        s.stop()
    wait_until(lambda: not _alive(app.pid), 5, what="the app ended")
    app.proc.wait(5)
    assert not os.path.exists(runtime)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


# -- where the window lies in its surface: the measured cases, as pure logic ---------------


def _frame(extents, *spans):
    return NativeNode(key="k", pid=1, app="a", role="frame", name="f", value=None, states=(), actions=(),
                      extents=extents, frame="f", depth=1, spans=(extents, *spans))


@pytest.mark.parametrize("frame, content, window", [
    # GTK4 and server-side-decorated GTK3: the frame is the window.
    (_frame((0, 0, 360, 489)), (360, 489), (0, 0, 360, 489)),
    # Chromium tiled: 10 px on every side, its root view the window.
    (_frame((0, 0, 660, 820), (0, 0, 660, 820), (10, 10, 640, 800)), (640, 800), (10, 10, 640, 800)),
    # Chromium wider than its tile (Sway clips it): the root view is as high as the tile.
    (_frame((0, 0, 520, 820), (10, 10, 500, 800), (10, 50, 500, 46)), (427, 800), (10, 10, 500, 800)),
    # A floating GTK3 window with a header bar: Adwaita's shadow, 26 px aside, 23 above.
    (_frame((0, 0, 472, 419), (26, 23, 420, 47)), (420, 367), (26, 23, 420, 367)),
    # A window smaller than its tile (Sway centres it): the frame, for the caller to centre.
    (_frame((0, 0, 300, 200)), (426, 800), (0, 0, 300, 200)),
])
def test_visible_window_finds_the_window_sway_places_inside_the_surface(frame, content, window):
    assert visible_window(frame, content) == window
