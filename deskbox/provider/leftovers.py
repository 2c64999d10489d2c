"""Leftovers: containers whose owner, the harness process that started them, is gone.

``PodmanBackend`` labels each container it starts with its owner: ``deskbox.owner-pid``
(the harness's pid) and ``deskbox.owner-pidns`` (the pid namespace that pid belongs to,
``pid:[4026531836]``). A harness killed outright (SIGKILL, the OOM killer, a crash)
cannot remove its containers; the next run does, and only those whose owner is gone:

- no process has the pid any more (or only a zombie, which has ended);
- the process that has it now started after the container was made: the pid went to
  another process (a harness always starts before the containers it starts).

A container of another pid namespace, or without an owner pid, is never taken: its
pid says nothing about the processes here. Containers started before the namespace
label existed are judged by their pid alone.

:func:`leftovers` decides, from what ``podman ps -a --format json`` says and a lookup
of process start times; :func:`process_started` and :func:`pid_namespace` read them
from /proc."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable

__all__ = ["OWNER_PID", "OWNER_PIDNS", "Leftover", "leftovers", "process_started", "pid_namespace"]

OWNER_PID = "deskbox.owner-pid"
OWNER_PIDNS = "deskbox.owner-pidns"

# Start times from /proc are whole seconds at best (the boot time is), and podman's
# creation time too: a live owner may look up to this much younger than its container.
CLOCK_SLACK_S = 5.0


@dataclass(frozen=True)
class Leftover:
    name: str
    owner_pid: int
    why: str


def _created(container: dict[str, Any]) -> float | None:
    value = container.get("Created")
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def leftovers(containers: Iterable[dict[str, Any]], *, pidns: str,
              started: Callable[[int], float | None]) -> list[Leftover]:
    """The containers (``podman ps -a --format json`` entries) whose owner is gone.
    ``pidns``: this process's pid namespace; ``started(pid)``: when the process with
    that pid started (Unix seconds), None when there is none."""
    found: list[Leftover] = []
    for container in containers:
        labels = container.get("Labels") or {}
        names = container.get("Names") or [container.get("Id", "?")]
        name = names[0] if isinstance(names, list) else str(names)
        pid_text = str(labels.get(OWNER_PID, ""))
        if not pid_text.isdigit() or int(pid_text) <= 0:
            continue
        pid = int(pid_text)
        their_ns = labels.get(OWNER_PIDNS)
        if their_ns is not None and their_ns != pidns:
            continue
        since = started(pid)
        if since is None:
            found.append(Leftover(name, pid, f"no process {pid}"))
            continue
        created = _created(container)
        if created is not None and since > created + CLOCK_SLACK_S:
            found.append(Leftover(name, pid, f"pid {pid} is another process's, started {since - created:.0f}s "
                                             "after the container"))
    return found


def _boot_time() -> float:
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("btime "):
                return float(line.split()[1])
    raise OSError("/proc/stat has no btime")


def process_started(pid: int) -> float | None:
    """When process ``pid`` started (Unix seconds); None when there is no such process
    or it is a zombie (it has ended; its parent has not reaped it yet)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        # Not in /proc: gone, unless /proc hides other users' processes (hidepid), which
        # kill(pid, 0) still finds. Such a process counts as alive, its age unknown.
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return float("-inf")
    # comm may hold spaces and parentheses: the fields after it start at the last ") ".
    fields = data.rpartition(b") ")[2].split()
    if not fields or fields[0] in (b"Z", b"X"):
        return None
    ticks = int(fields[19])  # field 22 of stat(5), starttime: clock ticks after boot
    return _boot_time() + ticks / os.sysconf("SC_CLK_TCK")


def pid_namespace() -> str:
    """This process's pid namespace, as /proc names it (``pid:[4026531836]``)."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
