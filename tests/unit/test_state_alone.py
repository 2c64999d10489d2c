"""SessionState read and tested alone: given its config, a real home folder, a real
supervisor (with no children: no browser), a process of its own as the session's app and
the acts it asks of the session, it resets, snapshots and describes; it touches nothing of
a running session (the whole session: tests/test_session_state.py)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from deskbox.session.home import Home
from deskbox.session.state import SessionState, StateConfig
from deskbox.session.supervisor import Supervisor


class Acts:
    def __init__(self) -> None:
        self.apps: list[subprocess.Popen] = []
        self.wallpapers = 0
        self.next_urls: list[list[str]] = []

    def app_pids(self) -> set[int]:
        return {p.pid for p in self.apps if p.poll() is None}

    async def apply_wallpaper(self) -> bool:
        self.wallpapers += 1
        return True

    async def run_in_session(self, argv: list[str], *, timeout: float = 5.0) -> int | None:
        return 0

    def open_next(self, urls: list[str]) -> None:
        self.next_urls.append(list(urls))


def state_in(tmp_path: Path, acts: Acts) -> SessionState:
    home = Home(tmp_path / "home", uid=os.getuid(), gid=os.getgid(), snapshots=tmp_path / "snapshots")
    home.lock()
    (tmp_path / "runtime").mkdir()
    config = StateConfig(user_name="tester", uid=os.getuid(), gid=os.getgid(), runtime=tmp_path / "runtime",
                         profile_dir=tmp_path / "home" / ".config" / "chromium", outputs=["1280x800"],
                         start_urls=["about:blank"], osworld=False, cdp_port=1,
                         desktopd_url="http://127.0.0.1:1")  # nothing listens: input release says False
    return SessionState(config, home, Supervisor([]), acts, asyncio.Event())


def test_a_reset_ends_the_apps_and_puts_the_home_back_with_nothing_but_what_it_is_given(tmp_path):
    async def scenario() -> None:
        acts = Acts()
        state = state_in(tmp_path, acts)
        (tmp_path / "home" / "kept.txt").write_text("from the start")
        await state.save_start()
        (tmp_path / "home" / "kept.txt").write_text("changed")
        (tmp_path / "home" / "new.txt").write_text("made by a task")
        acts.apps.append(subprocess.Popen(["sleep", "60"]))
        done = await state.reset()
        assert acts.apps[0].wait(5) is not None  # the app was ended
        assert done["ended"] == ["sleep"] and done["input_released"] is False
        assert (tmp_path / "home" / "kept.txt").read_text() == "from the start"
        assert not (tmp_path / "home" / "new.txt").exists()
        assert acts.wallpapers == 1 and acts.next_urls == [["about:blank"]]
        described = state.describe()
        assert described["user"] == "tester" and described["resets"] == 1
        assert [s["name"] for s in described["snapshots"]] == ["start"]

    asyncio.run(scenario())
