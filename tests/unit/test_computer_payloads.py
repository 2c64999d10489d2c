"""Provider payloads as the providers send them: parsed into the right action, key names
translated, what a provider adds beside the action tolerated, mistakes rejected. Pure
logic; the actions themselves are checked on a real desktop in test_computer_adapters.py."""

import pytest
from pydantic import ValidationError

from deskbox.common.errors import InvalidRequestError
from deskbox.computer import anthropic, gemini, openai
from deskbox.computer.base import ScreenQuery, key_name, split_combo


def test_openai_and_gemini_key_names_become_desktopd_names():
    assert [key_name(k) for k in ["CTRL", "A"]] == ["ctrl", "a"]
    assert [key_name(k) for k in ["Control", "Shift", "T"]] == ["ctrl", "shift", "t"]
    assert [key_name(k) for k in ["ENTER", "ARROWLEFT", "Meta", "CMD", "option", "ESC"]] == [
        "enter", "left", "super", "super", "alt", "escape"]
    assert key_name("+") == "plus" and key_name(" ") == "space" and key_name("1") == "1"
    assert key_name("PageDown") == "pagedown" and key_name("F5") == "f5"


def test_combinations_split_on_plus_and_keep_the_plus_key():
    assert split_combo("Control+A") == ["Control", "A"]
    assert split_combo(" ctrl + shift + t ") == ["ctrl", "shift", "t"]
    assert split_combo("Control++") == ["Control", "+"]
    assert split_combo("+") == ["+"]
    with pytest.raises(InvalidRequestError):
        split_combo("  ")


def test_anthropic_input_parses_per_action_and_rejects_fields_of_other_actions():
    click = anthropic.AnthropicAction.model_validate({"action": "left_click", "coordinate": [10, 20], "text": "shift"})
    assert click.root.coordinate == (10, 20) and click.root.text == "shift"
    drag = anthropic.AnthropicAction.model_validate({"action": "left_click_drag", "start_coordinate": [1, 2],
                                                     "coordinate": [3, 4]}).root
    assert drag.start_coordinate == (1, 2)
    with pytest.raises(ValidationError):  # a field of scroll on a click: not silently dropped
        anthropic.AnthropicAction.model_validate({"action": "left_click", "scroll_direction": "up"})
    with pytest.raises(ValidationError):
        anthropic.AnthropicAction.model_validate({"action": "scroll", "scroll_direction": "down"})
    with pytest.raises(ValidationError):
        anthropic.AnthropicAction.model_validate({"action": "zoom", "region": [0, 0, 10]})
    assert set(anthropic.HANDLERS) == {
        "key", "hold_key", "type", "cursor_position", "mouse_move", "left_mouse_down", "left_mouse_up",
        "left_click", "left_click_drag", "right_click", "middle_click", "double_click", "triple_click",
        "scroll", "wait", "screenshot", "zoom"}


def test_openai_item_carries_its_own_fields_beside_the_action():
    item = openai.ComputerCall.model_validate({
        "type": "computer_call", "id": "cu_1", "call_id": "call_1", "status": "completed",
        "action": {"type": "click", "x": 1, "y": 2, "button": "wheel"},
        "pending_safety_checks": [{"id": "s", "code": "c", "message": "m"}]})
    assert item.call_id == "call_1" and item.action.button == "wheel"
    with pytest.raises(ValidationError):  # inside the action, an unknown field is a mistake
        openai.OpenAIAction.model_validate({"type": "click", "x": 1, "y": 2, "pending_safety_checks": []})
    with pytest.raises(ValidationError):
        openai.ComputerCall.model_validate({"type": "computer_call", "call_id": "c"})
    assert set(openai.HANDLERS) == {"click", "double_click", "drag", "keypress", "move", "screenshot", "scroll",
                                    "type", "wait"}


def test_gemini_calls_take_safety_decisions_and_reject_unknown_args():
    call = gemini.GeminiCall.model_validate({"name": "click_at", "args": {
        "x": 999, "y": 0, "safety_decision": {"decision": "require_confirmation", "explanation": "cookie banner"}}})
    assert call.root.args.x == 999
    assert gemini.GeminiCall.model_validate({"name": "go_back"}).root.args is not None
    typing = gemini.GeminiCall.model_validate({"name": "type_text_at", "args": {"x": 1, "y": 2, "text": "t"}}).root
    assert typing.args.press_enter is False and typing.args.clear_before_typing is True
    assert gemini.GeminiCall.model_validate({"name": "scroll_at", "args": {"x": 1, "y": 2, "direction": "up"}}
                                            ).root.args.magnitude == 800
    for bad in ({"name": "click_at", "args": {"x": 1000, "y": 0}},
                {"name": "click_at", "args": {"x": 1, "y": 1, "button": "right"}},
                {"name": "navigate", "args": {}}):
        with pytest.raises(ValidationError):
            gemini.GeminiCall.model_validate(bad)


def test_a_declared_size_is_both_dimensions_or_none():
    assert ScreenQuery.model_validate({"display_width": "1280", "display_height": "720"}).display_width == 1280
    with pytest.raises(ValidationError):
        ScreenQuery.model_validate({"display_width": "1280"})
