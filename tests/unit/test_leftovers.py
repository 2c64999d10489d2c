"""Which containers a run removes as leftovers: those whose owner, the harness process
that started them, is gone; never one of a live harness (deskbox.provider.leftovers).
And the gate that keeps a harness that ends from starting more (launches)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from deskbox.provider import ProviderError
from deskbox.provider.launches import Launches
from deskbox.provider.leftovers import leftovers, pid_namespace, process_started

NS = "pid:[4026531836]"
CREATED = 1_700_000_000.0


def container(name: str, pid: object, *, created: object = CREATED, pidns: str | None = NS) -> dict:
    labels = {"deskbox.provider": "podman", "deskbox.owner-pid": str(pid)}
    if pidns is not None:
        labels["deskbox.owner-pidns"] = pidns
    return {"Names": [name], "Labels": labels, "Created": created}


def processes(**started: float):
    """A process table: pid -> start time; pids not in it are gone."""
    table = {int(pid.lstrip("p")): t for pid, t in started.items()}
    return lambda pid: table.get(pid)


def names(found) -> list[str]:
    return [f.name for f in found]


def test_a_container_whose_owner_process_is_gone_is_a_leftover_and_one_of_a_live_owner_is_not():
    found = leftovers([container("dead", 4242), container("live", 100)], pidns=NS,
                      started=processes(p100=CREATED - 60))
    assert names(found) == ["dead"]
    assert found[0].owner_pid == 4242 and found[0].why == "no process 4242"


def test_a_pid_that_went_to_a_process_younger_than_the_container_is_a_leftover():
    # The owner died; pid 100 now belongs to a process started an hour after the container.
    found = leftovers([container("reused", 100)], pidns=NS, started=processes(p100=CREATED + 3600))
    assert names(found) == ["reused"] and "another process's" in found[0].why


def test_an_owner_a_second_younger_than_its_container_is_within_the_clocks_coarseness():
    # /proc's start times and podman's creation time are whole seconds at best.
    assert leftovers([container("live", 100)], pidns=NS, started=processes(p100=CREATED + 1)) == []


def test_containers_of_another_pid_namespace_or_without_an_owner_pid_are_never_taken():
    others = [container("other-ns", 4242, pidns="pid:[4026532999]"), container("no-owner", ""),
              container("bad-owner", "abc"), container("zero", 0),
              {"Names": ["unlabelled"], "Labels": None, "Created": CREATED}]
    assert leftovers(others, pidns=NS, started=processes()) == []


def test_containers_from_before_the_namespace_label_are_judged_by_their_pid():
    found = leftovers([container("old-dead", 4242, pidns=None), container("old-live", 100, pidns=None)], pidns=NS,
                      started=processes(p100=CREATED - 60))
    assert names(found) == ["old-dead"]


def test_a_container_whose_creation_time_is_unknown_is_judged_by_its_owner_pid_alone():
    found = leftovers([container("odd", 100, created="yesterday"), container("gone", 4242, created=None)], pidns=NS,
                      started=processes(p100=CREATED + 3600))
    assert names(found) == ["gone"]


def test_process_started_knows_this_process_and_not_one_that_ended_nor_a_zombie():
    mine = process_started(os.getpid())
    assert mine is not None and mine <= time.time() + 1, mine
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    assert process_started(ended.pid) is None
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        # Ended, not reaped yet: a zombie, whose containers are as good as orphaned.
        deadline = time.monotonic() + 10
        while process_started(zombie.pid) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process_started(zombie.pid) is None
        assert open(f"/proc/{zombie.pid}/stat").read().rpartition(") ")[2].split()[0] == "Z"
    finally:
        zombie.wait()
    assert pid_namespace().startswith("pid:[")


def test_a_closed_gate_starts_nothing_and_close_waits_for_the_start_in_flight():
    gate = Launches()
    inside, release = threading.Event(), threading.Event()

    def start() -> None:
        with gate.launching("deskbox-run-1-0"):
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=start)
    thread.start()
    assert inside.wait(5)
    assert gate.close(0.2) is False  # the `podman run` in flight has not returned
    with pytest.raises(ProviderError, match="deskbox-run-1-1 was not started: its harness is ending"):
        with gate.launching("deskbox-run-1-1"):
            pass
    threading.Timer(0.2, release.set).start()
    assert gate.close(5) is True  # (True: the start in flight ended within the wait)
    thread.join(5)
