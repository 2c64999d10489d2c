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
import time
from dataclasses import dataclass

from ..common.logging import get_logger
from .warm import WarmProcess, WarmPython

__all__ = ["Finished", "CommandTimeout", "prepare_argv", "expand_home", "run", "start", "launch"]

# What a command may print into one reply; the rest is cut (a runaway `cat` must not
# fill the service's memory).
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
log = get_logger("deskbox.osworld.commands")
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


async def _spawn(argv: list[str], *, cwd: str | None, env: dict[str, str] | None,
                 stdout: int = asyncio.subprocess.DEVNULL, stderr: int = asyncio.subprocess.DEVNULL
                 ) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=stdout, stderr=stderr,
        cwd=cwd or os.path.expanduser("~"), env=env, start_new_session=True,
    )


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _Capture:
    """One output pipe of a command, read into memory as it arrives (capped at
    MAX_OUTPUT_BYTES). The pipe is deskbox's own, not asyncio's: a background child of
    the command may hold its other end for ever, and the command's reply must not wait
    for that, so the reading end is closed when the reply is made."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.read_fd, self.write_fd = os.pipe()
        self._transport: asyncio.ReadTransport | None = None
        self._done = asyncio.get_running_loop().create_future()

    async def open(self) -> None:
        """Start reading (the command has its end by now: ours is closed)."""
        os.close(self.write_fd)
        capture = self

        class Reader(asyncio.Protocol):
            def data_received(self, data: bytes) -> None:
                if capture.size < MAX_OUTPUT_BYTES:
                    capture.chunks.append(data[: MAX_OUTPUT_BYTES - capture.size])
                capture.size += len(data)

            def connection_lost(self, exc: Exception | None) -> None:
                if not capture._done.done():
                    capture._done.set_result(None)

        self._transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            Reader, os.fdopen(self.read_fd, "rb", buffering=0))

    async def finished(self, timeout: float) -> None:
        """Wait up to ``timeout`` for everyone to close the other end."""
        await asyncio.wait([self._done], timeout=timeout)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")


# Once a command has exited, how long its output may still take to arrive. A child it
# left running in the background (`cmd &`, setsid, nohup) may hold the pipes open for
# ever: it keeps running, and the request does not wait for it.
DRAIN_S = 0.3


async def run(argv: list[str], *, timeout: float, cwd: str | None = None, env: dict[str, str] | None = None,
              merge_stderr: bool = False, warm: WarmPython | None = None) -> Finished:
    """Run until the command exits (not until every holder of its pipes closes them:
    a background child it started keeps running without holding the reply); on timeout
    its whole process group is killed and CommandTimeout raised, with the output so far.
    OSError (no such program) comes through as is. With ``warm``, a ``python -c`` it
    takes is forked from the warm interpreter instead of spawned."""
    out = _Capture()
    err = out if merge_stderr else _Capture()
    captures = [out] if merge_stderr else [out, err]
    try:
        try:
            proc: asyncio.subprocess.Process | WarmProcess | None = None
            if warm is not None and env is not None and warm.takes(argv, env):
                proc = await warm.start(argv, env, cwd or os.path.expanduser("~"), out.write_fd, err.write_fd)
            if proc is None:
                proc = await _spawn(argv, cwd=cwd, env=env, stdout=out.write_fd, stderr=err.write_fd)
        except OSError:
            for c in captures:
                os.close(c.write_fd)
            raise
        for c in captures:
            await c.open()
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except (asyncio.TimeoutError, asyncio.CancelledError) as exc:
            _kill_group(proc.pid)
            await proc.wait()
            if isinstance(exc, asyncio.CancelledError):
                raise
            await asyncio.gather(*(c.finished(DRAIN_S) for c in captures))
            raise CommandTimeout(argv, timeout, out.text(), err.text()) from None
        await asyncio.gather(*(c.finished(DRAIN_S) for c in captures))
    finally:
        for c in captures:
            c.close()
    return Finished(proc.returncode if proc.returncode is not None else -1, out.text(), err.text())


async def start(argv: list[str], *, cwd: str | None = None, env: dict[str, str] | None = None
                ) -> asyncio.subprocess.Process:
    """Start and do not wait (``/setup/launch``); the child is reaped in the background,
    and its ``returncode`` says when it has ended."""
    proc = await _spawn(argv, cwd=cwd, env=env)
    task = asyncio.get_running_loop().create_task(proc.wait())
    _launched.add(task)
    task.add_done_callback(_launched.discard)
    started = time.monotonic()
    # When a launched app ends, and how (an app that exits at once, or is killed by a
    # reset, says so in the session's log; setups only learn that it started).
    task.add_done_callback(lambda _t: log.info("launched command ended", pid=proc.pid, command=argv[0],
                                               returncode=proc.returncode,
                                               seconds=round(time.monotonic() - started, 1)))
    return proc


async def launch(argv: list[str], *, cwd: str | None = None, env: dict[str, str] | None = None) -> int:
    """``start``, returning the pid."""
    return (await start(argv, cwd=cwd, env=env)).pid
