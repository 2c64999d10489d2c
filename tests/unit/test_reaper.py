"""deskbox.session.processes.Reaper: a subreaper reaps the orphans it adopted, found
from its own children (not the whole process table), and leaves the children asyncio
waits for alone. Run in a subprocess: the test process itself is no subreaper."""

from __future__ import annotations

import subprocess
import sys

from tests.support import ROOT

SCRIPT = r"""
import os, subprocess, sys, time
from deskbox.session import processes
assert processes.become_subreaper()
# A shell that starts a short sleep in the background and exits: the sleep is orphaned
# to this process when it ends, and becomes a zombie here a moment later.
subprocess.run(["sh", "-c", "sleep 0.2 & exit 0"], check=True)
kept = subprocess.Popen(["sleep", "0.1"])  # a child of ours that someone else waits for
time.sleep(0.8)
children = processes.own_children()
zombies = {pid for pid in children if processes._stat(pid).state == "Z"}
assert kept.pid in zombies and len(zombies) == 2, (children, zombies, kept.pid)
reaper = processes.Reaper()
first = reaper.scan({kept.pid})
second = reaper.scan({kept.pid})
orphan = (zombies - {kept.pid}).pop()
print(first, second, orphan, sorted(processes.own_children()), kept.pid)
assert first == [] and second == [orphan], (first, second, orphan)
assert processes.own_children() == {kept.pid}  # the orphan is gone; ours is left to its waiter
kept.wait()
"""


def test_a_subreaper_reaps_the_orphans_it_adopted_and_not_the_children_others_wait_for():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stdout + out.stderr
