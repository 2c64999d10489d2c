"""Requests the aggregator's own routes accept (the scene, act, resolve, the marked
screenshot): the only place they are validated, and the source of its OpenAPI document."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

__all__ = [
    "SceneQuery",
    "TextQuery",
    "StreamQuery",
    "ActRequest",
    "DragTo",
    "ACTIONS",
    "ResolveRequest",
    "VlmRequest",
    "MarkedScreenshotQuery",
]

ACTIONS = ("click", "double_click", "right_click", "hover", "focus", "type", "set_value", "scroll_into_view",
           "invoke", "select", "clear_text", "key", "drag")
MAX_TEXT = 64 * 1024


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _flag(value: object) -> object:
    if isinstance(value, str) and value.lower() in ("0", "1", "true", "false", "yes", "no"):
        return value.lower() in ("1", "true", "yes")
    return value


# Query flags: 0/1, true/false, yes/no.
Flag = Annotated[bool, BeforeValidator(_flag)]


class _Filters(_Strict):
    interactive: Flag = False
    display: int | None = Field(None, ge=0)
    window: str | None = Field(None, max_length=64)


class SceneQuery(_Filters):
    mode: Literal["idle", "active", "agent-turn"] = "active"


class StreamQuery(_Filters):
    pass


class TextQuery(SceneQuery):
    max_chars: int | None = Field(None, ge=500, le=2_000_000)
    max_tokens: int | None = Field(None, ge=150, le=500_000)
    offscreen: Flag = True


class DragTo(_Strict):
    """Where a drag ends: another element, or a point of the dragged element's display."""

    target: str | None = Field(None, min_length=2, max_length=32, pattern=r"^a\d+-\d+$")
    point: tuple[float, float] | None = None

    @model_validator(mode="after")
    def _one(self) -> "DragTo":
        if (self.target is None) == (self.point is None):
            raise ValueError("give target (an element id) or point ([x, y] display-local device px)")
        if self.point is not None and not all(-100_000 <= v <= 100_000 for v in self.point):
            raise ValueError("point is out of range")
        return self


class ActRequest(_Strict):
    target: str = Field(min_length=2, max_length=32, pattern=r"^[at]\d+-\d+$")
    action: Literal["click", "double_click", "right_click", "hover", "focus", "type", "set_value",
                    "scroll_into_view", "invoke", "select", "clear_text", "key", "drag"] = "click"
    text: str | None = Field(None, max_length=MAX_TEXT)
    option: str | None = Field(None, min_length=1, max_length=1000)  # select: the option's name
    option_index: int | None = Field(None, ge=0, le=100_000)  # ... or its index, from 0
    keys: Annotated[str, Field(min_length=1, max_length=128)] | list[
        Annotated[str, Field(min_length=1, max_length=128)]] | None = Field(None, max_length=32)  # key
    to: DragTo | None = None  # drag
    settle_ms: int = Field(1500, ge=0, le=10_000)
    # The token a 409 confirmation_required answered, when the policy asks to confirm
    # actions on this target.
    confirm_token: str | None = Field(None, min_length=8, max_length=64)

    @model_validator(mode="after")
    def _check(self) -> "ActRequest":
        if self.action == "type" and not self.text:
            raise ValueError("type needs text")
        if self.action == "set_value" and self.text is None:
            raise ValueError('set_value needs text ("" clears the field)')
        if self.action not in ("type", "set_value") and self.text is not None:
            raise ValueError(f"{self.action} takes no text")
        if self.action == "select" and (self.option is None) == (self.option_index is None):
            raise ValueError("select needs option (the option's name) or option_index")
        if self.action != "select" and (self.option is not None or self.option_index is not None):
            raise ValueError("option and option_index are for select")
        if (self.action == "key") != (self.keys is not None):
            raise ValueError('key needs keys ("ctrl+a", or a list); other actions take none')
        if (self.action == "drag") != (self.to is not None):
            raise ValueError("drag needs to ({target} or {point}); other actions take none")
        return self


class ResolveRequest(_Strict):
    role: str | None = Field(None, max_length=64)
    name: str | None = Field(None, max_length=1000)
    bbox: tuple[float, float, float, float] | None = None
    display: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _check(self) -> "ResolveRequest":
        if self.role is None and not self.name and self.bbox is None:
            raise ValueError("give at least one of role, name, bbox")
        if self.bbox is not None and (self.bbox[2] < 0 or self.bbox[3] < 0):
            raise ValueError("bbox is [x, y, w, h] with w, h >= 0")
        return self


# A client's own JSON carried in every later scene: as deep as JSON usually goes, no
# deeper (scenes are written with orjson, which refuses past 254 levels).
MAX_VLM_DEPTH = 64


def _depth(value: Any, limit: int) -> int:
    """How deep ``value`` nests (stops counting past ``limit``)."""
    todo, deepest = [(value, 1)], 0
    while todo:
        item, depth = todo.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(item, dict):
            todo += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            todo += [(v, depth + 1) for v in item]
    return deepest


class VlmRequest(_Strict):
    vlm_scene: Any = None
    vlm_elements: list[Any] | None = Field(None, max_length=10_000)

    @model_validator(mode="after")
    def _writable(self) -> "VlmRequest":
        both = [self.vlm_scene, self.vlm_elements]
        if _depth(both, MAX_VLM_DEPTH) > MAX_VLM_DEPTH:
            raise ValueError(f"vlm_scene and vlm_elements nest at most {MAX_VLM_DEPTH} levels deep")
        # Carried into every later scene: what the scene cannot write (an integer past
        # 64 bits, a lone surrogate in a string) is refused here, not taken and then
        # failing every scene after it.
        try:
            orjson.dumps(both)
        except orjson.JSONEncodeError as exc:
            raise ValueError(f"vlm_scene and vlm_elements must be JSON a scene can carry: {exc}") from None
        return self


class MarkedScreenshotQuery(_Strict):
    display: int = Field(0, ge=0)
    marks: Flag = False
    format: Literal["png", "jpeg"] = "png"
    all: Flag = False  # mark every element with a box, not only interactive ones
