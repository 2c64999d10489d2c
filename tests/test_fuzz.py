"""Fuzzing every service through its own OpenAPI document (schemathesis): no server
error, no status the document does not declare, no answer past its operation's documented
longest time, and the session healthy afterwards with no key held.

CI runs a bounded number of examples per operation with a seed taken from the commit
(``tests.support.fuzz_seed``: printed in the header; ``DESKBOX_FUZZ_SEED`` sets it,
``DESKBOX_FUZZ_EXAMPLES`` and ``DESKBOX_FUZZ_PHASES`` the rest); ``make fuzz`` runs every
phase with many more. The coverage phase (each limit's edges) is make fuzz's only: it
sends every wait its longest valid timeout and every hold its longest duration, which
took the scene alone past 9 minutes here. Operations that run commands (the OSWorld server's
/execute, /run_python ...) get only invalid bodies: fuzzing them with valid ones would
run random programs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support import ROOT, PageServer, Session, free_port, fuzz_seed, http, wait_until

pytestmark = pytest.mark.desktop

EXAMPLES = os.environ.get("DESKBOX_FUZZ_EXAMPLES", "8")
SEED = fuzz_seed()
PHASES = os.environ.get("DESKBOX_FUZZ_PHASES", "examples,fuzzing")
# How long the fuzzer waits for an answer at most: longer than any bound the fuzzed
# operations document (a 100 s hold_key then its action's 60 s); each answer is checked
# against its own operation's bound (tests.support.fuzz_checks.within_its_longest_time).
# A 200's body is checked against the answer model its route declares (response_schema_conformance).
REQUEST_TIMEOUT_S = 300
RUNS_COMMANDS = r"^/(execute|run_python|run_bash_script|execute_with_verification|deskbox/chrome|setup/.*)$"


@pytest.fixture(scope="module")
def session(pages: PageServer):
    s = Session(["1024x768"], extra_args=["--url", pages.url("input.html"), "--osworld",
                                          "--osworld-port", str(free_port()), "--observer",
                                          "--observer-port", str(free_port()), "--user", "fuzz"])
    s.start()
    s.browser_window()
    yield s
    s.stop()


def fuzz(url: str, *extra: str) -> subprocess.CompletedProcess:
    st = os.path.join(os.path.dirname(sys.executable), "st")
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.support.fuzz_checks", "PYTHONPATH": str(ROOT)}
    checks = "no_internal_error,status_code_conformance,response_schema_conformance,within_its_longest_time"
    argv = [st, "run", url, "--checks", checks,
            "--max-examples", EXAMPLES, "--seed", SEED, "--phases", PHASES, "--workers", "1",
            "--request-timeout", str(REQUEST_TIMEOUT_S),
            "--generation-database", "none", "--no-color", *extra]
    return subprocess.run(argv, capture_output=True, text=True, cwd="/tmp", env=env, timeout=1800)


def assert_clean(done: subprocess.CompletedProcess, what: str) -> None:
    assert done.returncode == 0, f"{what}:\n{done.stdout[-60000:]}\n{done.stderr[-2000:]}"


def test_the_bridge(session):
    assert_clean(fuzz(session.bridge + "/openapi.json"), "the bridge")


def test_the_osworld_server(session):
    base = session.state["osworld"]
    assert_clean(fuzz(base + "/openapi.json", "--exclude-path-regex", RUNS_COMMANDS), "OSWorld server")
    assert_clean(fuzz(base + "/openapi.json", "--include-path-regex", RUNS_COMMANDS, "--mode", "negative"),
                 "OSWorld server, invalid bodies for what runs commands")


def test_the_scene(session):
    assert_clean(fuzz(session.scene + "/api/v1/openapi.json"), "the scene")


def test_the_observer_api(session):
    assert_clean(fuzz(session.state["observer"] + "/api/openapi.json"), "the OS Screen Observer-compatible API")


def test_desktopd(session):
    assert_clean(fuzz(session.desktopd + "/api/v1/openapi.json"), "desktopd")


def test_the_session_is_healthy_afterwards_and_holds_no_key(session, pages):
    for url in (session.desktopd + "/api/v1/health", session.scene + "/api/v1/health",
                session.state["osworld"] + "/health", session.state["observer"] + "/api/healthz"):
        wait_until(lambda u=url: http("GET", u).status == 200, 30, what=url)
    # The browser comes back if the fuzzing closed it (in OSWorld mode only on request).
    http("POST", session.state["osworld"] + "/deskbox/chrome", {"args": [pages.url("input.html")]})
    wait_until(lambda: http("GET", session.bridge + "/health").status == 200, 60, what="the browser")
    # Keys the fuzzing held on purpose (keyboard "down" without "up") are let go, as their
    # client would; nothing else may be left held. A menu it opened (a right click on the
    # tab strip, seed 87903) is closed as its client would close it: such a menu stays
    # open over whatever page the tab shows next, and takes the click meant for a field
    # (which /act then answers with 409 not_focused).
    assert session.post("/api/v1/input/release", {}).status == 200
    for _ in range(2):  # (a submenu, then its menu)
        assert session.post("/api/v1/keyboard", {"action": "key", "keys": ["Escape"]}).status == 200
    pages.clear()
    session.open_page(pages.url("input.html"))
    pages.wait_for(type="load", page="/input.html", timeout=30)
    # A browser the sweep closed was just started again: its page can load before Sway
    # maps its window, and until then the scene rightly says no window shows the tab.
    last: dict = {}

    def text_fields() -> list:
        last["scene"] = http("GET", session.scene + "/api/v1/scene?mode=agent-turn", timeout=60).json()
        return [e for e in last["scene"]["ax"] if e["role"] == "textbox" and e["source"] == "cdp"]

    try:
        fields = wait_until(text_fields, 30, 0.5, what="the page's text field in the scene")
    except TimeoutError:
        scene = last.get("scene") or {}
        raise AssertionError(json.dumps({
            "sources": scene.get("sources"),
            "scene apps": [{k: a.get(k) for k in ("name", "pid", "windows")} for a in scene.get("apps", [])],
            "desktopd windows": session.get("/api/v1/tree").json().get("windows"),
            "bridge tabs": [{k: t.get(k) for k in ("id", "title", "url", "type")}
                            for t in http("GET", session.bridge + "/tabs").json()],
        }, indent=1, default=str)) from None
    field = fields[0]
    for _ in range(3):
        resp = http("POST", session.scene + "/api/v1/act", {"target": field["id"], "action": "type", "text": "ab"})
        if resp.status != 409 or resp.json()["error"]["code"] != "not_focused":
            break
        # Another popup of the browser's own that the sweep opened took the click (one
        # run's seed left one the two Escapes above did not close; recoverable): its
        # client closes it and tries again. No key was sent.
        assert session.post("/api/v1/keyboard", {"action": "key", "keys": ["Escape"]}).status == 200
    assert resp.status == 200, (resp.body, session.get("/api/v1/tree").json().get("windows"))
    # Typed as asked: the input path works, and no modifier is stuck.
    assert pages.wait_for(type="input", value="ab", timeout=10)
