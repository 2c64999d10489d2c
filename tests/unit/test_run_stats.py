"""deskbox.run.stats: pass@k, pass^k, the interval over tasks and the paired comparison,
against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from deskbox.run import stats


def record(task: str, repeat: int, score: float | None, status: str = "done") -> dict:
    domain, _, task_id = task.partition("/")
    return {"task": task + (f"#{repeat}" if repeat else ""), "domain": domain, "id": task_id, "repeat": repeat,
            "score": score, "status": status}


def test_pass_at_k_and_pass_hat_k_from_n_runs_with_c_successes():
    # 3 runs, 1 success: one of k drawn holds it with 1/3, 2/3, 1; all k drawn succeed with 1/3, 0, 0.
    assert [stats.pass_at(3, 1, k) for k in (1, 2, 3)] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert [stats.pass_hat(3, 1, k) for k in (1, 2, 3)] == pytest.approx([1 / 3, 0.0, 0.0])
    assert stats.pass_at(5, 0, 3) == 0.0 and stats.pass_hat(5, 5, 3) == 1.0
    assert stats.pass_at(4, 2, 2) == pytest.approx(1 - 1 / 6)  # C(2,2)/C(4,2) = 1/6 draw both failures
    with pytest.raises(ValueError):
        stats.pass_at(2, 1, 3)


def test_a_repeated_run_averages_each_task_first_and_counts_errors_as_zero():
    records = [record("os/a", 0, 1.0), record("os/a", 1, 1.0), record("os/a", 2, 0.0),
               record("os/b", 0, None, "agent_error"), record("os/b", 1, 0.0), record("os/b", 2, 1.0),
               record("chrome/c", 0, 0.5), record("chrome/c", 1, 0.5), record("chrome/c", 2, 0.5)]
    got = stats.repeated(records)
    task_means = [2 / 3, 1 / 3, 0.5]
    mean = sum(task_means) / 3
    stderr = math.sqrt(sum((m - mean) ** 2 for m in task_means) / 2 / 3)
    assert (got["tasks"], got["repeats"]) == (3, 3)
    assert got["mean"] == pytest.approx(mean, abs=1e-4) and got["stderr"] == pytest.approx(stderr, abs=1e-4)
    assert got["interval95"] == pytest.approx([mean - stats.Z95 * stderr, mean + stats.Z95 * stderr], abs=1e-4)
    assert got["per_repeat"] == {"0": 0.5, "1": 0.5, "2": 0.5}
    # successes (score 1): a 2 of 3, b 1 of 3, c none (0.5 is not a success)
    assert got["pass_at"]["1"] == pytest.approx((2 / 3 + 1 / 3 + 0) / 3, abs=1e-4)
    assert got["pass_at"]["3"] == pytest.approx((1 + 1 + 0) / 3, abs=1e-4)
    assert got["pass_hat"]["2"] == pytest.approx((1 / 3 + 0 + 0) / 3, abs=1e-4)
    assert got["pass_hat"]["3"] == 0.0


def test_one_run_has_an_interval_over_its_tasks_and_pass_at_1_is_its_solved_share():
    got = stats.repeated([record("os/a", 0, 1.0), record("os/b", 0, 0.0), record("os/c", 0, 1.0),
                          record("os/d", 0, 0.0)])
    assert got["mean"] == 0.5 and got["repeats"] == 1 and got["pass_at"] == {"1": 0.5}
    # (mean 0.5, standard error 0.29: the normal interval, -0.07 to 1.07, cut to what a score can be)
    assert got["interval95"] == [0.0, 1.0] and got["stderr"] == pytest.approx(0.2887, abs=1e-4)
    assert stats.repeated([record("os/a", 0, 1.0)])["interval95"] is None  # one task: no spread to measure
    assert stats.repeated([])["mean"] is None


def test_two_runs_are_compared_task_by_task_on_the_tasks_both_ran():
    before = [record("os/a", 0, 0.0), record("os/b", 0, 1.0), record("os/c", 0, 0.0), record("os/only", 0, 1.0)]
    after = [record("os/a", 0, 1.0), record("os/b", 0, 1.0), record("os/c", 0, 1.0), record("os/new", 0, 0.0)]
    got = stats.paired(before, after)
    assert (got["tasks"], got["only_first"], got["only_second"]) == (3, 1, 1)
    assert (got["better"], got["worse"], got["same"]) == (2, 0, 1)
    assert got["difference"] == pytest.approx(2 / 3, abs=1e-4)
    assert (got["mean_first"], got["mean_second"]) == (pytest.approx(1 / 3, abs=1e-4), 1.0)
    low, high = got["interval95"]
    assert low < 2 / 3 < high
    # The same run against itself: no difference, and no spread.
    same = stats.paired(after, after)
    assert same["difference"] == 0.0 and same["interval95"] == [0.0, 0.0]
