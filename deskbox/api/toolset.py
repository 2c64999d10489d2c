"""Requests of the observer toolset: the only place they are validated, and the source of
their OpenAPI schemas."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .scene import ActRequest, Flag

__all__ = ["SketchQuery", "DescribeQuery", "FindQuery", "ObserveQuery", "WaitRequest", "AssertRequest", "SnapshotRequest", "SnapshotDiffRequest",
           "ActObserveRequest", "TypeObserveRequest", "KeyObserveRequest", "Condition", "Predicate"]

Selector = Annotated[str, Field(min_length=1, max_length=2000)]
Regex = Annotated[str, Field(min_length=1, max_length=500)]
ElementId = Annotated[str, Field(min_length=2, max_length=32, pattern=r"^[at]\d+-\d+$")]
Token = Annotated[str, Field(min_length=2, max_length=32, pattern=r"^o\d+$")]
SnapshotId = Annotated[str, Field(min_length=2, max_length=32, pattern=r"^s\d+$")]
Mode = Literal["active", "agent-turn"]
DiffForm = Literal["compact", "json-patch"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _View(_Strict):
    mode: Mode = "active"
    interactive: Flag = False
    display: int | None = Field(None, ge=0)
    window: str | None = Field(None, max_length=64)


class FindQuery(_Strict):
    selector: Selector
    mode: Mode = "active"
    limit: int = Field(50, ge=1, le=1000)


class ObserveQuery(_View):
    since: Token | None = None
    format: DiffForm = "compact"
    text: Flag = False  # the prompt text too (full observations only)
    observation: Flag = True  # observation=0: the token (and text) without the state itself


class SketchQuery(_Strict):
    mode: Mode = "active"
    window: str | None = Field(None, max_length=64)  # else a display
    display: int | None = Field(None, ge=0)  # (default: the first)
    cols: int = Field(120, ge=20, le=400)
    rows: int | None = Field(None, ge=5, le=200)  # (default: from the area's shape)


class DescribeQuery(_Strict):
    mode: Mode = "active"
    window: str | None = Field(None, max_length=64)  # (default: the focused one)
    limit: int = Field(60, ge=1, le=1000)  # interactive elements named
    # Also ask the session's vision model (--vlm-url): the window's picture and sketch
    # leave the machine, and its tokens count against max_vlm_tokens.
    vlm: Flag = False


# -- wait_for conditions --------------------------------------------------------------


class _TextCondition(_Strict):
    text: str | None = Field(None, min_length=1, max_length=1000)
    regex: Regex | None = None
    mode: Literal["tree", "ocr", "auto"] = "tree"

    @model_validator(mode="after")
    def _one(self):
        if (self.text is None) == (self.regex is None):
            raise ValueError("give text (contained, any case) or regex (searched), not both")
        return self


class ElementAppears(_Strict):
    type: Literal["element_appears"]
    selector: Selector


class ElementDisappears(_Strict):
    type: Literal["element_disappears"]
    selector: Selector | None = None
    element_id: ElementId | None = None

    @model_validator(mode="after")
    def _one(self):
        if (self.selector is None) == (self.element_id is None):
            raise ValueError("give selector or element_id")
        return self


class TextVisible(_TextCondition):
    type: Literal["text_visible"]


class _WindowByTitleOrApp(_Strict):
    title_regex: Regex | None = None
    app: str | None = Field(None, min_length=1, max_length=200)

    @model_validator(mode="after")
    def _some(self):
        if self.title_regex is None and self.app is None:
            raise ValueError("give title_regex, app or both")
        return self


class WindowAppears(_WindowByTitleOrApp):
    type: Literal["window_appears"]


class WindowDisappears(_Strict):
    type: Literal["window_disappears"]
    window_id: str | None = Field(None, min_length=1, max_length=64)
    title_regex: Regex | None = None

    @model_validator(mode="after")
    def _one(self):
        if (self.window_id is None) == (self.title_regex is None):
            raise ValueError("give window_id or title_regex")
        return self


class UrlMatches(_Strict):
    type: Literal["url_matches"]
    regex: Regex


class TreeChanges(_Strict):
    type: Literal["tree_changes"]
    since: Token


class FocusChanges(_Strict):
    type: Literal["focus_changes"]


class ScreenIdle(_Strict):
    type: Literal["screen_idle"]
    quiet_ms: int = Field(1000, ge=100, le=60_000)
    display: int = Field(0, ge=0)


Condition = Annotated[Union[ElementAppears, ElementDisappears, TextVisible, WindowAppears, WindowDisappears,
                            UrlMatches, TreeChanges, FocusChanges, ScreenIdle], Field(discriminator="type")]


class WaitRequest(_Strict):
    any_of: list[Condition] = Field(min_length=1, max_length=16)
    timeout_ms: int = Field(10_000, ge=0, le=60_000)  # (a longer wait: ask again)
    poll_ms: int = Field(250, ge=50, le=10_000)


# -- assert_state predicates ----------------------------------------------------------


class ElementExists(_Strict):
    kind: Literal["element_exists"]
    selector: Selector


class ElementAbsent(_Strict):
    kind: Literal["element_absent"]
    selector: Selector


class ValueEquals(_Strict):
    kind: Literal["value_equals"]
    selector: Selector
    expected: str | None = Field(max_length=64 * 1024)


class ValueMatches(_Strict):
    kind: Literal["value_matches"]
    selector: Selector
    regex: Regex


class TextIsVisible(_TextCondition):
    kind: Literal["text_visible"]


class WindowFocused(_WindowByTitleOrApp):
    kind: Literal["window_focused"]


class WindowExists(_Strict):
    kind: Literal["window_exists"]
    title_regex: Regex | None = None
    window_id: str | None = Field(None, min_length=1, max_length=64)
    app: str | None = Field(None, min_length=1, max_length=200)

    @model_validator(mode="after")
    def _some(self):
        if self.title_regex is None and self.window_id is None and self.app is None:
            raise ValueError("give title_regex, window_id or app")
        return self


class TreeHashEquals(_Strict):
    kind: Literal["tree_hash_equals"]
    expected_hash: str = Field(min_length=1, max_length=64)


class ScreenshotSimilar(_Strict):
    kind: Literal["screenshot_similar"]
    # A PNG or JPEG, base64; or a snapshot saved with screenshot=true.
    reference_png: str | None = Field(None, min_length=8, max_length=40 * 1024 * 1024)
    snapshot: SnapshotId | None = None
    display: int = Field(0, ge=0)
    min_ssim: float = Field(0.95, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _one(self):
        if (self.reference_png is None) == (self.snapshot is None):
            raise ValueError("give reference_png (base64) or snapshot")
        return self


Predicate = Annotated[Union[ElementExists, ElementAbsent, ValueEquals, ValueMatches, TextIsVisible, WindowFocused,
                            WindowExists, TreeHashEquals, ScreenshotSimilar], Field(discriminator="kind")]


class AssertRequest(_Strict):
    predicates: list[Predicate] = Field(min_length=1, max_length=64)
    mode: Mode = "active"


# -- snapshots -------------------------------------------------------------------------


class SnapshotRequest(_View):
    label: str | None = Field(None, max_length=200)
    ttl_s: float = Field(300, gt=0, le=3600)
    screenshot: bool = False  # keep the display's pixels too (for screenshot_similar)


class SnapshotDiffRequest(_Strict):
    a: SnapshotId
    b: SnapshotId | Literal["now"] = "now"
    format: DiffForm = "compact"


# -- act, then observe -------------------------------------------------------------------


class _Observed(_Strict):
    since: Token | None = None  # diff against this observation (else: against the scene before the action)
    format: DiffForm = "compact"


class ActObserveRequest(ActRequest, _Observed):
    pass


class TypeObserveRequest(_Observed):
    text: str = Field(min_length=1, max_length=64 * 1024)
    settle_ms: int = Field(1500, ge=0, le=10_000)


class KeyObserveRequest(_Observed):
    # As desktopd's keyboard takes them: "ctrl+s", or several in turn.
    keys: Annotated[str, Field(min_length=1, max_length=128)] | list[
        Annotated[str, Field(min_length=1, max_length=128)]] = Field(max_length=32)
    settle_ms: int = Field(1500, ge=0, le=10_000)
