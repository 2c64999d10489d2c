"""Running programs for OSWorld's /execute, /run_python, /run_bash_script and
/setup/launch: with the session's environment (Wayland, D-Bus, the pyautogui shim on
PYTHONPATH, ``python`` and ``google-chrome`` on PATH), as the user this service runs
as (the session user), each in a process group of its own so that a timeout ends the
whole group, not just its leader."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
from dataclasses import dataclass

__all__ = ["Finished", "CommandTimeout", "prepare_argv", "expand_home", "run", "launch"]

# What a command may print into one reply; the rest is cut (a runaway `cat` must not
# fill the service's memory).
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
_launched: set[asyncio.Task] = set()


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str


class CommandTimeout(Exception):
    def __init__(self, argv: list[str], timeout: float, stdout: str = "", stderr: str = "") -> None:
        super().__init__(f"Command {argv!r} timed out after {timeout:g} seconds")
        self.argv, self.timeout = argv, timeout
        self.stdout, self.stderr = stdout, stderr


def expand_home(arg: str) -> str:
    """``~/x`` -> ``$HOME/x``, as OSWorld's server does for each argument."""
    return os.path.expanduser(arg) if arg.startswith("~/") else arg


def prepare_argv(command: list[str] | str, shell: bool) -> list[str]:
    """OSWorld's rules: a string without ``shell`` is split like a shell would; every
    argument starting with ``~/`` is expanded; with ``shell`` the command goes to
    ``/bin/sh -c`` (a list's first item is the script and the rest its ``$0 $1 ...``,
    as Python's ``subprocess`` does with ``shell=True``)."""
    if shell:
        if isinstance(command, str):
            return ["/bin/sh", "-c", command]
        return ["/bin/sh", "-c", *command]
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if not argv:
        raise ValueError("command is empty")
    return [expand_home(a) for a in argv]


async def _spawn(argv: list[str], *, cwd: str | None, env: dict[str, str] | None, capture: bool,
                 merge_stderr: bool = False) -> asyncio.subprocess.Process:
    pipe = asyncio.subprocess.PIPE if capture else asyncio.subprocess.DEVNULL
    return await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=pipe,
        stderr=(asyncio.subprocess.STDOUT if merge_stderr else pipe) if capture else asyncio.subprocess.DEVNULL,
        cwd=cwd or os.path.expanduser("~"), env=env, start_new_session=True, limit=MAX_OUTPUT_BYTES,
    )


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _Capture:
    """What a stream said, kept as it arrives (so that a reader stopped early still has
    everything read so far), capped at MAX_OUTPUT_BYTES."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0

    async def read(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(65536):
            if self.size < MAX_OUTPUT_BYTES:
                self.chunks.append(chunk[: MAX_OUTPUT_BYTES - self.size])
            self.size += len(chunk)

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")


# Once a command has exited, how long its output may still take to arrive. A child it
# left running in the background (`cmd &`, setsid, nohup) may hold the pipes open for
# ever: it keeps running, and the request does not wait for it.
DRAIN_S = 0.3


async def run(argv: list[str], *, timeout: float, cwd: str | None = None, env: dict[str, str] | None = None,
              merge_stderr: bool = False) -> Finished:
    """Run until the command exits (not until every holder of its pipes closes them:
    a background child it started keeps running without holding the reply); on timeout
    its whole process group is killed and CommandTimeout raised, with the output so far.
    OSError (no such program) comes through as is."""
    proc = await _spawn(argv, cwd=cwd, env=env, capture=True, merge_stderr=merge_stderr)
    out, err = _Capture(), _Capture()
    readers = [asyncio.ensure_future(out.read(proc.stdout)), asyncio.ensure_future(err.read(proc.stderr))]
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except (asyncio.TimeoutError, asyncio.CancelledError) as exc:
            _kill_group(proc.pid)
            await proc.wait()
            if isinstance(exc, asyncio.CancelledError):
                raise
            await asyncio.wait(readers, timeout=DRAIN_S)
            raise CommandTimeout(argv, timeout, out.text(), err.text()) from None
        await asyncio.wait(readers, timeout=DRAIN_S)
    finally:
        for reader in readers:
            reader.cancel()
    return Finished(proc.returncode if proc.returncode is not None else -1, out.text(), err.text())


async def launch(argv: list[str], *, cwd: str | None = None, env: dict[str, str] | None = None) -> int:
    """Start and do not wait (``/setup/launch``); the child is reaped in the background.
    Returns its pid."""
    proc = await _spawn(argv, cwd=cwd, env=env, capture=False)
    task = asyncio.get_running_loop().create_task(proc.wait())
    _launched.add(task)
    task.add_done_callback(_launched.discard)
    return proc.pid
