"""What a run's scores say, with their uncertainty: the mean over tasks with a 95 %
interval, pass@k and pass^k over repeated runs of each task (``deskbox run --repeats``),
and two runs compared task by task (``deskbox run report A B``).

The unit of sampling is the task: a benchmark's tasks are a sample of the tasks it stands
for, and a task's repeats are not independent of each other. So the interval is over the
tasks' own means (each task's score averaged over its repeats), with the standard error
of that mean (the normal interval, cut to what a mean score can be); two runs are
compared on the same tasks, by the mean of the per-task
differences and its own interval (a paired comparison, much narrower than two separate
intervals when the runs agree on most tasks).

A task that ended in an error counts 0, as in ``mean_all``: it was selected and not
solved. For pass@k and pass^k a run of a task succeeds when it scores 1 (OSWorld's
metrics give 1 for a solved task; a partial score is not a success).

- pass@k: the chance that at least one of k runs of a task succeeds, estimated without
  bias from n >= k runs with c successes as 1 - C(n-c, k) / C(n, k) (Chen et al., 2021,
  "Evaluating Large Language Models Trained on Code"), averaged over the tasks.
- pass^k: the chance that all k runs succeed, C(c, k) / C(n, k) (Yao et al., 2024,
  tau-bench), averaged over the tasks: how dependable the agent is, not how lucky."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Iterable

__all__ = ["by_task", "repeated", "paired", "pass_at", "pass_hat", "summary", "Z95"]

Z95 = 1.959964  # the normal distribution's two-sided 95 % quantile


def _score(record: dict) -> float:
    return float(record["score"]) if record.get("score") is not None else 0.0


def _solved(record: dict) -> bool:
    return record.get("score") is not None and float(record["score"]) >= 1.0


def _name(record: dict) -> str:
    if "id" in record:
        return f"{record['domain']}/{record['id']}"
    if "task" in record:
        return str(record["task"]).partition("#")[0]
    return f"#{id(record)}"  # (a record that names no task is a task of its own)


def by_task(records: Iterable[dict]) -> dict[str, list[dict]]:
    """Records grouped by task (``domain/id``), each group in the order of its repeats."""
    found: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        found[_name(r)].append(r)
    return {name: sorted(rs, key=lambda r: int(r.get("repeat") or 0)) for name, rs in found.items()}


def pass_at(n: int, c: int, k: int) -> float:
    """Of n runs with c successes: the chance that k drawn without replacement hold one."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} runs, not {n}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat(n: int, c: int, k: int) -> float:
    """Of n runs with c successes: the chance that k drawn without replacement all are."""
    if k > n:
        raise ValueError(f"pass^{k} needs at least {k} runs, not {n}")
    return math.comb(c, k) / math.comb(n, k)


def _mean_and_interval(values: list[float], bounds: tuple[float, float]) -> dict[str, Any]:
    """The mean, its standard error and the normal 95 % interval, cut to ``bounds`` (what
    the values can be: a mean score is never below 0)."""
    n = len(values)
    if not n:
        return {"mean": None, "stderr": None, "interval95": None}
    mean = sum(values) / n
    if n < 2:
        return {"mean": round(mean, 4), "stderr": None, "interval95": None}
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    stderr = math.sqrt(variance / n)
    low, high = max(bounds[0], mean - Z95 * stderr), min(bounds[1], mean + Z95 * stderr)
    return {"mean": round(mean, 4), "stderr": round(stderr, 4), "interval95": [round(low, 4), round(high, 4)]}


def repeated(records: list[dict]) -> dict[str, Any]:
    """The run's statistics: ``tasks``, ``repeats`` (the most runs any task has), the mean
    over tasks of their mean scores with its standard error and 95 % interval, each
    repeat's own mean (``per_repeat``), and ``pass_at``/``pass_hat`` for k = 1 .. repeats
    (each over the tasks that have at least k runs)."""
    groups = by_task(records)
    repeats = max((len(rs) for rs in groups.values()), default=0)
    out: dict[str, Any] = {"tasks": len(groups), "repeats": repeats}
    out.update(_mean_and_interval([sum(_score(r) for r in rs) / len(rs) for rs in groups.values()], (0.0, 1.0)))
    per_repeat: dict[int, list[float]] = defaultdict(list)
    for r in records:
        per_repeat[int(r.get("repeat") or 0)].append(_score(r))
    out["per_repeat"] = {str(k): round(sum(v) / len(v), 4) for k, v in sorted(per_repeat.items())}
    out["pass_at"], out["pass_hat"] = {}, {}
    for k in range(1, repeats + 1):
        counted = [(len(rs), sum(_solved(r) for r in rs)) for rs in groups.values() if len(rs) >= k]
        out["pass_at"][str(k)] = round(sum(pass_at(n, c, k) for n, c in counted) / len(counted), 4)
        out["pass_hat"][str(k)] = round(sum(pass_hat(n, c, k) for n, c in counted) / len(counted), 4)
    return out


def paired(first: list[dict], second: list[dict]) -> dict[str, Any]:
    """``second`` against ``first`` on the tasks both ran: the mean per-task difference
    (second minus first, each task's score averaged over its repeats) with its standard
    error and 95 % interval, and how many tasks did better, worse or the same. Tasks only
    one of them ran are counted, not compared."""
    a, b = by_task(first), by_task(second)
    both = sorted(set(a) & set(b))
    means = {name: (sum(_score(r) for r in a[name]) / len(a[name]), sum(_score(r) for r in b[name]) / len(b[name]))
             for name in both}
    differences = [after - before for before, after in means.values()]
    out: dict[str, Any] = {"tasks": len(both), "only_first": len(set(a) - set(b)), "only_second": len(set(b) - set(a)),
                           "better": sum(d > 0 for d in differences), "worse": sum(d < 0 for d in differences),
                           "same": sum(d == 0 for d in differences)}
    if both:
        out["mean_first"] = round(sum(m[0] for m in means.values()) / len(both), 4)
        out["mean_second"] = round(sum(m[1] for m in means.values()) / len(both), 4)
    interval = _mean_and_interval(differences, (-1.0, 1.0))
    out["difference"], out["stderr"], out["interval95"] = interval["mean"], interval["stderr"], interval["interval95"]
    return out


def summary(records: list[dict]) -> dict[str, Any]:
    """Scores by domain and in total: tasks, graded, failures by kind, and two means that
    are not to be mixed up: ``mean_all`` over every task, a task that ended in an error
    counting 0 (as a leaderboard counts it), and ``mean_graded`` over the graded tasks
    alone (``mean``, as older summaries named it). With repeats, each repeat of a task
    counts as a task here; ``statistics`` (:func:`repeated`) has the
    mean over tasks with its 95 % interval, and pass@k and pass^k."""
    by: dict[str, dict[str, Any]] = {}
    for r in records:
        d = by.setdefault(r["domain"], {"tasks": 0, "graded": 0, "score": 0.0, "infra_error": 0, "setup_error": 0,
                                        "agent_error": 0, "grader_error": 0})
        d["tasks"] += 1
        if r["score"] is not None:
            d["graded"] += 1
            d["score"] += float(r["score"])
        if r["status"] in d:
            d[r["status"]] += 1
    for d in by.values():
        _means(d, d["score"], d["graded"], d["tasks"])
    graded = [r for r in records if r["score"] is not None]
    total = {"tasks": len(records), "graded": len(graded)}
    _means(total, sum(float(r["score"]) for r in graded), len(graded), len(records))
    return {"domains": by, "total": total, "statistics": repeated(records)}


def _means(into: dict[str, Any], score: float, graded: int, tasks: int) -> None:
    into["mean_all"] = round(score / tasks, 4) if tasks else None
    into["mean_graded"] = into["mean"] = round(score / graded, 4) if graded else None
