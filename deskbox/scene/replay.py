"""Replaying a trace on the session as it is now.

Each recorded step is resolved again on the current Scene: the element it hit is looked
for by its reference (deskbox.scene.reference: role, name, ancestors, app; the recorded
place only breaks ties), and the action is done to the element found: an element action
through the Actor, raw pointer input at the same spot of the element found. Coordinates
are the last resort, and a step that used them says so (``resolved_by: "coordinates"``).
Keyboard input that was not aimed at an element is sent again as it was.

``verify`` mode also compares each step with its record: a target that cannot be found,
found as another element, or an action that failed where it had succeeded, is a
divergence, listed with both sides. ``on_divergence``: ``stop`` ends the replay there;
``warn`` lists it and goes on to the next step (a step whose target is missing is not
done); ``resume`` lists it and does the step anyway, by the recorded coordinates."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..api.scene import ActRequest
from ..common.errors import DeadlineExceededError, DeskboxError, InvalidRequestError, NotFoundError
from ..common.openapi import TYPING, TYPING_S, Longest, Route
from ..common.web import json_ok, read_body, taking_turn
from ..geometry import Rect, same_spot
from ..policy.config import RedactionConfig
from ..trace.recorder import read_steps, read_trace
from .act import Actor
from .gate import RESOLVED_BY, traced
from .reference import resolve
from .tracing import gate_of

__all__ = ["Replay", "Replayer", "ROUTES", "REPLAYS", "REPLAYER"]

_ELEMENT_ACTIONS = frozenset(ActRequest.model_fields["action"].annotation.__args__)
_ACT_FIELDS = frozenset(ActRequest.model_fields) - {"target", "action", "confirm_token"}
MAX_REPLAYS = 16
SETTLE_MS = 1500  # as /act's default
REDACTED = RedactionConfig().replacement  # what a trace keeps of a secret


@dataclass
class Replay:
    id: str
    path: Path
    label: str | None
    steps: list[dict[str, Any]]
    mode: str
    on_divergence: str
    position: int = 0
    divergences: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    stopped: bool = False
    started: float = field(default_factory=time.monotonic)

    @property
    def finished(self) -> bool:
        return self.stopped or self.position >= len(self.steps)

    def status(self) -> dict[str, Any]:
        return {"ok": True, "replay_id": self.id, "mode": self.mode, "label": self.label, "position": self.position,
                "total": len(self.steps), "finished": self.finished, "stopped": self.stopped,
                "divergences": self.divergences, "steps": self.results,
                "wall_ms": round((time.monotonic() - self.started) * 1000),
                "recorded_ms": _recorded_ms(self.steps)}


def _recorded_ms(steps: list[dict[str, Any]]) -> int | None:
    if not steps:
        return None
    last = steps[-1]
    return round((last.get("t", 0) - steps[0].get("t", 0)) * 1000 + (last.get("duration_ms") or 0))


def _moved(point: list[float], old_box: list[int] | None, new_box: Rect | tuple | None) -> list[float]:
    """The recorded point moved with its element (unmoved when either box is unknown)."""
    if not old_box or new_box is None:
        return point
    after = (new_box.x, new_box.y, new_box.w, new_box.h) if isinstance(new_box, Rect) else tuple(new_box)
    x, y = same_spot((point[0], point[1]), tuple(old_box), after)
    return [round(x, 1), round(y, 1)]


class Replayer:
    """Does the steps of a replay, one at a time, on this session."""

    def __init__(self, actor: Actor) -> None:
        self.actor = actor
        self.engine = actor.engine
        self.desktop = actor.desktop

    async def step(self, replay: Replay) -> dict[str, Any]:
        record = replay.steps[replay.position]
        replay.position += 1
        result: dict[str, Any] = {"step": record.get("step"), "action": record.get("action"),
                                  "interface": record.get("interface"), "resolved_by": None, "resolution": None,
                                  "ok": False, "error": None, "divergence": None}
        scene = await self.engine.scene("active")
        ref = record.get("element")
        found = resolve(ref, scene) if ref else None
        if found is not None:
            result["resolution"] = found.to_json()
        divergence = None
        if ref and (found is None or found.by is None):
            divergence = {"kind": "target_missing", "recorded": _summary(ref), "actual": None,
                          "message": f"no element like the recorded {ref.get('role')} {ref.get('name')!r} "
                                     f"(best score {found.score if found else 0:.2f})"}
        do_it = divergence is None or replay.mode == "execute" or replay.on_divergence == "resume"
        if do_it:
            marked = RESOLVED_BY.set(_resolved_by(found))
            try:
                receipt = await self._do(record, found, result)
                result["ok"] = True
                result["receipt"] = receipt
            except DeskboxError as exc:
                result["error"] = exc.to_json()["error"]
            finally:
                RESOLVED_BY.reset(marked)
        if replay.mode == "verify" and divergence is None:
            divergence = self._compare(record, found, result)
        if divergence is not None and replay.mode == "verify":
            divergence["step"] = record.get("step")
            result["divergence"] = divergence
            replay.divergences.append(divergence)
            if replay.on_divergence == "stop":
                replay.stopped = True
        replay.results.append(result)
        return result

    async def _do(self, record: dict[str, Any], found: Any, result: dict[str, Any]) -> dict[str, Any] | None:
        action, args = record.get("action"), dict(record.get("args") or {})
        if REDACTED in (args.get("text"), args.get("keys")):
            raise InvalidRequestError(f"step {record.get('step')} typed a secret, which the trace does not keep",
                                      code="redacted")
        element = found.element if found is not None and found.by == "element" else None
        if record.get("via") == "act" and action in _ELEMENT_ACTIONS and element is not None:
            result["resolved_by"] = "element"
            fields = {k: v for k, v in args.items() if k in _ACT_FIELDS}
            if action == "drag" and (fields.get("to") or {}).get("target"):
                # The drop target was an element of the recorded session: its id means
                # nothing here; where it was dropped does.
                end = (record.get("path") or [[None]])[-1]
                if end[0] is None:
                    raise InvalidRequestError("the recorded drag's drop point is unknown", code="unreplayable")
                fields["to"] = {"point": end}
            try:
                request = ActRequest(target=element.id, action=action, **fields)
            except ValidationError as exc:  # (a record edited by hand, or redacted)
                raise InvalidRequestError(f"step {record.get('step')} cannot be done again: {exc}",
                                          code="unreplayable") from exc
            return await self.actor.act(request)
        parts = record.get("parts") or []
        if not parts:
            raise InvalidRequestError(f"step {record.get('step')} ({action}) recorded no input to send again",
                                      code="unreplayable")
        box = None
        if element is not None:
            result["resolved_by"], box = "element", element.bbox
        elif found is not None and found.by == "ocr":
            result["resolved_by"], box = "ocr", found.ocr.bbox
        old_box = (record.get("element") or {}).get("bbox")
        display = record.get("display_id") or 0
        async with taking_turn(self.actor.input_lock), traced(self.actor.gate, action, args, display=display) as step:
            before = (await self.engine.frame_signatures([display]))[display]
            for part in parts:
                request = {k: v for k, v in part.items() if k != "kind"}
                if part.get("kind") == "pointer":
                    if box is None and (request.get("x") is not None or request.get("path")):
                        result["resolved_by"] = "coordinates"
                    if request.get("x") is not None:
                        request["x"], request["y"] = _moved([request["x"], request["y"]], old_box, box)
                    if request.get("path"):
                        request["path"] = [_moved(list(p), old_box, box) for p in request["path"]]
                    await self.desktop.pointer(**request)
                else:
                    await self.desktop.keyboard(**request)
            changed, settled = await self.engine.settle(display, before, SETTLE_MS)
            self.engine.mark_dirty()
            step.receipt = {"ok": True, "parts": len(parts), "changed": changed, "settled": settled}
        return step.receipt

    @staticmethod
    def _compare(record: dict[str, Any], found: Any, result: dict[str, Any]) -> dict[str, Any] | None:
        if record.get("ok") and not result["ok"]:
            return {"kind": "action_failed", "recorded": {"ok": True}, "actual": result["error"],
                    "message": "the action failed where it had succeeded"}
        if found is not None and found.ambiguous:
            return {"kind": "ambiguous_target", "recorded": _summary(record.get("element") or {}),
                    "actual": found.to_json(), "message": "two elements fit the recorded one about as well"}
        return None


def _resolved_by(found: Any) -> str:
    return found.by if found is not None and found.by is not None else "coordinates"


def _summary(ref: dict[str, Any]) -> dict[str, Any]:
    return {k: ref.get(k) for k in ("role", "name", "app", "window_title", "bbox")}


# -- routes ---------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# A folder's name is at most this many bytes (NAME_MAX on Linux); a longer one is no
# trace's, and asking the file system about it fails with ENAMETOOLONG.
NAME_MAX = 255


class ReplayRequest(_Strict):
    # a trace id, or its folder under the traces directory
    trace: str = Field(min_length=1, max_length=1024, pattern=r"^[^\x00]+$")
    mode: Literal["execute", "verify"] = "execute"
    on_divergence: Literal["stop", "warn", "resume"] = "warn"

    @field_validator("trace")
    @classmethod
    def _names_fit(cls, value: str) -> str:
        if any(len(part.encode()) > NAME_MAX for part in value.split("/")):
            raise ValueError(f"each name in a trace's path is at most {NAME_MAX} bytes")
        return value


class ReplayIdRequest(_Strict):
    replay_id: str = Field(min_length=1, max_length=64)


REPLAYS = web.AppKey("replays", dict)
REPLAYER = web.AppKey("replayer", Replayer)


def _trace_dir(request: web.Request, trace: str) -> Path:
    root = gate_of(request).traces_root
    if root is None:
        raise InvalidRequestError("this scene keeps no traces (no traces directory)", code="no_trace_dir")
    try:
        candidate = (root / trace).resolve() if not Path(trace).is_absolute() else Path(trace).resolve()
        found = root.resolve() in candidate.parents and (candidate / "steps.jsonl").is_file()
    except (OSError, ValueError) as exc:  # (a path the file system will not take)
        raise InvalidRequestError(f"trace: {trace[:80]!r}... is not a trace's path: {exc}",
                                  code="invalid_trace") from exc
    if not found:
        raise NotFoundError(f"no trace {trace!r} under {root}", code="unknown_trace")
    return candidate


def _new_replay(request: web.Request, req: ReplayRequest) -> Replay:
    path = _trace_dir(request, req.trace)
    replays = request.app[REPLAYS]
    while len(replays) >= MAX_REPLAYS:
        replays.pop(next(iter(replays)))
    replay = Replay(secrets.token_hex(6), path, read_trace(path).get("label"), read_steps(path), req.mode,
                    req.on_divergence)
    replays[replay.id] = replay
    return replay


def _replay(request: web.Request, replay_id: str) -> Replay:
    gate_of(request)  # (a mock session has none: 501)
    replay = request.app[REPLAYS].get(replay_id)
    if replay is None:
        raise NotFoundError(f"no replay {replay_id!r}", code="unknown_replay", suggested_next_tool="replay_start")
    return replay


# A whole trace replayed in one request: steps are taken while one more still fits in
# this bound (a step may type a text). A longer trace answers 504 with the replay's id
# and where it stopped, and goes on step by step with /api/v1/replay/step.
REPLAY_ALL_S = 600.0


async def replay_all(request: web.Request) -> web.Response:
    req = await read_body(request, ReplayRequest)
    replay = _new_replay(request, req)
    replayer = request.app[REPLAYER]
    last_start = time.monotonic() + REPLAY_ALL_S - TYPING_S
    while not replay.finished:
        if time.monotonic() > last_start:
            raise DeadlineExceededError(
                f"the replay did not finish within {REPLAY_ALL_S:g} s: it stopped after step {replay.position} "
                f"of {len(replay.steps)}; go on with POST /api/v1/replay/step",
                context={"replay_id": replay.id, "position": replay.position, "total": len(replay.steps)})
        await replayer.step(replay)
    return json_ok(replay.status())


async def replay_start(request: web.Request) -> web.Response:
    req = await read_body(request, ReplayRequest)
    replay = _new_replay(request, req)
    return json_ok({"ok": True, "replay_id": replay.id, "total": len(replay.steps), "mode": replay.mode,
                    "label": replay.label})


async def replay_step(request: web.Request) -> web.Response:
    req = await read_body(request, ReplayIdRequest)
    replay = _replay(request, req.replay_id)
    if replay.finished:
        raise InvalidRequestError(f"replay {replay.id} has finished", code="replay_finished")
    result = await request.app[REPLAYER].step(replay)
    return json_ok({"ok": True, "position": replay.position, "total": len(replay.steps), "result": result,
                    "divergence": result["divergence"], "finished": replay.finished})


async def replay_status(request: web.Request) -> web.Response:
    req = await read_body(request, ReplayIdRequest)
    return json_ok(_replay(request, req.replay_id).status())


async def replay_stop(request: web.Request) -> web.Response:
    req = await read_body(request, ReplayIdRequest)
    replay = _replay(request, req.replay_id)
    replay.stopped = True
    return json_ok({"ok": True, "stopped": True, "position": replay.position, "total": len(replay.steps)})


ROUTES = [
    Route("POST", "/api/v1/replay", replay_all,
          "Replay a trace on the session now: each step's element found again, done, and (verify) compared",
          body=ReplayRequest, stops_when_client_leaves=True, longest=Longest(REPLAY_ALL_S)),
    Route("POST", "/api/v1/replay/start", replay_start, "Begin a step-wise replay of a trace", body=ReplayRequest),
    Route("POST", "/api/v1/replay/step", replay_step, "Replay the next step", body=ReplayIdRequest,
          stops_when_client_leaves=True, longest=TYPING),
    Route("POST", "/api/v1/replay/status", replay_status, "Where a replay is, and its divergences",
          body=ReplayIdRequest),
    Route("POST", "/api/v1/replay/stop", replay_stop, "Stop a replay", body=ReplayIdRequest),
]
