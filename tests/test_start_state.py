"""A session in OSWorld mode starts as OSWorld's VM does, where OSWorld's getters read
the start state: a task that asks for a change the VM does not have scores 0 for an
agent that does nothing. Each task here is graded as OSWorld grades its own task of the
same kind (the same getter and metric from desktop-env, the config in this file's
words), through deskbox's own pipeline, with nothing done between setup and grading."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import sync_playwright

from deskbox.common import timezone
from deskbox.provider import Environment
from deskbox.run.episode import Episode
from deskbox.run.tasks import Task
from tests.support import http, osworld_environment, osworld_session, wait_until

pytestmark = pytest.mark.desktop

PREFERENCES = "/home/user/.config/google-chrome/Default/Preferences"


@pytest.fixture(scope="module")
def session():
    # (Resets leave the browser closed, as OSWorld's VM starts a task.)
    s = osworld_session(["1024x768"])
    yield s
    s.stop()


@pytest.fixture(scope="module")
def env(session) -> Environment:
    return osworld_environment(session, "start")


def reset_for(env: Environment, tmp_path, evaluator: dict, setup: list[dict] | None = None) -> Episode:
    """A task graded by ``evaluator``, its session reset and ``setup`` run; nothing else
    is done."""
    config = {"id": "start-state", "snapshot": "os", "instruction": "(nothing is done)", "config": setup or [],
              "evaluator": evaluator}
    episode = Episode(env, Task("os", config, "start-state.json"), cache_dir=str(tmp_path))
    episode.reset()
    return episode


def test_chrome_starts_without_the_content_settings_the_delete_on_close_task_looks_for(env, session, tmp_path):
    # (OSWorld's getter answers "true" whenever the key is there at all; Chromium 156
    # writes it for a migration of its own unless OSWorld mode turns that off.)
    # (The task starts Chrome, as OSWorld's does: after a reset the session has none open.)
    episode = reset_for(env, tmp_path, {
        "func": "exact_match", "result": {"type": "data_delete_automacally"},
        "expected": {"type": "rule", "rules": {"expected": "true"}}},
        [{"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}}])
    session.browser_window()
    # (The home starts with a Preferences of its own: Chrome's is the one it writes.)
    preferences = wait_until(lambda: json.loads(episode.controller.get_file(PREFERENCES) or b"{}").get("profile")
                             and episode.controller.get_file(PREFERENCES), 30, 0.5, what="Chrome's Preferences written")
    profile = json.loads(preferences)["profile"]
    assert "default_content_setting_values" not in profile, profile.get("default_content_setting_values")
    assert episode.evaluate() == 0.0
    # Chrome writes its preferences out at its end, as a task's postconfig (pkill chrome)
    # has it do before this getter reads them.
    episode.setup_controller.setup([{"type": "execute", "parameters": {"command": ["pkill", "chrome"]}}])
    wait_until(lambda: not session.windows("chromium"), 30, 0.5, what="Chrome's window closed")
    profile = json.loads(episode.controller.get_file(PREFERENCES))["profile"]
    assert "default_content_setting_values" not in profile, profile.get("default_content_setting_values")
    assert episode.evaluate() == 0.0


def test_a_reset_can_leave_no_browser_open_as_osworlds_vm_starts_a_task(env, session):
    def chrome(*urls: str) -> None:  # as OSWorld's Chrome tasks start it
        http("POST", f"http://127.0.0.1:{session.osworld_port}/setup/launch",
             {"command": ["google-chrome", "--remote-debugging-port=1337", *urls]})
        session.browser_window()

    chrome()
    done = env.reset()
    assert (done["browser"], done["healthy"]) == (False, True), done
    assert not session.windows("chromium"), session.windows()
    # Started by google-chrome on one of Chromium's own pages, which it does not open from
    # its command line: the page opens as a tab once it is up.
    chrome("chrome://settings/fonts")
    wait_until(lambda: any(t["url"].startswith("chrome://settings/fonts") for t in session.tabs()), 20, 0.3,
               what="the settings page open")


def test_videos_open_in_gnomes_videos_so_making_vlc_the_default_is_still_to_do(env, tmp_path):
    episode = reset_for(env, tmp_path, {
        "func": "check_include_exclude", "result": {"type": "default_video_player"},
        "expected": {"type": "rule", "rules": {"include": ["vlc.desktop"], "exclude": []}}})
    assert episode.evaluate() == 0.0
    answer = episode.controller.execute_python_command(
        "import subprocess; print(subprocess.run(['xdg-mime', 'query', 'default', 'video/mp4'], "
        "capture_output=True, text=True).stdout.strip())")
    assert answer["output"].strip() == "org.gnome.Totem.desktop", answer


def test_chrome_starts_with_the_gtk_theme_as_on_gnome_so_the_dark_mode_task_is_still_to_do(env, session, tmp_path):
    """OSWorld's task "turn off dark mode" sets dark mode in Preferences, starts Chrome,
    and a newer OSWorld's getter reads the mode from chrome://settings/appearance, where
    it takes a classic theme (``extensions.theme.system_theme`` 0, Chromium's default on
    Sway) as light: the task scored for an agent that did nothing. On GNOME a new profile
    has the GTK theme (1), and so does OSWorld mode's."""
    preferences = ("mkdir -p ~/.config/google-chrome/Default && cd ~/.config/google-chrome/Default && "
                   "([ -f Preferences ] || echo '{}' > Preferences) && python3 -c \"import json; d = "
                   "json.load(open('Preferences')); t = d.setdefault('browser', {}).setdefault('theme', {}); "
                   "t['color_scheme'] = 2; t['color_scheme2'] = 2; json.dump(d, open('Preferences', 'w'))\"")
    episode = reset_for(env, tmp_path, {"func": "infeasible"}, [
        {"type": "execute", "parameters": {"command": preferences, "shell": True}},
        {"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}}])
    session.browser_window()
    with sync_playwright() as p:
        browser = p.chromium.connect_over_cdp(session.cdp)
        page = browser.contexts[0].new_page()
        page.goto("chrome://settings/appearance", wait_until="domcontentloaded")
        prefs = wait_until(lambda: page.evaluate(
            "() => { const ui = document.querySelector('settings-ui'); const p = ui && ui.prefs;"
            " const t = p && p.extensions && p.extensions.theme && p.extensions.theme.system_theme;"
            " return t ? {system: t.value} : null }"), 20, 0.3, what="the settings page's prefs")
        browser.close()
    assert prefs == {"system": 1}, prefs
    # (the task's own setting kept beside it)
    theme = json.loads(episode.controller.get_file(PREFERENCES))["browser"]["theme"]
    assert theme["color_scheme"] == 2, theme


def test_timedatectl_answers_without_systemd_with_the_zone_programs_see(env, tmp_path):
    """OSWorld's "set my time zone to UTC+0" task reads ``timedatectl status``; a session
    has no systemd (the real one answers "System has not been booted with systemd").
    A session on the machine's own user has the machine's zone; deskbox's images start in
    a zone of the session's own (tests/container/drive.py)."""
    episode = reset_for(env, tmp_path, {
        "func": "is_utc_0", "result": {"type": "vm_command_line", "command": "timedatectl status", "shell": True}})
    answer = episode.controller.execute_python_command(
        "import subprocess; r = subprocess.run(['timedatectl'], capture_output=True, text=True); "
        "print(r.returncode); print(r.stdout, end='')")
    code, *lines = answer["output"].split("\n")
    assert code == "0", answer
    offset = episode.controller.execute_python_command(
        "import time; print(time.strftime('%z'))")["output"].strip()
    assert lines[3].strip().startswith(f"Time zone: {timezone.zone_name()} (") and lines[3].endswith(f"{offset})")
    assert episode.evaluate() == (1.0 if offset == "+0000" else 0.0)
