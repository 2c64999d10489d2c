"""The CDP bridge's /layout, side by side with the per-node getBoxModel method and
Playwright's aria_snapshot(), on generated pages of 1k, 5k and 20k DOM elements.

``python -m bench.bridge [--sizes 1000,5000,20000] [--iterations N]``: starts its own
session, writes bench/results/bridge.json and bridge.md, prints the table. Rows:

- **(a) per-node getBoxModel**: the existing bridge's method and the baseline:
  Accessibility.getFullAXTree, then one awaited DOM.getBoxModel per AX node with a DOM node.
- **(b) Playwright aria_snapshot()**: Python Playwright attached over CDP to the same
  Chromium; no boxes at all.
- **bridge, first**: GET /layout?tab=ID right after the page was reloaded (nothing cached).
- **bridge, repeated**: the same request again on the unchanged page.
- **bridge, after a click**: a click through desktopd on a button that rewrites its own
  label, then GET /layout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

from aiohttp import ClientSession, ClientTimeout, web

from services.cdp import CDPConnection
from services.session.spawn import SessionFailed, SpawnedSession

from .stats import summarize

RESULTS = Path(__file__).resolve().parent / "results"
TARGETS = {"first_vs_a_at_5k": 1 / 8, "repeated_ms": 50, "after_click_ms": 150}


def page_html(n: int) -> str:
    """n DOM elements: rows of buttons, links, inputs and text; a click relabels a button."""
    parts, made = [], 0
    while made < n:
        row = []
        made += 1
        for _ in range(9):
            kind = made % 4
            if kind == 0:
                row.append(f"<button id=b{made}>Button {made}</button>")
            elif kind == 1:
                row.append(f"<a href='#{made}'>Link {made}</a>")
            elif kind == 2:
                row.append(f"<input aria-label='Input {made}' size=6>")
            else:
                row.append(f"<span>Text {made}</span>")
            made += 1
        parts.append("<div class=row>" + "".join(row) + "</div>")
    # A click anywhere in a row relabels that row's first button: part of the page changes
    # (a text node replaced, the row's boxes move), as after a real click.
    script = ("document.addEventListener('click', e => { const row = e.target.closest && e.target.closest('.row'); "
              "const b = row && row.querySelector('button'); if (b) b.textContent = 'Clicked ' + Date.now(); });")
    return ("<!doctype html><html><head><meta charset=utf-8><title>bridge bench</title><style>"
            "body{margin:0;font:12px sans-serif}.row{display:flex;gap:4px}</style></head><body>"
            + "".join(parts) + f"<script>{script}</script></body></html>")


async def per_node_boxes(conn: CDPConnection, session: str) -> int:
    ax = await conn.send("Accessibility.getFullAXTree", session=session, timeout=300)
    boxed = 0
    for node in ax["nodes"]:
        if "backendDOMNodeId" not in node:
            continue
        try:
            await conn.send("DOM.getBoxModel", {"backendNodeId": node["backendDOMNodeId"]}, session=session)
            boxed += 1
        except Exception:
            pass
    return boxed


def rss_mb(pid: int | None) -> float | None:
    if not pid:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def bridge_pid(state: dict) -> int | None:
    return state.get("pids", {}).get("bridge")


async def run(args: argparse.Namespace) -> dict:
    app = web.Application()
    app.router.add_get("/page/{n}", lambda r: web.Response(text=page_html(int(r.match_info["n"])), content_type="text/html"))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    session = SpawnedSession(["--output", "1920x1080", "--desktopd-port", str(args.desktopd_port),
                              "--cdp-port", str(args.cdp_port), "--bridge-port", str(args.bridge_port)],
                             prefix="deskbox-bench-bridge-")
    rows: list[dict] = []
    try:
        await asyncio.to_thread(session.start)
        state = session.state
        cdp = f"http://127.0.0.1:{args.cdp_port}"
        bridge = state["bridge"]
        desktopd = state["desktopd"]
        async with ClientSession(timeout=ClientTimeout(total=600)) as http:
            async with http.get(cdp + "/json/version") as resp:
                ws = (await resp.json())["webSocketDebuggerUrl"]
            conn = CDPConnection()
            await conn.connect(ws)
            from playwright.async_api import async_playwright

            async with async_playwright() as pw:
                browser = await pw.chromium.connect_over_cdp(cdp)
                for n in args.sizes:
                    rows += await measure_size(n, port, conn, browser, http, bridge, desktopd, args.iterations)
                await browser.close()
            await conn.close()
        rss = rss_mb(bridge_pid(state))
    finally:
        await asyncio.to_thread(session.stop)
        await runner.cleanup()
    return {"rows": rows, "bridge_rss_mb": rss}


async def measure_size(n, port, conn, browser, http, bridge, desktopd, iterations) -> list[dict]:
    url = f"http://127.0.0.1:{port}/page/{n}"
    target = (await conn.send("Target.createTarget", {"url": url}))["targetId"]
    session = (await conn.send("Target.attachToTarget", {"targetId": target, "flatten": True}))["sessionId"]
    await conn.send("Page.enable", session=session)
    await asyncio.sleep(2)
    pw_page = next(p for c in browser.contexts for p in c.pages if p.url == url)
    times: dict[str, list[float]] = {k: [] for k in ("a", "b", "first", "repeated", "click")}
    counts: dict[str, int] = {}
    reps = max(1, iterations if n <= 5000 else iterations // 3)
    for i in range(reps):
        print(f"bench.bridge: {n} elements, round {i + 1}/{reps}", file=sys.stderr, flush=True)
        if n <= 5000 or i == 0:  # the per-node method takes minutes at 20k
            t = time.perf_counter()
            counts["a_boxes"] = await per_node_boxes(conn, session)
            times["a"].append(time.perf_counter() - t)
        t = time.perf_counter()
        snap = await pw_page.locator("body").aria_snapshot()
        times["b"].append(time.perf_counter() - t)
        counts["b_lines"] = snap.count("\n") + 1
        await conn.send("Page.reload", session=session)
        await asyncio.sleep(1.5)
        t = time.perf_counter()
        async with http.get(f"{bridge}/layout?tab={target}") as resp:
            body = await resp.read()
        times["first"].append(time.perf_counter() - t)
        counts["nodes"] = len(json.loads(body)["tabs"][0]["layout"]["nodes"])
        t = time.perf_counter()
        async with http.get(f"{bridge}/layout?tab={target}") as resp:
            await resp.read()
        times["repeated"].append(time.perf_counter() - t)
        async with http.post(f"{desktopd}/api/v1/pointer", json={"action": "click", "x": 30, "y": 100}) as resp:
            await resp.read()
        await asyncio.sleep(0.2)
        t = time.perf_counter()
        async with http.get(f"{bridge}/layout?tab={target}") as resp:
            await resp.read()
        times["click"].append(time.perf_counter() - t)
    await conn.send("Target.closeTarget", {"targetId": target})
    labels = {"a": "(a) per-node DOM.getBoxModel (baseline)", "b": "(b) Playwright aria_snapshot(), no boxes",
              "first": "bridge /layout, first", "repeated": "bridge /layout, repeated (unchanged page)",
              "click": "bridge /layout, after a click"}
    return [{"elements": n, "row": labels[k], "key": k, **summarize(v), **({"ax_nodes": counts.get("nodes")})}
            for k, v in times.items() if v]


def markdown(result: dict) -> str:
    lines = ["# CDP bridge: /layout against the per-node method and Playwright", "",
             f"Baseline: (a), one awaited DOM.getBoxModel per AX node, on the same page in the same run. "
             f"Load average before/after: {result['load']}. Bridge RSS after the run: {result['bridge_rss_mb']} MB.", "",
             "| elements | row | median ms | p95 ms | x (a) | AX nodes |", "|---:|---|---:|---:|---:|---:|"]
    base = {r["elements"]: r["median_ms"] for r in result["rows"] if r["key"] == "a"}
    for r in result["rows"]:
        ratio = r["median_ms"] / base[r["elements"]] if base.get(r["elements"]) else None
        lines.append(f"| {r['elements']} | {r['row']} | {r['median_ms']:.1f} | {r['p95_ms']:.1f} | "
                     f"{'' if ratio is None else f'{ratio:.3f}'} | {r.get('ax_nodes') or ''} |")
    lines += ["", "Targets (issue 3): first /layout at 5k <= 1/8 of (a); repeated <= 50 ms; after a click <= 150 ms.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.bridge", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,5000,20000", help="page sizes in DOM elements, comma-separated")
    p.add_argument("--iterations", type=int, default=5, help="rounds per size (a third of them at 20k)")
    p.add_argument("--desktopd-port", type=int, default=18680)
    p.add_argument("--cdp-port", type=int, default=19680)
    p.add_argument("--bridge-port", type=int, default=18682)
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    before = [round(v, 2) for v in os.getloadavg()]
    try:
        result = asyncio.run(run(args))
    except SessionFailed as exc:
        print(f"bench.bridge: {exc}", file=sys.stderr)
        return 1
    result["load"] = [before, [round(v, 2) for v in os.getloadavg()]]
    md = markdown(result)
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "bridge.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.results / "bridge.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
