"""deskbox.run.pool: sessions started (and reset) ahead of demand, as many as the queue
needs. The pool's own logic, over stand-in sessions that take a moment to start (the
pool with real sessions: tests/test_run.py)."""

from __future__ import annotations

import threading
import time

import pytest

from deskbox.common.waiting import wait_until
from deskbox.provider import ProviderError
from deskbox.run.pool import Pool


class Stand:
    """A session stand-in: a name, a reset that counts (or fails), a stop."""

    def __init__(self, n: int, fail_reset: bool = False) -> None:
        self.name = f"s{n}"
        self.resets = 0
        self.stopped = False
        self.fail_reset = fail_reset

    def reset(self) -> None:
        time.sleep(0.05)
        if self.fail_reset:
            raise ProviderError("the reset ended unhealthy")
        self.resets += 1

    def stop(self) -> None:
        self.stopped = True


class Maker:
    def __init__(self, fail_reset: set[int] = frozenset()) -> None:
        self.made: list[Stand] = []
        self.fail_reset = fail_reset
        self._lock = threading.Lock()

    def __call__(self, n: int) -> Stand:
        time.sleep(0.05)
        env = Stand(n, n in self.fail_reset)
        with self._lock:
            self.made.append(env)
        return env

    def live(self) -> int:
        return sum(not e.stopped for e in self.made)


def settled(pool: Pool, **expected: int) -> None:
    wait_until(lambda: all(pool.stats()[k] == v for k, v in expected.items()) and pool.stats()["coming"] == 0,
               timeout=5, what=f"pool stats {expected} (now {pool.stats()})")


def test_warm_sessions_are_kept_ready_up_to_the_pools_size():
    make = Maker()
    with Pool(make, 4, spare=0, warm=2) as pool:
        settled(pool, idle=2, lent=0)
        assert len(make.made) == 2
        lent = [pool.take()]
        settled(pool, idle=2, lent=1)  # one more started to keep two ready
        lent += [pool.take(), pool.take()]
        settled(pool, idle=1, lent=3)  # room for one only: size 4
        lent.append(pool.take())
        settled(pool, idle=0, lent=4)
        assert len(make.made) == 4
        with pytest.raises(ProviderError, match="no session free"):
            pool.take(timeout=0.6)
        pool.release(lent.pop())
        assert pool.take(timeout=2).name in {e.name for e in make.made}
    assert make.live() == 0


def test_a_take_with_nothing_warm_starts_one_at_once():
    make = Maker()
    with Pool(make, 2, spare=0, warm=0) as pool:
        time.sleep(0.2)
        assert make.made == []
        env = pool.take(timeout=2)
        assert [e.name for e in make.made] == [env.name]
        settled(pool, lent=1, idle=0)


def test_idle_sessions_follow_the_queue_down_and_up_again():
    make = Maker()
    with Pool(make, 4, spare=0) as pool:
        settled(pool, idle=4)
        pool.want(1)
        settled(pool, idle=1)
        assert make.live() == 1  # three stopped: no task waits for them
        pool.want(3)
        settled(pool, idle=3)
        assert make.live() == 3
        pool.want(0)
        settled(pool, idle=0)
        assert make.live() == 0
        env = pool.take(timeout=2)  # a task came after all: one is started for it
        assert not env.stopped


def test_a_released_session_is_reset_before_it_is_lent_again_and_replaced_when_that_fails():
    make = Maker(fail_reset={1})
    with Pool(make, 2, spare=0, reset_on_release=True) as pool:
        settled(pool, idle=2)
        a, b = pool.take(), pool.take()
        pool.release(a)
        pool.release(b)
        settled(pool, idle=2, lent=0)
        good = a if a.name == "s0" else b
        bad = b if good is a else a
        assert good.resets == 1 and bad.stopped  # s1's reset failed: stopped, another started
        assert len(make.made) == 3 and not make.made[2].stopped
        assert {pool.take().name, pool.take().name} == {"s0", "s2"}


def test_closing_while_a_session_is_starting_waits_for_it_and_stops_it():
    """A runner that ends while a spare is still starting: the session is stopped once
    it is up, before close() returns, not left running with nobody to stop it."""
    started = threading.Event()

    made: list[Stand] = []

    def slow(n: int) -> Stand:
        started.set()
        time.sleep(0.5)
        env = Stand(n)
        made.append(env)
        return env

    pool = Pool(slow, 2, spare=1)
    pool.want(1)
    assert started.wait(5)
    pool.close()
    assert made and all(env.stopped for env in made), [(e.name, e.stopped) for e in made]


def test_closing_in_a_hurry_does_not_wait_for_a_session_still_starting():
    """A second Ctrl+C sets close()'s hurry while it waits for a session still starting:
    close() returns then, before that start ends (the run removes such a session by its
    label next: tests/container/interrupts.py)."""
    release = threading.Event()
    started = threading.Event()

    def stuck(n: int) -> Stand:
        started.set()
        release.wait(30)
        return Stand(n)

    pool = Pool(stuck, 1, spare=0)
    pool.want(1)
    assert started.wait(5)
    hurry = threading.Event()
    threading.Timer(0.3, hurry.set).start()
    closing = threading.Thread(target=pool.close, args=(hurry,))
    closing.start()
    closing.join(10)
    try:
        assert not closing.is_alive(), "close() went on waiting for the start after hurry was set"
        assert not release.is_set()
    finally:
        release.set()


def test_an_interrupted_run_starts_no_task_more_and_records_none_its_stop_cut_short(tmp_path):
    """deskbox run's Runner after Ctrl+C (runner.stop(), then the pool closes, which may
    wait for a session still starting): no worker takes another task, and a task whose
    session went with the stop is put back, unrecorded, for the same command to run."""
    from deskbox.run.runner import Runner, RunOptions, read_results
    from deskbox.run.tasks import Task

    tasks = [Task("os", {"id": f"t{i}", "instruction": "-"}, f"t{i}.json") for i in range(4)]

    class Pooled:
        def want(self, n: int) -> None:
            pass

    runner = Runner(tasks, lambda: None, Pooled(), RunOptions(out=tmp_path, progress=False))
    first = runner._next(holding=True)
    runner._finish({"task": first.key, "status": "done", "score": 1.0})
    running = runner._next(holding=True)
    runner.stop()
    assert runner._next(holding=True) is None and runner._next(holding=False) is None
    runner._finish({"task": running.key, "status": "infra_error", "score": None})
    assert set(read_results(tmp_path)) == {first.key}
    assert [t.key for t in runner.unrun] == [running.key, "os/t2", "os/t3"]
