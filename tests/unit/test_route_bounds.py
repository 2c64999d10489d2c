"""Every route's longest time (deskbox.common.openapi.Longest): enforced with a 504 that
names it, the work's ``finally`` blocks run before the answer, a per-request bound taken
from the validated body, and the bound published in the OpenAPI document. A real aiohttp
server with handlers that overrun on purpose; the services' own tables are checked for a
bound on every route."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import time

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from pydantic import BaseModel, Field, model_validator

from deskbox.common.openapi import QUICK_S, Longest, Route, add_routes, openapi_document
from deskbox.common.web import error_middleware, json_ok, read_body


class Hold(BaseModel):
    seconds: float = Field(ge=0, le=10)

    @model_validator(mode="after")
    def _counted(self) -> "Hold":
        VALIDATED.append(self.seconds)
        return self


VALIDATED: list[float] = []  # each Hold validated


def _routes(log: list[str]) -> list[Route]:
    async def overrun(request: web.Request) -> web.Response:
        log.append("pressed")
        try:
            await asyncio.sleep(30)
        finally:
            log.append("released")
        return json_ok({})

    async def hold(request: web.Request) -> web.Response:
        req = await read_body(request, Hold)
        log.append("pressed")
        try:
            await asyncio.sleep(req.seconds * 3)  # overruns its own bound on purpose
        finally:
            log.append("released")
        return json_ok({"held": req.seconds})

    async def own_timeout(request: web.Request) -> web.Response:
        await asyncio.wait_for(asyncio.sleep(5), 0.05)
        return json_ok({})

    async def quick(request: web.Request) -> web.Response:
        return json_ok({"ok": True})

    holding = Longest(8, lambda body, query: body.seconds + 0.3, "its seconds plus 0.3 s")
    return [
        Route("POST", "/overrun", overrun, "Overruns", longest=Longest(0.4)),
        Route("POST", "/overrun_watched", overrun, "Overruns, stopped when its client leaves",
              longest=Longest(0.4), stops_when_client_leaves=True),
        Route("POST", "/hold", hold, "Holds three times as long as asked", body=Hold, longest=holding),
        Route("POST", "/own_timeout", own_timeout, "Its own wait times out"),
        Route("GET", "/quick", quick, "Answers at once"),
    ]


@contextlib.asynccontextmanager
async def served():
    log: list[str] = []
    app = web.Application(middlewares=[error_middleware])
    add_routes(app, _routes(log))
    client = TestClient(TestServer(app))
    await client.start_server()
    try:
        yield client, log
    finally:
        await client.close()


async def _post(client: TestClient, path: str, body: object = None) -> tuple[int, dict, float]:
    started = time.monotonic()
    resp = await client.post(path, json=body)
    data = await resp.json()
    return resp.status, data, time.monotonic() - started


@pytest.mark.parametrize("path", ["/overrun", "/overrun_watched"])
async def test_work_past_its_longest_time_is_stopped_and_answers_504_after_letting_go(path):
    async with served() as (client, log):
        status, data, took = await _post(client, path)
        assert status == 504, data
        assert data["error"]["code"] == "deadline_exceeded"
        assert "0.4 s" in data["error"]["message"] and data["error"]["context"] == {"longest_s": 0.4}
        assert 0.35 < took < 3, took
        assert log == ["pressed", "released"]  # let go before the answer was given


async def test_a_per_request_bound_comes_from_the_validated_body():
    async with served() as (client, log):
        status, data, took = await _post(client, "/hold", {"seconds": 0.5})
        assert status == 504 and data["error"]["context"] == {"longest_s": 0.8}, data
        assert 0.75 < took < 3, took  # its own 0.8 s, not the route's 8 s
        assert log == ["pressed", "released"]
        log.clear()
        VALIDATED.clear()
        status, data, _ = await _post(client, "/hold", {"seconds": 0.05})
        assert status == 200 and data == {"held": 0.05}
        # The bound came from the body the handler got: validated once, not twice.
        assert VALIDATED == [0.05]


async def test_an_invalid_body_is_still_a_400_under_the_routes_bound():
    async with served() as (client, log):
        status, data, took = await _post(client, "/hold", {"seconds": 99})
        assert status == 400 and data["error"]["code"] == "validation_error", data
        assert not log and took < 3


async def test_a_handlers_own_timeout_is_not_taken_for_the_routes_bound():
    async with served() as (client, _):
        status, data, _ = await _post(client, "/own_timeout")
        assert status != 504 and "longest_s" not in (data["error"].get("context") or {}), data
        resp = await client.get("/quick")
        assert resp.status == 200  # and the service goes on serving


def test_the_document_publishes_each_bound_and_its_rule():
    doc = openapi_document("t", "0", _routes([]))
    ops = {(m.upper(), p): op for p, item in doc["paths"].items() for m, op in item.items()}
    assert ops[("POST", "/overrun")]["x-deskbox-longest-s"] == 0.4
    assert ops[("GET", "/quick")]["x-deskbox-longest-s"] == QUICK_S
    hold = ops[("POST", "/hold")]
    assert hold["x-deskbox-longest-s"] == 8
    assert hold["description"] == "Takes at most its seconds plus 0.3 s (8 s at most)."
    assert "504" in hold["responses"]


def test_a_per_request_bound_must_say_its_rule():
    with pytest.raises(ValueError, match="says"):
        Longest(5, lambda body, query: 1)


SERVICES = ["deskbox.desktopd.app", "deskbox.aggregator.app", "deskbox.observer.app", "deskbox.bridge.app",
            "deskbox.osworld.app", "deskbox.session.control"]


@pytest.mark.parametrize("module", SERVICES)
def test_every_route_of_every_service_has_a_bound_within_an_hour(module):
    routes = importlib.import_module(module).ROUTES
    assert routes
    for route in routes:
        assert 0 < route.longest.seconds <= 3600, (route.method, route.path, route.longest)
        if route.longest.per_request is not None:
            assert route.body is not None or route.query is not None, (route.method, route.path)
