"""Faults lose nothing: ids, tabs and form input survive the crash of a service, big
requests are refused before they cost memory, timeouts hold, and no stale pixels."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from deskbox.common.recording import FIRST_BYTES_S
from tests.support import PageServer, Session, free_port, http, run_js, wait_until

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
def session(pages: PageServer):
    s = Session(["1280x800"], extra_args=["--url", pages.url("input.html"), "--osworld",
                                          "--osworld-port", str(free_port()), "--user", "faults"],
                extra_env={"DESKBOX_RECORDING_MAX_S": "3"})
    s.start()
    s.browser_window()
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def every_service_up(session):
    """Each test starts with the whole session up, whatever the one before killed."""
    session.children_up()


def pid_of(session: Session, service: str) -> int | None:
    base = {"scene": session.scene + "/api/v1/health", "desktopd": session.desktopd + "/api/v1/health",
            "bridge": session.bridge + "/health"}[service]
    try:
        resp = http("GET", base, timeout=2)
    except OSError:
        return None
    return resp.json().get("pid") if resp.status in (200, 503) else None


def restarted(session: Session, service: str, old: int) -> int:
    return wait_until(lambda: (p := pid_of(session, service)) not in (None, old) and p, 60, interval=0.1,
                      what=f"{service} back")


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def input_tab(session: Session) -> dict:
    return next(t for t in http("GET", session.cdp + "/json/list").json()
                if t["type"] == "page" and "input.html" in t["url"])


def scene(session: Session) -> dict:
    resp = http("GET", session.scene + "/api/v1/scene?mode=agent-turn", timeout=60)
    assert resp.status == 200, resp.body[:300]
    return resp.json()


def test_ids_held_across_a_scene_restart_name_the_same_element_or_answer_409(session, pages):
    tab = input_tab(session)
    http("GET", session.cdp + f"/json/activate/{tab['id']}")
    before = scene(session)
    submit = next(e for e in before["ax"] if e["name"] == "Submit")
    other = next(e for e in before["ax"] if e["name"] == "Other")
    time.sleep(1.0)  # an agent reads the scene and acts a while later; the scene saved its ids meanwhile
    old = pid_of(session, "scene")
    os.kill(old, signal.SIGKILL)
    # While the scene is down the page changes: Submit goes, a tab opens.
    run_js(session, tab["id"], "document.getElementById('submit').remove()")
    http("PUT", session.cdp + "/json/new?about:blank")
    http("GET", session.cdp + f"/json/activate/{tab['id']}")
    restarted(session, "scene", old)
    pages.clear()

    resp = http("POST", session.scene + "/api/v1/act", {"target": submit["id"], "action": "click"})
    assert resp.status == 409 and resp.json()["error"]["code"] == "stale_element"
    resp = http("POST", session.scene + "/api/v1/act", {"target": other["id"], "action": "click"})
    assert resp.status == 200, resp.body
    assert pages.wait_for(type="click", target="other", timeout=10)
    assert not pages.matching(type="click", target="submit")
    assert not [e for e in scene(session)["ax"] if e["id"] == submit["id"]]
    http("GET", session.cdp + f"/json/activate/{tab['id']}")
    run_js(session, tab["id"], "location.reload()")


def test_a_scene_killed_right_after_answering_never_gives_its_ids_to_other_elements(session):
    before = {e["id"]: (e["role"], e["name"]) for e in scene(session)["ax"]}
    old = pid_of(session, "scene")
    os.kill(old, signal.SIGKILL)  # before it could save what its ids name
    restarted(session, "scene", old)
    after = {e["id"]: (e["role"], e["name"]) for e in scene(session)["ax"]}
    assert after
    for ident, what in after.items():
        assert before.get(ident, what) == what, f"{ident} named {before[ident]}, now {what}"
    for ident in set(before) - set(after):
        resp = http("POST", session.scene + "/api/v1/act", {"target": ident, "action": "hover"})
        assert resp.status == 409 and resp.json()["error"]["code"] == "stale_element"


def test_a_bridge_restart_leaves_the_tabs_and_their_form_input_alone(session, pages):
    for n in (2, 3):
        http("PUT", session.cdp + f"/json/new?{pages.url('input.html')}%3Ftab{n}")
    tab = wait_until(lambda: input_tab(session), 10, what="the page")
    wait_until(lambda: run_js(session, tab["id"], "document.readyState") == "complete", 20, what="load")
    run_js(session, tab["id"], "document.getElementById('text').value = 'half-typed form'")
    urls = sorted(t["url"] for t in http("GET", session.cdp + "/json/list").json() if t["type"] == "page")
    browser = http("GET", session.bridge + "/health").json()["chromium_pid"]
    old = pid_of(session, "bridge")
    os.kill(old, signal.SIGKILL)
    restarted(session, "bridge", old)
    wait_until(lambda: http("GET", session.bridge + "/health").status == 200, 20, what="the bridge reading")
    assert http("GET", session.bridge + "/health").json()["chromium_pid"] == browser
    assert sorted(t["url"] for t in http("GET", session.cdp + "/json/list").json() if t["type"] == "page") == urls
    assert run_js(session, tab["id"], "document.getElementById('text').value") == "half-typed form"
    layout = http("GET", session.bridge + f"/layout?tab={tab['id']}", timeout=60).json()
    assert layout["tabs"][0]["error"] is None


def test_closing_the_last_browser_window_is_not_a_crash_and_the_browser_is_back():
    s = Session(["800x600"]).start()
    try:
        window = s.browser_window()
        assert s.post(f"/api/v1/windows/{window['id']}/close").status == 200
        back = wait_until(lambda: next((w for w in s.windows("chromium") if w["id"] != window["id"]), None), 30,
                          what="a new browser window")
        assert back["pid"] != window["pid"]
        health = http("GET", s.scene + "/api/v1/health").json()["session"]
        assert health["browser"]["last_exit"] == 0 and health["browser"]["restarts"] >= 1
    finally:
        s.stop()


def test_screenshots_beyond_the_pixel_limit_are_422_and_cost_no_memory(session):
    desktopd = pid_of(session, "desktopd")
    before = rss_kb(desktopd)
    for query in ("format=webp&width=16384", "region=0,0,10,10&width=16384", "format=rgb&scale=4",
                  "format=png&width=16000"):
        resp = session.get("/api/v1/screenshot?" + query)
        assert resp.status == 422, (query, resp.status)
        assert resp.json()["error"]["code"] == "too_large" and "limit" in resp.json()["error"]["message"]
    # The largest allowed picture (4 times the display) is served, and its memory goes back.
    resp = session.get("/api/v1/screenshot?format=png&scale=2")
    assert resp.status == 200 and resp.headers["x-deskbox-width"] == "2560"
    assert rss_kb(desktopd) - before < 100 * 1024
    assert pid_of(session, "desktopd") == desktopd


def test_a_background_child_does_not_hold_an_execute_and_a_timeout_ends_the_command(session):
    base = session.state["osworld"]
    began = time.monotonic()
    resp = http("POST", base + "/execute", {"command": "setsid sleep 45 & echo started", "shell": True,
                                            "timeout": 5}, timeout=60)
    assert resp.status == 200 and resp.json()["output"] == "started\n"
    assert time.monotonic() - began < 30  # the background sleep (45 s) did not hold the reply
    resp = http("POST", base + "/execute", {"command": "echo partial; sleep 30", "shell": True, "timeout": 2},
                timeout=60)
    body = resp.json()
    assert resp.status == 500 and body["status"] == "error" and "timed out" in body["message"]
    assert body["output"] == "partial\n"


def test_while_the_compositor_is_gone_no_screenshot_shows_its_old_pixels(session):
    desktopd = pid_of(session, "desktopd")
    assert session.get("/api/v1/screenshot").status == 200  # cached now
    sway = session.children_up()["sway"]["pid"]
    os.kill(sway, signal.SIGKILL)
    wait_until(lambda: not _alive(sway), 10, what="Sway gone")
    answers = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            resp = http("GET", session.desktopd + "/api/v1/screenshot", timeout=5)
        except OSError:
            answers.append("refused")
            time.sleep(0.02)
            continue
        if resp.status == 200:
            break
        assert resp.status == 503 and resp.headers.get("retry-after"), resp.status
        answers.append(resp.status)
    # The first picture after the kill comes from a desktopd on the new compositor.
    assert pid_of(session, "desktopd") != desktopd
    session.browser_window()
    wait_until(lambda: http("GET", session.state["osworld"] + "/screenshot").status == 200, 30, what="all back")


def test_a_recording_past_its_limit_is_stopped_and_playable(session):
    base = session.state["osworld"]
    assert http("POST", base + "/start_recording").status == 200
    # Past this session's 3 s limit, and the up to 5 s more the limit waits for the first
    # bytes on a busy machine (deskbox.common.recording.FIRST_BYTES_S).
    time.sleep(3 + FIRST_BYTES_S + 1)
    resp = http("POST", base + "/end_recording", timeout=30)
    assert resp.status == 200 and resp.headers["x-deskbox-recording-limit"] == "duration"
    assert resp.body[4:8] == b"ftyp" and b"moov" in resp.body


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def test_a_recording_running_at_a_reset_is_finished_playable(session):
    base = session.state["osworld"]
    assert http("POST", base + "/start_recording").status == 200
    time.sleep(2)
    resp = http("POST", session.scene + "/api/v1/session/reset", timeout=120)
    assert resp.status == 200 and resp.json()["healthy"], resp.body[:300]
    resp = http("POST", base + "/end_recording", timeout=30)
    assert resp.status == 200, resp.body[:300]
    assert resp.body[4:8] == b"ftyp" and b"moov" in resp.body


def test_a_killed_osworld_server_comes_back(session):
    base = session.state["osworld"]
    old = http("GET", base + "/health").json()["pid"]
    os.kill(old, signal.SIGKILL)
    back = wait_until(lambda: (h := _health(base)) and h["pid"] != old and h, 60, interval=0.2,
                      what="the OSWorld server back")
    assert back["ok"]
    resp = http("GET", base + "/screenshot")
    assert resp.status == 200 and resp.body[:4] == b"\x89PNG"


def _health(base: str) -> dict | None:
    try:
        resp = http("GET", base + "/health", timeout=2)
    except OSError:
        return None
    return resp.json() if resp.status == 200 else None
