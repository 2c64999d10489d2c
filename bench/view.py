"""The live view: how long a change on screen takes to reach the viewer's canvas.

``python -m bench.view [--iterations N] [--results DIR]`` starts a session with ``--view``
at 1280x800, Chromium on a page whose background flips colour on a click, and a viewer
(Playwright on Debian's Chromium, headless) on the view's page. Each round: a click
through desktopd flips the page, and two clocks run from the moment the click request is
sent:

- **desktopd screenshot** (the baseline): polling ``GET /api/v1/screenshot?format=jpeg``
  until the new colour is in it, what a client without the live view sees at best.
- **live view canvas**: the viewer's page watching its canvas pixel on every animation
  frame until the new colour is drawn (wall clocks of one machine: ms resolution).

The rows alternate (both watch the same flip). Writes view.json and view.md
into ``--results`` (bench/results by default). Reported, not asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import time
from pathlib import Path

from aiohttp import ClientSession, ClientTimeout, web
from PIL import Image

from deskbox.session.spawn import SpawnedSession

from .page import free_port
from .report import write_results
from .stats import summarize

RESULTS = Path(__file__).resolve().parent / "results"
COLOURS = ((204, 34, 34), (34, 68, 204))  # what the page flips between
PAGE = """<!doctype html><html><head><meta charset=utf-8><title>view bench</title>
<style>html,body{margin:0;height:100%;background:rgb(204,34,34)}</style></head><body><script>
let n = 0;
document.addEventListener('mousedown', () => {
  document.body.style.background = ++n % 2 ? 'rgb(34,68,204)' : 'rgb(204,34,34)';
});
</script></body></html>"""
# In the viewer: the wall time at which the canvas pixel (x, y) first shows rgb.
WATCH = """([x, y, rgb]) => new Promise(resolve => {
  const ctx = document.querySelector('#screen canvas').getContext('2d');
  const step = () => {
    const d = ctx.getImageData(x, y, 1, 1).data;
    if (Math.abs(d[0] - rgb[0]) < 12 && Math.abs(d[1] - rgb[1]) < 12 && Math.abs(d[2] - rgb[2]) < 12) {
      resolve(Date.now());
    } else {
      requestAnimationFrame(step);
    }
  };
  step();
})"""


def _near(a: tuple, b: tuple) -> bool:
    return all(abs(x - y) < 12 for x, y in zip(a, b))


async def run(iterations: int) -> dict:
    from playwright.async_api import async_playwright

    site = web.Application()
    site.router.add_get("/", lambda r: web.Response(text=PAGE, content_type="text/html"))
    runner = web.AppRunner(site, access_log=None)
    await runner.setup()
    page_port = free_port()
    await web.TCPSite(runner, "127.0.0.1", page_port).start()
    ports = [free_port() for _ in range(5)]
    session = SpawnedSession(["--output", "1280x800", "--desktopd-port", str(ports[0]), "--cdp-port", str(ports[1]),
                              "--bridge-port", str(ports[2]), "--scene-port", str(ports[3]), "--view",
                              "--view-port", str(ports[4]), "--url", f"http://127.0.0.1:{page_port}/"],
                             prefix="deskbox-bench-view-")
    canvas_s, shot_s = [], []
    try:
        await asyncio.to_thread(session.start)
        state = session.state
        desktopd = state["desktopd"]
        async with ClientSession(timeout=ClientTimeout(total=60)) as http, async_playwright() as p:
            browser = await p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                              args=["--no-sandbox"])
            viewer = await browser.new_page(viewport={"width": 1400, "height": 900})
            await viewer.goto(state["view"] + "/")
            await viewer.wait_for_selector("#screen canvas", timeout=30_000)
            spot = (640, 500)  # the middle of the page, below Chromium's toolbar
            await asyncio.sleep(3)  # the browser's first page settles
            for i in range(iterations + 1):
                new = COLOURS[(i + 1) % 2]
                watching = asyncio.ensure_future(viewer.evaluate(WATCH, [spot[0], spot[1], list(new)]))
                await asyncio.sleep(0.05)
                sent = time.time()
                async with http.post(desktopd + "/api/v1/pointer",
                                     json={"action": "click", "x": spot[0], "y": spot[1]}) as resp:
                    await resp.read()
                while True:
                    async with http.get(desktopd + "/api/v1/screenshot", params={"format": "jpeg"}) as resp:
                        body = await resp.read()
                    if _near(Image.open(io.BytesIO(body)).convert("RGB").getpixel(spot), new):
                        seen_shot = time.time()
                        break
                seen_canvas = (await asyncio.wait_for(watching, 30)) / 1000
                if i > 0:  # (the first round warms both paths up)
                    canvas_s.append(seen_canvas - sent)
                    shot_s.append(seen_shot - sent)
                await asyncio.sleep(0.3)
            await browser.close()
    finally:
        await asyncio.to_thread(session.stop)
        await runner.cleanup()
    shot, canvas = summarize(shot_s), summarize(canvas_s)
    return {"meta": {"when": time.strftime("%Y-%m-%d %H:%M:%S %z"), "iterations": iterations,
                     "baseline": "desktopd screenshot polling"},
            "rows": [{"row": "desktopd screenshot polling (baseline)", **shot},
                     {"row": "live view canvas", **canvas,
                      "x_baseline": canvas["median_ms"] / shot["median_ms"] if shot["median_ms"] else None}]}


def markdown(result: dict) -> str:
    lines = [f"# Live view ({result['meta']['when']})", "",
             "From a click's request (which flips the page's colour) to the new colour: in desktopd's screenshot "
             "(polled, JPEG) and in the live view's canvas (watched on every animation frame of a headless "
             f"viewer). {result['meta']['iterations']} rounds; 1280x800.", "",
             "| row | median ms | p95 ms | x baseline |", "|---|---:|---:|---:|"]
    for row in result["rows"]:
        x = row.get("x_baseline")
        lines.append(f"| {row['row']} | {row['median_ms']:.0f} | {row['p95_ms']:.0f} | "
                     f"{'1.0' if x is None else f'{x:.2f}'}x |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.view", description=__doc__)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--results", type=Path, default=RESULTS, help="where to write the results")
    args = parser.parse_args()
    result = asyncio.run(run(args.iterations))
    write_results(args.results, "view", result, markdown(result))


if __name__ == "__main__":
    main()
