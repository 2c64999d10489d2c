"""The Kubernetes back end: one pod per environment, made from deploy/deskbox.yaml.

    from deskbox.provider import EnvironmentSpec
    from deskbox.provider.kubernetes import KubernetesBackend

    backend = KubernetesBackend(runner="podman")     # or "kubectl", or $DESKBOX_KUBE_RUNNER
    env = backend.start(EnvironmentSpec(image="localhost/deskbox:latest", token=token))
    env.reset(); env.stop()

**The pod.** deploy/deskbox.yaml is read (PyYAML) and its Deployment's pod template
becomes a bare Pod named ``deskbox-env-<random>``, so the probes, resources, security
context and volumes stay the file's. Changed: the image; the labels
(``app.kubernetes.io/name: deskbox-env`` plus ``deskbox.provider/env: <name>``: with the
template's own labels the Deployment's ReplicaSet would adopt the pod and scale it
away, and its Service would hand it to other harnesses); the environment of
``EnvironmentSpec`` (outputs, OSWorld's server, URLs, context, TTL); the token, from a
Secret (``<name>-token``) of its own, or no token at all (the template's optional
``deskbox-token`` Secret is not used: the provider must know the token); container ports
for OSWorld (5000), Chrome tasks' CDP (9222), the live view (8006) and VLC (8090) beside
the template's 8000/8080/8122.

**Runners.**

- ``PodmanKubeRunner`` (tested here): ``podman kube play`` of the pod as JSON. Every
  port gets a ``hostPort`` on 127.0.0.1, allocated as the podman back end does (under
  the same lock, ``deskbox.provider.podman.port_lock``), so the address is
  ``127.0.0.1`` and those host ports. With ``publish=False`` nothing is published: the
  address is the pod's own on podman's network and the ports are the container ports,
  as a runner inside a cluster reaches pods (tests/container/provider.py's cluster run). The token is a podman secret (a JSON map of base64
  values, what podman's secretKeyRef reads). podman flags this machine needs
  (scripts/container-flags) go into a ``containers.conf`` named by ``CONTAINERS_CONF``
  (kube play takes no ``--runtime`` or ``--ulimit``). Contexts: a ``hostPath`` volume of
  ``spec.contexts_dir``. Taken down with ``podman pod rm -f`` and ``podman secret rm``.
- ``KubectlRunner`` (for a real cluster; not run on this machine, which has none):
  ``kubectl apply -f -`` of a List holding the Secret and the Pod, in ``namespace``
  (default: the kubeconfig's), hostPorts removed. The address is the pod's IP
  (``status.podIP``) and the container ports, which is what a harness running inside
  the cluster uses. From outside the cluster pass ``port_forward=True``: the runner
  keeps ``kubectl port-forward --address 127.0.0.1 pod/NAME :5000 :9222 ...`` running
  for the environment's lifetime and the address becomes 127.0.0.1 and the forwarded
  ports (kubectl picks them; ``Forwarding from 127.0.0.1:P -> C`` is read back).
  Health is asked over that address as for podman (plus the pod's phase). Contexts
  need a PersistentVolumeClaim (``contexts_claim=``), shared by every pod that may bind
  the same context; the session's lock is an ``flock`` on it, which holds across pods
  only where the volume's filesystem gives flock across clients (one node's hostPath or
  local volume does; check your RWX storage). Taken down with ``kubectl delete pod,secret
  --wait=false``.

Which runner: ``runner=`` or ``$DESKBOX_KUBE_RUNNER`` (``kubectl`` | ``podman``); else
``kubectl`` when it is installed and has a current context, otherwise ``podman``.

``close()`` is what a harness calls as it ends: no pod starts after it, and every pod
the back end started and has not stopped is taken down, those being applied included.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from ..common.settings import env
from . import (
    CONTAINER_CONTEXTS_DIR,
    CONTAINER_PORTS,
    ContextInUse,
    Environment,
    EnvironmentSpec,
    ProviderError,
    check_context_id,
    context_held,
    run_command,
)
from .launches import Launches
from .podman import (
    LOCK_PATH,
    PORT_BASE,
    allocate_ports,
    machine_flags,
    port_lock,
    prepare_contexts_dir,
    published_ports,
)

__all__ = ["KubernetesBackend", "KubeEnvironment", "PodmanKubeRunner", "KubectlRunner", "pod_manifest",
           "containers_conf", "private_empty_dirs"]

# deploy/deskbox.yaml, as package data (deskbox/provider/deskbox.yaml links to it in a checkout).
MANIFEST = Path(__file__).resolve().with_name("deskbox.yaml")
CONTAINER = "session"  # the template's container
PORT_NAMES = {"osworld": "osworld", "chromium": "chromium", "vnc": "vnc", "vlc": "vlc", "scene": "scene",
              "desktopd": "desktopd", "bridge": "bridge"}
LABELS = {"app.kubernetes.io/name": "deskbox-env", "app.kubernetes.io/managed-by": "deskbox-provider"}


def load_template(path: Path = MANIFEST) -> dict:
    """The pod template of the Deployment in ``path``."""
    try:
        import yaml
    except ImportError:
        raise ProviderError("the Kubernetes back end reads deploy/deskbox.yaml with PyYAML: pip install pyyaml") from None
    docs = [d for d in yaml.safe_load_all(Path(path).read_text()) if d]
    deployment = next((d for d in docs if d.get("kind") == "Deployment"), None)
    if deployment is None:
        raise ProviderError(f"{path} has no Deployment to take a pod template from")
    return copy.deepcopy(deployment["spec"]["template"])


def pod_manifest(template: dict, name: str, spec: EnvironmentSpec, *, host_ports: dict[str, int] | None,
                 host_ip: str = "127.0.0.1", contexts_volume: dict | None = None) -> dict:
    """The Pod for one environment (see the module's docstring for what changes).
    ``host_ports``: service -> host port (podman kube play), or None (a cluster: no hostPort)."""
    pod_spec = copy.deepcopy(template["spec"])
    containers = pod_spec.get("containers") or []
    container = next((c for c in containers if c.get("name") == CONTAINER), containers[0] if containers else None)
    if container is None:
        raise ProviderError("the pod template has no container")
    container["image"] = spec.image

    env = [e for e in container.get("env", []) if e.get("name") != "DESKBOX_TOKEN"]
    wanted = spec.environment()
    wanted.pop("DESKBOX_TOKEN", None)
    if spec.context:
        wanted["DESKBOX_CONTEXTS_DIR"] = CONTAINER_CONTEXTS_DIR
    for key, value in wanted.items():
        entry = next((e for e in env if e.get("name") == key), None)
        if entry is None:
            env.append({"name": key, "value": value})
        else:
            entry.pop("valueFrom", None)
            entry["value"] = value
    if spec.token:
        env.append({"name": "DESKBOX_TOKEN",
                    "valueFrom": {"secretKeyRef": {"name": f"{name}-token", "key": "token"}}})
    container["env"] = env

    ports = {p["containerPort"]: p for p in container.get("ports", [])}
    out_ports = []
    for service, container_port in CONTAINER_PORTS.items():
        port = dict(ports.get(container_port) or {"name": PORT_NAMES[service], "containerPort": container_port})
        port.pop("hostPort", None)
        port.pop("hostIP", None)
        if host_ports is not None:
            port["hostPort"] = host_ports[service]
            port["hostIP"] = host_ip
        out_ports.append(port)
    container["ports"] = out_ports

    if contexts_volume is not None:
        pod_spec.setdefault("volumes", []).append({"name": "contexts", **contexts_volume})
        container.setdefault("volumeMounts", []).append({"name": "contexts", "mountPath": CONTAINER_CONTEXTS_DIR})

    labels = {**LABELS, "deskbox.provider/env": name}
    annotations = dict((template.get("metadata") or {}).get("annotations") or {})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels, **({"annotations": annotations} if annotations else {})},
            "spec": pod_spec}


def private_empty_dirs(pod: dict, name: str) -> dict:
    """The pod with its emptyDir volumes named after it: podman kube play makes an emptyDir
    a named volume of the host, so two pods of one template would share it (every
    session's ~/Downloads, from deploy/deskbox.yaml); on a cluster each pod has its own."""
    pod = copy.deepcopy(pod)
    spec = pod["spec"]
    renamed = {v["name"]: f"{name}-{v['name']}" for v in spec.get("volumes", []) if "emptyDir" in v}
    for volume in spec.get("volumes", []):
        volume["name"] = renamed.get(volume["name"], volume["name"])
    for container in spec.get("containers", []):
        for mount in container.get("volumeMounts", []):
            mount["name"] = renamed.get(mount["name"], mount["name"])
    return pod


def containers_conf(flags: list[str]) -> str:
    """podman flags as a containers.conf: ``podman kube play`` takes no --runtime or --ulimit."""
    runtime, ulimits = None, []
    for flag, value in zip(flags[::2], flags[1::2]):
        if flag == "--runtime":
            runtime = value
        elif flag == "--ulimit":
            ulimits.append(value)
    lines = ["[containers]", f"default_ulimits = {json.dumps(ulimits)}"]
    if runtime:
        lines += ["[engine]", f"runtime = {json.dumps(runtime)}"]
    return "\n".join(lines) + "\n"


# -- runners --------------------------------------------------------------------------------


class PodmanKubeRunner:
    """``podman kube play`` on this machine."""

    name = "podman"

    def __init__(self, *, podman: str = "podman", flags: list[str] | None = None, lock_path: str = LOCK_PATH,
                 port_base: int = PORT_BASE, host: str = "127.0.0.1", publish: bool = True) -> None:
        self.podman = podman
        self._flags = flags
        self.lock_path = lock_path
        self.port_base = port_base
        self.host = host
        self.publish = publish
        self._dirs: dict[str, Path] = {}

    def _env(self, name: str) -> dict[str, str]:
        conf = self._dirs[name] / "containers.conf"
        if not conf.exists():
            conf.write_text(containers_conf(self._flags if self._flags is not None else machine_flags(self.podman)))
        return {**os.environ, "CONTAINERS_CONF": str(conf)}

    def contexts_volume(self, spec: EnvironmentSpec) -> dict:
        folder, _ = prepare_contexts_dir(spec.contexts_dir or ".")
        if context_held(folder, spec.context or ""):
            raise ContextInUse(f"context {spec.context!r} is in use by another live session "
                               f"(its lock in {folder} is held); stop that environment first")
        return {"hostPath": {"path": folder, "type": "DirectoryOrCreate"}}

    def apply(self, template: dict, name: str, spec: EnvironmentSpec,
              contexts_volume: dict | None) -> tuple[str, dict[str, int]]:
        self._dirs[name] = Path(tempfile.mkdtemp(prefix=f"{name}-"))
        if spec.token:
            secret = json.dumps({"token": base64.b64encode(spec.token.encode()).decode()})
            run_command([self.podman, "secret", "create", f"{name}-token", "-"], input=secret)
        if not self.publish:
            pod = pod_manifest(template, name, spec, host_ports=None, contexts_volume=contexts_volume)
            # podman kube play publishes a containerPort without hostPort on the same host
            # port (a cluster does not): the pod's ports go, they only name what it serves.
            for container in pod["spec"]["containers"]:
                container.pop("ports", None)
            self.play(name, pod)
            return self.pod_address(name), dict(CONTAINER_PORTS)
        with port_lock(self.lock_path):
            ports = allocate_ports(list(CONTAINER_PORTS), base=self.port_base, used=published_ports(self.podman))
            self.play(name, pod_manifest(template, name, spec, host_ports=ports, host_ip=self.host,
                                         contexts_volume=contexts_volume))
        return self.host, ports

    def play(self, name: str, manifest: dict) -> None:
        """``podman kube play`` of one manifest (a Pod named ``name``) with the podman
        flags this machine needs; :meth:`delete` takes it down."""
        folder = self._dirs.setdefault(name, Path(tempfile.mkdtemp(prefix=f"{name}-")))
        kube = folder / "pod.json"
        kube.write_text(json.dumps(private_empty_dirs(manifest, name), indent=1))
        run_command([self.podman, "kube", "play", str(kube)], env=self._env(name), timeout=300)

    def pod_address(self, name: str) -> str:
        """The pod's own address on podman's network (its infra container's), which the
        other pods reach it by, as pods of a cluster reach each other."""
        infra = run_command([self.podman, "pod", "inspect", "--format", "{{.InfraContainerID}}", name]).stdout.strip()
        out = run_command([self.podman, "inspect", "--format", "{{json .NetworkSettings}}", infra])
        settings = json.loads(out.stdout or "{}")
        addresses = [settings.get("IPAddress")] + [n.get("IPAddress") for n in (settings.get("Networks") or {}).values()]
        address = next((a for a in addresses if a), None)
        if address is None:
            raise ProviderError(f"pod {name} has no address on a podman network: {out.stdout[:300]}")
        return address

    def state(self, name: str) -> bool | str:
        out = run_command([self.podman, "inspect", "--format", "{{.State.Status}}", f"{name}-{CONTAINER}"], check=False)
        if out.returncode != 0:
            return "gone"
        state = out.stdout.strip()
        return True if state == "running" else state

    def logs(self, name: str, lines: int) -> str:
        out = run_command([self.podman, "logs", "--tail", str(lines), f"{name}-{CONTAINER}"], check=False)
        return (out.stdout + out.stderr).strip()

    def delete(self, name: str, grace: int) -> None:
        run_command([self.podman, "pod", "rm", "-f", "-t", str(grace), name], check=False, timeout=grace + 90)
        run_command([self.podman, "secret", "rm", f"{name}-token"], check=False)
        folder = self._dirs.pop(name, None)
        if folder is not None and (folder / "pod.json").is_file():
            pod = json.loads((folder / "pod.json").read_text())
            volumes = [v["name"] for v in pod["spec"].get("volumes", []) if "emptyDir" in v]
            if volumes:
                run_command([self.podman, "volume", "rm", "-f", *volumes], check=False)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


class KubectlRunner:
    """``kubectl`` against the kubeconfig's cluster (see the module's docstring)."""

    name = "kubectl"

    def __init__(self, *, kubectl: str = "kubectl", namespace: str | None = None, context: str | None = None,
                 port_forward: bool = False, contexts_claim: str | None = None) -> None:
        self.kubectl = kubectl
        self.namespace = namespace
        self.context = context
        self.port_forward = port_forward
        self.contexts_claim = contexts_claim
        self._forwards: dict[str, subprocess.Popen] = {}

    def _k(self, *args: str) -> list[str]:
        argv = [self.kubectl]
        if self.context:
            argv += ["--context", self.context]
        if self.namespace:
            argv += ["--namespace", self.namespace]
        return [*argv, *args]

    def contexts_volume(self, spec: EnvironmentSpec) -> dict:
        if not self.contexts_claim:
            raise ProviderError("contexts on a cluster need a PersistentVolumeClaim: KubectlRunner(contexts_claim=...)")
        return {"persistentVolumeClaim": {"claimName": self.contexts_claim}}

    def apply(self, template: dict, name: str, spec: EnvironmentSpec,
              contexts_volume: dict | None) -> tuple[str, dict[str, int]]:
        items: list[dict[str, Any]] = []
        if spec.token:
            items.append({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                          "metadata": {"name": f"{name}-token", "labels": {**LABELS, "deskbox.provider/env": name}},
                          "stringData": {"token": spec.token}})
        items.append(pod_manifest(template, name, spec, host_ports=None, contexts_volume=contexts_volume))
        run_command(self._k("apply", "-f", "-"), input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        deadline = time.monotonic() + 600
        while True:
            pod = self._pod(name)
            status = (pod or {}).get("status", {})
            if status.get("podIP"):
                ip = status["podIP"]
                break
            if status.get("phase") in ("Failed", "Succeeded"):
                raise ProviderError(f"pod {name} ended before it had an address: {status}")
            if time.monotonic() > deadline:
                raise ProviderError(f"pod {name} got no IP within 600s: {(pod or {}).get('status')}")
            time.sleep(1)
        if not self.port_forward:
            return ip, dict(CONTAINER_PORTS)
        return "127.0.0.1", self._forward(name)

    def _forward(self, name: str) -> dict[str, int]:
        argv = self._k("port-forward", "--address", "127.0.0.1", f"pod/{name}",
                       *(f":{p}" for p in CONTAINER_PORTS.values()))
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self._forwards[name] = proc
        by_port = {port: service for service, port in CONTAINER_PORTS.items()}
        ports: dict[str, int] = {}
        assert proc.stdout is not None
        while len(ports) < len(CONTAINER_PORTS):
            line = proc.stdout.readline()
            if not line:
                raise ProviderError(f"kubectl port-forward ended: {proc.poll()}")
            m = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)", line)
            if m and int(m.group(2)) in by_port:
                ports[by_port[int(m.group(2))]] = int(m.group(1))
        # keep reading, so kubectl never blocks on a full pipe
        threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
        return ports

    def _pod(self, name: str) -> dict | None:
        out = run_command(self._k("get", "pod", name, "-o", "json"), check=False)
        return json.loads(out.stdout) if out.returncode == 0 else None

    def state(self, name: str) -> bool | str:
        pod = self._pod(name)
        if pod is None:
            return "gone"
        status = pod.get("status", {})
        for cs in status.get("containerStatuses") or []:
            if cs.get("name") == CONTAINER and "terminated" in (cs.get("state") or {}):
                return "exited"
        phase = status.get("phase", "Unknown")
        return True if phase in ("Running", "Pending") else phase.lower()

    def logs(self, name: str, lines: int) -> str:
        out = run_command(self._k("logs", f"pod/{name}", "-c", CONTAINER, "--tail", str(lines)), check=False)
        if out.returncode != 0:  # restarted: the failed run's log
            out = run_command(self._k("logs", f"pod/{name}", "-c", CONTAINER, "--previous", "--tail", str(lines)), check=False)
        return (out.stdout + out.stderr).strip()

    def delete(self, name: str, grace: int) -> None:
        proc = self._forwards.pop(name, None)
        if proc is not None:
            proc.terminate()
        run_command(self._k("delete", "pod,secret", "-l", f"deskbox.provider/env={name}", f"--grace-period={grace}",
                     "--wait=false", "--ignore-not-found"), check=False)


def default_runner() -> str:
    chosen = env("DESKBOX_KUBE_RUNNER")
    if chosen:
        return chosen
    if shutil.which("kubectl"):
        out = subprocess.run(["kubectl", "config", "current-context"], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            return "kubectl"
    return "podman"


# -- the back end ---------------------------------------------------------------------------


class KubeEnvironment(Environment):
    backend = "kubernetes"

    def __init__(self, runner: PodmanKubeRunner | KubectlRunner, name: str, spec: EnvironmentSpec, host: str,
                 ports: dict[str, int]) -> None:
        super().__init__(name, spec, host, ports)
        self.runner = runner

    def alive(self) -> bool | str:
        return self.runner.state(self.name)

    def logs(self, lines: int = 40) -> str:
        return self.runner.logs(self.name, lines)

    def end(self) -> None:
        if self.stopped:
            return
        self.runner.delete(self.name, 30 if self.spec.context and self.spec.context_persist else 5)
        self.stopped = True


class KubernetesBackend:
    name = "kubernetes"

    def __init__(self, *, runner: str | PodmanKubeRunner | KubectlRunner | None = None,
                 manifest: str | os.PathLike = MANIFEST, name_prefix: str = "deskbox-env-", **runner_options: Any) -> None:
        if runner is None or isinstance(runner, str):
            kind = runner or default_runner()
            if kind == "podman":
                runner = PodmanKubeRunner(**runner_options)
            elif kind == "kubectl":
                runner = KubectlRunner(**runner_options)
            else:
                raise ProviderError(f"unknown Kubernetes runner {kind!r}: kubectl or podman")
        self.runner = runner
        self.manifest = Path(manifest)
        self.name_prefix = name_prefix
        self.launches = Launches()
        self._lock = threading.Lock()
        self._started: list[KubeEnvironment] = []

    def start(self, spec: EnvironmentSpec, *, name: str | None = None, timeout: float = 300,
              wait: bool = True) -> KubeEnvironment:
        name = name or f"{self.name_prefix}{uuid.uuid4().hex[:10]}"
        template = load_template(self.manifest)
        volume = None
        if spec.context:
            check_context_id(spec.context)
            if not spec.contexts_dir and isinstance(self.runner, PodmanKubeRunner):
                raise ProviderError("a context needs contexts_dir (the host folder mounted for contexts)")
            volume = self.runner.contexts_volume(spec)
        with self.launches.launching(name):
            try:
                host, ports = self.runner.apply(template, name, spec, volume)
            except BaseException:
                self.runner.delete(name, 0)
                raise
            environment = KubeEnvironment(self.runner, name, spec, host, ports)
            with self._lock:
                self._started = [e for e in self._started if not e.stopped] + [environment]
        if wait:
            try:
                environment.wait_healthy(timeout)
            except BaseException:
                environment.stop()
                raise
        return environment

    def close(self, wait: float = 330) -> list[str]:
        """Start no more pods, and take down every one this back end started and has not
        stopped, those being applied included (waiting up to ``wait`` s for them): what
        a harness does as it ends. Their names."""
        self.launches.close(wait)
        with self._lock:
            left = [e for e in self._started if not e.stopped]

        def stop(environment: KubeEnvironment) -> None:
            try:
                environment.stop()
            except ProviderError:  # the others go anyway
                pass

        threads = [threading.Thread(target=stop, args=(e,), daemon=True) for e in left]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [e.name for e in left]
