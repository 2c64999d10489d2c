"""`make container-test`, third part: the Kubernetes back end under podman kube play, and
a run inside that cluster (deploy/).

    .venv/bin/python tests/container/cluster.py [--image deskbox] [--runner-image deskbox-runner]

Checks, in order:

1. **Kubernetes back end under podman kube play**: a pod from deploy/deskbox.yaml starts
   healthy on its hostPorts, the token required, reset, removed with its secret.
2. **A run inside the cluster** (deploy/run/, with ``--runner-image``): two session pods
   from deploy/deskbox.yaml with OSWorld's server on and nothing published, and the
   runner pod of deploy/run/job.yaml (the runner image), all under podman kube play. The
   runner reaches the sessions by their pod addresses, claims them, runs
   tests/run_tasks with their scripted solutions (every task graded 1 by OSWorld's
   metrics, on both sessions) and writes the results to its volume; afterwards neither
   session is claimed.

Needs the images (scripts/container-build) and podman. Everything it starts is removed.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from drive import CheckFailed, run_parts  # noqa: E402  (this folder's: the image check's)
from provider import OUTPUT, Run, execute, local_image, png_size, podman  # noqa: E402  (the provider check's)

from deskbox.provider import CONTAINER_PORTS, EnvironmentSpec  # noqa: E402
from deskbox.provider.kubernetes import KubernetesBackend, PodmanKubeRunner  # noqa: E402


class RunnerMemory:
    """The highest memory use `podman stats` reports for a container while it runs."""

    def __init__(self, container: str) -> None:
        self.container = container
        self.mb = 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._done.wait(1.0):
            out = podman("stats", "--no-stream", "--format", "{{.MemUsage}}", self.container)
            found = re.match(r"\s*([\d.]+)\s*([kMG]?B)", out.stdout)  # "123.4MB / 25.1GB"
            if found:
                scale = {"B": 1e-6, "kB": 1e-3, "MB": 1.0, "GB": 1e3}[found.group(2)]
                self.mb = max(self.mb, float(found.group(1)) * scale)

    def stop(self) -> None:
        self._done.set()
        self._thread.join(5)


class Cluster(Run):
    # -- 1. Kubernetes under podman kube play ---------------------------------------------------

    def kube(self) -> None:
        token = secrets.token_urlsafe(24)
        backend = KubernetesBackend(runner="podman")
        image = local_image(self.image)
        t0 = time.monotonic()
        env = self.track(backend.start(EnvironmentSpec(image=image, token=token, outputs=[f"{OUTPUT[0]}x{OUTPUT[1]}"])))
        took = time.monotonic() - t0
        host, *ports = env.osworld_address().split(":")
        if host != "127.0.0.1" or len(set(env.ports.values())) != len(CONTAINER_PORTS):
            raise CheckFailed(f"kube: address {env.osworld_address()} / ports {env.ports}")
        status, _ = env.request("GET", "desktopd", "/api/v1/screenshot", token=False)
        if status != 401:
            raise CheckFailed(f"kube: a screenshot without the token -> {status}")
        status, body = env.request("GET", "osworld", "/screenshot")
        if status != 200 or png_size(body) != OUTPUT:
            raise CheckFailed(f"kube: OSWorld /screenshot -> {status}")
        done = env.reset()
        env.stop()
        if podman("pod", "exists", env.name).returncode == 0:
            raise CheckFailed(f"kube: pod {env.name} is still there after stop()")
        if podman("secret", "inspect", f"{env.name}-token").returncode == 0:
            raise CheckFailed(f"kube: secret {env.name}-token is still there after stop()")
        self.ok(f"kube play: pod {env.name} from deploy/deskbox.yaml healthy in {took:.1f}s at {env.osworld_address()}, "
                f"401 without its token, reset in {done['reset_ms']:.0f} ms, pod and secret removed")

    # -- 2. a run inside the cluster -----------------------------------------------------------

    def cluster_run(self, runner_image: str) -> None:
        import yaml

        kube = PodmanKubeRunner(publish=False)
        backend = KubernetesBackend(runner=kube, name_prefix=f"deskbox-pool-test-{os.getpid()}-")
        token = secrets.token_urlsafe(24)
        spec = EnvironmentSpec(image=local_image(self.image), token=token, osworld=True,
                               outputs=[f"{OUTPUT[0]}x{OUTPUT[1]}"])
        sessions = [self.track(backend.start(spec)) for _ in range(2)]
        addresses = [env.host for env in sessions]
        if any(a.startswith("127.") for a in addresses) or len(set(addresses)) != 2:
            raise CheckFailed(f"cluster: session pods' addresses {addresses}")
        self.ok(f"cluster: 2 session pods from deploy/deskbox.yaml, OSWorld's server on, nothing published, "
                f"at {', '.join(addresses)}")
        # Each pod its own ~/Downloads (the template's emptyDir), as on a cluster.
        execute(sessions[0], "echo mine > ~/Downloads/pod-a.txt")
        seen = execute(sessions[1], "ls ~/Downloads")["output"]
        if "pod-a.txt" in seen:
            raise CheckFailed("cluster: two session pods share ~/Downloads (one host volume for the emptyDir)")

        work = Path(tempfile.mkdtemp(prefix="deskbox-cluster-run-", dir="/var/tmp"))
        name = f"deskbox-run-test-{os.getpid()}"
        try:
            shutil.copytree(ROOT / "tests" / "run_tasks", work / "tasks")
            subprocess.run(["chmod", "-R", "a+rwX", str(work)], check=True)
            docs = list(yaml.safe_load_all((ROOT / "deploy" / "run" / "job.yaml").read_text()))
            job = next(d for d in docs if d and d.get("kind") == "Job")
            template = job["spec"]["template"]
            pod_spec = template["spec"]
            container = pod_spec["containers"][0]
            container["image"] = local_image(runner_image)
            args = container["args"]
            for flag, value in (("--pool", ",".join(addresses)), ("--agent", "script:/work/tasks/solutions.json"),
                                ("--sessions", "2"), ("--screen", f"{OUTPUT[0]}x{OUTPUT[1]}")):
                args[args.index(flag) + 1] = value
            secret = json.dumps({"token": base64.b64encode(token.encode()).decode()})
            subprocess.run(["podman", "secret", "create", f"{name}-token", "-"], input=secret, text=True, check=True,
                           capture_output=True)
            for entry in container["env"]:
                if entry["name"] == "DESKBOX_TOKEN":
                    entry["valueFrom"]["secretKeyRef"]["name"] = f"{name}-token"
            pod_spec["volumes"] = [{"name": "work", "hostPath": {"path": str(work), "type": "Directory"}}]
            t0 = time.monotonic()
            kube.play(name, {"apiVersion": "v1", "kind": "Pod",
                             "metadata": {"name": name, "labels": template["metadata"]["labels"]}, "spec": pod_spec})
            peak = RunnerMemory(f"{name}-runner")
            waited = subprocess.run(["podman", "wait", f"{name}-runner"], capture_output=True, text=True, timeout=900)
            took = time.monotonic() - t0
            peak.stop()
            logs = podman("logs", "--tail", "40", f"{name}-runner")
            if waited.stdout.strip() != "0":
                raise CheckFailed(f"cluster: the runner pod exited {waited.stdout.strip() or waited.stderr.strip()}:\n"
                                  f"{(logs.stdout + logs.stderr)[-3000:]}")
            results = [json.loads(line) for line in (work / "results" / "results.jsonl").read_text().splitlines()]
            scores = {r["task"]: (r["status"], r["score"]) for r in results}
            expected = json.loads((ROOT / "tests" / "run_tasks" / "solutions.json").read_text())
            if set(scores) != set(expected) or any(v != ("done", 1.0) for v in scores.values()):
                raise CheckFailed(f"cluster: the runner's results {scores}")
            # Each task's trace came home from its pod over HTTP (no file copy reaches a pod).
            homeless = [(r["task"], r.get("trace")) for r in results
                        if not (r.get("trace") or {}).get("folder") or not
                        (work / Path(r["trace"]["folder"]).relative_to("/work") / "steps.jsonl").is_file()]
            if homeless:
                raise CheckFailed(f"cluster: these tasks' traces did not reach the results: {homeless}")
            # ... and each was deleted from its pod once fetched (a pool session serves the
            # run's next tasks on the same disk).
            left = [(r["task"], env.name) for r in results for env in sessions
                    if r["trace"].get("in_session") is not None
                    or env.request("GET", "scene", f"/api/v1/traces/{r['trace']['trace_id']}")[0] != 404]
            if left:
                raise CheckFailed(f"cluster: these tasks' traces are still in their sessions: {left}")
            used = {r["session"] for r in results}
            if used != {f"claimed-{a}" for a in addresses}:
                raise CheckFailed(f"cluster: the tasks ran on {used}, not on both session pods {addresses}")
            claims = [env.session().get("claim") for env in sessions]
            if claims != [None, None]:
                raise CheckFailed(f"cluster: the sessions are still claimed after the run: {claims}")
            self.ok(f"cluster: the Job's runner pod (deploy/run/job.yaml, {runner_image}) ran {len(results)} tasks "
                    f"across both session pods by their addresses in {took:.0f}s, every one graded 1 by OSWorld's "
                    f"metrics, results and each task's trace on its volume (and no longer in its pod), both sessions let go; the runner's memory "
                    f"peaked at {peak.mb:.0f} MB (podman stats every second)")
        finally:
            kube.delete(name, 5)
            subprocess.run(["podman", "secret", "rm", f"{name}-token"], capture_output=True)
            shutil.rmtree(work, ignore_errors=True)
            for env in sessions:
                env.stop()
        left = [v for v in podman("volume", "ls", "--format", "{{.Name}}").stdout.split()
                if any(v.startswith(env.name) for env in sessions)]
        if left:
            raise CheckFailed(f"cluster: the pods' volumes are left after they stopped: {left}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tests/container/cluster.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image", default="deskbox")
    p.add_argument("--runner-image", help="the runner image (make image-runner): adds the run inside the cluster")
    args = p.parse_args(argv)
    run = Cluster(args.image)
    print(f"cluster-test: {args.image}")
    parts = [("kube play", run.kube)]
    if args.runner_image:
        parts.append(("cluster run", lambda: run.cluster_run(args.runner_image)))
    try:
        failed = run_parts(parts, catch=(Exception,))
    finally:
        run.cleanup()
    print(f"cluster-test: {len(run.passed)} passed, {1 if failed else 0} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
