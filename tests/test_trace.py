"""Traces and replay against a real session: a demonstration recorded on a fixture page
through /act and desktopd's own pointer, kept as a folder (steps with the element each
hit, screenshots, a video), replayed after the page's layout changed (a banner above,
the buttons in another order, 125 % zoom), verified on a page whose "Save draft" button
was removed; and the same on a GTK app whose buttons changed places."""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import urllib.parse
from pathlib import Path

import pytest
from PIL import Image

from deskbox.trace import view
from deskbox.trace.recorder import read_steps
from tests.conftest import open_fixture
from tests.support import ROOT, Process, Session, http, mp4_video_size, wait_until

FIXTURE_APP = ROOT / "tests" / "apps" / "gtk3_buttons.py"
SYSTEM_PYTHON = "/usr/bin/python3"
NAME = "Ada Lovelace"


@pytest.fixture(scope="module")
def traces():
    # Where the session's user can reach it (deskbox up gives it the folder): not under
    # pytest's own temporary folder, which only root can enter.
    folder = Path(tempfile.mkdtemp(prefix="deskbox-traces-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def session(traces):
    """A session whose traces go to ``traces``, recording one from its start."""
    s = Session(["1280x800"], extra_args=["--trace", str(traces)]).start()
    s.browser_window()
    # The trace deskbox up --trace started; stopped, as the tests record their own (one at a time).
    status = http("GET", s.scene + "/api/v1/trace/status").json()
    assert status["active_trace_id"] is not None, status
    first = post(s, "/api/v1/trace/stop", {})
    assert json.loads((Path(first["path"]) / "trace.json").read_text())["label"] == "deskbox up --trace"
    yield s
    s.stop()


def post(session: Session, path: str, body: dict, status: int = 200) -> dict:
    resp = http("POST", session.scene + path, body)
    if resp.status == 500:  # the scene's log says why
        log = Path(session.state["runtime_dir"]) / "logs" / "scene.log"
        raise AssertionError(f"{path}: 500; the scene's log ends:\n{log.read_text()[-3000:]}")
    assert resp.status == status, f"{path}: {resp.status} {resp.body[:600]!r}"
    return resp.json()


def find(session: Session, selector: str) -> dict:
    def one():
        resp = http("GET", session.scene + "/api/v1/find?mode=agent-turn&selector=" + urllib.parse.quote(selector))
        assert resp.status == 200, resp.body[:300]
        found = resp.json()
        return found["matches"][0] if found["count"] == 1 else None
    return wait_until(one, 15, what=f"one element for {selector}")


def act(session: Session, selector: str, action: str = "click", **extra) -> dict:
    return post(session, "/api/v1/act", {"target": find(session, selector)["id"], "action": action, **extra})


def record_demo(session: Session, pages) -> dict:
    """The demonstration: fill the signup form and submit it (six steps, one of them a
    click sent to desktopd directly, as pyautogui does)."""
    open_fixture(session, pages, "replay.html")
    started = post(session, "/api/v1/trace/start", {"label": "signup demo", "video": True})
    act(session, 'textbox[name="Name"]')
    act(session, 'textbox[name="Name"]', "type", text=NAME)
    act(session, 'combobox[name="Plan"]', "select", option="Pro")
    box = find(session, 'checkbox[name="Subscribe"]')["bbox"]
    session.pointer(action="click", x=box[0] + box[2] / 2, y=box[1] + box[3] / 2)
    act(session, 'button[name="Save draft"]')
    act(session, 'button[name="Submit"]')
    submitted = pages.wait_for(type="submit", timeout=10)
    assert (submitted["name"], submitted["plan"], submitted["subscribe"]) == (NAME, "pro", True)
    stopped = post(session, "/api/v1/trace/stop", {})
    assert stopped["trace_id"] == started["trace_id"] and stopped["step_count"] == 6, stopped
    return stopped


@pytest.fixture(scope="module")
def demo(session, pages) -> dict:
    return record_demo(session, pages)


def test_a_trace_keeps_every_action_with_the_element_it_hit(demo, session, traces):
    folder = Path(demo["path"])
    assert folder.parent == traces
    meta = json.loads((folder / "trace.json").read_text())
    assert meta["label"] == "signup demo" and meta["step_count"] == 6 and meta["stopped_at"]
    assert meta["displays"] == [{"id": 0, "size": [1280, 800]}]
    steps = read_steps(folder)
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5, 6]
    assert [(s["interface"], s["action"]) for s in steps] == [
        ("act", "click"), ("act", "type"), ("act", "select"), ("desktopd", "click"), ("act", "click"),
        ("act", "click")]
    assert all(s["ok"] and s["error"] is None for s in steps), [s["error"] for s in steps]
    assert [s["via"] for s in steps] == ["act", "act", "act", "input", "act", "act"]
    refs = [s["element"] for s in steps]
    assert [(r["role"], r["name"]) for r in refs] == [
        ("textbox", "Name"), ("textbox", "Name"), ("combobox", "Plan"), ("checkbox", "Subscribe"),
        ("button", "Save draft"), ("button", "Submit")]
    for ref in refs:
        assert ref["source"] == "cdp" and ref["app"] == "chromium" and ref["display_id"] == 0
        assert ref["window_title"] and "replay fixture" in ref["window_title"]
        assert ref["id"].startswith("a0-") and len(ref["bbox"]) == 4
        assert {"role": "region", "name": "Signup"} in ref["ancestors"], ref["ancestors"]
    for ref in refs[:3] + refs[4:]:  # (the element of desktopd's click is found by its point)
        assert ref["url"].endswith("/replay.html"), ref["url"]
    assert steps[1]["args"]["text"] == NAME
    # The click's own input, where the pointer went: inside the button's box.
    click = [p for p in steps[5]["parts"] if p["kind"] == "pointer"]
    x, y, w, h = refs[5]["bbox"]
    assert click and x <= click[0]["x"] <= x + w and y <= click[0]["y"] <= y + h
    assert steps[5]["point"] == [click[0]["x"], click[0]["y"]]
    # desktopd's click: the element at its point, and the request as it was sent.
    assert steps[3]["args"]["action"] == "click" and steps[3]["point"][0] == steps[3]["args"]["x"]
    assert steps[3]["parts"] == [{"kind": "pointer", **steps[3]["args"]}]
    for s in steps:
        for when in ("before", "after"):
            with Image.open(folder / s["shots"][when]) as shot:
                assert shot.format == "JPEG" and shot.size == (1280, 800)
    # The screenshots around desktopd's click differ where it ticked the checkbox.
    with Image.open(folder / steps[3]["shots"]["before"]) as a, Image.open(folder / steps[3]["shots"]["after"]) as b:
        cx, cy = round(refs[3]["bbox"][0] + refs[3]["bbox"][2] / 2), round(refs[3]["bbox"][1] + refs[3]["bbox"][3] / 2)
        assert a.getpixel((cx, cy)) != b.getpixel((cx, cy))
    video = folder / "video.mp4"
    assert meta["video"] == "video.mp4" and video.stat().st_size > 1000
    assert video.read_bytes()[4:8] == b"ftyp" and mp4_video_size(video.read_bytes()) == (1280, 800)


def test_a_trace_leaves_the_session_over_http_as_it_is_on_disk_and_is_deleted_there(demo, session, tmp_path):
    """What a runner does where it cannot copy files out of the session (a pod, a pool):
    the scene's tar stream of the trace, unpacked by the provider, is the folder."""
    from deskbox.run.sessions import AttachedEnvironment

    folder = Path(demo["path"])
    env = AttachedEnvironment("traced", session.scene, session.scene)
    assert env.fetch_trace(demo["trace_id"], tmp_path / "trace")
    theirs = sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())
    ours = sorted(p.relative_to(tmp_path / "trace") for p in (tmp_path / "trace").rglob("*") if p.is_file())
    assert ours == theirs and Path("video.mp4") in ours and any(p.parts[0] == "shots" for p in ours)
    for rel in theirs:
        assert (tmp_path / "trace" / rel).read_bytes() == (folder / rel).read_bytes(), rel
    # Unknown, malformed, and still being recorded: 404, 400, 409; the provider says False.
    resp = http("GET", session.scene + "/api/v1/traces/20200101T000000-abcdef")
    assert resp.status == 404 and resp.json()["error"]["code"] == "no_such_trace", resp.body[:300]
    assert not env.fetch_trace("20200101T000000-abcdef", tmp_path / "none") and not (tmp_path / "none").exists()
    resp = http("GET", session.scene + "/api/v1/traces/..%2F..%2Fetc")
    assert resp.status in (400, 404), resp.body[:300]
    assert http("GET", session.scene + "/api/v1/traces/not-an-id").status == 400
    running = post(session, "/api/v1/trace/start", {"label": "still recording"})
    try:
        for method in ("GET", "DELETE"):
            resp = http(method, session.scene + f"/api/v1/traces/{running['trace_id']}")
            assert resp.status == 409 and resp.json()["error"]["code"] == "trace_active", (method, resp.body[:300])
    finally:
        stopped = post(session, "/api/v1/trace/stop", {})
    # Once fetched, a runner removes it from the session: its folder goes, and it is no
    # longer served; the demonstration the other tests replay stays.
    assert env.fetch_trace(stopped["trace_id"], tmp_path / "short") and env.delete_trace(stopped["trace_id"])
    assert not Path(stopped["path"]).exists() and folder.is_dir()
    resp = http("GET", session.scene + f"/api/v1/traces/{stopped['trace_id']}")
    assert resp.status == 404 and resp.json()["error"]["code"] == "no_such_trace", resp.body[:300]
    assert not env.delete_trace(stopped["trace_id"])
    assert http("DELETE", session.scene + "/api/v1/traces/not-an-id").status == 400


def test_the_trace_viewer_renders_the_folder(demo):
    page = view.render(Path(demo["path"]))
    html = page.read_text()
    assert "signup demo" in html and "Save draft" in html and "shots/00006-after.jpg" in html


def test_a_demonstration_replays_after_the_layout_changed(demo, session, pages):
    recorded = {s["element"]["name"]: s["element"]["bbox"] for s in read_steps(Path(demo["path"]))}
    open_fixture(session, pages, "replay.html?layout=b")
    # The page did change: every button is elsewhere and larger (zoomed).
    for name in ("Save draft", "Submit"):
        now = find(session, f'button[name="{name}"]')["bbox"]
        assert abs(now[1] - recorded[name][1]) > 100 and now[2] > recorded[name][2], (name, now, recorded[name])
    result = post(session, "/api/v1/replay", {"trace": demo["trace_id"], "mode": "execute"})
    assert result["finished"] and result["position"] == 6 and result["divergences"] == []
    assert [s["resolved_by"] for s in result["steps"]] == ["element"] * 6, result["steps"]
    assert all(s["ok"] for s in result["steps"]), result["steps"]
    saved = pages.wait_for(type="save", timeout=10)
    submitted = pages.wait_for(type="submit", timeout=10)
    assert (saved["name"], saved["plan"], saved["subscribe"]) == (NAME, "pro", True)
    assert (submitted["name"], submitted["plan"], submitted["subscribe"]) == (NAME, "pro", True)
    assert result["wall_ms"] > 0 and result["recorded_ms"] > 0


def test_verify_reports_the_one_step_whose_target_was_removed(demo, session, pages):
    open_fixture(session, pages, "replay.html?layout=c")
    result = post(session, "/api/v1/replay", {"trace": demo["trace_id"], "mode": "verify", "on_divergence": "warn"})
    assert result["finished"] and len(result["divergences"]) == 1, result["divergences"]
    divergence = result["divergences"][0]
    assert divergence["step"] == 5 and divergence["kind"] == "target_missing"
    assert divergence["recorded"]["name"] == "Save draft" and divergence["actual"] is None
    skipped = result["steps"][4]
    assert not skipped["ok"] and skipped["divergence"] == divergence
    # The others were done: the form was submitted as recorded.
    submitted = pages.wait_for(type="submit", timeout=10)
    assert (submitted["name"], submitted["plan"], submitted["subscribe"]) == (NAME, "pro", True)
    assert pages.matching(type="save") == []


def test_step_wise_replay_stops_at_the_divergence(demo, session, pages):
    open_fixture(session, pages, "replay.html?layout=c")
    started = post(session, "/api/v1/replay/start", {"trace": demo["trace_id"], "mode": "verify",
                                                     "on_divergence": "stop"})
    assert started["total"] == 6 and started["label"] == "signup demo"
    answers = []
    while True:
        answer = post(session, "/api/v1/replay/step", {"replay_id": started["replay_id"]})
        answers.append(answer)
        if answer["finished"]:
            break
    assert [a["position"] for a in answers] == [1, 2, 3, 4, 5]
    assert answers[-1]["divergence"]["kind"] == "target_missing"
    status = post(session, "/api/v1/replay/status", {"replay_id": started["replay_id"]})
    assert status["stopped"] and status["position"] == 5 and len(status["divergences"]) == 1
    again = http("POST", session.scene + "/api/v1/replay/step", {"replay_id": started["replay_id"]})
    assert again.status == 400 and again.json()["error"]["code"] == "replay_finished"
    assert pages.matching(type="submit") == []  # stopped before Submit


def test_replay_refuses_what_is_not_a_trace_of_this_session(session):
    for trace in ("no-such-trace", "../../etc", "/etc"):
        resp = http("POST", session.scene + "/api/v1/replay", {"trace": trace})
        assert resp.status == 404 and resp.json()["error"]["code"] == "unknown_trace", (trace, resp.body[:200])
    # Names no file system takes (found by schemathesis as 500s): a 400 naming the field.
    for trace in ("x" * 2000, "x" * 300, "traces/" + "y" * 256, "a\x00b"):
        for path in ("/api/v1/replay", "/api/v1/replay/start"):
            resp = http("POST", session.scene + path, {"trace": trace})
            assert resp.status == 400, (path, trace[:20], resp.status, resp.body[:300])
            assert [d["field"] for d in resp.json()["error"]["details"]] == ["trace"], resp.body[:300]
    resp = http("POST", session.scene + "/api/v1/replay/step", {"replay_id": "nope"})
    assert resp.status == 404 and resp.json()["error"]["code"] == "unknown_replay"
    resp = http("POST", session.scene + "/api/v1/trace/stop", {})
    assert resp.status == 409 and resp.json()["error"]["code"] == "no_trace"


def test_provider_and_toolset_actions_are_steps_too(session, pages):
    load = open_fixture(session, pages, "replay.html")
    assert load["layout"] == "a"
    box = find(session, 'button[name="Clear"]')["bbox"]
    started = post(session, "/api/v1/trace/start", {"label": "providers", "shots": False})
    session.pointer(action="move", x=5, y=5)  # at once: desktopd is told the trace began
    centre = [box[0] + box[2] // 2, box[1] + box[3] // 2]
    post(session, "/api/v1/computer/anthropic", {"action": "left_click", "coordinate": centre})
    pages.wait_for(type="reset", timeout=10)
    post(session, "/api/v1/key_and_observe", {"keys": "Tab"})
    resp = http("POST", session.scene + "/api/v1/act", {"target": find(session, 'button[name="Clear"]')["id"]},
                headers={"X-Deskbox-Interface": "mcp"})
    assert resp.status == 200
    stopped = post(session, "/api/v1/trace/stop", {})
    steps = read_steps(Path(stopped["path"]))
    assert [(s["interface"], s["action"]) for s in steps] == [("desktopd", "move"), ("anthropic", "left_click"),
                                                              ("toolset", "key"), ("mcp", "click")]
    assert steps[1]["element"]["name"] == "Clear" and steps[1]["point"] == centre
    assert steps[1]["shots"] == {"before": None, "after": None}
    assert started["trace_id"] == stopped["trace_id"]


def test_a_password_typed_stays_out_of_the_trace_without_a_policy(session, pages):
    open_fixture(session, pages, "secrets.html")
    post(session, "/api/v1/trace/start", {"label": "password", "shots": False})
    password = "correct-horse-battery"
    act(session, 'textbox[name="Password"]', "type", text=password)
    act(session, 'button[name="Save"]')
    assert pages.wait_for(type="save")["password"] == password  # (it was typed)
    stopped = post(session, "/api/v1/trace/stop", {})
    assert password not in (Path(stopped["path"]) / "steps.jsonl").read_text()
    step = read_steps(Path(stopped["path"]))[0]
    assert step["args"]["text"] == "[REDACTED]" and "protected" in step["element"]["states"]


# -- a GTK app ---------------------------------------------------------------------------


def _gtk(session: Session, *extra: str) -> Process:
    app = Process(session, [SYSTEM_PYTHON, str(FIXTURE_APP), "--title", "replay fixture", *extra])
    app.wait_for(event="ready", timeout=30)
    return app


def _stop(app: Process) -> None:
    os.killpg(app.pid, signal.SIGKILL)
    app.proc.wait()


def test_a_gtk_app_demonstration_replays_on_its_rearranged_window(traces):
    session = Session(["1280x800"], browser=False, extra_args=["--trace", str(traces)]).start()
    try:
        post(session, "/api/v1/trace/stop", {})
        app = _gtk(session)
        alpha = find(session, 'button[name="Alpha"][source=atspi]')
        started = post(session, "/api/v1/trace/start", {"label": "gtk"})
        post(session, "/api/v1/act", {"target": alpha["id"]})
        app.wait_for(event="click", widget="Alpha")
        entry = find(session, 'textbox[name="Name"][source=atspi]')
        post(session, "/api/v1/act", {"target": entry["id"], "action": "type", "text": "abc"})
        app.wait_for(event="text", widget="Name", text="abc")
        stopped = post(session, "/api/v1/trace/stop", {})
        steps = read_steps(Path(stopped["path"]))
        assert [(s["element"]["role"], s["element"]["name"], s["element"]["source"]) for s in steps] == [
            ("button", "Alpha", "atspi"), ("textbox", "Name", "atspi")]
        assert steps[0]["element"]["window_title"] == "replay fixture" and steps[0]["element"]["app"]
        _stop(app)
        # The same app, its buttons in the other order: Alpha is where Gamma was.
        moved = _gtk(session, "--reversed")
        now = find(session, 'button[name="Alpha"][source=atspi]')
        assert now["bbox"][0] > steps[0]["element"]["bbox"][0] + 100, (now, steps[0]["element"])
        result = post(session, "/api/v1/replay", {"trace": started["trace_id"], "mode": "verify"})
        assert result["divergences"] == [] and [s["resolved_by"] for s in result["steps"]] == ["element"] * 2
        moved.wait_for(event="click", widget="Alpha")
        moved.wait_for(event="text", widget="Name", text="abc")
        assert moved.latest(event="click", widget="Gamma") is None
        _stop(moved)
    finally:
        session.stop()


def test_trace_routes_validate_their_input(session):
    for body in ({"label": "x" * 500}, {"shots_every": 0}, {"video": "maybe"}, {"unknown": 1}):
        resp = http("POST", session.scene + "/api/v1/trace/start", body)
        assert resp.status == 400, (body, resp.body[:200])
    # desktopd's routes of the gate answer desktopd only.
    for path in ("/api/v1/gate/begin", "/api/v1/gate/end"):
        resp = http("POST", session.scene + path, {"route": "/api/v1/pointer", "step": "x", "ok": True})
        assert resp.status == 401 and resp.json()["error"]["code"] == "internal_only"
