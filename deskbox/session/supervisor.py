"""Process supervision for one session.

Each child runs in its own process group (Chromium forks many processes; ending the
group ends them all). One loop owns every start and stop, so they never overlap: it
looks at what exited, what must go because something it needs went or came back, and
what may start, and acts on each in order. A child is started only once the previous
one of the same name is gone, its whole process group with it, and its ports are free;
a failure while starting is handled like any other exit. A child that exits is
started again after a short delay (none when it had run a while or exited cleanly,
doubling up to ``BACKOFF_MAX`` while it keeps dying young), unless its restart policy
says it is started only on request (Chromium in OSWorld mode, whose life the task owns)
and it did not go with something it needs (Chromium with its compositor).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Literal

from ..common.logging import get_logger
from . import processes

__all__ = ["ChildSpec", "Child", "Supervisor", "StartFailed"]

log = get_logger("deskbox.supervisor")

BACKOFF_START = 0.25
BACKOFF_MAX = 2.0
# A child that ran this long was healthy: it comes back at once.
STABLE_AFTER = 5.0
STOP_GRACE = 5.0
# How long a stopped child's process group and ports may take to go.
GONE_TIMEOUT = 5.0


class StartFailed(Exception):
    pass


@dataclass
class ChildSpec:
    name: str
    argv: Callable[[], list[str]]
    env: Callable[[], dict[str, str]]
    ready: Callable[["Child"], Awaitable[None]] | None = None
    needs: tuple[str, ...] = ()
    user: int | None = None
    group: int | None = None
    cwd: str | None = None
    log_path: str | None = None
    # Called once the child's process group is gone (on restart and on stop): ends what
    # it started outside its group.
    after_stop: Callable[[], Awaitable[None]] | None = None
    # "always": started again whenever it exits; "on-request": only by start().
    restart: Literal["always", "on-request"] = "always"
    # TCP ports it listens on: they must be free before it starts.
    ports: tuple[int, ...] = ()
    # Whether what it starts outside its own process group belongs to the session's
    # apps (Sway's exec, D-Bus activation, the OSWorld server's commands) rather than
    # to deskbox: a reset ends those and keeps the child.
    hosts_apps: bool = False
    # Programs a host of apps starts as part of itself (Sway: Xwayland, swaybg): by name,
    # its direct children that are deskbox's own, not apps.
    helpers: tuple[str, ...] = ()
    stop_grace: float = STOP_GRACE
    # How a graceful stop asks it to end, instead of SIGTERM to its process group
    # (Chromium quits through DevTools: on SIGTERM it exits without writing its cookies).
    # SIGTERM and SIGKILL follow if it has not ended within the grace period.
    ask_to_stop: Callable[["Child"], Awaitable[None]] | None = None


@dataclass
class Child:
    spec: ChildSpec
    proc: asyncio.subprocess.Process | None = None
    state: Literal["down", "starting", "up", "stopping"] = "down"
    wanted: bool = True
    started_at: float = 0.0
    restarts: int = 0
    generation: int = 0  # bumped at every start; dependents started on another one go
    need_generations: dict[str, int] = field(default_factory=dict)
    backoff: float = BACKOFF_START
    next_start: float = 0.0
    last_exit: int | None = None
    log_file: object = field(default=None, repr=False)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc and self.proc.returncode is None else None


class Supervisor:
    def __init__(self, specs: list[ChildSpec]) -> None:
        self.children = {s.name: Child(s) for s in specs}
        self.order = [s.name for s in specs]
        self._lock = asyncio.Lock()  # held by every start and stop
        self._wake = asyncio.Event()
        self._loop: asyncio.Task | None = None
        self._reaper: asyncio.Task | None = None
        self._watchers: set[asyncio.Task] = set()
        self._stopping = False
        self._spawning = False

    # -- public -----------------------------------------------------------------------

    async def start_all(self) -> None:
        """Start every child in order, each ready before the next; raises StartFailed
        (or the ready check's error) when one cannot come up."""
        self._reaper = asyncio.create_task(self._reap_loop(), name="reaper")
        async with self._lock:
            for name in self.order:
                child = self.children[name]
                await self._free_ports(child)
                await self._start(child)
        self._loop = asyncio.create_task(self._run(), name="supervisor")

    async def stop_all(self) -> None:
        self._stopping = True
        self._wake.set()
        async with self._lock:
            if self._loop is not None:
                self._loop.cancel()
            for name in reversed(self.order):
                await self._stop(self.children[name])
        for task in list(self._watchers):
            task.cancel()
        if self._reaper is not None:
            self._reaper.cancel()

    async def stop(self, name: str, *, kill: bool = False) -> None:
        """Stop a child and keep it stopped until ``start(name)`` (the rest of the
        session stays up, dependents excepted). ``kill``: no grace period."""
        async with self._lock:
            child = self.children[name]
            child.wanted = False
            await self._stop(child, grace=0.0 if kill else None)
        self._wake.set()

    async def start(self, name: str, timeout: float = 60.0) -> None:
        """Start a stopped child (or one waiting to be restarted) now and wait until it
        is ready; raises StartFailed when it does not come up."""
        child = self.children[name]
        child.wanted = True
        child.next_start = 0.0
        self._wake.set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            async with self._lock:
                if child.state == "up" and child.proc is not None and child.proc.returncode is None:
                    return
                if child.state == "down" and all(self.children[n].state == "up" for n in child.spec.needs):
                    await self._free_ports(child)
                    try:
                        await self._start(child)
                        return
                    except Exception as exc:
                        await self._stop(child)
                        raise StartFailed(f"{name} did not start: {exc}") from exc
            await asyncio.sleep(0.05)
        raise StartFailed(f"{name} was not up within {timeout:.0f}s")

    def status(self) -> dict[str, dict]:
        now = time.monotonic()
        return {
            name: {
                "state": c.state if c.wanted or c.state != "down" else "stopped",
                "pid": c.pid,
                "restarts": c.restarts,
                "uptime_s": round(now - c.started_at, 1) if c.state == "up" else None,
                "last_exit": c.last_exit,
            }
            for name, c in self.children.items()
        }

    def restarting(self) -> list[str]:
        return [n for n, c in self.children.items() if c.wanted and c.state != "up"]

    def own_pids(self) -> set[int]:
        """What belongs to deskbox itself: each child and, unless it hosts apps, its
        process group and everything below it. (What a host of apps runs is an app, in
        its group or not: D-Bus activates services without a group of their own.)"""
        table = processes.process_table()
        own: set[int] = {os.getpid()}
        for child in self.children.values():
            pid = child.pid
            if pid is None:
                continue
            own.add(pid)
            if not child.spec.hosts_apps:
                own.update(p.pid for p in table.values() if p.pgid == pid)
                own.update(processes.descendants(pid, table))
            elif child.spec.helpers:
                # Its helpers, by name, below it or in its process group: Sway double-forks
                # Xwayland, which then hangs below deskbox up (the subreaper), in Sway's group.
                own.update(p.pid for p in table.values()
                           if (p.ppid == pid or p.pgid == pid) and p.comm in child.spec.helpers)
        return own

    def spawned_pids(self) -> set[int]:
        return {c.proc.pid for c in self.children.values() if c.proc is not None and c.proc.returncode is None}

    # -- the loop ---------------------------------------------------------------------

    async def _run(self) -> None:
        while not self._stopping:
            self._wake.clear()
            try:
                delay = await self._reconcile()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # never let one bad round end supervision
                log.exception("supervision round failed", error=str(exc))
                delay = 1.0
            try:
                await asyncio.wait_for(self._wake.wait(), delay)
            except asyncio.TimeoutError:
                pass

    async def _reconcile(self) -> float:
        async with self._lock:
            if self._stopping:
                return 60.0
            # What exited.
            for name in self.order:
                child = self.children[name]
                if child.state == "up" and child.proc is not None and child.proc.returncode is not None:
                    await self._exited(child)
            # What needs something that went or came back.
            for name in self.order:
                child = self.children[name]
                if child.state != "up":
                    continue
                stale = self._stale_needs(child)
                if stale:
                    log.info("restarting with what it needs", child=name, needs=stale)
                    await self._stop(child)
                    child.next_start = 0.0
            # What may start.
            now = time.monotonic()
            wait = 60.0
            for name in self.order:
                child = self.children[name]
                if child.state != "down" or not child.wanted or self._stopping:
                    continue
                if any(self.children[n].state != "up" for n in child.spec.needs):
                    continue
                if now < child.next_start:
                    wait = min(wait, child.next_start - now)
                    continue
                try:
                    await self._free_ports(child)
                    await self._start(child)
                    child.restarts += 1
                except Exception as exc:
                    log.error("restart failed", child=name, error=str(exc))
                    await self._stop(child)
                    self._schedule(child, ran=0.0, clean=False)
                    wait = min(wait, child.backoff)
                now = time.monotonic()
            return max(wait, 0.01)

    async def _exited(self, child: Child) -> None:
        assert child.proc is not None
        code = child.proc.returncode
        ran = time.monotonic() - child.started_at
        child.last_exit = code
        await self._stop(child)  # its group, its leftovers, its log file
        if child.spec.restart == "on-request" and not self._lost_a_need(child):
            child.wanted = False
            log.warning("exited; started again on request", child=child.spec.name, code=code, ran_s=round(ran, 1))
            return
        self._schedule(child, ran, clean=code == 0)
        log.warning("exited; restarting", child=child.spec.name, code=code, ran_s=round(ran, 1),
                    delay_s=round(max(child.next_start - time.monotonic(), 0.0), 2))

    def _lost_a_need(self, child: Child) -> bool:
        """Whether something ``child`` needs went, or came back anew, since it started.
        A child that exits then went with it (Chromium exits as soon as its compositor
        is gone, at times while this loop is still ending the compositor's group): it is
        started again with what it needs, whatever its restart policy, as if this loop
        had stopped it."""
        return bool(self._stale_needs(child)) or any(
            (need := self.children[n]).proc is None or not processes.alive(need.proc.pid) for n in child.spec.needs)

    def _stale_needs(self, child: Child) -> list[str]:
        """What ``child`` needs that is not up, or is up anew since it started."""
        return [n for n in child.spec.needs
                if self.children[n].state != "up" or self.children[n].generation != child.need_generations.get(n)]

    def _schedule(self, child: Child, ran: float, clean: bool) -> None:
        if clean or ran > STABLE_AFTER:
            child.backoff = BACKOFF_START
            child.next_start = 0.0
        else:
            child.next_start = time.monotonic() + child.backoff
            child.backoff = min(child.backoff * 2, BACKOFF_MAX)

    # -- one child ----------------------------------------------------------------------

    async def _start(self, child: Child) -> None:
        spec = child.spec
        if spec.log_path and child.log_file is None:
            child.log_file = open(spec.log_path, "ab", buffering=0)
        out = child.log_file if child.log_file is not None else asyncio.subprocess.DEVNULL
        kwargs: dict = {}
        if spec.user is not None and spec.user != os.getuid():
            kwargs.update(user=spec.user, group=spec.group, extra_groups=[])
        argv = spec.argv()
        child.state = "starting"
        self._spawning = True
        try:
            child.proc = await asyncio.create_subprocess_exec(
                *argv, env=spec.env(), cwd=spec.cwd, stdin=asyncio.subprocess.DEVNULL,
                stdout=out, stderr=out, start_new_session=True, **kwargs,
            )
        except OSError as exc:
            child.state = "down"
            raise StartFailed(f"{spec.name}: cannot run {argv[0]}: {exc}") from exc
        finally:
            self._spawning = False
        child.started_at = time.monotonic()
        child.generation += 1
        child.need_generations = {n: self.children[n].generation for n in spec.needs}
        log.info("started", child=spec.name, pid=child.proc.pid, argv=argv[0])
        watcher = asyncio.create_task(self._watch(child.proc), name=f"watch-{spec.name}")
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)
        if spec.ready is not None:
            await spec.ready(child)
        if child.proc.returncode is not None:
            raise StartFailed(f"{spec.name} exited with {child.proc.returncode} while starting")
        child.state = "up"

    async def _watch(self, proc: asyncio.subprocess.Process) -> None:
        await proc.wait()
        self._wake.set()

    async def _stop(self, child: Child, grace: float | None = None) -> None:
        proc = child.proc
        grace = child.spec.stop_grace if grace is None else grace
        if proc is not None:
            child.state = "stopping"
            # What it started that may leave its group (Chromium's zygotes and crash
            # handlers do) goes with it, unless those are the session's apps.
            below = set() if child.spec.hosts_apps else processes.descendants(proc.pid, processes.process_table())
            if proc.returncode is None and grace > 0:
                deadline = time.monotonic() + grace
                if child.spec.ask_to_stop is not None:
                    try:
                        await asyncio.wait_for(child.spec.ask_to_stop(child), grace)
                        await asyncio.wait_for(proc.wait(), max(deadline - time.monotonic(), 0.01))
                    except Exception as exc:  # not answering: the signal then
                        log.info("did not stop when asked; terminating", child=child.spec.name, error=str(exc))
                if proc.returncode is None:
                    _signal_group(proc.pid, signal.SIGTERM)
                try:
                    await asyncio.wait_for(proc.wait(), max(deadline - time.monotonic(), 0.01))
                    # Asked to stop, its helpers finish what it asked of them on the way out
                    # (writing files) before anything is killed.
                    while (child.spec.ask_to_stop is not None and processes.group_alive(proc.pid)
                           and time.monotonic() < deadline):
                        await asyncio.sleep(0.02)
                except asyncio.TimeoutError:
                    log.warning("did not stop; killing", child=child.spec.name, pid=proc.pid)
            # Whatever the group still holds (a forked helper) goes too, and is waited for:
            # the next one must not meet it on its ports or its files.
            _signal_group(proc.pid, signal.SIGKILL)
            await proc.wait()
            await self._group_gone(child.spec.name, proc.pid)
            if below:
                await processes.end_processes(below, grace=0.0)
        if child.spec.after_stop is not None:
            await child.spec.after_stop()
        if child.log_file is not None:
            child.log_file.close()
            child.log_file = None
        child.state = "down"

    async def _group_gone(self, name: str, pgid: int) -> None:
        deadline = time.monotonic() + GONE_TIMEOUT
        while True:
            left = processes.group_alive(pgid)
            if not left:
                return
            if time.monotonic() > deadline:
                log.error("process group outlived SIGKILL", child=name, pids=left)
                return
            _signal_group(pgid, signal.SIGKILL)
            await asyncio.sleep(0.02)

    async def _free_ports(self, child: Child) -> None:
        """Wait until nothing listens on the child's ports; what still holds one after
        GONE_TIMEOUT and is deskbox's own leftover is ended, anything else is an error."""
        deadline = time.monotonic() + GONE_TIMEOUT
        for port in child.spec.ports:
            while True:
                busy, pids = processes.listening_pids(port)
                if not busy:
                    break
                if time.monotonic() > deadline:
                    who = ", ".join(processes.describe(p) for p in pids) or "a process deskbox cannot see"
                    raise StartFailed(f"{child.spec.name}: port {port} is held by {who}")
                await asyncio.sleep(0.05)

    async def _reap_loop(self) -> None:
        reaper = processes.Reaper()
        while True:
            if not self._spawning:
                reaper.scan(self.spawned_pids())
            await asyncio.sleep(0.5)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
