"""Bad and oversized input, the cases seen in the wild: each is a clear 4xx at once,
sends nothing, and the service goes on serving."""

from __future__ import annotations

import json
import os
import threading

import pytest

from tests.support import PageServer, Session, free_port, http, wait_until

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
def session(pages: PageServer):
    s = Session(["1024x768"], extra_args=["--url", pages.url("input.html"), "--osworld",
                                          "--osworld-port", str(free_port()), "--user", "limits"])
    s.start()
    s.browser_window()
    yield s
    s.stop()


def error_code(resp) -> str:
    return resp.json()["error"]["code"]


def focus_field(session: Session) -> None:
    """The fixture page's text field has the keyboard (keys then reach the page)."""
    resp = http("GET", session.scene + "/api/v1/scene?mode=agent-turn", timeout=60)
    assert resp.status == 200, resp.body[:400]
    scene = resp.json()
    field = next(e for e in scene["ax"] if e["role"] == "textbox" and e["source"] == "cdp")
    assert http("POST", session.scene + "/api/v1/act", {"target": field["id"], "action": "focus"}).status == 200


def test_a_hundred_thousand_key_combinations_are_refused_before_any_is_sent(session, pages):
    pages.clear()
    resp = session.post("/api/v1/keyboard", {"action": "key", "keys": ["a"] * 100_000})
    assert resp.status == 400 and error_code(resp) == "validation_error"
    resp = session.post("/api/v1/keyboard_event", {"events": [{"keysym": "a"}] * 5000})
    assert resp.status == 400
    resp = session.post("/api/v1/keyboard", {"action": "key", "keys": ["a"] * 200, "interval_ms": 1000})
    assert resp.status == 400 and error_code(resp) == "too_long"
    pages.settle(0.5)
    assert not pages.matching(type="keydown")
    assert session.get("/api/v1/health").status == 200


def test_deeply_nested_json_is_a_400(session):
    nested = "[" * 5000 + "]" * 5000
    for url in (session.desktopd + "/api/v1/pointer", session.scene + "/api/v1/act",
                session.bridge + "/navigate", session.state["osworld"] + "/execute"):
        resp = http("POST", url, raw=nested.encode())
        assert resp.status == 400, (url, resp.status, resp.body[:200])
    # Deep, but JSON all the same: refused, so that no later scene carries it.
    body = json.dumps({"vlm_scene": json.loads("[" * 900 + "]" * 900)}).encode()
    assert http("POST", session.scene + "/api/v1/scene/vlm", raw=body).status == 400
    assert http("GET", session.scene + "/api/v1/scene").status == 200
    assert http("POST", session.desktopd + "/api/v1/pointer", raw=b"\xff\xfe not utf-8").status == 400


def test_navigating_to_javascript_is_refused(session):
    resp = http("POST", session.scene + "/api/v1/computer/gemini",
                {"name": "navigate", "args": {"url": "javascript:alert(1)"}})
    assert resp.status == 400, resp.body[:300]
    resp = http("POST", session.bridge + "/navigate", {"url": "javascript:alert(1)"})
    assert resp.status == 400 and error_code(resp) == "validation_error"


def test_an_unreadable_file_is_a_403(session):
    base = session.state["osworld"]
    secret = "/root/deskbox-limits-test.txt"
    with open(secret, "w") as f:
        f.write("root only")
    os.chmod(secret, 0o600)
    try:
        resp = http("POST", base + "/file", raw=f"file_path={secret}".encode(),
                    headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert resp.status in (403, 404), resp.status  # /root itself may not be enterable: 404
        resp = http("POST", base + "/file", raw=b"file_path=/etc/shadow",
                    headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert resp.status == 403 and "permission denied" in resp.json()["error"]
    finally:
        os.unlink(secret)


def test_a_slow_request_does_not_make_another_client_wait_for_it(session, pages):
    focus_field(session)
    pages.clear()
    typed: list = []
    slow = threading.Thread(target=lambda: typed.append(session.post(
        "/api/v1/keyboard", {"action": "type", "text": "x" * 40, "interval_ms": 100}, timeout=60)))
    slow.start()
    wait_until(lambda: pages.matching(type="keydown"), 10, what="the slow typing to begin")
    # A click sent meanwhile is applied between two of its keys, long before it ends.
    resp = session.post("/api/v1/pointer", {"action": "move", "x": 5, "y": 5})
    assert resp.status == 200
    assert slow.is_alive()
    slow.join()
    assert typed[0].status == 200


def test_a_client_that_goes_away_stops_its_input_and_holds_no_key(session, pages):
    import socket

    focus_field(session)
    pages.clear()
    body = json.dumps({"action": "type", "text": "y" * 200, "interval_ms": 50}).encode()
    with socket.create_connection(("127.0.0.1", session.desktopd_port)) as s:
        s.sendall(b"POST /api/v1/keyboard HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        wait_until(lambda: len(pages.matching(type="keydown")) >= 3, 10, what="typing to begin")
    pages.settle(1.0)
    assert len(pages.matching(type="keydown")) < 100  # stopped at the next slice, not after 200 keys
    assert session.get("/api/v1/health").status == 200
