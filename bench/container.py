"""The container image: its size, how long a session takes from `podman run` to healthy,
the memory of one idle session, and how many idle sessions this machine holds while
every one of them still answers screenshots.

``python -m bench.container [--no-build] [--starts N] [--max-sessions N]``: builds the
image (scripts/container-build), runs containers named deskbox-bench-* with their ports
published on 127.0.0.1 and removes them all at the end; writes bench/results/container.json
and container.md and prints the table. Reported, not asserted. Rows:

- **image size**: `podman image inspect` (uncompressed, all layers).
- **start to healthy**: from `podman run -d` until desktopd, scene and bridge all answer
  their health endpoints on the published ports (what the image's HEALTHCHECK asks);
  `podman run` itself is reported apart. Containers are started one at a time.
- **idle memory**: one session (the image's default 1920x1080 display, about:blank) left
  alone for --idle-s after its first screenshot: `podman stats`, and the cgroup's own
  figures (usage, rss, page cache) with each process's proportional set size (PSS).
- **density**: sessions are started one by one; after each is healthy, every running
  session is asked for a screenshot, and each must answer within --screenshot-timeout.
  It stops at --max-sessions or at the first session that does not start or answer.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path

from deskbox import Client, DeskboxError

from .report import write_results

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
PORTS = {"scene": 8000, "desktopd": 8080, "bridge": 8122}
HEALTH = {"scene": "/api/v1/health", "desktopd": "/api/v1/health", "bridge": "/health"}
TARGETS = {"image_gb": 1.2, "start_to_healthy_s": 10.0, "idle_memory_mb": 600.0, "sessions": 20}
PREFIX = "deskbox-bench-"


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(["podman", *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args[:4])} failed ({result.returncode}): {result.stderr.strip()[-500:]}")
    return result


def get(url: str, timeout: float) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


class Container:
    """One session container with its ports published on loopback (podman picks them)."""

    def __init__(self, image: str, flags: list[str], name: str) -> None:
        self.image, self.flags, self.name = image, flags, name
        self.urls: dict[str, str] = {}
        self.run_s = self.healthy_s = None

    def start(self) -> None:
        t0 = time.monotonic()
        publish = [a for port in PORTS.values() for a in ("-p", f"127.0.0.1::{port}")]
        # (No token, as the bench calls the services bare: published on loopback only.)
        podman("run", "-d", "--name", self.name, *self.flags, "-e", "DESKBOX_NO_TOKEN=1", *publish, self.image)
        self.run_s = time.monotonic() - t0
        for line in podman("port", self.name).stdout.splitlines():
            inner, _, outer = line.partition(" -> ")
            for service, port in PORTS.items():
                if inner == f"{port}/tcp":
                    self.urls[service] = f"http://127.0.0.1:{outer.rsplit(':', 1)[1]}"
        self._t0 = t0

    def wait_healthy(self, timeout: float) -> float:
        while time.monotonic() - self._t0 < timeout:
            try:
                if all(get(self.urls[s] + HEALTH[s], 2)[0] == 200 for s in PORTS):
                    self.healthy_s = time.monotonic() - self._t0
                    return self.healthy_s
            except OSError:
                pass
            state = podman("inspect", "--format", "{{.State.Status}}", self.name, check=False).stdout.strip()
            if state not in ("running", "created", "configured"):
                raise RuntimeError(f"{self.name} is {state}: {self.logs()}")
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} was not healthy within {timeout:.0f}s: {self.logs()}")

    def screenshot_ms(self, timeout: float) -> float:
        """A fresh screenshot: the pointer moves first, which invalidates desktopd's cache,
        so the time is a real capture and encode, not a cached answer."""
        self._moves = getattr(self, "_moves", 0) + 1
        with Client(None, self.urls["desktopd"], None, timeout=timeout) as client:
            client.pointer("move", 100 + self._moves % 200, 100)
        t0 = time.perf_counter()  # (the screenshot asked bare: what is timed is desktopd)
        try:
            with urllib.request.urlopen(self.urls["desktopd"] + "/api/v1/screenshot", timeout=timeout) as resp:
                body, cache = resp.read(), resp.headers.get("X-Deskbox-Cache")
        except urllib.error.HTTPError as err:
            raise RuntimeError(f"{self.name}: screenshot -> {err.code}") from None
        if not body.startswith(b"\x89PNG") or cache == "hit":
            raise RuntimeError(f"{self.name}: not a fresh PNG (cache {cache})")
        return (time.perf_counter() - t0) * 1000

    def cpu_s(self) -> float | None:
        return cgroup_cpu_s(self.name)

    def logs(self) -> str:
        out = podman("logs", "--tail", "10", self.name, check=False)
        return (out.stdout + out.stderr).strip()[-1500:]

    def remove(self) -> None:
        podman("rm", "-f", "-t", "5", self.name, check=False)

    # -- memory ------------------------------------------------------------------------

    def memory(self) -> dict:
        stats = json.loads(podman("stats", "--no-stream", "--format", "json", self.name).stdout)[0]
        cgroup = self._cgroup_dir()
        out = {"podman_stats": stats.get("mem_usage"), "cgroup": None, "pss_by_process_mb": None}
        if cgroup is not None:
            out["cgroup"] = _cgroup_memory(cgroup)
            out["pss_by_process_mb"] = _pss_by_process(cgroup)
        return out

    def cgroup_usage_mb(self) -> float:
        return cgroup_memory_mb(self.name)

    def _cgroup_dir(self) -> Path | None:
        rel = podman("inspect", "--format", "{{.State.CgroupPath}}", self.name).stdout.strip().lstrip("/")
        for base in (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup")):
            if rel and (base / rel).is_dir():
                return base / rel
        return None


def machine_cpu_s() -> tuple[float, float]:
    """The machine's (busy, total) CPU seconds so far, from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]
    return (sum(fields) - idle) / hz, sum(fields) / hz


def cgroup_cpu_s(name: str) -> float | None:
    """CPU time a container's processes used so far, from its cgroup (v1 or v2)."""
    rel = podman("inspect", "--format", "{{.State.CgroupPath}}", name).stdout.strip().lstrip("/")
    for path, scale in ((f"/sys/fs/cgroup/cpuacct/{rel}/cpuacct.usage", 1e-9),
                        (f"/sys/fs/cgroup/cpu,cpuacct/{rel}/cpuacct.usage", 1e-9)):
        if os.path.exists(path):
            return int(Path(path).read_text()) * scale
    stat = Path(f"/sys/fs/cgroup/{rel}/cpu.stat")
    if stat.exists():
        return int(dict(line.split() for line in stat.read_text().splitlines())["usage_usec"]) * 1e-6
    return None


def cgroup_memory_mb(name: str) -> float:
    """A container's memory as its cgroup counts it (v1 or v2), in MB; 0 when not found."""
    return cgroup_memory(name).get("usage_mb", 0.0)


def cgroup_memory(name: str, *, by_process: bool = False) -> dict:
    """A container's memory as its cgroup counts it: ``usage_mb`` split into ``anon_mb``
    (what its processes hold) and ``page_cache_mb`` (files read, which the kernel gives
    back under pressure); with ``by_process``, the processes' PSS by executable too.
    Empty when not found."""
    rel = podman("inspect", "--format", "{{.State.CgroupPath}}", name, check=False).stdout.strip().lstrip("/")
    for base in (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup")):
        if rel and (base / rel).is_dir():
            out = _cgroup_memory(base / rel)
            if by_process:
                out["pss_by_process_mb"] = _pss_by_process(base / rel)
            return out
    return {}


def _cgroup_memory(d: Path) -> dict:
    if (d / "memory.current").exists():  # cgroup v2
        stat = dict(line.split() for line in (d / "memory.stat").read_text().splitlines())
        usage = int((d / "memory.current").read_text())
        rss, cache = int(stat["anon"]), int(stat["file"])
    else:  # cgroup v1
        stat = dict(line.split() for line in (d / "memory.stat").read_text().splitlines())
        usage = int((d / "memory.usage_in_bytes").read_text())
        rss, cache = int(stat["total_rss"]), int(stat["total_cache"])  # shmem is in the cache here
    mb = 1024 * 1024
    return {"usage_mb": round(usage / mb, 1), "anon_mb": round(rss / mb, 1), "page_cache_mb": round(cache / mb, 1)}


def _pss_by_process(d: Path) -> dict:
    """Proportional set size by executable of a cgroup's processes."""
    procs = d / "cgroup.procs"
    return pss_by_program(int(pid) for pid in procs.read_text().split()) if procs.exists() else {}


def container_pids(name: str) -> list[int]:
    """The host pids of a container's processes, from its cgroup (v1 or v2)."""
    rel = podman("inspect", "--format", "{{.State.CgroupPath}}", name, check=False).stdout.strip().lstrip("/")
    for base in (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup")):
        procs = base / rel / "cgroup.procs"
        if rel and procs.exists():
            return [int(pid) for pid in procs.read_text().split()]
    return []


def cpu_ticks_by_process(pids: Iterable[int]) -> dict[tuple[int, str], int]:
    """Each process's CPU so far (utime + stime, clock ticks), by (pid, executable)."""
    out = {}
    for pid in pids:
        try:
            data = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            continue
        comm = data[data.index(b"(") + 1:data.rindex(b")")].decode(errors="replace")
        fields = data[data.rindex(b") ") + 2:].split()
        out[(pid, comm)] = int(fields[11]) + int(fields[12])
    return out


def cpu_by_program(before: dict[tuple[int, str], int], after: dict[tuple[int, str], int]) -> dict[str, float]:
    """CPU seconds by executable between two :func:`cpu_ticks_by_process` readings,
    largest first (a process that started in between counts from its start)."""
    tick = os.sysconf("SC_CLK_TCK")
    by: dict[str, float] = {}
    for key, ticks in after.items():
        used = (ticks - before.get(key, 0)) / tick
        if used > 0:
            by[key[1]] = by.get(key[1], 0.0) + used
    return {name: round(v, 2) for name, v in sorted(by.items(), key=lambda kv: -kv[1])}


def pss_by_program(pids: Iterable[int]) -> dict[str, float]:
    """Proportional set size by executable, in MB, largest first: shared pages are split
    between their users, so the parts add up to what the processes really hold."""
    totals: dict[str, float] = {}
    for pid in pids:
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        pss = next((int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0)
        name = "chromium" if comm.startswith("chrom") else comm
        totals[name] = totals.get(name, 0) + pss / 1024
    return {k: round(v, 1) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}


def _mem_available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _remove_leftovers() -> None:
    names = podman("ps", "-a", "--format", "{{.Names}}", check=False).stdout.split()
    for name in names:
        if name.startswith(PREFIX) and name.endswith(f"-{os.getpid()}"):
            podman("rm", "-f", "-t", "2", name, check=False)


def run(args: argparse.Namespace) -> dict:
    if not args.no_build:
        subprocess.run([str(ROOT / "scripts" / "container-build"), args.image], check=True,
                       stdout=subprocess.DEVNULL)
    flags = subprocess.run([str(ROOT / "scripts" / "container-flags")], check=True, capture_output=True,
                           text=True).stdout.split()
    inspect = json.loads(podman("image", "inspect", args.image).stdout)[0]
    result: dict = {
        "meta": {"machine": platform.node(), "cpus": os.cpu_count(), "mem_available_mb": _mem_available_mb(),
                 "podman": podman("--version").stdout.strip(), "flags": flags,
                 "image": args.image, "image_id": inspect["Id"][:12]},
        "image": {"size_bytes": inspect["Size"], "size_gb": round(inspect["Size"] / 1e9, 3),
                  "layers": len(inspect.get("RootFS", {}).get("Layers", []))},
    }
    seq = 0

    def new(label: str) -> Container:
        nonlocal seq
        seq += 1
        return Container(args.image, flags, f"{PREFIX}{label}-{seq}-{os.getpid()}")

    # Start to healthy, one container at a time.
    starts = []
    for _ in range(args.starts):
        c = new("start")
        try:
            c.start()
            c.wait_healthy(args.healthy_timeout)
            starts.append({"podman_run_s": round(c.run_s, 2), "healthy_s": round(c.healthy_s, 2)})
        finally:
            c.remove()
    result["start"] = {"runs": starts, "median_healthy_s": round(statistics.median(s["healthy_s"] for s in starts), 2)}
    print(f"start to healthy: {[s['healthy_s'] for s in starts]} s", flush=True)

    # One idle session's memory.
    c = new("idle")
    try:
        c.start()
        c.wait_healthy(args.healthy_timeout)
        c.screenshot_ms(10)
        time.sleep(args.idle_s / 2)
        cpu0, t0 = c.cpu_s(), time.monotonic()
        time.sleep(args.idle_s / 2)
        cpu1, t1 = c.cpu_s(), time.monotonic()
        idle_cpu = None if cpu0 is None or cpu1 is None else round(100 * (cpu1 - cpu0) / (t1 - t0), 1)
        samples = []
        for _ in range(3):
            samples.append(c.memory())
            time.sleep(2)
        result["idle"] = {"idle_s": args.idle_s, "samples": samples, "last": samples[-1],
                          "cpu_percent_of_one_core": idle_cpu}
        print(f"idle memory: {samples[-1]}", flush=True)
    finally:
        c.remove()

    # Density: one more session at a time, every session must still answer screenshots.
    running: list[Container] = []
    steps = []
    stopped_by = f"reached --max-sessions {args.max_sessions}"
    try:
        for n in range(1, args.max_sessions + 1):
            c = new("dense")
            running.append(c)
            try:
                c.start()
                c.wait_healthy(args.healthy_timeout)
                time.sleep(args.settle_s)
                times = [s.screenshot_ms(args.screenshot_timeout) for s in running]
            except (RuntimeError, OSError, DeskboxError) as exc:
                stopped_by = f"session {n}: {exc}"
                print(f"density: stopped at session {n}: {exc}", flush=True)
                break
            stats = json.loads(podman("stats", "--no-stream", "--format", "json",
                                      *[s.name for s in running]).stdout)
            step = {"sessions": n, "healthy_s": round(c.healthy_s, 2), "screenshot_max_ms": round(max(times), 1),
                    "screenshot_median_ms": round(statistics.median(times), 1),
                    "mem_usage": [s.get("mem_usage") for s in stats],
                    "cgroup_usage_mb_total": round(sum(s.cgroup_usage_mb() for s in running), 1),
                    "mem_available_mb": _mem_available_mb(), "load1": round(os.getloadavg()[0], 2)}
            steps.append(step)
            print(f"density: {n} sessions, screenshots max {step['screenshot_max_ms']} ms, "
                  f"{step['mem_available_mb']} MB available, load {step['load1']}", flush=True)
    finally:
        for s in running:
            s.remove()
        _remove_leftovers()
    result["density"] = {"steps": steps, "held": steps[-1]["sessions"] if steps else 0, "stopped_by": stopped_by,
                         "screenshot_timeout_s": args.screenshot_timeout}
    return result


def _mb(text: str | None) -> str:
    return text or "-"


def markdown(result: dict) -> str:
    img, start, idle, dense = result["image"], result["start"], result["idle"], result["density"]
    last = idle["last"]
    cg = last["cgroup"] or {}
    verdict = {True: "met", False: "**missed**"}
    idle_mb = cg.get("usage_mb")
    lines = [
        "# Container: image size, start, idle memory, density", "",
        f"{result['meta']['podman']}, {result['meta']['cpus']} cores, flags this machine needs: "
        f"`{' '.join(result['meta']['flags']) or 'none'}`. Load average before/after: {result['load']}.", "",
        "| measure | value | target | |", "|---|---:|---:|---|",
        f"| image size (uncompressed) | {img['size_gb']:.2f} GB | <= {TARGETS['image_gb']} GB | "
        f"{verdict[img['size_gb'] <= TARGETS['image_gb']]} |",
        f"| `podman run` to healthy, median of {len(start['runs'])} | {start['median_healthy_s']:.1f} s | "
        f"<= {TARGETS['start_to_healthy_s']:.0f} s | {verdict[start['median_healthy_s'] <= TARGETS['start_to_healthy_s']]} |",
        f"| one idle session, cgroup usage | {idle_mb} MB | <= {TARGETS['idle_memory_mb']:.0f} MB | "
        f"{verdict[idle_mb is not None and idle_mb <= TARGETS['idle_memory_mb']]} |",
        f"| idle sessions held, screenshots within {dense['screenshot_timeout_s']:.0f} s | {dense['held']} | "
        f">= {TARGETS['sessions']} | {verdict[dense['held'] >= TARGETS['sessions']]} |",
        "",
        "Start runs (s, `podman run` returned / all three health endpoints 200): "
        + ", ".join(f"{s['podman_run_s']:.1f} / {s['healthy_s']:.1f}" for s in start["runs"]) + ".",
        "",
        f"Idle session after {idle['idle_s']} s: `podman stats` {_mb(last['podman_stats'])}; cgroup usage "
        f"{cg.get('usage_mb')} MB (anonymous {cg.get('anon_mb')} MB, page cache {cg.get('page_cache_mb')} MB); "
        f"CPU {idle.get('cpu_percent_of_one_core')} % of one core over the last {idle['idle_s'] / 2:.0f} s. "
        f"PSS by process, shared pages split between their users ({sum((last['pss_by_process_mb'] or {}).values()):.0f}"
        " MB in all, the image's code pages included): "
        + ", ".join(f"{k} {v}" for k, v in (last["pss_by_process_mb"] or {}).items()) + ".",
        "",
        "Density: each screenshot is fresh (the pointer moves first, so desktopd's cache cannot answer it).",
        "",
        "| sessions | newest start to healthy s | screenshot median ms | screenshot max ms | cgroup usage total MB "
        "| host MemAvailable MB | load 1 min |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in dense["steps"]:
        lines.append(f"| {s['sessions']} | {s['healthy_s']:.1f} | {s['screenshot_median_ms']:.0f} | "
                     f"{s['screenshot_max_ms']:.0f} | {s['cgroup_usage_mb_total']:.0f} | {s['mem_available_mb']:.0f} | "
                     f"{s['load1']:.2f} |")
    lines += ["", f"Stopped by: {dense['stopped_by']}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.container", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image", default="deskbox")
    p.add_argument("--no-build", action="store_true", help="measure the image as it is")
    p.add_argument("--starts", type=int, default=3, help="containers started one at a time for start to healthy")
    p.add_argument("--idle-s", type=float, default=30, help="how long the idle session is left alone")
    p.add_argument("--max-sessions", type=int, default=20)
    p.add_argument("--settle-s", type=float, default=3, help="wait after each new session before the screenshots")
    p.add_argument("--screenshot-timeout", type=float, default=5)
    p.add_argument("--healthy-timeout", type=float, default=120)
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    load_before = os.getloadavg()
    try:
        result = run(args)
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"bench.container: {exc}", file=sys.stderr)
        return 1
    result["load"] = f"{load_before[0]:.2f} / {os.getloadavg()[0]:.2f}"
    write_results(args.results, "container", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
