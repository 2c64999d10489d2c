"""Traces and replay: what recording a trace costs each action, and how long a replay of
a 20-step demonstration takes beside the recording.

``python -m bench.trace [--iterations N] [--results DIR]`` starts one session at
1280x800, Chromium on a form, and measures side by side in one run:

- **/act click, no trace** (the baseline), **with a trace (screenshots)** and **with a
  trace (no screenshots)**: a click on a button through ``/act``, median and p95 ms,
  the rows alternated round by round; and the bytes each traced step added to its folder
  (its line, its two JPEGs).
- **desktopd click, no trace / traced**: a click sent to desktopd directly, which then
  asks the scene's gate about it (the element at its point, the screenshots).
- **replay**: a 20-step demonstration (clicks, typing, a select, desktopd clicks) recorded
  with screenshots, then replayed in execute mode; its wall time against the recording's
  (first step's start to last step's end), and per step.

Writes trace.json and trace.md into ``--results`` (bench/results by default).
Reported, not asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from aiohttp import ClientSession, ClientTimeout, web

from deskbox.session.spawn import SpawnedSession

from .page import free_port
from .report import write_results
from .stats import summarize

RESULTS = Path(__file__).resolve().parent / "results"
PAGE = """<!doctype html><html><head><meta charset=utf-8><title>trace bench</title>
<style>body{font:16px sans-serif;margin:24px} button,input,select{font:16px sans-serif;margin:6px}</style>
</head><body><section aria-label="Form">
<label for=name>Name</label> <input id=name autocomplete=off>
<label for=plan>Plan</label> <select id=plan><option>Basic</option><option>Pro</option><option>Team</option></select>
<label><input type=checkbox id=agree> Agree</label>
<button id=one>One</button> <button id=two>Two</button> <button id=three>Three</button>
<p id=out role=status>0</p></section>
<script>let n = 0; for (const b of document.querySelectorAll('button'))
  b.addEventListener('click', () => document.getElementById('out').textContent = ++n);</script>
</body></html>"""


async def _ids(http: ClientSession, scene: str) -> dict[str, dict]:
    async with http.get(scene + "/api/v1/scene", params={"mode": "agent-turn"}) as resp:
        scene_json = await resp.json()
    return {f"{e['role']}:{e['name']}": e for e in scene_json["ax"] if e["source"] == "cdp"}


async def _post(http: ClientSession, url: str, body: dict) -> dict:
    async with http.post(url, json=body) as resp:
        data = await resp.json()
        if resp.status != 200:
            raise RuntimeError(f"{url}: {resp.status} {data}")
        return data


def _folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


async def run(iterations: int) -> dict:
    site = web.Application()
    site.router.add_get("/", lambda r: web.Response(text=PAGE, content_type="text/html"))
    runner = web.AppRunner(site, access_log=None)
    await runner.setup()
    page_port = free_port()
    await web.TCPSite(runner, "127.0.0.1", page_port).start()
    traces = Path(tempfile.mkdtemp(prefix="deskbox-bench-traces-"))
    ports = [free_port() for _ in range(4)]
    session = SpawnedSession(["--output", "1280x800", "--desktopd-port", str(ports[0]), "--cdp-port", str(ports[1]),
                              "--bridge-port", str(ports[2]), "--scene-port", str(ports[3]), "--trace", str(traces),
                              "--url", f"http://127.0.0.1:{page_port}/"], prefix="deskbox-bench-trace-")
    times: dict[str, list[float]] = {k: [] for k in ("act", "act_traced", "act_traced_noshots", "raw", "raw_traced")}
    step_bytes: list[int] = []
    try:
        await asyncio.to_thread(session.start)
        scene, desktopd = session.state["scene"], session.state["desktopd"]
        async with ClientSession(timeout=ClientTimeout(total=120)) as http:
            await _post(http, scene + "/api/v1/trace/stop", {})  # (the one --trace started)
            await asyncio.sleep(3)
            ids = await _ids(http, scene)
            button = ids["button:Two"]
            x, y, w, h = button["bbox"]
            centre = {"action": "click", "x": x + w / 2, "y": y + h / 2}

            async def act() -> float:
                started = time.perf_counter()
                await _post(http, scene + "/api/v1/act", {"target": button["id"]})
                return time.perf_counter() - started

            async def raw() -> float:
                started = time.perf_counter()
                await _post(http, desktopd + "/api/v1/pointer", centre)
                return time.perf_counter() - started

            for i in range(iterations + 1):
                # (desktopd learns a trace stopped within a second: the untraced rows wait for it.)
                await asyncio.sleep(1.1)
                rows = {"act": await act(), "raw": await raw()}
                trace = await _post(http, scene + "/api/v1/trace/start", {"label": "overhead"})
                before = _folder_bytes(Path(trace["dir"]))
                rows["act_traced"] = await act()
                rows["raw_traced"] = await raw()
                await _post(http, scene + "/api/v1/trace/stop", {})
                step_bytes.append((_folder_bytes(Path(trace["dir"])) - before) // 2)
                await _post(http, scene + "/api/v1/trace/start", {"label": "overhead", "shots": False})
                rows["act_traced_noshots"] = await act()
                await _post(http, scene + "/api/v1/trace/stop", {})
                if i > 0:  # (the first round warms every path up)
                    for key, value in rows.items():
                        times[key].append(value)

            demo = await _post(http, scene + "/api/v1/trace/start", {"label": "20 steps"})
            ids = await _ids(http, scene)
            for i in range(5):
                await _post(http, scene + "/api/v1/act", {"target": ids["textbox:Name"]["id"], "action": "set_value",
                                                          "text": f"round {i}"})
                await _post(http, scene + "/api/v1/act", {"target": ids["combobox:Plan"]["id"], "action": "select",
                                                          "option": ("Pro", "Team")[i % 2]})
                await _post(http, scene + "/api/v1/act", {"target": ids[f"button:{('One', 'Three')[i % 2]}"]["id"]})
                bx, by, bw, bh = ids["checkbox:Agree"]["bbox"]
                await _post(http, desktopd + "/api/v1/pointer", {"action": "click", "x": bx + bw / 2, "y": by + bh / 2})
            stopped = await _post(http, scene + "/api/v1/trace/stop", {})
            replay = await _post(http, scene + "/api/v1/replay", {"trace": demo["trace_id"], "mode": "execute"})
    finally:
        await asyncio.to_thread(session.stop)
        await runner.cleanup()
        shutil.rmtree(traces, ignore_errors=True)
    base_act, base_raw = summarize(times["act"]), summarize(times["raw"])

    def row(name: str, key: str, base: dict) -> dict:
        s = summarize(times[key])
        return {"row": name, **s, "x_baseline": s["median_ms"] / base["median_ms"] if base["median_ms"] else None,
                "overhead_ms": s["median_ms"] - base["median_ms"]}

    steps = stopped["step_count"]
    return {
        "meta": {"when": time.strftime("%Y-%m-%d %H:%M:%S %z"), "iterations": iterations, "output": "1280x800",
                 "baseline": "the same action with no trace", "cpus": os.cpu_count()},
        "rows": [{"row": "/act click, no trace (baseline)", **base_act},
                 row("/act click, traced with screenshots", "act_traced", base_act),
                 row("/act click, traced without screenshots", "act_traced_noshots", base_act),
                 {"row": "desktopd click, no trace (baseline)", **base_raw},
                 row("desktopd click, traced with screenshots", "raw_traced", base_raw)],
        "bytes_per_step": sorted(step_bytes)[len(step_bytes) // 2] if step_bytes else None,
        "replay": {"steps": steps, "recorded_ms": replay["recorded_ms"], "replay_ms": replay["wall_ms"],
                   "ratio": replay["wall_ms"] / replay["recorded_ms"] if replay["recorded_ms"] else None,
                   "divergences": len(replay["divergences"]),
                   "resolved_by": sorted({s["resolved_by"] or "none" for s in replay["steps"]}),
                   "all_ok": all(s["ok"] for s in replay["steps"])},
    }


def markdown(result: dict) -> str:
    meta, replay = result["meta"], result["replay"]
    lines = [f"# Traces and replay ({meta['when']})", "",
             f"One {meta['output']} session, Chromium on a form; {meta['iterations']} rounds per row after an untimed "
             "one, the rows alternated. Baseline: the same action with no trace.", "",
             "| row | median ms | p95 ms | overhead ms | x baseline |", "|---|---:|---:|---:|---:|"]
    for r in result["rows"]:
        x = r.get("x_baseline")
        over = r.get("overhead_ms")
        lines.append(f"| {r['row']} | {r['median_ms']:.0f} | {r['p95_ms']:.0f} | "
                     f"{'' if over is None else f'{over:+.0f}'} | {'1.0' if x is None else f'{x:.2f}'}x |")
    lines += ["", f"A traced step with screenshots adds {result['bytes_per_step'] or 0:,} bytes to its folder "
                  "(median; its line and two JPEGs).", "",
              f"Replay of a {replay['steps']}-step demonstration (execute mode): {replay['replay_ms']:,} ms against "
              f"{replay['recorded_ms']:,} ms recorded ({replay['ratio']:.2f}x); {replay['divergences']} divergences; "
              f"resolved by {', '.join(replay['resolved_by'])}; all steps ok: {replay['all_ok']}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.trace", description=__doc__)
    parser.add_argument("--iterations", type=int, default=15)
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write the results")
    args = parser.parse_args()
    result = asyncio.run(run(args.iterations))
    write_results(args.results, "trace", result, markdown(result))


if __name__ == "__main__":
    main()
