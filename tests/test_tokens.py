"""A session reachable from other machines has a token (deskbox up's --host, --no-token),
and only the services and what the OSWorld server runs are given it: not Chromium, not
the apps the session starts."""

from __future__ import annotations

import re

from tests.support import Session, free_port, http

BEARER = re.compile(r"Authorization: Bearer (\S+)")


def _environ(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        items = f.read().split(b"\0")
    return dict(i.decode(errors="replace").split("=", 1) for i in items if b"=" in i)


def test_a_session_listening_beyond_loopback_makes_a_token_and_keeps_it_from_the_browser():
    port = free_port()
    s = Session(["1024x768"], extra_args=["--host", "0.0.0.0", "--osworld", "--osworld-port", str(port)])
    s.start(120)
    try:
        printed = BEARER.findall(s.log_path.read_text())
        assert len(printed) == 1, s.log_tail()
        auth = {"Authorization": f"Bearer {printed[0]}"}
        osworld = f"http://127.0.0.1:{port}"
        assert http("GET", s.desktopd + "/health").status == 200  # (health stays open)
        assert http("GET", s.desktopd + "/api/v1/screenshot").status == 401
        assert http("GET", s.desktopd + "/api/v1/screenshot", headers=auth).status == 200
        assert http("POST", osworld + "/execute", {"command": "true", "shell": True}).status == 401

        # Chromium is not given it ...
        assert "DESKBOX_TOKEN" not in _environ(s.chromium_pid())
        # ... the commands OSWorld's server runs are: the pyautogui shim in them drives desktopd with it.
        ran = http("POST", osworld + "/execute", {"command": ["python3", "-c", "import pyautogui; "
                                                              "print(pyautogui.size())"]}, headers=auth)
        assert ran.status == 200, ran.body[:300]
        assert ran.json()["output"].strip() == "Size(width=1024, height=768)", ran.json()
    finally:
        s.stop()


def test_no_token_serves_beyond_loopback_without_one_and_loopback_never_makes_one():
    for extra in (["--host", "0.0.0.0", "--no-token"], []):
        s = Session(["800x600"], browser=False, extra_args=extra)
        s.start()
        try:
            assert not BEARER.findall(s.log_path.read_text()), s.log_tail()
            assert http("GET", s.desktopd + "/api/v1/screenshot").status == 200
        finally:
            s.stop()
