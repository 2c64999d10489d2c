"""Request models: the only place desktopd's HTTP input is parsed and validated."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "ScreenshotQuery",
    "PointerRequest",
    "KeyboardRequest",
    "MoveWindowRequest",
    "TabletRequest",
    "TabletEventsRequest",
    "KeyboardEventsRequest",
    "MAX_TEXT_BYTES",
]

MAX_TEXT_BYTES = 64 * 1024
# Key combinations in one keyboard request, and events in one compatibility request.
MAX_COMBINATIONS = 256
MAX_EVENTS = 1000
Coordinate = float


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_max_length=MAX_TEXT_BYTES)


class ScreenshotQuery(_Strict):
    display: int = Field(0, ge=0)
    format: Literal["png", "jpeg", "jpg", "webp", "rgb"] = "png"
    quality: int | None = Field(None, ge=1, le=100)
    width: int | None = Field(None, ge=1, le=16384)
    scale: float | None = Field(None, gt=0, le=4)
    region: tuple[int, int, int, int] | None = None
    cursor: bool = False

    @field_validator("region", mode="before")
    @classmethod
    def _split_region(cls, value: object) -> object:
        if isinstance(value, str):
            parts = value.split(",")
            if len(parts) != 4:
                raise ValueError("region is x,y,w,h in device pixels")
            return tuple(p.strip() for p in parts)
        return value

    @field_validator("cursor", mode="before")
    @classmethod
    def _cursor_flag(cls, value: object) -> object:
        if value in ("0", "1"):
            return value == "1"
        return value

    @model_validator(mode="after")
    def _check(self) -> "ScreenshotQuery":
        if self.width is not None and self.scale is not None:
            raise ValueError("give width or scale, not both")
        if self.region is not None:
            x, y, w, h = self.region
            if x < 0 or y < 0 or w <= 0 or h <= 0:
                raise ValueError("region needs x, y >= 0 and w, h > 0")
        if self.format == "jpg":
            self.format = "jpeg"
        return self


PointerAction = Literal["move", "click", "down", "up", "drag", "scroll"]
Button = Literal["left", "right", "middle", "back", "forward"]


class PointerRequest(_Strict):
    action: PointerAction
    display: int = Field(0, ge=0)
    x: Coordinate | None = None
    y: Coordinate | None = None
    button: Button = "left"
    count: int = Field(1, ge=1, le=3)
    path: list[tuple[Coordinate, Coordinate]] | None = Field(None, max_length=10_000)
    dx: float = Field(0, ge=-1000, le=1000)
    dy: float = Field(0, ge=-1000, le=1000)
    modifiers: list[str] = Field(default_factory=list, max_length=8)
    duration_ms: int = Field(0, ge=0, le=10_000)

    @model_validator(mode="after")
    def _check(self) -> "PointerRequest":
        if (self.x is None) != (self.y is None):
            raise ValueError("give both x and y, or neither")
        if self.action == "move" and self.x is None:
            raise ValueError("move needs x and y")
        if self.action == "drag":
            if not self.path:
                raise ValueError("drag needs a path of at least one [x, y] point")
        elif self.path is not None:
            raise ValueError("path is only for drag")
        if self.action == "scroll" and self.dx == 0 and self.dy == 0:
            raise ValueError("scroll needs dx or dy (wheel notches; positive dy scrolls down)")
        return self


class KeyboardRequest(_Strict):
    action: Literal["type", "key", "down", "up"]
    text: str | None = None
    keys: Annotated[str, Field(max_length=128)] | list[Annotated[str, Field(max_length=128)]] | None = Field(
        None, max_length=MAX_COMBINATIONS)
    key: str | None = Field(None, max_length=64)
    interval_ms: int = Field(0, ge=0, le=1000)

    @model_validator(mode="after")
    def _check(self) -> "KeyboardRequest":
        if self.action == "type":
            if self.text is None:
                raise ValueError("type needs text")
            if len(self.text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
                raise ValueError(f"text is over {MAX_TEXT_BYTES} bytes")
        elif self.action == "key":
            if not self.keys:
                raise ValueError('key needs keys, e.g. "ctrl+shift+t" or ["ctrl+a", "backspace"]')
        elif not self.key:
            raise ValueError(f"{self.action} needs key")
        return self


class GateStateRequest(_Strict):
    active: bool  # whether to take direct input to the scene's gate


class MoveWindowRequest(_Strict):
    display: int = Field(ge=0)


class TabletRequest(_Strict):
    """Compatibility: the tablet endpoint existing desktopd clients call."""

    model_config = ConfigDict(extra="ignore")
    x: Coordinate
    y: Coordinate
    action: Literal["tap", "click", "move", "down", "up", "double_tap", "right_click"] = "tap"
    display: int = Field(0, ge=0)


class TabletEvent(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["click", "move", "down", "up", "double_click", "right_click", "scroll"]
    x: Coordinate | None = None
    y: Coordinate | None = None
    button: Button = "left"
    dx: float = 0
    dy: float = 0
    display: int = Field(0, ge=0)


class TabletEventsRequest(_Strict):
    events: list[TabletEvent] = Field(min_length=1, max_length=MAX_EVENTS)


class KeyboardEvent(BaseModel):
    model_config = ConfigDict(extra="ignore")
    keysym: str = Field(min_length=1, max_length=64)
    state: Literal["down", "up", "press"] = "press"


class KeyboardEventsRequest(_Strict):
    events: list[KeyboardEvent] = Field(min_length=1, max_length=MAX_EVENTS)
