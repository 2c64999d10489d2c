"""The pure parts of /metrics: which label a request gets, apps that keep their counts
apart in one process, and the session's counts as metrics."""

from __future__ import annotations

from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from deskbox.common.metrics import UNMATCHED, Metrics, method_label, route_label
from deskbox.scene.metrics import session_families


async def _label(method: str, path: str) -> str:
    app = web.Application()

    async def handler(request: web.Request) -> web.Response:
        return web.Response()

    app.router.add_post("/api/v1/windows/{id}/focus", handler)
    app.freeze()
    match = await app.router.resolve(make_mocked_request(method, path, app=app))
    return route_label(match.route)


async def test_a_request_is_labelled_by_its_routes_pattern_not_its_path():
    assert await _label("POST", "/api/v1/windows/42/focus") == "/api/v1/windows/{id}/focus"


async def test_an_unknown_path_and_a_wrong_method_are_both_unmatched():
    assert await _label("GET", "/no/such/path") == UNMATCHED
    assert await _label("GET", "/api/v1/windows/42/focus") == UNMATCHED


def test_methods_outside_http_s_own_share_one_label():
    assert method_label("POST") == "POST"
    assert method_label("BREW") == "other"


def _samples(metrics: Metrics) -> dict:
    text = generate_latest(metrics.registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_two_apps_in_one_process_count_apart():
    first, second = Metrics(), Metrics()
    first.observe("/a", "GET", 200, 0.01)
    first.observe("/a", "GET", 200, 0.02)
    second.observe("/a", "GET", 200, 0.01)
    key = ("deskbox_http_requests_total", (("method", "GET"), ("route", "/a"), ("status", "200")))
    assert _samples(first)[key] == 2
    assert _samples(second)[key] == 1


def test_the_sessions_reply_gives_restarts_per_child_and_resets():
    state = {"resets": 2, "children": {"desktopd": {"restarts": 0}, "chromium": {"restarts": 3}}}
    restarts, resets = session_families(state)
    assert {s.labels["child"]: s.value for s in restarts.samples} == {"desktopd": 0, "chromium": 3}
    assert [s.value for s in resets.samples] == [2]
    assert restarts.name == "deskbox_session_restarts" and resets.name == "deskbox_session_resets"
