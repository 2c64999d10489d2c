"""The observer toolset (issue 16): observing with a token against a full observation,
act-and-observe against an agent that acts, sleeps and reads the whole Scene, and the
prompt text's tokens against Playwright MCP's snapshot of the same page.

``python -m bench.toolset [--sizes 1000,5000] [--iterations N]``: starts its own session
(1920x1080, Chromium on bench/bridge.py's generated pages), writes
bench/results/toolset.json and toolset.md, prints the tables. Rows, in one run:

- **observe**, per page size: one small change on the page (a click through desktopd in
  a row, which relabels that row's button), then ``GET /api/v1/observe?mode=agent-turn``
  (the whole state and a token: the baseline) and ``...&since=TOKEN`` (only what changed
  since the token taken before the change), their order swapped every round. Both ask
  for ``mode=agent-turn``, so both build a fresh Scene: the difference is the diff and
  the smaller answer, not a cached scene.
- **act and observe**, on the 1,000-element page: from sending the action to having the
  settled change, ``POST /api/v1/act_and_observe {target}`` on a button found through
  ``GET /api/v1/find``, against the naive agent's loop (the baseline): ``POST
  /api/v1/act {target, settle_ms: 0}``, a fixed 2 s sleep, ``GET /api/v1/scene?mode=
  agent-turn``. Alternated, a different button each time.
- **tokens**, per page size: ``GET /api/v1/scene/text?mode=agent-turn`` against the
  snapshot Playwright MCP itself makes of the same page (``npx @playwright/mcp`` at a
  pinned version, attached to the session's Chromium over CDP, its ``browser_snapshot``
  tool called over MCP's stdio transport), as it comes and with ``--snapshot-boxes``
  (deskbox's lines carry boxes). Counted in characters and in tokens of the tokenizer
  file the ``anthropic`` 0.37.1 wheel bundles (Claude's older tokenizer: later models
  count differently, so read the ratio, not the absolute numbers). When npx cannot run
  Playwright MCP, the results say why and fall back to Python Playwright's
  ``locator("body").aria_snapshot()``, the format Playwright MCP builds on, labelled so.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from aiohttp import ClientSession, ClientTimeout

from deskbox.session.spawn import SessionFailed, SpawnedSession

from .bridge import serve_generated_pages
from .page import free_port
from .report import write_results
from .scene import _wait
from .stats import summarize

RESULTS = Path(__file__).resolve().parent / "results"
PLAYWRIGHT_MCP = "0.0.83"  # @playwright/mcp, pinned: its snapshot format changes between releases
NAIVE_SLEEP_S = 2.0
AFTER_CHANGE_S = 0.3  # the page relabels its button within a frame; then the round is timed
BUTTONS = "button[source=cdp]"


class Failed(RuntimeError):
    pass


async def _get(http: ClientSession, url: str) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    async with http.get(url) as resp:
        body = await resp.read()
        status = resp.status
    took = time.perf_counter() - t0
    if status != 200:
        raise Failed(f"GET {url} -> {status}: {body[:300]!r}")
    return took, body


async def _post(http: ClientSession, url: str, payload: dict) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    async with http.post(url, json=payload) as resp:
        body = await resp.read()
        status = resp.status
    took = time.perf_counter() - t0
    if status != 200:
        raise Failed(f"POST {url} {payload} -> {status}: {body[:300]!r}")
    return took, body


async def _buttons(http: ClientSession, scene: str) -> list[dict]:
    """The page's buttons wholly in view, in reading order."""
    _, body = await _get(http, f"{scene}/api/v1/find?selector={quote(BUTTONS)}&limit=1000")
    found = [m for m in json.loads(body)["matches"] if m["visibility"] == "visible" and m["bbox"]]
    if len(found) < 8:
        raise Failed(f"only {len(found)} buttons of the page in view")
    return found


async def _show(http: ClientSession, bridge: str, scene: str, url: str, n: int) -> None:
    """Navigate the browser's tab to ``url`` and wait until the Scene lists the page."""
    await _post(http, bridge + "/navigate", {"url": url})
    counts: list[int] = []

    async def listed():
        _, body = await _get(http, scene + "/api/v1/scene?mode=agent-turn")
        data = json.loads(body)
        counts.append(sum(e["source"] == "cdp" for e in data["ax"]))
        return counts[-1] > n // 2 and len(counts) > 1 and counts[-1] == counts[-2]

    await _wait(listed, 90, f"the {n}-element page in the Scene")
    await asyncio.sleep(1.0)


def _diff_size(changes: dict | None) -> int:
    """Entries in a compact diff (added, removed, changed, focus ...)."""
    if not changes:
        return 0
    return sum(len(v) if isinstance(v, list) else v is not None for v in changes.values())


def _relabelled(changes: dict | None) -> bool:
    """Whether a compact diff holds a button that the page relabelled."""
    return any(str((c.get("fields") or {}).get("name", {}).get("to") or "").startswith("Clicked ")
               for c in (changes or {}).get("changed") or ())


# -- observe: with since against a full one ---------------------------------------------


async def observe_rows(http: ClientSession, desktopd: str, scene: str, n: int, iterations: int) -> dict:
    buttons = await _buttons(http, scene)
    full_url = f"{scene}/api/v1/observe?mode=agent-turn"
    _, body = await _get(http, full_url)
    base = json.loads(body)["token"]
    times: dict[str, list[float]] = {"full": [], "since": []}
    sizes: dict[str, list[int]] = {"full": [], "since": []}
    diff_entries, empty, relabelled = [], 0, 0
    for i in range(iterations + 1):  # round 0 warms up, untimed
        print(f"bench.toolset: observe, {n} elements, round {i}/{iterations}", file=sys.stderr, flush=True)
        b = buttons[(7 * i) % len(buttons)]
        x, y, w, h = b["bbox"]
        await _post(http, desktopd + "/api/v1/pointer", {"action": "click", "x": x + w / 2, "y": y + h / 2})
        await asyncio.sleep(AFTER_CHANGE_S)
        got: dict[str, tuple[float, bytes]] = {}
        for key in (("full", "since") if i % 2 == 0 else ("since", "full")):
            got[key] = await _get(http, full_url if key == "full" else f"{full_url}&since={base}")
        answer = json.loads(got["since"][1])
        if answer["format"] == "full":
            raise Failed(f"observe?since={base} answered a full observation")
        base = answer["token"]
        if i == 0:
            continue
        for key, (took, body) in got.items():
            times[key].append(took)
            sizes[key].append(len(body))
        diff_entries.append(_diff_size(answer["changes"]))
        empty += answer["unchanged"] or not diff_entries[-1]
        relabelled += _relabelled(answer["changes"])
    full, since = summarize(times["full"]), summarize(times["since"])
    bytes_full, bytes_since = _median(sizes["full"]), _median(sizes["since"])
    return {"elements": n, "full": {**full, "bytes_median": bytes_full},
            "since": {**since, "bytes_median": bytes_since},
            "x_median": _ratio(since["median_ms"], full["median_ms"]), "x_p95": _ratio(since["p95_ms"], full["p95_ms"]),
            "x_bytes": _ratio(bytes_since, bytes_full), "diff_entries_median": _median(diff_entries),
            "empty_diffs": empty, "relabel_in_diff": relabelled}


def _median(values: list[int]) -> int | None:
    return int(statistics.median(values)) if values else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else round(a / b, 4)


# -- act and observe, against act + sleep + scene ---------------------------------------


async def act_rows(http: ClientSession, scene: str, n: int, iterations: int) -> dict:
    times: dict[str, list[float]] = {"act_and_observe": [], "naive": []}
    seen: dict[str, int] = {"act_and_observe": 0, "naive": 0}
    labels: set[str] = set()
    bytes_ao: list[int] = []
    for i in range(iterations + 1):  # round 0 warms up, untimed
        print(f"bench.toolset: act, {n} elements, round {i}/{iterations}", file=sys.stderr, flush=True)
        buttons = await _buttons(http, scene)  # (untimed: an agent finds before it acts)
        order = ("act_and_observe", "naive") if i % 2 == 0 else ("naive", "act_and_observe")
        for j, key in enumerate(order):
            target = buttons[(11 * i + 5 * j) % len(buttons)]["id"]
            if key == "act_and_observe":
                took, body = await _post(http, scene + "/api/v1/act_and_observe", {"target": target})
                answer = json.loads(body)
                saw = _relabelled(answer["changes"])
                size = len(body)
            else:
                t0 = time.perf_counter()
                await _post(http, scene + "/api/v1/act", {"target": target, "settle_ms": 0})
                await asyncio.sleep(NAIVE_SLEEP_S)
                _, body = await _get(http, scene + "/api/v1/scene?mode=agent-turn")
                took = time.perf_counter() - t0
                now = {e["name"] for e in json.loads(body)["ax"] if str(e.get("name") or "").startswith("Clicked ")}
                saw = bool(now - labels)
                labels |= now
                size = None
            if key == "act_and_observe":
                # (what act_and_observe relabelled is not new to the naive check above)
                _, body = await _get(http, scene + "/api/v1/scene?mode=active")
                labels |= {e["name"] for e in json.loads(body)["ax"]
                           if str(e.get("name") or "").startswith("Clicked ")}
            if i == 0:
                continue
            times[key].append(took)
            seen[key] += saw
            if size is not None:
                bytes_ao.append(size)
    ao, naive = summarize(times["act_and_observe"]), summarize(times["naive"])
    return {"elements": n, "act_and_observe": {**ao, "change_seen": seen["act_and_observe"],
                                               "bytes_median": _median(bytes_ao)},
            "naive": {**naive, "change_seen": seen["naive"]},
            "x_median": _ratio(ao["median_ms"], naive["median_ms"]), "x_p95": _ratio(ao["p95_ms"], naive["p95_ms"])}


# -- tokens: the prompt text against Playwright MCP's snapshot ----------------------------


def _tokenizer() -> tuple[object | None, str]:
    """(something with ``encode(text).ids``, its name) or (None, why not)."""
    try:
        import anthropic
        import tokenizers
        from anthropic._tokenizers import sync_get_tokenizer
    except ImportError as exc:
        return None, f"no tokenizer: {exc} (pip install 'anthropic==0.37.1', the bench extra)"
    return sync_get_tokenizer(), (f"tokenizer.json bundled in anthropic {anthropic.__version__} (Claude's older "
                                  f"tokenizer), read with tokenizers {tokenizers.__version__}")


def _count(tok, text: str) -> dict:
    return {"chars": len(text), "tokens": None if tok is None else len(tok.encode(text).ids)}


def _snapshot_text(result) -> tuple[str, str, str | None]:
    """(the whole text Playwright MCP answered, its YAML snapshot, the page URL it names)."""
    if getattr(result, "is_error", False) or getattr(result, "isError", False):
        raise Failed(f"browser_snapshot failed: {result.content!r}"[:500])
    text = "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")
    yaml = re.search(r"```yaml\n(.*?)```", text, re.S)
    if yaml is None:
        raise Failed(f"no YAML snapshot in Playwright MCP's answer: {text[:300]!r}")
    url = re.search(r"Page URL: (\S+)", text)
    return text, yaml.group(1), url.group(1) if url else None


class PlaywrightMcp:
    """``npx @playwright/mcp`` attached to the session's Chromium, spoken to over stdio."""

    def __init__(self, cdp: str, folder: Path, name: str, extra: list[str]) -> None:
        self.cdp, self.folder, self.name, self.extra = cdp, folder, name, extra
        self.notes: list[str] = []

    async def __aenter__(self) -> "PlaywrightMcp":
        from mcp import ClientSession as McpSession
        from mcp import StdioServerParameters, stdio_client

        self._stack = contextlib.AsyncExitStack()
        await self._stack.__aenter__()
        try:
            self.log = self._stack.enter_context(open(self.folder / f"mcp-{self.name}.log", "w"))
            params = StdioServerParameters(command="npx", args=[
                "-y", f"@playwright/mcp@{PLAYWRIGHT_MCP}", "--cdp-endpoint", self.cdp,
                "--output-dir", str(self.folder), *self.extra], env=dict(os.environ), cwd=str(self.folder))
            read, write = await self._stack.enter_async_context(stdio_client(params, errlog=self.log))
            self.mcp = await self._stack.enter_async_context(McpSession(read, write))
            info = await asyncio.wait_for(self.mcp.initialize(), 300)
            self.server = f"{info.server_info.name} {info.server_info.version}"
        except BaseException:
            await self._stack.__aexit__(*sys.exc_info())
            raise
        return self

    async def __aexit__(self, *exc) -> None:
        await self._stack.__aexit__(*exc)

    async def snapshot(self, url: str) -> tuple[str, str]:
        """(its whole answer, the YAML snapshot) of the tab showing ``url``."""
        whole, yaml, at = _snapshot_text(await self.mcp.call_tool("browser_snapshot", {}))
        if at != url:
            # It attached to another tab, or opened its own: show it the same page.
            self.notes.append(f"its tab showed {at}, so it was sent to {url} with browser_navigate")
            await self.mcp.call_tool("browser_navigate", {"url": url})
            await asyncio.sleep(1.0)
            whole, yaml, at = _snapshot_text(await self.mcp.call_tool("browser_snapshot", {}))
            if at != url:
                raise Failed(f"Playwright MCP snapshots {at}, not {url}")
        return whole, yaml


async def _aria_snapshot(cdp: str, url: str) -> str:
    """The fallback: Python Playwright's aria_snapshot of the page, over CDP."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.connect_over_cdp(cdp)
        page = next(p for c in browser.contexts for p in c.pages if p.url == url)
        return await page.locator("body").aria_snapshot()


async def token_rows(http: ClientSession, bridge: str, scene: str, cdp: str, pages: dict[int, str],
                     folder: Path) -> dict:
    tok, tokenizer = _tokenizer()
    texts: dict[int, str] = {}
    out: dict = {"tokenizer": tokenizer, "playwright_mcp": None, "fallback": None, "notes": [], "pages": []}
    flavours = {"plain": [], "boxes": ["--snapshot-boxes"]}
    got: dict[str, dict[int, tuple[str, str]]] = {k: {} for k in flavours}
    try:
        async with contextlib.AsyncExitStack() as stack:
            servers = {k: await stack.enter_async_context(PlaywrightMcp(cdp, folder, k, v))
                       for k, v in flavours.items()}
            out["playwright_mcp"] = {"package": f"@playwright/mcp@{PLAYWRIGHT_MCP}",
                                     "server": servers["plain"].server,
                                     "command": f"npx -y @playwright/mcp@{PLAYWRIGHT_MCP} --cdp-endpoint "
                                                "http://127.0.0.1:<the session's CDP port>",
                                     "cdp_endpoint": cdp}
            for n, url in pages.items():
                print(f"bench.toolset: tokens, {n} elements", file=sys.stderr, flush=True)
                await _show(http, bridge, scene, url, n)
                _, body = await _get(http, scene + "/api/v1/scene/text?mode=agent-turn")
                texts[n] = body.decode()
                for k, server in servers.items():
                    got[k][n] = await server.snapshot(url)
            out["notes"] = sorted({f"{k}: {note}" for k, s in servers.items() for note in s.notes})
    except Exception as exc:  # npx, npm or the server could not run here: say why, then fall back
        why = f"{type(exc).__name__}: {exc}"
        log = folder / "mcp-plain.log"
        if log.exists():
            why += f"; its stderr ended: {log.read_text(errors='replace')[-400:]!r}"
        out["fallback"] = {"why": why, "instead": "Python Playwright's locator('body').aria_snapshot() over "
                                                  "connect_over_cdp (the format Playwright MCP builds on)"}
        got = {"aria_snapshot": {}}
        for n, url in pages.items():
            await _show(http, bridge, scene, url, n)
            _, body = await _get(http, scene + "/api/v1/scene/text?mode=agent-turn")
            texts[n] = body.decode()
            snap = await _aria_snapshot(cdp, url)
            got["aria_snapshot"][n] = (snap, snap)
    for n in pages:
        row = {"elements": n, "deskbox": _count(tok, texts[n]), "lines": texts[n].count("\n")}
        for k, per in got.items():
            whole, yaml = per[n]
            row[k] = {**_count(tok, yaml), "whole_answer_chars": len(whole), "lines": yaml.count("\n") + 1}
            row[k]["x_tokens"] = _ratio(row[k]["tokens"], row["deskbox"]["tokens"])
            row[k]["x_chars"] = _ratio(row[k]["chars"], row["deskbox"]["chars"])
        out["pages"].append(row)
    first = next(iter(pages))
    out["samples"] = {"deskbox": texts[first][:1500], **{k: per[first][1][:1500] for k, per in got.items()}}
    return out


# -- the run --------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> dict:
    runner, port = await serve_generated_pages()
    ports = [free_port() for _ in range(4)]
    session = SpawnedSession(["--output", "1920x1080", "--desktopd-port", str(ports[0]), "--cdp-port", str(ports[1]),
                              "--bridge-port", str(ports[2]), "--scene-port", str(ports[3])],
                             prefix="deskbox-bench-toolset-")
    pages = {n: f"http://127.0.0.1:{port}/page/{n}" for n in args.sizes}
    result: dict = {"observe": [], "act": None, "tokens": None}
    folder = Path(tempfile.mkdtemp(prefix="deskbox-bench-mcp-"))
    try:
        await asyncio.to_thread(session.start)
        state = session.state
        desktopd, bridge, scene, cdp = state["desktopd"], state["bridge"], state["scene"], state["cdp"]
        async with ClientSession(timeout=ClientTimeout(total=600)) as http:
            for n, url in pages.items():
                await _show(http, bridge, scene, url, n)
                result["observe"].append(await observe_rows(http, desktopd, scene, n, args.iterations))
                if n == args.act_size:
                    await _show(http, bridge, scene, url, n)  # (a fresh page: no button relabelled yet)
                    result["act"] = await act_rows(http, scene, n, args.iterations)
            # Last: Playwright MCP attaches to the same browser and may change its tab.
            result["tokens"] = await token_rows(http, bridge, scene, cdp, pages, folder)
    finally:
        await asyncio.to_thread(session.stop)
        await runner.cleanup()
        shutil.rmtree(folder, ignore_errors=True)  # (Playwright MCP's logs: the results quote them on failure)
    return result


def _f(v: float | None, digits: int = 0) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def markdown(result: dict) -> str:
    meta = result["meta"]
    lines = [f"# Observer toolset ({meta['when']})", "",
             f"One 1920x1080 session, Chromium on generated pages; {meta['iterations']} timed rounds per row after "
             f"one untimed, rows alternated. Load average before / after: {result['load']}.", "",
             "## observe with since against a full observe (baseline)", "",
             "Each round: a click in a row of the page (its button relabelled), then both requests, order swapped "
             "every round; both `mode=agent-turn` (a fresh Scene each).", "",
             "| elements | row | median ms | p95 ms | bytes | x median | x p95 | x bytes | diff entries |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["observe"]:
        lines.append(f"| {r['elements']:,} | full observe (baseline) | {_f(r['full']['median_ms'], 1)} | "
                     f"{_f(r['full']['p95_ms'], 1)} | {_f(r['full']['bytes_median'])} | 1 | 1 | 1 | |")
        lines.append(f"| {r['elements']:,} | observe?since=TOKEN | {_f(r['since']['median_ms'], 1)} | "
                     f"{_f(r['since']['p95_ms'], 1)} | {_f(r['since']['bytes_median'])} | {_f(r['x_median'], 2)} | "
                     f"{_f(r['x_p95'], 2)} | {_f(r['x_bytes'], 4)} | {r['diff_entries_median']} |")
    lines += ["", "Diffs: " + "; ".join(f"{r['elements']:,} elements, {r['empty_diffs']} empty, the relabelled "
                                        f"button in {r['relabel_in_diff']} of {r['since']['n']}"
                                        for r in result["observe"]) + ".", ""]
    a = result.get("act")
    if a:
        lines += [f"## act and observe against act + {NAIVE_SLEEP_S:g} s sleep + scene (baseline), "
                  f"{a['elements']:,} elements", "",
                  "From sending the action to having the settled change.", "",
                  "| row | median ms | p95 ms | x median | x p95 | change seen |", "|---|---:|---:|---:|---:|---:|",
                  f"| act {{settle_ms: 0}} + {NAIVE_SLEEP_S:g} s sleep + scene agent-turn (baseline) | "
                  f"{_f(a['naive']['median_ms'])} | {_f(a['naive']['p95_ms'])} | 1 | 1 | "
                  f"{a['naive']['change_seen']} of {a['naive']['n']} |",
                  f"| act_and_observe {{target}} | {_f(a['act_and_observe']['median_ms'])} | "
                  f"{_f(a['act_and_observe']['p95_ms'])} | {_f(a['x_median'], 2)} | {_f(a['x_p95'], 2)} | "
                  f"{a['act_and_observe']['change_seen']} of {a['act_and_observe']['n']} |", ""]
    t = result.get("tokens")
    if t:
        mcp = t.get("playwright_mcp")
        source = (f"`{mcp['command']}` (it names itself {mcp['server']}), its `browser_snapshot` tool over "
                  "MCP stdio; the YAML part of its answer" if mcp else "**fallback**: " + t["fallback"]["instead"])
        lines += ["## Prompt text against Playwright MCP's snapshot of the same page", "",
                  f"deskbox: `GET /api/v1/scene/text?mode=agent-turn` (the whole desktop: Chromium's own UI too, "
                  f"each element with its box). Playwright MCP: {source}. Tokens: {t['tokenizer']}.", ""]
        if t.get("fallback"):
            lines += [f"Playwright MCP did not run here: {t['fallback']['why']}", ""]
        lines += ["| elements | text | characters | tokens | x deskbox (tokens) |", "|---:|---|---:|---:|---:|"]
        names = {"plain": "Playwright MCP browser_snapshot",
                 "boxes": "Playwright MCP browser_snapshot, --snapshot-boxes",
                 "aria_snapshot": "Playwright aria_snapshot() (fallback)"}
        for r in t["pages"]:
            lines.append(f"| {r['elements']:,} | deskbox scene/text | {_f(r['deskbox']['chars'])} | "
                         f"{_f(r['deskbox']['tokens'])} | 1 |")
            for k, name in names.items():
                if k in r:
                    lines.append(f"| {r['elements']:,} | {name} | {_f(r[k]['chars'])} | {_f(r[k]['tokens'])} | "
                                 f"{_f(r[k]['x_tokens'], 2)} |")
        if t.get("notes"):
            lines += ["", "Tabs: " + "; ".join(t["notes"]) + "."]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.toolset", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,5000", help="page sizes in DOM elements, comma-separated")
    p.add_argument("--act-size", type=int, default=1000, help="the page size of the act rows")
    p.add_argument("--iterations", type=int, default=15, help="timed rounds per row")
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    before = os.getloadavg()[0]
    try:
        result = asyncio.run(run(args))
    except (SessionFailed, Failed) as exc:
        print(f"bench.toolset: {exc}", file=sys.stderr)
        return 1
    result["load"] = f"{before:.2f} / {os.getloadavg()[0]:.2f}"
    result["meta"] = {"when": time.strftime("%Y-%m-%d %H:%M:%S %z"), "iterations": args.iterations,
                      "output": "1920x1080", "naive_sleep_s": NAIVE_SLEEP_S,
                      "baselines": {"observe": "a full GET /api/v1/observe?mode=agent-turn",
                                    "act": f"POST /api/v1/act {{settle_ms: 0}} + {NAIVE_SLEEP_S:g} s sleep + "
                                           "GET /api/v1/scene?mode=agent-turn",
                                    "tokens": "deskbox's GET /api/v1/scene/text?mode=agent-turn"}}
    write_results(args.results, "toolset", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
