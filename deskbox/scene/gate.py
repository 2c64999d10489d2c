"""The gate every action passes: the policy before it (allowed? within budget? confirmed,
when its target asks for confirmation?), the trace and the audit log after it.

Actions reach the session through many interfaces: ``/act`` and the toolset, the provider
adapters, MCP (through those), and desktopd's own pointer and keyboard, which OSWorld's
pyautogui commands and any raw client use. The scene aggregator is where the element
behind an action is known, so the gate lives here, and desktopd asks it about the input
it is sent directly (``/api/v1/gate/begin`` and ``/end``, with the session's internal
secret). What the scene itself sends desktopd carries that secret and is not asked about
twice: it is recorded as the ``parts`` of the step that sent it.

The interface an action came through is a context variable, set per request by the
scene's middleware (from the route, or the ``X-Deskbox-Interface`` header a client such
as the MCP server sends)."""

from __future__ import annotations

import asyncio
import contextvars
import datetime as dt
import os
import secrets
import shutil
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from aiohttp import web

from ..common.errors import (
    ActionFailedError,
    DeskboxError,
    InvalidRequestError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
)
from ..common.logging import get_logger
from ..common.recording import Recorder, RecordingError
from ..common.web import INTERFACE_HEADER, INTERNAL_HEADER
from ..policy import Redactor
from ..policy.config import RedactionConfig
from ..trace.recorder import TraceWriter
from .elements import Element
from .engine import SceneEngine
from .guard import Guard
from .reference import element_at, element_ref
from .sources import INPUT_SINK, Bridge, Desktop
from .step import Step

__all__ = ["Gate", "Step", "INTERFACE", "RESOLVED_BY", "interface_middleware", "traced"]

log = get_logger("deskbox.scene.gate")

INTERFACE: contextvars.ContextVar[str] = contextvars.ContextVar("deskbox_interface", default="act")
# How a replay found the element of the step it is doing (deskbox.scene.replay), for the
# trace of the replay.
RESOLVED_BY: contextvars.ContextVar[str | None] = contextvars.ContextVar("deskbox_resolved_by", default=None)

# Routes whose requests are one interface, by path prefix; everything else is "act".
_ROUTE_INTERFACES = (("/api/v1/computer/anthropic", "anthropic"), ("/api/v1/computer/openai", "openai"),
                     ("/api/v1/computer/gemini", "gemini"), ("/mcp", "mcp"), ("/api/v1/replay", "replay"))
_TOOLSET_ACTIONS = ("/api/v1/act_and_observe", "/api/v1/type_and_observe", "/api/v1/key_and_observe")
# Argument keys a trace never needs and that only grow it.
_DROPPED_ARGS = frozenset({"settle_ms", "since", "format"})
JPEG_QUALITY = 70
DIRECT_SETTLE_MS = 1000  # at most, before the screenshot after desktopd's direct input


def _interface_of(request: web.Request) -> str:
    given = request.headers.get(INTERFACE_HEADER, "")
    if given and len(given) <= 32 and given.replace("-", "").replace("_", "").isalnum():
        return given.lower()
    if request.path in _TOOLSET_ACTIONS:
        return "toolset"
    return next((name for prefix, name in _ROUTE_INTERFACES if request.path.startswith(prefix)), "act")


@web.middleware
async def interface_middleware(request: web.Request, handler):
    token = INTERFACE.set(_interface_of(request))
    try:
        return await handler(request)
    finally:
        INTERFACE.reset(token)


def _args(args: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if v is not None and k not in _DROPPED_ARGS}


class Gate:
    def __init__(self, engine: SceneEngine, desktop: Desktop, bridge: Bridge | None, *,
                 traces: str | None = None, secret: str | None = None, policy: Guard | None = None) -> None:
        self.engine = engine
        self.desktop = desktop
        self.bridge = bridge
        self.traces_root = Path(traces) if traces else None
        self.secret = secret
        self.policy: Guard | None = policy
        # What keeps secrets out of trace records (the policy's, else the least every
        # record gets: text typed into password fields, arguments named as secrets).
        self.redactor = policy.records if policy is not None else Redactor(RedactionConfig(enabled=True))
        self.writer: TraceWriter | None = None
        self._pending: dict[str, Step] = {}  # desktopd's steps between its begin and end
        self._write_lock = asyncio.Lock()  # lines in the order steps end
        self._recording = None  # the trace's video, when it records one
        self._finishing: set[asyncio.Task] = set()  # desktopd's steps being written
        self._written: dict[str, Path] = {}  # the folders of the traces this scene stopped, by id

    # -- the trace --------------------------------------------------------------------

    @property
    def tracing(self) -> bool:
        return self.writer is not None

    @property
    def active(self) -> bool:
        """Whether desktopd should ask about the input it is sent directly."""
        return self.tracing or (self.policy is not None and self.policy.enforcing)

    async def start_trace(self, label: str | None, *, root: str | None = None, shots_every: int = 1,
                          video: bool = False, video_display: int = 0) -> dict:
        if self.writer is not None:
            raise ActionFailedError(f"trace {self.writer.trace_id} is being recorded; stop it first",
                               code="trace_active", suggested_next_tool="trace_stop")
        base = Path(root) if root else self.traces_root
        if base is None:
            raise InvalidRequestError("no directory for traces: give dir, or start deskbox up with --trace DIR",
                                 code="no_trace_dir")
        displays = await self.desktop.displays()
        if video and all(d.id != video_display for d in displays):
            raise InvalidRequestError(f"no display {video_display}; the session has {[d.id for d in displays]}",
                                 code="unknown_display")
        writer = await asyncio.to_thread(TraceWriter, base, label,
                                         [{"id": d.id, "size": list(d.size)} for d in displays],
                                         shots_every=shots_every, video=video)
        if video:
            recorder = Recorder(str(writer.dir))
            try:
                await recorder.start(next(d.name for d in displays if d.id == video_display))
            except RecordingError as exc:
                await asyncio.to_thread(writer.close)
                raise UnavailableError(f"the trace's video did not start: {exc}", code="recorder_failed") from exc
            self._recording = recorder
        self.writer = writer
        await self._tell_desktopd()
        log.info("trace started", trace_id=writer.trace_id, dir=str(writer.dir))
        return {"ok": True, "trace_id": writer.trace_id, "started_at": writer.started_at, "dir": str(writer.dir)}

    async def stop_trace(self) -> dict:
        writer = self.writer
        if writer is None:
            raise ActionFailedError("no trace is being recorded", code="no_trace", suggested_next_tool="trace_start")
        if self._finishing:  # every step that ended is in the trace it stops
            await asyncio.gather(*self._finishing, return_exceptions=True)
        async with self._write_lock:
            self.writer = None
        await self._tell_desktopd()
        if self._recording is not None:
            recording, self._recording = self._recording, None
            try:
                made = await recording.stop()
                await asyncio.to_thread(os.replace, made, writer.dir / "video.mp4")
            except (RecordingError, OSError) as exc:  # the steps are kept whatever the video did
                log.warning("trace video failed", error=repr(exc))
                writer.video = None
            finally:
                await recording.close()
        await asyncio.to_thread(writer.close)
        self._written[writer.trace_id] = writer.dir
        return {"ok": True, "trace_id": writer.trace_id, "path": str(writer.dir), "step_count": writer.step_count,
                "duration_ms": round(writer.elapsed() * 1000)}

    def trace_folder(self, trace_id: str) -> Path:
        """The folder of a finished trace: one this scene stopped, or one under its
        traces folder (an earlier run of the scene wrote it)."""
        if self.writer is not None and self.writer.trace_id == trace_id:
            raise ActionFailedError(f"trace {trace_id} is being recorded; stop it first", code="trace_active",
                               suggested_next_tool="trace_stop")
        folder = self._written.get(trace_id)
        if folder is None and self.traces_root is not None:
            folder = self.traces_root / trace_id
        if folder is None or not (folder / "steps.jsonl").is_file():
            raise NotFoundError(f"no trace {trace_id} in this session", code="no_such_trace")
        return folder

    async def delete_trace(self, trace_id: str) -> dict[str, Any]:
        """Remove a finished trace's folder (once a runner has it: a session of a pool
        serves task after task, and its disk would keep every trace)."""
        folder = self.trace_folder(trace_id)
        await asyncio.to_thread(shutil.rmtree, folder)
        self._written.pop(trace_id, None)
        return {"ok": True, "trace_id": trace_id, "deleted": str(folder)}

    async def _tell_desktopd(self) -> None:
        """desktopd takes direct input to the gate from now on (or no longer); were it not
        told, it would learn within a second, and a click in that second be missed."""
        if self.secret is None:
            return  # (a scene on its own: desktopd has no gate)
        try:
            await self.desktop.tell_gate(self.active)
        except DeskboxError as exc:
            log.warning("desktopd not told of the trace", error=exc.message)

    def status(self) -> dict:
        w = self.writer
        return {"ok": True, "active_trace_id": w.trace_id if w else None, "step_count": w.step_count if w else 0,
                "dir": str(w.dir) if w else None, "traces_dir": str(self.traces_root) if self.traces_root else None,
                "video": bool(w and w.video)}

    # -- steps ------------------------------------------------------------------------

    async def begin(self, action: str, args: dict[str, Any], *, element: Element | None = None,
                    display: int | None = None, point: tuple[float, float] | None = None,
                    looking: bool = False, interface: str | None = None, via: str = "input") -> Step:
        """Check the action against the policy (raising what refuses it), then open its
        step: its element's reference and the screenshot before it. ``via``: "act" for an
        element action (replayed through /act), "input" for input (replayed as its parts)."""
        step = Step(interface or INTERFACE.get(), action, _args(args),
                    element.display_id if element is not None else display, resolved_by=RESOLVED_BY.get(), via=via)
        if self.writer is None and self.policy is None:
            return step  # nothing to check, nothing to record: /act pays nothing for the gate
        scene = self.engine.last
        if element is not None and scene is not None:
            step.element = element_ref(element, scene, await self._url(element))
        elif point is not None and scene is not None and step.display_id is not None:
            step.element = element_at(scene, step.display_id, *point)
        if point is not None:
            step.point = [round(point[0], 2), round(point[1], 2)]
        if scene is not None and step.element is None:
            step.locate = lambda d, x, y: element_at(scene, d, x, y)
        text = args.get("text")
        if element is not None and step.element is not None and isinstance(text, str):
            # Typed into a password field: out of every record from now on.
            ref = step.element
            await self._mark_secret_field(element, ref)
            if self.redactor.is_secret(ref["role"], ref["name"], ref["states"], ref["window_title"]):
                self.redactor.remember(text)
        if self.policy is not None:
            try:
                await self.policy.before(step, looking=looking, desktop=self.desktop)
            except DeskboxError as exc:  # refused: in the audit log, as every action is
                self.policy.after(step, None, exc.to_json()["error"])
                raise
        writer = self.writer
        if writer is not None:
            step.number = writer.next_step()
            step.t = writer.elapsed()
            if writer.wants_shots(step.number) and step.display_id is not None and not looking:
                step.before = await self._shot(writer, step.number, "before", step.display_id)
        step.token = INPUT_SINK.set(step.add_part)
        return step

    async def end(self, step: Step, *, receipt: dict[str, Any] | None = None,
                  error: BaseException | dict[str, Any] | None = None) -> None:
        if step.token is not None:
            try:
                INPUT_SINK.reset(step.token)
            except ValueError:  # ended in another context than it began in
                pass
            step.token = None
        failure = (error.to_json()["error"] if isinstance(error, DeskboxError)
                   else {"code": "internal", "message": repr(error)} if isinstance(error, BaseException)
                   else error)
        if self.policy is not None:
            self.policy.after(step, receipt, failure)
        writer = self.writer
        if writer is None or step.number == 0:
            return
        after = None
        if step.before is not None and step.display_id is not None:
            if step.settle_from is not None:
                await self.engine.settle(step.display_id, step.settle_from, DIRECT_SETTLE_MS)
            after = await self._shot(writer, step.number, "after", step.display_id)
        record = {
            "step": step.number, "t": step.t, "time": _iso_now(), "interface": step.interface, "via": step.via,
            "action": step.action, "args": self._redacted(step.args), "element": step.element,
            "point": step.point, "path": step.path, "display_id": step.display_id,
            "parts": [self._redacted(p) for p in step.parts],
            "ok": failure is None, "receipt": self._redacted(receipt) if receipt else receipt,
            "error": self._redacted(failure) if failure else failure,
            "duration_ms": round((time.monotonic() - step.started) * 1000),
            "shots": {"before": step.before, "after": after},
        }
        if step.resolved_by is not None:
            record["resolved_by"] = step.resolved_by
        async with self._write_lock:
            if self.writer is writer:
                await asyncio.to_thread(writer.append, record)

    def _redacted(self, args: dict[str, Any]) -> dict[str, Any]:
        return self.redactor.args(args)

    async def _mark_secret_field(self, e: Element, ref: dict[str, Any]) -> None:
        """A page's password field shows nothing that says so while it is empty: the page
        is asked, before text typed into it can reach a record."""
        if e.source != "cdp" or self.bridge is None or "protected" in ref["states"]:
            return
        try:
            answer = await self.bridge.element("secret", e.ref)
        except DeskboxError:
            return
        if answer.get("secret"):
            ref["states"].append("protected")

    async def _url(self, e: Element) -> str | None:
        if e.source != "cdp" or self.bridge is None:
            return None
        try:
            tabs = await self.bridge.tabs()
        except DeskboxError:
            return None
        return next((t.get("url") for t in tabs if t.get("id") == e.ref.get("tab")), None)

    async def _shot(self, writer: TraceWriter, number: int, when: str, display: int) -> str | None:
        try:
            jpeg, _ = await self.desktop.screenshot({"display": str(display), "format": "jpeg",
                                                     "quality": str(JPEG_QUALITY)})
        except DeskboxError as exc:
            log.warning("trace screenshot failed", step=number, error=exc.message)
            return None
        if self.policy is not None:
            jpeg = await self.policy.blur_jpeg(jpeg, display, self.engine.last)
        relative = writer.shot_path(number, when)
        await asyncio.to_thread(writer.save_shot, relative, jpeg)
        return relative

    async def propose(self, target: str, action: str) -> dict:
        """Whether ``action`` on element ``target`` needs confirmation, and if so a token
        for it and what it would hit (OS Screen Observer's propose_action)."""
        scene = await self.engine.scene("active")
        element = self.engine.by_id.get(target)
        if element is None:
            raise InvalidRequestError(f"no element {target} in the scene now", code="unknown_element",
                                 suggested_next_tool="find")
        ref = element_ref(element, scene)
        if self.policy is None:
            return {"ok": True, "needed": False, "confirm_token": None, "expires_at": None, "would_target": ref}
        return await self.policy.propose(action, ref, self.desktop)

    # -- desktopd's direct input ----------------------------------------------------------

    def check_internal(self, request: web.Request) -> None:
        if self.secret is None or not secrets.compare_digest(request.headers.get(INTERNAL_HEADER, ""), self.secret):
            raise UnauthorizedError("the gate answers desktopd only (the session's internal secret)",
                               code="internal_only")

    async def begin_direct(self, interface: str, route: str, args: dict[str, Any]) -> dict:
        """desktopd was sent input (or asked for a screenshot) directly: the step it is."""
        action, display, point, looking = _direct_action(route, args)
        if self.tracing and point is not None:
            await self.engine.scene("idle")  # what is under the pointer now, for its element
        step = await self.begin(action, args, display=display, point=point, looking=looking, interface=interface)
        if step.token is not None:
            INPUT_SINK.reset(step.token)
            step.token = None
        if step.number == 0 and self.policy is None:
            return {"step": None}
        if route in _DIRECT_PARTS:
            step.add_part(_DIRECT_PARTS[route], {k: v for k, v in args.items() if k != "confirm_token"})
        if step.before is not None and step.display_id is not None:
            step.settle_from = (await self.engine.frame_signatures([step.display_id]))[step.display_id]
        key = secrets.token_urlsafe(12)
        self._pending[key] = step
        if len(self._pending) > 256:  # a desktopd that never ended its steps
            self._pending.pop(next(iter(self._pending)))
        answer: dict[str, Any] = {"step": key, "number": step.number}
        if action == "screenshot" and self.policy is not None and self.policy.blurs:
            # What desktopd must blur before it answers: the same boxes the scene's own
            # screenshot blurs (display-local device px of that display).
            scene = await self.engine.scene("active")
            answer["blur"] = [list(b) for b in self.policy.boxes(scene).get(display if display is not None else 0, [])]
        return answer

    async def end_direct(self, key: str, ok: bool, receipt: dict | None, error: dict | None) -> None:
        step = self._pending.pop(key, None)
        if step is None:
            raise InvalidRequestError(f"no open step {key!r}", code="unknown_step")
        if not ok and (error or {}).get("code") in _NOTHING_DONE:
            if self.policy is not None:
                self.policy.refund(step)
        elif step.action != "screenshot":
            self.engine.mark_dirty()  # input the scene did not send: its scene is stale
        # desktopd answers its client without waiting for the screen to settle and the
        # screenshot after it: the step is finished (and written) meanwhile.
        task = asyncio.create_task(self.end(step, receipt=receipt,
                                            error=None if ok else (error or {"code": "failed", "message": ""})))
        self._finishing.add(task)
        task.add_done_callback(self._finishing.discard)


@asynccontextmanager
async def traced(gate: Gate | None, action: str, args: dict[str, Any], **where: Any) -> AsyncIterator[Step]:
    """The body as one step of ``gate`` (``Gate.begin``, then ``Gate.end`` with what the
    body set as ``step.receipt``, or the error it raised). Without a gate (mock mode),
    the body runs alone."""
    if gate is None:
        yield Step("", action, {}, None)
        return
    step = await gate.begin(action, args, **where)
    try:
        yield step
    except BaseException as exc:
        await gate.end(step, error=exc)
        raise
    await gate.end(step, receipt=step.receipt)


# desktopd's routes whose requests a replay can send again as they were.
_DIRECT_PARTS = {"/api/v1/pointer": "pointer", "/api/v1/keyboard": "keyboard"}

# Errors after which desktopd sent no input at all: the step costs no budget.
_NOTHING_DONE = frozenset({"validation_error", "invalid_request", "invalid_json", "unknown_key", "too_long",
                           "unknown_display"})


def _direct_action(route: str, args: dict[str, Any]) -> tuple[str, int | None, tuple[float, float] | None, bool]:
    """(action, display, point, looking) of a request desktopd was sent directly."""
    display = args.get("display", 0)
    if isinstance(display, str) and display.isdigit():  # (a screenshot's query)
        display = int(display)
    if not isinstance(display, int):
        display = 0
    point = None
    if isinstance(args.get("x"), (int, float)) and isinstance(args.get("y"), (int, float)):
        point = (float(args["x"]), float(args["y"]))
    elif isinstance(args.get("path"), list) and args["path"] and isinstance(args["path"][0], list):
        first = args["path"][0]
        if len(first) == 2 and all(isinstance(v, (int, float)) for v in first):
            point = (float(first[0]), float(first[1]))
    if route == "/api/v1/screenshot":
        return "screenshot", display, None, True
    if route == "/api/v1/pointer":
        action = str(args.get("action", "pointer"))
        if action == "click" and args.get("count") == 2:
            action = "double_click"
        elif action == "click" and args.get("button") == "right":
            action = "right_click"
        return action, display, point, False
    if route == "/api/v1/keyboard":
        return str(args.get("action", "key")), None, None, False
    if route == "/api/v1/tablet":
        return str(args.get("action", "click")), display, point, False
    if route == "/api/v1/tablet_event":
        events = args.get("events") or [{}]
        first = events[0] if isinstance(events, list) and events and isinstance(events[0], dict) else {}
        if isinstance(first.get("x"), (int, float)) and isinstance(first.get("y"), (int, float)):
            point = (float(first["x"]), float(first["y"]))
            display = first.get("display", display) if isinstance(first.get("display", 0), int) else display
        return "pointer_events", display, point, False
    if route == "/api/v1/keyboard_event":
        return "key_events", None, None, False
    return route.rsplit("/", 1)[-1], display, point, False


def _iso_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")
