"""The bench's session: `deskbox up` on its own ports, through deskbox.session.spawn."""

from __future__ import annotations

import os

from deskbox.session.spawn import SessionFailed, SpawnedSession

__all__ = ["BenchSession", "SessionFailed"]


class BenchSession(SpawnedSession):
    def __init__(self, url: str, *, output: str, desktopd_port: int, cdp_port: int, bridge_port: int) -> None:
        super().__init__(
            ["--output", output, "--url", url, "--desktopd-port", str(desktopd_port), "--cdp-port", str(cdp_port),
             "--bridge-port", str(bridge_port), "--scene-port", str(bridge_port + 1)],
            prefix="deskbox-bench-",
        )

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
