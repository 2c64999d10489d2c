"""OSWorld's ``/accessibility`` with LibreOffice Calc open, after each kind of thing an
agent does: the full read that keeps what did not change (``deskbox.atspi.full``)
against the same reader reading everything each time (the baseline, what it did
before), side by side in one run.

``python -m bench.full_read [--rounds N]`` (as root; needs the apps installed, ``make
test APPS=1``) writes bench/results/full_read.json and full_read.md. The session runs
at 1920x1080 with Calc on a sheet of 10,000 filled cells (100 x 100) and no browser.
One process running as the session user holds both readers, as OSWorld's server holds
its one (``keep`` on and off); before each round it does one thing to Calc through
desktopd, untimed, then reads with both, in alternating order:

- **nothing** between two reads; **the pointer moved** over the sheet (what the fleet
  bench's agent does); **a click on a cell**; **a value typed** into the active cell
  and Return; **the sheet scrolled** a page (down and up in turn).

Per row: wall time of the read (median, p95) and the CPU it cost, the reader's process
and LibreOffice's together (median ms per read), and the keeping reader's nodes read,
taken and kept. After each kind, once Calc holds still, the two readers' trees are
compared, node by node (they must agree: a difference is a read that kept something
that changed)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from deskbox import AsyncClient, Client
from deskbox.common.net import free_ports
from deskbox.session.spawn import SessionFailed, SpawnedSession

from .apps import start_calc, stop_calc
from .report import write_results
from .stats import summarize

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]
KINDS = ("nothing", "the pointer moved", "a click on a cell", "a value typed", "the sheet scrolled")


# -- the driver: runs as the session user --------------------------------------------


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _act(kind: str, i: int, desk: AsyncClient, cell: tuple[int, int]):
    """The input of one round (a coroutine; None for "nothing")."""
    x, y = cell
    if kind == "the pointer moved":
        return desk.pointer("move", x + 40 * (i % 5), y + 20 * (i % 3))
    if kind == "a click on a cell":
        return desk.pointer("click", x + 60 * (i % 4), y + 20 * (i % 3))
    if kind == "a value typed":
        return desk.keyboard("type", text=f"{i + 1}\n")
    if kind == "the sheet scrolled":
        return desk.keyboard("key", keys="Page_Down" if i % 2 == 0 else "Page_Up")
    return None


def _differences(a: list[dict], b: list[dict]) -> list[str]:
    """Where two reads of the apps differ, node by node (pids aside): the node (child
    indexes, role, name), the field, and the two values."""
    out: list[str] = []

    def visit(x: dict, y: dict, where: str) -> None:
        here = f"{where}/{x.get('role')}:{x.get('name', '')[:30]}"
        out.extend(f"{here} {k}: {x.get(k)!r} / {y.get(k)!r}" for k in sorted((x.keys() | y.keys()) - {"children", "pid"})
                   if x.get(k) != y.get(k))
        if len(x["children"]) != len(y["children"]):
            out.append(f"{here} children: {len(x['children'])} / {len(y['children'])}")
            return
        for i, (c, d) in enumerate(zip(x["children"], y["children"])):
            visit(c, d, f"{where}/{i}")

    if len(a) != len(b):
        out.append(f"apps: {len(a)} / {len(b)}")
    for x, y in zip(a, b):
        visit(x, y, "")
    return out


async def _compared(keeps: Any, reads_all: Any, tries: int = 10) -> list[str] | None:
    """Where the two readers' trees differ, read once Calc holds still (the keeping
    reader's reads on either side agree); None: it never held still."""
    for _ in range(tries):
        await asyncio.sleep(0.5)
        before, whole, after = await keeps.full_tree(), await reads_all.full_tree(), await keeps.full_tree()
        if before["apps"] == after["apps"]:
            return _differences(before["apps"], whole["apps"])
    return None


async def drive(rounds: int, desktopd: str, office: int, cell: tuple[int, int]) -> dict:
    from deskbox.atspi.reader import AtspiReader

    readers = {"keeps": AtspiReader(), "reads all": AtspiReader(keep=False)}
    for reader in readers.values():
        await reader.open()
    desk = AsyncClient(None, desktopd, None, timeout=30)
    out: dict[str, Any] = {}
    try:
        for reader in readers.values():
            await reader.full_tree()  # (the first read fills the caches both rely on)
        for kind in KINDS:
            found: dict[str, dict[str, list]] = {name: {"s": [], "cpu": [], "walk": []} for name in readers}
            for i in range(rounds):
                act = _act(kind, i, desk, cell)
                if act is not None:
                    await act
                await asyncio.sleep(0.6)  # (Calc answers what it was told)
                for name in (list(readers) if i % 2 == 0 else list(readers)[::-1]):
                    cpu0, office0, t0 = time.process_time(), _cpu_s(office), time.perf_counter()
                    tree = await readers[name].full_tree()
                    found[name]["s"].append(time.perf_counter() - t0)
                    found[name]["cpu"].append(time.process_time() - cpu0 + _cpu_s(office) - office0)
                    found[name]["walk"].append(tree["walk"])
            out[kind] = {"reads": found, "differences": await _compared(readers["keeps"], readers["reads all"])}
    finally:
        await desk.close()
        for reader in readers.values():
            await reader.close()
    return out


# -- the bench: runs as root, starts the session -------------------------------------


def _rows(found: dict) -> list[dict]:
    rows = []
    for kind, result in found.items():
        base = summarize(result["reads"]["reads all"]["s"])
        for name in ("keeps", "reads all"):
            reads = result["reads"][name]
            stats = summarize(reads["s"])
            cpu = summarize(reads["cpu"])
            walks = reads["walk"]
            rows.append({
                "row": f"{kind}: {'the read that keeps' if name == 'keeps' else 'reading everything (baseline)'}",
                "kind": kind, "baseline": name != "keeps", **stats, "cpu_median_ms": cpu["median_ms"],
                "kept": sum(bool(w.get("kept")) for w in walks),
                "taken_median": sorted(sum((w.get("taken") or {}).values()) for w in walks)[len(walks) // 2],
                "x_baseline": (round(stats["median_ms"] / base["median_ms"], 3)
                               if name == "keeps" and base["median_ms"] else None),
                "differences": None if result["differences"] is None else len(result["differences"]),
                "differing": (result["differences"] or [])[:5],
            })
    return rows


def measure(rounds: int) -> dict:
    ports = [str(free) for free in free_ports(4)]
    session = SpawnedSession(["--output", "1920x1080", "--no-browser", "--desktopd-port", ports[0], "--cdp-port",
                              ports[1], "--bridge-port", ports[2], "--scene-port", ports[3]],
                             prefix="deskbox-bench-full-read-")
    calc = None
    try:
        session.start()
        state = session.state
        user = state["user"]
        as_user = {"user": user["uid"], "group": user["gid"], "extra_groups": []} if os.getuid() == 0 else {}
        calc = start_calc(state)
        office, window = _calc_window(state["desktopd"])
        time.sleep(5)  # Calc settles after loading
        x, y, w, h = window["bounds"]
        cell = (int(x + w // 3), int(y + h // 2))  # inside the sheet, clear of the toolbars and the sidebar
        driver = subprocess.run(
            [sys.executable, "-m", "bench.full_read", "--drive", "--rounds", str(rounds), "--desktopd",
             state["desktopd"], "--office", str(office), "--cell", f"{cell[0]},{cell[1]}"],
            env={**state["env"], "PYTHONPATH": str(ROOT)}, cwd=str(ROOT), capture_output=True, text=True,
            timeout=1800, **as_user)
        if driver.returncode != 0:
            raise RuntimeError(f"the driver failed: {driver.stderr[-3000:]}")
        found = json.loads(driver.stdout)
    finally:
        stop_calc(calc)
        session.stop()
    return {"meta": {"when": time.strftime("%Y-%m-%d %H:%M:%S %z"), "rounds": rounds},
            "setup": "1920x1080, LibreOffice Calc on a sheet of 10,000 filled cells, no browser",
            "rows": _rows(found)}


def _calc_window(desktopd: str, timeout: float = 120) -> tuple[int, dict]:
    """soffice.bin's pid and its window, once its sheet's window is up."""
    deadline = time.monotonic() + timeout
    with Client(None, desktopd, None, timeout=30) as desk:
        while time.monotonic() < deadline:
            for window in desk.windows():
                if "sheet.xlsx" in (window.title or "") and window.pid:
                    return window.pid, window.model_dump(exclude_unset=True)
            time.sleep(0.5)
    raise RuntimeError(f"Calc's window did not come within {timeout:g} s")


def markdown(result: dict) -> str:
    lines = [f"# OSWorld /accessibility with Calc ({result['meta']['when']})", "", result["setup"] + ".", "",
             "| row | median ms | p95 ms | CPU ms | kept | nodes taken | x baseline | trees differ |",
             "|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['row']} | {r['median_ms']} | {r['p95_ms']} | {r['cpu_median_ms']} | "
                     f"{'' if r['baseline'] else r['kept']} | {'' if r['baseline'] else r['taken_median']} | "
                     f"{r.get('x_baseline') or ''} | {'?' if r['differences'] is None else r['differences']} |")
    for r in result["rows"]:
        if not r["baseline"] and r["differing"]:
            lines += ["", f"Where the trees differ after {r['kind']} (the read that keeps / reading everything):"]
            lines += [f"- `{d}`" for d in r["differing"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.full_read", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--drive", action="store_true", help=argparse.SUPPRESS)  # the session user's part
    p.add_argument("--desktopd", help=argparse.SUPPRESS)
    p.add_argument("--office", type=int, help=argparse.SUPPRESS)
    p.add_argument("--cell", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.drive:
        x, y = (int(v) for v in args.cell.split(","))
        json.dump(asyncio.run(drive(args.rounds, args.desktopd, args.office, (x, y))), sys.stdout)
        return 0
    try:
        result = measure(args.rounds)
    except (SessionFailed, RuntimeError) as exc:
        print(f"bench.full_read: {exc}", file=sys.stderr)
        return 1
    write_results(args.results, "full_read", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
