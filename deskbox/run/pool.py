"""The pool that lends sessions to tasks, started (and reset) ahead of demand.

    pool = Pool(session_factory("podman"), size=8, warm=2, reset_on_release=True)
    env = pool.take()           # a started session: no task waits for a container to start
    ...
    pool.release(env)           # reset in the background, then lent again
    pool.want(len(queue))       # how many tasks wait: the idle sessions follow it

- ``size``: the most sessions at once (lent, idle and starting).
- ``warm``: how many idle sessions are kept started ahead of demand while there is room
  under ``size`` (default ``size``: every one started at once, what ``deskbox run`` does,
  its sessions busy from the first task to their last). A ``take()`` that finds none idle
  starts one at once, and each ``take()`` starts another to keep ``warm`` ready.
- ``want(n)``: the number of tasks waiting. Idle sessions beyond what they need are
  stopped (on a cluster their pods are freed), and no more than ``n`` are kept warm; a
  queue that grows again starts them again. ``deskbox run`` says so after every task it
  takes.
- ``reset_on_release``: a released session is reset before it is lent again, off the
  caller's time; one whose reset fails is stopped and replaced.
- ``spare``: sessions started ahead for ``replace()``, which stops a broken session and
  gives a new one.
- ``admit``: a context manager factory each session start and each reset on release
  runs inside (a slot of ``deskbox.run.admission.Admission``): N sessions of a new pool
  start a few at a time, at the machine's speed, rather than all sharing it at once.
- ``close()`` stops every session, side by side; when ``make`` has a ``close()`` (the
  factories of ``deskbox.run.sessions``), it is called next: no session starts after
  it, and those still starting are stopped where they are, so that the wait for their
  threads that follows is short.

Thread-safe; sessions start (and reset) in background threads."""

from __future__ import annotations

import queue
import threading
import time
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Callable

from ..provider import Environment, ProviderError

__all__ = ["Pool"]


def _stop_quietly(env: Environment) -> None:
    try:
        env.stop()
    except Exception:  # stopping is best effort: the pool goes on
        pass


# The longest close() waits for a session still starting (a podman session's start is
# bounded by 180 s, a pod's by 300 s).
STARTING_WAIT_S = 330.0

class Pool:
    def __init__(self, make: Callable[[int], Environment], size: int, *, spare: int = 1, warm: int | None = None,
                 reset_on_release: bool = False, on_event: Callable[[dict], None] | None = None,
                 admit: Callable[[], AbstractContextManager[Any]] | None = None) -> None:
        if size < 1:
            raise ValueError("a pool has at least one session")
        self._make = make
        self._admit = admit or nullcontext
        self._free: queue.Queue[Environment] = queue.Queue()
        self._spares: queue.Queue[Environment] = queue.Queue()
        self._lock = threading.Lock()
        self._count = 0
        self._all: list[Environment] = []
        self._failures: list[str] = []
        self._closed = False
        self._on_event = on_event or (lambda event: None)
        self.size = size
        self.warm = size if warm is None else max(0, min(warm, size))
        self.reset_on_release = reset_on_release
        self._lent = 0
        self._coming = 0  # sessions starting or resetting on their way to the idle ones
        self._waiting: int | None = None  # tasks waiting, once want() said
        self._takers = 0  # callers inside take(), waiting for a session
        self._starting: list[threading.Thread] = []
        for _ in range(self.warm):
            self._start_async(self._free)
        for _ in range(spare):
            self._start_async(self._spares)

    # -- starting ---------------------------------------------------------------------------

    def _start_async(self, into: queue.Queue) -> threading.Thread:
        with self._lock:
            n = self._count
            self._count += 1
            if into is self._free:
                self._coming += 1
        thread = threading.Thread(target=self._start_one, args=(n, into), daemon=True, name=f"pool-start-{n}")
        with self._lock:
            self._starting = [t for t in self._starting if t.is_alive()] + [thread]
        thread.start()
        return thread

    def _start_one(self, n: int, into: queue.Queue) -> None:
        started = time.monotonic()
        try:
            with self._admit():
                env = self._make(n)
        except Exception as exc:  # a session that would not start: said, and the pool goes on
            with self._lock:
                if into is self._free:
                    self._coming -= 1
                if self._closed:  # stopped as it started, by close(): not a failure
                    return
                self._failures.append(f"session {n}: {exc}")
            self._on_event({"event": "session_failed", "n": n, "error": str(exc)[-2000:]})
            return
        with self._lock:
            self._all.append(env)
            closed = self._closed
        if closed:
            with self._lock:
                if into is self._free:
                    self._coming -= 1
            env.stop()
            return
        self._on_event({"event": "session_started", "session": env.name, "seconds": round(time.monotonic() - started, 2)})
        self._arrive(env, into)

    def _arrive(self, env: Environment, into: queue.Queue) -> None:
        with self._lock:
            if into is self._free:
                self._coming -= 1
        into.put(env)
        if into is self._free:
            self._trim()

    def _idle(self) -> int:
        """Idle sessions, and those on their way to idle (caller holds the lock)."""
        return self._free.qsize() + self._coming

    def _target(self) -> int:
        """Idle sessions to keep (caller holds the lock)."""
        wanted = self.warm if self._waiting is None else min(self.warm, self._waiting)
        return max(0, min(wanted, self.size - self._lent))

    def _top_up(self) -> None:
        with self._lock:
            if self._closed:
                return
            short = min(self._target() - self._idle(), self.size - self._lent - self._idle())
        for _ in range(max(0, short)):
            self._start_async(self._free)

    def _trim(self) -> None:
        """Stop idle sessions beyond what the waiting tasks need."""
        while True:
            with self._lock:
                if self._waiting is None or self._idle() <= max(self._target(), self._waiting + self._takers):
                    return
                try:
                    env = self._free.get_nowait()
                except queue.Empty:
                    return
                if env in self._all:
                    self._all.remove(env)
            self._on_event({"event": "session_retired", "session": env.name, "why": "no task waits for it"})
            threading.Thread(target=_stop_quietly, args=(env,), daemon=True).start()

    # -- lending -----------------------------------------------------------------------------

    def take(self, timeout: float = 600) -> Environment:
        """A session for one task: an idle one, else one started now (while there is room
        under ``size``), else the first released."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._takers += 1
            grow = self._idle() < self._takers and self._lent + self._idle() < self.size and not self._closed
        try:
            if grow:
                self._start_async(self._free)
            while (env := self._next_free()) is None:
                with self._lock:
                    starting = any(t.is_alive() for t in self._starting) or self._coming > 0
                    failures = list(self._failures)
                if not starting and not self._all and failures:
                    raise ProviderError("no session of the pool started: " + "; ".join(failures)[-3000:])
                if time.monotonic() > deadline:
                    raise ProviderError(f"no session free within {timeout:.0f}s")
            with self._lock:
                self._lent += 1
        finally:
            with self._lock:
                self._takers -= 1
        self._top_up()
        return env

    def _next_free(self) -> Environment | None:
        try:
            return self._free.get(timeout=0.5)
        except queue.Empty:
            return None

    def release(self, env: Environment) -> None:
        """Take ``env`` back (reset first, in the background, with ``reset_on_release``)."""
        with self._lock:
            self._lent -= 1
            if not self.reset_on_release:
                self._coming += 1
        if not self.reset_on_release:
            self._arrive(env, self._free)
            return
        with self._lock:
            self._coming += 1
        threading.Thread(target=self._reset_then_free, args=(env,), daemon=True, name=f"pool-reset-{env.name}").start()

    def _reset_then_free(self, env: Environment) -> None:
        try:
            with self._admit():
                env.reset()
        except Exception as exc:  # a session that does not reset is replaced, not lent
            self._on_event({"event": "session_replaced", "session": env.name, "why": f"reset: {exc}"[-500:]})
            with self._lock:
                self._coming -= 1
                if env in self._all:
                    self._all.remove(env)
            _stop_quietly(env)
            self._top_up()
            return
        self._arrive(env, self._free)

    def want(self, waiting: int) -> None:
        """``waiting`` tasks wait for a session: keep that many ready (at most ``warm``),
        stop idle ones beyond it."""
        with self._lock:
            self._waiting = max(0, waiting)
        self._trim()
        self._top_up()

    def replace(self, env: Environment, why: str = "") -> Environment:
        """Stop ``env`` (it failed) and give a healthy one in its place: a spare when one
        is ready, else a new one; another spare is started ahead."""
        self._on_event({"event": "session_replaced", "session": env.name, "why": why[-500:]})
        forget = getattr(self._make, "forget", None)
        if forget is not None:
            forget(env)
        _stop_quietly(env)
        with self._lock:
            if env in self._all:
                self._all.remove(env)
        try:
            fresh = self._spares.get_nowait()
        except queue.Empty:
            fresh = None
        self._start_async(self._spares)
        if fresh is not None:
            return fresh
        while True:
            try:
                return self._spares.get(timeout=1.0)
            except queue.Empty:
                with self._lock:
                    if not any(t.is_alive() for t in self._starting):
                        raise ProviderError("no replacement session started: "
                                            + "; ".join(self._failures)[-2000:]) from None

    def retire(self, env: Environment) -> None:
        """Stop ``env`` now: no task left will need it. A run's last tasks then hold only
        the sessions they run on (on a cluster, the pods of the others are freed at
        once, not at the run's end); once none is lent, the spares go too."""
        self._on_event({"event": "session_retired", "session": env.name})
        with self._lock:
            if env in self._all:
                self._all.remove(env)
            self._lent -= 1
            self.size = max(0, self.size - 1)
            last = self.size == 0
        _stop_quietly(env)
        if last:
            self.drain_spares()

    def drain_spares(self) -> None:
        """Stop the spares started ahead (none will be needed)."""
        while True:
            try:
                spare = self._spares.get_nowait()
            except queue.Empty:
                return
            with self._lock:
                if spare in self._all:
                    self._all.remove(spare)
            _stop_quietly(spare)

    # -- the whole pool ----------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """Sessions lent, idle, on their way to idle, and spares ready."""
        with self._lock:
            return {"lent": self._lent, "idle": self._free.qsize(), "coming": self._coming,
                    "spares": self._spares.qsize(), "size": self.size}

    def sessions(self) -> list[Environment]:
        with self._lock:
            return list(self._all)

    def close(self, hurry: threading.Event | None = None) -> None:
        """Stop every session, and wait for those still starting: each is stopped by its
        own thread once it is up, or by ``make.close()`` before (see the module's
        docstring). Without the wait, a runner that ends while a spare is starting leaves
        that session running with nobody to stop it. ``hurry``, once set (a second
        Ctrl+C), ends that wait."""
        with self._lock:
            self._closed = True
            envs = list(self._all)
            starting = list(self._starting)
        stoppers = [threading.Thread(target=_stop_quietly, args=(env,), daemon=True, name=f"pool-stop-{env.name}")
                    for env in envs]
        for thread in stoppers:
            thread.start()
        for thread in stoppers:
            thread.join()
        close_make = getattr(self._make, "close", None)
        if close_make is not None:
            try:
                close_make()
            except Exception as exc:  # said; the threads are waited for all the same
                self._on_event({"event": "sessions_not_removed", "error": str(exc)[-2000:]})
        deadline = time.monotonic() + STARTING_WAIT_S
        for thread in starting:
            while thread.is_alive() and not (hurry is not None and hurry.is_set()) and time.monotonic() < deadline:
                thread.join(min(0.2, max(0.0, deadline - time.monotonic())))

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
