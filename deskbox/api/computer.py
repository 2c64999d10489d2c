"""The query every computer adapter takes (``POST /api/v1/computer/{provider}``), and
Anthropic's computer tool actions: the adapter validates its body with them, and the MCP
server's ``computer`` tool takes the same. OpenAI's and Gemini's actions are their
adapters' own (``deskbox/computer``): nothing else reads them."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, RootModel, model_validator

__all__ = ["ScreenQuery", "AnthropicQuery", "AnthropicAction", "Key", "HoldKey", "Type", "CursorPosition",
           "MouseMove", "MouseButton", "Click", "Drag", "Scroll", "Wait", "Screenshot", "Zoom", "MAX_SECONDS"]


class ScreenQuery(BaseModel):
    """Query parameters every adapter takes."""

    model_config = ConfigDict(extra="forbid")
    display: int = Field(0, ge=0, description="the display to act on and capture")
    display_width: int | None = Field(None, ge=16, le=8192,
                                      description="the width the model was told (default: the display's)")
    display_height: int | None = Field(None, ge=16, le=8192,
                                       description="the height the model was told (default: the display's)")
    settle_ms: int = Field(1500, ge=0, le=10_000,
                           description="how long to wait at most for the screen to settle before the screenshot")

    @model_validator(mode="after")
    def _both(self) -> "ScreenQuery":
        if (self.display_width is None) != (self.display_height is None):
            raise ValueError("give display_width and display_height together, or neither")
        return self


Coordinate = tuple[float, float]
MAX_SECONDS = 100


class AnthropicQuery(ScreenQuery):
    tool: Literal["computer_20250124", "computer_20251124"] = Field(
        "computer_20251124", description="the tool version the model was given (zoom needs computer_20251124)")
    tool_use_id: str | None = Field(None, max_length=256,
                                    description="the tool_use block's id: the reply then carries the whole tool_result")


class _Action(BaseModel):
    # Claude fills the tool's own schema; a field this action does not take is a mistake
    # worth a 400 (ignoring it could turn one action into another).
    model_config = ConfigDict(extra="forbid")


class Key(_Action):
    action: Literal["key"]
    text: str = Field(min_length=1, max_length=1000)


class HoldKey(_Action):
    action: Literal["hold_key"]
    text: str = Field(min_length=1, max_length=200)
    duration: float = Field(ge=0, le=MAX_SECONDS)


class Type(_Action):
    action: Literal["type"]
    text: str = Field(min_length=1, max_length=64 * 1024)


class CursorPosition(_Action):
    action: Literal["cursor_position"]


class MouseMove(_Action):
    action: Literal["mouse_move"]
    coordinate: Coordinate


class MouseButton(_Action):
    action: Literal["left_mouse_down", "left_mouse_up"]
    coordinate: Coordinate | None = None


class Click(_Action):
    action: Literal["left_click", "right_click", "middle_click", "double_click", "triple_click"]
    coordinate: Coordinate | None = None
    text: str | None = Field(None, max_length=100, description='modifier keys held while clicking, e.g. "shift"')
    key: str | None = Field(None, max_length=100, description="the same, as the reference implementation names it")


class Drag(_Action):
    action: Literal["left_click_drag"]
    start_coordinate: Coordinate | None = None
    coordinate: Coordinate


class Scroll(_Action):
    action: Literal["scroll"]
    coordinate: Coordinate | None = None
    scroll_direction: Literal["up", "down", "left", "right"]
    scroll_amount: int = Field(ge=1, le=100, description="wheel notches")
    text: str | None = Field(None, max_length=100, description='modifier keys held while scrolling, e.g. "ctrl"')


class Wait(_Action):
    action: Literal["wait"]
    duration: float = Field(ge=0, le=MAX_SECONDS)


class Screenshot(_Action):
    action: Literal["screenshot"]


class Zoom(_Action):
    action: Literal["zoom"]
    region: tuple[float, float, float, float] = Field(description="[x0, y0, x1, y1]: top-left and bottom-right corners")


class AnthropicAction(RootModel):
    """The tool_use block's ``input``: one action of the computer tool."""

    root: Annotated[Union[Key, HoldKey, Type, CursorPosition, MouseMove, MouseButton, Click, Drag, Scroll, Wait,
                          Screenshot, Zoom], Field(discriminator="action")]
