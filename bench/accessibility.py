"""OSWorld's ``/accessibility`` (every app's whole AT-SPI tree as XML): the scene's
reader against the libatspi walk it replaced, side by side in one session.

``python -m bench.accessibility [--rounds N]`` (as root) writes
bench/results/accessibility.json and accessibility.md. The session runs in OSWorld
mode at 1920x1080 with gnome-calculator (a GTK app) open and Chromium on a generated
page of 100 elements, then of 1,000. Rows per page, medians and p95 of ``--rounds`` each:

- **GET /accessibility**: the OSWorld server's answer over HTTP, as graders ask for it
  (the scene's reader, ``deskbox.atspi.full``, and the XML); goal <= 300 ms;
- **reader + XML** and **libatspi walk + XML (baseline)**: the two ways of reading the
  same apps, alternated in one process running as the session user (AT-SPI answers
  only the apps' own uid): the reader's worker (kept between reads, as the server
  keeps it), and ``bench.atspi_libatspi`` (one process per read, pyatspi, one call at a
  time: what the server ran before), each followed by ``build_xml``.

The last two reads' XML are compared (``parity``): the number of elements and
attributes each has that the other has not, with the first few differences."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

from deskbox import AsyncClient, DeskboxError
from deskbox.session.spawn import SessionFailed, SpawnedSession

from .bridge import serve_generated_pages
from .page import free_port
from .report import write_results
from .scene import _wait
from .stats import summarize

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]
GOAL_MS = 300
PAGES = (100, 1000)  # elements on the page


# -- the driver: runs as the session user -------------------------------------------


def _paths(xml_text: str) -> dict[str, dict[str, str]]:
    """Each element by its path of tags and sibling positions -> its attributes and text."""
    out: dict[str, dict[str, str]] = {}

    def visit(el: ET.Element, path: str) -> None:
        out[path] = {**el.attrib, "#text": el.text or ""}
        seen: dict[str, int] = {}
        for child in el:
            n = seen[child.tag] = seen.get(child.tag, 0) + 1
            visit(child, f"{path}/{child.tag.split('}')[-1]}[{n}]")

    visit(ET.fromstring(xml_text), "desktop-frame")
    return out


def parity(old: str, new: str, show: int = 8) -> dict:
    a, b = _paths(old), _paths(new)
    only_old, only_new = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
    differing = []
    for path in sorted(a.keys() & b.keys()):
        for key in sorted(a[path].keys() | b[path].keys()):
            if a[path].get(key) != b[path].get(key):
                differing.append(f"{path} {key.split('}')[-1]}: {a[path].get(key)!r} -> {b[path].get(key)!r}")
    return {"elements_old": len(a), "elements_new": len(b), "only_in_old": len(only_old), "only_in_new": len(only_new),
            "attributes_differing": len(differing), "examples": (only_old[:show // 2] + only_new[:show // 2]
                                                                  + differing[:show])}


async def drive(rounds: int, desktopd: str) -> dict:
    from deskbox.atspi.source import NativeSource
    from deskbox.osworld.accessibility import build_xml, placed_windows

    async with AsyncClient(None, desktopd, None, timeout=30) as desk:
        tree = (await desk.tree()).model_dump(exclude_unset=True)
    windows = placed_windows(tree["displays"], tree["windows"])
    source = NativeSource(timeout=60)
    times: dict[str, list[float]] = {"reader": [], "libatspi": []}
    xml: dict[str, str] = {}
    nodes: dict[str, int] = {}

    async def reader() -> None:
        t0 = time.perf_counter()
        found = await source.tree(app_timeout=10, timeout=60)
        xml["reader"] = build_xml(found, windows)
        times["reader"].append(time.perf_counter() - t0)
        nodes["reader"] = found["nodes"]

    async def libatspi() -> None:
        t0 = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bench.atspi_libatspi", cwd=str(ROOT),
                                                    stdout=subprocess.PIPE, limit=64 * 1024 * 1024)
        out, _ = await proc.communicate()
        found = json.loads(out)
        xml["libatspi"] = build_xml(found, windows)
        times["libatspi"].append(time.perf_counter() - t0)
        nodes["libatspi"] = found["nodes"]

    try:
        await reader()  # the worker starts, and the reader's caches fill, untimed
        times["reader"].clear()
        for i in range(rounds):
            for step in ((reader, libatspi) if i % 2 == 0 else (libatspi, reader)):
                await step()
    finally:
        await source.close()
    return {"times": times, "nodes": nodes, "parity": parity(xml["libatspi"], xml["reader"])}


# -- the bench: runs as root, starts the session -------------------------------------


def _accessibility(state: dict) -> str:
    with urllib.request.urlopen(state["osworld"] + "/accessibility", timeout=120) as resp:
        return json.load(resp)["AT"]


async def _navigated(state: dict, url: str) -> bool:
    async with AsyncClient(None, None, state["bridge"]) as desk:
        try:
            await desk.navigate(url)
        except DeskboxError as exc:
            # (Chromium may refuse while its first window is still coming up.)
            print(f"bench.accessibility: navigate: {exc}", file=sys.stderr)
            return False
    return True


async def page_rows(state: dict, url: str, elements: int, rounds: int, as_user: dict) -> tuple[list[dict], dict]:
    """The three rows of one page, and the parity of its last reads."""

    async def navigate() -> bool:
        return await _navigated(state, url)

    counts: list[int] = []

    async def both_there() -> bool:
        # The calculator's frame, the page's title, and as many elements twice running.
        text = await asyncio.to_thread(_accessibility, state)
        counts.append(text.count("<"))
        return ('name="Calculator"' in text and 'name="bridge bench - Google Chrome"' in text
                and len(counts) > 1 and counts[-1] == counts[-2])

    await _wait(navigate, 90, f"the {elements}-element page")
    await _wait(both_there, 90, "the page and the calculator in /accessibility")
    await asyncio.sleep(3)  # both settle
    http = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        await asyncio.to_thread(_accessibility, state)
        http.append(time.perf_counter() - t0)
    driver = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "bench.accessibility", "--drive", "--rounds", str(rounds),
                         "--desktopd", state["desktopd"]],
        env={**state["env"], "PYTHONPATH": str(ROOT)}, cwd=str(ROOT), capture_output=True, text=True,
        timeout=1800, **as_user)
    if driver.returncode != 0:
        raise RuntimeError(f"the driver failed: {driver.stderr[-3000:]}")
    found = json.loads(driver.stdout)
    reader, old = summarize(found["times"]["reader"]), summarize(found["times"]["libatspi"])
    page = f"{elements:,}-element page"
    return [
        {"row": f"GET /accessibility, {page} (the scene's reader)", **summarize(http)},
        {"row": f"reader + XML, {page}", **reader, "nodes": found["nodes"]["reader"],
         "x_baseline": round(reader["median_ms"] / old["median_ms"], 3) if old["median_ms"] else None},
        {"row": f"libatspi walk + XML, {page} (baseline)", **old, "nodes": found["nodes"]["libatspi"]},
    ], found["parity"]


async def rows(rounds: int) -> dict:
    runner, port = await serve_generated_pages()
    ports = {k: free_port() for k in ("desktopd", "cdp", "bridge", "scene", "osworld")}
    session = SpawnedSession(["--osworld", "--output", "1920x1080", "--desktopd-port", str(ports["desktopd"]),
                              "--cdp-port", str(ports["cdp"]), "--bridge-port", str(ports["bridge"]),
                              "--scene-port", str(ports["scene"]), "--osworld-port", str(ports["osworld"])],
                             prefix="deskbox-bench-accessibility-")
    calculator = None
    result_rows: list[dict] = []
    parities: dict[str, dict] = {}
    try:
        await asyncio.to_thread(session.start)
        state = session.state
        user = state["user"]
        as_user = {"user": user["uid"], "group": user["gid"], "extra_groups": []} if os.getuid() == 0 else {}
        calculator = subprocess.Popen(["gnome-calculator"], env=state["env"], cwd="/", start_new_session=True,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, **as_user)
        for elements in PAGES:
            found, parity_of_page = await page_rows(state, f"http://127.0.0.1:{port}/page/{elements}", elements,
                                                    rounds, as_user)
            result_rows += found
            parities[f"{elements:,}-element page"] = parity_of_page
    finally:
        if calculator is not None:
            calculator.terminate()
        await asyncio.to_thread(session.stop)
        await runner.cleanup()
    return {
        "meta": {"when": time.strftime("%Y-%m-%d %H:%M:%S %z"), "goal_ms": GOAL_MS},
        "setup": "OSWorld mode, 1920x1080: Chromium on a generated page, gnome-calculator",
        "rows": result_rows,
        "parity": parities,
    }


def markdown(result: dict) -> str:
    lines = [f"# OSWorld /accessibility ({result['meta']['when']})", "", result["setup"] + ".", "",
             "| row | median ms | p95 ms | n | nodes | x baseline |", "|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['row']} | {r['median_ms']} | {r['p95_ms']} | {r['n']} | {r.get('nodes', '')} | "
                     f"{r.get('x_baseline') or ''} |")
    lines += ["", f"Goal: GET /accessibility <= {result['meta']['goal_ms']} ms median.", ""]
    for page, p in result["parity"].items():
        lines.append(f"Parity of the last reads' XML, {page}: {p['elements_new']} elements from the reader, "
                     f"{p['elements_old']} from the libatspi walk; {p['only_in_old']} only in the walk's, "
                     f"{p['only_in_new']} only in the reader's, {p['attributes_differing']} attributes or texts "
                     f"differing.")
        lines += [f"- `{e}`" for e in p["examples"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.accessibility", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--drive", action="store_true", help=argparse.SUPPRESS)  # the session user's part
    p.add_argument("--desktopd", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.drive:
        json.dump(asyncio.run(drive(args.rounds, args.desktopd)), sys.stdout)
        return 0
    try:
        result = asyncio.run(rows(args.rounds))
    except (SessionFailed, RuntimeError) as exc:
        print(f"bench.accessibility: {exc}", file=sys.stderr)
        return 1
    write_results(args.results, "accessibility", result, markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
