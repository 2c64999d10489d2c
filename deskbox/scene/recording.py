"""Session video on demand, in any mode: ``POST /api/v1/recording/start`` records a
display to mp4 (wf-recorder, ``deskbox.common.recording``), ``POST
/api/v1/recording/stop`` answers the file, ``GET /api/v1/recording`` says whether one
runs. One recording at a time; it ends by itself at its time or size limit
(``DESKBOX_RECORDING_MAX_S``, an hour by default; 2 GB), and ``stop`` then answers it
as it was finished."""

from __future__ import annotations

import asyncio
import time

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from ..common.errors import ActionFailedError, InvalidRequestError, UnavailableError
from ..common.openapi import SLOW, Route
from ..common.recording import Recorder, RecordingError
from ..common.settings import env
from ..common.web import json_ok, read_body, send_and_remove
from .sources import Desktop

__all__ = ["RECORDING", "Recording", "ROUTES"]


class RecordingRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    display: int = Field(0, ge=0)


class Recording:
    def __init__(self, desktop: Desktop) -> None:
        self.desktop = desktop
        self.recorder = Recorder()
        max_s = float(env("DESKBOX_RECORDING_MAX_S") or 0)
        if max_s > 0:
            self.recorder.max_duration_s = max_s
        self.display: int | None = None
        self.started: float | None = None
        self.lock = asyncio.Lock()  # (a start and a stop never interleave)

    def status(self) -> dict:
        running = self.recorder.recording
        return {"recording": running, "display": self.display if running else None,
                "elapsed_s": round(time.time() - self.started, 1) if running and self.started else None,
                "max_duration_s": self.recorder.max_duration_s, "limit": self.recorder.limit}

    async def close(self) -> None:
        await self.recorder.close()


RECORDING = web.AppKey("recording", Recording)


async def start(request: web.Request) -> web.Response:
    req = await read_body(request, RecordingRequest)
    rec = request.app[RECORDING]
    async with rec.lock:
        if rec.recorder.recording:
            raise ActionFailedError(f"display {rec.display} is being recorded; stop that recording first",
                                    code="recording_in_progress", suggested_next_tool="recording_stop")
        displays = {d.id: d for d in await rec.desktop.displays()}
        if req.display not in displays:
            raise InvalidRequestError(f"no display {req.display}; the session has {sorted(displays)}",
                                      code="unknown_display")
        try:
            # (The output is named: with several, wf-recorder would ask which.)
            await rec.recorder.start(displays[req.display].name)
        except RecordingError as exc:
            raise UnavailableError(str(exc), code="recorder_failed") from exc
        rec.display, rec.started = req.display, time.time()
    return json_ok(rec.status())


async def stop(request: web.Request) -> web.StreamResponse:
    rec = request.app[RECORDING]
    async with rec.lock:
        if not rec.recorder.recording:
            raise ActionFailedError("no recording runs; POST /api/v1/recording/start first", code="not_recording")
        display, started = rec.display, rec.started
        try:
            path = await rec.recorder.stop()
        except RecordingError as exc:
            raise UnavailableError(str(exc), code="recorder_failed") from exc
    headers = {"Content-Disposition": f'attachment; filename="display-{display}.mp4"',
               "X-Deskbox-Recording-Seconds": f"{time.time() - (started or time.time()):.1f}"}
    if rec.recorder.limit:
        headers["X-Deskbox-Recording-Limit"] = rec.recorder.limit  # ended by its limit, finished
    return await send_and_remove(request, path, "video/mp4", headers)


async def status(request: web.Request) -> web.Response:
    return json_ok(request.app[RECORDING].status())


ROUTES = [
    Route("POST", "/api/v1/recording/start", start, "Record a display to mp4 (one recording at a time)",
          body=RecordingRequest),
    Route("POST", "/api/v1/recording/stop", stop, "Stop the recording; answers the mp4", responses="video/mp4",
          longest=SLOW),
    Route("GET", "/api/v1/recording", status, "Whether a recording runs, of which display, for how long"),
]
