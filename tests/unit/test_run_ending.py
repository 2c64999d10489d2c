"""Nothing a run started outlives it: a local session's tether stops it when the runner
is killed outright; the pool's close() closes the factory that starts its sessions, and
a start that close() cut short is no failure (the run against podman:
tests/container/interrupts.py)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from deskbox.common.waiting import wait_until
from deskbox.provider import EnvironmentSpec, ProviderError
from deskbox.provider.leftovers import process_started
from deskbox.run import tether
from deskbox.run.pool import Pool
from deskbox.run.sessions import LocalEnvironment, session_factory

# A session stand-in: says it is up, and on SIGINT says so and ends, as `deskbox up` does.
SESSION = """
import os, pathlib, signal, sys, time
marker = pathlib.Path(sys.argv[1])
def stop(sig, frame):
    marker.write_text(f"stopped by {sig}")
    sys.exit(0)
signal.signal(signal.SIGINT, stop)
marker.write_text(f"up {os.getpid()}")
time.sleep(60)
"""

# A runner stand-in: starts the session under the tether, from a thread that ends (as
# the pool's do), then waits to be killed.
RUNNER = """
import os, subprocess, sys, threading, time
def start():
    tethered = subprocess.Popen([sys.executable, "-I", sys.argv[1], str(os.getpid()), sys.executable, "-c",
                                 sys.argv[2], sys.argv[3]])
    print(tethered.pid, flush=True)
thread = threading.Thread(target=start)
thread.start()
thread.join()
time.sleep(60)
"""


def test_a_session_under_the_tether_is_stopped_when_its_runner_is_killed_outright(tmp_path):
    marker = tmp_path / "session"
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, tether.PATH, SESSION, str(marker)],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        tethered = int(runner.stdout.readline())
        wait_until(lambda: marker.is_file() and marker.read_text().startswith("up"), timeout=20,
                   what="the session to be up")
        time.sleep(1.0)  # the thread that started it has ended long since: the session is still up
        assert marker.read_text().startswith("up"), marker.read_text()
        runner.kill()
        runner.wait()
        wait_until(lambda: marker.read_text() == f"stopped by {int(signal.SIGINT)}", timeout=10,
                   what=f"the session to be stopped with SIGINT (it says {marker.read_text()!r})")
        wait_until(lambda: process_started(tethered) is None, timeout=10, what="the tether to end")
    finally:
        runner.kill()
        runner.wait()


def test_the_tether_passes_a_signal_on_and_ends_as_its_session_did(tmp_path):
    session = subprocess.Popen([sys.executable, "-I", tether.PATH, str(os.getpid()), sys.executable, "-c",
                                "import time, pathlib, sys; pathlib.Path(sys.argv[1]).touch(); time.sleep(60)",
                                str(tmp_path / "up")])
    wait_until(lambda: (tmp_path / "up").exists(), timeout=20, what="the session to be up")
    session.send_signal(signal.SIGTERM)
    assert session.wait(10) == -signal.SIGTERM
    done = subprocess.run([sys.executable, "-I", tether.PATH, str(os.getpid()), sys.executable, "-c",
                           "raise SystemExit(3)"], timeout=20)
    assert done.returncode == 3


class Stand:
    def __init__(self, n: int) -> None:
        self.name = f"s{n}"
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


class Closing:
    """A factory whose starts take until it is closed, then fail, as a podman start
    does once its container is removed under it."""

    def __init__(self) -> None:
        self.closed = threading.Event()
        self.calls = 0
        self.cut_short: list[bool] = []  # per start: ended by close(), not by its own 30 s

    def __call__(self, n: int) -> Stand:
        self.calls += 1
        self.cut_short.append(self.closed.wait(30))
        raise ProviderError(f"s{n} is gone")

    def close(self) -> list[str]:
        self.closed.set()
        return []


def test_closing_the_pool_closes_its_factory_and_the_starts_it_cut_short_are_no_failures():
    make = Closing()
    events: list[dict] = []
    pool = Pool(make, 1, spare=1, on_event=events.append)
    wait_until(lambda: make.calls == 2, timeout=5, what="both starts to begin")
    pool.close()
    assert make.closed.is_set() and make.cut_short == [True, True], make.cut_short
    assert [e for e in events if e["event"] == "session_failed"] == []


def test_a_closed_local_factory_starts_nothing_and_a_session_stopped_before_its_start_does_not_start():
    make = session_factory("local")
    assert make.close() == []
    with pytest.raises(ProviderError, match="local0 was not started: the run is ending"):
        make(0)
    env = LocalEnvironment("local9", EnvironmentSpec(), "deskbox-run9")
    try:
        env.stop()
        with pytest.raises(ProviderError, match="stopped before it started"):
            env.start()
        assert env.process.proc is None
    finally:
        shutil.rmtree(Path(env.process.tmp), ignore_errors=True)
