"""The supervisor with real processes (small Python servers on real ports): restarts,
dependents, kills during restarts, children started on request, and nothing left
behind."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time

import pytest

from deskbox.common import waiting
from deskbox.session import processes
from deskbox.session.supervisor import ChildSpec, Supervisor
from tests.support import free_ports

pytestmark = pytest.mark.asyncio(loop_scope="session")

# A child that listens on a port, starts a grandchild in its own session (as apps do),
# and answers "ready" once it listens. The grandchild of a child killed outright leaves
# the tree this test can see: it ends by itself, within two minutes.
SERVER = """
import os, socket, subprocess, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
time.sleep(600)
"""


def spec(name: str, port: int, **kw) -> ChildSpec:
    async def ready(child):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if child.proc.returncode is not None:
                raise RuntimeError(f"{name} exited")
            if processes.listening_pids(port)[0]:
                return
            await asyncio.sleep(0.02)
        raise RuntimeError(f"{name} did not listen")

    return ChildSpec(name=name, argv=lambda: [sys.executable, "-c", SERVER, str(port)], env=lambda: dict(os.environ),
                     ready=ready, ports=(port,), **kw)


async def until(predicate, timeout=15.0, what="condition"):
    await waiting.until(predicate, timeout, 0.05, what, error=AssertionError)


def all_up(sup: Supervisor) -> bool:
    return all(c.state == "up" and c.pid and processes.alive(c.pid) for c in sup.children.values() if c.wanted)


def started_by(sup: Supervisor) -> set[int]:
    """The children and everything below them (not the rest of this test process's tree:
    other tests' sessions live there too)."""
    table = {p.pid: p for p in processes.process_table().values() if p.state not in ("Z", "X")}
    pids = {c.pid for c in sup.children.values() if c.pid}
    return pids | {d for pid in pids for d in processes.descendants(pid, table)}


@pytest.fixture
async def session():
    ports = dict(zip(("base", "middle", "top", "manual"), free_ports(4)))
    sup = Supervisor([
        spec("base", ports["base"]),
        spec("middle", ports["middle"], needs=("base",)),
        spec("top", ports["top"], needs=("middle",)),
        spec("manual", ports["manual"], restart="on-request"),
    ])
    await sup.start_all()
    yield sup
    await sup.stop_all()


async def test_a_killed_child_comes_back_and_its_dependents_after_it(session):
    gens = {n: c.generation for n, c in session.children.items()}
    os.kill(session.children["middle"].pid, signal.SIGKILL)
    await until(lambda: session.children["top"].generation > gens["top"] and all_up(session), what="restart")
    assert session.children["base"].generation == gens["base"]
    assert session.children["middle"].generation == gens["middle"] + 1


async def test_kills_during_restarts_end_with_every_child_up_once(session):
    for name in ("base", "middle", "top", "base", "top", "middle", "base"):
        pid = session.children[name].pid
        if pid:
            os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.15)
    await until(lambda: all_up(session), 20, what="everything up")
    # One process per child, each holding its own port: nothing from before survives.
    for child in session.children.values():
        held, pids = processes.listening_pids(child.spec.ports[0])
        assert held and pids == [child.pid], (child.spec.name, pids, child.pid)


async def test_a_child_started_on_request_stays_down_until_asked(session):
    manual = session.children["manual"]
    os.kill(manual.pid, signal.SIGKILL)
    await until(lambda: manual.state == "down", what="down")
    await asyncio.sleep(1.0)
    assert manual.state == "down" and manual.pid is None
    assert "manual" not in session.restarting()
    await session.start("manual")
    assert manual.state == "up" and processes.alive(manual.pid)


async def test_a_child_started_on_request_that_goes_with_what_it_needs_comes_back_with_it():
    """Chromium in OSWorld mode is started on request, and exits by itself once its
    compositor is gone, at times while the supervisor is still ending the compositor's
    group: then both exits are handled in one round. It went with the compositor, not
    because a task ended it, so it comes back with it."""
    ports = free_ports(2)
    crash = asyncio.Event()

    async def browser_exits_meanwhile():
        browser = sup.children["browser"]
        if crash.is_set() and browser.proc is not None and browser.proc.returncode is None:
            crash.clear()
            os.kill(browser.proc.pid, signal.SIGKILL)
            await browser.proc.wait()

    sup = Supervisor([spec("compositor", ports[0], after_stop=browser_exits_meanwhile),
                      spec("browser", ports[1], needs=("compositor",), restart="on-request")])
    await sup.start_all()
    try:
        browser = sup.children["browser"]
        generation = browser.generation
        crash.set()
        os.kill(sup.children["compositor"].pid, signal.SIGKILL)
        await until(lambda: browser.generation > generation and all_up(sup), 20, what="the browser back")
        assert not crash.is_set()  # (it did exit while the compositor was being ended)
        # Ended alone, with what it needs up, it stays down until asked.
        os.kill(browser.pid, signal.SIGKILL)
        await until(lambda: browser.state == "down", what="down")
        await asyncio.sleep(1.0)
        assert browser.state == "down" and not browser.wanted
    finally:
        await sup.stop_all()


async def test_a_child_that_cannot_start_is_retried_without_leaking(session):
    port = session.children["top"].spec.ports[0]
    blocker = await asyncio.create_subprocess_exec(sys.executable, "-c", SERVER, str(port), start_new_session=True)
    try:
        # Someone else holds top's port: top cannot come back while they do.
        os.kill(session.children["top"].pid, signal.SIGKILL)
        await asyncio.sleep(1.0)
        assert session.children["top"].state != "up"
    finally:
        os.killpg(blocker.pid, signal.SIGKILL)
        await blocker.wait()
    await until(lambda: all_up(session), 20, what="top back once its port is free")


async def test_stopping_ends_each_child_with_what_it_started_but_leaves_the_apps_of_a_host():
    ports = free_ports(2)
    sup = Supervisor([spec("a", ports[0]), spec("b", ports[1], needs=("a",), hosts_apps=True)])
    await sup.start_all()
    table = processes.process_table()
    a, b = sup.children["a"].pid, sup.children["b"].pid
    await until(lambda: processes.descendants(a, processes.process_table())
                and processes.descendants(b, processes.process_table()), what="grandchildren")
    table = processes.process_table()
    a_started, b_started = processes.descendants(a, table), processes.descendants(b, table)
    await sup.stop_all()
    assert not processes.alive(a) and not processes.alive(b)
    assert all(not processes.listening_pids(p)[0] for p in ports)
    # What a started goes with it, though it had left a's process group; what b, a host of
    # apps, started is the session's to end (deskbox up ends those as apps).
    assert not [p for p in a_started if processes.alive(p)]
    assert all(processes.alive(p) for p in b_started)
    await processes.end_processes(b_started)


# A harness that started an app with the session's environment and never waits for it:
# it detached (setsid -f), so it is outside this process's tree, as a harness is outside
# deskbox up's. It prints its child's pid and its own.
OUTSIDE_PARENT = """
import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "60"])
print(child.pid, os.getpid(), flush=True)
os.close(1)
time.sleep(60)
"""


async def test_a_zombie_whose_parent_is_outside_the_session_is_not_waited_for():
    helper = await asyncio.create_subprocess_exec("setsid", "-f", sys.executable, "-c", OUTSIDE_PARENT,
                                                  stdout=asyncio.subprocess.PIPE)
    line = await asyncio.wait_for(helper.stdout.readline(), 10)
    await helper.wait()
    app, harness = map(int, line.split())
    try:
        assert harness not in processes.descendants(os.getpid(), processes.process_table())
        await processes.end_processes([app])
        assert os.path.exists(f"/proc/{app}")  # a zombie its parent does not reap
        # The harness reaps it when it reaps it: a reset does not wait a minute for that.
        assert await asyncio.wait_for(processes.reap_ended([app], timeout=60), 10) == [app]
    finally:
        os.kill(harness, signal.SIGKILL)


async def test_what_an_end_leaves_as_zombies_is_reaped_unless_asyncio_waits_for_it():
    # Children nobody waits for, as the orphans deskbox up adopts are.
    orphans = [os.posix_spawn("/bin/sleep", ["sleep", "60"], os.environ) for _ in range(2)]
    awaited = os.posix_spawn("/bin/sleep", ["sleep", "60"], os.environ)
    await processes.end_processes([*orphans, awaited])
    assert all(os.path.exists(f"/proc/{p}") for p in [*orphans, awaited])  # zombies, so far
    assert await processes.reap_ended([*orphans, awaited], skip={awaited}, timeout=0.3) == [awaited]
    assert not [p for p in orphans if os.path.exists(f"/proc/{p}")]
    os.waitpid(awaited, 0)
