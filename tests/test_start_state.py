"""A session in OSWorld mode starts as OSWorld's VM does, where OSWorld's getters read
the start state: a task that asks for a change the VM does not have scores 0 for an
agent that does nothing. Each task here is graded as OSWorld grades its own task of the
same kind (the same getter and metric from desktop-env, the config in this file's
words), through deskbox's own pipeline, with nothing done between setup and grading."""

from __future__ import annotations

import json

import pytest

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
    preferences = wait_until(lambda: episode.controller.get_file(PREFERENCES), 30, 0.5,
                             what="Chrome's Preferences written")
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
