"""Sessions that are already running, claimed from a warm pool by their address.

On a cluster, a warm pool is the pods of a Deployment made from deploy/deskbox.yaml
(``deploy/run/`` turns OSWorld's server on), labelled ``app.kubernetes.io/name:
deskbox`` and listed by the headless Service ``deskbox``: its DNS name resolves to one
address per ready pod. A runner inside the cluster (deploy/run/job.yaml) reaches them by
those addresses and the container ports, with no port-forwarding and no rights on the
cluster's API: the claim is held by the session itself (``POST /api/v1/session/claim``),
so two runners drawing from one pool never share a session, and a runner that dies loses
its claims when they run out (``ttl_s``, renewed every third of it while the runner
works).

    from deskbox.provider.claimed import ClaimedPool

    pool = ClaimedPool("deskbox.evals.svc", token=token)     # or "10.1.2.3,10.1.2.4"
    env = pool.claim()          # a ClaimedEnvironment: reset(), call(), ...
    env.stop()                  # lets go of the claim; the pod runs on for the next runner

Releasing does not reset: every task resets the session it is given first."""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
import time

from . import CONTAINER_PORTS, Environment, EnvironmentSpec, ProviderError, SessionClaimed

__all__ = ["ClaimedEnvironment", "ClaimedPool", "default_holder"]

CLAIM_TTL_S = 120.0


def default_holder() -> str:
    """This runner's name in claims: its host name (a pod's name on a cluster) and pid."""
    return f"{socket.gethostname()[:100]}-{os.getpid()}"


class ClaimedEnvironment(Environment):
    """A running session at ``host`` (container ports), held by a claim while in use."""

    backend = "claimed"

    def __init__(self, host: str, spec: EnvironmentSpec, holder: str, ttl_s: float = CLAIM_TTL_S,
                 on_stop=None, ports: dict[str, int] | None = None) -> None:
        super().__init__(f"claimed-{host}", spec, host, dict(ports or CONTAINER_PORTS))
        self.holder = holder
        self.ttl_s = ttl_s
        self._lost: str | None = None
        self._done = threading.Event()
        self._renewer: threading.Thread | None = None
        self._on_stop = on_stop

    def take(self) -> "ClaimedEnvironment":
        """Claim the session (SessionClaimed when another holder has it) and keep the
        claim renewed until :meth:`stop`."""
        self.claim(self.holder, self.ttl_s)
        self._renewer = threading.Thread(target=self._renew, daemon=True, name=f"claim-{self.host}")
        self._renewer.start()
        return self

    def _renew(self) -> None:
        while not self._done.wait(self.ttl_s / 3):
            try:
                self.claim(self.holder, self.ttl_s)
            except SessionClaimed as exc:  # it ran out (we were away too long) and was taken
                self._lost = str(exc)
                return
            except ProviderError:
                pass  # not answering for now: alive() says so; the next round tries again

    def alive(self) -> bool | str:
        if self._lost:
            return f"its claim was lost ({self._lost})"
        problem = self.probe()
        return True if problem is None else f"not answering ({problem})"

    def logs(self, lines: int = 40) -> str:
        return f"(a session of a warm pool at {self.host}: its logs are its pod's, kubectl logs)"

    def end(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        self._done.set()
        if self._lost is None:
            try:
                self.let_go(self.holder)
            except ProviderError:
                pass  # not answering: the claim runs out by itself
        if self._on_stop is not None:
            self._on_stop(self)


class ClaimedPool:
    """The sessions behind ``names`` (comma-separated addresses or DNS names: a headless
    Service's name lists one address per ready pod), claimed one at a time for
    ``holder``. Every session serves on the same ports (``ports``: the container ports,
    as in a pod). Thread-safe."""

    def __init__(self, names: str, *, token: str | None = None, holder: str | None = None,
                 ttl_s: float = CLAIM_TTL_S, ports: dict[str, int] | None = None, osworld: bool = True) -> None:
        self.names = [n.strip() for n in names.split(",") if n.strip()]
        if not self.names:
            raise ProviderError("a pool of running sessions needs addresses or a DNS name")
        self.spec = EnvironmentSpec(token=token, osworld=osworld)
        self.ports = dict(ports or CONTAINER_PORTS)
        self.holder = holder or default_holder()
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._mine: set[str] = set()
        self._broken: set[str] = set()

    def addresses(self) -> list[str]:
        """Every address the names stand for now (a Service's ready pods change)."""
        found: list[str] = []
        for name in self.names:
            try:
                ipaddress.ip_address(name)
                candidates = [name]
            except ValueError:
                try:
                    infos = socket.getaddrinfo(name, self.ports["scene"], type=socket.SOCK_STREAM)
                except socket.gaierror:
                    continue  # no ready pod yet (or a typo: claim() says so when nothing ever resolves)
                candidates = sorted({info[4][0] for info in infos})
            found += [c for c in candidates if c not in found]
        return found

    def claim(self, timeout: float = 600) -> ClaimedEnvironment:
        """A healthy session of the pool, claimed; waits while every one is claimed."""
        deadline = time.monotonic() + timeout
        seen: dict[str, str] = {}
        while True:
            for host in self.addresses():
                with self._lock:
                    if host in self._mine or host in self._broken:
                        continue
                    self._mine.add(host)
                env = ClaimedEnvironment(host, self.spec, self.holder, self.ttl_s, on_stop=self._returned,
                                         ports=self.ports)
                try:
                    env.take()
                    problem = env.probe(timeout=10)
                    if problem is None:
                        return env
                    seen[host] = problem
                    env.stop()
                except SessionClaimed as exc:
                    seen[host] = str(exc).rpartition(": ")[2]  # "the session is claimed by 'x' for N s more"
                    env.close()  # (not ours: its connections only)
                except (ProviderError, OSError) as exc:
                    seen[host] = str(exc)[-200:]
                    env.close()
                with self._lock:
                    self._mine.discard(host)
            if time.monotonic() > deadline:
                what = "; ".join(f"{h}: {p}" for h, p in seen.items()) or "no address resolved"
                raise ProviderError(f"no free session in the pool {','.join(self.names)} within {timeout:.0f}s "
                                    f"({what})")
            time.sleep(2)

    def forget(self, env: ClaimedEnvironment) -> None:
        """Never claim ``env``'s session again in this run (it failed)."""
        with self._lock:
            self._broken.add(env.host)

    def _returned(self, env: ClaimedEnvironment) -> None:
        with self._lock:
            self._mine.discard(env.host)
