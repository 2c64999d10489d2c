"""What a session costs while nothing happens but a blinking caret: ``python -m
bench.idle [--baseline REV] [--seconds 30] [--rounds 2]`` writes
bench/results/idle.json and idle.md.

One local session (``deskbox up``, 1920x1080, Chromium on a page whose text field has the
focus, so that its caret blinks about twice a second; nobody subscribed to the scene, as in
an OSWorld run), settled for ``--settle-s``, then its CPU over ``--seconds``: every
process of the session (deskbox up and all it started) as /proc counts it, and its
memory (PSS by program) at the end. With ``--baseline REV`` the same session of that
revision (a git worktree of it, run with this venv) is measured in the same run, the two
in alternation (ABAB ...), so that a shared machine's noise falls on both; the table
gives medians and their ratio. Reported, not asserted."""

from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.container import pss_by_program
from bench.page import free_port
from bench.report import write_results

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
PAGE = "data:text/html,<title>idle</title><input autofocus aria-label=field>"
HZ = os.sysconf("SC_CLK_TCK")

__all__ = ["main"]


def _tree(root: int) -> list[int]:
    """``root`` and every process below it."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(parents.get(pid, ()))
    return out


def _cpu_s(pids: list[int]) -> dict[int, float]:
    """User + system CPU seconds of each process still there."""
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / HZ
    return out


def measure(root: Path, seconds: float, settle_s: float) -> dict:
    """One session of the code under ``root``: its CPU over ``seconds`` and its memory."""
    work = Path(tempfile.mkdtemp(prefix="deskbox-bench-idle-"))
    state = work / "state.json"
    ports = {flag: str(free_port()) for flag in ("--desktopd-port", "--bridge-port", "--scene-port", "--cdp-port")}
    argv = [sys.executable, "-c", "from deskbox.cli import main; main()", "up", "--output", "1920x1080",
            "--url", PAGE, "--state-file", str(state), *(x for kv in ports.items() for x in kv)]
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("DESKBOX_TOKEN", None)
    proc = subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not state.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the session did not start: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.2)
        time.sleep(settle_s)
        pids = _tree(proc.pid)
        before = _cpu_s(pids)
        time.sleep(seconds)
        after = _cpu_s(_tree(proc.pid))
        used = sum(after[p] - before.get(p, 0.0) for p in after)
        memory = pss_by_program(_tree(proc.pid))
        return {"cpu_s": round(used, 2), "cpu_share_of_a_core": round(used / seconds, 4),
                "memory_mb": round(sum(memory.values()), 1), "pss_by_process_mb": memory}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _worktree(rev: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix="deskbox-bench-base-"))
    path.chmod(0o755)  # (the session's user reads its package there)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), rev], check=True,
                   capture_output=True)
    return path


def markdown(result: dict) -> str:
    a = result["args"]
    lines = ["# An idle session: a blinking caret and nothing else", "",
             f"{result['meta']['when']}, {result['meta']['cpus']} CPUs; one local session at 1920x1080, Chromium "
             f"on a focused text field, no scene subscriber; {a['seconds']:.0f} s measured after {a['settle_s']:.0f} s, "
             f"{a['rounds']} round(s) each, alternating. Medians.", "",
             "| code | CPU s | share of a core | memory MB (PSS) |", "|---|---:|---:|---:|"]
    for name in result["runs"]:
        rows = result["runs"][name]
        lines.append(f"| {name} | {statistics.median(r['cpu_s'] for r in rows):.2f} | "
                     f"{statistics.median(r['cpu_share_of_a_core'] for r in rows):.4f} | "
                     f"{statistics.median(r['memory_mb'] for r in rows):.0f} |")
    if "ratio_cpu" in result:
        lines += ["", f"CPU, this code against the baseline: {result['ratio_cpu']:.2f}x."]
    last = result["runs"]["this code"][-1]["pss_by_process_mb"]
    lines += ["", "By program (PSS MB, this code, last round): "
              + ", ".join(f"{k} {v:.0f}" for k, v in list(last.items())[:10]) + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.idle", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--baseline", metavar="REV", help="a git revision measured beside this code")
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--settle-s", type=float, default=10.0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    roots = {"this code": ROOT}
    base = _worktree(args.baseline) if args.baseline else None
    if base is not None:
        roots[f"baseline {args.baseline}"] = base
    try:
        runs: dict[str, list[dict]] = {name: [] for name in roots}
        for _ in range(args.rounds):
            for name, root in roots.items():
                runs[name].append(measure(root, args.seconds, args.settle_s))
                print(name, runs[name][-1]["cpu_s"], "CPU s", file=sys.stderr, flush=True)
    finally:
        if base is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], capture_output=True)
    result = {"meta": {"when": time.strftime("%Y-%m-%d %H:%M:%S %z"), "machine": platform.node(),
                       "cpus": os.cpu_count()},
              "args": {"baseline": args.baseline, "seconds": args.seconds, "settle_s": args.settle_s,
                       "rounds": args.rounds}, "runs": runs}
    if base is not None:
        mine = statistics.median(r["cpu_s"] for r in runs["this code"])
        theirs = statistics.median(r["cpu_s"] for r in runs[f"baseline {args.baseline}"])
        result["ratio_cpu"] = mine / theirs if theirs else float("nan")
    write_results(args.results, "idle", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
