"""Agents for tests/test_run.py. ShapedAgent is in the shapes of OSWorld's agents other than PromptAgent:
``reset`` requires the run's logger (as uitars_agent's does), ``predict`` takes
``step_idx`` and answers three values (as the CUA agents do); it is a class, built by
``deskbox run --agent tests.shaped_agent:ShapedAgent`` with its settings and an
``--agent-arg``."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any


class ShapedAgent:
    def __init__(self, text: str, max_trajectory_length: int, model: str) -> None:
        self.text = text
        self.window = max_trajectory_length
        self.model = model

    def reset(self, runtime_logger: logging.Logger) -> None:
        runtime_logger.info("reset: window %s, model %s", self.window, self.model)

    def predict(self, instruction: str, obs: dict[str, Any], step_idx: int | None = None) -> tuple:
        if step_idx == 0:
            code = f"import pathlib; pathlib.Path.home().joinpath('note.txt').write_text({self.text!r})"
            return "writes the note", [code], {"step": step_idx}
        return "done", ["DONE"], {"step": step_idx}


class HangingAgent:
    """Says the actions ``solutions`` (a file as script:FILE takes) lists for each task,
    but for the tasks in ``hang``, where its predict() never returns: what --task-timeout
    and --step-timeout bound."""

    def __init__(self, solutions: str, hang: list[str]) -> None:
        self.scripts = json.loads(Path(solutions).read_text())
        self.hang = set(hang)
        self.task = ""
        self.left: list[Any] = []

    def begin_task(self, task: Any) -> None:
        self.task = task.key
        self.left = list(self.scripts.get(task.key, []))

    def reset(self) -> None:
        pass

    def predict(self, instruction: str, obs: dict[str, Any]) -> tuple:
        if self.task in self.hang:
            threading.Event().wait()
        return ("scripted", [self.left.pop(0)]) if self.left else ("done", ["DONE"])


class FlakyAgent(HangingAgent):
    """As HangingAgent's scripts, but its first predict() on each task fails as a rate
    limit does: what --retry-errors runs again."""

    def __init__(self, solutions: str) -> None:
        super().__init__(solutions, [])
        self.failed: set[str] = set()

    def predict(self, instruction: str, obs: dict[str, Any]) -> tuple:
        if self.task not in self.failed:
            self.failed.add(self.task)
            raise RuntimeError("rate limited (429)")
        return super().predict(instruction, obs)
