"""Mock mode (``deskbox up --mock``): the scene's API and OS Screen Observer's, answered
from a scenario with no desktop. Agent-like scripts complete the two example tasks,
through deskbox's client and through the observer API; the oracles tell success from
failure; and ``deskbox up --mock`` serves it from the command line."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time

import mcp
import pytest
from aiohttp import web

from deskbox import ActionFailedError, AsyncClient, answers
from deskbox.mock.app import create_app
from deskbox.mock.scenario import load
from deskbox.observer.app import ObserverConfig
from deskbox.observer.app import create_app as create_observer
from tests.support import ROOT, free_port, http, wait_until


@contextlib.asynccontextmanager
async def serving(*apps: web.Application):
    runners, urls = [], []
    for app in apps:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        runners.append(runner)
        urls.append(f"http://127.0.0.1:{port}")
    try:
        yield urls
    finally:
        for runner in runners:
            await runner.cleanup()


async def the_id(desk: AsyncClient, selector: str) -> str:
    found = await desk.find(selector)
    assert found.count == 1, found
    return found.matches[0].id


async def test_an_agent_signs_in_after_a_wrong_password():
    async with serving(create_app(load("login"))) as (base,), AsyncClient(base, base, None) as desk:
        started = time.perf_counter()
        assert "textbox 'Username'" in await desk.description() and "Username" in await desk.text()
        user = await the_id(desk, "textbox[name=Username]")
        password = await the_id(desk, "textbox[name=Password]")
        submit = await the_id(desk, 'button[name="Sign in"]')
        await desk.act(user, "type", text="ada")
        await desk.act(password, "type", text="wrong")
        seen = await desk.act_and_observe(submit)
        assert "Wrong username or password" in [c["fields"]["name"]["to"] for c in seen.changes["changed"]
                                                if "name" in c["fields"]]
        oracle = await desk.request("scene", "GET", "/api/v1/oracle")
        assert oracle["failure"] is True and oracle["success"] is False and oracle["state"] == "form"
        # A password field's value is never shown.
        assert (await desk.find("textbox[name=Password]")).matches[0].value == "\u2022" * 8
        await desk.act(password, "clear_text")
        await desk.act(password, "type", text="lovelace")
        await desk.act(submit)
        came = await desk.wait_for([{"type": "element_appears", "selector": 'heading[name="Welcome, ada"]'}],
                                   timeout_ms=2000)
        assert came.matched
        oracle = await desk.request("scene", "GET", "/api/v1/oracle")
        assert oracle["success"] is True and oracle["state"] == "welcome" and oracle["steps"] == 6
        with pytest.raises(ActionFailedError) as gone:
            await desk.act(submit)  # the form is gone: its button's id is stale
        assert gone.value.code == "stale_element"
        # desktopd's routes, served by the mock, answer as desktopd's do.
        moved = await desk.pointer("move", 5, 5)
        assert moved.ok and moved.pointer.x == 5 and answers.undeclared(moved) == []
        for answer in (await desk.keyboard("key", keys="Escape"), await desk.tree(), await desk.displays()):
            assert answers.undeclared(answer) == []
        print(f"login scenario, 6 steps and 2 oracle reads: {1000 * (time.perf_counter() - started):.0f} ms")


async def test_the_settings_task_through_os_screen_observers_api():
    mock = create_app(load("settings"))
    async with serving(mock) as (base,):
        async with serving(create_observer(ObserverConfig(scene=base, desktopd=base, bridge=None))) as (oso,):
            async def call(method, path, body=None, status=200, **params):
                # (The servers run in this loop: a blocking request goes to a thread.)
                query = "&".join(f"{k}={v}" for k, v in params.items())
                resp = await asyncio.to_thread(http, method, f"{oso}{path}{'?' + query if query else ''}", body)
                assert resp.status == status, resp.body[:300]
                return resp.json()

            async def mock(method, path):
                return (await asyncio.to_thread(http, method, base + path)).json()

            windows = (await call("GET", "/api/windows"))["windows"]
            assert [w["title"] for w in windows] == ["Preferences", "Editor"]  # focused first
            dark = (await call("GET", "/api/find_element", selector="switch"))["element_id"]
            assert (await call("POST", "/api/element/click", {"element_id": dark}))["changed"] is True
            await call("POST", "/api/element/select", {"selector": "combobox", "option_name": "Large"})
            apply_bounds = (await call("GET", "/api/find_element", selector="button[name=Apply]"))["bounds"]
            # click_at goes to desktopd's route, which the mock serves: the element at the point.
            x, y = apply_bounds["x"] + apply_bounds["width"] // 2, apply_bounds["y"] + apply_bounds["height"] // 2
            assert (await call("POST", "/api/action", {"action": "click_at", "x": x, "y": y}))["success"]
            oracle = await mock("GET", "/api/v1/oracle")
            assert oracle["success"] is True and oracle["failure"] is False and oracle["state"] == "applied"
            await mock("POST", "/api/v1/mock/reset")
            await call("POST", "/api/element/click", {"selector": "button[name=Cancel]"})
            oracle = await mock("GET", "/api/v1/oracle")
            assert oracle["failure"] is True and oracle["success"] is False


async def test_bad_scenarios_and_what_mock_mode_cannot_do_are_clear(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ninitial_state: nowhere\nstates: {a: {windows: [{id: w, bounds: [0, 0, 1, 1]}]}}\n")
    with pytest.raises(Exception) as err:
        load(str(bad))
    assert "nowhere" in str(err.value) and getattr(err.value, "code", None) == "scenario_invalid"
    async with serving(create_app(load("login"))) as (base,):
        shot = await asyncio.to_thread(http, "GET", base + "/api/v1/screenshot")
        assert shot.status == 503 and shot.json()["error"]["code"] == "no_pixels"
        unknown = await asyncio.to_thread(http, "POST", base + "/api/v1/act", {"target": "a0-999", "action": "click"})
        assert unknown.status == 404 and unknown.json()["error"]["code"] == "unknown_element"
        # No desktop, no traces: said as such.
        for path, body in (("/api/v1/trace/start", {}), ("/api/v1/replay/step", {"replay_id": "x"}),
                           ("/api/v1/replay", {"trace": "x"})):
            resp = await asyncio.to_thread(http, "POST", base + path, body)
            assert resp.status == 501 and resp.json()["error"]["code"] == "not_served", (path, resp.body[:200])


def test_deskbox_up_mock_serves_a_scenario_and_its_observer_api():
    scene, observer = free_port(), free_port()
    proc = subprocess.Popen([sys.executable, "-m", "deskbox.cli", "up", "--mock", "login", "--scene-port",
                             str(scene), "--observer", "--observer-port", str(observer)], cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until(lambda: _up(f"http://127.0.0.1:{scene}/api/v1/health"), 20, what="the mock scene")
        text = http("GET", f"http://127.0.0.1:{scene}/api/v1/scene/text").body.decode()
        assert "Username" in text and "Sign in" in text
        assert http("GET", f"http://127.0.0.1:{observer}/api/windows").json()["count"] == 1
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "scenario 'login'" in out, out


def _up(url: str) -> bool:
    try:
        return http("GET", url, timeout=2).status == 200
    except OSError:
        return False


async def test_mcp_at_the_mock_types_with_its_pointer_and_keyboard_tools():
    async with serving(create_app(load("login"))) as (base,):
        async with mcp.Client(base + "/mcp") as client:
            observed = await client.call_tool("observe", {})
            assert not observed.is_error and "Username" in observed.content[0].text
            found = await client.call_tool("find", {"selector": "textbox[name=Username]"})
            x, y, w, h = found.structured_content["matches"][0]["bbox"]
            clicked = await client.call_tool("pointer", {"action": "click", "x": x + w / 2, "y": y + h / 2})
            assert not clicked.is_error, clicked.content
            typed = await client.call_tool("keyboard", {"action": "type", "text": "ada"})
            assert not typed.is_error, typed.content
        found = await asyncio.to_thread(http, "GET", base + "/api/v1/find?selector=textbox%5Bname%3DUsername%5D")
        assert found.json()["matches"][0]["value"] == "ada"  # (clicked into, then typed there)
