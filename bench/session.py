"""A `deskbox up` session for the bench: started as a subprocess, stopped with SIGINT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["BenchSession", "SessionFailed"]

ROOT = Path(__file__).resolve().parents[1]


class SessionFailed(RuntimeError):
    pass


class BenchSession:
    def __init__(self, url: str, *, output: str, desktopd_port: int, cdp_port: int, bridge_port: int) -> None:
        self.url = url
        self.output = output
        self.desktopd_port = desktopd_port
        self.cdp_port = cdp_port
        self.bridge_port = bridge_port
        self.tmp = Path(tempfile.mkdtemp(prefix="deskbox-bench-"))
        self.state_file = self.tmp / "state.json"
        self.log_path = self.tmp / "up.log"
        self.proc: subprocess.Popen | None = None
        self.state: dict = {}

    def _deskbox(self) -> list[str]:
        exe = Path(sys.executable).with_name("deskbox")
        return [str(exe)] if exe.exists() else [sys.executable, "-m", "services.session.cli"]

    def start(self, timeout: float = 90.0) -> dict:
        argv = [
            *self._deskbox(), "up",
            "--output", self.output,
            "--url", self.url,
            "--desktopd-port", str(self.desktopd_port),
            "--cdp-port", str(self.cdp_port),
            "--state-file", str(self.state_file),
        ]
        # Newer `deskbox up` also serves a CDP bridge; keep it off its default port, which
        # other sessions on this machine use.
        if "--bridge-port" in self._help():
            argv += ["--bridge-port", str(self.bridge_port)]
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=open(self.log_path, "wb"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not self.state_file.exists():
            if self.proc.poll() is not None:
                raise SessionFailed(f"deskbox up exited with {self.proc.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise SessionFailed(f"deskbox up was not up within {timeout:.0f}s:\n{self.log_tail()}")
            time.sleep(0.1)
        self.state = json.loads(self.state_file.read_text())
        return self.state

    def _help(self) -> str:
        result = subprocess.run([*self._deskbox(), "up", "--help"], cwd=ROOT, capture_output=True, text=True)
        return result.stdout

    def log_tail(self, n: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    @property
    def desktopd(self) -> str:
        return self.state["desktopd"]

    @property
    def desktopd_pid(self) -> int | None:
        return self.state.get("pids", {}).get("desktopd")

    def wayland_env(self) -> dict[str, str]:
        """What a Wayland client (grim) needs to reach this session's compositor."""
        env = dict(os.environ)
        env["WAYLAND_DISPLAY"] = self.state.get("wayland_display") or "wayland-1"
        env["XDG_RUNTIME_DIR"] = self.state["runtime_dir"]
        return env

    def stop(self, timeout: float = 30.0) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
