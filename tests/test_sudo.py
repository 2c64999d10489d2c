"""deskbox up --sudo puts back what it changed: the user's password as it was and no
sudoers entry, at the session's end, and, for a session that died without one, at the
next deskbox up as root (deskbox.session.users)."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

from deskbox.session import users
from tests.support import Session


def _hash(user: str) -> str:
    return subprocess.run(["getent", "shadow", user], capture_output=True, text=True, check=True).stdout.split(":")[1]


def _new_user() -> str:
    name = "dbxsudo" + uuid.uuid4().hex[:6]
    subprocess.run(["useradd", name], check=True)  # (no home: the session makes its own)
    subprocess.run(["chpasswd"], input=f"{name}:their-own-password\n", text=True, check=True)
    return name


def _remove(user: str) -> None:
    subprocess.run(["userdel", "--remove", user], capture_output=True)


def test_a_session_s_sudo_ends_with_it_and_the_user_s_password_is_theirs_again():
    user = _new_user()
    try:
        theirs = _hash(user)
        s = Session(["800x600"], browser=False, extra_args=["--user", user, "--sudo"])
        s.start()
        try:
            assert _hash(user) != theirs and Path(f"/etc/sudoers.d/deskbox-{user}").exists()
        finally:
            s.stop()
        assert _hash(user) == theirs
        assert not Path(f"/etc/sudoers.d/deskbox-{user}").exists()
        assert not (users.SUDO_RECORDS / f"{user}.json").exists()
    finally:
        _remove(user)


def test_what_a_session_that_died_gave_is_put_back_by_the_next():
    user = _new_user()
    try:
        theirs = _hash(user)
        sudoers = users.grant_sudo(user, "password")
        assert _hash(user) != theirs
        # As if the session that granted it had been killed: its pid is not a deskbox up.
        record = users.SUDO_RECORDS / f"{user}.json"
        held = json.loads(record.read_text())
        record.write_text(json.dumps({**held, "pid": 2 ** 22 + 7}))
        s = Session(["800x600"], browser=False)
        s.start()
        s.stop()
        assert _hash(user) == theirs and not sudoers.exists() and not record.exists()
    finally:
        users.revoke_sudo(user)
        _remove(user)
