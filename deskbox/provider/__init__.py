"""Session providers: start deskbox sessions (one container or pod each) for a harness,
reach them, reset them between tasks and take them down.

What is whose:

- **deskbox** (the image, ``deskbox up`` inside it) runs the session and answers its
  HTTP APIs: the scene aggregator's ``/api/v1/session/*`` (reset, snapshots, lifetime),
  desktopd, the bridge, and with ``DESKBOX_OSWORLD_SERVER=1`` OSWorld's server on 5000.
- **This package** (runs on the harness's machine, never in the session) starts and
  stops those containers, picks their host ports, waits until they are healthy and
  calls the session API. It needs only the standard library (PyYAML for the
  Kubernetes back end, which reads deploy/deskbox.yaml).
- **OSWorld's desktop-env** (a test dependency, imported only by ``osworld.py``) drives
  the session through the address this package gives it.

Back ends:

- ``podman.PodmanBackend``: one ``podman run`` container per environment, every port
  published on 127.0.0.1 at a free host port.
- ``kubernetes.KubernetesBackend``: one pod per environment from deploy/deskbox.yaml's
  pod template, applied with ``kubectl`` on a cluster or ``podman kube play`` locally.

Both return an ``Environment``: its ``address`` (host and port per service),
``reset(snapshot)``, ``snapshot(name)``, ``extend(seconds)``, ``stop()``. ``osworld.py``
puts either behind OSWorld's ``Provider`` interface (``DesktopEnv(provider_name="deskbox")``).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import secrets
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ..client_sync import Client
from ..common.errors import DeskboxError
from ..common.settings import env
from ..common.waiting import wait_until
from ..trace import archive

__all__ = [
    "CONTAINER_PORTS",
    "CONTAINER_CONTEXTS_DIR",
    "SESSION_UID",
    "ProviderError",
    "ContextInUse",
    "SnapshotNotFound",
    "SessionClaimed",
    "EnvironmentSpec",
    "Environment",
    "parse_target",
    "Target",
    "context_held",
    "new_token",
    "run_command",
]

# Container port of every service an environment publishes. "osworld" is OSWorld's
# server (DESKBOX_OSWORLD_SERVER=1); "chromium" is the port OSWorld's Chrome tasks open
# themselves inside the session (`socat tcp-listen:9222,fork tcp:localhost:1337` after
# `google-chrome --remote-debugging-port=1337`), nothing listens there before; "vnc" is
# reserved for a live view and "vlc" for VLC's HTTP interface (OSWorld's "vlc port").
CONTAINER_PORTS: dict[str, int] = {
    "osworld": 5000,
    "chromium": 9222,
    "vnc": 8006,
    "vlc": 8090,
    "scene": 8000,
    "desktopd": 8080,
    "bridge": 8122,
}
CONTAINER_CONTEXTS_DIR = "/var/lib/deskbox/contexts"
SESSION_UID = 1000  # the image's user `user`; it owns the contexts it writes
# What `deskbox up` says when a context is held by another live session (deskbox/session/contexts.py).
CONTEXT_IN_USE_MARK = "is in use by another live session"


class ProviderError(RuntimeError):
    """An environment could not be started, reached, reset or stopped."""


class ContextInUse(ProviderError):
    """The persistent browser context asked for is held by another live session."""


class SnapshotNotFound(ProviderError):
    """The session has no snapshot of that name."""


class SessionClaimed(ProviderError):
    """Another holder has claimed the session (``Environment.claim``)."""


def new_token() -> str:
    return secrets.token_urlsafe(24)


# How long reset() waits for the scene's answer: longer than the scene bounds its reset
# route (deskbox.common.session_api.SCENE_RESET_S), so that the outermost caller waits
# longest and sees the scene's own answer, a 504 naming its bound at worst. A number
# here, as this module needs only the standard library; a unit test holds the two apart.
RESET_WAIT_S = 240.0


@dataclass
class EnvironmentSpec:
    """What one environment runs. Every field becomes one of the image's environment
    variables (scripts/container-entrypoint documents them)."""

    image: str = "deskbox"
    outputs: list[str] = field(default_factory=lambda: ["1920x1080"])  # DESKBOX_OUTPUTS
    # DESKBOX_TOKEN: bearer token of every endpoint but health; one of its own for each
    # environment unless given. None: no token (DESKBOX_NO_TOKEN=1, as the image would
    # otherwise make one that nobody here knows).
    token: str | None = field(default_factory=new_token)
    osworld: bool = True  # DESKBOX_OSWORLD_SERVER=1: OSWorld's server on 5000
    urls: list[str] = field(default_factory=list)  # DESKBOX_URLS
    context: str | None = None  # DESKBOX_CONTEXT: start the browser on this persistent context
    context_persist: bool = True  # DESKBOX_CONTEXT_PERSIST: save it back when the session ends
    contexts_dir: str | None = None  # host folder mounted at /var/lib/deskbox/contexts
    ttl: float | None = None  # DESKBOX_TTL: the session (and container) ends after this many seconds
    # Whether the session user may sudo (with OSWorld's password, as OSWorld's tasks do);
    # None: in OSWorld mode only. Without it the container runs with every capability
    # dropped and no-new-privileges (the podman back end), so sudo cannot work at all.
    sudo: bool | None = None
    env: dict[str, str] = field(default_factory=dict)  # anything else, passed as it is

    @property
    def may_sudo(self) -> bool:
        return self.osworld if self.sudo is None else self.sudo

    def environment(self) -> dict[str, str]:
        """The container's environment (the token included: pass it without putting it
        on a command line)."""
        env = dict(self.env)
        env["DESKBOX_OUTPUTS"] = ",".join(self.outputs)
        if self.osworld:
            env["DESKBOX_OSWORLD_SERVER"] = "1"
        if self.urls:
            env["DESKBOX_URLS"] = " ".join(self.urls)
        if self.token:
            env["DESKBOX_TOKEN"] = self.token
        else:
            env["DESKBOX_NO_TOKEN"] = "1"
        if self.context:
            env["DESKBOX_CONTEXT"] = self.context
            env["DESKBOX_CONTEXT_PERSIST"] = "1" if self.context_persist else "0"
        if self.ttl:
            env["DESKBOX_TTL"] = str(int(self.ttl) if float(self.ttl).is_integer() else self.ttl)
        return env


@dataclass
class Target:
    """``[BACKEND:]IMAGE[?key=value&...]``, the string OSWorld knows as ``path_to_vm``:
    ``podman:deskbox``, ``kubernetes:localhost/deskbox:latest?screen=1280x800``.
    Keys: ``screen`` (WxH; several separated by ``,`` for several displays), ``context``,
    ``persist`` (0/1), ``contexts_dir``, ``ttl``, ``runner`` (Kubernetes: ``kubectl`` or
    ``podman``), ``namespace`` (Kubernetes)."""

    backend: str
    image: str
    options: dict[str, str]

    def __str__(self) -> str:
        query = urllib.parse.urlencode(self.options, safe=",:/")
        return f"{self.backend}:{self.image}" + (f"?{query}" if query else "")


BACKENDS = {"podman": "podman", "kubernetes": "kubernetes", "k8s": "kubernetes", "kube": "kubernetes"}


def parse_target(text: str | None, *, default_backend: str | None = None, default_image: str | None = None) -> Target:
    """Parse ``path_to_vm``; the back end defaults to ``$DESKBOX_PROVIDER`` (else podman)
    and the image to ``$DESKBOX_IMAGE`` (else ``deskbox``)."""
    default_backend = default_backend or env("DESKBOX_PROVIDER") or "podman"
    default_image = default_image or env("DESKBOX_IMAGE") or "deskbox"
    text = (text or "").strip()
    base, _, query = text.partition("?")
    backend = default_backend
    head, sep, rest = base.partition(":")
    if sep and head.lower() in BACKENDS:
        backend, base = head.lower(), rest
    if backend.lower() not in BACKENDS:
        raise ProviderError(f"unknown deskbox back end {backend!r}: podman or kubernetes")
    options = {k: v for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True)}
    known = {"screen", "context", "persist", "contexts_dir", "ttl", "runner", "namespace"}
    unknown = set(options) - known
    if unknown:
        raise ProviderError(f"unknown option(s) {sorted(unknown)} in {text!r}; known: {sorted(known)}")
    return Target(BACKENDS[backend.lower()], base or default_image, options)


def context_held(contexts_dir: str | os.PathLike, ident: str) -> bool:
    """Whether a live session holds context ``ident`` of this host folder: its lock file's
    flock, read from /proc/locks (holding nothing ourselves, so a session starting at
    this moment is never refused because of us). Sessions in containers on this
    machine share the kernel, so their locks show here. False when it cannot tell."""
    lock = Path(contexts_dir) / ident / ".lock"
    try:
        st = lock.stat()
        table = Path("/proc/locks").read_text()
    except OSError:
        return False
    # "1: FLOCK  ADVISORY  WRITE 4242 00:2e:1234 0 EOF" (waiters have "->" in second place)
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    return any(f[1] == "FLOCK" and f[5] == inode for f in (line.split() for line in table.splitlines()) if len(f) > 5)


def check_context_id(ident: str) -> None:
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$", ident):
        raise ProviderError(f"context id {ident!r}: letters, digits, '.', '_', '-' (at most 128)")


class Environment:
    """One running session, reached over HTTP at ``host`` and one port per service
    (``ports``: service -> port, the keys of ``CONTAINER_PORTS``). Back ends subclass it
    for ``alive``, ``logs`` and ``end``; the session API calls are the same for all, over
    one ``deskbox.Client`` per environment (made at the first call, closed by ``stop()``)."""

    backend = "?"

    def __init__(self, name: str, spec: EnvironmentSpec, host: str, ports: dict[str, int]) -> None:
        self.name = name
        self.spec = spec
        self.host = host
        self.ports = dict(ports)
        self.started_at = time.time()
        self.healthy_s: float | None = None
        self.stopped = False
        self._client: Client | None = None
        self._client_lock = threading.Lock()
        self._closed = False

    # -- addresses ------------------------------------------------------------------------

    def url(self, service: str) -> str:
        return f"http://{self.host}:{self.ports[service]}"

    @property
    def address(self) -> dict[str, str]:
        """Service -> ``host:port`` as a client outside the session reaches it."""
        return {service: f"{self.host}:{port}" for service, port in self.ports.items()}

    def osworld_address(self) -> str:
        """OSWorld's ``get_ip_address`` answer: ``host:server:chromium:vnc:vlc``."""
        p = self.ports
        return f"{self.host}:{p['osworld']}:{p['chromium']}:{p['vnc']}:{p['vlc']}"

    # -- HTTP -------------------------------------------------------------------------------

    def request(self, method: str, service: str, path: str, body: Any = None, *, timeout: float = 30,
                token: bool = True) -> tuple[int, bytes]:
        with self.open(method, service, path, body, timeout=timeout, token=token) as resp:
            return resp.status, resp.read()

    def open(self, method: str, service: str, path: str, body: Any = None, *, timeout: float = 30,
             token: bool = True) -> Any:
        """One call of a service, its answer not read yet: a response to use in ``with``,
        with ``status`` and ``read()`` (an error status too, rather than an exception).
        For what the client does not carry: a liveness probe, OSWorld's screenshot, and a
        trace streamed to disk as it arrives; the session API goes through :meth:`call`."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url(service) + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if token and self.spec.token:
            req.add_header("Authorization", f"Bearer {self.spec.token}")
        try:
            return urllib.request.urlopen(req, timeout=timeout)
        except urllib.error.HTTPError as err:
            return err  # (a response too: status, read(), and a context manager)

    def call(self, method: str, path: str, body: Any = None, *, timeout: float = 30) -> Any:
        """The session API on the scene aggregator, through the sync ``deskbox.Client`` (its
        calls on the one event loop the process's clients share); its errors raise
        ProviderError, the family's error as their cause."""
        try:
            with self._scene_client() as desk:
                return desk.request("scene", method, path, body=body, timeout=timeout)
        except DeskboxError as answer:
            if answer.status is None:  # (no answer: refused, cut, or past the time bound)
                raise ProviderError(f"{self.name}: {method} {path}: {answer.message}") from answer
            cls = (SnapshotNotFound if answer.status == 404 and ("snapshot" in answer.code or "snapshot" in path)
                   else SessionClaimed if answer.status == 409 and answer.code == "claimed" else ProviderError)
            raise cls(f"{self.name}: {method} {path} -> {answer}") from answer

    # -- health -----------------------------------------------------------------------------

    def probe(self, timeout: float = 3) -> str | None:
        """None when healthy (the scene answers its health and, in OSWorld mode, OSWorld's
        /screenshot answers 200: what OSWorld's own docker provider waits for), else why not."""
        try:
            status, _ = self.request("GET", "scene", "/api/v1/health", timeout=timeout, token=False)
            if status != 200:
                return f"scene health {status}"
            if self.spec.osworld:
                status, body = self.request("GET", "osworld", "/screenshot", timeout=max(timeout, 10))
                if status != 200 or not body.startswith(b"\x89PNG"):
                    return f"OSWorld /screenshot {status}"
        except OSError as exc:
            return str(exc)
        return None

    def health(self) -> str | None:
        """None when the session is running and answers (:meth:`probe`), else why not:
        what a runner asks before it blames a failure on the session."""
        state = self.alive()
        if state is not True:
            return f"{self.name} is {state}"
        return self.probe()

    def wait_healthy(self, timeout: float = 180) -> float:
        started = time.monotonic()
        problem: str | None = "not asked yet"

        def healthy() -> bool:
            nonlocal problem
            state = self.alive()
            if state is not True:
                self._failed(f"{self.name} is {state}")
            problem = self.probe()
            return problem is None

        try:
            wait_until(healthy, timeout, 0.25, f"{self.name} to be healthy")
        except TimeoutError:
            self._failed(f"{self.name} was not healthy within {timeout:.0f}s (last: {problem})")
        self.healthy_s = time.monotonic() - started
        return self.healthy_s

    def _failed(self, message: str) -> None:
        logs = self.logs(60)
        if CONTEXT_IN_USE_MARK in logs:
            line = next((x for x in logs.splitlines() if CONTEXT_IN_USE_MARK in x), "")
            raise ContextInUse(f"{self.name}: the session refused to start: {line.strip()[-300:]}")
        raise ProviderError(f"{message}; its log ends:\n{logs[-3000:]}")

    # -- the session API --------------------------------------------------------------------

    def session(self) -> dict:
        return self.call("GET", "/api/v1/session")

    def snapshots(self) -> list[str]:
        return [s["name"] for s in self.session().get("snapshots", [])]

    def reset(self, snapshot: str | None = None, *, timeout: float = RESET_WAIT_S) -> dict:
        """Return the session to ``snapshot`` (default ``start``: as right after start).
        Answers once the scene is healthy again; raises ProviderError when the session
        says it is not, and waits for OSWorld's server too."""
        body = {"snapshot": snapshot} if snapshot else None
        result = self.call("POST", "/api/v1/session/reset", body, timeout=timeout)
        if not result.get("healthy", False):
            raise ProviderError(f"{self.name}: the reset to {result.get('snapshot')!r} ended unhealthy: {result}")
        if self.spec.osworld:
            problem: str | None = None

            def answers() -> bool:
                nonlocal problem
                problem = self.probe()
                return problem is None

            try:
                wait_until(answers, 30, 0.1, "OSWorld's server after the reset")
            except TimeoutError:
                raise ProviderError(f"{self.name}: after the reset: {problem}") from None
        return result

    def settle(self, *, quiet_share: float = 0.15, for_s: float = 1.0, timeout_s: float = 60.0) -> dict:
        """Wait until the session is quiet (``POST /api/v1/session/settle``): what a task's
        setup started has started. Answers ``settled``, ``waited_s``, ``share``, ``cpu_s``."""
        return self.call("POST", "/api/v1/session/settle",
                         {"quiet_share": quiet_share, "for_s": for_s, "timeout_s": timeout_s}, timeout=timeout_s + 20)

    def weigh(self, weight: float) -> bool:
        """The session's CPU weight against the other sessions on its machine, relative to
        a session's own (1.0). A session whose task's setup is starting its apps is weighed
        down so that its neighbours' observations come first; it still has all the CPU
        nobody else asks for. False where the back end cannot (this default)."""
        return False

    def snapshot(self, name: str, *, timeout: float = 180) -> dict:
        return self.call("POST", "/api/v1/session/snapshot", {"name": name}, timeout=timeout)

    def delete_snapshot(self, name: str) -> dict:
        return self.call("DELETE", f"/api/v1/session/snapshot/{urllib.parse.quote(name)}")

    def extend(self, seconds: float) -> dict:
        return self.call("POST", "/api/v1/session/extend", {"seconds": seconds})

    def claim(self, holder: str, ttl_s: float = 300) -> dict:
        """Claim the session for ``holder`` (or renew its claim) for ``ttl_s`` seconds;
        :class:`SessionClaimed` while another holder has it (``deskbox.provider.claimed``)."""
        return self.call("POST", "/api/v1/session/claim", {"holder": holder, "ttl_s": ttl_s})

    def let_go(self, holder: str) -> bool:
        """Let go of ``holder``'s claim; False when it had already run out."""
        return bool(self.call("DELETE", f"/api/v1/session/claim/{urllib.parse.quote(holder)}")["released"])

    # -- the back end's part --------------------------------------------------------------------

    def alive(self) -> bool | str:
        """True while it runs, else its state ("exited", "gone", ...)."""
        raise NotImplementedError

    def logs(self, lines: int = 40) -> str:
        raise NotImplementedError

    def end(self) -> None:
        """End the session (:meth:`stop` calls it, then closes the client)."""
        raise NotImplementedError

    def stop(self) -> None:
        """End the session, then close the environment's client."""
        try:
            self.end()
        finally:
            self.close()

    def close(self) -> None:
        """Close the client of the session API, the session left running (an environment
        given up before it was used: a claim refused). A call afterwards still goes, on a
        client of its own."""
        with self._client_lock:
            client, self._client, self._closed = self._client, None, True
        if client is not None:
            client.close()

    @contextlib.contextmanager
    def _scene_client(self) -> Iterator[Client]:
        """The session's scene through the sync client: one kept from the first call (the
        scene's port may be known only once the session has started) until :meth:`close`;
        after it, one for the call alone. A connection of its own for every call: the
        session may restart its scene between two calls minutes apart."""
        with self._client_lock:
            if not self._closed and self._client is None:
                self._client = Client(self.url("scene"), None, None, self.spec.token, keep_alive=False)
            kept = None if self._closed else self._client
        if kept is not None:
            yield kept
            return
        with Client(self.url("scene"), None, None, self.spec.token, keep_alive=False) as once:
            yield once

    def copy_out(self, path: str, dest: Path) -> bool:
        """Copy a folder of the session (a trace, say) to ``dest`` on this machine; False
        where the back end cannot."""
        return False

    def fetch_trace(self, trace_id: str, dest: Path, *, timeout: float = 180) -> bool:
        """A finished trace of the session's scene written to the folder ``dest`` over
        HTTP, whatever the back end (a pod in a cluster, a session of a pool); False
        when the scene does not have it or it could not be read whole."""
        try:
            # Unpacked as it arrives: a trace with its screenshots and video is never held
            # in memory whole (a runner fetches one per task, from many sessions at once).
            with self.open("GET", "scene", f"/api/v1/traces/{urllib.parse.quote(trace_id)}",
                           timeout=timeout) as resp:
                if resp.status != 200:
                    return False
                archive.unpack(resp, dest)
        except (OSError, http.client.HTTPException, archive.ArchiveError, EOFError):  # (a stream cut short)
            return False
        return True

    def delete_trace(self, trace_id: str, *, timeout: float = 60) -> bool:
        """Remove a finished trace from the session's scene; False when it could not."""
        try:
            status, _ = self.request("DELETE", "scene", f"/api/v1/traces/{urllib.parse.quote(trace_id)}",
                                     timeout=timeout)
        except OSError:
            return False
        return status == 200

    def __enter__(self) -> "Environment":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        # (host and ports only: osworld_address() wants ports an attached session may not have)
        ports = ",".join(f"{k}={v}" for k, v in sorted(self.ports.items()))
        return f"<{type(self).__name__} {self.name} {self.host} {ports}>"


def run_command(argv: list[str], *, input: str | None = None, env: dict[str, str] | None = None, check: bool = True,
                timeout: float = 180, missing: str = "") -> subprocess.CompletedProcess:
    """Run podman or kubectl; its failures as ProviderError, saying what failed."""
    try:
        out = subprocess.run(argv, input=input, capture_output=True, text=True, env=env, timeout=timeout)
    except FileNotFoundError:
        raise ProviderError(f"{argv[0]} is not installed" + (f" ({missing})" if missing else "")) from None
    except subprocess.TimeoutExpired:
        raise ProviderError(f"{' '.join(argv[:3])} took more than {timeout:.0f}s") from None
    if check and out.returncode != 0:
        raise ProviderError(f"{' '.join(argv[:3])} ... failed ({out.returncode}): {out.stderr.strip()[-800:]}")
    return out
