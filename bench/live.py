"""Measurements against a running session: desktopd screenshots beside `grim`, clicks,
and desktopd's memory.

Every row is measured from this process over loopback HTTP with one keep-alive
connection, and the rows take turns (round robin, the order rotated every iteration) so
that noise from other work on the machine falls on all of them alike.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import time
from pathlib import Path

import numpy as np
from aiohttp import ClientSession
from PIL import Image

from .page import CLICK_TARGET_RGB, PageServer
from .session import BenchSession
from .stats import Samples

__all__ = ["LiveBench", "FORMATS", "GRIM_RUNS"]

# What desktopd is asked for; its default quality for each (jpeg 85, webp 80).
FORMATS = ("png", "jpeg", "webp")
# The reference: grim at its default PNG level (6) and at -l 1; and PPM (no encoding at
# all), which shows what capture alone costs a separate process.
GRIM_RUNS = {"grim_png": ("png", []), "grim_png_l1": ("png", ["-l", "1"]), "grim_ppm": ("ppm", [])}
# Where the pointer rests while screenshots are taken: page margin, nothing to hover.
PARK = (1700, 1060)
# After a pointer move, give desktopd's damage watcher time to re-arm (it waits 50 ms
# after each change) so the "unchanged screen" request can be served from its cache.
SETTLE_S = 0.1


class PipelineProbe:
    """desktopd's fresh-screenshot steps run in this process against the same compositor
    (its own Wayland connection, desktopd's own capture and encoder code), timed one by one."""

    STEPS = ("step_capture", "step_convert", "step_png", "step_jpeg")

    def __init__(self, session: BenchSession, output_name: str) -> None:
        from deskbox.desktopd.backends.wayland.client import WaylandClient
        from deskbox.desktopd.backends.wayland.screencopy import Screencopy

        self.client = WaylandClient(str(Path(session.state["runtime_dir"]) / "wayland-1"))
        self.client.connect()
        self.client.attach(asyncio.get_running_loop())
        self.screencopy = Screencopy(self.client)
        self.output = self.client.output_by_name(output_name)
        if self.output is None:
            self.close()
            raise RuntimeError(f"no Wayland output {output_name}")

    async def run(self, rows: dict[str, Samples]) -> None:
        from deskbox.desktopd.encode import encode

        loop = asyncio.get_running_loop()
        t0 = time.perf_counter()
        frame = await self.screencopy.capture(self.output, cursor=False)
        t1 = time.perf_counter()
        # As desktopd does it: conversion and encoding on executor threads.
        image = await loop.run_in_executor(None, frame.to_image)
        t2 = time.perf_counter()
        png = await loop.run_in_executor(None, encode, image, "png", None)
        t3 = time.perf_counter()
        jpeg = await loop.run_in_executor(None, encode, image, "jpeg", None)
        t4 = time.perf_counter()
        rows["step_capture"].add(t1 - t0)
        rows["step_convert"].add(t2 - t1)
        rows["step_png"].add(t3 - t2, len(png))
        rows["step_jpeg"].add(t4 - t3, len(jpeg))

    def close(self) -> None:
        self.screencopy.close()
        self.client.close()


class LiveBench:
    def __init__(self, session: BenchSession, page: PageServer, http: ClientSession, iterations: int) -> None:
        self.session = session
        self.page = page
        self.http = http
        self.iterations = iterations
        self.base = session.desktopd
        self.output_name = "HEADLESS-1"
        self.scratch = Path("/dev/shm" if os.path.isdir("/dev/shm") else session.tmp) / f"deskbox-bench-{os.getpid()}"
        self.scratch.mkdir(exist_ok=True)
        self.button: tuple[int, int] | None = None
        self.frame: np.ndarray | None = None
        self.grim_jpeg = False
        self.probe_error: str | None = None

    # -- plumbing ---------------------------------------------------------------------

    async def _get(self, path: str, request_id: str | None = None) -> tuple[float, bytes, dict]:
        headers = {"X-Request-Id": request_id} if request_id else None
        started = time.perf_counter()
        async with self.http.get(self.base + path, headers=headers) as resp:
            body = await resp.read()
            elapsed = time.perf_counter() - started
            if resp.status != 200:
                raise RuntimeError(f"GET {path} -> {resp.status}: {body[:300]!r}")
            return elapsed, body, dict(resp.headers)

    async def _post(self, path: str, payload: dict, request_id: str | None = None) -> tuple[float, dict]:
        headers = {"X-Request-Id": request_id} if request_id else None
        started = time.perf_counter()
        async with self.http.post(self.base + path, json=payload, headers=headers) as resp:
            body = await resp.json()
            elapsed = time.perf_counter() - started
            if resp.status != 200:
                raise RuntimeError(f"POST {path} -> {resp.status}: {body}")
            return elapsed, body

    async def screenshot(self, fmt: str, request_id: str | None = None) -> tuple[float, bytes, str]:
        elapsed, body, headers = await self._get(f"/api/v1/screenshot?format={fmt}", request_id)
        return elapsed, body, headers.get("X-Deskbox-Cache", "")

    async def park(self) -> None:
        await self._post("/api/v1/pointer", {"action": "move", "x": PARK[0], "y": PARK[1]})

    async def grim(self, extra: list[str], fmt: str = "png") -> tuple[float, int]:
        path = self.scratch / f"grim.{fmt}"
        argv = ["grim", "-t", fmt, *extra, "-o", self.output_name, str(path)]
        started = time.perf_counter()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, env=self.session.wayland_env(),
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            )
        except FileNotFoundError as exc:
            raise RuntimeError("grim is not installed (scripts/install-deps installs it)") from exc
        _, err = await proc.communicate()
        elapsed = time.perf_counter() - started
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {err.decode(errors='replace').strip()}")
        return elapsed, path.stat().st_size

    # -- getting ready ----------------------------------------------------------------

    async def wait_ready(self, timeout: float = 45.0) -> None:
        """Until the page is on screen (its button visible) and the screen is still."""
        deadline = time.monotonic() + timeout
        _, body, _ = await self._get("/api/v1/displays")
        displays = json.loads(body)["displays"]
        self.output_name = displays[0]["name"]
        await self.park()
        last = None
        while time.monotonic() < deadline:
            _, png, _ = await self.screenshot("png")
            digest = hashlib.sha256(png).hexdigest()
            rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
            button = _find_colour_box(rgb, CLICK_TARGET_RGB)
            if button is not None and digest == last:
                self.button = button
                self.frame = rgb
                return
            last = digest if button is not None else None
            await asyncio.sleep(0.5)
        raise RuntimeError("the bench page did not appear on screen (or never stopped changing)")

    async def warm_up(self) -> None:
        for fmt in FORMATS:
            await self.screenshot(fmt)
        for fmt, extra in GRIM_RUNS.values():
            await self.grim(extra, fmt)
        try:
            await self.grim([], fmt="jpeg")
            self.grim_jpeg = True
        except RuntimeError:
            self.grim_jpeg = False

    # -- rows -------------------------------------------------------------------------

    async def screenshots(self) -> dict[str, Samples]:
        rows: dict[str, Samples] = {name: Samples(name) for name in GRIM_RUNS}
        if self.grim_jpeg:
            rows["grim_jpeg"] = Samples("grim_jpeg")
        for fmt in FORMATS:
            rows[f"{fmt}_fresh"] = Samples(f"{fmt}_fresh")
            rows[f"{fmt}_cached"] = Samples(f"{fmt}_cached")

        async def grim_job(name: str, extra: list[str], fmt: str = "png") -> None:
            try:
                elapsed, size = await self.grim(extra, fmt)
                rows[name].add(elapsed, size)
            except RuntimeError as exc:
                rows[name].errors.append(str(exc))

        async def desktopd_job(fmt: str, i: int) -> None:
            # A pointer move is an action: desktopd bumps its damage generation, so the
            # next screenshot is captured afresh. Untimed.
            await self.park()
            await asyncio.sleep(SETTLE_S)
            for kind, expected in (("fresh", "miss"), ("cached", "hit")):
                row = rows[f"{fmt}_{kind}"]
                rid = f"bench-{fmt}-{kind}-{i}"
                elapsed, body, cache = await self.screenshot(fmt, rid)
                if cache == expected:
                    row.add(elapsed, len(body), rid)
                else:
                    row.excluded += 1

        jobs = [lambda i, n=n, f=f, e=e: grim_job(n, e, f) for n, (f, e) in GRIM_RUNS.items()]
        if self.grim_jpeg:
            jobs.append(lambda i: grim_job("grim_jpeg", [], "jpeg"))
        jobs += [lambda i, f=f: desktopd_job(f, i) for f in FORMATS]
        probe = None
        try:
            probe = PipelineProbe(self.session, self.output_name)
        except Exception as exc:  # the breakdown is a bonus: the rows above stand without it
            self.probe_error = f"{type(exc).__name__}: {exc}"
        if probe is not None:
            for name in PipelineProbe.STEPS:
                rows[name] = Samples(name)

            async def probe_job(i: int) -> None:
                await self.park()
                await asyncio.sleep(SETTLE_S)
                await probe.run(rows)

            jobs.append(probe_job)
        try:
            for i in range(self.iterations):
                k = i % len(jobs)
                for job in jobs[k:] + jobs[:k]:
                    await job(i)
        finally:
            if probe is not None:
                probe.close()
        return rows

    async def clicks(self) -> dict[str, Samples]:
        assert self.button is not None
        round_trip, seen, inside = Samples("click"), Samples("click_seen"), Samples("click_in_desktopd")
        x, y = self.button
        for i in range(self.iterations):
            # Apart by more than a double-click interval, so each is a plain click.
            await asyncio.sleep(0.25)
            count = len(self.page.clicks) + 1
            rid = f"bench-click-{i}"
            started = time.perf_counter()
            elapsed, receipt = await self._post("/api/v1/pointer", {"action": "click", "x": x, "y": y}, rid)
            round_trip.add(elapsed, None, rid)
            if receipt.get("ms") is not None:
                inside.add(receipt["ms"] / 1000)
            arrived = await self.page.wait_click(count, timeout=2.0)
            if arrived is None:
                seen.errors.append("the page did not report the click within 2 s")
                # Resynchronise with whatever the page reported late.
                await asyncio.sleep(0.5)
            else:
                seen.add(arrived - started)
        await self.park()
        return {"click": round_trip, "click_seen": seen, "click_in_desktopd": inside}

    def rss(self) -> dict:
        pid = self.session.desktopd_pid
        out: dict = {"pid": pid, "rss_mb": None, "hwm_mb": None}
        if pid is None:
            return out
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out["rss_mb" if key == "VmRSS" else "hwm_mb"] = round(int(value.split()[0]) / 1024, 1)
        except OSError as exc:
            out["error"] = str(exc)
        return out

    def server_times(self, rows: dict[str, Samples]) -> None:
        """Fill each row's desktopd-side times from desktopd's canonical request lines."""
        log = Path(self.session.state["runtime_dir"]) / "logs" / "desktopd.log"
        try:
            text = log.read_text(errors="replace")
        except OSError:
            return
        ms: dict[str, float] = {}
        for line in text.splitlines():
            if '"bench-' not in line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("event") == "request" and "ms" in entry:
                ms[entry.get("request_id", "")] = entry["ms"]
        for row in rows.values():
            row.server_times = [ms[r] / 1000 for r in row.request_ids if r in ms]

    def cleanup(self) -> None:
        for path in self.scratch.glob("*"):
            path.unlink(missing_ok=True)
        try:
            self.scratch.rmdir()
        except OSError:
            pass


def _find_colour_box(rgb: np.ndarray, colour: tuple[int, int, int]) -> tuple[int, int] | None:
    """The centre of the filled box of exactly ``colour`` (rows with >= 20 such pixels)."""
    mask = np.all(rgb == np.array(colour, dtype=np.uint8), axis=2)
    rows = np.flatnonzero(mask.sum(axis=1) >= 20)
    if rows.size < 5:
        return None
    cols = np.flatnonzero(mask[rows].any(axis=0))
    return int((cols[0] + cols[-1]) // 2), int((rows[0] + rows[-1]) // 2)
