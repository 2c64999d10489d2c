"""The guard rails' pure parts: budgets, allowed actions, redaction of scenes, text,
arguments and screenshots, confirmations, the audit log and the policy file."""

from __future__ import annotations

import json
import os
import stat

import pytest
from PIL import Image, ImageChops, ImageStat

from deskbox.common.errors import (
    ActionFailedError,
    BudgetExceededError,
    ConfirmationInvalidError,
    ConfirmationRequiredError,
    DeniedError,
    DeskboxError,
)
from deskbox.policy import ActionRules, AuditLog, Budgets, Confirmations, Policy, Redactor, load_policy
from deskbox.policy.config import (
    ActionsConfig,
    AuditConfig,
    BudgetsConfig,
    ConfirmationConfig,
    RedactionConfig,
)


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


CARD = "4111 1111 1111 1111"
PASSWORD = "hunter2-secret"


# -- errors


def test_the_guard_rail_errors_have_their_status_code_and_recoverability():
    budget = BudgetExceededError
    assert (budget.status, budget.code, budget.recoverable) == (429, "budget_exceeded", False)
    assert (DeniedError.status, DeniedError.code) == (403, "action_denied")
    assert issubclass(ConfirmationRequiredError, ActionFailedError) and issubclass(DeniedError, DeskboxError)
    err = ConfirmationRequiredError("confirm it", action="click", token="tok", expires_at=12.5, context={"rule": {}})
    body = err.to_json()["error"]
    assert (err.status, body["code"], body["recoverable"]) == (409, "confirmation_required", True)
    assert body["suggested_next_tool"] == "click"
    assert body["context"] == {"rule": {}, "confirm_token": "tok", "expires_at": 12.5}
    assert (ConfirmationInvalidError.status, ConfirmationInvalidError.code) == (409, "confirmation_invalid")


# -- budgets


def test_the_action_over_the_limit_is_refused_and_not_counted():
    budgets = Budgets(BudgetsConfig(max_actions=3), clock=Clock())
    for _ in range(3):
        budgets.charge_action()
    with pytest.raises(BudgetExceededError) as info:
        budgets.charge_action()
    assert info.value.context == {"budget": "max_actions", "limit": 3, "used": 3}
    assert "max_actions" in info.value.message
    with pytest.raises(BudgetExceededError):
        budgets.charge_action()
    assert budgets.status()["max_actions"] == {"limit": 3, "used": 3, "remaining": 0}


def test_screenshots_have_their_own_budget():
    budgets = Budgets(BudgetsConfig(max_screenshots=2, max_actions=1), clock=Clock())
    budgets.charge_action()
    budgets.charge_screenshot()
    budgets.charge_screenshot()
    with pytest.raises(BudgetExceededError) as info:
        budgets.charge_screenshot()
    assert info.value.context == {"budget": "max_screenshots", "limit": 2, "used": 2}
    status = budgets.status()
    assert status["max_screenshots"]["used"] == 2 and status["max_actions"]["used"] == 1


def test_actions_per_minute_is_a_sliding_window():
    clock = Clock()
    budgets = Budgets(BudgetsConfig(actions_per_minute=2), clock=clock)
    budgets.charge_action()          # t=0
    clock.now += 30
    budgets.charge_action()          # t=30
    clock.now += 20
    with pytest.raises(BudgetExceededError) as info:  # t=50: two in the last minute
        budgets.charge_action()
    assert info.value.context["budget"] == "actions_per_minute"
    assert info.value.context["used"] == 2 and info.value.context["retry_after_s"] == 10
    assert info.value.recoverable is True
    clock.now += 10.5                # t=60.5: the first has left the window
    budgets.charge_action()
    with pytest.raises(BudgetExceededError):
        budgets.charge_action()
    assert budgets.status()["max_actions"]["used"] == 3  # the refused ones were not counted


def test_the_session_ends_after_its_seconds():
    clock = Clock()
    budgets = Budgets(BudgetsConfig(max_session_seconds=100), clock=clock)
    clock.now += 99
    budgets.check_session()
    budgets.charge_action()
    assert budgets.status()["max_session_seconds"] == {"limit": 100, "used": 99, "remaining": 1}
    clock.now += 1
    with pytest.raises(BudgetExceededError) as info:
        budgets.check_session()
    assert info.value.context == {"budget": "max_session_seconds", "limit": 100, "used": 100}
    with pytest.raises(BudgetExceededError):
        budgets.charge_screenshot()


def test_a_refunded_action_or_screenshot_frees_its_place():
    clock = Clock()
    budgets = Budgets(BudgetsConfig(max_actions=1, max_screenshots=1, actions_per_minute=1), clock=clock)
    budgets.charge_action()
    budgets.charge_screenshot()
    budgets.refund_action()      # it did nothing (the input never reached the desktop)
    budgets.refund_screenshot()
    budgets.charge_action()      # neither max_actions nor the minute's window holds it against this one
    budgets.charge_screenshot()
    assert budgets.status()["max_actions"]["used"] == 1 and budgets.status()["actions_per_minute"]["used"] == 1
    budgets.refund_action()
    budgets.refund_action()      # never below nothing
    assert budgets.status()["max_actions"]["used"] == 0


def test_the_models_tokens_are_checked_before_a_call_and_charged_after_it():
    clock = Clock()
    budgets = Budgets(BudgetsConfig(max_vlm_tokens=100, max_session_seconds=60), clock=clock)
    budgets.check_vlm_tokens()
    budgets.charge_vlm_tokens(70)
    budgets.check_vlm_tokens()       # 70 of 100: one more call is allowed ...
    budgets.charge_vlm_tokens(45)    # ... and what it used is counted, past the limit
    assert budgets.status()["max_vlm_tokens"] == {"limit": 100, "used": 115, "remaining": 0}
    with pytest.raises(BudgetExceededError) as info:
        budgets.check_vlm_tokens()
    assert info.value.context == {"budget": "max_vlm_tokens", "limit": 100, "used": 115}
    assert "model tokens" in info.value.message and info.value.recoverable is False
    clock.now += 60                  # and once the session's time is up, that is said first
    with pytest.raises(BudgetExceededError) as info:
        budgets.check_vlm_tokens()
    assert info.value.context["budget"] == "max_session_seconds"


def test_the_models_tokens_are_unlimited_unless_a_budget_says_so():
    budgets = Budgets(BudgetsConfig(), clock=Clock())
    budgets.charge_vlm_tokens(10**9)
    budgets.check_vlm_tokens()
    budgets.charge_vlm_tokens(-5)    # (never taken off)
    assert budgets.status()["max_vlm_tokens"] == {"limit": None, "used": 10**9, "remaining": None}


def test_unlimited_budgets_report_no_limit():
    budgets = Budgets(BudgetsConfig(), clock=Clock())
    for _ in range(1000):
        budgets.charge_action()
    assert budgets.status()["max_actions"] == {"limit": None, "used": 1000, "remaining": None}


# -- allowed actions


def test_deny_wins_over_allow_and_wildcards_match():
    rules = ActionRules(ActionsConfig(allow=["mcp:*", "scene:click"], deny=["*:drag", "desktopd:*"], default="deny"))
    rules.check("mcp", "click")
    rules.check("scene", "click")
    with pytest.raises(DeniedError) as info:
        rules.check("mcp", "drag")   # allowed by mcp:*, denied by *:drag
    assert info.value.context == {"interface": "mcp", "action": "drag", "rule": "*:drag"}
    assert "*:drag" in info.value.message
    with pytest.raises(DeniedError) as info:
        rules.check("desktopd", "click")
    assert info.value.context["rule"] == "desktopd:*"
    with pytest.raises(DeniedError) as info:
        rules.check("scene", "type")  # named by nothing: the default
    assert info.value.context["rule"] == "default"
    assert info.value.status == 403


def test_the_default_allow_lets_unnamed_actions_through():
    rules = ActionRules(ActionsConfig(deny=["scene:key"]))
    assert rules.allowed("scene", "click")
    assert not rules.allowed("Scene", "KEY")  # names compare ignoring case


# -- redaction


def _element(ident, role, name, value=None, window="w1", display=0, bbox=(10, 10, 200, 30), states=()):
    return {"id": ident, "role": role, "name": name, "value": value, "bbox": list(bbox), "display_id": display,
            "window_id": window, "source": "cdp", "states": list(states), "actions": ["click"],
            "visibility": "visible", "parent": None}


def _scene() -> dict:
    return {
        "version": 1, "seq": 7, "timestamp": 1.0, "mode": "active",
        "displays": [{"id": 0, "name": "HEADLESS-1", "bounds": [0, 0, 1280, 800]},
                     {"id": 1, "name": "HEADLESS-2", "bounds": [0, 0, 1280, 800]}],
        "focused_window": {"id": "w2", "app": "chromium", "pid": 10, "title": f"Pay {CARD} - Chromium",
                           "display_id": 0, "bounds": [0, 400, 1280, 400]},
        "apps": [
            {"name": "chromium", "pid": 10, "app_id": "chromium", "windows": [
                {"id": "w1", "app_id": "chromium", "pid": 10, "title": "Sign in - Chromium",
                 "bounds": [0, 0, 1280, 400], "display_id": 0, "focused": False},
                {"id": "w2", "app_id": "chromium", "pid": 10, "title": f"Pay {CARD} - Chromium",
                 "bounds": [0, 400, 1280, 400], "display_id": 0, "focused": True}]},
            {"name": "keepassxc", "pid": 11, "app_id": "keepassxc", "windows": [
                {"id": "w3", "app_id": "keepassxc", "pid": 11, "title": "Passwords.kdbx - KeePassXC",
                 "bounds": [100, 100, 600, 400], "display_id": 1, "focused": False}]},
        ],
        "ax": [
            # Listed before the password field it quotes: still caught.
            _element("a0-1", "textbox", "Notes", value=f"mine is {PASSWORD}", bbox=(10, 300, 300, 40)),
            _element("a0-2", "textbox", "Email", value="me@example.com", bbox=(10, 100, 300, 30)),
            _element("a0-3", "password", "Password", value=PASSWORD, bbox=(10, 150, 300, 30)),
            _element("a0-4", "textbox", "Security code (CVV)", value="737", window="w2", bbox=(10, 500, 80, 30)),
            _element("a0-5", "text", f"Card {CARD}", window="w2", bbox=(10, 450, 300, 20)),
            _element("a0-6", "button", "Pay", window="w2", bbox=(10, 600, 80, 30)),
            _element("a1-1", "listitem", "Bank", value="s3cr3t-bank", window="w3", display=1, bbox=(120, 150, 200, 20)),
        ],
        "ocr": [
            {"id": "t0-1", "text": f"Card number {CARD}", "bbox": [20, 700, 400, 20], "conf": 0.9, "display_id": 0,
             "window_id": None, "source": "ocr"},
            {"id": "t0-2", "text": "Welcome back", "bbox": [20, 20, 200, 20], "conf": 0.9, "display_id": 0,
             "window_id": None, "source": "ocr"},
            {"id": "t1-1", "text": "Bank s3cr3t-bank", "bbox": [120, 200, 200, 20], "conf": 0.9, "display_id": 1,
             "window_id": None, "source": "ocr"},
        ],
        "vlm_scene": {"caption": f"A payment form with card {CARD}"}, "vlm_elements": None,
        "sources": {"cdp": None}, "build_ms": 1.0, "timings_ms": {},
    }


def _redactor(**overrides) -> Redactor:
    config = {"enabled": True, "element_name_patterns": [r"(?i)\bcvv\b|security code"],
              "window_title_patterns": ["KeePassXC"], "text_patterns": [r"\b\d{4}(?:[ -]?\d{4}){3}\b"]}
    return Redactor(RedactionConfig(**{**config, **overrides}))


def _by_id(scene: dict) -> dict:
    return {e["id"]: e for e in scene["ax"]} | {o["id"]: o for o in scene["ocr"]}


def test_a_password_field_keeps_its_role_and_box_but_not_its_value():
    scene = _redactor().scene(_scene())
    field = _by_id(scene)["a0-3"]
    assert (field["role"], field["name"], field["bbox"]) == ("password", "Password", [10, 150, 300, 30])
    assert field["value"] == "[REDACTED]"
    assert _by_id(scene)["a0-2"]["value"] == "me@example.com"  # an ordinary field is left alone


def test_a_field_whose_name_matches_loses_its_name_and_value():
    field = _by_id(_redactor().scene(_scene()))["a0-4"]
    assert (field["role"], field["name"], field["value"]) == ("textbox", "[REDACTED]", "[REDACTED]")


def test_a_card_number_is_replaced_in_names_ocr_titles_and_a_models_caption():
    scene = _redactor().scene(_scene())
    found = _by_id(scene)
    assert found["a0-5"]["name"] == "Card [REDACTED]"
    assert found["t0-1"]["text"] == "Card number [REDACTED]"
    assert found["t0-2"]["text"] == "Welcome back"
    assert scene["apps"][0]["windows"][1]["title"] == "Pay [REDACTED] - Chromium"
    assert scene["focused_window"]["title"] == "Pay [REDACTED] - Chromium"
    assert CARD not in json.dumps(scene)


def test_a_window_whose_title_matches_hides_all_its_text_but_not_its_title():
    scene = _redactor().scene(_scene())
    found = _by_id(scene)
    assert (found["a1-1"]["role"], found["a1-1"]["name"], found["a1-1"]["value"]) == \
        ("listitem", "[REDACTED]", "[REDACTED]")
    assert found["t1-1"]["text"] == "[REDACTED]"  # read inside that window's bounds
    assert scene["apps"][1]["windows"][0]["title"] == "Passwords.kdbx - KeePassXC"
    assert "s3cr3t-bank" not in json.dumps(scene)


def test_a_password_once_read_is_replaced_everywhere_after():
    redactor = _redactor()
    scene = redactor.scene(_scene())
    assert _by_id(scene)["a0-1"]["value"] == "mine is [REDACTED]"
    assert redactor.text(f"type {PASSWORD} into the prompt") == "type [REDACTED] into the prompt"
    assert redactor.applied_count >= 8


def test_a_protected_state_or_a_password_role_of_any_case_is_secret():
    redactor = _redactor()
    assert redactor.is_secret("textbox", "PIN", ["focusable", "protected"], None)
    assert redactor.is_secret("Password Text", "", [], None)
    assert redactor.is_secret("textbox", "Email", [], "Passwords.kdbx - KeePassXC")
    assert not redactor.is_secret("textbox", "Email", [], "Sign in")
    assert not _redactor(enabled=False).is_secret("password", "Password", [], None)


def test_redaction_off_leaves_the_scene_as_it_was():
    redactor = _redactor(enabled=False)
    scene = _scene()
    assert redactor.scene(scene) == _scene()
    assert redactor.text(CARD) == CARD and redactor.boxes(_scene()) == {}


def test_argument_keys_are_replaced_at_any_depth_and_text_patterns_in_every_string():
    redactor = _redactor()
    args = {"text": f"card {CARD}", "password": "pw", "headers": {"Authorization": "Bearer abc"},
            "items": [{"new_password": "pw2", "n": 3}, CARD], "token": None}
    out = redactor.args(args)
    assert out == {"text": "card [REDACTED]", "password": "[REDACTED]", "headers": {"Authorization": "[REDACTED]"},
                   "items": [{"new_password": "[REDACTED]", "n": 3}, "[REDACTED]"], "token": None}
    assert args["password"] == "pw"  # a copy: the call's own arguments are untouched


def test_argument_keys_are_replaced_even_with_redaction_off():
    out = _redactor(enabled=False).args({"api_key": "sk-1", "text": CARD})
    assert out == {"api_key": "[REDACTED]", "text": CARD}


def test_the_boxes_to_blur_are_the_secrets_per_display_before_and_after_redacting():
    before = _redactor().boxes(_scene())
    redactor = _redactor()
    scene = redactor.scene(_scene())
    assert redactor.boxes(scene) == before
    assert sorted(before[0]) == sorted([
        (10, 300, 300, 40),   # Notes: quotes the password
        (10, 150, 300, 30),   # the password field
        (10, 500, 80, 30),    # the CVV field
        (10, 450, 300, 20),   # the card number's text
        (20, 700, 400, 20),   # the card number read by OCR
    ])
    assert before[1] == [(100, 100, 600, 400)]  # the whole KeePassXC window


def _noise(w: int, h: int) -> Image.Image:
    """A fine checkerboard: legible-text-like detail a blur must erase."""
    image = Image.new("RGB", (w, h))
    image.putdata([(255, 255, 255) if (x // 2 + y // 2) % 2 else (0, 0, 0) for y in range(h) for x in range(w)])
    return image


@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_blur_changes_the_pixels_inside_the_box_and_none_outside(scale):
    image = _noise(int(400 * scale), int(200 * scale))
    box = (100, 40, 120, 60)
    out = Redactor.blur(image, [box], scale=scale)
    x0, y0, x1, y1 = (round(v * scale) for v in (100, 40, 220, 100))
    changed = ImageChops.difference(image, out).getbbox()
    assert changed is not None
    assert x0 <= changed[0] and y0 <= changed[1] and changed[2] <= x1 and changed[3] <= y1
    assert changed[2] - changed[0] > (x1 - x0) * 0.8 and changed[3] - changed[1] > (y1 - y0) * 0.8
    # The detail is gone, not just shifted: the box's contrast collapses.
    inside_before = ImageStat.Stat(image.crop((x0, y0, x1, y1))).stddev[0]
    inside_after = ImageStat.Stat(out.crop((x0, y0, x1, y1))).stddev[0]
    assert inside_after < inside_before * 0.2
    assert image.tobytes() == _noise(int(400 * scale), int(200 * scale)).tobytes()  # a copy was blurred


# -- confirmations


def _confirmations(clock=None) -> Confirmations:
    config = ConfirmationConfig(rules=[{"role": "button", "name_regex": "(?i)delete", "action": "click"}],
                                ttl_seconds=60, bbox_tolerance_px=20)
    return Confirmations(config, clock=clock or Clock())


DELETE = {"id": "a0-9", "role": "button", "name": "Delete account", "bbox": [100, 100, 80, 30], "window_id": "w1"}


def test_a_rule_matches_only_when_all_its_fields_do():
    confirmations = _confirmations()
    assert confirmations.rule_for("click", "Button", "Delete account") is not None
    assert confirmations.rule_for("click", "button", "Save") is None
    assert confirmations.rule_for("type", "button", "Delete account") is None
    assert confirmations.rule_for("click", "link", "Delete account") is None


def test_the_first_call_asks_for_confirmation_and_the_token_confirms_it_once():
    confirmations = _confirmations()
    with pytest.raises(ConfirmationRequiredError) as info:
        confirmations.check("click", DELETE)
    token = info.value.context["confirm_token"]
    assert info.value.suggested_next_tool == "click" and info.value.context["expires_at"] > 0
    confirmations.check("click", DELETE, confirm_token=token)
    with pytest.raises(ConfirmationInvalidError) as again:
        confirmations.check("click", DELETE, confirm_token=token)
    assert again.value.context["reason"] == "used"


def test_an_action_no_rule_names_needs_no_token():
    _confirmations().check("click", {**DELETE, "name": "Save"})


def test_an_expired_token_is_refused():
    clock = Clock()
    confirmations = _confirmations(clock)
    token, _ = confirmations.issue("click", DELETE)
    clock.now += 60
    with pytest.raises(ConfirmationInvalidError) as info:
        confirmations.redeem(token, "click", DELETE)
    assert info.value.context["reason"] == "expired"


def test_a_token_for_another_element_or_action_is_refused_and_not_burnt():
    confirmations = _confirmations()
    token, _ = confirmations.issue("click", DELETE)
    for action, target, reason in [
        ("click", {**DELETE, "id": "a0-10", "bbox": [300, 100, 80, 30]}, "other_target"),  # another Delete button
        ("click", {**DELETE, "name": "Delete file"}, "other_target"),
        ("click", {**DELETE, "role": "link"}, "other_target"),
        ("double_click", DELETE, "other_action"),
    ]:
        with pytest.raises(ConfirmationInvalidError) as info:
            confirmations.redeem(token, action, target)
        assert info.value.context["reason"] == reason
    with pytest.raises(ConfirmationInvalidError) as info:
        confirmations.redeem("never-issued", "click", DELETE)
    assert info.value.context["reason"] == "unknown"
    confirmations.redeem(token, "click", DELETE)


def test_the_same_element_renumbered_and_moved_a_little_is_accepted():
    confirmations = _confirmations()
    token, _ = confirmations.issue("click", DELETE)
    confirmations.redeem(token, "click", {**DELETE, "id": "a0-42", "bbox": [110, 108, 80, 30]})


def test_tokens_are_random_and_capped():
    confirmations = _confirmations()
    tokens = [confirmations.issue("click", DELETE)[0] for _ in range(300)]
    assert len(set(tokens)) == 300 and len(tokens[0]) >= 20
    with pytest.raises(ConfirmationInvalidError):
        confirmations.redeem(tokens[0], "click", DELETE)  # dropped by the cap
    confirmations.redeem(tokens[-1], "click", DELETE)


# -- audit log


def test_the_audit_log_rotates_keeps_its_backups_is_private_and_holds_no_secret(tmp_path):
    path = tmp_path / "logs" / "audit.log"
    log = AuditLog(AuditConfig(path=str(path), max_bytes=600, backups=2), _redactor())
    for i in range(30):
        log.write({"interface": "scene", "action": "type", "outcome": "ok", "duration_ms": 12.5,
                   "args": {"text": f"card {CARD}", "password": PASSWORD, "options": {"api_key": "sk-live-1"}, "i": i},
                   "target": {"id": "a0-3", "role": "password", "name": "Password", "value": PASSWORD,
                              "bbox": [1, 2, 3, 4], "window_id": "w1"}})
    log.close()
    files = sorted(p.name for p in path.parent.iterdir())
    assert files == ["audit.log", "audit.log.1", "audit.log.2"]
    for name in files:
        data = (path.parent / name).read_bytes()
        assert stat.S_IMODE(os.stat(path.parent / name).st_mode) == 0o600
        assert len(data) <= 600
        for secret in (CARD, PASSWORD, "sk-live-1"):
            assert secret.encode() not in data
    last = [json.loads(line) for line in path.read_text().splitlines()][-1]
    assert last["args"]["i"] == 29 and last["time"].endswith("Z")
    assert (last["interface"], last["action"], last["outcome"], last["duration_ms"]) == ("scene", "type", "ok", 12.5)
    assert last["target"] == {"id": "a0-3", "role": "password", "name": "Password", "bbox": [1, 2, 3, 4],
                              "window_id": "w1"}


def test_no_audit_path_writes_nothing(tmp_path):
    log = AuditLog(AuditConfig(), _redactor())
    log.write({"interface": "scene", "action": "click"})
    assert not log.enabled and list(tmp_path.iterdir()) == []


# -- the policy file


POLICY_YAML = """
budgets:
  max_actions: 200
  actions_per_minute: 30
redaction:
  enabled: true
  text_patterns: ['\\b\\d{4}(?:[ -]?\\d{4}){3}\\b']
actions:
  deny: ["*:drag"]
confirmation:
  rules:
    - {role: button, name_regex: "(?i)delete"}
audit:
  path: /tmp/audit.log
"""


def test_a_policy_reads_from_yaml_and_json_alike(tmp_path):
    (tmp_path / "p.yaml").write_text(POLICY_YAML)
    from_yaml = load_policy(tmp_path / "p.yaml")
    (tmp_path / "p.json").write_text(json.dumps(from_yaml.model_dump()))
    from_json = load_policy(tmp_path / "p.json")
    assert from_yaml == from_json
    assert from_yaml.budgets.max_actions == 200 and from_yaml.budgets.max_screenshots is None
    assert from_yaml.redaction.enabled and from_yaml.redaction.replacement == "[REDACTED]"
    assert from_yaml.confirmation.rules[0].role == "button" and from_yaml.confirmation.ttl_seconds == 60
    assert Redactor(from_yaml.redaction).text(CARD) == "[REDACTED]"


@pytest.mark.parametrize("text, field", [
    ("budgets: {max_actions: 0}", "budgets.max_actions"),
    ("budgets: {max_action: 5}", "budgets.max_action"),  # a typo is not silently ignored
    ("redaction: {text_patterns: ['(']}", "redaction.text_patterns"),
    ("actions: {default: maybe}", "actions.default"),
    ("actions: {deny: [drag]}", "actions.deny"),
    ("confirmation: {rules: [{}]}", "confirmation.rules.0"),
])
def test_a_bad_field_is_an_error_naming_it(tmp_path, text, field):
    (tmp_path / "p.yml").write_text(text)
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        load_policy(tmp_path / "p.yml")


def test_a_file_that_does_not_parse_says_so(tmp_path):
    (tmp_path / "p.json").write_text("{budgets:")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_policy(tmp_path / "p.json")


def test_flags_override_the_file_and_an_unset_flag_keeps_it(tmp_path):
    (tmp_path / "p.yaml").write_text(POLICY_YAML)
    policy = load_policy(tmp_path / "p.yaml").merged({"budgets": {"max_actions": 5, "actions_per_minute": None},
                                                      "audit": {"path": None}})
    assert policy.budgets.max_actions == 5 and policy.budgets.actions_per_minute == 30
    assert policy.audit.path == "/tmp/audit.log" and policy.actions.deny == ["*:drag"]
    with pytest.raises(ValueError, match=r"budgets\.max_screenshots"):
        policy.merged({"budgets": {"max_screenshots": -1}})
    assert policy.merged({"budgets": {"max_vlm_tokens": 5000}}).budgets.max_vlm_tokens == 5000


def test_the_policy_json_says_what_is_configured_but_not_the_patterns(tmp_path):
    (tmp_path / "p.yaml").write_text(POLICY_YAML)
    shown = load_policy(tmp_path / "p.yaml").to_json()
    assert shown["budgets"]["max_actions"] == 200 and shown["actions"]["deny"] == ["*:drag"]
    assert shown["redaction"]["text_patterns"] == 1 and shown["audit"]["enabled"] is True
    assert "\\d{4}" not in json.dumps(shown)
    assert Policy().to_json()["redaction"]["enabled"] is False
