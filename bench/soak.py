"""Soak: one session under a steady mixed load for a long while (``make soak``: one
hour), reporting latency per endpoint, errors and how each service's memory grew.

``python -m bench.soak [--minutes 60] [--rate 4] [--results DIR]`` (as root): ``deskbox
up`` at 1920x1080 on a page whose content changes every second; requests go out at
``--rate`` per second, in turn: a fresh screenshot, an agent-turn scene, the bridge's
/layout, a click by Scene id on the page's button, and typing into its field. Goals: no
errors, RSS growth of every service within 10 % between the first and the last tenth of
the run. Writes soak.json and soak.md into ``--results`` (bench/results by default).
Reported, not asserted."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

from bench.page import free_port, serve_html
from bench.report import write_results
from bench.stats import spaced
from deskbox import Client, DeskboxError
from deskbox.session.spawn import SessionFailed, SpawnedSession

RESULTS = Path(__file__).resolve().parent / "results"
GROWTH_GOAL_PCT = 10.0  # a service's RSS, last tenth of the run against the first
SERVICES = ("desktopd", "bridge", "scene", "chromium")

PAGE = b"""<!doctype html><meta charset=utf-8><title>soak</title>
<h1 id=clock>0</h1><button id=go>Go</button> <input id=field autocomplete=off>
<ul id=list></ul>
<script>
let n = 0;
setInterval(() => {
  n++; document.getElementById('clock').textContent = n;
  const li = document.createElement('li'); li.textContent = 'item ' + n;
  const list = document.getElementById('list'); list.prepend(li);
  while (list.children.length > 30) list.lastChild.remove();
}, 1000);
</script>"""


def _call(fn: Callable[[], Any]) -> tuple[int, str]:
    """One call through the client: 200, or the error's status (0: no answer) and what it said."""
    try:
        fn()
    except DeskboxError as exc:
        return exc.status or 0, str(exc)
    return 200, ""


def _rss_kb(pid: int | None) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, TypeError):
        return None
    return None


def _pids(desk: Client) -> dict[str, int | None]:
    try:
        children = desk.session().children
    except DeskboxError:
        children = {}
    return {name: children[name].pid if name in children else None for name in SERVICES}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--rate", type=float, default=4.0, help="requests per second")
    p.add_argument("--results", type=Path, default=RESULTS, help="where to write the results")
    args = p.parse_args(argv)

    server, page_port = serve_html(lambda path: PAGE)
    ports = {k: free_port() for k in ("desktopd", "cdp", "bridge", "scene")}
    session = SpawnedSession(["--output", "1920x1080", "--url", f"http://127.0.0.1:{page_port}/",
                              "--desktopd-port", str(ports["desktopd"]), "--cdp-port", str(ports["cdp"]),
                              "--bridge-port", str(ports["bridge"]), "--scene-port", str(ports["scene"])],
                             prefix="deskbox-bench-soak-")
    try:
        session.start()
    except SessionFailed as exc:
        print(f"bench.soak: {exc}", file=sys.stderr)
        return 1
    desk = Client.from_state_file(session.state_file)
    time.sleep(5)
    ids: dict[str, str] = {}

    def screenshot():
        return _call(lambda: desk.request("desktopd", "GET", "/api/v1/screenshot", query={"format": "jpeg"},
                                          raw=True))

    def read_ids() -> None:
        for e in desk.scene("agent-turn").ax:
            if e.source == "cdp" and e.role in ("button", "textbox"):
                ids[e.role] = e.id

    def agent_turn():
        return _call(read_ids)

    def layout():
        return _call(lambda: desk.request("bridge", "GET", "/layout"))

    def click():
        if "button" not in ids:
            agent_turn()
        return _call(lambda: desk.act(ids.get("button", "a0-0"), "click", settle_ms=0))

    def typing():
        if "textbox" not in ids:
            agent_turn()
        return _call(lambda: desk.act(ids.get("textbox", "a0-0"), "set_value", text="soak", settle_ms=0))

    kinds = [("screenshot", screenshot), ("scene agent-turn", agent_turn), ("bridge /layout", layout),
             ("act click", click), ("act type", typing)]
    times: dict[str, list[float]] = {k: [] for k, _ in kinds}
    errors: dict[str, list[str]] = {k: [] for k, _ in kinds}
    rss: list[tuple[float, dict[str, int | None]]] = []
    started = time.monotonic()
    end = started + args.minutes * 60
    load_before = os.getloadavg()
    i = 0
    next_rss = started
    try:
        while time.monotonic() < end:
            due = started + i / args.rate
            if due > time.monotonic():
                time.sleep(due - time.monotonic())
            name, fn = kinds[i % len(kinds)]
            t0 = time.perf_counter()
            status, said = fn()
            times[name].append((time.perf_counter() - t0) * 1000)
            if status != 200:
                errors[name].append(said[:200])
                ids.clear()  # a stale id (the page changed): read again
            if time.monotonic() >= next_rss:
                pids = _pids(desk)
                rss.append((time.monotonic() - started, {k: _rss_kb(v) for k, v in pids.items()}))
                next_rss += 30
            i += 1
    finally:
        desk.close()
        session.stop()
        server.shutdown()
    tenth = max(len(rss) // 10, 1)
    growth = {}
    for service in SERVICES:
        first = [r[service] for _, r in rss[:tenth] if r.get(service)]
        last = [r[service] for _, r in rss[-tenth:] if r.get(service)]
        if first and last:
            a, b = statistics.median(first), statistics.median(last)
            growth[service] = {"first_mb": round(a / 1024, 1), "last_mb": round(b / 1024, 1),
                               "growth_pct": round((b - a) / a * 100, 1)}

    def pct(values: list[float], q: float) -> float | None:
        return round(sorted(values)[min(int(len(values) * q), len(values) - 1)], 1) if values else None

    result = {
        "meta": {"when": time.strftime("%Y-%m-%d %H:%M:%S %z"), "growth_goal_pct": GROWTH_GOAL_PCT},
        "minutes": args.minutes, "rate": args.rate, "requests": i, "load_before": load_before,
        "load_after": os.getloadavg(),
        "endpoints": {k: {"n": len(v), "p50_ms": pct(v, 0.5), "p95_ms": pct(v, 0.95), "errors": len(errors[k]),
                          "first_errors": errors[k][:3]} for k, v in times.items()},
        "rss": growth,
        # every sample, so that a rise that levels off (warming up) is told from one that goes on
        "rss_series": [{"t_s": round(t), **{k: round(v / 1024, 1) if v else None for k, v in r.items()}}
                       for t, r in rss],
    }
    lines = ["# Soak", "", f"{args.minutes:g} minutes at {args.rate:g} requests/s ({i} requests), one 1920x1080 "
             f"session on a page that changes every second. Load before/after: {load_before[0]:.2f} / "
             f"{result['load_after'][0]:.2f}. Goals: 0 errors, RSS growth <= {GROWTH_GOAL_PCT:g} %.", "",
             "| endpoint | n | p50 ms | p95 ms | errors |", "|---|---:|---:|---:|---:|"]
    for k, v in result["endpoints"].items():
        lines.append(f"| {k} | {v['n']} | {v['p50_ms']} | {v['p95_ms']} | {v['errors']} |")
    lines += ["", "| service | RSS first tenth MB | RSS last tenth MB | growth |", "|---|---:|---:|---:|"]
    for k, v in growth.items():
        lines.append(f"| {k} | {v['first_mb']} | {v['last_mb']} | {v['growth_pct']} % |")
    lines += ["", "| minute | " + " | ".join(SERVICES) + " |", "|---:|" + "---:|" * len(SERVICES)]
    for row in spaced(result["rss_series"], 7):
        lines.append(f"| {row['t_s'] / 60:.0f} | " + " | ".join(str(row.get(k) or "-") for k in SERVICES) + " |")
    write_results(args.results, "soak", result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
