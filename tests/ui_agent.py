"""What an agent has in tests/test_graded_tasks.py: pyautogui actions sent as
``DesktopEnv.step`` sends them, the screen's windows, OSWorld's accessibility tree, and
the session's files and terminal read through OSWorld's server."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import lxml.etree

from deskbox.run.episode import Episode
from tests.support import Session, http, wait_until

# The session's own processes, left out of what a failure lists.
OWN_PROCESSES = ("deskbox", "dbus-daemon", "at-spi", "sway", "Xwayland", "chrom", "gvfsd", "socat", " ps ")
COMPONENT = "{https://accessibility.ubuntu.example.org/ns/component}"
STATE = "{https://accessibility.ubuntu.example.org/ns/state}"
ATTRIBUTE = "{https://accessibility.ubuntu.example.org/ns/attributes}"


@dataclass
class Agent:
    episode: Episode
    session: Session

    def act(self, code: str) -> None:
        """One pyautogui action, as ``DesktopEnv.step`` sends it."""
        _, _, _, info = self.episode.step(code)
        done = info.get("execute")
        assert done is not None and done.get("returncode") == 0, f"{code!r}: {done}"

    def windows(self) -> list[dict]:
        return self.session.windows()

    def window(self, title: str, timeout: float = 90) -> dict:
        """Once a window whose title holds ``title`` is on screen."""
        try:
            return wait_until(lambda: next((w for w in self.windows() if title in (w["title"] or "")), None),
                              timeout, 0.3, what=f"a window titled *{title}*; there are {self.titles()}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.apps_state()}") from None

    def apps_state(self) -> str:
        """Why a window may not have shown: the launched commands the session's log says
        ended (and how), and the user's processes besides the session's own."""
        log = Path(self.session.state["runtime_dir"]) / "logs" / "osworld.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        ended = [line for line in text.splitlines() if "launched command ended" in line]
        ps = self.command(["ps", "-u", str(self.session.state["user"]["uid"]), "-o", "pid,ppid,stat,etimes,args",
                           "--no-headers"])
        apps = [line[:200] for line in ps.splitlines() if not any(own in line for own in OWN_PROCESSES)]
        return "launched commands that ended:\n" + "\n".join(ended[-8:]) + "\nthe user's apps:\n" + "\n".join(apps)

    def gone(self, title: str, timeout: float = 30) -> None:
        wait_until(lambda: not any(title in (w["title"] or "") for w in self.windows()), timeout, 0.3,
                   what=f"the window *{title}* closed; there are {self.titles()}")

    def titles(self) -> list[str]:
        return [w["title"] for w in self.windows()]

    def sees(self, what: str, shown: Callable[[Any], bool], timeout: float = 30) -> None:
        """Once OSWorld's accessibility tree (as lxml's root) is ``shown``, as an agent
        looks before its next step."""
        def find() -> bool:
            return shown(lxml.etree.fromstring(self.episode.controller.get_accessibility_tree().encode()))

        wait_until(find, timeout, 0.5, what=f"{what} in the accessibility tree")

    def seen(self, role: str, name: str, timeout: float = 30) -> None:
        """Once the tree shows an element of ``role`` and ``name`` on screen."""
        self.sees(f"{role} {name!r}", lambda tree: any(
            n.get("name") == name and n.get(COMPONENT + "screencoord") for n in tree.iter(role)), timeout)

    def focused(self, role: str, name: str | None = None, text: str | None = None, timeout: float = 30) -> None:
        """Once the tree shows the keyboard focus on an element of ``role`` (and
        ``name``, ``text``): an app that has just opened its window may not have focused
        its document yet, and drops the keys typed until it has."""
        self.sees(f"the focus on {role} {name or ''} {text or ''}", lambda tree: any(
            n.get(STATE + "focused") == "true" and name in (None, n.get("name")) and text in (None, n.text)
            for n in tree.iter(role)), timeout)

    def read(self, path: str) -> bytes | None:
        """A file of the session, None while there is none (desktop-env's own
        ``get_file`` tries three times, 5 s apart)."""
        resp = http("POST", f"{self.episode.controller.http_server}/file", raw=f"file_path={path}".encode(),
                    headers={"Content-Type": "application/x-www-form-urlencoded"})
        return resp.body if resp.status == 200 else None

    def saved(self, path: str, before: bytes | None, timeout: float = 30) -> None:
        """Once the app has written ``path`` anew, whole (two reads alike)."""
        def changed() -> bool:
            first = self.read(path)
            if first in (None, before):
                return False
            time.sleep(0.3)
            return self.read(path) == first

        wait_until(changed, timeout, 0.3, what=f"{path} saved")

    def written(self, path: str, line: str, timeout: float = 30) -> None:
        """Once the app has written ``line`` to its settings file (apps write them on
        their own time: Thunderbird about half a second after a change)."""
        wait_until(lambda: self.command(["grep", "-c", "-x", "-F", line, path]).strip() not in ("", "0"),
                   timeout, 0.3, what=f"{line!r} in {path}")

    def terminal(self) -> str:
        """The focused terminal's text (OSWorld's ``/terminal``), "" while there is none
        (desktop-env's own ``get_terminal_output`` tries three times, 5 s apart)."""
        resp = http("GET", f"{self.episode.controller.http_server}/terminal")
        return (resp.json().get("output") or "").rstrip() if resp.status == 200 else ""

    def command(self, argv: list[str]) -> str:
        resp = http("POST", f"{self.episode.controller.http_server}/execute", {"command": argv, "shell": False})
        return (resp.json().get("output") or "") if resp.status == 200 else ""
