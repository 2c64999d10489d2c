"""`deskbox up` supervises its children and leaves nothing behind when stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT, Session, http, wait_until

pytestmark = pytest.mark.desktop


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def session_pids(runtime_dir: str) -> list[int]:
    """Every process whose environment names this session's runtime folder."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes()
        except OSError:
            continue
        if f"XDG_RUNTIME_DIR={runtime_dir}".encode() in env.split(b"\0"):
            found.append(int(entry.name))
    return found


def test_up_help_explains_every_flag():
    out = subprocess.run([sys.executable, "-m", "deskbox.cli", "up", "--help"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    for flag in ["--output", "--url", "--no-browser", "--host", "--desktopd-port", "--cdp-port", "--user",
                 "--runtime-dir", "--sway-config", "--state-file", "--chromium", "--log-level"]:
        assert flag in out
    assert "WxH" in out and "scale" in out


def test_bad_output_spec_is_refused_before_anything_starts():
    result = subprocess.run([sys.executable, "-m", "deskbox.cli", "up", "--output", "1920x1080@3"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2 and "scale must be 1 or 2" in result.stderr


@pytest.fixture(scope="module")
def supervised():
    session = Session(["1024x768"], extra_env={"DESKBOX_TOKEN": "s3cret"}).start()
    yield session
    session.stop()


AUTH = {"Authorization": "Bearer s3cret"}


@pytest.fixture(autouse=True)
def every_child_up(request):
    """The supervised session's tests start with all of it up, whatever the one before
    killed (the compositor takes every service with it)."""
    if "supervised" in request.fixturenames:
        request.getfixturevalue("supervised").children_up(token="s3cret")


def health_pid(session: Session) -> int | None:
    resp = http("GET", session.desktopd + "/api/v1/health", timeout=2)
    return resp.json()["pid"] if resp.status == 200 else None


def test_token_guards_every_endpoint_but_health(supervised):
    assert http("GET", supervised.desktopd + "/api/v1/health").status == 200
    resp = http("GET", supervised.desktopd + "/api/v1/displays")
    assert resp.status == 401 and resp.json()["error"]["code"] == "unauthorized"
    resp = http("GET", supervised.desktopd + "/api/v1/displays", headers={"Authorization": "Bearer wrong"})
    assert resp.status == 401
    resp = http("GET", supervised.desktopd + "/api/v1/displays", headers=AUTH)
    assert resp.status == 200 and resp.json()["displays"][0]["size"] == [1024, 768]


def test_a_killed_desktopd_is_restarted(supervised):
    old = health_pid(supervised)
    os.kill(old, signal.SIGKILL)
    new = wait_until(lambda: (p := _safe(health_pid, supervised)) and p != old and p, 30, what="desktopd back")
    assert alive(new) and not alive(old)


def test_a_killed_browser_is_restarted(supervised):
    def chromium():
        tree = http("GET", supervised.desktopd + "/api/v1/tree", headers=AUTH)
        return next((w for w in tree.json()["windows"] if w["app_id"] == "chromium"), None) if tree.status == 200 else None

    old = wait_until(chromium, 30, what="Chromium window")
    os.killpg(old["pid"], signal.SIGKILL)
    new = wait_until(lambda: (w := chromium()) and w["pid"] != old["pid"] and w, 60, what="Chromium back")
    assert alive(new["pid"])


def test_a_killed_compositor_brings_the_whole_session_back(supervised):
    sway = supervised.children_up(token="s3cret")["sway"]["pid"]
    old_desktopd = health_pid(supervised)
    os.kill(sway, signal.SIGKILL)
    new = wait_until(lambda: (p := _safe(health_pid, supervised)) and p != old_desktopd and p, 60,
                     what="desktopd on the new compositor")
    resp = http("GET", supervised.desktopd + "/api/v1/screenshot", headers=AUTH)
    assert resp.status == 200 and resp.headers["x-deskbox-width"] == "1024"
    assert alive(new)


def test_stopping_leaves_no_process_socket_or_folder():
    session = Session(["800x600"]).start()
    runtime = session.state["runtime_dir"]
    pids = [p for p in session.state["pids"].values() if p]
    assert pids and all(alive(p) for p in pids)
    assert session_pids(runtime)
    session.proc.send_signal(signal.SIGTERM)
    assert session.proc.wait(30) == 0
    assert not any(alive(p) for p in pids)
    assert session_pids(runtime) == []
    assert not os.path.exists(runtime)
    assert not _port_open(session.desktopd_port)
    session.stop()  # already stopped: only removes its folder


def _port_open(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _safe(fn, *args):
    try:
        return fn(*args)
    except OSError:
        return None


def test_a_port_taken_before_the_session_binds_it_is_replaced_by_the_tests_session():
    # What tests/support's Session does when a port it chose was taken in between (as a
    # Chromium once took a scene port in CI): deskbox up refuses it, and it starts again.
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        s = Session(["640x480"], browser=False)
        s.args[s.args.index("--scene-port") + 1] = str(taken)
        s.scene_port = taken
        s.start()
        try:
            assert s.scene_port != taken and http("GET", s.scene + "/api/v1/health").status == 200
        finally:
            s.stop()
