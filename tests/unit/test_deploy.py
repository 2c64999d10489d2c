"""deploy/: the manifests a cluster is given, checked as kustomize would put them
together (its JSON patches applied here: no cluster or kustomize binary on this
machine; the pods themselves run under podman kube play in tests/container/provider.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from deskbox.provider import CONTAINER_PORTS
from deskbox.run.cli import build_parser

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def load(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def patched(docs: list[dict], kustomization: dict) -> list[dict]:
    """The JSON6902 patches (add, remove) of a kustomization, applied to its targets."""
    out = copy.deepcopy(docs)
    for patch in kustomization.get("patches", []):
        target = patch["target"]
        for doc in out:
            if doc["kind"] != target["kind"] or doc["metadata"]["name"] != target["name"]:
                continue
            for op in yaml.safe_load(patch["patch"]):
                *parents, last = op["path"].strip("/").split("/")
                node = doc
                for part in parents:
                    node = node[int(part)] if isinstance(node, list) else node[part]
                if op["op"] == "add" and last == "-":
                    node.append(op["value"])
                elif op["op"] == "add":
                    node[last] = op["value"]
                elif op["op"] == "remove":
                    del node[int(last) if isinstance(node, list) else last]
                else:
                    raise AssertionError(f"an op this test does not know: {op}")
    return out


def by_kind(docs: list[dict], kind: str) -> dict:
    return next(d for d in docs if d["kind"] == kind)


def test_the_run_overlay_makes_a_warm_pool_the_jobs_runner_can_reach_and_claim():
    base = load(DEPLOY / "deskbox.yaml")
    cluster = patched(base, yaml.safe_load((DEPLOY / "kustomization.yaml").read_text()))
    overlay = yaml.safe_load((DEPLOY / "run" / "kustomization.yaml").read_text())
    assert overlay["resources"] == ["..", "job.yaml"]
    run = patched(cluster, overlay)

    pool = by_kind(run, "Deployment")
    container = pool["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["DESKBOX_OSWORLD_SERVER"] == "1"
    ports = {p["name"]: p for p in container["ports"]}
    assert ports["osworld"]["containerPort"] == CONTAINER_PORTS["osworld"]
    assert ports["chromium"]["containerPort"] == CONTAINER_PORTS["chromium"]
    assert not any("hostPort" in p for p in container["ports"])  # any number per node
    service = by_kind(run, "Service")
    assert service["spec"]["clusterIP"] == "None"  # headless: its name lists the pods' addresses
    assert {p["name"] for p in service["spec"]["ports"]} >= {"scene", "osworld"}
    assert service["spec"]["selector"].items() <= pool["spec"]["template"]["metadata"]["labels"].items()
    assert [i["newName"] for i in overlay["images"]] == ["localhost/deskbox-apps"]

    jobs = load(DEPLOY / "run" / "job.yaml")
    job, claim = by_kind(jobs, "Job"), by_kind(jobs, "PersistentVolumeClaim")
    pod = job["spec"]["template"]["spec"]
    runner = pod["containers"][0]
    args = build_parser().parse_args(runner["args"][1:])
    assert runner["args"][0] == "run"
    assert args.provider == "kubernetes" and args.pool == service["metadata"]["name"]
    assert args.sessions <= overlay["replicas"][0]["count"]
    assert str(args.out).startswith(runner["volumeMounts"][0]["mountPath"])
    assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    # It claims sessions through the sessions' own API: no rights on the cluster's.
    assert pod["automountServiceAccountToken"] is False
    token = next(e for e in runner["env"] if e["name"] == "DESKBOX_TOKEN")
    session_token = next(e for e in container["env"] if e["name"] == "DESKBOX_TOKEN")
    assert token["valueFrom"] == session_token["valueFrom"]


def test_a_cluster_s_sessions_are_closed_unless_opened():
    run = patched(patched(load(DEPLOY / "deskbox.yaml"), yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())),
                  yaml.safe_load((DEPLOY / "run" / "kustomization.yaml").read_text()))
    pool = by_kind(run, "Deployment")
    container = pool["spec"]["template"]["spec"]["containers"][0]
    job = by_kind(load(DEPLOY / "run" / "job.yaml"), "Job")
    runner = job["spec"]["template"]["spec"]["containers"][0]
    # The token's Secret is required, by the sessions and by the runner: no pod starts open.
    for c in (container, runner):
        ref = next(e for e in c["env"] if e["name"] == "DESKBOX_TOKEN")["valueFrom"]["secretKeyRef"]
        assert ref.get("optional", False) is False, c["name"]

    # Only the clients reach the sessions, on every port the sessions serve (the raw
    # DevTools port OSWorld's Chrome tasks relay included); the sessions are not clients.
    policy = by_kind(run, "NetworkPolicy")
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= \
        pool["spec"]["template"]["metadata"]["labels"].items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    [rule] = policy["spec"]["ingress"]
    [source] = rule["from"]
    clients = source["podSelector"]["matchLabels"]
    assert set(source) == {"podSelector"}  # (no namespaceSelector, no ipBlock: this namespace's clients only)
    assert clients.items() <= job["spec"]["template"]["metadata"]["labels"].items()
    assert not clients.items() <= pool["spec"]["template"]["metadata"]["labels"].items()
    assert {p["port"] for p in rule["ports"]} == {p["containerPort"] for p in container["ports"]}

    # The egress policy users switch on keeps DNS and the internet, not the cluster's ranges.
    [egress] = load(DEPLOY / "egress.yaml")
    assert egress["spec"]["podSelector"] == policy["spec"]["podSelector"]
    blocks = [t["ipBlock"] for r in egress["spec"]["egress"] for t in r["to"] if "ipBlock" in t]
    assert blocks == [{"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                                                         "169.254.0.0/16", "100.64.0.0/10"]}]
    dns = [r for r in egress["spec"]["egress"] if any(p["port"] == 53 for p in r.get("ports", []))]
    assert len(dns) == 1
