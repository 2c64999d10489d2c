"""The session-lifecycle bench:

``python -m bench.reset [--no-build] [--rounds N] [--recreates N] [--max-sessions N]``
(as root) measures what a harness pays between tasks, and writes
bench/results/reset.json and reset.md. Reported, not asserted.

- **(a) reset, bare machine**: ``deskbox up`` at 1920x1080 on this machine; before every
  reset Chromium gets two more tabs (bridge ``POST /tabs``) and a GTK app is started as
  the session user (tests/apps/gtk3_buttons.py, with the session's environment), both
  seen on screen; then ``POST /api/v1/session/reset`` until it answers (healthy). The
  first round is a warm-up, left out of the figures.
- **(b) reset in a container vs recreating it**: the same rounds in a container of the
  image (deskbox.provider.podman; the app started with ``podman exec`` as the session
  user), timed until the session answers healthy; against the **baseline**, what
  OSWorld's docker provider does for a revert: ``podman rm -f`` and ``podman run`` until
  the scene answers its health (the provider's readiness; in OSWorld mode it also waits
  for OSWorld's /screenshot, about one more screenshot).
- **(c) memory per session**: the cgroup memory of the idle container (as
  bench/container.py measures it), and again after the reset rounds.
- **(d) density**: containers are added (1, 2, 4, 6, 8, 10, 12 ...); each resets every
  10 s (staggered), and a client per session asks for a fresh screenshot (the pointer
  moves first, so desktopd's cache cannot answer; ``X-Deskbox-Cache: miss`` checked)
  about once a second. A level holds when the p95 of those screenshots is within
  100 ms and none failed; it stops at the first level that does not (``--keep-going``
  measures the rest too), or at the cap. The p95 of the screenshots taken while no
  session was resetting is reported beside it.

Figures within about 10 % of each other are noise on this 2-core machine: the
Markdown says "about the same" for those rather than a winner.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

from deskbox import Client, DeskboxError
from deskbox.common.net import free_ports
from deskbox.common.waiting import wait_until
from deskbox.session.spawn import SessionFailed, SpawnedSession

__all__ = ["main"]


ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
GTK_APP = ROOT / "tests" / "apps" / "gtk3_buttons.py"
OUTPUT = "1920x1080"
SCREENSHOT_LIMIT_MS = 100.0
RESET_EVERY_S = 10.0
SHOT_EVERY_S = 1.0
MIN_SHOTS = 60
NOISE = 0.10


def _tab_page(n: int) -> str:
    rows = "".join(f"<p>Paragraph {i} of tab {n}: some text to lay out and read.</p>" for i in range(60))
    return "data:text/html," + urllib.parse.quote(f"<title>bench tab {n}</title><h1>Tab {n}</h1>{rows}")


def _wait(predicate, timeout: float, what: str, interval: float = 0.1):
    return wait_until(predicate, timeout, interval, what, tolerate=(OSError, RuntimeError, ValueError, DeskboxError),
                      error=RuntimeError)


def _summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0, "median": None, "p95": None, "min": None, "max": None}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered) + 0.5) - 1))]
    return {"n": len(values), "median": round(statistics.median(values), 1), "p95": round(p95, 1),
            "min": round(ordered[0], 1), "max": round(ordered[-1], 1)}


def _compare(a: float, b: float) -> str:
    """How a (the thing measured) stands to b (the baseline)."""
    if not a or not b:
        return "-"
    ratio = a / b
    if abs(ratio - 1) <= NOISE:
        return f"{ratio:.2f}x (about the same)"
    return f"{ratio:.2f}x" if ratio > 1 else f"{ratio:.3f}x ({b / a:.0f}x faster)"


class _Desk:
    """What a round needs of a session, bare or in a container: a client of its services
    and a way to start the GTK app inside it."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def windows(self) -> list:
        return self.client.windows()

    def tabs(self) -> list:
        return self.client.tabs()

    def open_tabs(self, n: int) -> None:
        for i in range(n):
            self.client.new_tab(_tab_page(i))

    def start_app(self, title: str) -> None:
        raise NotImplementedError

    def dirty(self, round_no: int) -> dict:
        """Two more tabs and the GTK app on screen; returns what was there before the reset."""
        before = len(self.tabs())
        self.open_tabs(2)
        title = f"bench app {round_no}"
        self.start_app(title)
        _wait(lambda: any(w.title == title for w in self.windows()), 30, f"the GTK window {title!r}")
        _wait(lambda: len(self.tabs()) >= before + 2, 20, "the two new tabs")
        return {"tabs": len(self.tabs()), "windows": len(self.windows())}

    def reset(self) -> dict:
        t0 = time.perf_counter()
        done = self.client.session_reset().model_dump()
        done["client_ms"] = (time.perf_counter() - t0) * 1000
        return done

    def clean(self) -> dict:
        return {"tabs": len(self.tabs()), "windows": len(self.windows())}


class _BareDesk(_Desk):
    def __init__(self, session: SpawnedSession, ports: dict[str, int]) -> None:
        super().__init__(Client(*(f"http://127.0.0.1:{ports[s]}" for s in ("scene", "desktopd", "bridge"))))
        self.session = session

    def start_app(self, title: str) -> None:
        state = self.session.state
        user = state["user"]
        popen: dict = {}
        if os.getuid() == 0 and user["uid"] != 0:
            popen.update(user=user["uid"], group=user["gid"], extra_groups=[])
        subprocess.Popen([sys.executable, str(GTK_APP), "--title", title], env={**state["env"]}, cwd="/",
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, **popen)


# The image has GTK 3 (Chromium's) but not its GObject introspection data, so
# tests/apps/gtk3_buttons.py cannot run there: this stand-in opens the same kind of
# window (a title, a column of buttons) through libgtk-3 directly.
CTYPES_GTK_APP = """
import ctypes, sys
gtk = ctypes.CDLL("libgtk-3.so.0")
p = ctypes.c_void_p
for f in ("gtk_window_new", "gtk_box_new", "gtk_button_new_with_label", "gtk_entry_new"):
    getattr(gtk, f).restype = p
gtk.gtk_init(None, None)
window = gtk.gtk_window_new(0)
gtk.gtk_window_set_title(p(window), sys.argv[sys.argv.index("--title") + 1].encode())
gtk.gtk_window_set_default_size(p(window), 420, 320)
box = gtk.gtk_box_new(1, 6)
gtk.gtk_container_add(p(window), p(box))
for name in (b"Alpha", b"Beta", b"Gamma", b"Delta"):
    gtk.gtk_box_pack_start(p(box), p(gtk.gtk_button_new_with_label(name)), 0, 0, 0)
gtk.gtk_box_pack_start(p(box), p(gtk.gtk_entry_new()), 0, 0, 0)
gtk.gtk_widget_show_all(p(window))
gtk.gtk_main()
"""


class _ContainerDesk(_Desk):
    """The app is started with ``podman exec`` as the session user, with the session's
    environment (from the state file ``deskbox up`` writes in the container)."""

    def __init__(self, env, backend) -> None:  # deskbox.provider.Environment, PodmanBackend
        super().__init__(Client(env.url("scene"), env.url("desktopd"), env.url("bridge"), env.spec.token))
        self.env, self.backend = env, backend
        self.app: str | None = None
        self._argv: list[str] = []

    def start_app(self, title: str) -> None:
        if not self._argv:
            state = json.loads(self.backend.podman("exec", self.env.name, "cat", "/tmp/deskbox-state.json").stdout)
            user = state["user"]
            envs = [a for k, v in state["env"].items() for a in ("-e", f"{k}={v}")]
            probe = self.backend.podman("exec", self.env.name, "python3", "-c",
                                        "import gi; gi.require_version('Gtk', '3.0')", check=False)
            if probe.returncode == 0:
                self.app, code = "tests/apps/gtk3_buttons.py", GTK_APP.read_text()
            else:
                self.app, code = "libgtk-3 through ctypes (the image has no Gtk typelib)", CTYPES_GTK_APP
            self._argv = ["exec", "-d", "-u", f"{user['uid']}:{user['gid']}", "-w", state["home"], *envs,
                          self.env.name, "python3", "-c", code]
        self.backend.podman(*self._argv, "--title", title)

    def reset(self) -> dict:
        t0 = time.perf_counter()
        done = self.env.reset()
        done["client_ms"] = (time.perf_counter() - t0) * 1000
        return done


def _rounds(desk: _Desk, rounds: int, label: str) -> list[dict]:
    out = []
    for i in range(rounds + 1):
        before = desk.dirty(i)
        done = desk.reset()
        after = desk.clean()
        row = {"round": i, "warmup": i == 0, "client_ms": round(done["client_ms"], 1),
               "server_ms": done.get("reset_ms"), "session_ms": done.get("session_reset_ms"),
               "healthy": done.get("healthy"), "ended": len(done.get("ended") or []), "before": before, "after": after}
        out.append(row)
        print(f"{label}: round {i}{' (warm-up)' if i == 0 else ''}: reset {row['client_ms']:.0f} ms "
              f"(tabs {before['tabs']} -> {after['tabs']}, windows {before['windows']} -> {after['windows']})",
              file=sys.stderr, flush=True)
    return out


# -- (a) bare machine --------------------------------------------------------------------------


def bare_resets(rounds: int) -> dict:
    ports = dict(zip(("desktopd", "cdp", "bridge", "scene"), free_ports(4)))
    session = SpawnedSession(["--output", OUTPUT, "--url", "about:blank", "--desktopd-port", str(ports["desktopd"]),
                              "--cdp-port", str(ports["cdp"]), "--bridge-port", str(ports["bridge"]),
                              "--scene-port", str(ports["scene"])], prefix="deskbox-bench-reset-")
    session.start(120)
    desk = _BareDesk(session, ports)
    try:
        _wait(lambda: desk.client.health("bridge"), 60, "the bridge")
        rows = _rounds(desk, rounds, "bare")
    except Exception:
        print(session.log_tail(), file=sys.stderr)
        raise
    finally:
        desk.client.close()
        session.stop()
    timed = [r["client_ms"] for r in rows if not r["warmup"]]
    return {"rounds": rows, "reset_ms": _summary(timed),
            "server_reset_ms": _summary([r["server_ms"] for r in rows if not r["warmup"] and r["server_ms"]]),
            "session_reset_ms": _summary([r["session_ms"] for r in rows if not r["warmup"] and r["session_ms"]]),
            "all_healthy": all(r["healthy"] for r in rows)}


# -- (b), (c) container ----------------------------------------------------------------------


def _cgroup_mb(backend, name: str) -> dict | None:
    from .container import _cgroup_memory

    rel = backend.podman("inspect", "--format", "{{.State.CgroupPath}}", name).stdout.strip().lstrip("/")
    for base in (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup")):
        if rel and (base / rel).is_dir():
            return _cgroup_memory(base / rel)
    return None


def container_resets(image: str, rounds: int, recreates: int, idle_s: float) -> dict:
    from deskbox.provider import EnvironmentSpec
    from deskbox.provider.podman import PodmanBackend

    backend = PodmanBackend(name_prefix=f"deskbox-bench-session-{os.getpid()}-")
    # Without OSWorld's server: the same for reset and recreate, and out of reach of a
    # machine-wide clean-up of /home/user/.config/google-chrome (see the report).
    spec = EnvironmentSpec(image=image, outputs=[OUTPUT], osworld=False)
    env = backend.start(spec)
    result: dict = {"first_start_s": round(env.healthy_s or 0, 2)}
    try:
        # (c) idle memory, before anything ran in it
        with Client(None, env.url("desktopd"), None, env.spec.token) as client:
            client.health("desktopd")
        time.sleep(idle_s)
        result["idle_memory"] = _cgroup_mb(backend, env.name)
        print(f"container: idle memory {result['idle_memory']}", file=sys.stderr, flush=True)

        desk = _ContainerDesk(env, backend)
        try:
            rows = _rounds(desk, rounds, "container")
        finally:
            desk.client.close()
        result["rounds"] = rows
        result["reset_ms"] = _summary([r["client_ms"] for r in rows if not r["warmup"]])
        result["server_reset_ms"] = _summary([r["server_ms"] for r in rows if not r["warmup"] and r["server_ms"]])
        result["session_reset_ms"] = _summary([r["session_ms"] for r in rows if not r["warmup"] and r["session_ms"]])
        result["all_healthy"] = all(r["healthy"] for r in rows)
        result["app"] = desk.app
        time.sleep(5)
        result["memory_after_resets"] = _cgroup_mb(backend, env.name)

        recreate = []
        for i in range(recreates):
            t0 = time.perf_counter()
            env.stop()
            t1 = time.perf_counter()
            env = backend.start(spec)
            t2 = time.perf_counter()
            recreate.append({"rm_ms": round((t1 - t0) * 1000, 1), "run_to_healthy_ms": round((t2 - t1) * 1000, 1),
                             "total_ms": round((t2 - t0) * 1000, 1)})
            print(f"container: recreate {i}: {recreate[-1]['total_ms']:.0f} ms", file=sys.stderr, flush=True)
        result["recreates"] = recreate
        result["recreate_ms"] = _summary([r["total_ms"] for r in recreate])
    finally:
        env.stop()
        backend.cleanup(owner_pid=os.getpid())
    return result


# -- (d) density -------------------------------------------------------------------------------


class _Counter:
    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()

    def add(self, n: int) -> None:
        with self._lock:
            self.value += n


class _Load:
    """One session under load: a reset every RESET_EVERY_S (from ``offset``), a fresh
    screenshot about once a second. The screenshot is asked bare (not through the
    client): what is timed is desktopd."""

    def __init__(self, env, offset: float, resetting: "_Counter") -> None:
        self.env = env
        self.client = Client(env.url("scene"), env.url("desktopd"), None, env.spec.token)
        self.offset = offset
        self.resetting = resetting  # resets in flight, all sessions
        self.shots: list[tuple[float, float, bool]] = []  # (when, ms, while some session was resetting)
        self.shot_errors: list[str] = []
        self.resets: list[tuple[float, float, bool]] = []  # (when, ms, healthy)
        self.reset_errors: list[str] = []
        self.stop = threading.Event()
        self.moves = 0

    def start(self) -> None:
        threading.Thread(target=self._shoot, daemon=True).start()
        threading.Thread(target=self._reset, daemon=True).start()

    def _shoot(self) -> None:
        while not self.stop.is_set():
            self.moves += 1
            try:
                self.client.pointer("move", 100 + self.moves % 400, 200)
                busy = self.resetting.value > 0
                t0 = time.perf_counter()
                with self.env.open("GET", "desktopd", "/api/v1/screenshot", timeout=10) as resp:
                    status, headers, body = resp.status, resp.headers, resp.read()
                ms = (time.perf_counter() - t0) * 1000
                busy = busy or self.resetting.value > 0
                if status != 200 or not body.startswith(b"\x89PNG"):
                    self.shot_errors.append(f"status {status}")
                elif headers.get("X-Deskbox-Cache") == "hit":
                    self.shot_errors.append("a cached screenshot")
                else:
                    self.shots.append((time.monotonic(), ms, busy))
            except (OSError, DeskboxError) as exc:
                self.shot_errors.append(str(exc))
            self.stop.wait(SHOT_EVERY_S)

    def _reset(self) -> None:
        if self.stop.wait(self.offset):
            return
        while not self.stop.is_set():
            t0 = time.monotonic()
            self.resetting.add(1)
            try:
                done = self.client.session_reset()
                self.resets.append((t0, (time.monotonic() - t0) * 1000, done.healthy))
            except (OSError, DeskboxError) as exc:
                self.reset_errors.append(str(exc))
            finally:
                self.resetting.add(-1)
            self.stop.wait(max(0.0, RESET_EVERY_S - (time.monotonic() - t0)))


def density(image: str, max_sessions: int, window_s: float, keep_going: bool = False) -> dict:
    from deskbox.provider import EnvironmentSpec
    from deskbox.provider.podman import PodmanBackend

    backend = PodmanBackend(name_prefix=f"deskbox-bench-dense-{os.getpid()}-")
    spec = EnvironmentSpec(image=image, outputs=[OUTPUT], osworld=False)
    levels = [n for n in (1, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24) if n <= max_sessions]
    if max_sessions not in levels:
        levels.append(max_sessions)
    loads: list[_Load] = []
    steps = []
    stopped_by = f"reached the cap of {max_sessions} sessions"
    try:
        for n in levels:
            try:
                while len(loads) < n:
                    env = backend.start(spec, timeout=240)
                    loads.append(_Load(env, 0.0, _Counter()))
            except Exception as exc:
                stopped_by = f"session {len(loads) + 1} did not start: {exc}"
                break
            # Stagger the resets over the period, then measure a window.
            for load in loads:
                load.stop.set()
            time.sleep(1)
            resetting = _Counter()
            for i, load in enumerate(loads):
                fresh = _Load(load.env, RESET_EVERY_S * i / n, resetting)
                loads[i] = fresh
                fresh.start()
            time.sleep(2)
            t_start = time.monotonic()
            time.sleep(max(window_s, MIN_SHOTS * SHOT_EVERY_S / n))  # enough shots for a p95
            t_end = time.monotonic()
            window = [(ms, busy) for load in loads for when, ms, busy in load.shots if t_start <= when <= t_end]
            shots = [ms for ms, _ in window]
            quiet = [ms for ms, busy in window if not busy]
            errors = [e for load in loads for e in load.shot_errors]
            resets = [r for load in loads for r in load.resets]
            reset_errors = [e for load in loads for e in load.reset_errors]
            memory = [(_cgroup_mb(backend, load.env.name) or {}).get("usage_mb") or 0 for load in loads]
            s = _summary(shots)
            held = bool(shots) and s["p95"] <= SCREENSHOT_LIMIT_MS and not errors
            step = {"sessions": n, "screenshots": s, "screenshots_no_reset_in_flight": _summary(quiet),
                    "screenshot_errors": len(errors), "errors_sample": errors[:3],
                    "resets": len(resets), "resets_unhealthy": sum(1 for r in resets if not r[2]),
                    "reset_ms": _summary([r[1] for r in resets]), "reset_errors": len(reset_errors),
                    "cgroup_total_mb": round(sum(memory), 1), "load1": round(os.getloadavg()[0], 2), "held": held}
            steps.append(step)
            print(f"density: {n} sessions: fresh screenshot p95 {s['p95']} ms (median {s['median']}, "
                  f"{s['n']} shots, {len(errors)} failed), {len(resets)} resets median {step['reset_ms']['median']} ms, "
                  f"load {step['load1']}", file=sys.stderr, flush=True)
            if not held and stopped_by.startswith("reached"):
                stopped_by = (f"at {n} sessions the fresh screenshots' p95 was {s['p95']} ms"
                              + (f" and {len(errors)} failed" if errors else ""))
            if not held and not keep_going:
                break
    finally:
        for load in loads:
            load.stop.set()
        time.sleep(0.5)
        for load in loads:
            load.client.close()
            load.env.stop()
        backend.cleanup(owner_pid=os.getpid())
    held = 0
    for s in steps:  # the levels held in a row from the first
        if not s["held"]:
            break
        held = s["sessions"]
    return {"steps": steps, "held": held, "stopped_by": stopped_by, "window_s": window_s,
            "limit_ms": SCREENSHOT_LIMIT_MS, "reset_every_s": RESET_EVERY_S}


# -- report --------------------------------------------------------------------------------------


def _mem(m: dict | None) -> str:
    if not m:
        return "-"
    return f"{m['usage_mb']:.0f} MB (anonymous {m['anon_mb']:.0f}, page cache {m['page_cache_mb']:.0f})"


def markdown(result: dict) -> str:
    bare, cont, dense = result.get("bare"), result.get("container"), result.get("density")
    meta = result["meta"]
    lines = ["# Session lifecycle: reset, recreate, memory, density", "",
             f"{meta['cpus']} cores, {meta['podman']}; display {OUTPUT}. Load average before/after: {result['load']}. "
             f"Figures within {NOISE:.0%} of each other are noise here.", ""]
    if bare or cont:
        base = cont["recreate_ms"]["median"] if cont and cont.get("recreate_ms", {}).get("n") else None
        lines += ["Baseline: **recreating the container** (`podman rm -f` + `podman run` until the session answers "
                  "healthy), what OSWorld's docker provider does for a revert.", "",
                  "| between two tasks | median ms | p95 ms | n | vs baseline (median) |", "|---|---:|---:|---:|---|"]
        if bare:
            r = bare["reset_ms"]
            lines.append(f"| reset, bare machine (`deskbox up`), until healthy | {r['median']} | {r['p95']} | {r['n']} | "
                         f"{_compare(r['median'], base) if base else '-'} |")
        if cont:
            r = cont["reset_ms"]
            lines.append(f"| reset in a container, until healthy | {r['median']} | {r['p95']} | "
                         f"{r['n']} | {_compare(r['median'], base) if base else '-'} |")
            if base:
                rc = cont["recreate_ms"]
                lines.append(f"| **recreate the container (baseline)** | {rc['median']} | {rc['p95']} | {rc['n']} | 1.00x |")
        lines += ["", "Before every reset the session had Chromium on three tabs (its start page and two more) and the "
                  "GTK app (tests/apps/gtk3_buttons.py on the bare machine) on screen; after it, one tab and no app window. The first round "
                  "of each is a warm-up, left out."]
        for label, part in (("Bare machine", bare), ("Container", cont)):
            if part:
                s, own = part["server_reset_ms"], part.get("session_reset_ms") or {}
                lines.append(f"{label}: the scene's `reset_ms` (ends the apps, restores the home, starts the browser, "
                             f"waits until the scene reads it again) median {s['median']} ms, p95 {s['p95']} ms; of "
                             f"that, `deskbox up`'s own part (`session_reset_ms`) median {own.get('median')} ms; "
                             f"every reset answered healthy: {part['all_healthy']}.")
        if cont:
            lines.append(f"In the container (no OSWorld server) the GTK app is {cont.get('app')}, started with "
                         "`podman exec` as the session user.")
            rec = cont.get("recreates") or []
            if rec:
                lines.append("Recreate runs (ms, rm / run to healthy): "
                             + ", ".join(f"{r['rm_ms']:.0f} / {r['run_to_healthy_ms']:.0f}" for r in rec) + ".")
        lines.append("")
    if cont:
        lines += ["| memory of one session (cgroup) | |", "|---|---|",
                  f"| idle container, {result['args']['idle_s']:.0f} s after start | {_mem(cont.get('idle_memory'))} |",
                  f"| after the reset rounds | {_mem(cont.get('memory_after_resets'))} |", ""]
    if dense:
        lines += [f"Density: every session resets every {dense['reset_every_s']:.0f} s (staggered) while a client per "
                  f"session asks for a fresh {OUTPUT} PNG screenshot about once a second; a level holds when their p95 is "
                  f"within {dense['limit_ms']:.0f} ms and none failed ({dense['window_s']:.0f} s window per level, longer where "
                  f"that gives fewer than {MIN_SHOTS} screenshots).", "",
                  "| sessions | screenshot median ms | p95 ms | max ms | p95 ms, no reset in flight | shots | failed "
                  "| resets (unhealthy) | reset median ms | cgroup total MB | load 1 min | holds |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for s in dense["steps"]:
            sh = s["screenshots"]
            q = s["screenshots_no_reset_in_flight"]
            lines.append(f"| {s['sessions']} | {sh['median']} | {sh['p95']} | {sh['max']} | {q['p95']} ({q['n']}) | {sh['n']} | "
                         f"{s['screenshot_errors']} | {s['resets']} ({s['resets_unhealthy']}) | {s['reset_ms']['median']} | "
                         f"{s['cgroup_total_mb']:.0f} | {s['load1']:.2f} | {'yes' if s['held'] else '**no**'} |")
        lines += ["", f"**Sessions held: {dense['held']}**. Stopped: {dense['stopped_by']}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.reset", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image", default="deskbox")
    p.add_argument("--no-build", action="store_true", help="use the image as it is")
    p.add_argument("--rounds", type=int, default=15, help="resets timed per setting (after one warm-up)")
    p.add_argument("--recreates", type=int, default=5, help="container recreations timed (the baseline)")
    p.add_argument("--idle-s", type=float, default=20, help="how long the container idles before its memory is read")
    p.add_argument("--max-sessions", type=int, default=12, help="the density cap")
    p.add_argument("--window-s", type=float, default=30, help="measuring window per density level")
    p.add_argument("--keep-going", action="store_true", help="measure every density level, past the first that fails")
    p.add_argument("--skip", action="append", default=[], choices=["bare", "container", "density"])
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        print("bench.reset: run it as root (deskbox up makes its session user; podman runs the containers)",
              file=sys.stderr)
        return 1
    if not args.no_build and ("container" not in args.skip or "density" not in args.skip):
        subprocess.run([str(ROOT / "scripts" / "container-build"), args.image], check=True, stdout=subprocess.DEVNULL)
    started = time.time()
    load_before = os.getloadavg()
    podman_version = subprocess.run(["podman", "--version"], capture_output=True, text=True).stdout.strip()
    result: dict = {"meta": {"when": time.strftime("%Y-%m-%d %H:%M:%S %z"), "machine": platform.node(),
                             "cpus": os.cpu_count(), "podman": podman_version or "no podman", "image": args.image},
                    "args": {k: v for k, v in vars(args).items() if k != "results"} | {"results": str(args.results)}}
    try:
        if "bare" not in args.skip:
            result["bare"] = bare_resets(args.rounds)
        if "container" not in args.skip:
            result["container"] = container_resets(args.image, args.rounds, args.recreates, args.idle_s)
        if "density" not in args.skip:
            result["density"] = density(args.image, args.max_sessions, args.window_s, args.keep_going)
    except (RuntimeError, OSError, SessionFailed, subprocess.CalledProcessError) as exc:
        print(f"bench.reset: {exc}", file=sys.stderr)
        return 1
    result["load"] = f"{load_before[0]:.2f} / {os.getloadavg()[0]:.2f}"
    result["meta"]["duration_s"] = round(time.time() - started, 1)
    from .report import write_results

    write_results(args.results, "reset", result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
