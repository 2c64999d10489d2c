"""The MCP server against a real session: ``deskbox mcp`` as a subprocess spoken to with
the SDK's stdio client (tools, observe, find, act, screenshot, errors as tool errors),
and streamable HTTP at the scene aggregator's /mcp (its tools, and its bearer token)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import re
import subprocess
import sys
from typing import get_args

import httpx2
import mcp
import pytest
from aiohttp import web
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from PIL import Image

from deskbox.aggregator.app import SceneConfig, create_app
from deskbox.api.scene import ActRequest
from tests.conftest import open_fixture
from tests.support import ROOT, free_port, http

pytestmark = pytest.mark.desktop

TOOLS = {"observe", "screenshot", "find", "describe", "act", "pointer", "keyboard", "wait_for", "assert_state",
         "windows", "tabs", "navigate", "computer"}


def stdio(session) -> mcp.Client:
    """``python -m deskbox.mcp --state-file ...``: what an MCP host's config starts."""
    return mcp.Client(mcp.StdioServerParameters(command=sys.executable, args=[
        "-m", "deskbox.mcp", "--state-file", str(session.state_file)], cwd=str(ROOT)))


@contextlib.asynccontextmanager
async def scene_with_token(session, token: str):
    """A scene aggregator of the session's desktopd and bridge, in this process, with a token."""
    config = SceneConfig(desktopd=session.desktopd, bridge=session.bridge, atspi=False, token=token, watch=False)
    runner = web.AppRunner(create_app(config), access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def find_submit(client: mcp.Client) -> dict:
    found = await client.call_tool("find", {"selector": 'button[name="Submit"]'})
    assert not found.is_error, found.content
    return found.structured_content["matches"][0]


async def test_every_tool_is_listed_with_a_schema_a_description_and_hints(single):
    async with stdio(single) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed) == TOOLS
    for tool in listed.values():
        assert tool.input_schema["type"] == "object" and "oneOf" not in tool.input_schema, tool.name
        assert len(tool.description) > 40, tool.name
        hints = tool.annotations
        assert None not in (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint), tool.name
    for name in ("observe", "screenshot", "find", "describe", "wait_for", "assert_state", "windows", "tabs"):
        assert listed[name].annotations.read_only_hint, name
    for name in ("act", "pointer", "keyboard", "computer", "navigate"):
        hints = listed[name].annotations
        assert not hints.read_only_hint and hints.destructive_hint, name
    # act offers every action the scene's ActRequest allows, from the model itself.
    act = listed["act"].input_schema
    assert act["properties"]["action"]["enum"] == list(get_args(ActRequest.model_fields["action"].annotation))
    assert act["required"] == ["target"]
    assert set(listed["computer"].input_schema["properties"]["action"]["enum"]) >= {"left_click", "type", "key",
                                                                                    "screenshot", "scroll"}


async def test_observe_answers_prompt_text_with_ids_and_then_only_what_changed(single, pages):
    open_fixture(single, pages, "input.html")
    async with stdio(single) as client:
        first = await client.call_tool("observe", {})
        assert not first.is_error, first.content
        text = first.content[0].text
        token = first.structured_content["token"]
        assert text.startswith(f"token {token}")
        assert re.search(r"a0-\d+", text) and "Submit" in text and "Other" in text
        again = await client.call_tool("observe", {"since": token})
    assert not again.is_error, again.content
    assert again.structured_content["base_token"] == token and again.structured_content["token"] != token


async def test_find_gives_the_button_and_act_clicks_it(single, pages):
    open_fixture(single, pages, "input.html")
    async with stdio(single) as client:
        button = await find_submit(client)
        assert button["role"] == "button" and button["name"] == "Submit" and button["id"].startswith("a0-")
        acted = await client.call_tool("act", {"target": button["id"]})
    assert not acted.is_error, acted.content
    assert acted.structured_content["receipt"]["ok"] is True
    pages.wait_for(type="click", target="submit")


async def test_describe_reads_a_window_in_prose_and_says_when_there_is_no_model(single, pages):
    open_fixture(single, pages, "input.html")
    async with stdio(single) as client:
        said = await client.call_tool("describe", {})
        asked = await client.call_tool("describe", {"vlm": True})
    assert not said.is_error, said.content
    assert "Submit" in said.content[0].text and said.structured_content["text"] == said.content[0].text
    assert asked.is_error and asked.structured_content["error"]["code"] == "vlm_not_configured"
    assert "--vlm-url" in asked.structured_content["error"]["message"]


async def test_a_screenshot_is_an_image_block_of_the_display_size(single):
    async with stdio(single) as client:
        shot = await client.call_tool("screenshot", {"display": 0})
        marked = await client.call_tool("screenshot", {"marks": True})
    assert not shot.is_error, shot.content
    image = next(c for c in shot.content if c.type == "image")
    assert image.mime_type == "image/png"
    png = Image.open(io.BytesIO(base64.b64decode(image.data)))
    assert png.format == "PNG" and png.size == (1280, 800)
    marked_png = Image.open(io.BytesIO(base64.b64decode(next(c for c in marked.content if c.type == "image").data)))
    assert marked_png.size == (1280, 800)


async def test_the_other_tools_drive_and_check_the_session(single, pages):
    open_fixture(single, pages, "input.html")
    async with stdio(single) as client:
        async def ok(name: str, args: dict):
            result = await client.call_tool(name, args)
            assert not result.is_error, (name, result.content)
            return result

        tabs = (await ok("tabs", {})).structured_content["tabs"]
        tab = next(t for t in tabs if t["url"].endswith("/input.html"))
        pages.clear()
        await ok("navigate", {"url": pages.url("input.html?again"), "tab": tab["id"]})
        waited = await ok("wait_for", {"any_of": [{"type": "url_matches", "regex": "again"}], "timeout_ms": 15000})
        assert waited.structured_content["matched"] is True
        pages.wait_for(type="load", page="/input.html", timeout=20)
        checked = await ok("assert_state", {"predicates": [{"kind": "element_exists",
                                                             "selector": 'button[name="Other"]'}]})
        assert checked.structured_content["all_passed"] is True
        other = (await ok("find", {"selector": 'button[name="Other"]'})).structured_content["matches"][0]
        x, y, w, h = other["bbox"]
        await ok("pointer", {"action": "click", "x": x + w / 2, "y": y + h / 2})
        pages.wait_for(type="click", target="other")
        await ok("keyboard", {"action": "key", "keys": "Tab"})
        pages.wait_for(type="keydown", key="Tab")
        moved = await ok("computer", {"action": "mouse_move", "coordinate": [x + 5, y + 5]})
        assert any(c.type == "image" for c in moved.content)
        where = await ok("computer", {"action": "cursor_position"})
        assert where.content[0].text == f"X={round(x + 5)},Y={round(y + 5)}"
        windows = (await ok("windows", {})).structured_content
        assert windows["displays"][0]["size"] == [1280, 800]


async def test_failures_come_back_as_tool_errors_with_the_error_body(single, pages):
    open_fixture(single, pages, "input.html")
    async with stdio(single) as client:
        unknown = await client.call_tool("act", {"target": "a0-999999"})
        invalid = await client.call_tool("act", {"target": "button"})
        no_text = await client.call_tool("act", {"target": "a0-1", "action": "type"})
        no_tool = await client.call_tool("teleport", {})
        # ... and the server goes on serving.
        assert not (await client.call_tool("windows", {})).is_error
    assert unknown.is_error and unknown.structured_content["status"] == 404
    error = unknown.structured_content["error"]
    assert error["code"] == "unknown_element" and "a0-999999" in error["message"]
    assert set(error) >= {"code", "message", "recoverable", "suggested_next_tool", "context"}
    assert '"unknown_element"' in unknown.content[0].text
    assert invalid.is_error and invalid.structured_content["error"]["code"] == "validation_error"
    assert no_text.is_error and "type needs text" in no_text.structured_content["error"]["message"]
    assert no_tool.is_error and no_tool.structured_content["error"]["code"] == "unknown_tool"


# Hosts of today open with the initialize handshake (legacy); "auto" asks for 2026-07-28 first.
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_scene_serves_mcp_over_http(single, pages, mode):
    open_fixture(single, pages, "input.html")
    async with mcp.Client(single.scene + "/mcp", mode=mode) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        observed = await client.call_tool("observe", {"interactive": True})
        assert not observed.is_error, observed.content
        assert "Submit" in observed.content[0].text
        button = await find_submit(client)
        acted = await client.call_tool("act", {"target": button["id"]})
        assert not acted.is_error, acted.content
    await asyncio.to_thread(pages.wait_for, type="click", target="submit")


async def test_mcp_over_http_takes_the_scenes_token(single):
    async with scene_with_token(single, "s3cret") as scene:
        refused = await asyncio.to_thread(http, "POST", scene + "/mcp", {"jsonrpc": "2.0", "id": 1,
                                                                          "method": "tools/list"})
        assert refused.status == 401 and refused.json()["error"]["code"] == "unauthorized"
        with pytest.raises(ExceptionGroup) as caught:
            async with mcp.Client(scene + "/mcp") as client:
                await client.list_tools()
        assert caught.group_contains(MCPError)
        authorized = httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"})
        async with authorized, mcp.Client(streamable_http_client(scene + "/mcp", http_client=authorized)) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            # The tools call back into this scene, and on to desktopd, with the same token.
            windows = await client.call_tool("windows", {})
            assert not windows.is_error, windows.content
            assert any(w["app_id"] == "chromium" for w in windows.structured_content["windows"])
            text = await client.call_tool("observe", {})
            assert not text.is_error, text.content


INSPECTOR = ROOT / ".stamps" / "npm"  # scripts/install-deps installs the MCP Inspector there


def inspector(session, *args: str) -> dict:
    """The MCP Inspector's CLI (npm's @modelcontextprotocol/inspector, run with npx) on
    ``deskbox mcp``: a client nobody here wrote."""
    assert (INSPECTOR / "node_modules" / ".bin" / "mcp-inspector").exists(), "run scripts/install-deps"
    done = subprocess.run(["npx", "--no-install", "mcp-inspector", "--cli", sys.executable, "-m", "deskbox.mcp",
                           "--state-file", str(session.state_file), *args], cwd=str(INSPECTOR), capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_the_mcp_inspector_lists_the_tools_and_calls_one(single, pages):
    listed = inspector(single, "--method", "tools/list")
    assert {t["name"] for t in listed["tools"]} == TOOLS
    open_fixture(single, pages, "input.html")
    called = inspector(single, "--method", "tools/call", "--tool-name", "find",
                       "--tool-arg", 'selector=button[name="Submit"]')
    assert not called.get("isError")
    found = json.loads(called["content"][0]["text"])
    assert found["count"] == 1 and found["matches"][0]["name"] == "Submit"
