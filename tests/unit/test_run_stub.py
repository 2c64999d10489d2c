"""deskbox.run.stub on its own: each API's answer to a script's turns, the coordinates in
the space each API's agents read, conversations told apart, and bad requests refused
with the API's error shape. (tests/test_osworld_agents.py runs OSWorld's agents on it.)"""

from __future__ import annotations

import base64
import contextlib
import io
import json

import pytest
from aiohttp.test_utils import TestClient, TestServer
from PIL import Image

from deskbox.run import stub

SCRIPT = stub.Script(screen=(1920, 1080), turns=[{"click": [960, 540]}, {"type": "hi"}, "DONE"])


def png(size: tuple[int, int]) -> str:
    out = io.BytesIO()
    Image.new("RGB", size).save(out, "PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode()


@contextlib.asynccontextmanager
async def served():
    client = TestClient(TestServer(stub.make_app(SCRIPT)))
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()


def chat(system: str, history: list[dict], image_size: tuple[int, int] = (1920, 1080)) -> dict:
    return {"model": "m", "messages": [{"role": "system", "content": system}, *history,
                                       {"role": "user", "content": [{"type": "text", "text": "next?"},
                                                                    {"type": "image_url",
                                                                     "image_url": {"url": png(image_size)}}]}]}


async def answer(client: TestClient, path: str, body: dict) -> dict:
    resp = await client.post(path, json=body)
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def test_chat_answers_promptagents_code_then_done_for_each_conversation():
    async with served() as client:
        first = await answer(client, "/v1/chat/completions", chat("You are an agent. Task: A", []))
        assert first["choices"][0]["message"]["content"] == "```python\nimport pyautogui\npyautogui.click(960, 540)\n```"
        said = [{"role": "assistant", "content": first["choices"][0]["message"]["content"]}]
        second = await answer(client, "/v1/chat/completions", chat("You are an agent. Task: A", said))
        assert "pyautogui.typewrite('hi')" in second["choices"][0]["message"]["content"]
        # Another task's conversation starts from the first turn.
        other = await answer(client, "/v1/chat/completions", chat("You are an agent. Task: B", []))
        assert "click(960, 540)" in other["choices"][0]["message"]["content"]
        third = await answer(client, "/v1/chat/completions", chat("You are an agent. Task: A", said * 2))
        assert third["choices"][0]["message"]["content"] == "```DONE```"
        after = await answer(client, "/v1/chat/completions", chat("You are an agent. Task: A", said * 3))
        assert after["choices"][0]["message"]["content"] == "```DONE```"  # the script has ended
        asked = await (await client.get("/stub/requests")).json()
        assert [r["turn"] for r in asked["requests"]] == [0, 1, 0, 2, 3]


async def test_uitars_prompt_gets_its_dialect_in_the_screenshots_pixels():
    async with served() as client:
        body = chat("Output: Action: click(start_box='<|box_start|>(x1,y1)<|box_end|>')", [], image_size=(960, 540))
        text = (await answer(client, "/v1/chat/completions", body))["choices"][0]["message"]["content"]
        assert text.endswith("Action: click(start_box='(480,270)')"), text


async def test_computer_tools_get_points_in_the_display_they_declare():
    async with served() as client:
        responses = await answer(client, "/v1/responses", {
            "model": "computer-use-preview", "input": [{"role": "user", "content": [{"type": "input_text", "text": "go"}]}],
            "tools": [{"type": "computer_use_preview", "display_width": 1280, "display_height": 720}]})
        [call] = responses["output"]
        assert call["type"] == "computer_call" and call["action"] == {"type": "click", "button": "left", "x": 640, "y": 360}
        assert responses["usage"]["input_tokens"] >= 0
        claude = await answer(client, "/v1/messages", {
            "model": "claude", "max_tokens": 10, "messages": [{"role": "user", "content": [{"type": "text", "text": "go"}]}],
            "tools": [{"name": "computer", "type": "computer_20250124", "display_width_px": 1280,
                       "display_height_px": 720}]})
        assert claude["content"][-1] == {"type": "tool_use", "id": claude["content"][-1]["id"], "name": "computer",
                                         "input": {"action": "left_click", "coordinate": [640, 360]}}
        assert claude["stop_reason"] == "tool_use"


async def test_a_request_that_is_not_one_is_refused_in_the_apis_error_shape():
    async with served() as client:
        resp = await client.post("/v1/chat/completions", data=b"{not json", headers={"Content-Type": "application/json"})
        assert resp.status == 400 and (await resp.json())["error"]["code"] == "invalid_json"
        resp = await client.post("/v1/messages", json={"model": "m", "messages": []})
        assert resp.status == 400 and "messages" in (await resp.json())["error"]["message"]
        resp = await client.post("/v1/responses", json=[1, 2])
        assert resp.status == 400


async def test_a_web_page_in_the_session_cannot_call_the_stub():
    async with served() as client:
        body = chat("Task: A", [])
        for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
            resp = await client.post("/v1/chat/completions", json=body, headers=headers)
            assert resp.status == 403 and (await resp.json())["error"]["code"] == "forbidden_origin"
        resp = await client.get("/stub/requests", headers={"Sec-Fetch-Site": "same-site"})
        assert resp.status == 403
        assert (await (await client.get("/stub/requests")).json())["requests"] == []  # nothing was answered


def test_a_script_is_checked_before_anything_runs(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps([{"click": [1, 2]}, "DONE"]))
    assert stub.Script.read(path).turns == [{"click": [1, 2]}, "DONE"]
    for bad in ([{"click": [1]}], ["STOP"], [{"scroll": 3}], {"turns": [], "colour": 1}):
        path.write_text(json.dumps(bad))
        with pytest.raises(stub.ScriptError):
            stub.Script.read(path)
    path.write_text("{")
    with pytest.raises(stub.ScriptError):
        stub.Script.read(path)
