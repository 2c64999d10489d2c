"""GNOME's settings in an OSWorld-mode session, read and written as OSWorld's tasks do:
``gsettings`` through the OSWorld server (its SetupController's steps, its getters), the
favourites graded by OSWorld's own metric, and a reset bringing the start back."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from deskbox.run.graders import metric
from deskbox.session import gnome_settings
from tests.support import Session, free_port, http, wait_until
from tests.support.desktop_env import load

pytestmark = pytest.mark.desktop

OSWORLD = load()
GET = OSWORLD.getters
# What `gsettings get` prints at the start, as on OSWorld's VM (Ubuntu 22.04's GNOME), for
# every key its tasks read or write; the favourites are Ubuntu's dock with this session's apps.
START = {
    ("org.gnome.shell", "favorite-apps"): "['google-chrome.desktop', 'thunderbird.desktop', "
                                          "'org.gnome.Nautilus.desktop', 'vlc.desktop', 'libreoffice-writer.desktop']",
    ("org.gnome.desktop.notifications", "show-banners"): "true",
    ("org.gnome.desktop.screensaver", "lock-enabled"): "true",
    ("org.gnome.desktop.session", "idle-delay"): "uint32 300",
    ("org.gnome.settings-daemon.plugins.power", "idle-dim"): "true",
    ("org.gnome.desktop.interface", "text-scaling-factor"): "1.0",
    ("org.gnome.desktop.interface", "gtk-theme"): "'Yaru'",
    ("org.gnome.desktop.a11y.applications", "screen-magnifier-enabled"): "false",
    ("org.gnome.desktop.a11y.magnifier", "mag-factor"): "2.0",
}


@dataclass
class GraderEnv:
    """What OSWorld's getters read of its DesktopEnv."""

    server_port: int
    vm_ip: str = "127.0.0.1"


@pytest.fixture(scope="module")
def session():
    # A user of its own: other modules' OSWorld sessions (user `user`) may run beside it.
    port = free_port()
    s = Session(["1024x768"], browser=False,
                extra_args=["--osworld", "--osworld-port", str(port), "--user", "deskbox-gnome"])
    s.osworld_port = port  # type: ignore[attr-defined]
    s.start()
    yield s
    s.stop()


@pytest.fixture
def env(session) -> GraderEnv:
    """The session as OSWorld's getters reach it, from its start (whatever the test
    before set)."""
    reset(session)
    return GraderEnv(server_port=session.osworld_port)


@pytest.fixture(scope="module")
def setup(session, tmp_path_factory):
    return OSWORLD.SetupController("127.0.0.1", server_port=session.osworld_port, chromium_port=free_port(),
                                   cache_dir=str(tmp_path_factory.mktemp("cache")), client_password="password",
                                   screen_width=1024, screen_height=768)


def reset(session: Session) -> None:
    resp = http("POST", session.scene + "/api/v1/session/reset", timeout=120)
    assert resp.status == 200 and resp.json()["healthy"], resp.body[:300]


def get(env: GraderEnv, schema: str, key: str) -> str:
    """OSWorld's getter, as its tasks' graders call it."""
    return GET.get_vm_command_line(env, {"command": ["gsettings", "get", schema, key]})


def execute(command: list[str] | str, *, shell: bool = False) -> dict:
    return {"type": "execute", "parameters": {"command": command, "shell": shell}}


def start_values(env: GraderEnv) -> dict[tuple[str, str], str]:
    return {(schema, key): get(env, schema, key).strip() for schema, key in START}


def test_each_setting_osworlds_tasks_use_starts_as_gnome_has_it(env):
    assert start_values(env) == START


def test_a_setting_one_command_sets_is_what_the_next_command_reads(session, setup, env):
    assert setup.setup([execute(["gsettings", "set", "org.gnome.desktop.screensaver", "lock-enabled", "false"])])
    assert get(env, "org.gnome.desktop.screensaver", "lock-enabled") == "false\n"
    # A program started by /setup/launch reaches the same settings.
    assert setup.setup([{"type": "launch", "parameters": {
        "command": ["gsettings", "set", "org.gnome.desktop.notifications", "show-banners", "false"]}}])
    wait_until(lambda: get(env, "org.gnome.desktop.notifications", "show-banners") == "false\n", 10, 0.2,
               what="show-banners false, set by a launched program")
    # It was written by a dconf-service of the session's own, into the session's home.
    service = GET.get_vm_command_line(env, {"command": "tr '\\0' '\\n' < /proc/$(pgrep -n -u \"$(id -u)\" -x "
                                                        "dconf-service)/environ", "shell": True})
    assert f"HOME={session.state['home']}" in service.splitlines(), service


def test_the_favourites_a_task_sets_on_the_login_bus_are_graded_by_osworlds_metric(session, setup, env):
    check = metric("check_gnome_favorite_apps")
    wanted = {"expected": ["google-chrome.desktop", "thunderbird.desktop"]}
    # As a task's setup does: the bus named by its login folder's path (/run/user/<uid>).
    bus = f"export DBUS_SESSION_BUS_ADDRESS='unix:path=/run/user/{session.state['user']['uid']}/bus'\n"
    assert setup.setup([execute(bus + "gsettings set org.gnome.shell favorite-apps "
                                      "\"['thunderbird.desktop', 'vim.desktop', 'google-chrome.desktop']\"", shell=True)])
    read = {"command": bus + "gsettings get org.gnome.shell favorite-apps", "shell": True}
    assert check(GET.get_vm_command_line(env, read), wanted) == 0
    assert setup.setup([execute(["gsettings", "set", "org.gnome.shell", "favorite-apps",
                                 "['google-chrome.desktop', 'thunderbird.desktop']"])])
    assert check(GET.get_vm_command_line(env, read), wanted) == 1


def test_text_scaling_is_read_as_a_number_by_bc(setup, env):
    # A grader's shell pipeline: `timeout`, `gsettings` and `bc` (its own, not OSWorld's text).
    command = {"command": "echo \"$(timeout 10 gsettings get org.gnome.desktop.interface text-scaling-factor)"
                          " >= 1.2\" | bc -l", "shell": True}
    assert GET.get_vm_command_line(env, command) == "0\n"
    assert setup.setup([execute(["gsettings", "set", "org.gnome.desktop.interface", "text-scaling-factor", "1.25"])])
    assert GET.get_vm_command_line(env, command) == "1\n"


def test_a_reset_brings_the_start_values_back(session, setup, env):
    assert setup.setup([execute(["gsettings", "set", "org.gnome.desktop.screensaver", "lock-enabled", "false"]),
                        execute(["gsettings", "set", "org.gnome.desktop.interface", "gtk-theme", "Orchis"])])
    assert get(env, "org.gnome.desktop.interface", "gtk-theme") == "'Orchis'\n"
    reset(session)
    assert start_values(env) == START
    # The next write is made by a dconf-service that read the restored file: what the
    # last one held in memory (lock-enabled false) is not written back with it.
    assert setup.setup([execute(["gsettings", "set", "org.gnome.desktop.session", "idle-delay", "0"])])
    assert get(env, "org.gnome.desktop.session", "idle-delay") == "uint32 0\n"
    assert get(env, "org.gnome.desktop.screensaver", "lock-enabled") == "true\n"
    assert get(env, "org.gnome.desktop.interface", "gtk-theme") == "'Yaru'\n"


def picture_uri(env: GraderEnv) -> str:
    return get(env, "org.gnome.desktop.background", "picture-uri").strip()


def test_the_background_setting_names_the_picture_wallpaper_serves(session, setup, env, tmp_path):
    controller = OSWORLD.PythonController("127.0.0.1", session.osworld_port)
    start = Path(session.state["env"]["XDG_RUNTIME_DIR"], "wallpaper.png")
    assert picture_uri(env) == f"'{start.as_uri()}'"
    assert controller.get_vm_wallpaper() == start.read_bytes()
    # Two pictures put in the home as a task's setup does (bytes that differ from the start's).
    home = Path(session.state["home"])
    pictures = {name: start.read_bytes() + name.encode() for name in ("a wall.png", "other.png")}
    for name, data in pictures.items():
        (tmp_path / name).write_bytes(data)
    assert setup.setup([{"type": "upload_file", "parameters": {"files": [
        {"local_path": str(tmp_path / name), "path": str(home / "Pictures" / name)} for name in pictures]}}])
    # OSWorld's change_wallpaper step names the picture in GNOME's setting.
    picture = home / "Pictures/a wall.png"
    assert setup.setup([{"type": "change_wallpaper", "parameters": {"path": str(picture)}}])
    assert picture_uri(env) == f"'{picture.as_uri()}'"
    assert controller.get_vm_wallpaper() == pictures["a wall.png"]
    # What a task sets with gsettings (a path after file://, as OSWorld's server writes it)
    # is what /wallpaper serves, as OSWorld's server does.
    assert setup.setup([execute(["gsettings", "set", "org.gnome.desktop.background", "picture-uri",
                                 f"file://{home}/Pictures/other.png"])])
    assert controller.get_vm_wallpaper() == pictures["other.png"]
    reset(session)
    assert picture_uri(env) == f"'{start.as_uri()}'"
    assert controller.get_vm_wallpaper() == start.read_bytes()


READER = """
import sys
from gi.repository import Gio
settings = Gio.Settings.new("org.gnome.desktop.interface")
for _ in sys.stdin:
    print(settings.get_string("gtk-theme"), flush=True)
"""


def test_a_program_that_outlives_a_reset_reads_the_restored_settings_once_flagged(tmp_path):
    # deskbox's own programs (the AT-SPI bus launcher reads GSettings) stay through a reset.
    home, runtime = tmp_path / "home", tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    for rel, data in gnome_settings.home_files(tmp_path / "wallpaper.png").items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_bytes(data)
    reader = subprocess.Popen(["/usr/bin/python3", "-c", READER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env={"HOME": str(home), "XDG_RUNTIME_DIR": str(runtime), "PATH": "/usr/bin"})

    def theme() -> str:
        reader.stdin.write("\n")
        reader.stdin.flush()
        return reader.stdout.readline().strip()

    try:
        assert theme() == "Yaru"
        # The database put back under it (here: one where a task set another theme).
        (tmp_path / "keys").mkdir()
        (tmp_path / "keys" / "task").write_text("[org/gnome/desktop/interface]\ngtk-theme='Orchis'\n")
        subprocess.run(["dconf", "compile", str(tmp_path / "restored"), str(tmp_path / "keys")], check=True)
        os.replace(tmp_path / "restored", home / gnome_settings.DATABASE)
        assert theme() == "Yaru"  # (dconf readers keep the file they mapped until flagged)
        gnome_settings.flag_changed(runtime)
        assert theme() == "Orchis"
    finally:
        reader.kill()
        reader.wait()
