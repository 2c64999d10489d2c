"""OSWorld's computer_13 actions, run as programs inside a session, drive the real
desktop through the pyautogui shim and desktopd (the desks: tests/pyautogui_desk.py);
and desktopd's pointer position, which pyautogui.position() reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from deskbox.common.paths import SHIMS_DIR
from tests.pyautogui_desk import desk, page  # noqa: F401  (fixtures)
from tests.support import http
from tests.test_x11_backend import XvfbDesktop

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
