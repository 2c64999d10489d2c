"""A task's folder in OSWorld's results layout, beside deskbox run's own: what OSWorld's
tools (its ``show_result.py``, its resume of unfinished tasks) and the scripts people
wrote around them read.

    {out}/{action_space}/{observation_type}/{model}/{domain}/{id}/
        traj.jsonl                    one line per action, with OSWorld's fields
        step_{n}_{timestamp}.png      the screenshot after action n (n from 1)
        result.txt                    the score, only when the task was graded
        runtime.log                   what the agent logged (its reset's logger)
        recording.mp4                 the task's recording, with --record

As OSWorld's ``lib_run_single`` writes them: ``step_num`` counts the agent's
predictions (every action of one prediction has the same), ``action_timestamp`` is
``%Y%m%d@%H%M%S%f``, and a task that ended in an error has no ``result.txt``, so a
reader of ``result.txt`` files (``show_result.py``) averages the graded tasks alone:
``mean_graded`` of ``summary.json``. Screenshots are hard links to the files in
``tasks/<domain>/<id>/`` where the file system allows, so they take no room twice."""

from __future__ import annotations

import datetime
import json
import os
import shutil
from pathlib import Path
from typing import Any

__all__ = ["OSWorldFolder", "TIMESTAMP", "path_part"]

TIMESTAMP = "%Y%m%d@%H%M%S%f"


def path_part(text: str) -> str:
    """A path component OSWorld's layout takes as it is, refused where it would leave
    the folder (a model named with a slash makes folders, as in OSWorld's)."""
    parts = Path(text).parts
    if not text or Path(text).is_absolute() or any(p in ("..", ".") for p in parts):
        raise ValueError(f"{text!r} cannot name a folder of the results layout")
    return text


class OSWorldFolder:
    def __init__(self, out: Path, *, action_space: str, observation_type: str, model: str, domain: str,
                 task_id: str) -> None:
        self.path = (out / path_part(action_space) / path_part(observation_type) / path_part(model) / path_part(domain)
                     / path_part(task_id))

    def begin(self) -> None:
        """An empty folder: an earlier attempt's files go."""
        shutil.rmtree(self.path, ignore_errors=True)
        self.path.mkdir(parents=True, exist_ok=True)

    def place(self, source: Path, name: str) -> None:
        """``source`` under ``name``: a hard link, else a copy (a file that is not there
        is not placed)."""
        target = self.path / name
        target.unlink(missing_ok=True)
        try:
            os.link(source, target)
        except FileNotFoundError:
            return
        except OSError:
            shutil.copyfile(source, target)

    def step(self, *, step_num: int, when: datetime.datetime, action: Any, response: Any, reward: Any, done: bool,
             info: Any, screenshot: Path | None) -> None:
        stamp = when.strftime(TIMESTAMP)
        name = f"step_{step_num}_{stamp}.png"
        if screenshot is not None:
            self.place(screenshot, name)
        line = {"step_num": step_num, "action_timestamp": stamp, "action": action, "response": response,
                "reward": reward, "done": done, "info": info, "screenshot_file": name}
        with open(self.path / "traj.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(line, default=repr) + "\n")

    def result(self, score: float | None) -> None:
        """``result.txt`` for a graded task; none for one that ended in an error."""
        if score is not None:
            (self.path / "result.txt").write_text(f"{score}\n", encoding="utf-8")
