"""`deskbox run --repeats K`: every task run K times on real sessions, each repeat's files
apart, the summary's interval, pass@k and pass^k; a resume with a larger K adds only the
missing repeats; `deskbox run report A B` compares two runs task by task."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.test_run import SCRIPTS, osworld_success_rate, results, task_set

pytestmark = pytest.mark.desktop


def run(index: Path, out: Path, agent: str, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "deskbox.cli", "run", str(index), "--agent", agent,
                           "--sessions", "1", "--spare", "0", "--provider", "local", "--out", str(out), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"deskbox run exited {proc.returncode}:\n{proc.stderr[-4000:]}"
    return proc


def test_repeats_give_pass_at_k_and_a_resume_adds_only_the_missing_ones(tmp_path):
    index = task_set(tmp_path / "tasks", copied=("write-a-note", "both-files"))
    # The agent solves one of the two tasks, every time.
    solutions = tmp_path / "solutions.json"
    solutions.write_text(json.dumps({"os/write-a-note": SCRIPTS["os/write-a-note"]}))
    out = tmp_path / "out"
    first = run(index, out, f"script:{solutions}", "--repeats", "2")
    assert "2 tasks x 2 repeats: mean 0.5" in first.stdout, first.stdout
    found = {r["task"]: r for r in results(out)}
    assert set(found) == {"os/write-a-note", "os/write-a-note#1", "os/both-files", "os/both-files#1"}
    assert [found[k]["score"] for k in sorted(found)] == [0.0, 0.0, 1.0, 1.0]
    assert found["os/write-a-note#1"]["repeat"] == 1
    # Each repeat's files apart, the first where a run of one repeat has them; OSWorld's
    # layout per repeat, read as show_result.py reads it.
    assert list((out / "tasks" / "os" / "write-a-note").glob("step_*.png"))
    assert list((out / "repeat-1" / "tasks" / "os" / "write-a-note").glob("step_*.png"))
    for base in (out, out / "repeat-1"):
        [model_dir] = [p for p in (base / "pyautogui" / "screenshot").iterdir() if p.is_dir()]
        assert osworld_success_rate(model_dir) == 0.5

    # Resumed with a third repeat: the four done are skipped, two run.
    third = run(index, out, f"script:{solutions}", "--repeats", "3")
    assert "4 task(s) already done" in third.stderr, third.stderr
    assert len(results(out)) == 6
    summary = json.loads((out / "summary.json").read_text())
    st = summary["statistics"]
    assert (st["tasks"], st["repeats"], st["mean"]) == (2, 3, 0.5)
    assert st["pass_at"] == {"1": 0.5, "2": 0.5, "3": 0.5} and st["pass_hat"] == {"1": 0.5, "2": 0.5, "3": 0.5}
    assert st["per_repeat"] == {"0": 0.5, "1": 0.5, "2": 0.5}
    assert st["interval95"][0] < 0.5 < st["interval95"][1]
    run_json = json.loads((out / "run.json").read_text())
    assert run_json["repeats"] == 3 and run_json["earlier"][0]["repeats"] == 2

    # Against a do-nothing run of the same tasks: better on one, the same on the other.
    nothing = tmp_path / "noop"
    run(index, nothing, "noop")
    report = subprocess.run([sys.executable, "-m", "deskbox.cli", "run", "report", str(out), str(nothing)],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    assert report.stdout.strip() == str(out / "report.html")
    compared = json.loads(report.stderr.splitlines()[0])["compared"]
    assert (compared["tasks"], compared["better"], compared["worse"], compared["same"]) == (2, 1, 0, 1)
    assert (compared["mean_first"], compared["mean_second"], compared["difference"]) == (0.0, 0.5, 0.5)
