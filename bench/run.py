"""The benchmark-run bench: ``python -m bench.run [--no-build] [--tasks N]`` (as root;
podman runs the sessions) writes bench/results/run.json and run.md.

The noop agent over a fixed set of task configs written here (OS-style file tasks, graded
by OSWorld's ``compare_answer`` through its ``vm_command_line`` getter, and an infeasible
one), in containers of the deskbox image, four ways in one run:

- **deskbox run, 1 session** and **deskbox run, 3 sessions**: ``deskbox.run``'s runner and
  pool (``--provider podman``), in process, each task's trace recorded and brought home
  (the runner's default);
- **deskbox run, 1 session, no trace** (``--no-trace``): what the trace costs, and the
  row to read against the baseline, which records none;
- **baseline: DesktopEnv**: the same configs through desktop-env's ``DesktopEnv`` with
  deskbox's provider (``provider_name="deskbox"``), as OSWorld's ``lib_run_single`` drives
  it: ``reset(task_config)``, the agent's ``step``s, ``evaluate()``, one environment. Its
  fixed waits (60 s after the reset, 5-20 s before grading, by version) are left out: the
  figures are the calls alone.

Per row: tasks per hour (from the first task's start to the last one's end, sessions
already started) and the median per task of the reset, setup, agent and grading phases,
and the harness's own overhead (the task's wall time less those). DesktopEnv's reset holds
its revert and the setup together. Reported, not asserted."""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.report import container_bench_ready

RESULTS = Path(__file__).resolve().parent / "results"
SCREEN = (1280, 800)

__all__ = ["main"]


def _configs(count: int) -> list[dict]:
    """``count`` tasks: each writes (or is to write) a file the grader reads back; one in
    five is infeasible. Paths are the image user's, as OSWorld's configs name them."""
    tasks = []
    for i in range(count):
        if i % 5 == 4:
            tasks.append({"id": f"bench-infeasible-{i}", "snapshot": "os",
                          "instruction": "Open the control panel of a printer this machine does not have.",
                          "config": [], "evaluator": {"func": "infeasible"}})
            continue
        name = f"/home/user/bench-{i}.txt"
        tasks.append({
            "id": f"bench-note-{i}", "snapshot": "os",
            "instruction": f"Write 'note {i}' into {name}.",
            "config": [{"type": "execute", "parameters": {"command": ["rm", "-f", name]}},
                       {"type": "execute", "parameters": {"command": ["mkdir", "-p", "/home/user/Desktop"]}}],
            "evaluator": {"func": "compare_answer",
                          "result": {"type": "vm_command_line", "command": ["cat", name]},
                          "expected": {"type": "rule", "rules": {"expected": f"note {i}"}}}})
    return tasks


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def _row(name: str, wall_s: float, records: list[dict]) -> dict:
    phases = {k: [r["timings"].get(k) for r in records if r["timings"].get(k) is not None]
              for k in ("reset_s", "setup_s", "agent_s", "grading_s", "total_s")}
    overhead = [r["timings"]["total_s"] - sum(r["timings"].get(k, 0) for k in ("reset_s", "setup_s", "agent_s",
                                                                               "grading_s"))
                for r in records if "total_s" in r["timings"]]
    return {"name": name, "tasks": len(records), "wall_s": round(wall_s, 2),
            "tasks_per_hour": round(len(records) / wall_s * 3600, 1) if wall_s else None,
            "scores": [r["score"] for r in records], "errors": [r["error"] for r in records if r.get("error")],
            **{f"{k[:-2]}_median_s": _median(v) for k, v in phases.items()},
            "overhead_median_s": _median(overhead)}


def run_deskbox(tasks_dir: Path, sessions: int, out: Path, trace: bool = True) -> dict:
    from deskbox.run import Pool, Runner, RunOptions, load_tasks, session_factory
    from deskbox.run.agents import NoopAgent

    tasks = load_tasks([str(tasks_dir)])
    make = session_factory("podman", outputs=[f"{SCREEN[0]}x{SCREEN[1]}"])
    with Pool(make, sessions, spare=0) as pool:
        started = [pool.take() for _ in range(sessions)]  # all up before the clock starts
        for env in started:
            pool.release(env)
        runner = Runner(tasks, NoopAgent, pool, RunOptions(out=out, screen=SCREEN, progress=False, trace=trace))
        t0 = time.monotonic()
        records = runner.run(sessions)
        wall = time.monotonic() - t0
    name = f"deskbox run, {sessions} session{'s' if sessions > 1 else ''}" + ("" if trace else ", no trace")
    return _row(name, wall, records)


def run_desktop_env(tasks: list[dict], image: str, cache: Path) -> dict:
    from deskbox.provider import osworld
    from deskbox.run import graders

    graders.load()
    osworld.register()
    from desktop_env.desktop_env import DesktopEnv

    # (DesktopEnv looks metrics up on the package; the bench's one metric is put there.)
    metrics = sys.modules["desktop_env.evaluators.metrics"]
    metrics.compare_answer = graders.metric("compare_answer")
    metrics.infeasible = lambda: None  # (the real package defines it so; evaluate() never calls it)
    env = DesktopEnv(provider_name="deskbox", path_to_vm=f"podman:{image}", action_space="pyautogui",
                     screen_size=SCREEN, require_a11y_tree=False, cache_dir=str(cache))
    records = []
    try:
        env.reset()  # the first (untimed) revert, as the runner's sessions are started untimed
        t0 = time.monotonic()
        for task in tasks:
            started = time.monotonic()
            env.reset(task_config=task)
            reset_s = time.monotonic() - started
            a = time.monotonic()
            env.step("DONE", pause=0)
            agent_s = time.monotonic() - a
            g = time.monotonic()
            score = env.evaluate()
            grading_s = time.monotonic() - g
            records.append({"score": score, "error": None,
                            "timings": {"reset_s": reset_s, "agent_s": agent_s, "grading_s": grading_s,
                                        "total_s": time.monotonic() - started}})
        wall = time.monotonic() - t0
    finally:
        env.close()
    return _row("baseline: DesktopEnv (provider deskbox), 1 environment", wall, records)


def markdown(result: dict) -> str:
    lines = ["# Benchmark runs: deskbox run against DesktopEnv", "",
             f"{result['meta']['when']}, {result['meta']['cpus']} CPUs, {result['args']['tasks']} tasks (the noop "
             f"agent), image `{result['args']['image']}`, {SCREEN[0]}x{SCREEN[1]}. Medians per task, in seconds; "
             "DesktopEnv's reset holds its setup.", "",
             "| row | tasks/hour | reset | setup | agent | grading | harness overhead | task total | scores |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]

    def f(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    for r in result["rows"]:
        scores = ", ".join(sorted({str(s) for s in r["scores"]}))
        lines.append(f"| {r['name']} | {r['tasks_per_hour']} | {f(r['reset_median_s'])} | {f(r['setup_median_s'])} | "
                     f"{f(r['agent_median_s'])} | {f(r['grading_median_s'])} | {f(r['overhead_median_s'])} | "
                     f"{f(r['total_median_s'])} | {scores} |")
    base = next((r for r in result["rows"] if r["name"].startswith("baseline")), None)
    if base and base["tasks_per_hour"]:
        lines.append("")
        for r in result["rows"]:
            if r is not base and r["tasks_per_hour"]:
                lines.append(f"- {r['name']}: {r['tasks_per_hour'] / base['tasks_per_hour']:.2f}x the baseline's "
                             "tasks per hour.")
    lines += ["", "OSWorld's `lib_run_single` also sleeps 60 s after each reset and 5-20 s before grading "
              "(by version); the baseline row leaves those out.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image", default="deskbox")
    p.add_argument("--no-build", action="store_true", help="use the image as it is")
    p.add_argument("--tasks", type=int, default=10, help="tasks per row")
    p.add_argument("--skip", action="append", default=[], choices=["one", "untraced", "three", "baseline"])
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if not container_bench_ready("bench.run", args.image, not args.no_build):
        return 1
    work = Path(tempfile.mkdtemp(prefix="deskbox-bench-run-"))
    tasks = _configs(args.tasks)
    folder = work / "tasks" / "os"
    folder.mkdir(parents=True)
    for t in tasks:
        (folder / f"{t['id']}.json").write_text(json.dumps(t))
    result: dict = {"meta": {"when": time.strftime("%Y-%m-%d %H:%M:%S %z"), "machine": platform.node(),
                             "cpus": os.cpu_count()},
                    "args": {"tasks": args.tasks, "image": args.image, "skip": args.skip}, "rows": []}
    started = time.time()
    if "one" not in args.skip:
        result["rows"].append(run_deskbox(work / "tasks", 1, work / "out1"))
    if "untraced" not in args.skip:
        result["rows"].append(run_deskbox(work / "tasks", 1, work / "out1u", trace=False))
    if "three" not in args.skip:
        result["rows"].append(run_deskbox(work / "tasks", 3, work / "out3"))
    if "baseline" not in args.skip:
        result["rows"].append(run_desktop_env(tasks, args.image, work / "cache"))
    result["meta"]["duration_s"] = round(time.time() - started, 1)
    from .report import write_results

    write_results(args.results, "run", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
