"""deskbox.run.admission: at most N holders at once, machine-wide (two Admission
objects over one folder stand for two runs), served in the order they came within a
process. Real flocks on real files; threads stand for a run's workers."""

from __future__ import annotations

import fcntl
import os
import threading
import time

import pytest

from deskbox.run.admission import Admission, default_slots


def _hold_all(admissions: list[Admission], callers: int, hold_s: float) -> tuple[int, list[float], list[int]]:
    """``callers`` threads, spread over ``admissions``, each holding a slot for
    ``hold_s``: the most inside at once, the waits, and the order they got in."""
    inside = peak = 0
    lock = threading.Lock()
    waits: list[float] = []
    order: list[int] = []

    def caller(i: int) -> None:
        nonlocal inside, peak
        with admissions[i % len(admissions)].slot() as waited:
            with lock:
                inside += 1
                peak = max(peak, inside)
                waits.append(waited)
                order.append(i)
            time.sleep(hold_s)
            with lock:
                inside -= 1

    threads = []
    for i in range(callers):
        threads.append(threading.Thread(target=caller, args=(i,)))
        threads[-1].start()
        time.sleep(0.01)  # (so that the order they came in is known)
    for t in threads:
        t.join(30)
    return peak, waits, order


def test_no_more_than_the_slots_hold_at_once_and_the_rest_wait(tmp_path):
    peak, waits, _ = _hold_all([Admission(2, tmp_path)], callers=6, hold_s=0.2)
    assert peak == 2
    assert sorted(waits)[-1] >= 0.35  # the last two waited for two rounds of 0.2 s


def test_two_runs_on_one_machine_share_its_slots(tmp_path):
    peak, _, _ = _hold_all([Admission(2, tmp_path), Admission(2, tmp_path)], callers=8, hold_s=0.15)
    assert peak == 2  # not 2 per run


def test_slots_kept_in_the_process_bound_that_process_alone(tmp_path):
    peak, _, _ = _hold_all([Admission(1, None), Admission(1, None)], callers=4, hold_s=0.15)
    assert peak == 2  # one each: nothing shared between them


def test_callers_of_one_process_are_served_in_the_order_they_came(tmp_path):
    _, _, order = _hold_all([Admission(1, tmp_path)], callers=6, hold_s=0.05)
    assert order == list(range(6))


def test_a_slot_is_let_go_when_its_holder_raises(tmp_path):
    admission = Admission(1, tmp_path)
    with pytest.raises(RuntimeError), admission.slot():
        raise RuntimeError("a reset that failed")
    # Free again: the machine's slot file takes a lock at once, and the process's own slot
    # is there for the next caller.
    fd = os.open(tmp_path / "slot0.lock", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
    taken = threading.Event()
    threading.Thread(target=lambda: (admission.slot().__enter__(), taken.set()), daemon=True).start()
    assert taken.wait(5)


def test_a_slot_held_by_a_process_that_died_is_free(tmp_path):
    import subprocess
    import sys

    # A process that takes slot 0 and is killed: the kernel lets go of its flock.
    code = ("import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY | os.O_CREAT, 0o644); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "slot0.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        admission = Admission(1, tmp_path)
        taken = threading.Event()
        threading.Thread(target=lambda: (admission.slot().__enter__(), taken.set()), daemon=True).start()
        assert not taken.wait(0.3)  # held by the other process
        proc.kill()
        assert taken.wait(5)
    finally:
        proc.kill()
        proc.wait()


def test_default_slots_are_one_per_core_and_at_least_one():
    assert default_slots(2) == 2 and default_slots(16) == 16 and default_slots(0) == 1


@pytest.mark.parametrize(("argv", "slots"), [
    (["--provider", "podman"], os.cpu_count() or 1),  # one per core of this machine
    (["--provider", "local"], os.cpu_count() or 1),
    (["--provider", "kubernetes", "--sessions", "50"], 5),  # one per 10 sessions elsewhere
    (["--provider", "kubernetes", "--sessions", "4"], 1),
    (["--provider", "attach", "--sessions", "21"], 3),
    (["--provider", "podman", "--admit", "0"], 0),  # no admission
    (["--provider", "kubernetes", "--admit", "7"], 7),
])
def test_deskbox_runs_admission_by_default_and_as_given(argv, slots):
    from deskbox.run.cli import _admission_slots, build_parser

    assert _admission_slots(build_parser().parse_args(["tasks.json", "--agent", "noop", *argv])) == slots


def test_a_folder_others_may_write_to_is_not_used(tmp_path, capsys):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # planted by someone else, or open to everyone: not the user's alone
    assert Admission(1, shared).folder is None
    assert "kept in this process" in capsys.readouterr().err
    own = tmp_path / "own"
    assert Admission(1, own).folder == own and (own.stat().st_mode & 0o777) == 0o700


def test_each_kind_of_moment_has_slots_of_its_own(tmp_path):
    """A read never waits behind a setup: the kinds share the folder, not the slots."""
    heavy, reads = Admission(1, tmp_path), Admission(1, tmp_path, kind="read")
    got = threading.Event()

    def read() -> None:
        with reads.slot():
            got.set()

    with heavy.slot():
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert got.wait(5), "a read waited behind a heavy moment"
    assert {p.name for p in tmp_path.iterdir()} == {"slot0.lock", "read0.lock"}
    peak, _, _ = _hold_all([Admission(1, tmp_path, kind="read"), Admission(1, tmp_path, kind="read")],
                           callers=4, hold_s=0.1)
    assert peak == 1  # one kind's slots are the machine's, across runs
    with pytest.raises(ValueError):
        Admission(1, tmp_path, kind="../x")


@pytest.mark.parametrize(("argv", "slots"), [
    (["--provider", "podman"], 0),  # no bound by default: measured slower with one
    (["--provider", "podman", "--admit-reads", "4"], 4),
    (["--provider", "kubernetes", "--admit-reads", "2"], 2),
])
def test_tree_reads_are_unbounded_by_default_and_bounded_as_given(argv, slots):
    from deskbox.run.cli import _read_slots, build_parser

    assert _read_slots(build_parser().parse_args(["tasks.json", "--agent", "noop", *argv])) == slots
