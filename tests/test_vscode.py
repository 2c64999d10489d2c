"""``code`` in an OSWorld-mode session: VS Code's workbench (deskbox.osworld.vscode) as
OSWorld's vs_code tasks use it. A task config run through desktop-env's own
SetupController launches ``code`` and activates "Visual Studio Code"; the setting is
changed through the UI with pyautogui over ``/execute`` (the command palette by
ctrl+shift+p, as desktop-env's vscode_config getter opens it, the user settings file
typed into, ctrl+s), and desktop-env's ``vm_file`` getter and its
``check_json_settings`` metric grade it: 1.0 when done, 0.0 left alone. Extensions
installed from a local .vsix are listed; one asked for by id fails at once, saying why;
the window is not a tab of the session's browser and ``pkill code`` ends it."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from deskbox.osworld import vscode
from deskbox.run.graders import metric
from tests.support import Session, free_port, http, osworld_upload, require_apps, wait_until
from tests.support.desktop_env import load

pytestmark = pytest.mark.desktop

require_apps(str(vscode.install_dir() / "node_modules" / "code-server" / "out" / "node" / "entry.js"))

OSWORLD = load()
HOME = "/home/user"
SETTINGS = f"{HOME}/.config/Code/User/settings.json"
TASK = {
    "id": "deskbox-vscode-font-size",
    "instruction": "Set the editor's font size to 19 in VS Code's user settings.",
    "config": [
        {"type": "launch", "parameters": {"command": ["code"]}},
        {"type": "activate_window", "parameters": {"window_name": "Visual Studio Code"}},
    ],
    "evaluator": {
        "func": "check_json_settings",
        "result": {"type": "vm_file", "path": SETTINGS, "dest": "settings.json"},
        "expected": {"type": "rule", "rules": {"expected": {"editor.fontSize": 19}}},
    },
}


@pytest.fixture(scope="module")
def session():
    port = free_port()
    s = Session(["1280x800"], extra_args=["--osworld", "--osworld-port", str(port)])
    s.osworld = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
    s.osworld_port = port  # type: ignore[attr-defined]
    s.start()
    s.browser_window()
    yield s
    s.stop()


def execute(session: Session, command: list[str] | str, timeout: float = 120) -> dict:
    resp = http("POST", session.osworld + "/execute", {"command": command, "shell": isinstance(command, str)},
                timeout=timeout)
    assert resp.status == 200, resp.body[:300]
    return resp.json()


def pyautogui(session: Session, code: str) -> None:
    done = execute(session, ["python", "-c", "import pyautogui, time\n" + code])
    assert done["returncode"] == 0, done["error"]


def code_windows(session: Session) -> list[dict]:
    return [w for w in http("GET", session.desktopd + "/api/v1/tree").json()["windows"]
            if (w.get("title") or "").endswith("Visual Studio Code")]


def upload(session: Session, path: str, data: bytes) -> None:
    osworld_upload(session.osworld, path, data)


def grade(session: Session, tmp_path: Path) -> float:
    env = type("Env", (), {"controller": OSWORLD.PythonController("127.0.0.1", session.osworld_port),
                           "cache_dir": str(tmp_path), "vm_ip": "127.0.0.1", "server_port": session.osworld_port})()
    result = OSWORLD.getters.get_vm_file(env, TASK["evaluator"]["result"])
    return metric(TASK["evaluator"]["func"])(result, TASK["evaluator"]["expected"]["rules"])


def vsix(publisher: str, name: str, version: str) -> bytes:
    """The smallest extension package VS Code installs: its manifest and package.json."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0" encoding="utf-8"?><Types xmlns="http://schemas.'
                   'openxmlformats.org/package/2006/content-types"><Default Extension=".json" '
                   'ContentType="application/json"/><Default Extension=".vsixmanifest" ContentType="text/xml"/></Types>')
        z.writestr("extension.vsixmanifest", f'<?xml version="1.0" encoding="utf-8"?><PackageManifest Version="2.0.0" '
                   'xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011"><Metadata>'
                   f'<Identity Language="en-US" Id="{name}" Version="{version}" Publisher="{publisher}"/>'
                   f'<DisplayName>{name}</DisplayName><Description xml:space="preserve">deskbox test</Description>'
                   '</Metadata><Installation><InstallationTarget Id="Microsoft.VisualStudio.Code"/></Installation>'
                   '<Dependencies/><Assets><Asset Type="Microsoft.VisualStudio.Code.Manifest" '
                   'Path="extension/package.json" Addressable="true"/></Assets></PackageManifest>')
        z.writestr("extension/package.json", json.dumps({
            "name": name, "publisher": publisher, "version": version, "engines": {"vscode": "^1.60.0"},
            "contributes": {"commands": [{"command": f"{name}.hello", "title": "Hello"}]}}))
    return out.getvalue()


def test_a_vs_code_task_grades_0_left_alone_and_1_when_the_setting_is_changed_through_the_ui(session, tmp_path):
    setup = OSWORLD.SetupController("127.0.0.1", server_port=session.osworld_port, chromium_port=free_port(),
                                    cache_dir=str(tmp_path), client_password="password",
                                    screen_width=1280, screen_height=800)
    setup.setup(TASK["config"])
    window = wait_until(lambda: next(iter(code_windows(session)), None), 90, 0.5, what="VS Code's window")
    assert window["app_id"] == "chrome-code.localhost__-Default", window
    tabs = http("GET", session.cdp + "/json/list").json()
    assert not [t for t in tabs if "code.localhost" in t.get("url", "")]  # (not a tab of the session's browser)
    assert grade(session, tmp_path) == 0.0  # left alone: no settings file yet
    # The workbench is up once it has opened its Welcome page (the window's title says so).
    wait_until(lambda: any(w["title"].startswith("Welcome - ") for w in code_windows(session)), 90, 0.5,
               what="the workbench's Welcome page")
    pyautogui(session, "pyautogui.hotkey('ctrl', 'shift', 'p'); time.sleep(1.5)\n"
                       "pyautogui.write('Preferences: Open User Settings (JSON)', interval=0.02); time.sleep(1.5)\n"
                       "pyautogui.press('enter'); time.sleep(3)\n"
                       "pyautogui.hotkey('ctrl', 'a'); pyautogui.write('{\"editor.fontSize\": 19}', interval=0.03)\n"
                       # (the editor closes brackets and quotes as they are typed: what it added is cut)
                       "pyautogui.hotkey('ctrl', 'shift', 'end'); pyautogui.press('delete')\n"
                       "time.sleep(0.5); pyautogui.hotkey('ctrl', 's'); time.sleep(2)")
    wait_until(lambda: grade(session, tmp_path) == 1.0, 30, 1, what="the saved setting graded 1.0")


def test_extensions_from_a_vsix_are_listed_and_one_by_id_fails_at_once(session):
    path = f"{HOME}/hello.vsix"
    upload(session, path, vsix("deskbox-test", "hello", "0.0.1"))
    installed = execute(session, ["code", "--install-extension", path])
    assert installed["returncode"] == 0, installed
    listed = execute(session, ["code", "--list-extensions"])
    assert "deskbox-test.hello" in listed["output"].split(), listed
    by_id = execute(session, ["code", "--install-extension", "ms-python.python"])
    assert by_id["returncode"] == 1 and "marketplace" in by_id["error"], by_id
    assert execute(session, ["code", "--uninstall-extension", "deskbox-test.hello"])["returncode"] == 0
    assert "deskbox-test.hello" not in execute(session, ["code", "--list-extensions"])["output"].split()


def test_code_opens_a_file_in_its_folder_and_pkill_code_ends_its_windows(session):
    execute(session, f"mkdir -p {HOME}/project && printf 'print(1)\\n' > {HOME}/project/main.py")
    assert execute(session, ["code", f"{HOME}/project/main.py"])["returncode"] == 0
    wait_until(lambda: any(w["title"].startswith("main.py - project") for w in code_windows(session)), 90, 0.5,
               what="a window on project/ with main.py open")
    execute(session, ["pkill", "code"])
    wait_until(lambda: not code_windows(session), 30, 0.5, what="VS Code's windows gone after pkill code")
