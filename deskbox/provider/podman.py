"""The local back end: one podman container per environment.

    from deskbox.provider import EnvironmentSpec
    from deskbox.provider.podman import PodmanBackend

    backend = PodmanBackend()                       # flags from scripts/container-flags
    env = backend.start(EnvironmentSpec(image="deskbox", token=token, outputs=["1280x800"]))
    env.osworld_address()                           # "127.0.0.1:20000:20001:20002:20003"
    env.reset()                                     # POST /api/v1/session/reset
    env.snapshot("after-login"); env.reset("after-login")
    env.stop()                                      # podman rm -f

What is whose: this module (on the harness's machine) runs ``podman run`` and ``podman
rm``, picks host ports and waits for health; everything inside the container (the
session, its reset and snapshots, OSWorld's server) is the image's, reached over HTTP.

**Ports.** Every container port of ``CONTAINER_PORTS`` (5000 OSWorld, 9222 Chrome tasks'
CDP, 8006 live view, 8090 VLC, 8000 scene, 8080 desktopd, 8122 bridge) is published on
127.0.0.1 at a host port of its own, scanned upward from ``port_base`` (20000, or
``$DESKBOX_PORT_BASE``), skipping ports something listens on and ports any podman
container (running or not) has published. Allocation holds an ``flock`` on
``/tmp/deskbox-port-allocation.lock`` (``$DESKBOX_PORT_LOCK``) until ``podman run`` has
returned, so two harness processes never pick the same ports. OSWorld's docker provider
keeps its own lock (/tmp/docker_port_allocation.lck); the listening check keeps the two
apart.

**Machine flags.** Where podman needs more flags here (another OCI runtime, lower
ulimits), they come from ``scripts/container-flags`` (run once per process and
cached), or from ``$DESKBOX_PODMAN_FLAGS`` (shell words), or are given as ``flags=``.

**Token.** The token goes into the container's environment through podman's own
environment (``-e DESKBOX_TOKEN``), never on a command line.

**Contexts.** With ``spec.context``, the host folder ``spec.contexts_dir`` is mounted at
/var/lib/deskbox/contexts and owned by the session's uid (1000); a context another live
session holds is refused before a container is started (its lock seen in /proc/locks)
or, should two start at once, by the session itself (``ContextInUse``). With
``context_persist``, ``stop()`` gives the session 30 s to save the context back.

**Owners and leftovers.** Each container is labelled with the harness process that
started it (``deskbox.owner-pid``, ``deskbox.owner-pidns``). ``close()`` starts nothing
more and, once the ``podman run`` commands in flight have returned, removes every container
labelled with this process's pid; ``remove_leftovers()`` removes those of harness
processes that are gone (``deskbox.provider.leftovers``). Both run podman in a session
of its own, so that the Ctrl+C a terminal sends the whole process group does not cut
them short.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import socket
import subprocess
import uuid
from pathlib import Path
from typing import Iterator

from ..common.paths import source_tree
from ..common.settings import env, env_flag, env_int
from . import (
    CONTAINER_CONTEXTS_DIR,
    CONTAINER_PORTS,
    SESSION_UID,
    ContextInUse,
    Environment,
    EnvironmentSpec,
    ProviderError,
    check_context_id,
    context_held,
    run_command,
)
from .launches import Launches
from .leftovers import OWNER_PID, OWNER_PIDNS, Leftover, leftovers, pid_namespace, process_started

__all__ = ["PodmanBackend", "PodmanEnvironment", "cpu_weight_file", "hardening", "machine_flags", "port_lock",
           "allocate_ports", "published_ports"]

LOCK_PATH = env("DESKBOX_PORT_LOCK")
PORT_BASE = env_int("DESKBOX_PORT_BASE")
PORT_MAX = 32767  # below Linux's ephemeral range, where outgoing connections take ports
LABEL = "deskbox.provider"

_flags_cache: list[str] | None = None


# Caps on one session's container: against a runaway (a fork bomb an agent's command
# starts, a page that eats memory), not figures to pack by (bench.fleet measures those:
# about 650 MB a session with an app open). Threads count as pids: Chromium with a few
# tabs and LibreOffice run about 700.
PIDS_LIMIT = 4096
MEMORY_LIMIT = "4g"


def hardening(spec: EnvironmentSpec) -> list[str]:
    """``podman run``'s flags for ``spec`` beyond the machine's: the caps above always;
    and unless the session user may sudo (``spec.may_sudo``: OSWorld mode), every
    capability dropped but SYS_CHROOT (Chromium's sandbox chroots inside its user
    namespace) and no-new-privileges, so that no setuid program (sudo) raises anything.
    Nothing in the session needs more: it runs as the unprivileged user ``user``.
    ``DESKBOX_PODMAN_HARDENING=0``: none of it."""
    if not env_flag("DESKBOX_PODMAN_HARDENING"):
        return []
    flags = [f"--pids-limit={PIDS_LIMIT}", f"--memory={MEMORY_LIMIT}"]
    if not spec.may_sudo:
        flags += ["--cap-drop=ALL", "--cap-add=SYS_CHROOT", "--security-opt=no-new-privileges"]
    return flags


def machine_flags(podman: str = "podman") -> list[str]:
    """The flags ``podman run`` needs on this machine: ``$DESKBOX_PODMAN_FLAGS`` when set,
    else what ``scripts/container-flags`` finds (none on a normal machine)."""
    global _flags_cache
    if "DESKBOX_PODMAN_FLAGS" in os.environ:
        return shlex.split(os.environ["DESKBOX_PODMAN_FLAGS"])
    if _flags_cache is None:
        tree = source_tree()  # (a wheel has no scripts/: no flags, as on a normal machine)
        script = tree / "scripts" / "container-flags" if tree is not None else None
        if script is None or not script.exists():
            _flags_cache = []
        else:
            out = subprocess.run([str(script)], capture_output=True, text=True, timeout=300)
            if out.returncode != 0:
                raise ProviderError(f"podman cannot run containers here (scripts/container-flags): {out.stderr.strip()}")
            _flags_cache = out.stdout.split()
    return list(_flags_cache)


@contextlib.contextmanager
def port_lock(path: str = LOCK_PATH) -> Iterator[None]:
    """Holds the allocation lock (``flock``, waits for it)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def published_ports(podman: str = "podman") -> set[int]:
    """Host ports every podman container (running or not, pods' infra containers too) publishes."""
    out = subprocess.run([podman, "ps", "-a", "--format", "json"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise ProviderError(f"podman ps: {out.stderr.strip()}")
    used: set[int] = set()
    for container in json.loads(out.stdout or "[]"):
        for p in container.get("Ports") or []:
            first = int(p.get("host_port") or 0)
            for i in range(int(p.get("range") or 1)):
                if first:
                    used.add(first + i)
    return used


def _listening(port: int) -> bool:
    """Something has this port bound (any address): a bind of our own fails."""
    for family, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT leftovers do not count
                if family == socket.AF_INET6:
                    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                s.bind((addr, port))
        except OSError as exc:
            if family == socket.AF_INET6 and exc.errno in (97, 99):  # no IPv6 here
                continue
            return True
    return False


def allocate_ports(names: list[str], *, base: int = PORT_BASE, used: set[int] | None = None) -> dict[str, int]:
    """One free host port per name, scanning upward from ``base``; call it under ``port_lock``."""
    used = set(used or ())
    ports: dict[str, int] = {}
    port = base
    for name in names:
        while port <= PORT_MAX and (port in used or _listening(port)):
            port += 1
        if port > PORT_MAX:
            raise ProviderError(f"no free host port between {base} and {PORT_MAX}")
        ports[name] = port
        used.add(port)
    return ports


def prepare_contexts_dir(path: str) -> tuple[str, str]:
    """The host folder of contexts, made and owned by the session's uid; the volume
    option podman needs for it (rootless podman maps the owner itself with ``:U``)."""
    folder = Path(path).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        st = folder.stat()
        if (st.st_uid, st.st_gid) != (SESSION_UID, SESSION_UID):
            os.chown(folder, SESSION_UID, SESSION_UID)
        return str(folder), ""
    return str(folder), ":U"


def cpu_weight_file(cgroup: str) -> Path | None:
    """The file that holds a container's CPU weight, given its cgroup path as podman
    inspects it: cgroup v2's ``cpu.weight`` or v1's ``cpu.shares``; None when neither is
    there."""
    rel = cgroup.strip().lstrip("/")
    if not rel:
        return None
    for path in (Path("/sys/fs/cgroup", rel, "cpu.weight"), Path("/sys/fs/cgroup/cpu", rel, "cpu.shares"),
                 Path("/sys/fs/cgroup/cpu,cpuacct", rel, "cpu.shares")):
        if path.is_file():
            return path
    return None


class PodmanEnvironment(Environment):
    backend = "podman"

    def __init__(self, backend: "PodmanBackend", name: str, spec: EnvironmentSpec, ports: dict[str, int]) -> None:
        super().__init__(name, spec, backend.host, ports)
        self._backend = backend
        self._cpu_file: Path | None = None
        self._cpu_looked = False

    def weigh(self, weight: float) -> bool:
        """Written to the container's cgroup (``cpu.weight``, or ``cpu.shares`` under
        cgroup v1): a file write, where ``podman update`` would start a process per
        change. False where the runner may not write it (rootless podman without a
        delegated cgroup)."""
        if not self._cpu_looked:
            self._cpu_looked = True
            self._cpu_file = cpu_weight_file(self._backend.podman("inspect", "--format", "{{.State.CgroupPath}}",
                                                                  self.name, check=False).stdout.strip())
        if self._cpu_file is None:
            return False
        v1 = self._cpu_file.name == "cpu.shares"
        value = max(2, min(262144, round(1024 * weight))) if v1 else max(1, min(10000, round(100 * weight)))
        try:
            self._cpu_file.write_text(str(value))
        except OSError:
            return False
        return True

    def alive(self) -> bool | str:
        out = self._backend.podman("inspect", "--format", "{{.State.Status}}", self.name, check=False)
        if out.returncode != 0:
            return "gone"
        state = out.stdout.strip()
        return True if state == "running" else state

    def copy_out(self, path: str, dest: Path) -> bool:
        dest.parent.mkdir(parents=True, exist_ok=True)
        return self._backend.podman("cp", f"{self.name}:{path}", str(dest), check=False).returncode == 0

    def logs(self, lines: int = 40) -> str:
        out = self._backend.podman("logs", "--tail", str(lines), self.name, check=False)
        return (out.stdout + out.stderr).strip()

    def end(self) -> None:
        """``podman rm -f``: SIGTERM, so the session ends cleanly (and saves a persistent
        context: 30 s for that), then SIGKILL."""
        if self.stopped:
            return
        grace = 30 if self.spec.context and self.spec.context_persist else 5
        self._backend.podman("rm", "-f", "-t", str(grace), self.name, check=False, timeout=grace + 60)
        self.stopped = True


class PodmanBackend:
    """Starts environments with ``podman run``. ``flags``: what podman needs on this
    machine (default: ``machine_flags()``); ``extra_args``: more ``podman run`` options
    (``--memory 2g``, ``--cpus 2`` ...)."""

    name = "podman"

    def __init__(self, *, podman: str = "podman", flags: list[str] | None = None, extra_args: list[str] | None = None,
                 lock_path: str = LOCK_PATH, port_base: int = PORT_BASE, host: str = "127.0.0.1",
                 name_prefix: str = "deskbox-env-") -> None:
        self.podman_bin = podman
        self._flags = flags
        self.extra_args = list(extra_args or [])
        self.lock_path = lock_path
        self.port_base = port_base
        self.host = host
        self.name_prefix = name_prefix
        self.launches = Launches()

    @property
    def flags(self) -> list[str]:
        if self._flags is None:
            self._flags = machine_flags(self.podman_bin)
        return self._flags

    def podman(self, *args: str, check: bool = True, env: dict[str, str] | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess:
        return run_command([self.podman_bin, *args], check=check, env=env, timeout=timeout,
                           missing="scripts/container-build installs it")

    def start(self, spec: EnvironmentSpec, *, name: str | None = None, timeout: float = 180,
              wait: bool = True) -> PodmanEnvironment:
        """Run one session container; returns once it is healthy (``wait``). A container
        that does not become healthy is removed and ProviderError (ContextInUse when its
        context was held) raised."""
        name = name or f"{self.name_prefix}{uuid.uuid4().hex[:10]}"
        env = {**os.environ, **spec.environment()}
        args = ["run", "-d", "--name", name, "--label", f"{LABEL}=podman", "--label", f"{OWNER_PID}={os.getpid()}",
                "--label", f"{OWNER_PIDNS}={pid_namespace()}", *hardening(spec), *self.flags, *self.extra_args]
        for key in spec.environment():
            args += ["-e", key]  # the value comes from podman's environment, not this command line
        if spec.context:
            check_context_id(spec.context)
            if not spec.contexts_dir:
                raise ProviderError("a context needs contexts_dir (the host folder mounted for contexts)")
            folder, option = prepare_contexts_dir(spec.contexts_dir)
            if context_held(folder, spec.context):
                raise ContextInUse(f"context {spec.context!r} is in use by another live session "
                                   f"(its lock in {folder} is held); stop that environment first")
            args += ["-v", f"{folder}:{CONTAINER_CONTEXTS_DIR}{option}"]
        services = list(CONTAINER_PORTS)
        with self.launches.launching(name), port_lock(self.lock_path):
            ports = allocate_ports(services, base=self.port_base, used=published_ports(self.podman_bin))
            for service, host_port in ports.items():
                args += ["-p", f"{self.host}:{host_port}:{CONTAINER_PORTS[service]}"]
            try:
                # Shielded too: a `podman run` that a Ctrl+C ends half-way through leaves its
                # port forwarding behind (CNI's rules for a container no longer there, which
                # send a later session's ports nowhere). It returns within seconds (-d); the
                # harness's close() waits for it, then removes the container whole.
                self._shielded(*args, spec.image, timeout=120, env=env)
            except ProviderError:
                self.podman("rm", "-f", "-t", "0", name, check=False)  # created but not started
                raise
        environment = PodmanEnvironment(self, name, spec, ports)
        if wait:
            try:
                environment.wait_healthy(timeout)
            except BaseException:
                environment.stop()
                raise
        return environment

    def attach(self, name: str, spec: EnvironmentSpec) -> PodmanEnvironment:
        """An environment already running as container ``name`` (its ports read back)."""
        ports: dict[str, int] = {}
        by_port = {port: service for service, port in CONTAINER_PORTS.items()}
        for line in self.podman("port", name).stdout.splitlines():
            inner, _, outer = line.partition(" -> ")
            service = by_port.get(int(inner.split("/")[0]))
            if service:
                ports[service] = int(outer.rsplit(":", 1)[1])
        return PodmanEnvironment(self, name, spec, ports)

    def _shielded(self, *args: str, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """podman in a session of its own: a Ctrl+C at the terminal (SIGINT to the whole
        foreground process group) does not reach it, only the harness, which decides."""
        try:
            out = subprocess.run([self.podman_bin, *args], capture_output=True, text=True, timeout=timeout,
                                 start_new_session=True, env=env)
        except FileNotFoundError:
            raise ProviderError(f"{self.podman_bin} is not installed (scripts/container-build installs it)") from None
        except subprocess.TimeoutExpired:
            raise ProviderError(f"podman {' '.join(args[:2])} took more than {timeout:.0f}s") from None
        if out.returncode != 0:
            raise ProviderError(f"podman {' '.join(args[:2])} ... failed ({out.returncode}): {out.stderr.strip()[-800:]}")
        return out

    def running(self, *, owner_pid: int | None = None) -> list[str]:
        """Names of environments this back end started (of one harness process with ``owner_pid``)."""
        filters = ["--filter", f"label={LABEL}=podman"]
        if owner_pid is not None:
            filters += ["--filter", f"label={OWNER_PID}={owner_pid}"]
        return self._shielded("ps", "-a", *filters, "--format", "{{.Names}}", timeout=60).stdout.split()

    def _remove(self, names: list[str]) -> None:
        if names:  # one command: podman stops them side by side (-i: one already gone is no error)
            self._shielded("rm", "-f", "-i", "-t", "5", *names, timeout=120)

    def cleanup(self, *, owner_pid: int | None = None) -> list[str]:
        """Remove the environments this back end started (of one harness process with
        ``owner_pid``); their names."""
        names = self.running(owner_pid=owner_pid)
        self._remove(names)
        return names

    def close(self, wait: float = 150) -> list[str]:
        """Start no more environments, and remove every container this process started,
        those whose ``podman run`` was in flight included (waiting up to ``wait`` s for
        those to return): what a harness does as it ends. The names removed."""
        self.launches.close(wait)
        return self.cleanup(owner_pid=os.getpid())

    def remove_leftovers(self) -> list[Leftover]:
        """Remove the containers of harness processes that are gone (see
        ``deskbox.provider.leftovers``), never those of a live one; what was removed."""
        out = self._shielded("ps", "-a", "--filter", f"label={LABEL}=podman", "--format", "json", timeout=60)
        found = leftovers(json.loads(out.stdout or "[]"), pidns=pid_namespace(), started=process_started)
        self._remove([f.name for f in found])
        return found
