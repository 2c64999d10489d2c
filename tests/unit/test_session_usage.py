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

BUSY = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end: pass"


def test_the_cpu_of_children_counts_while_they_run_and_after_they_are_reaped():
    before = cpu_seconds()
    child = subprocess.Popen([sys.executable, "-c", BUSY, "0.6"])
    time.sleep(0.4)
    running = cpu_seconds()
    child.wait()
    after = cpu_seconds()
    assert running - before >= 0.2  # the live child's time
    assert after - before >= 0.5  # reaped: its time is in this process's cutime


def test_settle_waits_for_a_busy_child_and_answers_once_it_is_quiet():
    child = subprocess.Popen([sys.executable, "-c", BUSY, "1.5"])
    try:
        done = asyncio.run(settle(quiet_share=0.3, for_s=0.5, timeout_s=20, root=os.getpid()))
    finally:
        child.kill()
        child.wait()
    assert done.settled and done.waited_s >= 1.2 and done.cpu_s >= 0.8, done


def test_settle_gives_up_at_its_timeout_and_says_how_busy_it_was():
    child = subprocess.Popen([sys.executable, "-c", BUSY, "10"])
    try:
        done = asyncio.run(settle(quiet_share=0.3, for_s=0.5, timeout_s=1.0, root=os.getpid()))
    finally:
        child.kill()
        child.wait()
    assert not done.settled and 1.0 <= done.waited_s < 3 and done.share > 0.5, done


def test_a_quiet_process_settles_within_one_window():
    done = asyncio.run(settle(quiet_share=0.3, for_s=0.5, timeout_s=10, root=os.getpid()))
    assert done.settled and done.waited_s < 1.5, done
