"""deskbox.session.usage: a session's CPU from /proc (its processes, detached ones and
those already reaped included), and the wait until it is quiet. Real processes: this
test's own children stand for the session's."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

from deskbox.session.usage import cpu_seconds, settle

# Busy for argv[1] seconds of its own CPU (on a shared machine, a wall-clock loop gets less).
BUSY = "import sys, time\nwhile time.process_time() < float(sys.argv[1]): pass"


def test_the_cpu_of_children_counts_while_they_run_and_after_they_are_reaped():
    before = cpu_seconds()
    child = subprocess.Popen([sys.executable, "-c", BUSY, "0.8"])
    seen_live = 0.0
    while child.poll() is None:  # (poll() reaps it once it has ended: only live reads here)
        seen_live = max(seen_live, cpu_seconds() - before)
        time.sleep(0.05)
    after = cpu_seconds()
    assert seen_live >= 0.3  # the live child's time, read from its own stat
    assert after - before >= 0.8  # reaped: its time is in this process's cutime


def _settle_beside_a_busy_child(busy_s: float, timeout_s: float):
    """settle() while a child burns ``busy_s`` CPU seconds; and whether the child was still
    running when it answered."""
    child = subprocess.Popen([sys.executable, "-c", BUSY, str(busy_s)])
    try:
        done = asyncio.run(settle(quiet_share=0.3, for_s=0.5, timeout_s=timeout_s, root=os.getpid()))
        return done, child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_settle_waits_for_a_busy_child_and_answers_once_it_is_quiet():
    done, running = _settle_beside_a_busy_child(1.5, timeout_s=20)
    assert done.settled and not running and done.cpu_s >= 0.8, done


def test_settle_gives_up_at_its_timeout_and_says_how_busy_it_was():
    done, running = _settle_beside_a_busy_child(10, timeout_s=1.0)
    # It answered at its timeout, the child still busy: not when the child ended.
    assert not done.settled and running and done.waited_s >= 1.0 and done.share > 0.5, done


def test_a_quiet_process_settles_before_its_timeout():
    done = asyncio.run(settle(quiet_share=0.3, for_s=0.5, timeout_s=5, root=os.getpid()))
    assert done.settled, done
