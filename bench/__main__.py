"""Run the bench: ``python -m bench [--iterations N] [--encoder-iterations N] [--no-encoders]``."""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from aiohttp import ClientSession, ClientTimeout, TCPConnector
from PIL import Image

from .encoders import run_encoders
from .live import LiveBench
from .page import PAGES, PageServer
from .report import markdown, screenshot_rows, write_results
from .session import BenchSession, SessionFailed

RESULTS = Path(__file__).resolve().parent / "results"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--iterations", type=int, default=30, help="samples per row (default 30)")
    p.add_argument("--encoder-iterations", type=int, default=None, help="samples per encoder (default: --iterations)")
    p.add_argument("--no-encoders", action="store_true", help="skip the in-process encoder comparison")
    p.add_argument("--output", default="1920x1080", help="the display, WxH[@S] (default 1920x1080)")
    p.add_argument("--page", choices=PAGES, default="article",
                   help="article: a text column with wide margins (default); dense: text 1500 px wide and a gradient")
    p.add_argument("--desktopd-port", type=int, default=18580)
    p.add_argument("--cdp-port", type=int, default=19580)
    p.add_argument("--bridge-port", type=int, default=18582, help="the CDP bridge's port, where `deskbox up` has one")
    p.add_argument("--results", type=Path, default=RESULTS, help="where desktopd.json and desktopd.md go")
    args = p.parse_args(argv)
    if args.iterations < 1:
        p.error("--iterations must be at least 1")
    args.encoder_iterations = args.encoder_iterations or args.iterations
    return args


async def measure(args: argparse.Namespace) -> dict:
    page = PageServer()
    await page.start()
    session = BenchSession(page.url(args.page), output=args.output, desktopd_port=args.desktopd_port, cdp_port=args.cdp_port,
                           bridge_port=args.bridge_port)
    live: LiveBench | None = None
    try:
        print(f"bench: starting a session ({args.output}) on {page.url(args.page)} ...", file=sys.stderr, flush=True)
        await asyncio.to_thread(session.start)
        connector = TCPConnector(limit=1)
        async with ClientSession(connector=connector, timeout=ClientTimeout(total=30)) as http:
            live = LiveBench(session, page, http, args.iterations)
            rss_start = live.rss()
            await live.wait_ready()
            await live.warm_up()
            print(f"bench: screenshots x {args.iterations} ...", file=sys.stderr, flush=True)
            samples = await live.screenshots()
            print(f"bench: clicks x {args.iterations} ...", file=sys.stderr, flush=True)
            samples |= await live.clicks()
            rss = live.rss()
            live.server_times(samples)
            assert live.frame is not None
            return {"samples": samples, "rss": rss, "rss_start": rss_start, "frame": live.frame, "output_name": live.output_name,
                    "grim_jpeg": live.grim_jpeg, "probe_error": live.probe_error}
    except Exception:
        print(f"bench: session log (tail):\n{session.log_tail()}", file=sys.stderr)
        raise
    finally:
        if live is not None:
            live.cleanup()
        await asyncio.to_thread(session.stop)
        await page.stop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.time()
    load_before = [round(v, 2) for v in os.getloadavg()]
    try:
        live = asyncio.run(measure(args))
    except SessionFailed as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    frame: np.ndarray = live["frame"]
    encoders = []
    if not args.no_encoders:
        print(f"bench: encoders x {args.encoder_iterations} ...", file=sys.stderr, flush=True)
        encoders = run_encoders(frame, args.encoder_iterations)
    png = io.BytesIO()
    Image.fromarray(frame).save(png, "PNG", compress_level=1)
    result = {
        "meta": {
            "when": time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(started)),
            "duration_s": round(time.time() - started, 1),
            "output": args.output,
            "output_name": live["output_name"],
            "iterations": args.iterations,
            "encoder_iterations": args.encoder_iterations if encoders else 0,
            "page": f"'{args.page}': a generated text-heavy article (bench/page.py), served from 127.0.0.1",
            "grim": {"png": "grim -t png -o OUT FILE (default level 6)", "png_l1": "grim -t png -l 1 -o OUT FILE",
                     "ppm": "grim -t ppm -o OUT FILE",
                     "jpeg_supported": live["grim_jpeg"]},
            "cpus": os.cpu_count(),
            "loadavg_before": load_before,
            "loadavg_after": [round(v, 2) for v in os.getloadavg()],
            "python": platform.python_version(),
            "step_rows_error": live["probe_error"],
            "encoder_settings": _encoder_settings(),
        },
        "rows": screenshot_rows(live["samples"]),
        "rss": live["rss"],
        "rss_start": live["rss_start"],
        "encoders": encoders,
    }
    result["meta"]["duration_s"] = round(time.time() - started, 1)
    write_results(args.results, "desktopd", result, markdown(result))
    print(f"bench: wrote {args.results / 'desktopd.json'} and {args.results / 'desktopd.md'} "
          f"in {result['meta']['duration_s']} s", file=sys.stderr)
    return 0


def _encoder_settings() -> dict:
    from deskbox.desktopd import encode

    return {
        "png": {"writer": "deskbox (filter NONE)", "deflate": encode.DEFLATE.__name__,
                "level": encode.PNG_LEVEL, "bands": encode.PNG_BANDS},
        "jpeg": {"encoder": "Pillow", "quality": encode.DEFAULT_QUALITY["jpeg"]},
        "webp": {"encoder": "Pillow", "quality": encode.DEFAULT_QUALITY["webp"], "method": 0},
    }


if __name__ == "__main__":
    sys.exit(main())
