"""A do-nothing agent over OSWorld's own task set: what it scores, and what the
environment costs per task. ``python -m bench.noop --examples PATH/evaluation_examples
[--sessions 4] [--image deskbox-apps] [--domains chrome os] [--limit N] [--no-build]``
(as root: podman runs the sessions) writes bench/results/noop.json and noop.md.

OSWorld's task configs are public and not part of deskbox: ``--examples`` names a
checkout's ``evaluation_examples`` (its ``test_all.json`` and ``examples/``), and
``--tasks`` another index beside it. The run is ``deskbox run ... --agent noop`` itself,
offline as these machines are: a task whose setup downloads its files ends as
``setup_error`` (its files are not there) and is not graded, unless ``--cache`` names a
cache ``deskbox tasks fetch`` filled. The tasks are graded by the checkout's own graders
when ``--examples`` is inside one (``desktop_env/`` beside it; ``--graders`` names
another): its tasks name getters and metrics newer than desktop-env's on PyPI.

**The scores.** A feasible task that a do-nothing agent passes measures the start state,
not the agent: the session differs from OSWorld's VM where the task's getter looks.
Every such task is either fixed or listed, with the reason, in docs/osworld.md's table
"Tasks a do-nothing agent passes"; the bench names those it finds passing and not
listed (and exits 1), and those listed that no longer pass. (``infeasible`` tasks score 1
only for an agent that says FAIL: the do-nothing agent says DONE.)

**The cost.** The agent does nothing, so what the machine spends is the environment's
own work: resets, setups, graders, the sessions' idle. The machine's busy CPU is sampled
each second and shared among the tasks running in that second: core-seconds per task,
by domain (the mean, total over tasks: what a run costs; the median beside it, which a
task set of cheap and dear domains side by side makes jump from one to the other),
beside the tasks' reset, setup and grading seconds (median) and tasks an hour.
Reported, not asserted."""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from bench.container import machine_cpu_s
from bench.report import container_bench_ready, write_results

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
DOCS = ROOT / "docs" / "osworld.md"
LISTED_HEADING = "Tasks a do-nothing agent passes"

__all__ = ["main", "listed_passes", "cost_by_task"]


def listed_passes(text: str) -> dict[str, str]:
    """``domain/id`` -> reason, from the table under the heading ``LISTED_HEADING``
    (its first cell the task in backticks, its last the reason)."""
    found: dict[str, str] = {}
    inside = False
    for line in text.splitlines():
        if line.startswith("#"):
            inside = LISTED_HEADING in line
            continue
        if inside and line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            match = re.fullmatch(r"`([\w-]+/[\w-]+)`", cells[0])
            if match:
                found[match.group(1)] = cells[-1]
    return found


def cost_by_task(samples: list[tuple[float, float]], spans: dict[str, tuple[float, float]]) -> dict[str, float]:
    """Core-seconds per task: each interval's busy CPU (``samples``: time, busy seconds
    so far) shared among the tasks running in it, by how much of it each ran (a task of
    half a second in a sampled second gets its part of that second, beside a task that
    ran all of it). CPU spent while no task ran (sessions starting, the run's end) is left
    out, and every task that ran at all has a cost."""
    cost: dict[str, float] = defaultdict(float)
    for (t0, b0), (t1, b1) in zip(samples, samples[1:]):
        overlaps = {task: min(end, t1) - max(start, t0) for task, (start, end) in spans.items()}
        running = {task: o for task, o in overlaps.items() if o > 0}
        total = sum(running.values())
        for task, o in running.items():
            cost[task] += (b1 - b0) * o / total
    return dict(cost)


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def summarise(records: list[dict], events: list[dict], samples: list[tuple[float, float]],
              listed: dict[str, str], wall_s: float) -> dict:
    spans: dict[str, tuple[float, float]] = {}
    started = {e["task"]: e["t"] for e in events if e.get("event") == "task_started"}
    for r in records:
        if r["task"] in started and r.get("timings", {}).get("total_s") is not None:
            spans[r["task"]] = (started[r["task"]], started[r["task"]] + r["timings"]["total_s"])
    cost = cost_by_task(samples, spans)
    domains: dict[str, dict] = {}
    for domain in sorted({r["domain"] for r in records}):
        mine = [r for r in records if r["domain"] == domain]
        statuses = defaultdict(int)
        for r in mine:
            statuses[r["status"]] += 1
        costs = [cost[r["task"]] for r in mine if r["task"] in cost]
        domains[domain] = {
            "tasks": len(mine), "graded": sum(r["score"] is not None for r in mine), "statuses": dict(statuses),
            "passed": sum((r["score"] or 0) > 0 for r in mine),
            "core_s_per_task": _median(costs), "core_s_total": round(sum(costs), 1),
            "core_s_mean": round(sum(costs) / len(costs), 2) if costs else None, "costed": len(costs),
            **{key: _median([r["timings"][key] for r in mine if key in (r.get("timings") or {})])
               for key in ("reset_s", "setup_s", "grading_s", "total_s")},
        }
    passed = {r["task"]: r["score"] for r in records if (r["score"] or 0) > 0
              and r.get("func") != "infeasible"}
    all_costs = list(cost.values())
    return {
        "tasks": len(records), "wall_s": round(wall_s, 1),
        "tasks_per_hour": round(len(records) / wall_s * 3600, 1) if wall_s else None,
        "core_s_per_task": _median(all_costs), "core_s_total": round(sum(all_costs), 1),
        "core_s_mean": round(sum(all_costs) / len(all_costs), 2) if all_costs else None, "costed": len(all_costs),
        "domains": domains,
        "passed": passed, "unlisted_passes": sorted(set(passed) - set(listed)),
        "listed_not_passing": sorted(t for t in listed if t not in passed and any(r["task"] == t for r in records)),
    }


def markdown(result: dict) -> str:
    lines = [f"# A do-nothing agent over OSWorld's tasks ({result['sessions']} sessions, {result['image']})", "",
             f"{result['tasks']} tasks in {result['wall_s']} s: {result['tasks_per_hour']} tasks an hour; "
             f"{result['core_s_mean']} core-seconds a task (mean: {result['core_s_total']} in all), "
             f"{result['core_s_per_task']} (median).", "",
             "| domain | tasks | graded | passed | statuses | core-s a task (mean) | median | reset s | setup s | "
             "grading s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for domain, d in result["domains"].items():
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(d["statuses"].items()))
        lines.append(f"| {domain} | {d['tasks']} | {d['graded']} | {d['passed']} | {statuses} | "
                     f"{d.get('core_s_mean')} | {d['core_s_per_task']} | {d['reset_s']} | {d['setup_s']} | "
                     f"{d['grading_s']} |")
    if result.get("baseline"):
        b = result["baseline"]
        lines += ["", f"Baseline `{b['image']}`, the same tasks just before: {b['tasks_per_hour']} tasks an hour, "
                      f"{b.get('core_s_mean')} core-seconds a task (mean), {b['core_s_per_task']} (median); this "
                      f"image's over the baseline's: {result.get('core_s_mean_ratio')}x (mean), "
                      f"{result.get('core_s_ratio')}x (median).", "",
                  "| domain | core-s a task (mean), baseline | this image | reset s, baseline | this image |",
                  "|---|---|---|---|---|"]
        for domain, d in result["domains"].items():
            o = b["domains"].get(domain, {})
            lines.append(f"| {domain} | {o.get('core_s_mean')} | {d.get('core_s_mean')} | {o.get('reset_s')} | "
                         f"{d['reset_s']} |")
    lines += ["", "Passed and not listed in docs/osworld.md: "
              + (", ".join(f"`{t}`" for t in result["unlisted_passes"]) or "none"),
              "Listed and not passing: " + (", ".join(f"`{t}`" for t in result["listed_not_passing"]) or "none"), ""]
    return "\n".join(lines)


def run_once(args: argparse.Namespace, image: str, out: Path) -> dict:
    """``deskbox run --agent noop`` with sessions of ``image`` into ``out``, the
    machine's CPU sampled meanwhile: its summary."""
    index = args.examples / args.tasks
    command = [sys.executable, "-m", "deskbox.cli", "run", str(index), "--agent", "noop",
               "--provider", "podman", "--image", image, "--sessions", str(args.sessions), "--out", str(out),
               "--no-trace"]
    if args.domains:
        command += ["--domains", *args.domains]
    if args.limit:
        command += ["--limit", str(args.limit)]
    if args.cache:
        command += ["--cache", str(args.cache)]
    if args.graders:
        command += ["--graders", str(args.graders)]
    samples: list[tuple[float, float]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append((time.time(), machine_cpu_s()[0]))
            done.wait(1.0)

    sampler = threading.Thread(target=sample, daemon=True)
    started = time.monotonic()
    sampler.start()
    proc = subprocess.run(command, cwd=ROOT)
    done.set()
    sampler.join()
    wall_s = time.monotonic() - started
    records = {}
    for line in (out / "results.jsonl").read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            records[record["task"]] = record
    for key, r in records.items():
        domain, _, task_id = key.partition("/")
        path = args.examples / "examples" / domain / f"{task_id}.json"
        r["func"] = (json.loads(path.read_text()) if path.is_file() else {}).get("evaluator", {}).get("func")
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines() if line.strip()]
    result = summarise(list(records.values()), events, samples, listed_passes(DOCS.read_text()), wall_s)
    result.update(sessions=args.sessions, image=image, out=str(out), run_exit=proc.returncode)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.noop", description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=Path, required=True, help="OSWorld's evaluation_examples folder")
    p.add_argument("--tasks", default="test_all.json", help="the index in it (test_all.json)")
    p.add_argument("--sessions", type=int, default=4)
    p.add_argument("--image", default="deskbox-apps")
    p.add_argument("--baseline-image", default=None, metavar="IMAGE",
                   help="also run the same tasks on IMAGE first (an image built from the code before a change): "
                        "both rows, and the cost's ratio")
    p.add_argument("--domains", nargs="*", default=[])
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--cache", type=Path, default=None, help="a cache deskbox tasks fetch filled")
    p.add_argument("--out", type=Path, default=None, help="the runs' folder (a new one by default)")
    p.add_argument("--graders", type=Path, default=None, metavar="PATH",
                   help="OSWorld's checkout whose graders grade (deskbox run --graders); by default the checkout "
                        "that holds --examples, when it has desktop_env/")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    index = args.examples / args.tasks
    if not index.is_file():
        print(f"bench.noop: {index} is not there: --examples names OSWorld's evaluation_examples", file=sys.stderr)
        return 2
    if args.graders is None and (args.examples.resolve().parent / "desktop_env" / "evaluators").is_dir():
        args.graders = args.examples.resolve().parent
    if not container_bench_ready("bench.noop", args.image, not args.no_build):
        return 2
    out = args.out or Path(tempfile.mkdtemp(prefix="deskbox-noop-"))
    baseline = run_once(args, args.baseline_image, out / "baseline") if args.baseline_image else None
    result = run_once(args, args.image, out / "run")
    result.update(examples=str(args.examples), index=args.tasks,
                  graders=str(args.graders) if args.graders else "desktop-env")
    if baseline is not None:
        result["baseline"] = baseline
        if baseline.get("core_s_per_task") and result.get("core_s_per_task") is not None:
            result["core_s_ratio"] = round(result["core_s_per_task"] / baseline["core_s_per_task"], 3)
        if baseline.get("core_s_mean") and result.get("core_s_mean") is not None:
            result["core_s_mean_ratio"] = round(result["core_s_mean"] / baseline["core_s_mean"], 3)
    write_results(args.results, "noop", result, markdown(result))
    return 1 if result["unlisted_passes"] else 0


if __name__ == "__main__":
    sys.exit(main())
