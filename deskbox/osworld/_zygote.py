"""A warm Python for OSWorld's ``/execute``: run as ``python -c`` by deskbox.osworld.warm
with the session's environment, it imports the pyautogui shim once and then forks a
child per command, which runs the command's code as ``python -c CODE ARGS`` would.

Standard library only, and no import of deskbox: it runs on the session's PYTHONPATH,
not deskbox's. Its protocol, over the SOCK_SEQPACKET socket whose descriptor is its
one argument:

- it sends ``ready`` once its imports are done;
- each message it receives is a JSON object ``{"code", "args", "cwd"}`` carrying three
  descriptors: a stream socket for the answer, and the command's stdout and stderr;
- on the answer socket it writes ``pid N`` when the child runs, then ``exit R`` when it
  has ended (R as ``subprocess`` gives it: negative for a signal), and closes it.

It ends when its socket closes (the OSWorld server is gone); children it started run
on. Each child is the leader of a session of its own, as the server's own spawned
commands are, so that a timeout ends the whole group."""

import json
import os
import selectors
import signal
import socket
import sys
import traceback
import types

NAME = "deskbox-warmpy"  # (the process name, which the session's reset knows is not an app)
MAX_MESSAGE = 256 * 1024


def _preload() -> None:
    for module in ("pyautogui", "time", "json", "urllib.request"):
        try:
            __import__(module)
        except Exception:  # a missing shim is the command's error to see, not this one's
            pass


def _set_comm(name: str) -> None:
    try:
        with open("/proc/self/comm", "w") as f:
            f.write(name)
    except OSError:
        pass


def _exit_code(exc: SystemExit) -> int:
    """What the interpreter exits with for ``exc``, printing what it would print."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _run_child(request: dict, out: int, err: int, own_comm: str) -> int:
    """In the forked child: become ``python -c CODE ARGS`` and run the code."""
    os.setsid()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    for fd in {devnull, out, err} - {0, 1, 2}:
        os.close(fd)
    _set_comm(own_comm)
    os.chdir(request["cwd"])
    sys.argv = ["-c", *request["args"]]
    # Anything installed since this interpreter started is found, as a fresh one would.
    import importlib
    importlib.invalidate_caches()
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    try:
        exec(compile(request["code"], "<string>", "exec"), main.__dict__)
    except SystemExit as exc:
        return _exit_code(exc)
    except BaseException as exc:  # (KeyboardInterrupt included, as the interpreter prints it)
        # Printed as the interpreter prints it: from the command's own frames on.
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
        traceback.print_exception(type(exc), exc, tb)
        return 1
    return 0


def serve(control: socket.socket) -> int | None:
    """The loop. Returns None when the server is gone, or, in a child, its exit code."""
    own_comm = open("/proc/self/comm").read().strip() if os.path.exists("/proc/self/comm") else "python"
    _set_comm(NAME)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    waiting: dict[int, socket.socket] = {}
    sel = selectors.DefaultSelector()
    sel.register(control, selectors.EVENT_READ, "control")
    sel.register(wake_r, selectors.EVENT_READ, "child")
    control.send(b"ready")
    while True:
        for key, _ in sel.select():
            if key.data == "child":
                try:
                    while os.read(wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
                _reap(waiting)
                continue
            try:
                data, fds, _flags, _addr = socket.recv_fds(control, MAX_MESSAGE, 3)
            except InterruptedError:
                continue
            if not data:
                return None  # the server closed its end
            if len(fds) != 3:
                for fd in fds:
                    os.close(fd)
                continue
            answer = socket.socket(fileno=fds[0])
            try:
                request = json.loads(data)
            except ValueError:
                answer.close()
                os.close(fds[1])
                os.close(fds[2])
                continue
            pid = os.fork()
            if pid == 0:
                sel.close()
                control.close()
                answer.close()
                os.close(wake_r)
                os.close(wake_w)
                for other in waiting.values():
                    other.close()
                return _run_child(request, fds[1], fds[2], own_comm)
            os.close(fds[1])
            os.close(fds[2])
            try:
                answer.sendall(f"pid {pid}\n".encode())
            except OSError:
                pass  # the server gave up on it: it still runs, and is reaped
            waiting[pid] = answer
            _reap(waiting)  # (it may have ended before its SIGCHLD was looked at)


def _reap(waiting: dict[int, socket.socket]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        answer = waiting.pop(pid, None)
        if answer is not None:
            try:
                answer.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:
                pass
            answer.close()


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    _preload()
    code = serve(control)
    if code is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.exit(code)


if __name__ == "__deskbox_warm__":
    main()
