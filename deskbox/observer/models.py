"""Requests of the OS Screen Observer-compatible API. Its clients send fields deskbox has
no use for (``dry_run`` aside, ``confirm_token`` ...): unknown fields are ignored, as its
own server does; what deskbox reads is validated here."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..api.scene import Flag

Selector = Annotated[str, Field(min_length=1, max_length=2000)]


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class WindowQuery(_Lenient):
    window_index: int | None = Field(None, ge=0, le=10_000)
    window_uid: str | None = Field(None, min_length=1, max_length=64)


class DescriptionQuery(WindowQuery):
    # Its sources: accessibility and ocr skip the vision model; vlm insists on it;
    # combined (or none) adds it when the session has one.
    mode: Literal["accessibility", "ocr", "vlm", "combined"] | None = None


class StructureQuery(WindowQuery):
    roles: str | None = Field(None, max_length=2000)
    exclude_roles: str | None = Field(None, max_length=2000)
    name_regex: str | None = Field(None, max_length=500)
    visible_only: Flag = False
    max_text_len: int | None = Field(None, ge=1, le=1_000_000)
    prune_empty: Flag = False
    max_nodes: int | None = Field(None, ge=1, le=100_000)


class SketchQuery(WindowQuery):
    grid_width: int = Field(72, ge=20, le=400)
    grid_height: int = Field(24, ge=5, le=200)


class FindQuery(WindowQuery):
    selector: Selector


class ObserveQuery(WindowQuery):
    since: str | None = Field(None, max_length=32)
    format: Literal["custom", "json-patch"] = "custom"


class ActionRequest(_Lenient):
    action: Literal["click_at", "type", "key", "scroll"]
    x: float | None = Field(None, ge=-100_000, le=100_000)
    y: float | None = Field(None, ge=-100_000, le=100_000)
    button: Literal["left", "right", "middle"] = "left"
    double: bool = False
    value: str | None = Field(None, max_length=64 * 1024)
    clicks: int = Field(3, ge=-100, le=100)

    @model_validator(mode="after")
    def _check(self):
        if self.action == "click_at" and (self.x is None or self.y is None):
            raise ValueError("click_at needs x and y")
        if self.action in ("type", "key") and not self.value:
            raise ValueError(f"{self.action} needs value")
        return self


class ElementRequest(WindowQuery):
    element_id: str | None = Field(None, min_length=2, max_length=32)
    selector: Selector | None = None
    dry_run: bool = False
    button: Literal["left", "right", "middle"] = "left"
    count: int = Field(1, ge=1, le=3)
    value: str | None = Field(None, max_length=64 * 1024)  # set_value
    clear_first: bool = True
    option_name: str | None = Field(None, min_length=1, max_length=1000)  # select
    option_index: int | None = Field(None, ge=0, le=100_000)
    keys: str | list[str] | None = None  # key
    confirm_token: str | None = Field(None, min_length=8, max_length=64)  # what propose_action gave
    # *_and_observe
    wait_after_ms: int = Field(1500, ge=0, le=10_000)
    since: str | None = Field(None, max_length=32)

    @model_validator(mode="after")
    def _one(self):
        if (self.element_id is None) == (self.selector is None):
            raise ValueError("give element_id or selector")
        return self


class Point(_Lenient):
    x: float = Field(ge=-100_000, le=100_000)
    y: float = Field(ge=-100_000, le=100_000)


class End(_Lenient):
    x: float | None = Field(None, ge=-100_000, le=100_000)
    y: float | None = Field(None, ge=-100_000, le=100_000)
    element_id: str | None = Field(None, min_length=2, max_length=32)
    selector: Selector | None = None

    @model_validator(mode="after")
    def _one(self):
        if sum(v is not None for v in (self.element_id, self.selector, self.x)) != 1 or (
                (self.x is None) != (self.y is None)):
            raise ValueError("an end is {x, y}, {element_id} or {selector}")
        return self


class HoverRequest(End):
    # (as WindowQuery bounds them: the element is looked up through an ElementRequest)
    window_index: int | None = Field(None, ge=0, le=10_000)
    window_uid: str | None = Field(None, min_length=1, max_length=64)
    hover_ms: int = Field(0, ge=0, le=10_000)


class DragRequest(WindowQuery):
    from_: End = Field(alias="from")
    to: End
    modifiers: list[str] = Field(default_factory=list, max_length=8)
    duration_s: float = Field(0.4, ge=0, le=10)


class WaitRequest(WindowQuery):
    any_of: list[dict[str, Any]] = Field(min_length=1, max_length=16)
    timeout_ms: int = Field(10_000, ge=0, le=60_000)
    poll_ms: int = Field(250, ge=50, le=10_000)


class WaitIdleRequest(WindowQuery):
    quiet_ms: int = Field(1000, ge=100, le=60_000)
    timeout_ms: int = Field(10_000, ge=0, le=60_000)
    poll_ms: int = Field(250, ge=50, le=10_000)


class TypeRequest(WindowQuery):
    text: str = Field(min_length=1, max_length=64 * 1024)
    wait_after_ms: int = Field(1500, ge=0, le=10_000)
    since: str | None = Field(None, max_length=32)


class KeyRequest(WindowQuery):
    keys: str | list[str]
    wait_after_ms: int = Field(1500, ge=0, le=10_000)
    since: str | None = Field(None, max_length=32)


class SnapshotDiffRequest(_Lenient):
    a: str = Field(min_length=2, max_length=32)
    b: str = Field("now", min_length=2, max_length=32)
    format: Literal["custom", "json-patch"] = "custom"


class AssertRequest(_Lenient):
    predicate: list[dict[str, Any]] = Field(min_length=1, max_length=64)


class TraceStartRequest(_Lenient):
    label: str | None = Field(None, max_length=200)


class ReplayStartRequest(_Lenient):
    path: str = Field(min_length=1, max_length=4096)  # a trace id, or its folder, as trace/stop answered
    mode: Literal["execute", "verify"] = "execute"
    on_divergence: Literal["stop", "warn", "resume"] = "warn"


class ReplayIdRequest(_Lenient):
    replay_id: str = Field(min_length=1, max_length=64)


class ProposeRequest(_Lenient):
    action: str = Field(min_length=1, max_length=64)  # click_element, click, invoke ...
    args: dict = Field(default_factory=dict)  # window_uid / window_index, element_id / selector
