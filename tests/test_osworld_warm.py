"""The warm interpreter of OSWorld's /execute (deskbox.osworld.warm), with real
processes: a ``python -c`` it forks must be what a fresh ``python -c`` is to the command
(its arguments, output, exit status, traceback, directory, session), a timeout must end
it and what it started, and whatever it does not take is spawned as before. The same
command is run both ways and the two results compared."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from deskbox.osworld import _zygote, commands
from deskbox.osworld.warm import PROCESS_NAME, WarmPython
from tests.support import ROOT

SHIMS = ROOT / "deskbox" / "shims"
PY = sys.executable


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SHIMS), **extra}


async def _warmed(warm: WarmPython, env: dict[str, str]) -> None:
    """Until a command runs warm (the first one starts the interpreter and is spawned)."""
    deadline = time.monotonic() + 20
    before = warm.started
    while warm.started == before:
        assert time.monotonic() < deadline, "the warm interpreter never started"
        await commands.run([PY, "-c", "pass"], timeout=5, env=env, warm=warm)
        await asyncio.sleep(0.05)


def _both(argv: list[str], *, cwd: str = "/tmp", timeout: float = 10, **env: str):
    """``argv`` run warm and spawned: (warm result, spawned result, how many ran warm)."""
    async def go():
        warm = WarmPython(PY)
        try:
            await _warmed(warm, _env(**env))
            before = warm.started
            hot = await commands.run(argv, timeout=timeout, env=_env(**env), warm=warm, cwd=cwd)
            cold = await commands.run(argv, timeout=timeout, env=_env(**env), cwd=cwd)
            return hot, cold, warm.started - before
        finally:
            await warm.close()
    return asyncio.run(go())


@pytest.mark.parametrize("code", [
    "import sys, pyautogui; print(sys.argv, pyautogui.FAILSAFE, __name__); print('to stderr', file=sys.stderr)",
    "import sys; sys.exit(3)",
    "raise SystemExit('a message')",
    "def f():\n    return 1 / 0\nf()",
    "import os; print(os.getcwd(), os.getpid() == os.getpgid(0) == os.getsid(0), open('/proc/self/comm').read())",
    "import sys; print(sys.stdin.read() == '', sys.path[0] == '')",
    "import atexit; atexit.register(print, 'at exit'); print('body')",
])
def test_a_python_forked_warm_is_what_a_fresh_python_c_is_to_its_command(code):
    hot, cold, warm_runs = _both([PY, "-c", code, "one", "two"])
    assert warm_runs == 1
    assert hot == cold


def test_long_programs_and_arguments_run_the_same_warm_or_spawned():
    code = "import sys; x = '" + "\u00e9" * 60_000 + "'; print(len(x), len(sys.argv[1]))"
    hot, cold, warm_runs = _both([PY, "-c", code, "a"])
    assert (hot, warm_runs) == (cold, 1) and hot.stdout == "60000 1\n"
    # More than one message of the protocol holds: spawned, as before.
    hot, cold, warm_runs = _both([PY, "-c", "import sys; print(len(sys.argv[1] + sys.argv[2]))", "a" * 100_000,
                                  "b" * 100_000])
    assert (hot, warm_runs) == (cold, 0) and hot.stdout == "200000\n"

    async def still_warm():  # (and the interpreter is still the one it was)
        warm = WarmPython(PY)
        try:
            await _warmed(warm, _env())
            parent = [PY, "-c", "import os; print(os.getppid())"]
            first = await commands.run(parent, timeout=5, env=_env(), warm=warm)
            await commands.run([PY, "-c", "pass", "a" * 100_000, "b" * 100_000], timeout=5, env=_env(), warm=warm)
            again = await commands.run(parent, timeout=5, env=_env(), warm=warm)
            return first.stdout, again.stdout
        finally:
            await warm.close()
    first, again = asyncio.run(still_warm())
    assert first == again


def test_the_sessions_python_script_is_taken_and_other_programs_and_options_are_not(tmp_path):
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nexec {PY} "$@"\n')
    wrapper.chmod(0o755)
    other = tmp_path / "python3"
    other.write_text(f'#!/bin/sh\nexec {PY} -S "$@"\n')
    other.chmod(0o755)
    warm = WarmPython(PY)
    env = _env(PATH=f"{tmp_path}:{os.environ['PATH']}")
    assert warm.takes(["python", "-c", "pass"], env)
    assert warm.takes([PY, "-c", "pass", "arg"], env)
    assert not warm.takes(["python3", "-c", "pass"], env)  # a script that adds an option
    assert not warm.takes(["python", "-u", "-c", "pass"], env)
    assert not warm.takes(["python", "script.py"], env)
    assert not warm.takes(["python", "-c"], env)
    assert not warm.takes(["/bin/sh", "-c", "python -c pass"], env)
    assert not warm.takes(["python", "-c", "x" * (2 * 1024 * 1024)], env)
    # What a spawn refuses is left to the spawn, which refuses it as before.
    assert not warm.takes(["python", "-c", "print(1)\0"], env)
    assert not warm.takes(["python", "-c", "pass", "\ud800"], env)


def test_another_environment_is_spawned_with_it():
    async def go():
        warm = WarmPython(PY)
        try:
            await _warmed(warm, _env())
            before = warm.started
            done = await commands.run([PY, "-c", "import os; print(os.environ.get('TASK_VAR'))"], timeout=5,
                                      env=_env(TASK_VAR="set"), warm=warm)
            return done.stdout, warm.started - before
        finally:
            await warm.close()
    assert asyncio.run(go()) == ("set\n", 0)


def test_a_timeout_ends_the_forked_command_and_what_it_started():
    code = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            "print(p.pid, flush=True); time.sleep(60)")

    async def go():
        warm = WarmPython(PY)
        try:
            await _warmed(warm, _env())
            with pytest.raises(commands.CommandTimeout) as timed_out:
                await commands.run([PY, "-c", code], timeout=1.5, env=_env(), warm=warm)
            return timed_out.value.stdout
        finally:
            await warm.close()
    out = asyncio.run(go())
    grandchild = int(out.split()[0])
    deadline = time.monotonic() + 5
    while Path(f"/proc/{grandchild}").exists() and _state(grandchild) != "Z":
        assert time.monotonic() < deadline, "the command's own child outlived the timeout"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return "gone"


def test_when_the_warm_interpreter_dies_commands_are_spawned_and_it_starts_again():
    async def go():
        warm = WarmPython(PY)
        try:
            await _warmed(warm, _env())
            parent = await commands.run([PY, "-c", "import os; print(os.getppid())"], timeout=5, env=_env(), warm=warm)
            zygote = int(parent.stdout)
            assert Path(f"/proc/{zygote}/comm").read_text().strip() == PROCESS_NAME
            os.kill(zygote, signal.SIGKILL)
            # Every command still runs, whatever the moment it finds the interpreter gone.
            for _ in range(5):
                done = await commands.run([PY, "-c", "print('ran')"], timeout=5, env=_env(), warm=warm)
                assert (done.returncode, done.stdout) == (0, "ran\n")
            await _warmed(warm, _env())
            again = await commands.run([PY, "-c", "import os; print(os.getppid())"], timeout=5, env=_env(), warm=warm)
            return zygote, int(again.stdout)
        finally:
            await warm.close()
    first, second = asyncio.run(go())
    assert first != second
    assert not Path(f"/proc/{second}").exists() or _state(second) == "Z"  # closed with its server


def test_the_process_name_the_session_knows_is_the_interpreters_own():
    assert _zygote.NAME == PROCESS_NAME and len(PROCESS_NAME) <= 15  # (a process name's longest)
