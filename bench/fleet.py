"""How many sessions one machine holds at OSWorld's pace, run as ``deskbox run`` runs
them by default: ``python -m bench.fleet [--no-build] [--image deskbox-apps] [--levels
10,14,20,24] [--keep-going]`` (as root; podman runs the sessions) writes
bench/results/fleet.json and fleet.md.

At each level, N containers of the apps image run ``deskbox run``'s runner with a paced
agent over task configs written here (LibreOffice Calc and Writer most, then Chrome, a
terminal and GIMP), two tasks per session by default: the session's reset, the
config's setup (its app started), 15 steps, each an observation as OSWorld's agents take
it (the screenshot and the accessibility tree) and one pyautogui action, with 5 s of
think time between steps; then the grader. Every session's first task starts at once,
as a run's do (``--stagger`` spreads them, for comparison).

Each level runs twice, side by side: **paced**, with the runner's defaults (admission:
the sessions' starts, resets, setups and the wait for their apps hold one of a few
machine-wide slots, with the session's CPU weight lowered during the setup and the
wait; the first observation after the apps are quiet), and **unpaced**, the baseline: the runner as it
was before it paced itself (``--admit 0 --ready-timeout 0``), every burst at once.
``--no-baseline`` runs the paced rows alone. ``--read-slots-too 2,4`` runs each level
paced again with that many machine-wide slots for accessibility tree reads
(``--admit-reads``; the default is none, as measured with this option: docs/run.md).

A level **holds** while every task was solved and none had an infrastructure failure,
the environment's share of a step (from the agent's answer to the next observation:
the action and the observation) has a p95 within 1.5 s, the observations' within 1 s,
the actions' within 0.5 s and the resets' within 3 s. It stops at the first level whose
paced row does not hold (``--keep-going`` measures the rest), and says what ran out
first: the CPU (busy over 90 % of the level), memory (under 10 % available) or neither
(latency alone).

Per level: tasks per hour, the step's environment share, observation and action, reset,
setup, the wait for a slot and for the apps (p50/p95), the machine's CPU seconds per
step and per task, the memory of all sessions (their cgroups) and the load average.
Beside the levels, **one idle session with LibreOffice Calc open**: its CPU over a
minute, by program, and its memory, after it has settled. Reported, not asserted.

``--cold-python-too`` runs each level again with ``DESKBOX_OSWORLD_WARM_PYTHON=0`` (each
``python -c`` started afresh), ``--unhardened-too`` without the containers' hardening:
the baselines of those two."""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.container import (
    cgroup_cpu_s,
    cgroup_memory,
    cgroup_memory_mb,
    container_pids,
    cpu_by_program,
    cpu_ticks_by_process,
    machine_cpu_s,
)
from bench.report import container_bench_ready

RESULTS = Path(__file__).resolve().parent / "results"
ENV_P95_S, OBSERVE_P95_S, ACTION_P95_S, RESET_P95_S = 1.5, 1.0, 0.5, 3.0

__all__ = ["main"]


def _configs() -> list[dict]:
    """The five kinds of task, in the bench's words; graded by a cheap getter."""
    grade = {"func": "compare_answer", "result": {"type": "vm_command_line", "command": ["echo", "graded"]},
             "expected": {"type": "rule", "rules": {"expected": "graded\n"}}}
    page = "data:text/html,<title>fleet</title><h1>A page for the fleet bench</h1><input><button>Go</button>"
    chrome, calc, writer, gimp, terminal = [
        {"id": "fleet-chrome", "snapshot": "chrome", "instruction": "Look at the page.", "evaluator": grade,
         "config": [{"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}},
                    {"type": "launch", "parameters": {"command": ["socat", "tcp-listen:9222,fork",
                                                                  "tcp:localhost:1337"]}},
                    {"type": "chrome_open_tabs", "parameters": {"urls_to_open": [page]}},
                    {"type": "activate_window", "parameters": {"window_name": "Google Chrome"}}]},
        {"id": "fleet-calc", "snapshot": "libreoffice_calc", "instruction": "Look at the sheet.", "evaluator": grade,
         "config": [{"type": "launch", "parameters": {"command": ["libreoffice", "--calc"]}}]},
        {"id": "fleet-writer", "snapshot": "libreoffice_writer", "instruction": "Look at the document.",
         "evaluator": grade, "config": [{"type": "launch", "parameters": {"command": ["libreoffice", "--writer"]}}]},
        {"id": "fleet-gimp", "snapshot": "gimp", "instruction": "Look at GIMP.", "evaluator": grade,
         "config": [{"type": "launch", "parameters": {"command": ["gimp", "--no-splash"]}}]},
        {"id": "fleet-terminal", "snapshot": "os", "instruction": "Look at the terminal.", "evaluator": grade,
         "config": [{"type": "launch", "parameters": {"command": ["gnome-terminal"]}}]},
    ]
    # LibreOffice most: its start and its accessibility tree are the heaviest of the apps.
    return [calc, writer, chrome, calc, writer, terminal, gimp]


class PacedAgent:
    """OSWorld's pace: ``think_s`` of thinking, then one pointer move, ``steps`` times;
    then DONE."""

    def __init__(self, steps: int, think_s: float) -> None:
        self.steps, self.think_s, self.n = steps, think_s, 0

    def reset(self, *args, **kwargs) -> None:
        self.n = 0

    def predict(self, instruction: str, obs: dict) -> tuple[str, list]:
        if self.n >= self.steps:
            return "done", ["DONE"]
        self.n += 1
        time.sleep(self.think_s)
        x, y = 200 + (self.n * 97) % 1400, 150 + (self.n * 61) % 700
        return "a move", [f"pyautogui.moveTo({x}, {y})"]


def _available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _total_mb() -> float:
    return int(Path("/proc/meminfo").read_text().split()[1]) / 1024


def _memory_mb(names: list[str]) -> float:
    return round(sum(cgroup_memory_mb(name) for name in names), 1)


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 3)
    return round(statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1], 3)


def level(n: int, image: str, steps: int, think_s: float, work: Path, per_session: int = 2,
          stagger_s: float = 0.0, warm_python: bool = True, hardened: bool = True, paced: bool = True,
          read_slots: int | None = None) -> dict:
    """One level; ``hardened``: the containers with the provider's caps and capability
    drop (deskbox.provider.podman.hardening), else without (the baseline); ``paced``:
    with the runner's admission, weights and wait for the apps (its defaults), else
    without (the baseline); ``read_slots``: accessibility tree reads at once (None: the
    runner's default when paced, none when not; 0: no bound)."""
    before = os.environ.get("DESKBOX_PODMAN_HARDENING")
    os.environ["DESKBOX_PODMAN_HARDENING"] = "1" if hardened else "0"
    try:
        row = _level(n, image, steps, think_s, work, per_session, stagger_s, warm_python, paced, read_slots)
    finally:
        if before is None:
            os.environ.pop("DESKBOX_PODMAN_HARDENING", None)
        else:
            os.environ["DESKBOX_PODMAN_HARDENING"] = before
    row["containers"] = "hardened" if hardened else "unhardened"
    return row


def _level(n: int, image: str, steps: int, think_s: float, work: Path, per_session: int,
           stagger_s: float, warm_python: bool, paced: bool, read_slots: int | None) -> dict:
    from deskbox.run import Pool, Runner, RunOptions, load_tasks, session_factory
    from deskbox.run.admission import ADMISSION_DIR, HEAVY_WEIGHT, Admission, default_read_slots, default_slots

    folder = work / f"tasks{n}"
    configs = _configs()
    for i in range(n * per_session):
        config = dict(configs[i % len(configs)], id=f"{configs[i % len(configs)]['id']}-{i}")
        domain = folder / config["snapshot"]
        domain.mkdir(parents=True, exist_ok=True)
        (domain / f"{config['id']}.json").write_text(json.dumps(config))
    tasks = load_tasks([str(folder)])
    # What deskbox run does by default (paced), or did before it paced itself.
    admission = Admission(default_slots(), ADMISSION_DIR) if paced else None
    if read_slots is None:
        read_slots = default_read_slots() if paced else 0
    reads = Admission(read_slots, ADMISSION_DIR, kind="read") if read_slots else None
    pacing = {"admission": admission, "heavy_weight": HEAVY_WEIGHT if paced else 1.0,
              "ready_timeout_s": 60.0 if paced else 0.0, "read_admission": reads}
    started = time.monotonic()
    settings = {} if warm_python else {"DESKBOX_OSWORLD_WARM_PYTHON": "0"}
    make = session_factory("podman", image=image, outputs=["1920x1080"], settings=settings)
    with Pool(make, n, spare=0, admit=admission.slot if admission is not None else None) as pool:
        envs = [pool.take(timeout=900) for _ in range(n)]
        start_s = time.monotonic() - started
        names = [e.name for e in envs]
        for env in envs:
            pool.release(env)
        idle_mb = _memory_mb(names)
        peak = {"memory_mb": idle_mb, "available_mb": _available_mb()}
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(5):
                peak["memory_mb"] = max(peak["memory_mb"], _memory_mb(names))
                peak["available_mb"] = min(peak["available_mb"], _available_mb())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        busy0, total0 = machine_cpu_s()
        t0 = time.monotonic()
        runner = Runner(tasks, lambda: PacedAgent(steps, think_s), pool,
                        RunOptions(out=work / f"out{n}-{'paced' if paced else 'unpaced'}-r{read_slots}",
                                   max_steps=steps + 1,
                                   observation_type="screenshot_a11y_tree", screen=(1920, 1080), trace=False,
                                   progress=False, stagger_s=stagger_s, **pacing))
        records = runner.run(n)
        wall = time.monotonic() - t0
        busy1, total1 = machine_cpu_s()
        stop.set()
        load1 = os.getloadavg()[0]
    timings = [s for r in records for s in r.get("step_timings", [])]
    observe = [s["observe_s"] for s in timings]
    tree_queued = [s["tree_queued_s"] for s in timings if "tree_queued_s" in s]
    action = [s["action_s"] for s in timings if s["action_s"] > 0.001]
    # The environment's share of a step: from the agent's answer to the next observation.
    share = [s["action_s"] + s["observe_s"] for s in timings if s["action_s"] > 0.001]

    def of(key: str) -> list[float]:
        return [r["timings"][key] for r in records if key in r.get("timings", {})]

    infra = [r["task"] for r in records if r["status"] == "infra_error" or r.get("infra_errors")]
    unsolved = [r["task"] for r in records if r.get("score") != 1]
    busy = busy1 - busy0
    cores = os.cpu_count() or 1
    busy_share = busy / max(1e-9, (total1 - total0)) if total1 > total0 else None
    n_steps = len(observe)
    row = {
        "sessions": n, "pacing": "paced" if paced else "unpaced", "python": "warm" if warm_python else "cold",
        "slots": admission.slots if admission is not None else None, "read_slots": read_slots,
        "tasks": len(records),
        "stagger_s": stagger_s, "wall_s": round(wall, 1), "start_s": round(start_s, 1),
        "tasks_per_hour": round(len(records) / wall * 3600, 1) if wall else None,
        "env_p50_s": _pct(share, 50), "env_p95_s": _pct(share, 95),
        "observe_p50_s": _pct(observe, 50), "observe_p95_s": _pct(observe, 95),
        "action_p50_s": _pct(action, 50), "action_p95_s": _pct(action, 95),
        "reset_p50_s": _pct(of("reset_s"), 50), "reset_p95_s": _pct(of("reset_s"), 95),
        "setup_p50_s": _pct(of("setup_s"), 50), "setup_p95_s": _pct(of("setup_s"), 95),
        "tree_queued_p50_s": _pct(tree_queued, 50), "tree_queued_p95_s": _pct(tree_queued, 95),
        "queued_p50_s": _pct(of("queued_s"), 50), "queued_p95_s": _pct(of("queued_s"), 95),
        "ready_p50_s": _pct(of("ready_s"), 50), "ready_p95_s": _pct(of("ready_s"), 95),
        "not_settled": sum(1 for r in records if r.get("ready") and not r["ready"].get("settled")),
        "cpu_s_per_step": round(busy / n_steps, 3) if n_steps else None,
        "cpu_s_per_task": round(busy / len(records), 2) if records else None,
        "cpu_busy_share": round(busy_share, 3) if busy_share is not None else None,
        "memory_idle_mb": idle_mb, "memory_peak_mb": peak["memory_mb"],
        "available_min_mb": round(peak["available_mb"], 1), "load1": round(load1, 2), "cores": cores,
        "infra_failures": infra, "unsolved": unsolved, "statuses": sorted({r["status"] for r in records}),
    }
    # Which app's observations are the slow ones (the accessibility tree costs per app).
    by_app: dict[str, list[float]] = {}
    for r in records:
        by_app.setdefault(r["domain"], []).extend(s["observe_s"] for s in r.get("step_timings", []))
    row["observe_by_app"] = {app: {"p50_s": _pct(v, 50), "p95_s": _pct(v, 95)} for app, v in sorted(by_app.items())}
    row["held"] = (not infra and not unsolved and len(records) == len(tasks)
                   and _within(row["env_p95_s"], ENV_P95_S) and _within(row["observe_p95_s"], OBSERVE_P95_S)
                   and _within(row["action_p95_s"], ACTION_P95_S) and _within(row["reset_p95_s"], RESET_P95_S))
    if row["held"]:
        row["ran_out"] = None
    elif row["available_min_mb"] < 0.1 * _total_mb():
        row["ran_out"] = "memory"
    elif busy_share is not None and busy_share > 0.9:
        row["ran_out"] = "cpu"
    else:
        row["ran_out"] = "latency (neither CPU nor memory was exhausted)"
    return row


def _within(value: float | None, bound: float) -> bool:
    return value is not None and value <= bound


def idle_session(image: str, seconds: float) -> dict:
    """One session of the image, reset as for a task, with LibreOffice Calc open, settled,
    then left alone for ``seconds``: what a session whose agent is thinking costs, by
    program."""
    from deskbox.provider import EnvironmentSpec
    from deskbox.provider.podman import PodmanBackend

    env = PodmanBackend().start(EnvironmentSpec(image=image, outputs=["1920x1080"], osworld=True),
                                name=f"deskbox-fleet-idle-{os.getpid()}")
    try:
        env.reset()  # (as a task finds it: OSWorld mode's reset leaves the browser closed)
        status, body = env.request("POST", "osworld", "/setup/launch", {"command": ["libreoffice", "--calc"]},
                                   timeout=60)
        if status != 200:
            raise RuntimeError(f"Calc did not start in the idle session: {status} {body[:300]!r}")
        settled = env.settle(timeout_s=90)
        time.sleep(10)  # (past the settle's window: Calc's first autosave timers and the like)
        cpu0, before = cgroup_cpu_s(env.name), cgroup_memory(env.name)
        ticks0 = cpu_ticks_by_process(container_pids(env.name))
        time.sleep(seconds)
        cpu1, after = cgroup_cpu_s(env.name), cgroup_memory(env.name, by_process=True)
        by_program = cpu_by_program(ticks0, cpu_ticks_by_process(container_pids(env.name)))
        # Its cgroup's usage counts the files it read (page cache) beside what its
        # processes hold (anon): the two are told apart, at the start and the end of the
        # idle time, so that growth and cache are not taken for each other.
        return {"seconds": seconds, "apps": ["libreoffice --calc"], "settled": settled,
                "cpu_s": round(cpu1 - cpu0, 2) if cpu0 is not None and cpu1 is not None else None,
                "cpu_share_of_a_core": round((cpu1 - cpu0) / seconds, 4) if cpu0 is not None and cpu1 is not None
                else None, "cpu_s_by_program": by_program, "memory_mb": after.get("usage_mb"),
                "anon_mb": after.get("anon_mb"), "page_cache_mb": after.get("page_cache_mb"),
                "anon_growth_mb": round(after["anon_mb"] - before["anon_mb"], 1) if before and after else None,
                "pss_by_process_mb": after.get("pss_by_process_mb")}
    finally:
        env.stop()


def _pair(r: dict, key: str) -> str:
    return f"{r.get(key + '_p50_s')} / {r.get(key + '_p95_s')}"


def markdown(result: dict) -> str:
    a = result["args"]
    lines = ["# Fleet: sessions at OSWorld's pace, with deskbox run's defaults", "",
             f"{result['meta']['when']}, {result['meta']['cpus']} CPUs, {result['meta']['memory_gb']} GB; image "
             f"`{a['image']}`, 1920x1080; per session {a.get('tasks_per_session', 1)} task(s) of {a['steps']} steps "
             f"(screenshot + accessibility tree, one pyautogui move, {a['think_s']} s think time) over Calc, Writer, "
             f"Chrome, a terminal and GIMP; first tasks staggered by {a.get('stagger', 0)} s. A level holds with "
             f"every task solved, no infrastructure failure, p95s of the environment's share of a step <= "
             f"{ENV_P95_S} s, observation <= {OBSERVE_P95_S} s, action <= {ACTION_P95_S} s and reset <= "
             f"{RESET_P95_S} s.", "",
             "Pacing: **paced** is `deskbox run`'s default (admission slots for session starts, resets, setups and "
             "the wait for their apps, machine-wide; the session's CPU weight at a quarter during its setup and "
             "that wait; the first "
             "observation once the apps are quiet); **unpaced** is the baseline, `--admit 0 --ready-timeout 0` "
             "(every burst at once, as the runner was).", "",
             "Read slots: accessibility tree reads at once on the machine (0: no bound); the tree's slot wait is "
             "part of the observation.", "",
             "| sessions | pacing | read slots | python -c | containers | tasks/hour | env share p50/p95 s | "
             "observe p50/p95 s | tree slot wait p50/p95 s | action p50/p95 s | reset p50/p95 s | setup p50/p95 s | "
             "slot wait p50/p95 s | apps ready p50/p95 s | CPU s/task | CPU busy | memory peak MB | load | held | "
             "ran out |",
             "|---:|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in result["levels"]:
        lines.append(
            f"| {r['sessions']} | {r.get('pacing', 'unpaced')} | {r.get('read_slots', 0)} | "
            f"{r.get('python', 'cold')} | {r.get('containers', 'unhardened')} | {r['tasks_per_hour']} | "
            f"{_pair(r, 'env')} | {_pair(r, 'observe')} | {_pair(r, 'tree_queued')} | {_pair(r, 'action')} | "
            f"{_pair(r, 'reset')} | {_pair(r, 'setup')} | {_pair(r, 'queued')} | {_pair(r, 'ready')} | "
            f"{r['cpu_s_per_task']} | {r['cpu_busy_share']} | {r['memory_peak_mb']:.0f} | {r['load1']} | "
            f"{'yes' if r['held'] else '**no**'} | {r['ran_out'] or '-'} |")
    main_rows = [r for r in result["levels"] if r.get("python", "warm") == "warm"
                 and r.get("containers", "hardened") == "hardened"]
    # (the default's rows; the others with read slots are beside them)
    paced = [r for r in main_rows if r.get("variant", r.get("pacing")) == "paced"]
    last = paced[-1] if paced else None
    if last and last.get("observe_by_app"):
        lines += ["", f"Observations at {last['sessions']} sessions (paced), by the app observed (p50 / p95 s): "
                  + ", ".join(f"{app} {v['p50_s']} / {v['p95_s']}" for app, v in last["observe_by_app"].items())
                  + "."]
    for r in main_rows:
        if not r["held"] and (r.get("unsolved") or r.get("infra_failures")):
            lines.append(f"At {r['sessions']} sessions ({r.get('pacing')}): {len(r.get('unsolved', []))} task(s) "
                         f"unsolved, {len(r.get('infra_failures', []))} infrastructure failure(s).")
    held = [r["sessions"] for r in paced if r["held"]]
    unpaced = [r["sessions"] for r in main_rows if r["held"] and r.get("pacing") == "unpaced"]
    ran_unpaced = any(r.get("pacing") == "unpaced" for r in main_rows)
    lines += ["", f"**Held, paced (the default): {max(held) if held else 0} sessions."
              + (f" Unpaced (the baseline): {max(unpaced) if unpaced else 0}." if ran_unpaced else "") + "**"]
    bare = [r["sessions"] for r in result["levels"] if r["held"] and r.get("containers") == "unhardened"]
    if a.get("unhardened_too"):
        lines.append(f"Without the hardening: {max(bare) if bare else 0} sessions held.")
    if result.get("idle"):
        i = result["idle"]
        line = (f"One idle session with {', '.join(i.get('apps', [])) or 'nothing'} open, over {i['seconds']:.0f} s: "
                f"{i['cpu_s']} CPU s ({i['cpu_share_of_a_core']} of a core), {i['memory_mb']:.0f} MB (its cgroup)")
        if i.get("anon_mb") is not None:
            line += (f": {i['anon_mb']:.0f} MB held by its processes (grown {i['anon_growth_mb']} MB over the "
                     f"idle time) and {i['page_cache_mb']:.0f} MB of files read (page cache)")
        lines += ["", line + "."]
        if i.get("cpu_s_by_program"):
            top = list(i["cpu_s_by_program"].items())[:8]
            lines.append("CPU by program (s): " + ", ".join(f"{name} {v}" for name, v in top) + ".")
        if i.get("pss_by_process_mb"):
            top = list(i["pss_by_process_mb"].items())[:8]
            lines.append("Memory by program (PSS, MB): " + ", ".join(f"{name} {mb:.0f}" for name, mb in top) + ".")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image", default="deskbox-apps")
    p.add_argument("--no-build", action="store_true", help="use the image as it is")
    p.add_argument("--levels", default="10,14,20,24", help="sessions per level, in order ('': only the idle session)")
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--think-s", type=float, default=5.0)
    p.add_argument("--tasks-per-session", type=int, default=2)
    p.add_argument("--stagger", type=float, default=0.0,
                   help="seconds between the sessions' first tasks (0, deskbox run's default: all at once)")
    p.add_argument("--no-baseline", action="store_true", help="the paced rows alone, without the unpaced baseline")
    p.add_argument("--read-slots-too", default="", metavar="N,...",
                   help="each level also paced with these numbers of accessibility tree read slots (0: no bound), "
                        "beside the default's")
    p.add_argument("--idle-s", type=float, default=60.0, help="how long the idle session is measured (0: not)")
    p.add_argument("--keep-going", action="store_true", help="measure every level, past the first that fails")
    p.add_argument("--unhardened-too", action="store_true",
                   help="each level also without the containers' hardening (DESKBOX_PODMAN_HARDENING=0), the baseline")
    p.add_argument("--cold-python-too", action="store_true",
                   help="run each level a second time with `python -c` started afresh (the baseline of the warm "
                        "interpreter)")
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if not container_bench_ready("bench.fleet", args.image, not args.no_build):
        return 1
    work = Path(tempfile.mkdtemp(prefix="deskbox-bench-fleet-"))
    result: dict = {"meta": {"when": time.strftime("%Y-%m-%d %H:%M:%S %z"), "machine": platform.node(),
                             "cpus": os.cpu_count(), "memory_gb": round(_total_mb() / 1024, 1)},
                    "args": {"image": args.image, "levels": args.levels, "steps": args.steps,
                             "think_s": args.think_s, "tasks_per_session": args.tasks_per_session,
                             "stagger": args.stagger, "baseline": not args.no_baseline,
                             "read_slots_too": args.read_slots_too,
                             "cold_python_too": args.cold_python_too, "unhardened_too": args.unhardened_too},
                    "levels": []}
    started = time.time()
    if args.idle_s > 0:
        result["idle"] = idle_session(args.image, args.idle_s)
        print(json.dumps(result["idle"]), file=sys.stderr, flush=True)
    common = (args.steps, args.think_s)
    for n in (int(v) for v in args.levels.split(",") if v.strip()):
        variants = [("paced", {}, work / "paced")]
        variants += [(f"reads{k}", {"read_slots": k}, work / f"reads{k}")
                     for k in (int(v) for v in args.read_slots_too.split(",") if v.strip())]
        if not args.no_baseline:
            variants.append(("unpaced", {"paced": False}, work / "unpaced"))
        if args.unhardened_too:
            variants.append(("unhardened", {"hardened": False}, work / "unhardened"))
        if args.cold_python_too:
            variants.append(("cold", {"warm_python": False}, work / "cold"))
        rows = []
        for name, kwargs, folder in variants:
            row = level(n, args.image, *common, folder, args.tasks_per_session, args.stagger, **kwargs)
            row["variant"] = name
            result["levels"].append(row)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
        if not rows[0]["held"] and not args.keep_going:
            break
    result["meta"]["duration_s"] = round(time.time() - started, 1)
    from .report import write_results

    write_results(args.results, "fleet", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
