"""A warm Python for ``python -c CODE``: OSWorld's agents act through /execute with
``["python", "-c", "import pyautogui; ...; pyautogui.click(...)"]``, once per step.
Started afresh, that interpreter costs about 0.1 CPU s before the first click (the
interpreter, ``site``, the shim and urllib), which a busy machine turns into most of an
action's time. Here one interpreter, started once with the session's environment and
the shim imported (deskbox.osworld._zygote), forks a child per command instead.

A command is taken only when it would have run the same interpreter with the same
environment: its program is the interpreter itself, or a ``#!/bin/sh`` script that
only ``exec``s it (the session's ``python``), its only option is ``-c``, and the
environment is the one the warm interpreter started with. Anything else is spawned as
before. The child is ``python -c`` in every way a command sees: its ``sys.argv``, a
fresh ``__main__``, its own session (a timeout ends its group), stdin from /dev/null,
its exit status and a traceback printed as the interpreter prints one."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import socket
import sys
import time
from pathlib import Path

import structlog

log = structlog.get_logger("osworld.warm")

__all__ = ["WarmPython", "WarmProcess", "PROCESS_NAME"]

# The warm interpreter's process name (deskbox.osworld._zygote.NAME): a session's reset
# ends the apps, and this is not one (the commands it forked are).
PROCESS_NAME = "deskbox-warmpy"

ZYGOTE = Path(__file__).with_name("_zygote.py")
_BOOTSTRAP = "import runpy, sys; runpy.run_path(sys.argv[2], run_name='__deskbox_warm__')"
START_TIMEOUT_S = 10.0
MAX_CODE_BYTES = 128 * 1024  # (a longer program is spawned: it fits one message of the protocol)
MAX_MESSAGE_BYTES = 160 * 1024  # one message on the socket (under its send buffer, 208 KiB by default)
GONE_POLL_S = 0.05
SEND_TIMEOUT_S = 2.0
RETRY_S = 30.0  # after a start that failed, commands are spawned this long before it is tried again


class WarmProcess:
    """A command the warm interpreter runs: ``pid``, ``wait()`` and ``returncode``, as
    far as deskbox.osworld.commands asks of a process."""

    def __init__(self, pid: int, answer: socket.socket, received: bytes = b"") -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._answer = answer
        self._ended = asyncio.get_running_loop().create_task(self._read_end(received))

    async def _read_end(self, data: bytes) -> None:
        """``data``: what came after the pid line already (a quick command's end)."""
        loop = asyncio.get_running_loop()
        try:
            while not data.endswith(b"\n"):
                chunk = await loop.sock_recv(self._answer, 64)
                if not chunk:
                    break
                data += chunk
        finally:
            self._answer.close()
        if data.startswith(b"exit "):
            self.returncode = int(data[5:])
            return
        # The warm interpreter went away before its child: its status is lost with it.
        while _running(self.pid):
            await asyncio.sleep(GONE_POLL_S)
        self.returncode = -1

    async def wait(self) -> int:
        await asyncio.shield(self._ended)
        assert self.returncode is not None
        return self.returncode


def _running(pid: int) -> bool:
    """There, and not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def _passable(argv: list[str]) -> bool:
    """Whether each argument could be passed to a program (no NUL, encodable): one that
    could not is spawned, and refused the way a spawn refuses it."""
    try:
        for arg in argv:
            if "\0" in arg:
                return False
            arg.encode()
    except UnicodeEncodeError:
        return False
    return True


def _execs(script: str, interpreter: str) -> bool:
    """Whether ``script`` is a ``#!/bin/sh`` file whose one command execs
    ``interpreter`` with its own arguments (the session's ``python``)."""
    try:
        with open(script, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    lines = [line.strip() for line in head.decode("utf-8", "replace").splitlines() if line.strip()]
    if len(lines) != 2 or not lines[0].startswith("#!") or lines[0][2:].strip() not in ("/bin/sh", "/usr/bin/sh"):
        return False
    try:
        words = shlex.split(lines[1])
    except ValueError:
        return False
    return words == ["exec", interpreter, "$@"]


class WarmPython:
    """The warm interpreter of one OSWorld server, started on first use."""

    def __init__(self, interpreter: str = sys.executable) -> None:
        self.interpreter = interpreter
        self.env: dict[str, str] | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._control: socket.socket | None = None
        self._starting: asyncio.Task | None = None
        self._send_lock = asyncio.Lock()
        self._retry_at = 0.0
        self._programs: dict[str, bool] = {}  # resolved program -> whether it is this interpreter
        self.started = 0  # commands run warm (for tests and the bench)

    def takes(self, argv: list[str], env: dict[str, str]) -> bool:
        """Whether ``argv`` is ``python -c CODE ...`` of this interpreter, in ``env``."""
        if len(argv) < 3 or argv[1] != "-c" or not _passable(argv) or len(argv[2].encode()) > MAX_CODE_BYTES:
            return False
        program = shutil.which(argv[0], path=env.get("PATH"))
        if program is None:
            return False
        program = os.path.abspath(program)
        known = self._programs.get(program)
        if known is None:
            known = program == self.interpreter or _execs(program, self.interpreter)
            self._programs[program] = known
        return known

    async def start(self, argv: list[str], env: dict[str, str], cwd: str, stdout: int,
                    stderr: int) -> WarmProcess | None:
        """Run ``argv`` (which ``takes``) with its output to the two descriptors; None
        when the warm interpreter is not ready (or not for ``env``): spawn it then.
        The first call starts the interpreter in the background."""
        if self.env is not None and env != self.env:
            return None
        control = await self._ready(env)
        if control is None:
            return None
        message = json.dumps({"code": argv[2], "args": argv[3:], "cwd": cwd}, ensure_ascii=False).encode()
        if len(message) > MAX_MESSAGE_BYTES:
            return None  # (long arguments beside the code: more than one message holds)
        answer, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            async with self._send_lock:
                socket.send_fds(control, [message], [theirs.fileno(), stdout, stderr])
        except OSError as exc:
            answer.close()
            log.warning("the warm interpreter is gone; spawning", error=str(exc))
            await self._forget()
            return None
        finally:
            theirs.close()
        answer.setblocking(False)
        loop = asyncio.get_running_loop()
        data = b""
        while not data.endswith(b"\n"):
            chunk = await loop.sock_recv(answer, 64)
            if not chunk:
                answer.close()
                await self._forget()
                return None  # (it died before forking: nothing ran)
            data += chunk
        pid_line, _, rest = data.partition(b"\n")
        if not pid_line.startswith(b"pid "):
            answer.close()
            return None
        self.started += 1
        return WarmProcess(int(pid_line[4:]), answer, rest)

    async def _ready(self, env: dict[str, str]) -> socket.socket | None:
        if self._control is not None and self._proc is not None and self._proc.returncode is None:
            return self._control
        if (self._starting is None or self._starting.done()) and time.monotonic() >= self._retry_at:
            if self._control is not None:
                await self._forget()
            self.env = dict(env)
            self._starting = asyncio.get_running_loop().create_task(self._start(env))
        return None  # this command is spawned; the next one finds the interpreter warm

    async def _start(self, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            proc = await asyncio.create_subprocess_exec(
                self.interpreter, "-c", _BOOTSTRAP, str(theirs.fileno()), str(ZYGOTE),
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=None,
                pass_fds=[theirs.fileno()], env=env, cwd=os.path.expanduser("~"))
        except OSError as exc:
            ours.close()
            log.warning("cannot start the warm interpreter", error=str(exc), retry_s=RETRY_S)
            self._retry_at = time.monotonic() + RETRY_S
            return
        finally:
            theirs.close()
        ours.setblocking(False)
        try:
            ready = await asyncio.wait_for(asyncio.get_running_loop().sock_recv(ours, 16), START_TIMEOUT_S)
        except (asyncio.TimeoutError, OSError):
            ready = b""
        if ready != b"ready":
            log.warning("the warm interpreter did not start; commands are spawned", retry_s=RETRY_S)
            self._retry_at = time.monotonic() + RETRY_S
            ours.close()
            proc.kill()
            await proc.wait()
            return
        ours.settimeout(SEND_TIMEOUT_S)  # (its messages are small and sent whole, under a lock)
        self._proc, self._control = proc, ours

    async def _forget(self) -> None:
        control, proc = self._control, self._proc
        self._control = self._proc = None
        if control is not None:
            control.close()  # it ends when its socket closes
        if proc is not None and proc.returncode is None:
            try:
                await asyncio.wait_for(proc.wait(), 2)
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()

    async def close(self) -> None:
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            try:
                await self._starting
            except (asyncio.CancelledError, Exception):
                pass
        await self._forget()
