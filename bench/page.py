"""The page the bench puts on screen, and the local server that serves it.

A generated, text-heavy article (headings, paragraphs, tables, coloured call-outs, code)
that fills a 1080p screen the way a documentation or news page does. There is no network
here, so it is served from 127.0.0.1. Its one button reports each click back to the
server (``/clicked``), so the bench can time a click until the page has seen it.
"""

from __future__ import annotations

import asyncio
import random
import time

from aiohttp import web

__all__ = ["PageServer", "render_page", "CLICK_TARGET_ID"]

CLICK_TARGET_ID = "bench-target"

_WORDS = (
    "screen agent display pointer keyboard compositor frame buffer damage region output "
    "latency encoder deflate window browser session harness element scene accessibility "
    "benchmark request response header cache pixel scale layout surface protocol client "
    "server capture stride format quality measure median percentile target baseline the "
    "a of and to in is that for on with as by this be are from at or an it not which"
).split()

_COLOURS = ["#fde2e4", "#e2f0cb", "#cde7f0", "#fff1c1", "#e8dff5", "#ffd6a5"]


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(8, 18))]
    words[0] = words[0].capitalize()
    return " ".join(words) + rng.choice([".", ".", ".", "?", ";"])


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(3, 6)))


def _table(rng: random.Random, index: int) -> str:
    head = "".join(f"<th>{rng.choice(_WORDS).title()}</th>" for _ in range(6))
    rows = []
    for r in range(8):
        cells = [f"<td>{rng.choice(_WORDS)} {rng.choice(_WORDS)}</td>"]
        cells += [f"<td class=num>{rng.uniform(0, 999):.2f}</td>" for _ in range(5)]
        rows.append(f"<tr class={'odd' if r % 2 else 'even'}>{''.join(cells)}</tr>")
    return f"<table><caption>Table {index}</caption><tr>{head}</tr>{''.join(rows)}</table>"


def render_page(seed: int = 1080) -> str:
    """The bench page: the same bytes for the same seed, so runs are comparable."""
    rng = random.Random(seed)
    sections = []
    for i in range(1, 13):
        parts = [f"<h2>{i}. {_sentence(rng)[:-1]}</h2>", f"<p>{_paragraph(rng)}</p>"]
        if i % 2:
            parts.append(_table(rng, i))
        parts.append(f"<div class=note style='background:{_COLOURS[i % len(_COLOURS)]}'><b>Note.</b> {_paragraph(rng)}</div>")
        parts.append(f"<p>{_paragraph(rng)} <a href='#s{i}'>{rng.choice(_WORDS)} link</a> {_paragraph(rng)}</p>")
        if i % 3 == 0:
            parts.append(f"<pre>{chr(10).join(_sentence(rng).lower() for _ in range(4))}</pre>")
        sections.append(f"<section id=s{i} class=col>{''.join(parts)}</section>")
    nav = "".join(f"<li><a href='#s{i}'>Section {i}: {rng.choice(_WORDS)} {rng.choice(_WORDS)}</a></li>" for i in range(1, 25))
    return f"""<!doctype html>
<html><head><meta charset=utf-8><title>deskbox bench page</title>
<style>
  body {{ margin: 0; font: 15px/1.45 "DejaVu Sans", sans-serif; color: #222; background: #fff; }}
  header {{ background: #1f3a5f; color: #fff; padding: 10px 24px; display: flex; align-items: center; gap: 24px; }}
  header h1 {{ font-size: 22px; margin: 0; }}
  #{CLICK_TARGET_ID} {{ font-size: 15px; padding: 6px 16px; background: #f4b400; border: 0; border-radius: 4px; }}
  #clicks {{ font-family: monospace; }}
  main {{ display: grid; grid-template-columns: 260px 1fr 1fr 1fr; gap: 18px; padding: 12px 24px; }}
  nav ul {{ list-style: none; padding: 0; margin: 0; font-size: 13px; }}
  nav li {{ padding: 3px 0; border-bottom: 1px solid #e5e5e5; }}
  h2 {{ font-size: 17px; color: #1f3a5f; margin: 8px 0 4px; }}
  p {{ margin: 4px 0 8px; text-align: justify; }}
  a {{ color: #1a5fb4; }}
  table {{ border-collapse: collapse; font-size: 12px; width: 100%; margin: 6px 0; }}
  caption {{ text-align: left; font-weight: bold; color: #555; }}
  th {{ background: #35618f; color: #fff; padding: 2px 4px; }}
  td {{ padding: 2px 4px; border-bottom: 1px solid #ddd; }}
  tr.odd td {{ background: #f3f6fa; }}
  td.num {{ text-align: right; font-family: "DejaVu Sans Mono", monospace; }}
  .note {{ padding: 6px 10px; border-left: 4px solid #888; margin: 6px 0; font-size: 13px; }}
  pre {{ background: #272822; color: #f8f8f2; padding: 8px; font-size: 12px; white-space: pre-wrap; }}
</style></head>
<body>
<header><h1>deskbox bench: a text-heavy page</h1>
<button id={CLICK_TARGET_ID}>Click target</button><span id=clicks>clicks: 0</span></header>
<main><nav><ul>{nav}</ul></nav>{''.join(sections)}</main>
<script>
  let n = 0;
  document.getElementById("{CLICK_TARGET_ID}").addEventListener("click", (ev) => {{
    n += 1;
    fetch("/clicked?n=" + n + "&x=" + ev.clientX + "&y=" + ev.clientY, {{method: "POST", keepalive: true}});
  }});
</script>
</body></html>
"""


class PageServer:
    """Serves the page on 127.0.0.1 and timestamps each click report on arrival."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.port = host, port
        self.html = render_page()
        self.clicks: list[tuple[float, dict]] = []
        self._new_click = asyncio.Event()
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/", self._page)
        app.router.add_post("/clicked", self._clicked)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _page(self, _request: web.Request) -> web.Response:
        return web.Response(text=self.html, content_type="text/html")

    async def _clicked(self, request: web.Request) -> web.Response:
        self.clicks.append((time.perf_counter(), dict(request.query)))
        self._new_click.set()
        return web.Response(status=204)

    async def wait_click(self, count: int, timeout: float) -> float | None:
        """The arrival time of click report number ``count`` (1-based), or None."""
        deadline = time.perf_counter() + timeout
        while len(self.clicks) < count:
            left = deadline - time.perf_counter()
            if left <= 0:
                return None
            self._new_click.clear()
            try:
                await asyncio.wait_for(self._new_click.wait(), left)
            except asyncio.TimeoutError:
                return None
        return self.clicks[count - 1][0]
