"""`deskbox run` end to end: task configs written here in OSWorld's format
(tests/run_tasks: an index beside its domain folders), run by the real command across a
pool of bare sessions (`--provider local`), graded by OSWorld's own getters and metric
functions from desktop-env; a session killed mid-task, a run stopped and resumed, and
the HTML report in a real browser."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from deskbox.run import graders
from deskbox.run.tasks import load_tasks
from tests.support import ROOT, free_port, wait_until
from tests.test_osworld_tasks import FileServer

pytestmark = pytest.mark.desktop

TASKS = ROOT / "tests" / "run_tasks"
INDEX = TASKS / "test_all.json"
SOLUTIONS = TASKS / "solutions.json"
ALL = {t.key for t in load_tasks([str(INDEX)])}


def deskbox_run(*args: str, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "deskbox.cli", "run", str(INDEX), *args,
                             "--provider", "local", "--out", str(out)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout: float = 400) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"deskbox run exited {proc.returncode}:\n{err[-4000:]}"
    return out


def results(out: Path) -> list[dict]:
    path = out / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


SCRIPTS = json.loads(SOLUTIONS.read_text())


def osworld_success_rate(model_dir: Path) -> float | None:
    """What OSWorld's show_result.py reports for ``{out}/{action_space}/{observation_type}/
    {model}``, read its way: every ``{domain}/{id}/result.txt`` there, a number each, and
    their mean; folders without one (tasks that ended in an error) are not counted."""
    scores = [float((task / "result.txt").read_text()) for domain in model_dir.iterdir() if domain.is_dir()
              for task in domain.iterdir() if (task / "result.txt").is_file()]
    return sum(scores) / len(scores) if scores else None


def events(out: Path) -> list[dict]:
    path = out / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def test_the_tasks_are_read_from_osworlds_layout_a_folder_or_files():
    assert len(ALL) == 5 and "chrome/open-a-page-that-does-not-exist" in ALL
    assert {t.key for t in load_tasks([str(TASKS)])} == ALL
    one = load_tasks([str(TASKS / "os" / "write-a-note.json")])
    assert [t.key for t in one] == ["os/write-a-note"]
    assert [t.key for t in load_tasks([str(INDEX)], domains=["chrome"])] == ["chrome/open-a-page-that-does-not-exist"]
    assert len(load_tasks([str(INDEX)], limit=2)) == 2


def test_a_metric_is_imported_alone_and_one_whose_module_needs_more_says_what():
    assert graders.metric("compare_answer")("a", {"expected": "a"}) == 1.0
    with pytest.raises(graders.GraderUnavailable, match="no metric"):
        graders.metric("no_such_metric")
    # docs.py imports easyocr (torch) at its top: nothing of it was imported for the metric
    # above. Where it is not installed, deskbox's stand-in is registered for docs.py's other
    # metrics, and what uses it says what is missing.
    easyocr = sys.modules.get("easyocr")
    assert easyocr is None or getattr(easyocr, "__file__", None) is None, easyocr
    assert "torch" not in sys.modules
    if easyocr is not None:
        with pytest.raises(graders.GraderUnavailable, match="easyocr is not installed"):
            easyocr.Reader(["en"])


def test_noop_scores_zero_and_the_scripted_agent_solves_every_task_across_three_sessions(tmp_path):
    noop_out, script_out = tmp_path / "noop", tmp_path / "script"
    finish(deskbox_run("--agent", "noop", "--sessions", "3", "--admit", "1", "--admit-reads", "1",
                       "--observation-type", "screenshot_a11y_tree", out=noop_out))
    noop = {r["task"]: r for r in results(noop_out)}
    assert set(noop) == ALL
    assert all(r["status"] == "done" and r["score"] == 0.0 for r in noop.values()), noop
    assert all(r["actions"] == ["DONE"] for r in noop.values())
    # Paced by one admission slot: no two tasks' resets, setups and waits for their apps
    # overlapped, each session was quiet before its first observation, and run.json says so.
    held = sorted((r["slot"]["from"], r["slot"]["to"]) for r in noop.values())
    assert all(a[1] <= b[0] for a, b in zip(held, held[1:])), held
    assert all(r["ready"]["settled"] and "queued_s" in r["timings"] for r in noop.values()), noop
    assert json.loads((noop_out / "run.json").read_text())["admit"] == 1
    # Each accessibility tree read held the one read slot: the step says how long it waited.
    steps = [s for r in noop.values() for s in r["step_timings"]]
    assert steps and all(s["tree_queued_s"] >= 0 for s in steps), noop
    assert json.loads((noop_out / "run.json").read_text())["admit_reads"] == 1
    # Each session is stopped as soon as the queue has no task left for it, not at the run's end.
    ran_on = {e["session"] for e in events(noop_out) if e["event"] == "task_started"}
    assert {e["session"] for e in events(noop_out) if e["event"] == "session_retired"} == ran_on

    proc = deskbox_run("--agent", f"script:{SOLUTIONS}", "--sessions", "3", out=script_out)
    # The slow task's session is killed while the task runs (its first action sleeps 8 s).
    slow = wait_until(lambda: next((e for e in events(script_out) if e["event"] == "task_started"
                                    and e["task"] == "os/write-after-a-pause"), None), 120,
                      what="the slow task to start")
    time.sleep(3)
    os.kill(slow["pid"], signal.SIGTERM)
    summary = json.loads(finish(proc).splitlines()[-3])
    assert json.loads((script_out / "run.json").read_text())["admit"] == (os.cpu_count() or 1)  # one slot per core
    assert json.loads((script_out / "run.json").read_text())["admit_reads"] == 0  # reads: no bound
    solved = {r["task"]: r for r in results(script_out)}
    assert set(solved) == ALL
    assert {k: (r["status"], r["score"]) for k, r in solved.items()} == {k: ("done", 1.0) for k in ALL}, solved
    assert summary == {"tasks": 5, "graded": 5, "mean_all": 1.0, "mean_graded": 1.0, "mean": 1.0}
    # The killed session's task ran again on another session: an infrastructure retry, not a 0.
    retried = solved["os/write-after-a-pause"]
    assert retried["attempts"] == 2 and len(retried["infra_errors"]) == 1, retried
    assert retried["session"] != slow["session"]
    assert any(e["event"] == "session_replaced" and e["session"] == slow["session"] for e in events(script_out))
    # The session's trace of the agent's steps is in the task's folder: the click, with
    # its screenshots.
    trace = solved["os/write-a-note"]["trace"]
    assert trace["steps"] >= 1 and trace["folder"], trace
    steps = [json.loads(line) for line in (Path(trace["folder"]) / "steps.jsonl").read_text().splitlines()]
    assert any(s.get("action") == "click" for s in steps), steps
    # Each task's folder has the screenshot before each action and after the last.
    shots = sorted((script_out / "tasks" / "os" / "both-files").glob("step_*.png"))
    assert len(shots) == 4 and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in shots)

    # The report shows every task's screenshots in a real browser.
    page_path = subprocess.run([sys.executable, "-m", "deskbox.cli", "run", "report", str(script_out),
                                str(noop_out)], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(Path(page_path).as_uri())
        assert page.locator("table").first.inner_text().count("1.0") >= 2  # both domains' means
        for key in ALL:
            task = page.locator(f"details[id='{key}']")
            task.locator("summary").click()
            images = task.locator("img")
            assert images.count() >= 2, key
            for i in range(images.count()):
                image = images.nth(i)
                image.scroll_into_view_if_needed()
                wait_until(partial(image.evaluate, "e => e.complete && e.naturalWidth > 0"), 10,
                           what=f"{key}'s screenshot {i}")
        # Given the noop run too, it lists the tasks whose score changed: all five.
        assert page.locator("tr.better").count() == 5
        browser.close()


def task_set(folder: Path, *configs: dict, copied: tuple[str, ...] = ()) -> Path:
    """An index in OSWorld's layout over ``configs`` (domain os) and copies of this
    folder's os tasks named in ``copied``; returns the index."""
    (folder / "os").mkdir(parents=True)
    for config in configs:
        (folder / "os" / f"{config['id']}.json").write_text(json.dumps(config))
    for name in copied:
        (folder / "os" / f"{name}.json").write_text((TASKS / "os" / f"{name}.json").read_text())
    index = folder / "test_all.json"
    index.write_text(json.dumps({"os": [c["id"] for c in configs] + list(copied)}))
    return index


def run_one_session(index: Path, out: Path, *args: str) -> tuple[dict, str]:
    """``deskbox run INDEX --agent noop`` on one local session: its summary, and stderr."""
    proc = subprocess.run([sys.executable, "-m", "deskbox.cli", "run", str(index), "--agent", "noop",
                           "--sessions", "1", "--spare", "0", "--provider", "local", "--out", str(out), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, f"deskbox run exited {proc.returncode}:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.splitlines()[-2]), proc.stderr


def reads(command: str, expected: str) -> dict:
    """An evaluator: ``command``'s output in the session is ``expected``."""
    return {"func": "compare_answer", "result": {"type": "vm_command_line", "command": command, "shell": True},
            "expected": {"type": "rule", "rules": {"expected": expected}}}


def test_a_setup_step_that_fails_in_a_healthy_session_is_the_tasks_error_and_the_session_goes_on(tmp_path):
    """A download that does not answer is the task's ``setup_error``: the session that
    ran it answers, so it is neither replaced nor charged an infrastructure retry, and
    the next task runs on it."""
    dead = f"http://127.0.0.1:{free_port()}/input.xlsx"  # nothing listens there
    broken = {"id": "download-that-does-not-answer", "snapshot": "os", "instruction": "Open input.xlsx.",
              "config": [{"type": "download", "parameters": {"files": [{"url": dead, "path": "/tmp/input.xlsx"}]}}],
              "evaluator": reads("cat /tmp/input.xlsx", "x")}
    out = tmp_path / "out"
    summary, _ = run_one_session(task_set(tmp_path / "tasks", broken, copied=("write-a-note",)), out)
    found = {r["task"]: r for r in results(out)}
    failed = found["os/download-that-does-not-answer"]
    assert (failed["status"], failed["score"], failed["attempts"], failed["infra_errors"]) == \
        ("setup_error", None, 1, []), failed
    assert failed["error"].startswith("setup: ") and "input.xlsx" in failed["error"], failed["error"]
    after = found["os/write-a-note"]
    assert (after["status"], after["score"], after["session"]) == ("done", 0.0, failed["session"]), after
    assert not [e for e in events(out) if e["event"] in ("session_replaced", "infra_error")], events(out)
    assert summary == {"tasks": 2, "graded": 1, "mean_all": 0.0, "mean_graded": 0.0, "mean": 0.0}


def test_a_run_from_a_fetched_cache_needs_no_network_and_names_what_the_cache_lacks(tmp_path):
    """``deskbox tasks fetch`` mirrors a task set's downloads and gold files; with the
    server gone, ``deskbox run --cache`` sets up and grades from the cache alone, and a
    file the cache lacks is named before the run starts and in the task's error."""
    server = FileServer()
    note = server.serve("note.txt", b"cached words")
    gold = server.serve("gold.txt", b"cached words")
    gone = f"http://127.0.0.1:{free_port()}/gold.txt"  # never served: fetch cannot get it
    placed = f"/tmp/deskbox-test-cached-{free_port()}.txt"  # (a path the session's user can write)
    from_cache = {"id": "set-up-and-graded-from-the-cache", "snapshot": "os", "instruction": "Leave note.txt.",
                  "config": [{"type": "download", "parameters": {"files": [{"url": note, "path": placed}]}}],
                  "evaluator": {"func": "compare_text_file", "result": {"type": "vm_file", "path": placed,
                                                                        "dest": "note.txt"},
                                "expected": {"type": "cloud_file", "path": gold, "dest": "gold.txt"}}}
    lacking = {"id": "gold-the-cache-lacks", "snapshot": "os", "instruction": "Leave note.txt.", "config": [],
               "evaluator": {"func": "compare_text_file", "result": {"type": "vm_file", "path": "/etc/hostname",
                                                                     "dest": "hostname"},
                             "expected": {"type": "cloud_file", "path": gone, "dest": "gold.txt"}}}
    index = task_set(tmp_path / "tasks", from_cache, lacking)
    cache = tmp_path / "cache"
    fetched = subprocess.run([sys.executable, "-m", "deskbox.cli", "tasks", "fetch", str(index), "--cache",
                              str(cache)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert fetched.returncode == 1 and f"failed: {gone}" in fetched.stderr, fetched.stderr
    assert json.loads(fetched.stdout) == {"tasks": 2, "files": 2, "failed": 1, "tasks_missing_files": 1}
    server.server.shutdown()
    server.server.server_close()

    out = tmp_path / "out"
    try:
        summary, stderr = run_one_session(index, out, "--cache", str(cache))
    finally:
        Path(placed).unlink(missing_ok=True)
    assert "os/gold-the-cache-lacks" in stderr.split("task_done")[0] and gone in stderr, stderr[-3000:]
    found = {r["task"]: r for r in results(out)}
    graded = found["os/set-up-and-graded-from-the-cache"]
    assert (graded["status"], graded["score"]) == ("done", 1.0), graded
    failed = found["os/gold-the-cache-lacks"]
    assert failed["status"] == "grader_error" and f"not in the cache: {gone}" in failed["error"], failed
    assert summary == {"tasks": 2, "graded": 1, "mean_all": 0.5, "mean_graded": 1.0, "mean": 1.0}


def test_a_stopped_run_resumes_with_the_same_command_and_skips_what_is_done(tmp_path):
    out = tmp_path / "resumed"
    proc = deskbox_run("--agent", f"script:{SOLUTIONS}", "--sessions", "1", out=out)
    wait_until(lambda: len(results(out)) >= 2 or proc.poll() is not None, 180, what="two tasks done")
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    first = {r["task"] for r in results(out)}
    assert 2 <= len(first) < len(ALL), first  # stopped part-way
    finish(deskbox_run("--agent", f"script:{SOLUTIONS}", "--sessions", "1", out=out))
    lines = Counter(r["task"] for r in results(out))
    assert set(lines) == ALL and set(lines.values()) == {1}, lines  # nothing done twice
    assert all(r["score"] == 1.0 for r in results(out))
    # OSWorld's layout beside it, read as OSWorld's show_result.py reads it: the same rate.
    theirs = out / "pyautogui" / "screenshot" / "script"
    assert osworld_success_rate(theirs) == 1.0 == json.loads((out / "summary.json").read_text())["total"]["mean_graded"]
    both = theirs / "os" / "both-files"
    traj = [json.loads(line) for line in (both / "traj.jsonl").read_text().splitlines()]
    assert [(t["step_num"], t["action"], t["done"]) for t in traj] == [
        (1, SCRIPTS["os/both-files"][0], False), (2, SCRIPTS["os/both-files"][1], False), (3, "DONE", True)], traj
    assert all((both / t["screenshot_file"]).read_bytes().startswith(b"\x89PNG") for t in traj)
    assert {p.name for p in both.iterdir()} >= {"result.txt", "traj.jsonl", "runtime.log"}
    # run.json says what the run was, and what its first start wrote.
    run = json.loads((out / "run.json").read_text())
    assert (run["agent"], run["max_steps"], run["agent_settings"]["max_trajectory_length"]) == (
        f"script:{SOLUTIONS}", 15, 3), run
    assert run["tasks_hash"].startswith("sha256:") and run["desktop_env"] == "1.0.2"
    assert [e["tasks_hash"] for e in run["earlier"]] == [run["tasks_hash"]]
    # Going on with other options would mix two runs: refused before anything starts.
    refused = deskbox_run("--agent", f"script:{SOLUTIONS}", "--sessions", "1", "--max-steps", "3", out=out)
    _, err = refused.communicate(timeout=60)
    assert refused.returncode == 2 and "max_steps: 15 then, 3 now" in err and "--force" in err, err
    assert Counter(r["task"] for r in results(out)) == lines

    # replay:DIR says that run's actions again, here observing the accessibility tree too.
    again = tmp_path / "replayed"
    finish(deskbox_run("--agent", f"replay:{out}", "--sessions", "1", "--observation-type", "a11y_tree",
                       "--no-trace", out=again))
    replayed = {r["task"]: r for r in results(again)}
    assert {k: r["score"] for k, r in replayed.items()} == {k: 1.0 for k in ALL}, replayed
    assert replayed["os/both-files"]["actions"] == {r["task"]: r for r in results(out)}["os/both-files"]["actions"]


def test_attached_sessions_are_reset_between_tasks_and_left_running(tmp_path):
    from tests.support import Session, free_port, http

    port = free_port()
    session = Session(["1280x800"], browser=False,
                      extra_args=["--osworld", "--osworld-port", str(port), "--user", "deskbox-attach"]).start()
    try:
        out = tmp_path / "attached"
        proc = subprocess.Popen([sys.executable, "-m", "deskbox.cli", "run", str(TASKS / "os"), "--agent",
                                 f"script:{SOLUTIONS}", "--provider", "attach", "--attach",
                                 f"{session.state['osworld']},{session.scene}", "--tasks", "write-a-note",
                                 "both-files", "--no-trace", "--out", str(out)],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        finish(proc)
        done = {r["task"]: r for r in results(out)}
        assert {k: r["score"] for k, r in done.items()} == {"os/write-a-note": 1.0, "os/both-files": 1.0}, done
        assert {r["session"] for r in done.values()} == {"attached0"}
        # The run did not stop the session it was lent.
        assert http("GET", session.scene + "/api/v1/health").status == 200
        # computer_13's actions, through desktop-env's own execute_action: a move, then FAIL,
        # which is what the infeasible task scores 1 for.
        script = tmp_path / "computer13.json"
        script.write_text(json.dumps({"open-a-page-that-does-not-exist": [
            {"action_type": "MOVE_TO", "parameters": {"x": 50, "y": 60}}, {"action_type": "FAIL"}]}))
        out13 = tmp_path / "computer13"
        finish(subprocess.Popen([sys.executable, "-m", "deskbox.cli", "run", str(TASKS / "chrome"), "--agent",
                                 f"script:{script}", "--provider", "attach", "--action-space", "computer_13",
                                 "--attach", f"{session.state['osworld']},{session.scene}", "--out", str(out13)],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        (record,) = results(out13)
        assert record["score"] == 1.0 and record["actions"][-1] == {"action_type": "FAIL"}, record
        assert http("GET", session.desktopd + "/api/v1/pointer").json() == {"display": 0, "x": 50, "y": 60}
        # An agent's class, built with OSWorld's settings and an --agent-arg, in the shapes
        # of OSWorld's other agents (tests/shaped_agent.py).
        shaped = tmp_path / "shaped"
        finish(subprocess.Popen([sys.executable, "-m", "deskbox.cli", "run", str(TASKS / "os"), "--agent",
                                 "tests.shaped_agent:ShapedAgent", "--agent-arg", "text=deskbox ran me",
                                 "--max-trajectory-length", "2", "--model", "m-1", "--tasks", "write-a-note",
                                 "--record",
                                 "--provider", "attach", "--attach", f"{session.state['osworld']},{session.scene}",
                                 "--no-trace", "--out", str(shaped)],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        (record,) = results(shaped)
        assert (record["status"], record["score"], record["steps"]) == ("done", 1.0, 2), record
        folder = shaped / "tasks" / "os" / "write-a-note"
        assert "reset: window 2, model m-1" in (folder / "runtime.log").read_text()
        assert json.loads((folder / "steps.json").read_text())["infos"] == [{"step": 0}, {"step": 1}]
        theirs = shaped / "pyautogui" / "screenshot" / "m-1" / "os" / "write-a-note"
        assert (theirs / "result.txt").read_text() == "1.0\n"
        assert (theirs / "recording.mp4").read_bytes()[4:8] == b"ftyp"
        traj = [json.loads(line) for line in (theirs / "traj.jsonl").read_text().splitlines()]
        assert [(t["step_num"], t["response"], t["done"]) for t in traj] == [(1, "writes the note", False),
                                                                             (2, "done", True)], traj
        assert traj[0]["info"]["execute"]["returncode"] == 0, traj[0]
        # An agent that hangs: its task ends at --task-timeout as the agent's error, and the
        # next task runs on the same session with a new agent.
        bounded = tmp_path / "bounded"
        finish(subprocess.Popen([sys.executable, "-m", "deskbox.cli", "run", str(TASKS / "os"), "--agent",
                                 "tests.shaped_agent:HangingAgent", "--agent-arg", f"solutions={SOLUTIONS}",
                                 "--agent-arg", 'hang=["os/write-a-note"]', "--task-timeout", "15",
                                 "--tasks", "write-a-note", "both-files", "--provider", "attach", "--attach",
                                 f"{session.state['osworld']},{session.scene}", "--no-trace", "--out", str(bounded)],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        done = {r["task"]: r for r in results(bounded)}
        hung = done["os/write-a-note"]
        assert (hung["status"], hung["score"], hung["timed_out"]) == ("agent_error", None, "agent"), hung
        assert "predict() had not ended" in hung["error"] and "--task-timeout of 15 s" in hung["error"], hung
        assert (done["os/both-files"]["status"], done["os/both-files"]["score"]) == ("done", 1.0), done
        # An agent error that passes (a rate limit): run again on the same session after
        # the backoff, and graded.
        retried = tmp_path / "retried"
        finish(subprocess.Popen([sys.executable, "-m", "deskbox.cli", "run", str(TASKS / "os"), "--agent",
                                 "tests.shaped_agent:FlakyAgent", "--agent-arg", f"solutions={SOLUTIONS}",
                                 "--retry-errors", "agent_error", "--retry-backoff", "0.5", "--tasks", "write-a-note",
                                 "--provider", "attach", "--attach", f"{session.state['osworld']},{session.scene}",
                                 "--no-trace", "--out", str(retried)],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        (record,) = results(retried)
        assert (record["status"], record["score"]) == ("done", 1.0), record
        assert record["retried"] == [{"status": "agent_error", "error": "RuntimeError: rate limited (429)"}], record
        assert [e["after_s"] for e in events(retried) if e["event"] == "task_retried"] == [0.5]
    finally:
        session.stop()


def test_the_python_pool_keeps_a_session_warm_and_resets_a_released_one_before_lending_it_again():
    from deskbox.run import Pool, session_factory

    def execute(env, command: str) -> dict:
        status, raw = env.request("POST", "osworld", "/execute", {"command": command, "shell": True}, timeout=60)
        assert status == 200, raw[:300]
        return json.loads(raw)

    with Pool(session_factory("local"), 2, spare=0, warm=1, reset_on_release=True) as pool:
        wait_until(lambda: pool.stats()["idle"] == 1, timeout=120, what="one warm session")
        assert len(pool.sessions()) == 1  # warm 1: the second is not started before it is needed
        first = pool.take()
        # taken: another is started so that one stays ready
        wait_until(lambda: pool.stats()["idle"] == 1, timeout=120, what="a warm session again")
        assert len(pool.sessions()) == 2
        assert execute(first, "echo used > ~/used.txt && cat ~/used.txt")["output"].strip() == "used"
        pool.release(first)  # reset in the background, then lent again
        wait_until(lambda: pool.stats()["idle"] == 2, timeout=120, what="the released session back, reset")
        again = {env.name: env for env in (pool.take(), pool.take())}
        assert first.name in again
        assert "No such file" in execute(again[first.name], "cat ~/used.txt 2>&1")["output"]
        sessions = pool.sessions()
    assert all(env.alive() is not True for env in sessions)  # the pool stopped them
