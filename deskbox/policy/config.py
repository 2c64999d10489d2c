"""One policy file: budgets, redaction, allowed actions, confirmations and the audit log.

Read from JSON or YAML (``load_policy``); a field that is not understood or not valid is
an error naming it, never silently ignored: a guard rail that is off by a typo is worse
than none, because it is believed to be on. ``deskbox up`` flags override the file
(``Policy.merged``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError, field_validator, model_validator

__all__ = [
    "ActionsConfig",
    "AuditConfig",
    "BudgetsConfig",
    "ConfirmRule",
    "ConfirmationConfig",
    "Policy",
    "RedactionConfig",
    "load_policy",
]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _regexes(patterns: list[str]) -> list[str]:
    for i, pattern in enumerate(patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"item {i} ({pattern!r}) is not a regular expression: {exc}") from exc
    return patterns


class BudgetsConfig(_Section):
    """How much a session may do. None is unlimited."""

    max_actions: PositiveInt | None = Field(None, description="Actions (clicks, keys, scene acts ...) in the session.")
    max_screenshots: PositiveInt | None = Field(None, description="Screenshots taken in the session.")
    max_vlm_tokens: PositiveInt | None = Field(
        None, description="Tokens the vision model (--vlm-url) may spend describing windows in the session.")
    max_session_seconds: PositiveInt | None = Field(None, description="Seconds from the session's start.")
    actions_per_minute: PositiveInt | None = Field(None, description="Actions in any 60 s (a sliding window).")


class RedactionConfig(_Section):
    """What is kept from the agent, the logs and the screenshots."""

    enabled: bool = Field(False, description="Redact scenes, text and screenshots (argument keys are always).")
    password_roles: list[str] = Field(
        # Chromium's, AT-SPI's (before deskbox maps it to textbox) and UI Automation's names.
        ["password", "password text", "passwordtext", "passwordedit", "passwordfield"],
        description="Roles of password fields, compared ignoring case: their value is secret.")
    element_name_patterns: list[str] = Field(
        [], description="Regexes: an element whose name matches one is a secret field (its name and value).")
    window_title_patterns: list[str] = Field(
        [], description="Regexes: every text of a window whose title matches one is secret.")
    text_patterns: list[str] = Field(
        [], description="Regexes replaced wherever they occur: names, values, OCR, titles, prompts, logs.")
    replacement: str = Field("[REDACTED]", min_length=1, description="What a secret is replaced with.")
    blur_screenshots: bool = Field(False, description="Blur secret fields and matched OCR lines in screenshots.")
    redact_arg_keys: list[str] = Field(
        ["password", "api_key", "token", "Authorization", "secret"],
        description="Action argument keys (a key containing one, ignoring case) whose values are replaced "
                    "in audit and trace records.")

    _check_regexes = field_validator("element_name_patterns", "window_title_patterns", "text_patterns")(_regexes)


class ActionsConfig(_Section):
    """Which actions may run, as ``interface:action`` patterns with fnmatch wildcards
    (``*:drag``, ``desktopd:*``, ``mcp:act``). Deny wins over allow; an action neither
    list names gets ``default``."""

    allow: list[str] = Field([], description="Patterns of actions allowed.")
    deny: list[str] = Field([], description="Patterns of actions denied, whatever allow says.")
    default: Literal["allow", "deny"] = Field("allow", description="For an action no pattern names.")

    @field_validator("allow", "deny")
    @classmethod
    def _interface_action(cls, patterns: list[str]) -> list[str]:
        for i, pattern in enumerate(patterns):
            if pattern.count(":") != 1:
                raise ValueError(f"item {i} ({pattern!r}) is not \"interface:action\" (e.g. \"*:drag\")")
        return patterns


class ConfirmRule(_Section):
    """Actions that need a confirmed second call. A rule matches an action on an element
    when every field it gives matches."""

    role: str | None = Field(None, description="The element's role, compared ignoring case.")
    name_regex: str | None = Field(None, description="A regex searched in the element's name.")
    action: str | None = Field(None, description="An fnmatch pattern of the action (e.g. \"click\", \"*\").")

    @field_validator("name_regex")
    @classmethod
    def _regex(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            _regexes([pattern])
        return pattern

    @model_validator(mode="after")
    def _something(self) -> ConfirmRule:
        # An empty rule would ask to confirm everything: say so with action: "*".
        if self.role is None and self.name_regex is None and self.action is None:
            raise ValueError("a rule needs role, name_regex or action (action: \"*\" for every action)")
        return self


class ConfirmationConfig(_Section):
    rules: list[ConfirmRule] = Field([], description="What needs confirming; none by default.")
    ttl_seconds: PositiveInt = Field(60, description="How long a confirm_token stays valid.")
    bbox_tolerance_px: int = Field(
        20, ge=0, description="How far (device px) the element's centre may move between the two calls.")


class AuditConfig(_Section):
    path: str | None = Field(None, description="The audit log (JSON lines); None keeps no audit log.")
    max_bytes: PositiveInt = Field(10 * 1024 * 1024, description="Size at which the log is rotated.")
    backups: int = Field(3, ge=0, description="Rotated files kept (audit.log.1 ...).")


class Policy(_Section):
    """A session's guard rails. Every section is optional; the defaults restrict nothing."""

    budgets: BudgetsConfig = BudgetsConfig()
    redaction: RedactionConfig = RedactionConfig()
    actions: ActionsConfig = ActionsConfig()
    confirmation: ConfirmationConfig = ConfirmationConfig()
    audit: AuditConfig = AuditConfig()

    @classmethod
    def parse(cls, data: Any, *, source: str = "policy") -> Policy:
        """``data`` as a Policy, or a ValueError naming each field that is wrong."""
        if data is None:
            data = {}
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
                                 for err in exc.errors())
            raise ValueError(f"{source}: {problems}") from None

    def merged(self, overrides: dict[str, Any]) -> Policy:
        """This policy with ``overrides`` (``{"budgets": {"max_actions": 5}}``, as CLI flags
        give them) laid over it. A None leaves the file's value: an unset flag says nothing."""
        return Policy.parse(_deep_merge(self.model_dump(), overrides), source="policy overrides")

    def to_json(self) -> dict[str, Any]:
        """What is configured, for ``GET /api/v1/policy``. Redaction patterns are counted, not
        shown: a text pattern may spell out the very secret it hides, and a name pattern
        tells an agent how to word its way around it."""
        r = self.redaction
        return {
            "budgets": self.budgets.model_dump(),
            "redaction": {
                "enabled": r.enabled, "password_roles": r.password_roles,
                "element_name_patterns": len(r.element_name_patterns),
                "window_title_patterns": len(r.window_title_patterns),
                "text_patterns": len(r.text_patterns), "replacement": r.replacement,
                "blur_screenshots": r.blur_screenshots, "redact_arg_keys": r.redact_arg_keys,
            },
            "actions": self.actions.model_dump(),
            "confirmation": self.confirmation.model_dump(),
            "audit": {"enabled": self.audit.path is not None, **self.audit.model_dump()},
        }


def _deep_merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in overrides.items():
        if value is None:
            continue
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def load_policy(path: str | Path) -> Policy:
    """The policy in the JSON or YAML file ``path`` (by its suffix; YAML otherwise, which
    reads JSON too). An empty file is the default policy. Raises ValueError naming the
    field that is wrong, OSError when the file cannot be read."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: not valid {'JSON' if path.suffix.lower() == '.json' else 'YAML'}: {exc}") from None
    return Policy.parse(data, source=str(path))
