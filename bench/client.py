"""What the one client costs (issue 49), in one run on one session, each against its
baseline, alternated:

- **typed answers**: each call whose answer became a typed model (``observe()`` an
  ``Observed``, ``snapshot()`` a ``Snapshot``, every element of the observation a model)
  against the same call read as the generic ``Answer`` the client answered before.
  ``scene()`` was typed before and is the control. Per page size: the whole call
  (request, answer, model) and the model alone (``model_validate`` of the same JSON).
- **the provider's session API**: ``Environment.call`` (``GET /api/v1/session``) through
  the environment's sync ``deskbox.Client`` (kept between calls, on the loop every client
  of the process shares), against the urllib call it made before, from one thread and
  from 24 at once (a runner's sessions).

``python -m bench.client [--sizes 1000,5000] [--iterations N]``: starts its own session
(1920x1080, Chromium on bench/bridge.py's generated pages), writes
bench/results/client.json and client.md."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from deskbox import AsyncClient, answers
from deskbox.common.net import free_ports
from deskbox.provider import Environment, EnvironmentSpec
from deskbox.session.spawn import SessionFailed, SpawnedSession

from .bridge import serve_generated_pages
from .report import write_results
from .stats import summarize

RESULTS = Path(__file__).resolve().parent / "results"


async def _show(desk: AsyncClient, url: str, n: int) -> None:
    """The tab on ``url`` until the scene lists at least half of its elements."""
    await desk.navigate(url)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        scene = await desk.scene("agent-turn")
        if sum(e.source == "cdp" for e in scene.ax) > n // 2:
            return
        await asyncio.sleep(0.5)
    raise SessionFailed(f"the {n}-element page did not reach the scene in 90 s")


async def rows(desk: AsyncClient, n: int, iterations: int) -> list[dict]:
    kept = await desk.snapshot_save(label="bench", ttl_s=600)
    calls = {
        # name: (typed call, the same request, its typed model)
        "observe": (lambda: desk.observe(mode="active"),
                    lambda: desk.request("scene", "GET", "/api/v1/observe", query={"mode": "active"}),
                    answers.Observed),
        "snapshot": (lambda: desk.snapshot(kept.id),
                     lambda: desk.request("scene", "GET", f"/api/v1/snapshots/{kept.id}"), answers.Snapshot),
        "scene (control)": (lambda: desk.scene("active"),
                            lambda: desk.request("scene", "GET", "/api/v1/scene", query={"mode": "active"}),
                            answers.Scene),
    }
    out = []
    for name, (typed, raw, model) in calls.items():
        times: dict[str, list[float]] = {"typed": [], "generic": [], "parse_typed": [], "parse_generic": []}
        for i in range(iterations):
            order = ("typed", "generic") if i % 2 == 0 else ("generic", "typed")
            for way in order:
                t0 = time.perf_counter()
                if way == "typed":
                    await typed()
                else:
                    answers.Answer.model_validate(await raw())
                times[way].append(time.perf_counter() - t0)
            body = await raw()
            for way, parse in (("parse_typed", model), ("parse_generic", answers.Answer)):
                t0 = time.perf_counter()
                parse.model_validate(body)
                times[way].append(time.perf_counter() - t0)
        elements = len((body.get("observation") or {}).get("elements") or body.get("ax") or ())
        out.append({"elements": n, "call": name, "answer_elements": elements,
                    **{way: summarize(t) for way, t in times.items()}})
    await desk.snapshot_delete(kept.id)
    return out


class _Reached(Environment):
    """A session this bench started, reached as the provider reaches one."""

    backend = "bench"

    def end(self) -> None:
        self.stopped = True


def provider_rows(scene: str, iterations: int, threads: int = 24) -> list[dict]:
    """``GET /api/v1/session`` as the provider calls it: through the environment's client
    (now) and over urllib (before), from one thread, then from ``threads`` at once."""
    host, port = scene.split("://", 1)[1].rsplit(":", 1)
    with _Reached("bench", EnvironmentSpec(token=None, osworld=False), host, {"scene": int(port)}) as env:
        return _provider_rows(env, iterations, threads)


def _provider_rows(env: Environment, iterations: int, threads: int) -> list[dict]:
    ways = {"client": lambda: env.call("GET", "/api/v1/session"),
            "urllib": lambda: json.loads(env.request("GET", "scene", "/api/v1/session")[1])}
    times: dict[str, list[float]] = {way: [] for way in ways}
    for i in range(iterations * 5):
        for way in (("client", "urllib") if i % 2 == 0 else ("urllib", "client")):
            t0 = time.perf_counter()
            ways[way]()
            times[way].append(time.perf_counter() - t0)
    rows = [{"call": "GET /api/v1/session, one thread", "way": way, **summarize(t)} for way, t in times.items()]
    for way in ("client", "urllib", "client", "urllib"):  # (twice each, alternated: the second pair is kept)
        def one_thread(call) -> list[float]:
            took = []
            for _ in range(iterations):
                t0 = time.perf_counter()
                call()
                took.append(time.perf_counter() - t0)
            return took
        t0 = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            took = [t for chunk in pool.map(one_thread, [ways[way]] * threads) for t in chunk]
        wall = time.perf_counter() - t0
        row = {"call": f"GET /api/v1/session, {threads} threads at once", "way": way, **summarize(took),
               "wall_s": round(wall, 3)}
        rows = [r for r in rows if not (r["call"] == row["call"] and r["way"] == way)] + [row]
    return rows


async def run(args: argparse.Namespace) -> list[dict]:
    runner, port = await serve_generated_pages()
    ports = free_ports(4)
    session = SpawnedSession(["--output", "1920x1080", "--desktopd-port", str(ports[0]), "--cdp-port", str(ports[1]),
                              "--bridge-port", str(ports[2]), "--scene-port", str(ports[3])],
                             prefix="deskbox-bench-client-")
    out: dict = {"rows": [], "provider": []}
    try:
        await asyncio.to_thread(session.start)
        async with AsyncClient.from_state_file(session.state_file, timeout=600) as desk:
            for n in args.sizes:
                await _show(desk, f"http://127.0.0.1:{port}/page/{n}", n)
                out["rows"] += await rows(desk, n, args.iterations)
        out["provider"] = await asyncio.to_thread(provider_rows, session.state["scene"], args.iterations)
    finally:
        await asyncio.to_thread(session.stop)
        await runner.cleanup()
    return out


def _ms(row: dict, way: str) -> float:
    return row[way]["median_ms"]


def markdown(result: dict) -> str:
    lines = [f"# The one client: typed answers against the generic Answer ({result['meta']['when']}, load {result['load']})", "",
             "Medians in ms of one run, the two ways alternated. Baseline: the generic `Answer` the client "
             "answered before issue 49's typed models.", "",
             "| page elements | call | elements in the answer | whole call, typed | whole call, generic | ratio "
             "| model alone, typed | model alone, generic |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        lines.append(f"| {r['elements']:,} | {r['call']} | {r['answer_elements']:,} | {_ms(r, 'typed'):.1f} "
                     f"| {_ms(r, 'generic'):.1f} | {_ms(r, 'typed') / _ms(r, 'generic'):.2f} "
                     f"| {_ms(r, 'parse_typed'):.2f} | {_ms(r, 'parse_generic'):.2f} |")
    lines += ["", "The provider's session API through the sync client against urllib (the baseline), medians "
              "and p95 in ms of each call:", "",
              "| call | way | n | median | p95 | wall, s |", "|---|---|---:|---:|---:|---:|"]
    for r in result["provider"]:
        lines.append(f"| {r['call']} | {r['way']} | {r['n']} | {r['median_ms']:.2f} | {r['p95_ms']:.2f} "
                     f"| {r.get('wall_s', '-')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.client", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,5000", help="page sizes in DOM elements, comma-separated")
    p.add_argument("--iterations", type=int, default=20, help="timed rounds per call and way")
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    before = os.getloadavg()[0]
    try:
        result: dict = asyncio.run(run(args))
    except SessionFailed as exc:
        print(f"bench.client: {exc}", file=sys.stderr)
        return 1
    result["load"] = f"{before:.2f} / {os.getloadavg()[0]:.2f}"
    result["meta"] = {"when": time.strftime("%Y-%m-%d %H:%M:%S %z"), "iterations": args.iterations,
                      "baselines": {"typed answers": "the same call read as the generic deskbox.answers.Answer",
                                    "provider": "the same call over urllib, as Environment.call made it before"}}
    write_results(args.results, "client", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
