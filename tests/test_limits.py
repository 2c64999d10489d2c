"""Bad and oversized input, the cases seen in the wild: each is a clear 4xx at once,
sends nothing, and the service goes on serving."""

from __future__ import annotations

import json
import os
import threading
import time

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


def test_json_a_scene_cannot_write_is_refused_and_later_scenes_are_served(session):
    # Found by make flakes' fuzzing (schemathesis seed 21548): an integer past 64 bits in
    # vlm_elements was taken, and every scene after it answered 500. A lone surrogate
    # (valid JSON, not UTF-8) is the other value orjson cannot write.
    for raw in (b'{"vlm_elements": [{"x": -6430947869344184955721170569658368}]}',
                b'{"vlm_scene": "\\ud800 alone"}'):
        resp = http("POST", session.scene + "/api/v1/scene/vlm", raw=raw)
        assert resp.status == 400 and error_code(resp) == "validation_error", resp.body[:300]
        assert "vlm_scene and vlm_elements" in resp.json()["error"]["message"]
    assert http("GET", session.scene + "/api/v1/scene").status == 200


def test_an_mcp_body_over_the_scene_s_limit_is_a_413_and_mcp_goes_on(session):
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}, "pad": "x" * (1024 * 1024 + 10)}
    resp = http("POST", session.scene + "/mcp", call, headers={"Accept": "application/json, text/event-stream",
                                                              "Content-Type": "application/json"})
    assert resp.status == 413 and error_code(resp) == "payload_too_large", resp.body[:300]
    del call["pad"]
    listed = http("POST", session.scene + "/mcp", call, headers={"Accept": "application/json, text/event-stream",
                                                                "Content-Type": "application/json"})
    assert listed.status == 200 and any(t["name"] == "observe" for t in listed.json()["result"]["tools"])


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
        s.sendall(b"POST /api/v1/keyboard HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        wait_until(lambda: len(pages.matching(type="keydown")) >= 3, 10, what="typing to begin")
    pages.settle(1.0)
    assert len(pages.matching(type="keydown")) < 100  # stopped at the next slice, not after 200 keys
    assert session.get("/api/v1/health").status == 200


# -- every request bounded ------------------------------------------------------------

DOCUMENTS = {"desktopd": "/api/v1/openapi.json", "scene": "/api/v1/openapi.json", "bridge": "/openapi.json",
             "osworld": "/openapi.json"}


def documents(session: Session) -> dict[str, dict]:
    bases = {"desktopd": session.desktopd, "scene": session.scene, "bridge": session.bridge,
             "osworld": session.state["osworld"]}
    return {name: http("GET", bases[name] + path).json() for name, path in DOCUMENTS.items()}


def test_every_operation_of_every_service_documents_its_longest_time(session):
    ops = {}
    for name, doc in documents(session).items():
        for path, item in doc["paths"].items():
            for method, op in item.items():
                longest = op.get("x-deskbox-longest-s")
                assert isinstance(longest, (int, float)) and 0 < longest <= 3600, (name, method, path, longest)
                ops[name, method.upper(), path] = op
    # The bounds that depend on the request say how, and their most is what the schema allows.
    hold = ops["scene", "POST", "/api/v1/computer/anthropic"]
    assert hold["x-deskbox-longest-s"] == 160 and "hold_key" in hold["description"]
    assert ops["scene", "POST", "/api/v1/wait_for"]["x-deskbox-longest-s"] == 90
    assert ops["osworld", "POST", "/execute"]["x-deskbox-longest-s"] == 630
    assert ops["desktopd", "POST", "/api/v1/keyboard"]["x-deskbox-longest-s"] == 70
    assert ops["scene", "GET", "/api/v1/scene"]["x-deskbox-longest-s"] == 30


def test_a_hold_longer_than_the_providers_schema_allows_is_refused_and_presses_nothing(session, pages):
    pages.clear()
    resp = http("POST", session.scene + "/api/v1/computer/anthropic",
                {"action": "hold_key", "text": "shift", "duration": 100.5})
    assert resp.status == 400 and error_code(resp) == "validation_error", resp.body[:300]
    assert "duration" in resp.json()["error"]["message"]
    pages.settle(0.5)
    assert not pages.matching(type="keydown")


def _answered(session: Session, route: str, status: int) -> float:
    """How many requests to the scene's ``route`` answered ``status`` (its metrics)."""
    text = http("GET", session.scene + "/metrics").body.decode()
    labels = (f'route="{route}"', 'method="POST"', f'status="{status}"')
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("deskbox_http_requests_total{") and all(label in line for label in labels))


def test_a_wait_answers_within_its_own_bound_and_stops_when_its_client_leaves(session):
    import socket

    never = {"any_of": [{"type": "element_appears", "selector": "button[name=Never]"}], "poll_ms": 100}
    started = time.monotonic()
    resp = http("POST", session.scene + "/api/v1/wait_for", {**never, "timeout_ms": 1500})
    took = time.monotonic() - started
    assert resp.status == 200 and resp.json()["matched"] is False, resp.body[:300]
    assert 1.5 <= took < 1.5 + 30, took  # its timeout, within the bound its document states
    # A 30 s wait whose client goes away after a second: stopped then (answered 499 in the
    # scene's metrics), not 30 s later.
    before = _answered(session, "/api/v1/wait_for", 499)
    body = json.dumps({**never, "timeout_ms": 30_000}).encode()
    with socket.create_connection(("127.0.0.1", session.scene_port)) as s:
        s.sendall(b"POST /api/v1/wait_for HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        time.sleep(1.0)
    wait_until(lambda: _answered(session, "/api/v1/wait_for", 499) > before, 10, interval=0.2,
               what="the wait stopped after its client left")


def test_a_service_answers_at_most_its_limit_at_once_and_refuses_the_rest_with_retry_after():
    import concurrent.futures

    s = Session(["800x600"], browser=False, extra_env={"DESKBOX_MAX_REQUESTS": "3"})
    s.start()
    try:
        # Three waits hold the scene (each for a window that never comes, 4 s) ...
        wait = {"any_of": [{"type": "window_appears", "title_regex": "never-such-a-window"}], "timeout_ms": 4000,
                "poll_ms": 200}
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            held = [pool.submit(http, "POST", s.scene + "/api/v1/wait_for", wait) for _ in range(3)]
            # ... so a fourth request is refused before any work, saying when to come back.
            refused = wait_until(lambda: (r := http("GET", s.scene + "/api/v1/snapshots")).status == 503 and r, 3,
                                 what="a request over the limit refused")
            assert refused.headers.get("retry-after") == "1"
            error = refused.json()["error"]
            assert error["code"] == "overloaded" and error["context"] == {"in_flight": 3, "limit": 3}
            assert http("GET", s.scene + "/api/v1/health").status == 200  # (probes are not counted)
            assert http("GET", s.desktopd + "/api/v1/tree").status == 200  # (each service counts its own)
            assert all(f.result().status == 200 for f in held)
        assert http("GET", s.scene + "/api/v1/snapshots").status == 200  # (and the slots come back)
    finally:
        s.stop()
