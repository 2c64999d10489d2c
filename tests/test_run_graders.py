"""`deskbox run --graders PATH`: OSWorld's getters and metrics taken from a checkout of
OSWorld's repository instead of the desktop-env package, for task sets newer than the
package. The checkout here is the installed package copied, with a metric and a getter
the package does not have (as a newer OSWorld's are), run against a real session."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.test_run import results, run_one_session, task_set

pytestmark = pytest.mark.desktop

TASK = {"id": "graded-by-a-newer-metric", "snapshot": "os", "instruction": "Nothing to do.", "config": [],
        "evaluator": {"func": "is_newer_answer",
                      "result": {"type": "vm_command_line", "command": "echo deskbox", "shell": True},
                      "expected": {"type": "newer_rule", "rules": {"expected": "deskbox"}}}}


def checkout(folder: Path) -> Path:
    """A folder laid out as OSWorld's repository, its ``desktop_env`` the installed one
    plus ``is_newer_answer`` and ``get_newer_rule``; its package ``__init__`` raises, as
    nothing must run it."""
    import desktop_env  # the installed package, as OSWorld ships it on PyPI
    package = folder / "desktop_env"
    shutil.copytree(Path(desktop_env.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "__init__.py").write_text("raise ImportError('the checkout package __init__ ran')\n")
    (package / "evaluators" / "metrics" / "newer.py").write_text(
        "def is_newer_answer(result, expected):\n    return float(result.strip() == expected['expected'])\n")
    with (package / "evaluators" / "metrics" / "__init__.py").open("a") as init:
        init.write("\nfrom .newer import is_newer_answer\n")
    (package / "evaluators" / "getters" / "newer.py").write_text(
        "def get_newer_rule(env, config):\n    return config['rules']\n")
    with (package / "evaluators" / "getters" / "__init__.py").open("a") as init:
        init.write("\nfrom .newer import get_newer_rule\n")
    return folder


def test_a_checkouts_graders_grade_what_the_package_cannot_and_the_run_records_them(tmp_path):
    index = task_set(tmp_path / "tasks", TASK)
    repo = checkout(tmp_path / "OSWorld")

    # With the package alone the task's metric is not there: a grader_error that says
    # what to do about it.
    plain = tmp_path / "plain"
    summary, _ = run_one_session(index, plain)
    [record] = results(plain)
    assert record["status"] == "grader_error", record
    assert "is_newer_answer" in record["error"] and "--graders" in record["error"], record["error"]

    # With the checkout: graded by its metric, on its getter's expectation.
    newer = tmp_path / "newer"
    summary, _ = run_one_session(index, newer, "--graders", str(repo))
    [record] = results(newer)
    assert (record["status"], record["score"]) == ("done", 1.0), record
    assert summary["graded"] == 1
    run = json.loads((newer / "run.json").read_text())
    assert run["graders"]["checkout"] == str(repo.resolve())
    assert run["graders"]["sha256"] != json.loads((plain / "run.json").read_text())["graders"]["sha256"]

    # The graders decide the scores: going on in that folder with others is refused.
    proc = subprocess.run([sys.executable, "-m", "deskbox.cli", "run", str(index), "--agent", "noop",
                           "--provider", "local", "--out", str(newer)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "graders:" in proc.stderr, proc.stderr


def test_a_folder_that_is_not_a_checkout_is_refused_before_anything_starts(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "deskbox.cli", "run", str(ROOT / "tests" / "run_tasks"),
                           "--agent", "noop", "--provider", "local", "--graders", str(tmp_path),
                           "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "is not a checkout of OSWorld" in proc.stderr and "evaluators/metrics/__init__.py" in proc.stderr
    assert not (tmp_path / "out").exists()
