"""`make container-test`, third part: nothing a stopped run started outlives it, and a
run removes what a runner that died left (deskbox/run/cli.py, deskbox/provider/leftovers.py).

    .venv/bin/python tests/container/interrupts.py [--image deskbox]

Checks, in order:

1. **Leftovers**: three containers labelled as podman sessions: one whose owner pid is
   a process that has ended, one owned by this script (alive), one with the ended pid
   but of another pid namespace. ``PodmanBackend.remove_leftovers()`` removes the first,
   saying why, and keeps the other two.
2. **Ctrl+C while sessions start**: ``deskbox run --provider podman --sessions 2`` over
   tests/run_tasks with the noop agent gets SIGINT as a terminal sends it (to its whole
   process group, the ``podman run`` in flight included) once its first container
   exists, before any session is up. It exits 130 and no container labelled with its
   pid is left. That run also first removed a container planted with an ended owner
   (said on stderr and as ``leftovers_removed`` in events.jsonl), not the one owned by
   this script, which is alive.
3. **Ctrl+C twice**: the same, the second Ctrl+C once the run has answered the first
   (as a person presses it), while it stops its sessions: it skips the wait for those
   starting, not the removal, and says so; no container left.
4. **SIGTERM** to the runner alone (its ``podman run`` go on): no container left.
5. **A terminal that hangs up** (SIGHUP to the whole process group): no container left.

Needs the image (scripts/container-build) and podman. Everything it starts is removed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from drive import CheckFailed, Passed, run_parts, wait_until  # noqa: E402  (this folder's: the image check's)

from deskbox.provider.leftovers import pid_namespace  # noqa: E402
from deskbox.provider.podman import PodmanBackend  # noqa: E402

INDEX = ROOT / "tests" / "run_tasks" / "test_all.json"


def podman(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True)


def owned_by(pid: int) -> list[str]:
    out = podman("ps", "-a", "--filter", f"label=deskbox.owner-pid={pid}", "--format", "{{.Names}}")
    if out.returncode != 0:
        raise CheckFailed(f"podman ps: {out.stderr.strip()}")
    return out.stdout.split()


def ended_pid() -> int:
    """The pid of a process that has ended (and is not reused in the seconds this takes)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


class Checks(Passed):
    def __init__(self, image: str, backend: PodmanBackend) -> None:
        super().__init__()
        self.image = image
        self.backend = backend
        self.planted: list[str] = []

    def plant(self, name: str, owner_pid: int, pidns: str) -> str:
        """A container labelled as a podman session's, doing nothing."""
        out = podman("run", "-d", "--name", name, "--label", "deskbox.provider=podman",
                     "--label", f"deskbox.owner-pid={owner_pid}", "--label", f"deskbox.owner-pidns={pidns}",
                     *self.backend.flags, "--entrypoint", "sleep", self.image, "infinity")
        if out.returncode != 0:
            raise CheckFailed(f"podman run {name}: {out.stderr.strip()}")
        self.planted.append(name)
        return name

    def cleanup(self) -> None:
        if self.planted:
            podman("rm", "-f", "-i", "-t", "0", *self.planted)

    # -- 1. leftovers ------------------------------------------------------------------------

    def leftovers(self) -> None:
        tag, dead, ns = os.getpid(), ended_pid(), pid_namespace()
        gone = self.plant(f"deskbox-leftover-test-{tag}-dead", dead, ns)
        live = self.plant(f"deskbox-leftover-test-{tag}-live", os.getpid(), ns)
        other = self.plant(f"deskbox-leftover-test-{tag}-other-ns", dead, "pid:[1]")
        removed = self.backend.remove_leftovers()
        mine = [f for f in removed if f.name.startswith(f"deskbox-leftover-test-{tag}-")]
        if [(f.name, f.why) for f in mine] != [(gone, f"no process {dead}")]:
            raise CheckFailed(f"remove_leftovers() took {[(f.name, f.why) for f in mine]}, not only {gone} "
                              f"(no process {dead})")
        exist = {n: podman("container", "exists", n).returncode == 0 for n in (gone, live, other)}
        if exist != {gone: False, live: True, other: True}:
            raise CheckFailed(f"after remove_leftovers(), which containers exist: {exist}")
        self.ok(f"leftovers: the container of ended pid {dead} removed ('no process {dead}'); the one of this live "
                "script and the one of another pid namespace kept")

    # -- 2-4. a stopped run --------------------------------------------------------------------

    def stopped_run(self, how: str) -> None:
        out = Path(tempfile.mkdtemp(prefix="deskbox-interrupt-test-"))
        stderr = tempfile.TemporaryFile("w+")  # read while the run goes on, unlike a pipe's
        planted = None
        if how == "ctrl-c":
            planted = self.plant(f"deskbox-leftover-test-{os.getpid()}-before-run", ended_pid(), pid_namespace())
        proc = subprocess.Popen([sys.executable, "-m", "deskbox.cli", "run", str(INDEX), "--agent", "noop",
                                 "--provider", "podman", "--image", self.image, "--sessions", "2",
                                 "--out", str(out)],
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr, text=True,
                                env={**os.environ, "PYTHONFAULTHANDLER": "1"},  # (a hang says where: below)
                                start_new_session=True)  # its own process group, as a shell's foreground job
        try:
            self._stop(proc, how, out, planted, stderr)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            stderr.close()
            left = owned_by(proc.pid)
            if left:
                podman("rm", "-f", "-i", "-t", "0", *left)
            shutil.rmtree(out, ignore_errors=True)

    def _stop(self, proc: subprocess.Popen, how: str, out: Path, planted: str | None, stderr) -> None:
        events = out / "events.jsonl"

        def said() -> str:
            stderr.seek(0)
            return stderr.read()

        def read_events() -> list[dict]:
            return [json.loads(line) for line in events.read_text().splitlines() if line.strip()] \
                if events.is_file() else []

        first = wait_until(lambda: owned_by(proc.pid) or proc.poll() is not None, 120,
                           "the run's first container")
        if proc.poll() is not None:
            proc.wait()
            raise CheckFailed(f"the run ended before it started a container: {said()[-2000:]}")
        up = [e for e in read_events() if e["event"] == "session_started"]
        t0 = time.monotonic()
        if how == "sigterm":
            os.kill(proc.pid, signal.SIGTERM)
        elif how == "sighup":
            os.killpg(proc.pid, signal.SIGHUP)
        else:
            os.killpg(proc.pid, signal.SIGINT)
            if how == "ctrl-c-twice":
                # Once the run has answered the first: one pressed before that is the same
                # Ctrl+C to it (the kernel keeps one SIGINT pending, not two).
                wait_until(lambda: "deskbox run: interrupted;" in said() or proc.poll() is not None, 60,
                           "the run's answer to the first Ctrl+C")
                os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=400)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # every thread's stack, on its stderr
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            raise CheckFailed(f"{how}: the run had not exited 400 s after the signal; where it was:\n"
                              f"{said()[-8000:]}") from None
        took = time.monotonic() - t0
        err = said()
        left = owned_by(proc.pid)
        if left:
            raise CheckFailed(f"{how}: containers of the run left after it exited: {left}\n{err[-2000:]}")
        if proc.returncode != 130:
            raise CheckFailed(f"{how}: the run exited {proc.returncode}, not 130:\n{err[-2000:]}")
        if how == "ctrl-c-twice" and "not waiting for sessions still starting" not in err \
                and "removing what this run started first" not in err:
            raise CheckFailed(f"the second Ctrl+C did not reach the run while it stopped its sessions:\n{err[-2000:]}")
        when = "before any session was up" if not up else f"after {len(up)} session(s) were up"
        self.ok(f"{how}: at {len(first)} container(s) of the run, {when}: exit 130 in {took:.1f}s, no container "
                "of its pid left")
        if planted is not None:
            removed = [c["name"] for e in read_events() if e["event"] == "leftovers_removed" for c in e["containers"]]
            if planted not in removed or planted not in err or podman("container", "exists", planted).returncode == 0:
                raise CheckFailed(f"the run did not remove {planted} (of an ended pid) at its start: events say "
                                  f"{removed}; stderr:\n{err[-2000:]}")
            alive = f"deskbox-leftover-test-{os.getpid()}-live"
            if podman("container", "exists", alive).returncode != 0:
                raise CheckFailed(f"the run removed {alive}, whose owner (this script) is alive")
            self.ok(f"the run removed {planted} (its owner had ended) at its start, said so on stderr and in "
                    "events.jsonl, and kept the container of this live script")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tests/container/interrupts.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image", default="deskbox")
    args = p.parse_args(argv)

    backend = PodmanBackend()
    checks = Checks(args.image, backend)
    print(f"interrupts-test: {args.image}" + (f" (podman flags: {' '.join(backend.flags)})" if backend.flags else ""))
    parts = [("leftovers", checks.leftovers), ("ctrl-c", lambda: checks.stopped_run("ctrl-c")),
             ("ctrl-c twice", lambda: checks.stopped_run("ctrl-c-twice")),
             ("sigterm", lambda: checks.stopped_run("sigterm")), ("sighup", lambda: checks.stopped_run("sighup"))]
    try:
        failed = run_parts(parts)
    finally:
        checks.cleanup()
    print(f"interrupts-test: {len(checks.passed)} passed, {1 if failed else 0} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
