"""VS Code against LibreOffice Writer, opening the same file in an OSWorld-mode session:
``python -m bench.vscode [--iterations N] [--results DIR]`` (as root, with the apps and VS
Code's workbench installed: ``make test APPS=1``) writes vscode.json and vscode.md into
``--results`` (bench/results by default).

Per row, N times: the command sent through the OSWorld server's ``/setup/launch`` (as
a task's config does), then the time until a window on the file is focused (desktopd's
window tree, polled every 50 ms), then the app ended and gone. Rows:

- **LibreOffice Writer** (the baseline): ``soffice --writer FILE``, ended by closing its
  window; every start is a cold one (LibreOffice keeps no process between).
- **VS Code, first `code FILE`**: code-server is not running and starts first (the
  session's first ``code``, and the first after every reset).
- **VS Code, `code FILE` again**: code-server kept running, its window ended with
  ``pkill code``.

Memory: the proportional set size (PSS) of all the session's processes (found by its
runtime folder in their environment) with the file open in each app, and with nothing
open, read once the app's window is focused and 3 s later. Reported, not asserted."""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.request
from pathlib import Path

from deskbox import Client
from deskbox.common.waiting import wait_until
from deskbox.session.spawn import SpawnedSession

from .page import free_port
from .report import write_results
from .stats import summarize

RESULTS = Path(__file__).resolve().parent / "results"
FILE = "/home/user/notes.txt"
TEXT = "".join(f"line {i}: the same text for both editors\n" for i in range(200))

__all__ = ["main"]


def _call(url: str, body: dict | None = None, timeout: float = 120) -> dict:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        raw = resp.read()
        return json.loads(raw) if raw.strip().startswith(b"{") else {"text": raw.decode()}


def _windows(desk: Client) -> list[dict]:
    return [w.model_dump(exclude_unset=True) for w in desk.windows()]


def _wait(what: str, predicate, timeout: float = 120) -> float:
    """How long it took."""
    start = time.monotonic()
    wait_until(predicate, timeout, 0.05, f"bench.vscode: {what}", error=RuntimeError)
    return time.monotonic() - start


def _session_pss_mb(runtime: str) -> float:
    """The PSS of every process whose environment names the session's runtime folder."""
    marks = {f"XDG_RUNTIME_DIR={runtime}".encode()}
    with_link = os.path.realpath(f"/run/user/{os.stat(runtime).st_uid}")
    if with_link == os.path.realpath(runtime):
        marks.add(f"XDG_RUNTIME_DIR=/run/user/{os.stat(runtime).st_uid}".encode())
    total_kb = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = set(Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"))
            if not env & marks:
                continue
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total_kb += int(line.split()[1])
        except OSError:
            continue
    return round(total_kb / 1024, 1)


def _row(name: str, times: list[float], memory: list[float]) -> dict:
    return {"name": name, "open": summarize(times), "session_pss_mb": round(sorted(memory)[len(memory) // 2], 1)}


def run(iterations: int) -> dict:
    ports = [free_port() for _ in range(6)]
    session = SpawnedSession(["--osworld", "--no-browser", "--output", "1280x800", "--desktopd-port", str(ports[0]),
                              "--cdp-port", str(ports[1]), "--bridge-port", str(ports[2]), "--scene-port",
                              str(ports[3]), "--osworld-port", str(ports[4]), "--vlc-port", str(ports[5])],
                             prefix="deskbox-bench-vscode-")
    session.start()
    desk = Client.from_state_file(session.state_file)
    try:
        state = session.state
        osworld, runtime = f"http://127.0.0.1:{ports[4]}", state["runtime_dir"]
        _call(osworld + "/setup/execute", {"command": ["python", "-c", f"open({FILE!r}, 'w').write({TEXT!r})"]})
        time.sleep(3)
        idle = _session_pss_mb(runtime)

        def opened(launch: list[str], title: str, end: list[str], gone) -> tuple[float, float]:
            _call(osworld + "/setup/launch", {"command": launch})
            took = _wait(f"window {title!r}", lambda: any(title in (w.get("title") or "") and w.get("focused")
                                                           for w in _windows(desk)))
            time.sleep(3)
            memory = _session_pss_mb(runtime)
            _call(osworld + "/setup/execute", {"command": end})
            _wait("the app gone", lambda: not any(gone(w) for w in _windows(desk)), 60)
            return took, memory

        rows = []
        def writer_once() -> tuple[float, float]:
            # Closed by its window (an unchanged document closes without a question): a
            # signal would leave a Document Recovery dialog in front of the next start.
            took = opened(["soffice", "--writer", FILE], "notes", ["swaymsg", '[app_id="^libreoffice"] kill'],
                          lambda w: (w.get("app_id") or "").startswith(("libreoffice", "soffice")))
            _wait("soffice.bin ended", lambda: _call(osworld + "/execute", {
                "command": ["pgrep", "-x", "soffice.bin"]}).get("returncode") != 0, 60)
            return took

        writer = [writer_once() for _ in range(iterations)]
        rows.append(_row("LibreOffice Writer (baseline)", *zip(*writer)))
        code_gone = lambda w: (w.get("title") or "").endswith("Visual Studio Code")  # noqa: E731
        first, again = [], []
        for _ in range(iterations):
            _call(osworld + "/setup/execute", {"command": ["pkill", "-f", "code-server/out/node/entry.js"]})
            time.sleep(1)
            first.append(opened(["code", FILE], "notes.txt", ["pkill", "code"], code_gone))
            again.append(opened(["code", FILE], "notes.txt", ["pkill", "code"], code_gone))
        rows.append(_row("VS Code, first `code FILE` (code-server starts)", *zip(*first)))
        rows.append(_row("VS Code, `code FILE` again (code-server running)", *zip(*again)))
    finally:
        desk.close()
        session.stop()
    return {"bench": "vscode", "iterations": iterations, "baseline": "LibreOffice Writer (baseline)",
            "idle_session_pss_mb": idle, "rows": rows, "cpus": os.cpu_count(),
            "when": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}


def markdown(result: dict) -> str:
    base = next(r for r in result["rows"] if r["name"] == result["baseline"])["open"]["median_ms"]
    lines = ["# VS Code and LibreOffice Writer opening the same file", "",
             f"{result['iterations']} opens each, through `/setup/launch`, on {result['cpus']} cores; time until the "
             "file's window is focused. Session memory: PSS of all its processes with the file open "
             f"(idle session: {result['idle_session_pss_mb']} MB). Baseline: {result['baseline']}.", "",
             "| row | open median | open p95 | vs baseline | session PSS |", "|---|---|---|---|---|"]
    for r in result["rows"]:
        o = r["open"]
        lines.append(f"| {r['name']} | {o['median_ms'] / 1000:.2f} s | {o['p95_ms'] / 1000:.2f} s | "
                     f"{o['median_ms'] / base:.2f}x | {r['session_pss_mb']:.0f} MB |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.vscode", description=__doc__)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write the results")
    args = parser.parse_args()
    result = run(args.iterations)
    write_results(args.results, "vscode", result, markdown(result))


if __name__ == "__main__":
    main()
