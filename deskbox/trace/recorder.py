"""Writing a trace: a folder per trace, under the directory traces are kept in.

    <dir>/<trace_id>/trace.json    what the trace is (label, times, displays, step count, video)
    <dir>/<trace_id>/steps.jsonl   one line per action, appended as each ends
    <dir>/<trace_id>/shots/        NNNNN-before.jpg, NNNNN-after.jpg (at the cadence)
    <dir>/<trace_id>/video.mp4     when the trace records video

Lines are appended and flushed one by one, so a session that dies mid-trace leaves every
step that ended before it; trace.json is rewritten whole (write, then rename)."""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

__all__ = ["TraceWriter", "read_steps", "read_trace", "TRACE_VERSION"]

TRACE_VERSION = 1


def _now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


class TraceWriter:
    """One trace being written. Not thread-safe: the gate writes from one event loop,
    handing each write to a worker thread in turn."""

    def __init__(self, root: Path, label: str | None, displays: list[dict[str, Any]], *,
                 shots_every: int = 1, video: bool = False) -> None:
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
        self.trace_id = f"{stamp}-{secrets.token_hex(3)}"
        self.dir = root / self.trace_id
        self.label = label
        self.shots_every = max(0, shots_every)  # 0: no screenshots
        self.started = time.monotonic()
        self.started_at = _now_iso()
        self.stopped_at: str | None = None
        self.step_count = 0
        self.displays = displays
        self.video: str | None = "video.mp4" if video else None
        (self.dir / "shots").mkdir(parents=True, exist_ok=True)
        self._steps = open(self.dir / "steps.jsonl", "a", encoding="utf-8")
        self.write_meta()

    def next_step(self) -> int:
        self.step_count += 1
        return self.step_count

    def wants_shots(self, step: int) -> bool:
        return self.shots_every > 0 and (step - 1) % self.shots_every == 0

    def elapsed(self) -> float:
        return round(time.monotonic() - self.started, 3)

    def shot_path(self, step: int, when: str) -> str:
        return f"shots/{step:05d}-{when}.jpg"

    def save_shot(self, relative: str, jpeg: bytes) -> None:
        (self.dir / relative).write_bytes(jpeg)

    def append(self, record: dict[str, Any]) -> None:
        self._steps.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._steps.flush()

    def meta(self) -> dict[str, Any]:
        return {"version": TRACE_VERSION, "trace_id": self.trace_id, "label": self.label,
                "started_at": self.started_at, "stopped_at": self.stopped_at, "step_count": self.step_count,
                "displays": self.displays, "video": self.video}

    def write_meta(self) -> None:
        tmp = self.dir / "trace.json.tmp"
        tmp.write_text(json.dumps(self.meta(), indent=1))
        os.replace(tmp, self.dir / "trace.json")

    def close(self) -> None:
        self.stopped_at = _now_iso()
        self._steps.close()
        self.write_meta()


def read_trace(path: Path) -> dict[str, Any]:
    """A trace folder's trace.json (or what its steps say, when it has none)."""
    meta = path / "trace.json"
    if meta.exists():
        return json.loads(meta.read_text())
    return {"version": TRACE_VERSION, "trace_id": path.name, "label": None, "started_at": None, "stopped_at": None,
            "step_count": len(read_steps(path)), "displays": [], "video": None}


def read_steps(path: Path) -> list[dict[str, Any]]:
    """The steps of a trace folder, in order; a last line cut short (the session died as
    it was written) is left out."""
    steps = []
    try:
        data = (path / "steps.jsonl").read_bytes()
    except FileNotFoundError:
        return steps
    # (Decoded line by line: a line cut inside a character spoils only itself.)
    for line in data.splitlines():
        try:
            step = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(step, dict):
            steps.append(step)
    # Lines are written as steps end: a step that took long ends after later ones.
    return sorted(steps, key=lambda s: s.get("step") or 0)
