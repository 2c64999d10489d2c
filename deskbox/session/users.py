"""The session user: made when missing, checked, granted sudo on request, and the
programs OSWorld's tasks call by name put on its PATH."""

from __future__ import annotations

import json
import os
import pwd
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from .errors import SessionError

__all__ = ["ensure_user", "readable_by", "grant_sudo", "revoke_sudo", "revoke_leftovers", "write_osworld_bin",
           "SYSTEM_PATH", "SUDO_RECORDS"]

# The session's PATH: the system's folders only (a PATH holding folders the session
# user cannot enter, root's, turns "not installed" into "permission denied").
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def ensure_user(name: str, home: str, *, system: bool) -> tuple[pwd.struct_passwd, bool]:
    """The unprivileged account the session runs as, created if missing (its home is
    made by the session, not by useradd). Returns it and whether it was created now."""
    try:
        return pwd.getpwnam(name), False
    except KeyError:
        pass
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    argv = [useradd, "--no-create-home", "--home-dir", home, "--user-group"]
    argv += ["--system", "--shell", "/usr/sbin/nologin"] if system else ["--shell", "/bin/bash"]
    result = subprocess.run([*argv, name], capture_output=True, text=True)
    if result.returncode != 0 and "already exists" not in result.stderr:
        raise SessionError(f"cannot create user {name!r}: {result.stderr.strip()}")
    return pwd.getpwnam(name), True


def readable_by(path: Path, uid: int, gid: int) -> bool:
    """Whether ``uid`` can traverse to ``path`` (checks every parent's x bit)."""
    for part in [path, *path.parents]:
        try:
            st = part.stat()
        except OSError:
            return False
        if st.st_uid == uid:
            bit = 0o100
        elif st.st_gid == gid:
            bit = 0o010
        else:
            bit = 0o001
        if not st.st_mode & bit:
            return False
    return True


# What --sudo changed, per user, so that it is put back: by the session at its end, or by
# the next deskbox up as root when that session died without one (SIGKILL, a crash).
SUDO_RECORDS = Path("/var/lib/deskbox/sudo")


def _password_hash(user: str) -> str:
    """``user``'s password field in the shadow file as it is ("!" or "*" when locked)."""
    out = subprocess.run(["getent", "shadow", user], capture_output=True, text=True)
    if out.returncode != 0 or ":" not in out.stdout:
        raise SessionError(f"--sudo: {user} has no shadow entry to keep (getent shadow {user})")
    return out.stdout.split(":")[1]


def _alive(pid: int) -> bool:
    try:
        return b"deskbox" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def grant_sudo(user: str, password: str) -> Path:
    """--sudo: ``user`` may sudo with ``password`` while the session runs. What it had is
    recorded first (:data:`SUDO_RECORDS`) and put back by :func:`revoke_sudo`; returns the
    sudoers entry."""
    if os.geteuid() != 0:
        raise SessionError("--sudo needs deskbox up to run as root")
    if not shutil.which("sudo"):
        raise SessionError("--sudo needs the sudo package")
    revoke_leftovers()
    record = SUDO_RECORDS / f"{user}.json"
    if record.exists():
        held = json.loads(record.read_text())
        raise SessionError(f"--sudo: {user} is given sudo by the session of pid {held['pid']}, which still runs")
    sudoers = Path(f"/etc/sudoers.d/deskbox-{user}")
    SUDO_RECORDS.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"user": user, "password_hash": _password_hash(user), "pid": os.getpid(),
                   "sudoers": str(sudoers)}, f)
    subprocess.run(["chpasswd"], input=f"{user}:{password}\n", text=True, check=True)
    sudoers.write_text(f"# deskbox up --sudo: this session's user, until it stops\n{user} ALL=(ALL:ALL) ALL\n")
    os.chmod(sudoers, 0o440)
    return sudoers


def revoke_sudo(user: str) -> None:
    """Put back what :func:`grant_sudo` changed for ``user``: its password as it was, no
    sudoers entry."""
    record = SUDO_RECORDS / f"{user}.json"
    try:
        held = json.loads(record.read_text())
    except (OSError, ValueError):
        return
    Path(held["sudoers"]).unlink(missing_ok=True)
    # (usermod -p sets the field as given: a hash, "!", "*" or nothing.)
    subprocess.run(["usermod", "-p", held["password_hash"], user], capture_output=True, check=True)
    record.unlink(missing_ok=True)


def revoke_leftovers() -> list[str]:
    """What sessions that died without an end left given sudo, put back; their users."""
    if os.geteuid() != 0 or not SUDO_RECORDS.is_dir():
        return []
    put_back = []
    for record in SUDO_RECORDS.glob("*.json"):
        try:
            held = json.loads(record.read_text())
        except (OSError, ValueError):
            continue
        if not _alive(int(held.get("pid", 0))):
            revoke_sudo(held["user"])
            put_back.append(held["user"])
    return put_back


def write_osworld_bin(folder: Path, project: Path) -> None:
    """Programs OSWorld's task configs call by name: ``python`` (Debian has only
    python3; this one is deskbox's interpreter, which sees the system's modules too),
    ``google-chrome`` / ``google-chrome-stable`` (deskbox.osworld.chrome: open
    the URLs in the session's browser, starting it when it is not running, and relay
    the debugging port), ``code`` (deskbox.osworld.vscode: VS Code's workbench) and
    ``socat`` (deskbox.osworld.socat: the system's, its listeners given reuseaddr) and
    ``timedatectl`` (deskbox.osworld.timedatectl: the session has no systemd)."""
    folder.mkdir(exist_ok=True)
    scripts = {
        "python": f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n',
        "google-chrome": (f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(project))} "
                          f'exec {shlex.quote(sys.executable)} -m deskbox.osworld.chrome "$@"\n'),
    }
    scripts["google-chrome-stable"] = scripts["google-chrome"]
    # VS Code's workbench in a window of its own (deskbox.osworld.vscode).
    scripts["code"] = (f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(project))} "
                       f'exec {shlex.quote(sys.executable)} -m deskbox.osworld.vscode "$@"\n')
    scripts["timedatectl"] = (f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(project))} "
                              f'exec {shlex.quote(sys.executable)} -m deskbox.osworld.timedatectl "$@"\n')
    # The system's socat, its listeners given reuseaddr (deskbox.osworld.socat: a task's
    # relay on 9222 binds again right after the reset that ended the last task's).
    real_socat = shutil.which("socat", path=os.defpath + ":/usr/local/bin")
    if real_socat:
        scripts["socat"] = (f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(project))} "
                            f"exec {shlex.quote(sys.executable)} -m deskbox.osworld.socat "
                            f'{shlex.quote(real_socat)} "$@"\n')
    for name, text in scripts.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
