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

__all__ = ["PageServer", "render_page", "PAGES", "CLICK_TARGET_ID", "CLICK_TARGET_RGB", "free_port", "serve_html"]

CLICK_TARGET_ID = "bench-target"
# The button's fill, used nowhere else on the page: the bench finds it on screen by it.
CLICK_TARGET_RGB = (232, 89, 12)

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
    return f"<table class=data><caption>Table {index}</caption><tr>{head}</tr>{''.join(rows)}</table>"


PAGES = ("article", "dense")


def render_page(kind: str = "article", seed: int = 1080) -> str:
    """A bench page: the same bytes for the same kind and seed, so runs are comparable.

    Both are laid out like an encyclopedia article at 1920 px: a side bar of links, a
    text column with an info box, a table, coloured notes and code. ``article`` keeps the
    text column narrow and leaves the margin a real site leaves on a wide screen (`grim`
    takes about as long on it, about 40 ms, as on a real encyclopedia page measured on
    these machines); ``dense`` runs the
    text 1500 px wide and adds a gradient, which costs every PNG encoder 3-4x more.
    """
    if kind not in PAGES:
        raise ValueError(f"unknown page {kind!r}; one of {PAGES}")
    rng = random.Random(seed)
    sections = []
    for i in range(1, 9):
        parts = [f"<h2 id=s{i}>{i}. {_sentence(rng)[:-1]}</h2>", f"<p>{_paragraph(rng)}</p>"]
        if i == 2:
            parts.append(_table(rng, i))
        if i % 2:
            parts.append(f"<div class=note style='background:{_COLOURS[i % len(_COLOURS)]}'><b>Note.</b> {_paragraph(rng)}</div>")
        parts.append(f"<p>{_paragraph(rng)} <a href='#s{i}'>{rng.choice(_WORDS)} link</a> {_paragraph(rng)}</p>")
        if i % 3 == 0:
            parts.append(f"<pre>{chr(10).join(_sentence(rng).lower() for _ in range(4))}</pre>")
        sections.append("".join(parts))
    nav = "".join(f"<li><a href='#s{i % 8 + 1}'>{rng.choice(_WORDS).title()} {rng.choice(_WORDS)}</a></li>" for i in range(22))
    facts = "".join(
        f"<tr><th>{rng.choice(_WORDS).title()}</th><td>{rng.choice(_WORDS)} {rng.uniform(0, 99):.1f}</td></tr>" for _ in range(9)
    )
    return f"""<!doctype html>
<html><head><meta charset=utf-8><title>deskbox bench page</title>
<style>
  body {{ margin: 0; font: 16px/1.6 "DejaVu Sans", sans-serif; color: #202122; background: #fff; }}
  header {{ border-bottom: 1px solid #c8ccd1; padding: 10px 40px; display: flex; align-items: center; gap: 24px; }}
  header h1 {{ font: 24px/1.2 "DejaVu Serif", serif; margin: 0; }}
  #{CLICK_TARGET_ID} {{ font-size: 15px; padding: 6px 16px; background: #e8590c; color: #fff; border: 0; border-radius: 4px; }}
  #clicks {{ font-family: monospace; color: #54595d; }}
  .wrap {{ display: flex; gap: 32px; padding: 16px 40px; max-width: 1500px; }}
  nav {{ width: 200px; flex: none; font-size: 14px; }}
  nav ul {{ list-style: none; padding: 0; margin: 0; }}
  nav li {{ padding: 2px 0; }}
  article {{ flex: 1; }}
  h2 {{ font: 22px/1.3 "DejaVu Serif", serif; border-bottom: 1px solid #a2a9b1; margin: 18px 0 6px; }}
  p {{ margin: 6px 0 10px; }}
  a {{ color: #36c; text-decoration: none; }}
  .infobox {{ float: right; width: 300px; margin: 0 0 12px 20px; border: 1px solid #a2a9b1; background: #f8f9fa;
              font-size: 13px; border-collapse: collapse; }}
  .infobox caption {{ font-weight: bold; font-size: 15px; padding: 4px; }}
  .infobox th, .infobox td {{ text-align: left; padding: 3px 6px; vertical-align: top; }}
  .swatch {{ height: 90px; background: linear-gradient(90deg, #36c, #8ec5fc 60%, #e0c3fc); }}
  table.data {{ border-collapse: collapse; font-size: 14px; margin: 8px 0; }}
  table.data caption {{ text-align: left; font-weight: bold; color: #54595d; }}
  table.data th {{ background: #eaecf0; border: 1px solid #a2a9b1; padding: 3px 8px; }}
  table.data td {{ border: 1px solid #a2a9b1; padding: 3px 8px; }}
  td.num {{ text-align: right; font-family: "DejaVu Sans Mono", monospace; }}
  .note {{ padding: 8px 12px; border-left: 4px solid #72777d; margin: 8px 0; font-size: 14px; }}
  pre {{ background: #f8f9fa; border: 1px solid #eaecf0; padding: 8px; font-size: 13px; white-space: pre-wrap; }}
  body.article {{ font-size: 17px; line-height: 1.75; }}
  body.article .wrap {{ max-width: 1180px; margin: 0 auto; }}
  body.article .swatch {{ height: 60px; background: #dbe6f7; }}
</style></head>
<body class={kind}>
<header><h1>deskbox bench: a text-heavy page</h1>
<button id={CLICK_TARGET_ID}>Click target</button><span id=clicks>clicks: 0</span></header>
<div class=wrap><nav><ul>{nav}</ul></nav>
<article><table class=infobox><caption>Bench facts</caption><tr><td colspan=2><div class=swatch></div></td></tr>{facts}</table>
{''.join(sections)}</article></div>
<script>
  let n = 0;
  document.getElementById("{CLICK_TARGET_ID}").addEventListener("click", (ev) => {{
    n += 1;
    document.getElementById("clicks").textContent = "clicks: " + n;
    fetch("/clicked?n=" + n + "&x=" + ev.clientX + "&y=" + ev.clientY, {{method: "POST", keepalive: true}});
  }});
</script>
</body></html>
"""


class PageServer:
    """Serves the page on 127.0.0.1 and timestamps each click report on arrival."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.port = host, port
        self.html = {kind: render_page(kind) for kind in PAGES}
        self.clicks: list[tuple[float, dict]] = []
        self._new_click = asyncio.Event()
        self._runner: web.AppRunner | None = None

    def url(self, kind: str = "article") -> str:
        return f"http://{self.host}:{self.port}/{kind}"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/{kind}", self._page)
        app.router.add_post("/clicked", self._clicked)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _page(self, request: web.Request) -> web.Response:
        html = self.html.get(request.match_info["kind"])
        if html is None:
            raise web.HTTPNotFound()
        return web.Response(text=html, content_type="text/html")

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


def free_port() -> int:
    """One free loopback port (several for one session: ``deskbox.common.net.free_ports``,
    which keeps them apart)."""
    from deskbox.common.net import free_ports

    return free_ports(1)[0]


def serve_html(render) -> tuple[object, int]:
    """A small page server on loopback, in a thread: ``render(path) -> bytes`` answers
    every GET. Returns the server (``shutdown()`` it) and its port."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(render(self.path))

        def log_message(self, *args) -> None:
            pass

    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, port
