"""Chromium with its sandbox against ``--no-sandbox``: ``python -m bench.sandbox [--rounds
3] [--resets 3]`` (as root, as ``deskbox up`` starts bare sessions) writes
bench/results/sandbox.json and sandbox.md.

Before, a session started as root ran its browser with ``--no-sandbox`` (the flag was
chosen by the root process that built the command line, not by the session user that
runs the browser); now the sandbox runs wherever the kernel allows it. The baseline is
that command line (``--no-sandbox --test-type`` through ``DESKBOX_CHROMIUM_FLAGS``). Per
variant, alternating (ABAB ...), so that a shared machine's noise falls on both: a
session at 1920x1080 from ``deskbox up`` to its browser window; ``--resets`` resets (a
bare reset starts the browser again) until each answers; and the browser's memory (PSS,
every Chromium process) on a page once settled. Medians and ratios. Reported, not
asserted."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from bench.container import pss_by_program
from bench.page import free_port
from bench.report import write_results
from deskbox import Client
from deskbox.session.processes import descendants, process_table
from deskbox.session.spawn import SpawnedSession

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
PAGE = "data:text/html,<title>sandbox</title><h1>a page</h1><input aria-label=field>"
VARIANTS = {"sandbox": "--disable-dev-shm-usage",
            "baseline: --no-sandbox": "--disable-dev-shm-usage --no-sandbox --test-type"}

__all__ = ["main"]


def _browser_window(desk: Client, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(w.app_id == "chromium" for w in desk.windows()):
            return
        time.sleep(0.05)
    raise RuntimeError("no browser window within 60 s")


def _sandboxed(pids: list[int]) -> bool:
    """Whether the browser's renderers run in a pid namespace of their own."""
    own = os.readlink("/proc/self/ns/pid")
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"--type=renderer" in cmdline and os.readlink(f"/proc/{pid}/ns/pid") != own:
                return True
        except OSError:
            continue
    return False


def measure(flags: str, resets: int) -> dict:
    ports = {flag: str(free_port()) for flag in ("--desktopd-port", "--bridge-port", "--scene-port", "--cdp-port")}
    session = SpawnedSession(["--output", "1920x1080", "--url", PAGE, *(x for kv in ports.items() for x in kv)],
                             env={"DESKBOX_CHROMIUM_FLAGS": flags}, prefix="deskbox-bench-sandbox-")
    t0 = time.monotonic()
    session.start(120)
    try:
        with Client.from_state_file(session.state_file, timeout=120) as desk:
            _browser_window(desk)
            start_s = time.monotonic() - t0
            took = []
            for _ in range(resets):
                t = time.monotonic()
                desk.session_reset()
                _browser_window(desk)
                took.append(time.monotonic() - t)
        time.sleep(3)
        pids = [session.proc.pid, *descendants(session.proc.pid, process_table())]
        memory = pss_by_program(pids)
        return {"start_s": round(start_s, 2), "reset_s": [round(x, 2) for x in took],
                "chromium_mb": memory.get("chromium", 0.0), "sandboxed": _sandboxed(pids)}
    finally:
        session.stop()


def markdown(result: dict) -> str:
    a = result["args"]
    lines = ["# Chromium with its sandbox against --no-sandbox", "",
             f"{result['meta']['when']}, {result['meta']['cpus']} CPUs; a bare session at 1920x1080 as root, "
             f"{a['rounds']} round(s) each, alternating, {a['resets']} resets a round. Baseline: the command line "
             "sessions started as root had before (--no-sandbox). Medians.", "",
             "| browser | start to its window | reset to its window | Chromium memory (PSS) | renderers sandboxed |",
             "|---|---:|---:|---:|---|"]
    for name, s in result["summary"].items():
        lines.append(f"| {name} | {s['start_s']:.2f} s | {s['reset_s']:.2f} s | {s['chromium_mb']:.0f} MB | "
                     f"{'yes' if s['sandboxed'] else 'no'} |")
    r = result["ratios"]
    lines += ["", f"With the sandbox against the baseline: start {r['start']:.2f}x, reset {r['reset']:.2f}x, "
                  f"memory {r['memory']:.2f}x."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.sandbox", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--resets", type=int, default=3)
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        print("bench.sandbox: run it as root (the case it measures: deskbox up as root)", file=sys.stderr)
        return 2
    runs: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    for i in range(args.rounds):
        for name, flags in VARIANTS.items():
            runs[name].append(measure(flags, args.resets))
            print(f"bench.sandbox: round {i + 1}, {name}: {runs[name][-1]}", file=sys.stderr)
    summary = {name: {"start_s": statistics.median(r["start_s"] for r in rs),
                      "reset_s": statistics.median(x for r in rs for x in r["reset_s"]),
                      "chromium_mb": statistics.median(r["chromium_mb"] for r in rs),
                      "sandboxed": all(r["sandboxed"] for r in rs)} for name, rs in runs.items()}
    this, base = summary["sandbox"], summary["baseline: --no-sandbox"]
    result = {"meta": {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(),
                       "machine": platform.machine(), "baseline": "--no-sandbox --test-type"},
              "args": {"rounds": args.rounds, "resets": args.resets}, "runs": runs, "summary": summary,
              "ratios": {"start": this["start_s"] / base["start_s"], "reset": this["reset_s"] / base["reset_s"],
                         "memory": this["chromium_mb"] / base["chromium_mb"] if base["chromium_mb"] else 0.0}}
    write_results(args.results, "sandbox", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
