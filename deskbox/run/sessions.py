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

The :class:`~deskbox.run.pool.Pool` (``deskbox/run/pool.py``) lends them to tasks.

**Nothing outlives the run.** A factory that starts sessions (podman, kubernetes,
local) has ``close()``: no session starts after it, and every one it started, or was
starting, is stopped (the pool's ``close()`` calls it; ``deskbox run`` calls it again as
the last thing it does, whichever way it ends). Podman containers go by their owner
label (the runner's pid), those whose ``podman run`` was in flight included; the
podman factory's ``remove_leftovers()`` removes those of runners that died. A local
session runs under a tether (``deskbox/run/tether.py``) that stops it should the runner
die without stopping it (SIGKILL)."""

from __future__ import annotations

import dataclasses
import fcntl
import itertools
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Any, Callable

from ..common.net import free_ports
from ..common.settings import env
from ..provider import Environment, EnvironmentSpec, ProviderError, new_token
from ..provider.leftovers import Leftover
from ..session.spawn import SessionFailed, SpawnedSession
from . import tether
from .pool import Pool

__all__ = ["Pool", "LocalEnvironment", "AttachedEnvironment", "session_factory", "PROVIDERS"]

PROVIDERS = ("podman", "kubernetes", "local", "attach")


class LocalEnvironment(Environment):
    """A bare ``deskbox up --osworld`` on this machine."""

    backend = "local"

    def __init__(self, name: str, spec: EnvironmentSpec, user: str) -> None:
        osworld, scene, desktopd, bridge, vlc, vnc, cdp = free_ports(7)
        ports = {"osworld": osworld, "scene": scene, "desktopd": desktopd, "bridge": bridge, "chromium": 9222,
                 "vlc": vlc, "vnc": vnc}
        super().__init__(name, spec, "127.0.0.1", ports)
        args = ["--osworld", "--osworld-port", str(osworld), "--scene-port", str(scene),
                "--desktopd-port", str(desktopd), "--bridge-port", str(bridge),
                "--cdp-port", str(cdp), "--vlc-port", str(vlc), "--user", user]
        for output in spec.outputs:
            args += ["--output", output]
        env = {"DESKBOX_TOKEN": spec.token} if spec.token else {}
        # Under the tether: the session ends with this process, even when it is killed.
        command = [sys.executable, "-I", tether.PATH, str(os.getpid()), sys.executable, "-m", "deskbox.cli"]
        self.process = SpawnedSession(args, env=env, prefix=f"deskbox-run-{name}-", command=command)

    def start(self, timeout: float = 120) -> "LocalEnvironment":
        if self.stopped:
            raise ProviderError(f"{self.name}: stopped before it started")
        try:
            self.process.start(timeout)
        except SessionFailed as exc:
            raise ProviderError(f"{self.name}: {exc}") from exc
        if self.stopped:  # stop() came before its process was there to stop
            self.process.stop()
            raise ProviderError(f"{self.name}: stopped while it started")
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

    def end(self) -> None:
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

    def end(self) -> None:
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


def _stop_all(envs: list[Environment]) -> None:
    """Stop ``envs`` side by side (each may take seconds to end cleanly)."""
    def stop(env: Environment) -> None:
        try:
            env.stop()
        except Exception as exc:  # the others go anyway
            print(f"deskbox run: stopping {env.name}: {exc}", file=sys.stderr)

    threads = [threading.Thread(target=stop, args=(env,), daemon=True) for env in envs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _own_token(spec: EnvironmentSpec) -> EnvironmentSpec:
    """``spec`` with a token of its own: an agent in one session of a run (which may
    read its session's token) cannot drive another."""
    return dataclasses.replace(spec, token=new_token())


# Local sessions run as users named deskbox-run0, deskbox-run1 ...; a run claims each name
# it uses with a lock here, held until it ends, so that two runs on one machine take
# different users (a user's home holds one session at a time).
USER_CLAIMS = Path("/tmp/deskbox-run-users")


def claim_user() -> tuple[str, int]:
    """The first session user name no other run holds, and the lock's descriptor."""
    USER_CLAIMS.mkdir(mode=0o755, exist_ok=True)
    for i in itertools.count():
        fd = os.open(USER_CLAIMS / f"deskbox-run{i}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return f"deskbox-run{i}", fd
    raise AssertionError("unreachable")


class _LocalSessions:
    """``make(n)`` for local sessions; ``close()`` stops every one still running."""

    def __init__(self, spec: EnvironmentSpec) -> None:
        self.spec = spec
        self._lock = threading.Lock()
        self._made: list[LocalEnvironment] = []
        self._claims: list[int] = []
        self._closed = False

    def __call__(self, n: int) -> Environment:
        with self._lock:
            if self._closed:
                raise ProviderError(f"local{n} was not started: the run is ending")
            user, claim = claim_user()
            self._claims.append(claim)
            env = LocalEnvironment(f"local{n}", _own_token(self.spec), user)
            self._made.append(env)
        return env.start()

    def close(self) -> list[str]:
        with self._lock:
            self._closed = True
            left = [env for env in self._made if not env.stopped]
        names = [env.name for env in left if env.alive() is True]
        _stop_all(left)  # (one still starting included: its start sees it stopped)
        with self._lock:
            for claim in self._claims:
                os.close(claim)
            self._claims.clear()
        return names


class _Started:
    """``make(n)`` for sessions a back end starts (podman, kubernetes), named after the
    runner's pid; ``close()`` is the back end's: it starts no more and removes all it
    started, those still starting included."""

    def __init__(self, backend: Any, spec: EnvironmentSpec) -> None:
        self.backend = backend
        self.spec = spec

    def __call__(self, n: int) -> Environment:
        return self.backend.start(_own_token(self.spec), name=f"deskbox-run-{os.getpid()}-{n}")

    def close(self) -> list[str]:
        return self.backend.close()


class _PodmanSessions(_Started):
    def remove_leftovers(self) -> list[Leftover]:
        """Remove the containers of runners (or other harnesses) that died."""
        return self.backend.remove_leftovers()


def session_factory(provider: str, *, image: str = "deskbox", outputs: list[str] | None = None,
                    attach: list[str] | None = None, pool: str | None = None,
                    settings: dict[str, str] | None = None) -> Callable[[int], Environment]:
    """``make(n)`` starting (or, for ``attach`` and a ``pool``, naming or claiming) the
    n-th session of a run; ``settings``: DESKBOX_ variables the sessions it starts get."""
    if pool is not None:
        if provider != "kubernetes":
            raise ProviderError("--pool names running session pods: it goes with --provider kubernetes")
        return _FromPool(pool)
    # Each session of a run asks for a token of its own (each make(n) draws one): the
    # runner sends it, OSWorld's controllers' requests included (deskbox.provider.credentials).
    spec = EnvironmentSpec(image=image, outputs=outputs or ["1920x1080"], osworld=True, token=new_token(),
                           env=dict(settings or {}))
    if provider == "local":
        return _LocalSessions(spec)
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

        return _PodmanSessions(PodmanBackend(), spec)
    if provider == "kubernetes":
        from ..provider.kubernetes import KubernetesBackend

        return _Started(KubernetesBackend(runner=env("DESKBOX_KUBE_RUNNER")), spec)
    raise ProviderError(f"--provider {provider!r}: one of {', '.join(PROVIDERS)}")
