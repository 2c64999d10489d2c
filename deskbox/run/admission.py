"""Admission: at most so many heavy moments at once on one machine.

A session's start, its reset and the apps a task's setup starts cost seconds of CPU
each, in a burst. Twenty sessions that all do it in the same second (a run's first
tasks, or tasks that end together) share two cores twenty ways, and every session that
is only observing meanwhile waits as long as the slowest of them: in bench.fleet, 10
sessions unpaced had the environment's share of a step at a p95 of 3.9 s, paced 0.4 s.
Queued instead, each burst runs at the speed of the machine, and the observations
between them stay quick.

    admission = Admission(slots=2)          # machine-wide (the user's lock folder under /tmp)
    with admission.slot() as queued_s:      # waits its turn, FIFO within the process
        env.reset(); setup(); env.settle()

    reads = Admission(slots=4, kind="read")  # another kind of moment: slots of its own

Slots are files under ``folder`` held with ``flock``: every run of the same user on the
machine (and any other harness that uses this class) shares them, and a run that dies
lets go of its slots with its descriptors. The folder is the user's own (mode 0700, its
owner checked): another user cannot take a run's slots from it, and a folder planted by
someone else is not used (the slots are then kept in the process, and that is said). Within one process, callers are served in the order they
came. ``folder=None`` keeps the slots in the process (sessions on other machines: a
cluster's pods, attached sessions)."""

from __future__ import annotations

import collections
import fcntl
import os
import stat
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

__all__ = ["Admission", "ADMISSION_DIR", "HEAVY_WEIGHT", "SESSIONS_PER_SLOT", "default_read_slots", "default_slots"]

ADMISSION_DIR = Path(f"/tmp/deskbox-admission-{os.getuid()}")
# A session's CPU weight while its setup starts its apps, against its own: a quarter, so
# that the observations of the sessions around it come first (it still has every idle
# cycle).
HEAVY_WEIGHT = 0.25
# Sessions on other machines (a cluster's pods, attached sessions): one slot per this many
# of a run's sessions, the density measured on one machine (20 sessions, 2 cores, 2 slots).
SESSIONS_PER_SLOT = 10
# How often a caller at the head of the queue tries the machine's slots again.
POLL_S = 0.05


def default_slots(cores: int | None = None) -> int:
    """Heavy moments at once on a machine of ``cores`` CPUs: one per core. What the
    fleet bench measured (docs/run.md): with 2 slots on 2 cores, 20 sessions held
    OSWorld's pace and 24 did not; other counts were not compared."""
    return max(1, cores if cores is not None else (os.cpu_count() or 1))


def default_read_slots() -> int:
    """Accessibility tree reads at once on a machine (0: no bound, the default). What the
    fleet bench measured (docs/run.md): bounding them made the observations slower, not
    quicker. Most reads take a tenth of a second and a few take seconds (an app's whole
    tree read afresh: GIMP's, Calc's); in a queue the short ones wait behind the long
    ones (2 slots on 2 cores: the wait's p95 1.4 s at 20 sessions, 2.0 s at 24), where
    the kernel, sharing the cores, lets them finish. So none is the default."""
    return 0


def _own_folder(folder: Path) -> bool:
    """``folder`` made if missing, and a real directory this user owns that nobody else
    may write to."""
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    st = folder.lstat()
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


class Admission:
    def __init__(self, slots: int, folder: Path | None = ADMISSION_DIR, kind: str = "slot") -> None:
        if slots < 1:
            raise ValueError("admission needs at least one slot")
        if not kind.isalnum():
            raise ValueError(f"admission kind {kind!r}: letters and digits only")
        self.slots = slots
        self.folder = folder
        self.kind = kind
        self._lock = threading.Condition()
        self._line: collections.deque[object] = collections.deque()
        self._local_free = slots
        if folder is not None and not _own_folder(folder):
            print(f"deskbox: {folder} is not a folder of this user's alone; admission slots are kept in this "
                  "process", file=sys.stderr)
            self.folder = None

    @contextmanager
    def slot(self) -> Iterator[float]:
        """Hold one slot for the ``with`` block; yields the seconds waited for it."""
        started = time.monotonic()
        me = object()
        with self._lock:
            self._line.append(me)
            # First in line, and a slot of this process's own free: then the machine's.
            self._lock.wait_for(lambda: self._line[0] is me and self._local_free > 0)
            self._local_free -= 1
        fd = None
        try:
            if self.folder is not None:
                fd = self._machine_slot()
        except BaseException:
            with self._lock:
                self._local_free += 1
                self._line.popleft()
                self._lock.notify_all()
            raise
        with self._lock:
            self._line.popleft()
            self._lock.notify_all()
        try:
            yield time.monotonic() - started
        finally:
            if fd is not None:
                os.close(fd)  # (closing lets go of the flock)
            with self._lock:
                self._local_free += 1
                self._lock.notify_all()

    def _machine_slot(self) -> int:
        """A descriptor holding one of the machine's slot files, waited for."""
        assert self.folder is not None
        while True:
            for i in range(self.slots):
                path = self.folder / f"{self.kind}{i}.lock"
                fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                return fd
            time.sleep(POLL_S)
