"""The apps: what an agent-turn Scene costs with LibreOffice Calc on a large sheet
beside the browser, how big the images are, and what an apps session holds in memory.

``python -m bench.apps [--iterations N] [--no-container]`` (as root; needs the apps
installed, ``make test APPS=1``, and for the container rows ``make image-apps``) writes
bench/results/apps.json and apps.md. Rows, in one run:

- **scene agent-turn, Chromium alone** (the baseline): a bare ``deskbox up`` at
  1920x1080, Chromium on the generated 1,000-element page (bench/bridge.py's).
- **scene agent-turn, Chromium + Calc**: the same, with Calc beside it on a sheet of
  10,000 filled cells (100 x 100), its window tiled next to the browser's. Goal
  (issue 14): median and p95 <= 250 ms. Three rows: the sheet unchanged between turns
  (its cells are kept), a value typed into a cell before each turn (what an
  agent does most), and the sheet scrolled a page before each turn (every cell in view
  is read again).
- **the same rows with CPython's default garbage collector** (``DESKBOX_GC=default``) in
  a second session: what the services' collector settings (``common.memory.tune_gc``)
  are worth. A comparison only: the goal is the first rows'.
- **image sizes**: ``podman image inspect`` of deskbox and deskbox-apps.
- **apps session memory**: the cgroup memory of an idle deskbox-apps container in
  OSWorld mode with a Writer document open (through ``/setup/open_file``), against the
  same container with nothing open.

Reported, not asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from aiohttp import ClientSession, ClientTimeout

from deskbox import AsyncClient
from deskbox.common.net import free_ports
from deskbox.session.spawn import SessionFailed, SpawnedSession

from .bridge import serve_generated_pages
from .report import write_results
from .scene import _wait
from .stats import summarize

RESULTS = Path(__file__).resolve().parent / "results"
GOAL_MS = 250
DEFAULT_GC = ", CPython's default garbage collector"


def _sheet(path: Path) -> None:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    for row in range(1, 101):
        for col in range(1, 101):
            sheet.cell(row=row, column=col, value=row * 1000 + col)
    book.save(path)


def start_calc(state: dict) -> subprocess.Popen:
    """Calc on a new sheet of 10,000 filled cells (``_sheet``), as the session's user, in
    a process group of its own (``stop_calc`` ends it)."""
    folder = Path(tempfile.mkdtemp(prefix="deskbox-bench-sheet-"))
    sheet = folder / "sheet.xlsx"
    _sheet(sheet)
    user = state["user"]
    os.chown(folder, user["uid"], user["gid"])
    os.chown(sheet, user["uid"], user["gid"])
    extra = {"user": user["uid"], "group": user["gid"], "extra_groups": []} if os.getuid() == 0 else {}
    return subprocess.Popen(["soffice", "--calc", str(sheet)], env=state["env"], cwd=str(folder),
                            start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, **extra)


def stop_calc(calc: subprocess.Popen | None) -> None:
    if calc is not None:
        try:
            os.killpg(calc.pid, 9)
        except ProcessLookupError:
            pass


async def _agent_turns(http: ClientSession, scene: str, n: int, between=None) -> tuple[dict, dict]:
    """``n`` agent-turn scenes, timed; ``between(i)`` (untimed) runs before each. The
    scene is asked bare (not through the client): what is timed is the service."""
    times, stages = [], {}
    for i in range(n):
        if between is not None:
            await between(i)
        t0 = time.perf_counter()
        async with http.get(scene + "/api/v1/scene?mode=agent-turn") as resp:
            data = await resp.json()
        times.append(time.perf_counter() - t0)
        for stage, ms in data.get("timings_ms", {}).items():
            stages.setdefault(stage, []).append(ms / 1000)
    return summarize(times), {k: summarize(v)["median_ms"] for k, v in stages.items()}


async def scene_rows(iterations: int, *, env: dict[str, str] | None = None, suffix: str = "") -> list[dict]:
    """The Scene rows, in a session of their own (``env``: additions to its environment;
    ``suffix``: added to each row's name, which is then a comparison, not the goal's)."""
    runner, port = await serve_generated_pages()
    ports = free_ports(4)
    session = SpawnedSession(["--output", "1920x1080", "--desktopd-port", str(ports[0]), "--cdp-port", str(ports[1]),
                              "--bridge-port", str(ports[2]), "--scene-port", str(ports[3])],
                             env=env, prefix="deskbox-bench-apps-")
    calc = None
    rows = []
    try:
        await asyncio.to_thread(session.start)
        state = session.state
        scene = state["scene"]
        async with (ClientSession(timeout=ClientTimeout(total=300)) as http,
                    AsyncClient(scene, state["desktopd"], state["bridge"], timeout=300) as client):
            await client.navigate(f"http://127.0.0.1:{port}/page/1000")

            async def page_there():
                return sum(e.source == "cdp" for e in (await client.scene("agent-turn")).ax) > 500
            await _wait(page_there, 60, "the 1,000-element page in the Scene")
            alone, alone_stages = await _agent_turns(http, scene, iterations)
            rows.append({"row": "scene agent-turn, Chromium alone (baseline)", **alone, "stages_ms": alone_stages})

            calc = start_calc(state)

            async def cells_there():
                got = await client.scene("agent-turn")
                return sum(e.role == "cell" for e in got.ax) > 100 and got
            first = await _wait(cells_there, 120, "Calc's cells in the Scene")
            await asyncio.sleep(5)  # Calc settles after loading
            both, both_stages = await _agent_turns(http, scene, iterations)
            rows.append({"row": "scene agent-turn, Chromium + Calc (10,000 cells), sheet unchanged", **both,
                         "stages_ms": both_stages, "cells_in_scene": sum(e.role == "cell" for e in first.ax),
                         "x_baseline": both["median_ms"] / alone["median_ms"] if alone["median_ms"] else None})

            async def typed(i: int) -> None:
                # What an agent does most on a sheet: a value typed into the active cell
                # (Calc has the focus), Enter moving to the next row.
                await client.keyboard("type", text=str(i + 1))
                await client.keyboard("key", keys="Return")
                await asyncio.sleep(0.5)
            edited, edited_stages = await _agent_turns(http, scene, iterations, between=typed)
            rows.append({"row": "scene agent-turn, Chromium + Calc, a value typed into a cell before each turn",
                         **edited, "stages_ms": edited_stages,
                         "x_baseline": edited["median_ms"] / alone["median_ms"] if alone["median_ms"] else None})

            async def scroll(i: int) -> None:
                # Page down and up in turn (Calc has the focus): every cell in view is new.
                key = "Page_Down" if i % 2 == 0 else "Page_Up"
                await client.keyboard("key", keys=key)
                await asyncio.sleep(0.5)
            moved, moved_stages = await _agent_turns(http, scene, iterations, between=scroll)
            rows.append({"row": "scene agent-turn, Chromium + Calc, the sheet scrolled before each turn", **moved,
                         "stages_ms": moved_stages,
                         "x_baseline": moved["median_ms"] / alone["median_ms"] if alone["median_ms"] else None})
    finally:
        stop_calc(calc)
        await asyncio.to_thread(session.stop)
        await runner.cleanup()
    if suffix:
        rows = [{**r, "row": r["row"] + suffix, "comparison": True} for r in rows]
    return rows


async def all_scene_rows(iterations: int) -> list[dict]:
    """The rows as deskbox runs, then the same with CPython's default garbage collector
    (``DESKBOX_GC=default``; the services tune theirs: ``common.memory.tune_gc``)."""
    return [*await scene_rows(iterations),
            *await scene_rows(iterations, env={"DESKBOX_GC": "default"}, suffix=DEFAULT_GC)]


def _podman(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(["podman", *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args[:3])}: {result.stderr.strip()}")
    return result


def image_sizes() -> dict:
    out = {}
    for image in ("deskbox", "deskbox-apps"):
        got = _podman("image", "inspect", "--format", "{{.Size}}", image, check=False)
        out[image] = int(got.stdout.strip()) if got.returncode == 0 else None
    return out


def _cgroup_mb(name: str) -> float | None:
    got = _podman("stats", "--no-stream", "--format", "{{.MemUsage}}", name, check=False)
    text = got.stdout.strip().split(" / ")[0] if got.returncode == 0 else ""
    units = {"kB": 1 / 1000, "MB": 1, "GB": 1000, "KiB": 1 / 1024, "MiB": 1.048576, "GiB": 1073.741824}
    for unit, factor in sorted(units.items(), key=lambda u: -len(u[0])):
        if text.endswith(unit):
            return round(float(text[: -len(unit)]) * factor, 1)
    return None


def apps_memory(timeout: float = 180) -> dict:
    flags = subprocess.run([str(Path(__file__).resolve().parents[1] / "scripts" / "container-flags")],
                           capture_output=True, text=True).stdout.split()
    name = f"deskbox-bench-apps-{os.getpid()}"
    _podman("run", "-d", "--name", name, *flags, "-e", "DESKBOX_NO_TOKEN=1",  # (published on loopback only)
            "-e", "DESKBOX_OSWORLD_SERVER=1", "-e", "DESKBOX_OUTPUTS=1920x1080",
            "-p", "127.0.0.1::5000", "deskbox-apps")
    try:
        port = int(_podman("port", name, "5000").stdout.strip().rsplit(":", 1)[1])
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(base + "/health", timeout=3):
                    break
            except OSError:
                time.sleep(0.5)
        time.sleep(10)
        idle = _cgroup_mb(name)
        from docx import Document

        doc = Document()
        doc.add_paragraph("An idle Writer document.")
        data = io.BytesIO()
        doc.save(data)
        subprocess.run(["podman", "exec", "-i", name, "sh", "-c", "cat > /home/user/Documents/idle.docx"],
                       input=data.getvalue(), check=True)
        req = urllib.request.Request(base + "/setup/open_file", method="POST",
                                     data=json.dumps({"path": "~/Documents/idle.docx"}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=150):
            pass
        time.sleep(15)
        return {"idle_mb": idle, "writer_open_mb": _cgroup_mb(name)}
    finally:
        _podman("rm", "-f", "-t", "5", name, check=False)


def markdown(result: dict) -> str:
    lines = ["# Apps", "", "| row | median ms | p95 ms | x baseline |", "|---|---:|---:|---:|"]
    for r in result["scene"]:
        x = f"{r['x_baseline']:.1f}x" if r.get("x_baseline") else "1.0x"
        lines.append(f"| {r['row']} | {r['median_ms']:.0f} | {r['p95_ms']:.0f} | {x} |")
    calc = next((r for r in result["scene"] if "cells_in_scene" in r), None)
    if calc:
        lines += ["", f"Cells in the Scene: {calc['cells_in_scene']}. Goal: median and p95 <= {GOAL_MS} ms "
                  "(the rows with CPython's default collector are a comparison, not the goal's). "
                  "An agent-turn walks every app but LibreOffice when its windows held still and it sent no "
                  "AT-SPI event since its last walk; of a sheet, only the rows a change crossed are read again."]
    for r in result["scene"]:
        if "Calc" in r["row"]:
            lines += ["", f"{r['row']}: agent-turn stages (median ms): "
                      + ", ".join(f"{k} {v:.0f}" for k, v in r["stages_ms"].items()) + "."]
    sizes = result.get("images") or {}
    if sizes:
        lines += ["", "| image | size |", "|---|---:|"]
        lines += [f"| {k} | {v / 1e9:.2f} GB |" if v else f"| {k} | not built |" for k, v in sizes.items()]
    mem = result.get("memory")
    if mem:
        lines += ["", f"deskbox-apps in OSWorld mode, cgroup memory: idle {mem['idle_mb']} MB; with a Writer "
                  f"document open {mem['writer_open_mb']} MB."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.apps", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--no-container", action="store_true", help="leave out the image sizes and the container")
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    try:
        result: dict = {"meta": {"when": time.strftime("%Y-%m-%d %H:%M:%S %z"), "goal_ms": GOAL_MS},
                        "scene": asyncio.run(all_scene_rows(args.iterations))}
    except (SessionFailed, RuntimeError) as exc:
        print(f"bench.apps: {exc}", file=sys.stderr)
        return 1
    if not args.no_container:
        result["images"] = image_sizes()
        if result["images"].get("deskbox-apps"):
            result["memory"] = apps_memory()
    write_results(args.results, "apps", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
