"""The MCP tool table without a desktop: every input schema is valid JSON Schema with an
object at its root (what MCP hosts take), the computer tool's one schema covers every
action of the union it is made from, and failures are tool errors, never exceptions."""

from __future__ import annotations

import json
from typing import get_args

import jsonschema

from deskbox import AsyncClient
from deskbox.computer.anthropic import HANDLERS
from deskbox.mcp import tools


def test_every_schema_is_valid_with_an_object_at_its_root():
    for tool in tools.TOOLS:
        jsonschema.Draft202012Validator.check_schema(tool.schema)
        assert tool.schema["type"] == "object" and not {"oneOf", "anyOf", "allOf"} & set(tool.schema), tool.name
        assert "title" not in json.dumps(tool.schema).replace('"title_regex"', ""), tool.name


def test_the_computer_schema_takes_each_action_with_its_own_fields():
    schema = tools.TOOLS[[t.name for t in tools.TOOLS].index("computer")].schema
    assert set(schema["properties"]["action"]["enum"]) == set(HANDLERS)
    validator = jsonschema.Draft202012Validator(schema)
    for action in ({"action": "left_click", "coordinate": [10, 20], "text": "shift"},
                   {"action": "scroll", "coordinate": [5, 5], "scroll_direction": "down", "scroll_amount": 3},
                   {"action": "type", "text": "hello"}, {"action": "zoom", "region": [0, 0, 10, 10]},
                   {"action": "screenshot", "display": 1}):
        validator.validate(action)
    assert "left_click_drag" in schema["properties"]["coordinate"]["description"]
    assert not validator.is_valid({"action": "teleport"})


def test_the_act_schema_is_the_scene_models():
    from deskbox.api.scene import ActRequest

    act = next(t for t in tools.TOOLS if t.name == "act")
    assert act.schema["properties"]["action"]["enum"] == list(get_args(ActRequest.model_fields["action"].annotation))
    assert all(a in act.description for a in get_args(ActRequest.model_fields["action"].annotation))


async def test_failures_are_tool_errors_with_the_error_body():
    async with AsyncClient("http://127.0.0.1:9", "http://127.0.0.1:9", None) as nowhere:
        unreachable = await tools.call(nowhere, "observe", {})
        no_bridge = await tools.call(nowhere, "tabs", None)
        unknown = await tools.call(nowhere, "teleport", {})
    assert unreachable.is_error and unreachable.structured_content["error"]["code"] == "unreachable"
    assert json.loads(unreachable.content[0].text) == unreachable.structured_content
    assert no_bridge.is_error and no_bridge.structured_content["error"]["code"] == "no_bridge"
    assert unknown.is_error and unknown.structured_content["error"]["code"] == "unknown_tool"
