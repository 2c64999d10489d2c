"""What a session's processes cost, and a wait until they are quiet.

Every process of a session descends from ``deskbox up``, its child subreaper
(``deskbox.session.processes``). So the session's CPU time so far is ``deskbox up``'s
own with that of the children it reaped (the kernel adds theirs to its ``cutime``), and
each live descendant's with that of its reaped children, all read from /proc. No cgroup
is needed, so a bare session on a machine's own user is measured as a container is.

``settle()`` is what a harness waits on after a task's setup has started its apps: the
session's CPU share over the last ``for_s`` seconds is below ``quiet_share`` of a core
(the apps have started and drawn), or ``timeout_s`` has passed. OSWorld's own run
scripts sleep 60 s after every reset for the same reason; a session that says when it
is ready is quicker, and the moment is the same for every app."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass

from .processes import descendants, process_table

__all__ = ["cpu_seconds", "settle", "Settled"]

_TICK = os.sysconf("SC_CLK_TCK")
# How often settle() reads the process table: about 20 us of CPU a process (a container
# holds some 60; a machine's own user, hundreds), four times a second while a harness
# waits, and never otherwise.
SAMPLE_S = 0.25


def _times(pid: int) -> int:
    """utime + stime + cutime + cstime of ``pid``, in clock ticks; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return 0
    fields = data[data.rfind(b") ") + 2:].split()
    # After the command: state, ppid ... utime is the 12th field, then stime, cutime, cstime.
    return sum(int(v) for v in fields[11:15])


def cpu_seconds(root: int | None = None) -> float:
    """CPU seconds used so far by ``root`` (default: this process, ``deskbox up``) and
    everything it started."""
    root = os.getpid() if root is None else root
    pids = descendants(root, process_table()) | {root}
    return sum(_times(pid) for pid in pids) / _TICK


@dataclass(frozen=True, slots=True)
class Settled:
    settled: bool
    waited_s: float
    share: float  # of a core, over the last window read
    cpu_s: float  # used by the session while it was waited for

    def to_json(self) -> dict:
        return {"settled": self.settled, "waited_s": round(self.waited_s, 3), "share": round(self.share, 3),
                "cpu_s": round(self.cpu_s, 3)}


async def settle(quiet_share: float, for_s: float, timeout_s: float, root: int | None = None) -> Settled:
    """Wait until the session has used less than ``quiet_share`` of a core over the last
    ``for_s`` seconds, or ``timeout_s`` have passed."""
    started = time.monotonic()
    first = cpu_seconds(root)
    samples: list[tuple[float, float]] = [(started, first)]
    share = 0.0
    while True:
        await asyncio.sleep(SAMPLE_S)
        now = time.monotonic()
        used = cpu_seconds(root)
        # A process that ended before its parent reaped it takes its time out of the sum
        # for a moment: a sum that went down counts as no use, never as negative.
        samples.append((now, max(used, samples[-1][1])))
        while len(samples) > 2 and now - samples[1][0] >= for_s:
            samples.pop(0)
        (t0, c0), (t1, c1) = samples[0], samples[-1]
        share = (c1 - c0) / max(1e-6, t1 - t0)
        if t1 - t0 >= for_s and share < quiet_share:
            return Settled(True, now - started, share, samples[-1][1] - first)
        if now - started >= timeout_s:
            return Settled(False, now - started, share, samples[-1][1] - first)
