"""What a run is, written to its ``run.json``: what decides its scores (the agent and its
settings, the options a task is run with, the task set's hash, the graders' sources' hash)
and what it ran on (the
versions of deskbox and desktop-env, the image and, for podman, the image's id).

A run resumed in the same folder must be the same run: :func:`differences` says what
the options or tasks given now change from what ``run.json`` holds (``deskbox run``
refuses, unless ``--force``). What it ran on is recorded, not compared: a session image
rebuilt between two halves of a run shows in ``run.json``'s ``earlier``, what each
earlier start of the run in that folder wrote."""

from __future__ import annotations

import hashlib
import json
import subprocess
from importlib import metadata
from typing import Any

from .tasks import Task

__all__ = ["describe", "differences", "tasks_hash", "COMPARED"]

# What makes two runs' scores comparable: a resume must not change any of it.
COMPARED = ("agent", "agent_settings", "agent_args", "max_steps", "observation_type", "action_space",
            "sleep_after_action", "screen", "tasks_hash", "graders", "model_stub", "ready_timeout_s")


def tasks_hash(tasks: list[Task]) -> str:
    """A hash of the selected tasks' keys and configs, in no particular order."""
    body = json.dumps(sorted([t.key, t.config] for t in tasks), sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _image_id(provider: str, image: str) -> str | None:
    if provider != "podman":
        return None
    try:
        out = subprocess.run(["podman", "image", "inspect", "--format", "{{.Id}}", image], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def describe(*, agent: str, agent_settings: dict[str, Any], agent_args: dict[str, Any], options: dict[str, Any],
             tasks: list[Task], provider: str, image: str, graders: dict[str, Any] | None = None) -> dict[str, Any]:
    """``run.json``'s description of a run (the runner adds when and how many). ``graders``
    is :func:`deskbox.run.graders.source`: where OSWorld's graders came from and a hash of
    their sources."""
    return {"agent": agent, "agent_settings": agent_settings, "agent_args": agent_args, **options,
            "graders": graders,
            "tasks_hash": tasks_hash(tasks), "provider": provider,
            "image": image if provider in ("podman", "kubernetes") else None, "image_id": _image_id(provider, image),
            "deskbox": _version("deskbox"), "desktop_env": _version("desktop-env")}


def differences(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What ``now`` changes of ``before`` among :data:`COMPARED` (what ``before`` does not
    record, an older run.json's, is not compared)."""
    return [f"{key}: {before[key]!r} then, {now.get(key)!r} now" for key in COMPARED
            if key in before and _same(before[key]) != _same(now.get(key))]


def _same(value: Any) -> Any:
    """As JSON reads it back: a tuple is a list."""
    return json.loads(json.dumps(value))
