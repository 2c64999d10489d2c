"""``GET /metrics`` on every service of a real session: Prometheus text, each request
counted once under its route's pattern (an unknown path under ``unmatched``, never its
own), and what each service counts of its own: the scene's builds and actions, its
session's restarts, desktopd's input and screenshots."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import urllib.error

import pytest
from prometheus_client.parser import text_string_to_metric_families

from deskbox.common.metrics import CONTENT_TYPE, UNMATCHED
from tests.conftest import open_fixture
from tests.support import PageServer, Response, Session, free_port, http, wait_until

pytestmark = pytest.mark.desktop

Samples = dict[tuple[str, frozenset], float]
TOKEN = secrets.token_hex(8)


@pytest.fixture(scope="module")
def osworld(single: Session):
    """An OSWorld server for the session, with a bearer token, as the session user
    (it refuses to run as root)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = single.launch([sys.executable, "-m", "deskbox.osworld", "--listen", f"127.0.0.1:{port}",
                          "--desktopd", single.desktopd],
                         env=single.app_env(DESKBOX_TOKEN=TOKEN), stdout=subprocess.DEVNULL)

    def up() -> bool:
        try:
            return http("GET", base + "/health", timeout=2).status == 200
        except (urllib.error.URLError, ConnectionError):
            return False

    try:
        wait_until(up, 30, 0.2, what="the OSWorld server")
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)


def get(url: str, method: str = "GET") -> Response:
    """With the OSWorld server's token: the services without one take no notice of it."""
    return http(method, url, headers={"Authorization": f"Bearer {TOKEN}"})


@pytest.fixture
def services(single: Session, osworld: str) -> dict[str, str]:
    return {"desktopd": single.desktopd, "bridge": single.bridge, "scene": single.scene, "osworld": osworld}


def scrape(base: str) -> Samples:
    resp = get(base + "/metrics")
    assert resp.status == 200, resp.body[:300]
    assert resp.headers["content-type"] == CONTENT_TYPE
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(resp.body.decode()) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def requests(samples: Samples, route: str, method: str, status: int) -> float:
    return value(samples, "deskbox_http_requests_total", route=route, method=method, status=str(status))


SERVICES = ["desktopd", "bridge", "scene", "osworld"]
# A route of each service that nothing else in the session calls, with two real paths.
KNOWN_ROUTES = {
    "desktopd": ("POST", "/api/v1/windows/{id}/focus", ["/api/v1/windows/nope-1/focus",
                                                        "/api/v1/windows/nope-2/focus"]),
    "bridge": ("GET", "/openapi.json", ["/openapi.json", "/openapi.json"]),
    "scene": ("DELETE", "/api/v1/session/snapshot/{name}", ["/api/v1/session/snapshot/nope-1",
                                                            "/api/v1/session/snapshot/nope-2"]),
    "osworld": ("GET", "/openapi.json", ["/openapi.json", "/openapi.json"]),
}


@pytest.mark.parametrize("service", SERVICES)
def test_metrics_is_prometheus_text_with_requests_and_uptime(services, service):
    samples = scrape(services[service])
    names = {name for name, _ in samples}
    assert "deskbox_uptime_seconds" in names and "process_start_time_seconds" in names
    assert value(samples, "deskbox_uptime_seconds") > 0
    # The scrape before this one is counted under /metrics itself.
    after = scrape(services[service])
    assert requests(after, "/metrics", "GET", 200) >= 1


@pytest.mark.parametrize("service", SERVICES)
def test_each_request_to_a_route_counts_once_under_its_pattern(services, service):
    base = services[service]
    method, route, paths = KNOWN_ROUTES[service]
    before = scrape(base)
    statuses = [get(base + path, method).status for path in paths]
    assert len(set(statuses)) == 1, statuses
    after = scrape(base)
    status = statuses[0]
    assert requests(after, route, method, status) - requests(before, route, method, status) == len(paths)
    count = "deskbox_http_request_duration_seconds_count"
    assert value(after, count, route=route, method=method) - value(before, count, route=route, method=method) \
        == len(paths)
    if paths[0] != route:
        assert not [labels for _, labels in after if ("route", paths[0]) in labels]


@pytest.mark.parametrize("service", SERVICES)
def test_unknown_paths_count_under_one_unmatched_label(services, service):
    base = services[service]
    before = scrape(base)
    for i in range(3):
        assert get(f"{base}/no/such/path-{i}").status == 404
    after = scrape(base)
    assert requests(after, UNMATCHED, "GET", 404) - requests(before, UNMATCHED, "GET", 404) == 3
    assert not [labels for _, labels in after if any(v.startswith("/no/such") for _, v in labels)]


def test_metrics_asks_for_the_token_when_one_is_set(services):
    base = services["osworld"]
    assert http("GET", base + "/metrics").status == 401
    assert http("GET", base + "/metrics", headers={"Authorization": "Bearer wrong"}).status == 401
    assert requests(scrape(base), "/metrics", "GET", 401) >= 2


def test_metrics_is_in_each_services_openapi_document(services):
    documents = {"desktopd": "/api/v1/openapi.json", "bridge": "/openapi.json", "scene": "/api/v1/openapi.json",
                 "osworld": "/openapi.json"}
    for service, path in documents.items():
        operation = get(services[service] + path).json()["paths"]["/metrics"]["get"]
        assert "text/plain" in operation["responses"]["200"]["content"], service


def test_an_agent_turn_scene_counts_one_build_of_its_mode(single):
    labels = {"mode": "agent-turn", "outcome": "ok"}
    before = scrape(single.scene)
    assert http("GET", single.scene + "/api/v1/scene?mode=agent-turn", timeout=60).status == 200
    after = scrape(single.scene)
    assert value(after, "deskbox_scene_builds_total", **labels) - value(before, "deskbox_scene_builds_total",
                                                                        **labels) == 1
    count = "deskbox_scene_build_seconds_count"
    assert value(after, count, mode="agent-turn") - value(before, count, mode="agent-turn") == 1
    assert value(after, "deskbox_scene_build_seconds_sum", mode="agent-turn") > 0


def test_an_act_on_an_element_counts_under_its_action(single, pages: PageServer):
    open_fixture(single, pages, "input.html")

    def field():
        scene = http("GET", single.scene + "/api/v1/scene?mode=agent-turn", timeout=60).json()
        return next((e for e in scene["ax"] if e["role"] == "textbox" and e["source"] == "cdp"), None)

    target = wait_until(field, 20, 0.3, what="a text field of the fixture page")
    before = scrape(single.scene)
    resp = http("POST", single.scene + "/api/v1/act", {"target": target["id"], "action": "focus"})
    assert resp.status == 200, resp.body
    # An act on an element that never existed is refused, and not counted.
    assert http("POST", single.scene + "/api/v1/act", {"target": "a999-999999", "action": "focus"}).status >= 400
    # act_and_observe acts through the same Actor: counted too.
    resp = http("POST", single.scene + "/api/v1/act_and_observe", {"target": target["id"], "action": "focus"})
    assert resp.status == 200, resp.body
    after = scrape(single.scene)
    assert value(after, "deskbox_scene_actions_total", action="focus") \
        - value(before, "deskbox_scene_actions_total", action="focus") == 2


def test_the_scene_reports_the_session_childrens_restarts(single):
    children = http("GET", single.scene + "/api/v1/session").json()["children"]
    assert {"desktopd", "bridge", "chromium"} <= set(children)
    samples = scrape(single.scene)
    for name, child in children.items():
        assert value(samples, "deskbox_session_restarts_total", child=name) == child["restarts"], name
    assert ("deskbox_session_resets_total", frozenset()) in samples


def test_desktopd_counts_pointer_actions_and_screenshots(single):
    pointer = {"device": "pointer", "action": "move"}
    # The scene watches the screen in raw RGB; a WebP is this test's alone.
    shot = {"format": "webp", "outcome": "sent"}
    before = scrape(single.desktopd)
    for x in (100, 200):
        single.pointer(action="move", display=0, x=x, y=100)
    assert single.get("/api/v1/screenshot?format=webp").status == 200
    after = scrape(single.desktopd)
    inputs, shots = "deskbox_desktopd_input_actions_total", "deskbox_desktopd_screenshots_total"
    assert value(after, inputs, **pointer) - value(before, inputs, **pointer) == 2
    assert value(after, shots, **shot) - value(before, shots, **shot) == 1
