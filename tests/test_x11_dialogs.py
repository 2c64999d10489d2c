"""A click lands on an X11 app's dialog the first time. VLC alone on screen (no browser:
a reset in OSWorld mode can leave none, as OSWorld's VM starts a task), its Preferences
dialog opened over it: one click on a check box, one on Save, each sent once as an agent
sends it. Before desktopd moved the pointer twice for a click, the first click's one
motion entered the dialog and Xwayland dropped the button, and the dialog stayed open."""

from __future__ import annotations

import pytest

from tests.support import http, osworld_session, require_apps, wait_until

pytestmark = pytest.mark.desktop

require_apps("vlc", "Xwayland")

LINE = "one-instance-when-started-from-file=0"


@pytest.fixture(scope="module")
def session():
    s = osworld_session(["1280x800"], "--user", "deskbox-x11")
    yield s
    s.stop()


def test_the_first_click_on_vlcs_preferences_dialog_lands(session):
    osworld = f"http://127.0.0.1:{session.osworld_port}"

    def act(code: str) -> None:
        done = http("POST", osworld + "/execute", {"command": ["python", "-c", "import pyautogui; " + code]})
        assert done.status == 200 and done.json()["returncode"] == 0, done.body

    def window(title: str) -> dict:
        return wait_until(lambda: next((w for w in session.windows() if title in (w["title"] or "")), None), 60, 0.3,
                          what=f"a window titled *{title}*")

    assert http("POST", session.scene + "/api/v1/session/reset").json()["browser"] is False
    assert http("POST", osworld + "/setup/launch", {"command": ["vlc"]}).status == 200
    window("VLC media player")
    act("pyautogui.hotkey('ctrl', 'p')")
    x, y, _, _ = window("Simple Preferences")["bounds"]
    # "Use only one instance when started from file manager" (on by default), then Save:
    # where the screenshot shows them in the dialog.
    act(f"pyautogui.click({x + 100}, {y + 491})")
    act(f"pyautogui.click({x + 664}, {y + 679})")
    wait_until(lambda: not any("Simple Preferences" in (w["title"] or "") for w in session.windows()), 10, 0.3,
               what="the dialog closed by its Save button")
    saved = {"command": f"grep -c -x -F {LINE} ~/.config/vlc/vlcrc", "shell": True}
    wait_until(lambda: http("POST", osworld + "/execute", saved).json().get("output", "").strip() not in ("", "0"),
               30, 0.3, what=f"{LINE!r} saved in vlcrc")
    http("POST", osworld + "/execute", {"command": ["pkill", "vlc"]})
