"""``python -I tether.py RUNNER_PID COMMAND...``: COMMAND in a child process that ends
when the runner does, however the runner ends.

A local session of ``deskbox run`` is ``deskbox up`` in a subprocess (its apps in
process groups of their own): were the runner killed (SIGKILL, the OOM killer), nothing
would stop it. PR_SET_PDEATHSIG does not serve: the kernel signals the child when the
*thread* that forked it ends, and the pool starts sessions from threads that end once
the session is up. So the tether sits between the runner and the session:

- SIGINT, SIGTERM and SIGHUP are passed on (a ``stop()``, or whatever kills the
  session's pid, reaches the session as before), and it ends with the session's status
  (killed by the same signal when the session was);
- once its parent is no longer RUNNER_PID (the runner died and the tether was
  re-parented), it stops the session as ``SpawnedSession.stop()`` does: SIGINT, then
  SIGKILL after 30 s.

Run as a script, not a module: it imports nothing of deskbox (a few MB a session)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

__all__ = ["PATH", "main"]

PATH = os.path.abspath(__file__)
POLL_S = 0.5
STOP_GRACE_S = 30.0


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        print("usage: tether.py RUNNER_PID COMMAND...", file=sys.stderr)
        return 2
    runner = int(argv[0])
    child = subprocess.Popen(argv[1:])

    def pass_on(sig: int, _frame: object) -> None:
        if child.poll() is None:
            child.send_signal(sig)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, pass_on)
    while True:
        try:
            child.wait(POLL_S)
            break
        except subprocess.TimeoutExpired:
            pass
        if os.getppid() != runner:
            child.send_signal(signal.SIGINT)
            try:
                child.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            break
    if child.returncode < 0:
        sig = -child.returncode
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig  # (a signal whose default is not to end the process)
    return child.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
