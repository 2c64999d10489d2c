"""Screen recording: wf-recorder (wlr-screencopy, as desktopd's screenshots) writing an
mp4 of one display. The OSWorld server's /start_recording and /end_recording and the
scene aggregator's /api/v1/recording use it.

One recording at a time per recorder, as OSWorld's server does. ``stop`` ends wf-recorder with
SIGINT (it then finishes the file: moov atom written) and returns the file's path. A
recording is also ended, the same way, once it reaches ``MAX_DURATION_S`` or
``MAX_BYTES``: ``stop`` then returns it as it was finished (``limit`` says which).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
from pathlib import Path

__all__ = ["Recorder", "RecordingError", "output_of", "FIRST_BYTES_S"]

WF_RECORDER = "wf-recorder"
STOP_GRACE_S = 10.0
MAX_DURATION_S = 3600.0
MAX_BYTES = 2 * 1024**3
WATCH_S = 1.0
# wf-recorder writes nothing until its encoder has put out the first frames; a recording
# stopped before that (a short one on a busy machine) would be an empty file. Stopping
# waits this long for the first bytes.
FIRST_BYTES_S = 5.0


class RecordingError(Exception):
    pass


def output_of(cmdline: list[str]) -> Path | None:
    """The file a wf-recorder command line writes (its ``-f``)."""
    for flag, value in zip(cmdline, cmdline[1:]):
        if flag in ("-f", "--file"):
            return Path(value)
    return None


class Recorder:
    def __init__(self, folder: str | None = None) -> None:
        self.folder = Path(folder or tempfile.gettempdir())
        self.proc: asyncio.subprocess.Process | None = None
        self.path: Path | None = None
        self._log: Path | None = None
        self.limit: str | None = None  # "duration" or "size" when a limit ended it
        self._watch: asyncio.Task | None = None
        self.max_duration_s = MAX_DURATION_S
        self.max_bytes = MAX_BYTES

    @property
    def recording(self) -> bool:
        """Started and not yet collected (it may have been ended by a limit)."""
        return self.proc is not None

    async def start(self, output_name: str | None = None) -> None:
        """Record the output of that name (HEADLESS-1 ...), or the only one."""
        if self.recording:
            raise RecordingError("Recording is already in progress.")
        exe = shutil.which(WF_RECORDER)
        if exe is None:
            raise RecordingError("wf-recorder is not installed (Debian package wf-recorder)")
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix="deskbox-recording-", suffix=".mp4", dir=self.folder)
        os.close(fd)
        self.path = Path(name)
        self._log = self.path.with_suffix(".log")
        # -D: a frame at every tick, not only on damage, so that a still screen still
        # makes a playable video; -y: overwrite the placeholder mkstemp made.
        argv = [exe, "-y", "-D", "-c", "libx264", "-x", "yuv420p", "-f", str(self.path)]
        if output_name:
            argv += ["-o", output_name]
        with open(self._log, "wb") as log:
            self.proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        await asyncio.sleep(0.3)
        if self.proc.returncode is not None:
            self.proc = None
            raise RecordingError(f"wf-recorder exited at once: {self._log_tail()}")
        self.limit = None
        self._watch = asyncio.create_task(self._enforce_limits(self.proc, self.path))

    async def _enforce_limits(self, proc: asyncio.subprocess.Process, path: Path) -> None:
        started = asyncio.get_running_loop().time()
        while proc.returncode is None:
            await asyncio.sleep(WATCH_S if path.exists() and path.stat().st_size else 0.1)
            elapsed = asyncio.get_running_loop().time() - started
            size = path.stat().st_size if path.exists() else 0
            # (Not before its first bytes, as at stop: a recording ended before them is empty.)
            if size == 0 and elapsed < self.max_duration_s + FIRST_BYTES_S:
                continue
            if elapsed >= self.max_duration_s or size >= self.max_bytes:
                self.limit = "duration" if elapsed >= self.max_duration_s else "size"
                proc.send_signal(signal.SIGINT)  # finishes the file
                return

    async def stop(self) -> Path:
        if not self.recording or self.proc is None or self.path is None:
            raise RecordingError("No recording in progress to stop.")
        proc, self.proc = self.proc, None
        if self._watch is not None:
            self._watch.cancel()
        waited = 0.0
        while proc.returncode is None and waited < FIRST_BYTES_S and self._size() == 0:
            await asyncio.sleep(0.1)
            waited += 0.1
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(proc.wait(), STOP_GRACE_S)
        except asyncio.TimeoutError:
            os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            raise RecordingError(f"wf-recorder did not stop; killed: {self._log_tail()}") from None
        if not self.path.exists() or self.path.stat().st_size == 0:
            raise RecordingError(f"Recording failed. The output file is missing or empty: {self._log_tail()}")
        return self.path

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(self.proc.wait(), STOP_GRACE_S)
            except asyncio.TimeoutError:
                self.proc.kill()
        for path in (self.path, self._log):
            if path is not None:
                path.unlink(missing_ok=True)

    def _size(self) -> int:
        try:
            return self.path.stat().st_size if self.path is not None else 0
        except OSError:
            return 0

    def _log_tail(self) -> str:
        try:
            return self._log.read_text(errors="replace")[-1000:] if self._log else ""
        except OSError:
            return ""
