"""Where a run's sessions come from, and the pool that lends them to tasks.

Providers (``--provider``):

- ``podman`` and ``kubernetes``: containers or pods of the deskbox image
  (``deskbox.provider``), one session each, with OSWorld's server on; the image's user is
  ``user`` with home ``/home/user``, as OSWorld's configs expect.
- ``local``: bare sessions on this machine (``deskbox up --osworld`` in a subprocess,
  each on free ports and as a user of its own, ``deskbox-run<N>``). They share the host's
  network and users: configs that name ``/home/user`` or publish a fixed port (Chrome's
  9222 through ``socat``) need the podman provider to run side by side.
- ``attach``: sessions already running, given by their OSWorld server URL with the
  scene's after a comma (``--attach http://h:5000,http://h:8000``); they are never
  stopped or replaced by the run.
- ``kubernetes`` with ``--pool NAMES``: a warm pool of session pods already running (a
  Deployment and its headless Service, ``deploy/run/``), reached by their addresses and
  claimed for the run's use (``deskbox.provider.claimed``): what a runner inside the
  cluster (``deploy/run/job.yaml``) does. Nothing is started or stopped; a session is
  let go when the run no longer needs it, and one that fails is not claimed again.

A :class:`Pool` starts its sessions once and lends them: ``take()`` gives a healthy one,
``release()`` takes it back, ``replace()`` stops a broken one and gives a new one. It keeps
``spare`` sessions started ahead, so a replacement costs no wait. Harnesses and RL loops
use it directly (``from deskbox.run import Pool``)."""

from __future__ import annotations

import os
import queue
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Callable

from ..common.settings import env
from ..provider import Environment, EnvironmentSpec, ProviderError, new_token
from ..session.spawn import SessionFailed, SpawnedSession

__all__ = ["Pool", "LocalEnvironment", "AttachedEnvironment", "session_factory", "PROVIDERS"]

PROVIDERS = ("podman", "kubernetes", "local", "attach")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalEnvironment(Environment):
    """A bare ``deskbox up --osworld`` on this machine."""

    backend = "local"

    def __init__(self, name: str, spec: EnvironmentSpec, user: str) -> None:
        ports = {"osworld": _free_port(), "scene": _free_port(), "desktopd": _free_port(),
                 "bridge": _free_port(), "chromium": 9222, "vlc": _free_port(), "vnc": _free_port()}
        super().__init__(name, spec, "127.0.0.1", ports)
        args = ["--osworld", "--osworld-port", str(ports["osworld"]), "--scene-port", str(ports["scene"]),
                "--desktopd-port", str(ports["desktopd"]), "--bridge-port", str(ports["bridge"]),
                "--cdp-port", str(_free_port()), "--vlc-port", str(ports["vlc"]), "--user", user]
        for output in spec.outputs:
            args += ["--output", output]
        env = {"DESKBOX_TOKEN": spec.token} if spec.token else {}
        self.process = SpawnedSession(args, env=env, prefix=f"deskbox-run-{name}-")

    def start(self, timeout: float = 120) -> "LocalEnvironment":
        try:
            self.process.start(timeout)
        except SessionFailed as exc:
            raise ProviderError(f"{self.name}: {exc}") from exc
        self.wait_healthy(timeout)
        return self

    @property
    def pid(self) -> int | None:
        return self.process.proc.pid if self.process.proc else None

    def alive(self) -> bool | str:
        proc = self.process.proc
        if proc is None:
            return "not started"
        return True if proc.poll() is None else f"exited ({proc.returncode})"

    def logs(self, lines: int = 40) -> str:
        return "\n".join(self.process.log_tail(200_000).splitlines()[-lines:])

    def copy_out(self, path: str, dest: Path) -> bool:
        try:
            shutil.copytree(path, dest, dirs_exist_ok=True)
        except OSError:
            return False
        return True

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.process.stop()


class AttachedEnvironment(Environment):
    """A session somebody else runs: reset and observed, never stopped."""

    backend = "attach"

    def __init__(self, name: str, osworld: str, scene: str, token: str | None = None) -> None:
        def split(url: str) -> tuple[str, int]:
            rest = url.split("://", 1)[-1].rstrip("/")
            host, _, port = rest.rpartition(":")
            if not host or not port.isdigit():
                raise ProviderError(f"--attach {url!r}: http://HOST:PORT")
            return host, int(port)

        host, osworld_port = split(osworld)
        scene_host, scene_port = split(scene)
        if scene_host != host:
            raise ProviderError(f"--attach: the OSWorld server and the scene are on one host ({host} vs {scene_host})")
        super().__init__(name, EnvironmentSpec(token=token), host,
                         {"osworld": osworld_port, "scene": scene_port, "chromium": 9222, "vlc": 8080})

    def alive(self) -> bool | str:
        return True if self.probe() is None else "not answering"

    def logs(self, lines: int = 40) -> str:
        return "(an attached session: its logs are where it runs)"

    def stop(self) -> None:
        self.stopped = True


class _FromPool:
    """``make(n)`` for sessions claimed from a warm pool; ``forget`` keeps a failed one
    from being claimed again."""

    def __init__(self, names: str) -> None:
        from ..provider.claimed import ClaimedPool

        self.pool = ClaimedPool(names, token=env("DESKBOX_TOKEN"))

    def __call__(self, n: int) -> Environment:
        return self.pool.claim()

    def forget(self, session: Environment) -> None:
        self.pool.forget(session)  # type: ignore[arg-type]


def session_factory(provider: str, *, image: str = "deskbox", outputs: list[str] | None = None,
                    attach: list[str] | None = None, pool: str | None = None) -> Callable[[int], Environment]:
    """``make(n)`` starting (or, for ``attach`` and a ``pool``, naming or claiming) the
    n-th session of a run."""
    if pool is not None:
        if provider != "kubernetes":
            raise ProviderError("--pool names running session pods: it goes with --provider kubernetes")
        return _FromPool(pool)
    # Each session of a run asks for a token of its own: the runner sends it, OSWorld's
    # controllers' requests included (deskbox.run.credentials).
    spec = EnvironmentSpec(image=image, outputs=outputs or ["1920x1080"], osworld=True, token=new_token())
    if provider == "local":
        return lambda n: LocalEnvironment(f"local{n}", spec, f"deskbox-run{n}").start()
    if provider == "attach":
        urls = list(attach or [])
        if not urls:
            raise ProviderError("--provider attach needs --attach OSWORLD_URL,SCENE_URL (once per session)")

        def attached(n: int) -> Environment:
            if n >= len(urls):
                raise ProviderError(f"only {len(urls)} attached session(s): no session {n + 1} to replace one with")
            osworld, _, scene = urls[n].partition(",")
            return AttachedEnvironment(f"attached{n}", osworld, scene or osworld.rsplit(":", 1)[0] + ":8000",
                                       env("DESKBOX_TOKEN"))

        return attached
    if provider == "podman":
        from ..provider.podman import PodmanBackend

        backend = PodmanBackend()
        return lambda n: backend.start(spec, name=f"deskbox-run-{os.getpid()}-{n}")
    if provider == "kubernetes":
        from ..provider.kubernetes import KubernetesBackend

        kube = KubernetesBackend(runner=env("DESKBOX_KUBE_RUNNER"))
        return lambda n: kube.start(spec, name=f"deskbox-run-{os.getpid()}-{n}")
    raise ProviderError(f"--provider {provider!r}: one of {', '.join(PROVIDERS)}")


class Pool:
    """``size`` sessions lent to tasks, with ``spare`` more started ahead for
    replacements. Thread-safe; sessions start in background threads."""

    def __init__(self, make: Callable[[int], Environment], size: int, *, spare: int = 1,
                 on_event: Callable[[dict], None] | None = None) -> None:
        if size < 1:
            raise ValueError("a pool has at least one session")
        self._make = make
        self._free: queue.Queue[Environment] = queue.Queue()
        self._spares: queue.Queue[Environment] = queue.Queue()
        self._lock = threading.Lock()
        self._count = 0
        self._all: list[Environment] = []
        self._failures: list[str] = []
        self._closed = False
        self._on_event = on_event or (lambda event: None)
        self.size = size
        threads = [self._start_async(self._free) for _ in range(size)]
        threads += [self._start_async(self._spares) for _ in range(spare)]
        self._starting = threads

    def _start_async(self, into: queue.Queue) -> threading.Thread:
        with self._lock:
            n = self._count
            self._count += 1
        thread = threading.Thread(target=self._start_one, args=(n, into), daemon=True, name=f"pool-start-{n}")
        thread.start()
        return thread

    def _start_one(self, n: int, into: queue.Queue) -> None:
        started = time.monotonic()
        try:
            env = self._make(n)
        except Exception as exc:  # a session that would not start: said, and the pool goes on
            with self._lock:
                self._failures.append(f"session {n}: {exc}")
            self._on_event({"event": "session_failed", "n": n, "error": str(exc)[-2000:]})
            return
        with self._lock:
            self._all.append(env)
            closed = self._closed
        if closed:
            env.stop()
            return
        self._on_event({"event": "session_started", "session": env.name, "seconds": round(time.monotonic() - started, 2)})
        into.put(env)

    def take(self, timeout: float = 600) -> Environment:
        """A session for one task (waits while all are lent)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self._free.get(timeout=0.5)
            except queue.Empty:
                pass
            with self._lock:
                starting = any(t.is_alive() for t in self._starting)
                failures = list(self._failures)
            if not starting and not self._all and failures:
                raise ProviderError("no session of the pool started: " + "; ".join(failures)[-3000:])
            if time.monotonic() > deadline:
                raise ProviderError(f"no session free within {timeout:.0f}s")

    def release(self, env: Environment) -> None:
        self._free.put(env)

    def replace(self, env: Environment, why: str = "") -> Environment:
        """Stop ``env`` (it failed) and give a healthy one in its place: a spare when one
        is ready, else a new one; another spare is started ahead."""
        self._on_event({"event": "session_replaced", "session": env.name, "why": why[-500:]})
        forget = getattr(self._make, "forget", None)
        if forget is not None:
            forget(env)
        try:
            env.stop()
        except Exception:
            pass
        with self._lock:
            if env in self._all:
                self._all.remove(env)
        self._starting = [t for t in self._starting if t.is_alive()]
        try:
            fresh = self._spares.get_nowait()
        except queue.Empty:
            fresh = None
        self._starting.append(self._start_async(self._spares))
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
            self.size = max(0, self.size - 1)
            last = self.size == 0
        try:
            env.stop()
        except Exception:
            pass
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
            try:
                spare.stop()
            except Exception:
                pass

    def sessions(self) -> list[Environment]:
        with self._lock:
            return list(self._all)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            envs = list(self._all)
        for session in envs:
            try:
                session.stop()
            except Exception:
                pass

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
