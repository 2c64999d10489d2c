"""The machine's X socket folder (/tmp/.X11-unix), which every session's Xwayland shares:
wlroots starts Xwayland only when the folder is root's or the session user's, so a
folder made by another session's user left every later session of a different user
without X11 apps. deskbox up (as root) makes it root's and 1777 before Sway starts."""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from deskbox.session import xwayland
from tests.support import Session

NOBODY = pwd.getpwnam("nobody").pw_uid


def test_the_socket_folder_is_made_roots_and_sticky_whoever_made_it_first(tmp_path):
    taken = tmp_path / "taken"
    taken.mkdir(mode=0o755)
    os.chown(taken, NOBODY, NOBODY)
    assert xwayland.socket_dir_problem(1234, taken) is None
    st = taken.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, 0, 0o1777)

    missing = tmp_path / "missing"
    assert xwayland.socket_dir_problem(1234, missing) is None
    assert stat.S_IMODE(missing.stat().st_mode) == 0o1777

    a_file = tmp_path / "a-file"
    a_file.write_text("")
    assert "not a folder" in xwayland.socket_dir_problem(1234, a_file)


def test_a_session_gets_its_xwayland_when_another_user_made_the_socket_folder():
    folder = xwayland.X11_SOCKETS
    folder.mkdir(mode=0o1777, exist_ok=True)
    before = folder.stat()
    os.chown(folder, NOBODY, NOBODY)
    os.chmod(folder, 0o755)  # as another user's Xwayland leaves it
    try:
        session = Session(["800x600"], browser=False, extra_args=["--xwayland"]).start()
        try:
            display = session.state["x_display"]
            assert display, "the session has no Xwayland DISPLAY"
            assert Path(folder / f"X{display.lstrip(':')}").is_socket()
            st = folder.stat()
            assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o1777)
        finally:
            session.stop()
    finally:
        os.chown(folder, before.st_uid, before.st_gid)
        os.chmod(folder, stat.S_IMODE(before.st_mode))
