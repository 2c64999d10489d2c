"""The processes of a session: finding them, ending them, reaping the ones it adopts.

``deskbox up`` makes itself the session's child subreaper (``PR_SET_CHILD_SUBREAPER``):
a process started anywhere inside the session that detaches (``setsid``, a double
fork, ``nohup``, ``env -i``) is re-parented to it when its parent exits, instead of to
init. So every process the session started stays a descendant of ``deskbox up`` and
can be found from the process table alone, without a cgroup. Adopted orphans are
reaped here when they exit (asyncio reaps only the children it started).

Linux only: everything is read from /proc.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import time
from dataclasses import dataclass
from typing import Iterable

from ..common.logging import get_logger

__all__ = [
    "Proc",
    "become_subreaper",
    "process_table",
    "descendants",
    "environ_has",
    "alive",
    "group_alive",
    "end_processes",
    "Reaper",
    "own_children",
    "reap_ended",
    "listening_pids",
    "describe",
    "cmdline",
    "mentioning",
    "end_mentioning",
]

log = get_logger("deskbox.processes")

_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True, slots=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    state: str
    comm: str


def become_subreaper() -> bool:
    """Adopt the orphans of every descendant. False where the kernel refuses."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _stat(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # comm may hold spaces and parentheses: the fields after it start at the last ") ".
    head, _, rest = data.rpartition(b") ")
    fields = rest.split()
    if len(fields) < 3:
        return None
    comm = head.partition(b"(")[2].decode(errors="replace")
    return Proc(pid, int(fields[1]), int(fields[2]), fields[0].decode(), comm)


def process_table() -> dict[int, Proc]:
    table = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            proc = _stat(int(entry.name))
            if proc is not None:
                table[proc.pid] = proc
    return table


def descendants(root: int, table: dict[int, Proc]) -> set[int]:
    """Every process below ``root`` in the parent tree (not ``root`` itself)."""
    children: dict[int, list[int]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            if pid not in found:
                found.add(pid)
                todo.append(pid)
    return found


def environ_has(pid: int, entries: Iterable[bytes]) -> bool:
    """Whether the process's environment holds one of ``entries`` (``b"KEY=value"``)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return False
    return any(e in env for e in entries)


def alive(pid: int) -> bool:
    """Running, not a zombie."""
    proc = _stat(pid)
    return proc is not None and proc.state not in ("Z", "X")


def group_alive(pgid: int, table: dict[int, Proc] | None = None) -> list[int]:
    """The live (not zombie) members of a process group."""
    table = table if table is not None else process_table()
    return [p.pid for p in table.values() if p.pgid == pgid and p.state not in ("Z", "X")]


def own_children() -> set[int] | None:
    """This process's children, from each of its threads' ``children`` file: a few
    reads where the whole process table is one per process (a session's reaper looks
    twice a second, and on a busy machine's own user the table has hundreds). None
    where the kernel has no such file."""
    if not os.path.exists(f"/proc/self/task/{os.getpid()}/children"):
        return None
    found: set[int] = set()
    for task in os.scandir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task.name}/children", "rb") as f:
                found.update(int(pid) for pid in f.read().split())
        except OSError:  # (a thread that ended meanwhile)
            continue
    return found


class Reaper:
    """Reaps the zombies this process adopted. asyncio reaps the children it started
    (a thread waits for each), and does so at once: a zombie child seen on two scans in
    a row, and not one of ``skip``, is an adopted orphan, which nobody else will reap."""

    def __init__(self) -> None:
        self._seen: set[int] = set()

    def scan(self, skip: set[int]) -> list[int]:
        me = os.getpid()
        children = own_children()
        if children is None:  # (a kernel without /proc/PID/task/TID/children: the whole table)
            zombies = {p.pid for p in process_table().values() if p.ppid == me and p.state == "Z" and p.pid not in skip}
        else:
            zombies = {pid for pid in children - skip if (p := _stat(pid)) is not None and p.state == "Z"}
        reaped = []
        for pid in zombies & self._seen:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue
            if done:
                reaped.append(pid)
        self._seen = zombies - set(reaped)
        return reaped


async def reap_ended(pids: Iterable[int], *, skip: Iterable[int] = (), timeout: float = 2.0) -> list[int]:
    """Reaps the zombies among ``pids`` that this process adopted, and waits (at most
    ``timeout`` seconds) for the session's other processes to reap theirs: once it
    returns, the processes ended are gone from the process table, and a check made next
    (pgrep's, a grader's) no longer sees them. ``skip`` are children that asyncio waits
    for, whose exit status is its to collect. A zombie whose parent is outside the
    session (a harness's ``Popen`` that started an app with the session's environment)
    is its parent's to reap, whenever it does: it is not waited for. Returns the pids
    still there."""
    me, left, skip = os.getpid(), set(pids), set(skip)
    deadline = time.monotonic() + timeout
    outside: set[int] = set()
    while True:
        for pid in list(left - outside):
            proc = _stat(pid)
            if proc is None:
                left.discard(pid)
            elif proc.state in ("Z", "X") and proc.ppid == me and pid not in skip:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
                if _stat(pid) is None:
                    left.discard(pid)
            elif proc.state in ("Z", "X") and not _below(proc.ppid, me):
                outside.add(pid)
        if not left - outside or time.monotonic() > deadline:
            return sorted(left)
        await asyncio.sleep(0.02)


def _below(pid: int, root: int) -> bool:
    """Whether ``pid`` is ``root`` or one of its descendants."""
    seen = set()
    while pid > 1 and pid not in seen:
        if pid == root:
            return True
        seen.add(pid)
        proc = _stat(pid)
        if proc is None:
            return False
        pid = proc.ppid
    return pid == root


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


async def end_processes(pids: Iterable[int], *, grace: float = 1.0, first: int = signal.SIGTERM) -> list[int]:
    """``first`` (SIGTERM), then SIGKILL what is still alive after ``grace`` seconds.
    Returns the pids still alive at the end (none, unless another user's process was
    named)."""
    pids = [p for p in set(pids) if p != os.getpid()]
    for sig, wait in ((first, grace), (signal.SIGKILL, 2.0)):
        pids = [p for p in pids if alive(p)]
        if not pids:
            return []
        _signal_all(pids, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            pids = [p for p in pids if alive(p)]
            if not pids:
                return []
            await asyncio.sleep(0.02)
    return [p for p in pids if alive(p)]


def _socket_inodes_listening(port: int) -> set[str]:
    inodes = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f, None)
                for line in f:
                    fields = line.split()
                    # local_address is HEXIP:HEXPORT; state 0A is LISTEN.
                    if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(fields[9])
        except OSError:
            continue
    return inodes


def listening_pids(port: int) -> tuple[bool, list[int]]:
    """Whether something listens on TCP ``port`` (any address), and the pids holding
    that socket that this process may look at."""
    inodes = _socket_inodes_listening(port)
    if not inodes:
        return False, []
    wanted = {f"socket:[{i}]" for i in inodes}
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            for fd in os.scandir(f"/proc/{entry.name}/fd"):
                try:
                    if os.readlink(fd.path) in wanted:
                        pids.append(int(entry.name))
                        break
                except OSError:
                    continue
        except OSError:
            continue
    return True, pids


def describe(pid: int, *, short: bool = False) -> str:
    """``pid (command line)`` for messages; ``short``: the program's name only."""
    if short:
        proc = _stat(pid)
        return proc.comm if proc else str(pid)
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmd = "?"
    return f"{pid} ({cmd[:120]})"


def cmdline(pid: int) -> list[str]:
    """A process's arguments ([] once it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0")[:-1]]
    except OSError:
        return []


def mentioning(*texts: str, uid: int | None = None) -> list[int]:
    """Pids whose command line or environment contains one of ``texts`` (paths unique to
    this session). Chromium rewrites its environment block, but its command line names
    its profile folder. Only processes this session could have started count: in the
    same PID namespace (another container's processes are visible to root here, and may
    name the same paths), and owned by ``uid`` when given."""
    needles = [t.encode() for t in texts]
    me = os.getpid()
    try:
        my_ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        my_ns = None
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if my_ns is not None and os.readlink(f"/proc/{entry.name}/ns/pid") != my_ns:
                continue
            if uid is not None and os.stat(f"/proc/{entry.name}").st_uid != uid:
                continue
        except OSError:
            continue
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{entry.name}/{part}", "rb") as f:
                    data = f.read()
                    if any(n in data for n in needles):
                        found.append(int(entry.name))
                        break
            except OSError:
                continue
    return found


async def end_mentioning(*texts: str, uid: int | None = None, grace: float = 2.0) -> None:
    pids = mentioning(*texts, uid=uid)
    if pids:
        log.warning("ending processes left behind", pids=pids, mentioning=list(texts))
        await end_processes(pids, grace=grace)
