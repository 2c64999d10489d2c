"""OSWorld task setup on a deskbox session, through OSWorld's own client (desktop-env).

``python -m bench.osworld [--rounds N] [--results DIR]`` (as root) writes osworld.json and
osworld.md into ``--results`` (bench/results by default):

- **open_file**: ``POST /setup/open_file`` of a .txt on the Desktop until it answers,
  which is once the file's window is there and focused (the text opens as a tab of the
  session's browser on the base image);
- **a Chrome task's setup**: ``SetupController.setup`` of the opening of OSWorld's Chrome
  tasks (``google-chrome --remote-debugging-port``, ``socat`` relaying it,
  ``chrome_open_tabs`` with two pages, ``activate_window "Google Chrome"``), in a session
  that was just reset, against the baseline: the same steps in a session just started.
Medians and p95 of ``--rounds`` each; reported, not asserted."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

from bench.page import free_port, serve_html
from bench.report import write_results
from deskbox import Client
from deskbox.session.spawn import SpawnedSession

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]


def _post(url: str, body: object, timeout: float = 120) -> int:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        resp.read()
        return resp.status


def osworld_session(user: str, *extra: str) -> tuple[SpawnedSession, dict[str, int]]:
    """An OSWorld-mode session of ``user`` at 1920x1080, started, and its ports."""
    ports = {k: free_port() for k in ("desktopd", "cdp", "bridge", "scene", "osworld")}
    s = SpawnedSession(["--osworld", "--user", user, "--output", "1920x1080",
                        "--desktopd-port", str(ports["desktopd"]), "--cdp-port", str(ports["cdp"]),
                        "--bridge-port", str(ports["bridge"]), "--scene-port", str(ports["scene"]),
                        "--osworld-port", str(ports["osworld"]), *extra], prefix="deskbox-bench-osworld-")
    s.start()
    return s, ports


def _summary(ms: list[float]) -> dict:
    ms = sorted(ms)
    return {"n": len(ms), "median_ms": round(statistics.median(ms), 1),
            "p95_ms": round(ms[min(int(len(ms) * 0.95), len(ms) - 1)], 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.osworld", description=__doc__)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--results", type=Path, default=RESULTS, help="where to write the results")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tests.support.desktop_env import load

    client = load()
    server, page_port = serve_html(lambda path: f"<title>page {path}</title><h1>{path}</h1>".encode())
    pages = [f"http://127.0.0.1:{page_port}/first", f"http://127.0.0.1:{page_port}/second"]

    def chrome_task(debug: int, relay: int) -> list[dict]:
        def launch(*argv: str) -> dict:
            return {"type": "launch", "parameters": {"command": list(argv)}}
        return [launch("google-chrome", f"--remote-debugging-port={debug}"),
                launch("socat", f"tcp-listen:{relay},fork", f"tcp:localhost:{debug}"),
                {"type": "chrome_open_tabs", "parameters": {"urls_to_open": pages}},
                {"type": "activate_window", "parameters": {"window_name": "Google Chrome"}}]

    def setup_ms(ports: dict[str, int], debug: int, relay: int) -> float:
        controller = client.SetupController("127.0.0.1", ports["osworld"], relay, cache_dir="/tmp/deskbox-bench-cache")
        t0 = time.perf_counter()
        assert controller.setup(chrome_task(debug, relay)) is True
        return (time.perf_counter() - t0) * 1000

    open_ms, reset_setup, fresh_setup = [], [], []
    session, ports = osworld_session("benchos")
    osworld = f"http://127.0.0.1:{ports['osworld']}"
    desk = Client.from_state_file(session.state_file, timeout=240)
    try:
        for i in range(args.rounds):
            note = Path("/home/benchos/Desktop") / f"notes-{i}.txt"
            note.write_text("bench\n")
            t0 = time.perf_counter()
            assert _post(osworld + "/setup/open_file", {"path": str(note), "timeout": 60}) == 200
            open_ms.append((time.perf_counter() - t0) * 1000)
        for _ in range(args.rounds):
            desk.session_reset()
            reset_setup.append(setup_ms(ports, free_port(), free_port()))
    finally:
        desk.close()
        session.stop()
    for _ in range(args.rounds):
        fresh, fports = osworld_session("benchos")
        try:
            fresh_setup.append(setup_ms(fports, free_port(), free_port()))
        finally:
            fresh.stop()
    server.shutdown()
    result = {"meta": {"when": time.strftime("%Y-%m-%d %H:%M:%S %z")}, "open_file_txt": _summary(open_ms), "chrome_setup_after_reset": _summary(reset_setup),
              "chrome_setup_fresh_session": _summary(fresh_setup)}
    ratio = result["chrome_setup_after_reset"]["median_ms"] / result["chrome_setup_fresh_session"]["median_ms"]
    lines = ["# OSWorld task setup", "",
             "Through OSWorld's own SetupController (desktop-env, unmodified); a 1920x1080 OSWorld-mode session. "
             "Baseline: the same steps in a session just started.", "",
             "| | n | median ms | p95 ms |", "|---|---:|---:|---:|",
             f"| `/setup/open_file` of a .txt until its window is focused | {result['open_file_txt']['n']} | "
             f"{result['open_file_txt']['median_ms']} | {result['open_file_txt']['p95_ms']} |",
             f"| Chrome task setup (launch, socat, two tabs, activate), after a reset | "
             f"{result['chrome_setup_after_reset']['n']} | {result['chrome_setup_after_reset']['median_ms']} | "
             f"{result['chrome_setup_after_reset']['p95_ms']} |",
             f"| **baseline**: the same setup in a session just started | {result['chrome_setup_fresh_session']['n']} | "
             f"{result['chrome_setup_fresh_session']['median_ms']} | {result['chrome_setup_fresh_session']['p95_ms']} |",
             "", f"After a reset / fresh session: {ratio:.2f}x."]
    write_results(args.results, "osworld", result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
