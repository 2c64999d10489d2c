"""The OSWorld server's pure logic: the accessibility XML, OSWorld's command rules,
the google-chrome wrapper's arguments, and what `deskbox up` adds with --osworld.
Process-group timeouts run real processes."""

from __future__ import annotations

import asyncio
import os
import time
import xml.etree.ElementTree as ET

import pytest

from deskbox.common.paths import IMPORT_ROOT
from deskbox.geometry import Rect
from deskbox.osworld import commands
from deskbox.osworld.accessibility import NAMESPACES, Window, build_xml, terminal_output
from deskbox.osworld.chrome import parse_args
from deskbox.session import users
from deskbox.session.children import SessionChildren
from deskbox.session.cli import build_parser
from deskbox.session.layout import Environments, Layout, Live
from deskbox.session.options import OSWORLD_CDP_PORT, UpOptions
from deskbox.session.wallpaper import Background

ST, CP, ATTR, ACT, VAL = (f"{{{NAMESPACES[k]}}}" for k in ("st", "cp", "attr", "act", "val"))
SHOWN = ["visible", "showing", "enabled"]


def node(role, name="", extents=None, children=(), **extra):
    return {"role": role, "name": name, "states": extra.pop("states", SHOWN), "attrs": extra.pop("attrs", {}),
            "extents": extents, "text": extra.pop("text", ""), "value": extra.pop("value", None),
            "actions": extra.pop("actions", {}), "image": False, "selection": False, "children": list(children)}


def chromium_walk(url: str) -> dict:
    # A 640x800 tile whose surface keeps a 10 px margin on every side (measured).
    omnibox = node("entry", "Address and search bar", [150, 50, 400, 24], text=url,
                   states=[*SHOWN, "focused", "single_line"], attrs={"class": "OmniboxViewViews"})
    link = node("link", "Docs", [60, 400, 40, 20])
    document = node("document web", "Page", [20, 200, 1280, 1200], children=[link])
    root_view = node("panel", "", [10, 10, 640, 800], children=[omnibox, document])
    frame = node("frame", "Page - Chromium", [0, 0, 660, 820], children=[root_view], states=[*SHOWN, "active"])
    app = node("application", "Chromium", None, children=[frame], states=[])
    app["pid"] = 42
    return {"apps": [app]}


def test_the_tree_is_osworlds_xml_with_chromium_named_as_chrome_and_screen_coordinates():
    window = Window(pid=42, title="Page - Chromium", bounds=Rect(640, 0, 1280, 1600), scale=2.0)
    root = ET.fromstring(build_xml(chromium_walk("example.com/a?b=1"), [window]))
    assert root.tag == "desktop-frame"
    app = root.find("application")
    assert app.get("name") == "Google Chrome"
    frame = app.find("frame")
    assert frame.get("name") == "Page - Google Chrome" and frame.get(ST + "active") == "true"
    entry = frame.find("panel/entry")
    assert entry.get("name") == "Address and search bar" and entry.text == "example.com/a?b=1"
    assert entry.get(ATTR + "class") == "OmniboxViewViews" and entry.get(ST + "single_line") == "true"
    # Surface (150, 50) less the 10 px margin, at scale 2, from the window's corner at x=640.
    assert entry.get(CP + "screencoord") == "(920, 80)" and entry.get(CP + "size") == "(800, 48)"
    # Page content reports device pixels of the surface: (60, 400) is layout (30, 200).
    link = frame.find("panel/document-web/link")
    assert link.get(CP + "screencoord") == "(680, 380)" and link.get(CP + "size") == "(40, 20)"


def test_a_configured_browser_name_and_nodes_without_a_window():
    walk = chromium_walk("x")
    text = build_xml(walk, [], browser_name="Chromium Browser")
    root = ET.fromstring(text)
    assert root.find("application").get("name") == "Chromium Browser"
    # No window to place it: AT-SPI's own numbers, as OSWorld shows them on Wayland.
    assert root.find(".//entry").get(CP + "screencoord") == "(150, 50)"


def test_states_actions_values_and_text_are_written_as_osworld_writes_them():
    spin = node("spin button", "Size", [5, 5, 50, 20], value={"value": "3", "min": "0", "max": "10", "step": "1"},
                actions={"click": ["Clicks", "<Ctrl>k"], "bad name": ["", ""]}, text="3\ufffc\x01",
                attrs={"toolkit": "gtk", "": "dropped", "bad key": "dropped"})
    hidden = node("push button", "Hidden", [1, 1, 5, 5], states=["enabled"])
    app = node("application", "app", None, children=[node("frame", "F", [0, 0, 100, 100], children=[spin, hidden])])
    app["pid"] = 7
    root = ET.fromstring(build_xml({"apps": [app]}, [Window(7, "F", Rect(10, 20, 100, 100), 1.0)]))
    el = root.find(".//spin-button")
    assert el.text == "3"
    assert el.get(VAL + "value") == "3" and el.get(VAL + "max") == "10"
    assert el.get(ACT + "click_desc") == "Clicks" and el.get(ACT + "click_kb") == "<Ctrl>k"
    assert el.get(ACT + "bad-name_desc") == ""
    assert el.get(ATTR + "toolkit") == "gtk" and len([k for k in el.attrib if k.startswith(ATTR)]) == 1
    assert el.get(CP + "screencoord") == "(15, 25)"
    # Not showing: no box, as in OSWorld.
    assert root.find(".//push-button").get(CP + "screencoord") is None


def test_libreoffices_vcl_widgets_are_placed_below_gtks_menu_bar_and_its_gtk_widgets_where_they_say():
    """As LibreOffice 7.4's gtk3 plugin reports it (deskbox.geometry.vcl_body_offset)."""
    bold = node("toggle button", "Bold", [664, 41, 33, 35])
    line = node("panel", "Input line", [294, 114, 1538, 19], children=[node("paragraph", "", [294, 114, 105, 19])])
    bar = node("scroll pane", "", [287, 111, 1552, 25], attrs={"toolkit": "gtk"}, children=[line])
    root_pane = node("root pane", "b.xlsx - LibreOffice Calc", [0, 0, 1280, 774], children=[bold, bar])
    body = node("panel", "", [0, 26, 1280, 774], children=[root_pane])
    frame = node("frame", "b.xlsx - LibreOffice Calc", [0, 0, 1280, 800], children=[body])
    app = node("application", "soffice", None, children=[frame])
    app["pid"] = 9
    window = Window(9, "b.xlsx - LibreOffice Calc", Rect(0, 0, 1280, 800), 1.0)
    root = ET.fromstring(build_xml({"apps": [app]}, [window]))
    assert root.find(".//toggle-button").get(CP + "screencoord") == "(664, 67)"
    assert root.find(".//scroll-pane").get(CP + "screencoord") == "(287, 111)"
    assert root.find(".//paragraph").get(CP + "screencoord") == "(294, 114)"
    # Another app's root pane at its parent's origin stays where it says.
    app["name"] = "gedit"
    root = ET.fromstring(build_xml({"apps": [app]}, [window]))
    assert root.find(".//toggle-button").get(CP + "screencoord") == "(664, 41)"


def test_terminal_output_is_the_focused_terminal_of_the_active_frame():
    term = node("terminal", "", None, text="$ ls\nfile\n\n", states=["focused"])
    app = node("application", "gnome-terminal-server", None,
               children=[node("frame", "Terminal", None, children=[term], states=["active"])])
    assert terminal_output(build_xml({"apps": [app]}, [])) == "$ ls\nfile"
    app["children"][0]["states"] = []
    assert terminal_output(build_xml({"apps": [app]}, [])) is None


def test_osworlds_command_rules():
    home = os.path.expanduser("~")
    assert commands.prepare_argv("ls -l '~/a b' ~/c", False) == ["ls", "-l", f"{home}/a b", f"{home}/c"]
    assert commands.prepare_argv(["echo", "~/x", "x~/y", "~"], False) == ["echo", f"{home}/x", "x~/y", "~"]
    assert commands.prepare_argv("echo ~/x | wc", True) == ["/bin/sh", "-c", "echo ~/x | wc"]
    assert commands.prepare_argv(["echo $0", "zero"], True) == ["/bin/sh", "-c", "echo $0", "zero"]
    with pytest.raises(ValueError):
        commands.prepare_argv("   ", False)


def test_a_timeout_ends_the_whole_process_group():
    async def scenario():
        started = time.monotonic()
        with pytest.raises(commands.CommandTimeout):
            await commands.run(["/bin/sh", "-c", "sleep 30 & echo $! > /dev/stderr; sleep 30"], timeout=0.5)
        return time.monotonic() - started

    assert asyncio.run(scenario()) < 5

    async def finished():
        return await commands.run(["/bin/sh", "-c", "echo out; echo err >&2; exit 7"], timeout=5)

    assert asyncio.run(finished()) == commands.Finished(7, "out\n", "err\n")


def test_chrome_arguments():
    parsed = parse_args(["--remote-debugging-port=1337", "--no-first-run", "https://a.example/", "b.example"])
    assert parsed.port == 1337 and parsed.urls == ["https://a.example/", "b.example"]
    assert parse_args(["--remote-debugging-port", "9333"]).port == 9333
    assert parse_args([]).port is None
    with pytest.raises(ValueError):
        parse_args(["--remote-debugging-port=http"])


def _session(*argv: str, tmp_path) -> tuple[SessionChildren, Environments]:
    """A session's children and environments, made from a layout alone (nothing runs)."""
    options = UpOptions.from_namespace(build_parser().parse_args(["up", *argv, "--runtime-dir", str(tmp_path)]))
    layout = Layout(options=options, runtime=tmp_path, runtime_seen=tmp_path, home=tmp_path / "home", uid=1000,
                    gid=1000, user_name="user", service_uid=1000, dbus_address=f"unix:path={tmp_path}/bus", x11=False,
                    browser_binary="/usr/bin/chromium", headless_outputs=1, start_urls=("about:blank",),
                    internal_secret="secret")
    live = Live()
    envs = Environments(layout, live)
    return SessionChildren(layout, live, envs, Background(layout.home, envs.run)), envs


def test_without_osworld_there_is_no_server_no_wrapper_and_cdp_stays_on_9222(tmp_path, monkeypatch):
    monkeypatch.delenv("DESKBOX_CDP_PORT", raising=False)
    monkeypatch.delenv("DESKBOX_OSWORLD_SERVER", raising=False)
    children, envs = _session(tmp_path=tmp_path)
    assert "osworld" not in [spec.name for spec in children.specs()]
    env = envs.session()
    assert "DESKBOX_OSWORLD" not in env and str(tmp_path / "bin") not in env["PATH"]
    assert children.options.cdp_port == 9222


def test_with_osworld_the_server_runs_as_the_session_user_and_cdp_moves(tmp_path, monkeypatch):
    monkeypatch.delenv("DESKBOX_CDP_PORT", raising=False)
    children, envs = _session("--osworld", "--osworld-port", "5055", tmp_path=tmp_path)
    spec = next(spec for spec in children.specs() if spec.name == "osworld")
    assert spec.user == 1000
    argv = spec.argv()
    assert argv[argv.index("--listen") + 1] == "127.0.0.1:5055"
    assert argv[argv.index("--cdp-port") + 1] == str(OSWORLD_CDP_PORT)
    env = envs.session()
    assert env["DESKBOX_OSWORLD"] == "http://127.0.0.1:5055"
    assert env["PATH"].startswith(str(tmp_path / "bin") + ":")
    users.write_osworld_bin(tmp_path / "bin", IMPORT_ROOT)
    assert {p.name for p in (tmp_path / "bin").iterdir()} == {"python", "google-chrome", "google-chrome-stable", "code",
                                                             "socat", "timedatectl"}  # (socat: installed by make test)
    assert os.access(tmp_path / "bin" / "google-chrome", os.X_OK)


def test_an_attached_sessions_repr_names_its_host_and_ports():
    from deskbox.run.sessions import AttachedEnvironment

    # (it has no vnc port: building OSWorld's address for the repr raised KeyError('vnc'))
    env = AttachedEnvironment("a", "http://127.0.0.1:5000", "http://127.0.0.1:8000")
    assert repr(env) == "<AttachedEnvironment a 127.0.0.1 chromium=9222,osworld=5000,scene=8000,vlc=8080>"


def test_the_sessions_socat_gives_its_tcp_listeners_reuseaddr():
    from deskbox.osworld.socat import with_reuseaddr

    assert with_reuseaddr(["tcp-listen:9222,fork", "tcp:localhost:1337"]) == \
        ["tcp-listen:9222,fork,reuseaddr", "tcp:localhost:1337"]
    assert with_reuseaddr(["-d", "-d", "TCP4-LISTEN:9222", "TCP:127.0.0.1:1337"]) == \
        ["-d", "-d", "TCP4-LISTEN:9222,reuseaddr", "TCP:127.0.0.1:1337"]
    assert with_reuseaddr(["tcp-l:80,fork,reuseaddr", "-"]) == ["tcp-l:80,fork,reuseaddr", "-"]
    assert with_reuseaddr(["tcp6-listen:80,so-reuseaddr=1", "stdio"]) == ["tcp6-listen:80,so-reuseaddr=1", "stdio"]
    # Not a TCP listener: as given.
    assert with_reuseaddr(["udp-listen:53", "unix-listen:/tmp/s", "exec:cat"]) == \
        ["udp-listen:53", "unix-listen:/tmp/s", "exec:cat"]
