"""Run `deskbox up` as a child process from Python: for tests, benchmarks and harnesses
that want a session of their own and its endpoints."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..common.paths import IMPORT_ROOT

__all__ = ["SpawnedSession", "SessionFailed"]



class SessionFailed(RuntimeError):
    pass


class SpawnedSession:
    """``deskbox up ARGS --state-file ...`` in a subprocess; ``start()`` returns once the
    session is up (its state file written), ``stop()`` sends SIGINT like a user would.
    ``command`` is what runs ``deskbox`` (this interpreter's package by default; another
    installation's ``deskbox`` script, say), started in ``cwd``."""

    def __init__(self, args: list[str], *, env: dict[str, str] | None = None, prefix: str = "deskbox-session-",
                 command: list[str] | None = None, cwd: Path | None = None) -> None:
        self.args = list(args)
        self.command = command or [sys.executable, "-m", "deskbox.cli"]
        self.cwd = cwd or IMPORT_ROOT
        self.tmp = Path(tempfile.mkdtemp(prefix=prefix))
        # Its traces are its own, and go with it (the session's user reaches them: x only).
        self.tmp.chmod(0o711)
        self.env = {**os.environ, "DESKBOX_TRACES": str(self.tmp / "traces"), **(env or {})}
        self.state_file = self.tmp / "state.json"
        self.log_path = self.tmp / "up.log"
        self.proc: subprocess.Popen | None = None
        self.state: dict = {}

    def start(self, timeout: float = 90.0) -> dict:
        argv = [*self.command, "up", *self.args, "--state-file", str(self.state_file)]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(argv, cwd=self.cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not self.state_file.exists():
            if self.proc.poll() is not None:
                raise SessionFailed(f"deskbox up exited with {self.proc.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise SessionFailed(f"deskbox up was not up within {timeout:.0f}s:\n{self.log_tail()}")
            time.sleep(0.05)
        self.state = json.loads(self.state_file.read_text())
        return self.state

    def log_tail(self, n: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self, timeout: float = 30.0) -> int | None:
        """Stop the session; its folder (state file, log) goes too unless it failed."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.returncode == 0:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return self.proc.returncode
