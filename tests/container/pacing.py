"""`make container-test`, fourth part: a run paces its sessions (deskbox/run/admission.py,
the session's settle, the podman provider's CPU weights).

    .venv/bin/python tests/container/pacing.py [--image deskbox]

Checks, in order:

1. **CPU weights**: two sessions each run two CPU-bound loops (enough for both cores)
   for 4 s at once; one is weighed down to a quarter (``PodmanEnvironment.weigh``). Its
   cgroup then holds a quarter of the other's weight, and it gets less than 0.6 of the
   other's CPU over those seconds (equal weights: about 1). Weighed back to 1.0, the
   file holds the default again.
2. **Settle in a container**: a loop started through OSWorld's ``/setup/launch`` keeps
   the session busy for 3 s; ``settle()`` answers settled after it and not before,
   counting its CPU.
3. **A paced run**: ``deskbox run --provider podman --sessions 2 --admit 1`` over
   tests/run_tasks with the noop agent: every task done, each with the time it waited
   for its slot and its wait for the apps (settled) recorded, and ``run.json`` saying
   one slot.

Needs the image (scripts/container-build) and podman. Everything it starts is removed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from drive import CheckFailed, Passed, run_parts  # noqa: E402  (this folder's: the image check's)

from bench.container import cgroup_cpu_s  # noqa: E402
from deskbox.provider import Environment, EnvironmentSpec  # noqa: E402
from deskbox.provider.podman import PodmanBackend, cpu_weight_file  # noqa: E402

INDEX = ROOT / "tests" / "run_tasks" / "test_all.json"
LOOP = "timeout {s} sh -c 'while :; do :; done'"


def launch(env: Environment, command: list[str]) -> None:
    status, body = env.request("POST", "osworld", "/setup/launch", {"command": command}, timeout=30)
    if status != 200:
        raise CheckFailed(f"/setup/launch {command}: {status} {body[:300]!r}")


class Checks(Passed):
    def __init__(self, image: str, backend: PodmanBackend) -> None:
        super().__init__()
        self.image = image
        self.backend = backend
        self.started: list[Environment] = []

    def start(self) -> Environment:
        env = self.backend.start(EnvironmentSpec(image=self.image, outputs=["1280x800"], osworld=True))
        self.started.append(env)
        return env

    def cleanup(self) -> None:
        for env in self.started:
            env.stop()

    # -- 1. weights ------------------------------------------------------------------------------

    def weights(self) -> None:
        heavy, light = self.start(), self.start()
        for env in (heavy, light):
            env.settle(timeout_s=60)
        cgroup = self.backend.podman("inspect", "--format", "{{.State.CgroupPath}}", heavy.name).stdout
        path = cpu_weight_file(cgroup)
        if path is None:
            raise CheckFailed(f"no cpu.weight or cpu.shares for the cgroup {cgroup.strip()!r}")
        default = path.read_text().strip()
        if not heavy.weigh(0.25):
            raise CheckFailed(f"weigh(0.25) could not write {path}")
        quarter = "256" if path.name == "cpu.shares" else "25"
        if path.read_text().strip() != quarter:
            raise CheckFailed(f"{path} holds {path.read_text().strip()} after weigh(0.25), not {quarter}")
        before = {e.name: cgroup_cpu_s(e.name) for e in (heavy, light)}
        for env in (heavy, light):
            for _ in range(2):
                launch(env, ["sh", "-c", LOOP.format(s=4)])
        time.sleep(4.5)
        used = {e.name: cgroup_cpu_s(e.name) - before[e.name] for e in (heavy, light)}
        heavy.weigh(1.0)
        ratio = used[heavy.name] / max(1e-6, used[light.name])
        if ratio >= 0.6:
            raise CheckFailed(f"weighed down to a quarter, it used {used[heavy.name]:.2f} CPU s against "
                              f"{used[light.name]:.2f} (ratio {ratio:.2f}, not under 0.6)")
        if path.read_text().strip() != default:
            raise CheckFailed(f"{path} holds {path.read_text().strip()} after weigh(1.0), not {default}")
        self.ok(f"weights: {path.name} {quarter} while weighed down: {used[heavy.name]:.2f} CPU s against "
                f"{used[light.name]:.2f} for its neighbour (ratio {ratio:.2f}), back to {default} after")

    # -- 2. settle -------------------------------------------------------------------------------

    def settle(self) -> None:
        env = self.started[-1] if self.started else self.start()
        env.settle(timeout_s=60)
        launch(env, ["sh", "-c", LOOP.format(s=3)])
        started = time.monotonic()
        done = env.settle(quiet_share=0.3, for_s=0.5, timeout_s=30)
        waited = time.monotonic() - started
        if not done["settled"] or waited < 1.5 or done["cpu_s"] < 1.0:
            raise CheckFailed(f"settle after a 3 s loop answered {done} after {waited:.1f} s")
        self.ok(f"settle: answered after {waited:.1f} s of a 3 s loop, {done['cpu_s']} CPU s counted, share "
                f"{done['share']} at the end")

    # -- 3. a paced run --------------------------------------------------------------------------

    def paced_run(self) -> None:
        self.cleanup()
        self.started.clear()
        out = Path(tempfile.mkdtemp(prefix="deskbox-pacing-test-"))
        try:
            proc = subprocess.run([sys.executable, "-m", "deskbox.cli", "run", str(INDEX), "--agent", "noop",
                                   "--provider", "podman", "--image", self.image, "--sessions", "2", "--admit", "1",
                                   "--no-trace", "--out", str(out)],
                                  cwd=ROOT, capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                raise CheckFailed(f"deskbox run exited {proc.returncode}: {proc.stderr[-2000:]}")
            records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
            wrong = [r["task"] for r in records if r["status"] != "done" or "queued_s" not in r["timings"]
                     or not (r.get("ready") or {}).get("settled")]
            if not records or wrong:
                raise CheckFailed(f"tasks without their slot's wait or a settled session: {wrong} of "
                                  f"{[(r['task'], r['status'], r['timings'], r.get('ready')) for r in records]}")
            run = json.loads((out / "run.json").read_text())
            if run.get("admit") != 1 or run.get("ready_timeout_s") != 60:
                raise CheckFailed(f"run.json says admit {run.get('admit')}, ready_timeout_s "
                                  f"{run.get('ready_timeout_s')}")
            queued = max(r["timings"]["queued_s"] for r in records)
            ready = max(r["timings"]["ready_s"] for r in records)
            self.ok(f"paced run: {len(records)} tasks done on 2 sessions with one slot; longest wait for the slot "
                    f"{queued:.1f} s, for the apps {ready:.1f} s, every session settled")
        finally:
            shutil.rmtree(out, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tests/container/pacing.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image", default="deskbox")
    args = p.parse_args(argv)
    checks = Checks(args.image, PodmanBackend(name_prefix=f"deskbox-pacing-test-{os.getpid()}-"))
    try:
        failed = run_parts([("weights", checks.weights), ("settle", checks.settle), ("paced run", checks.paced_run)],
                           catch=(Exception,))
    finally:
        checks.cleanup()
    print(f"pacing-test: {len(checks.passed)} passed" + (f", failed: {failed}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
