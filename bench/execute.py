"""An OSWorld agent's action: ``/execute`` with ``python -c "import pyautogui; ...;
pyautogui.moveTo(x, y)"``, as OSWorld's PythonController sends it, forked from the
session's warm interpreter against the baseline, started afresh
(``--no-osworld-warm-python``).

``python -m bench.execute [--rounds N]`` (as root) writes bench/results/execute.json
and execute.md. Two OSWorld-mode sessions run side by side, one each way, and are
driven in alternation, first on an idle machine and then on a busy one (one process
spinning per core, as other sessions of a fleet would keep them). Per row: the action's
time to its answer (median, p95) and the CPU it cost the session (the OSWorld server,
the warm interpreter and the commands, per action). Reported, not asserted."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from bench.osworld import osworld_session
from deskbox.osworld.warm import PROCESS_NAME
from deskbox.session import processes

RESULTS = Path(__file__).resolve().parent / "results"
PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; {command}"
_TICK = os.sysconf("SC_CLK_TCK")


def _execute(url: str, code: str) -> float:
    body = json.dumps({"command": ["python", "-c", PREFIX.format(command=code)], "shell": False}).encode()
    req = urllib.request.Request(url + "/execute", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=60) as resp:
        answer = json.loads(resp.read())
    took = time.perf_counter() - t0
    assert answer.get("returncode") == 0, answer
    return took


def _cpu_s(pid: int) -> float:
    """A process's CPU and its reaped children's."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return sum(int(v) for v in fields[11:15]) / _TICK


def _server_pid(port: int) -> int:
    _, pids = processes.listening_pids(port)
    if len(pids) != 1:
        raise RuntimeError(f"no one OSWorld server on port {port}: {pids}")
    return pids[0]


def _session_cpu_s(server: int) -> float:
    """The OSWorld server's CPU, with its warm interpreter's (whose children it reaps)."""
    warm = [p.pid for p in processes.process_table().values() if p.ppid == server and p.comm == PROCESS_NAME]
    return _cpu_s(server) + sum(_cpu_s(pid) for pid in warm)


def _summary(seconds: list[float], cpu_s: float) -> dict:
    ms = sorted(s * 1000 for s in seconds)
    return {"n": len(ms), "median_ms": round(statistics.median(ms), 1),
            "p95_ms": round(ms[min(int(len(ms) * 0.95), len(ms) - 1)], 1),
            "cpu_ms_per_action": round(cpu_s * 1000 / len(ms), 1)}


def measure(rounds: int) -> dict:
    warm_session, warm_ports = osworld_session("benchwarm")
    cold_session, cold_ports = osworld_session("benchcold", "--no-osworld-warm-python")
    rows: list[dict] = []
    try:
        urls = {"warm": f"http://127.0.0.1:{warm_ports['osworld']}",
                "cold": f"http://127.0.0.1:{cold_ports['osworld']}"}
        servers = {"warm": _server_pid(warm_ports["osworld"]), "cold": _server_pid(cold_ports["osworld"])}
        for url in urls.values():  # (the first command starts the warm interpreter; both pay their first import)
            for _ in range(3):
                _execute(url, "pyautogui.moveTo(10, 10)")
            time.sleep(1)
        for machine in ("idle", "busy"):
            spinners = [] if machine == "idle" else [
                subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
            try:
                times: dict[str, list[float]] = {"warm": [], "cold": []}
                cpu = {"warm": 0.0, "cold": 0.0}
                for i in range(rounds):
                    for kind in (("warm", "cold") if i % 2 == 0 else ("cold", "warm")):
                        before = _session_cpu_s(servers[kind])
                        times[kind].append(_execute(urls[kind], f"pyautogui.moveTo({100 + i % 50}, {200 + i % 40})"))
                        cpu[kind] += _session_cpu_s(servers[kind]) - before
            finally:
                for p in spinners:
                    p.kill()
                    p.wait()
            for kind in ("cold", "warm"):
                rows.append({"row": f"{kind}, {machine} machine", "python": kind, "machine": machine,
                             "baseline": kind == "cold", **_summary(times[kind], cpu[kind])})
            base, new = rows[-2], rows[-1]
            new["x_baseline"] = round(new["median_ms"] / base["median_ms"], 2)
            new["x_baseline_p95"] = round(new["p95_ms"] / base["p95_ms"], 2)
    finally:
        warm_session.stop()
        cold_session.stop()
    return {"meta": {"when": time.strftime("%Y-%m-%d %H:%M:%S %z"), "rounds": rounds, "cpus": os.cpu_count(),
                     "baseline": "cold: every python -c started afresh (--no-osworld-warm-python)"}, "rows": rows}


def markdown(result: dict) -> str:
    meta = result["meta"]
    lines = ["# An OSWorld action: python -c forked warm against started afresh", "",
             f"{meta['when']}, {meta['cpus']} CPUs. `/execute` of `python -c \"import pyautogui; ...; "
             "pyautogui.moveTo(x, y)\"` as OSWorld's PythonController sends it; two OSWorld-mode sessions side by "
             f"side, driven in alternation, {meta['rounds']} actions each per machine state; busy: one process "
             f"spinning per core. Baseline: {meta['baseline']}. CPU: the OSWorld server, its warm interpreter and "
             "the commands, per action.", "",
             "| row | n | median ms | p95 ms | CPU ms/action | x baseline (median / p95) |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        ratio = "" if r["baseline"] else f"{r['x_baseline']:.2f}x / {r['x_baseline_p95']:.2f}x"
        lines.append(f"| {r['row']} | {r['n']} | {r['median_ms']} | {r['p95_ms']} | {r['cpu_ms_per_action']} | "
                     f"{ratio} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.execute", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    result = measure(args.rounds)
    from .report import write_results

    write_results(args.results, "execute", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
