"""Process supervision for one session.

Each child runs in its own process group (Chromium forks many processes; stopping the
group stops them all). A child that exits is restarted with exponential backoff, and
the children that need it (everything needs Sway) are restarted after it. On stop,
children are stopped in reverse start order: SIGTERM to the group, SIGKILL after a
grace period.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from ..common.logging import get_logger

__all__ = ["ChildSpec", "Supervisor"]

log = get_logger("deskbox.supervisor")

BACKOFF_START = 0.5
BACKOFF_MAX = 30.0
# A child that ran this long is considered healthy again: its backoff resets.
STABLE_AFTER = 30.0
STOP_GRACE = 5.0


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
    # it started outside its group (the bridge's Chromium has a group of its own).
    after_stop: Callable[[], Awaitable[None]] | None = None


@dataclass
class Child:
    spec: ChildSpec
    proc: asyncio.subprocess.Process | None = None
    started_at: float = 0.0
    restarts: int = 0
    backoff: float = BACKOFF_START
    stopping: bool = False
    waiter: asyncio.Task | None = None
    log_file: object = field(default=None, repr=False)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc and self.proc.returncode is None else None


class Supervisor:
    def __init__(self, specs: list[ChildSpec]) -> None:
        self.children = {s.name: Child(s) for s in specs}
        self.order = [s.name for s in specs]
        self._stopping = False
        self._restart_lock = asyncio.Lock()
        self.failed: str | None = None

    async def start_all(self) -> None:
        for name in self.order:
            await self._start(self.children[name])

    async def _start(self, child: Child) -> None:
        spec = child.spec
        if spec.log_path:
            child.log_file = open(spec.log_path, "ab", buffering=0)
        out = child.log_file if child.log_file is not None else asyncio.subprocess.DEVNULL
        kwargs: dict = {}
        if spec.user is not None and spec.user != os.getuid():
            kwargs.update(user=spec.user, group=spec.group, extra_groups=[])
        argv = spec.argv()
        child.proc = await asyncio.create_subprocess_exec(
            *argv,
            env=spec.env(),
            cwd=spec.cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            **kwargs,
        )
        child.started_at = time.monotonic()
        child.stopping = False
        log.info("started", child=spec.name, pid=child.proc.pid, argv=argv[0])
        if spec.ready is not None:
            await spec.ready(child)
        child.waiter = asyncio.create_task(self._watch(child), name=f"watch-{spec.name}")

    async def _watch(self, child: Child) -> None:
        assert child.proc is not None
        code = await child.proc.wait()
        if self._stopping or child.stopping:
            return
        # What it left behind (its group, what it started outside it) goes before it
        # comes back: a second browser on the same profile would not start.
        _signal_group(child.proc.pid, signal.SIGKILL)
        if child.spec.after_stop is not None:
            await child.spec.after_stop()
        ran = time.monotonic() - child.started_at
        if ran > STABLE_AFTER:
            child.backoff = BACKOFF_START
        log.warning("exited; restarting", child=child.spec.name, code=code, ran_s=round(ran, 1), delay_s=child.backoff)
        await asyncio.sleep(child.backoff)
        child.backoff = min(child.backoff * 2, BACKOFF_MAX)
        if self._stopping:
            return
        async with self._restart_lock:
            dependents = [n for n in self.order if child.spec.name in self.children[n].spec.needs]
            for name in reversed(dependents):
                await self._stop(self.children[name])
            child.restarts += 1
            try:
                await self._start(child)
                for name in dependents:
                    await self._start(self.children[name])
            except Exception as exc:
                log.error("restart failed", child=child.spec.name, error=str(exc))
                # Try again later through the same path.
                child.waiter = asyncio.create_task(self._watch_dead(child), name=f"retry-{child.spec.name}")

    async def _watch_dead(self, child: Child) -> None:
        await asyncio.sleep(child.backoff)
        child.backoff = min(child.backoff * 2, BACKOFF_MAX)
        if not self._stopping:
            async with self._restart_lock:
                try:
                    await self._start(child)
                except Exception as exc:
                    log.error("restart failed", child=child.spec.name, error=str(exc))
                    child.waiter = asyncio.create_task(self._watch_dead(child))

    async def _stop(self, child: Child) -> None:
        child.stopping = True
        proc = child.proc
        if child.waiter is not None and child.waiter is not asyncio.current_task():
            child.waiter.cancel()
        if proc is not None and proc.returncode is None:
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), STOP_GRACE)
            except asyncio.TimeoutError:
                log.warning("did not stop; killing", child=child.spec.name, pid=proc.pid)
                _signal_group(proc.pid, signal.SIGKILL)
                await proc.wait()
        if proc is not None:
            # Whatever the group left behind (a forked helper), it goes too.
            _signal_group(proc.pid, signal.SIGKILL)
        if child.spec.after_stop is not None:
            await child.spec.after_stop()
        if child.log_file is not None:
            child.log_file.close()
            child.log_file = None

    async def stop_all(self) -> None:
        self._stopping = True
        async with self._restart_lock:
            for name in reversed(self.order):
                await self._stop(self.children[name])


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
