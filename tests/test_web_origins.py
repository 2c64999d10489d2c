"""A web page cannot drive the session (deskbox.common.callers, common.web.require_json).

A session in OSWorld mode with no token (as ``deskbox up --osworld`` and OSWorld's own
provider start one), its Observer API and live view on. A page of another origin, opened
in the session's own Chromium, tries every way a page can send a request without the
service's consent (no-cors fetch as text/plain, with no type, as a form; plain HTML forms,
text/plain and urlencoded; a preflighted JSON fetch; websockets; cross-site GETs) against
every service: OSWorld's /execute and /setup, desktopd's keyboard, the scene's computer
tool and MCP, the bridge's navigation, the Observer API's actions, the live view. Nothing
runs, nothing is typed, nothing navigates, and each service counted the refusals. The
same requests sent by a client that is not a browser do act (the controls), so the
marks the attack would leave are real marks."""

from __future__ import annotations

import json
import re
import urllib.parse
import uuid

import pytest

from tests.support import PageServer, free_port, http, osworld_session, run_js, wait_until

TYPED = "pwned"


@pytest.fixture(scope="module")
def session():
    s = osworld_session(["1280x800"], "--observer", "--observer-port", str(free_port()),
                        "--view", "--view-port", str(free_port()))
    yield s
    s.stop()


def _refusals(base: str) -> int:
    """How many requests ``base``'s service has answered 403 (its /metrics)."""
    text = http("GET", base + "/metrics").body.decode()
    return sum(int(float(m.group(1))) for m in
               re.finditer(r'^deskbox_http_requests_total\{[^}]*status="403"[^}]*\} (\S+)$', text, re.M))


def _marks(osworld: str, tag: str) -> list[str]:
    out = http("POST", osworld + "/execute", {"command": f"ls /tmp | grep {tag} || true", "shell": True}).json()
    return out["output"].split()


def _plan(session, pages: PageServer, tag: str) -> list[dict]:
    osworld, desktopd, scene = session.state["osworld"], session.desktopd, session.scene
    observer, view, bridge = session.state["observer"], session.state["view"], session.bridge

    def run(n: str) -> str:
        return json.dumps({"command": f"touch /tmp/{tag}-{n}", "shell": True})

    typing = json.dumps({"action": "type", "text": TYPED})
    # A text/plain form's body is "name=value": a name that opens a JSON object and a
    # value that closes it make the body the JSON the route takes.
    form_json = {f'{{"command": "touch /tmp/{tag}-form", "shell": true, "pad": "': '"}'}
    ws = lambda base: base.replace("http://", "ws://")  # noqa: E731
    mcp_call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "keyboard", "arguments": {"action": "type", "text": TYPED}}})
    return [
        {"kind": "fetch", "url": osworld + "/execute", "body": run("fetch")},
        {"kind": "blob", "url": osworld + "/execute", "body": run("blob")},
        {"kind": "fetch", "url": osworld + "/setup/execute", "body": run("setup")},
        {"kind": "fetch", "url": osworld + "/run_bash_script",
         "body": json.dumps({"script": f"touch /tmp/{tag}-bash"})},
        {"kind": "json", "url": osworld + "/execute", "body": run("json")},
        {"kind": "form", "url": osworld + "/execute", "enctype": "text/plain", "fields": form_json},
        {"kind": "multipart", "url": osworld + "/setup/upload", "fields": {"file_path": f"/tmp/{tag}-upload"},
         "file": "file_data", "content": "written by another origin"},
        {"kind": "urlencoded", "url": osworld + "/file", "fields": {"file_path": "/etc/hostname"}},
        {"kind": "fetch", "url": desktopd + "/api/v1/keyboard", "body": typing},
        {"kind": "blob", "url": desktopd + "/api/v1/keyboard", "body": typing},
        {"kind": "form", "url": desktopd + "/api/v1/keyboard", "enctype": "text/plain",
         "fields": {'{"action": "type", "text": "pwned", "pad": "': '"}'}},
        {"kind": "fetch", "url": scene + "/api/v1/computer/anthropic", "body": typing},
        {"kind": "fetch", "url": scene + "/mcp", "body": mcp_call},
        {"kind": "get", "url": scene + "/api/v1/scene"},
        {"kind": "websocket", "url": ws(scene) + "/api/v1/scene/stream"},
        {"kind": "fetch", "url": bridge + "/navigate", "body": json.dumps({"url": pages.url(f"input.html#{tag}")})},
        {"kind": "fetch", "url": observer + "/api/action", "body": json.dumps({"action": "type", "value": TYPED})},
        {"kind": "get", "url": view + "/api/displays"},
        {"kind": "websocket", "url": ws(view) + "/websockify?display=0"},
    ]


def test_a_page_of_another_origin_in_the_session_s_browser_makes_no_service_act(session, pages):
    tag = "dbx-xo-" + uuid.uuid4().hex[:8]
    plan = _plan(session, pages, tag)
    services = {"osworld": session.state["osworld"], "desktopd": session.desktopd, "scene": session.scene,
                "bridge": session.bridge, "observer": session.state["observer"], "view": session.state["view"]}
    before = {name: _refusals(base) for name, base in services.items()}
    sent = {name: sum(1 for a in plan if a["url"].replace("ws://", "http://").startswith(base))
            for name, base in services.items()}

    pages.clear()
    session.open_page(pages.url("attack.html#" + urllib.parse.quote(json.dumps(plan))))
    done = pages.wait_for(timeout=120, type="attack-done")
    outcomes = {(r["kind"], r["url"]): r["outcome"] for r in done["results"]}
    assert len(done["results"]) == len(plan)

    # Nothing ran, nothing was written, nothing typed, nothing navigated.
    assert _marks(session.state["osworld"], tag) == []
    tab = next(t for t in session.tabs() if t["url"].startswith(pages.base + "/attack.html"))
    assert run_js(session, tab["id"], "document.getElementById('sink').value") == ""
    assert not [t for t in session.tabs() if t["url"].startswith(pages.url("input.html"))]
    # No answer could be read, and no socket opened.
    assert outcomes[("json", session.state["osworld"] + "/execute")].startswith("failed"), outcomes
    assert all(o != "open" for (kind, _), o in outcomes.items() if kind == "websocket"), outcomes
    # Each service refused what was sent to it (they were reached: not a request lost on the way).
    after = {name: _refusals(base) for name, base in services.items()}
    for name in services:
        assert after[name] - before[name] >= sent[name], (name, before, after, sent)

    # The controls: the same requests from a client that is not a browser act.
    assert http("POST", session.state["osworld"] + "/execute", json.loads(plan[0]["body"])).status == 200
    assert _marks(session.state["osworld"], tag) == [f"{tag}-fetch"]
    run_js(session, tab["id"], "document.getElementById('sink').focus()")
    assert http("POST", session.desktopd + "/api/v1/keyboard", {"action": "type", "text": TYPED}).status == 200
    wait_until(lambda: run_js(session, tab["id"], "document.getElementById('sink').value") == TYPED, 10,
               what="the control's typing in the page")


def test_a_renamed_address_is_refused_by_every_service(session):
    """DNS rebinding: a page whose own name now points at 127.0.0.1 sends same-origin
    requests with that name in Host. Sent here as the browser would send them (the
    session's Chromium resolves names through the machine's resolver)."""
    tag = "dbx-rb-" + uuid.uuid4().hex[:8]
    bases = [session.state["osworld"], session.desktopd, session.scene, session.bridge,
             session.state["observer"], session.state["view"]]
    for base in bases:
        port = urllib.parse.urlsplit(base).port
        host = f"rebind.example:{port}"
        for method, path, body in [("GET", "/health", None), ("GET", "/metrics", None),
                                   ("POST", "/execute", {"command": f"touch /tmp/{tag}", "shell": True})]:
            resp = http(method, base + path, body, headers={"Host": host, "Origin": f"http://{host}",
                                                           "Content-Type": "application/json"})
            assert resp.status == 403, (base, path, resp.status, resp.body[:200])
            assert resp.json()["error"]["code"] == "forbidden_origin"
    assert _marks(session.state["osworld"], tag) == []
    # The same service by its address answers.
    assert http("GET", session.desktopd + "/health").status == 200


@pytest.mark.parametrize("service,path,body", [
    ("osworld", "/execute", {"command": "true", "shell": True}),
    ("osworld", "/setup/launch", {"command": ["true"]}),
    ("desktopd", "/api/v1/keyboard", {"action": "key", "keys": "shift"}),
    ("scene", "/api/v1/act", {"target": "a0-1", "action": "click"}),
    ("bridge", "/navigate", {"url": "about:blank"}),
    ("observer", "/api/action", {"action": "key", "value": "shift"}),
])
def test_a_json_route_refuses_a_body_that_does_not_say_it_is_json(session, service, path, body):
    base = {"osworld": session.state["osworld"], "desktopd": session.desktopd, "scene": session.scene,
            "bridge": session.bridge, "observer": session.state["observer"]}[service]
    raw = json.dumps(body).encode()
    for content_type in ("text/plain;charset=UTF-8", "application/x-www-form-urlencoded", None):
        # (None: the header empty, which is as good as none; urllib sends a form's type for no header.)
        resp = http("POST", base + path, raw=raw, headers={"Content-Type": content_type or ""})
        assert resp.status == 415, (service, path, content_type, resp.status, resp.body[:200])
        error = resp.json()["error"]
        if service == "observer":  # (OS Screen Observer's shape for /api/action: the message alone)
            error = {"code": "unsupported_media_type", "message": error}
        assert error["code"] == "unsupported_media_type" and "application/json" in error["message"]
