"""Request models of the CDP bridge."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["LayoutQuery", "TabsRequest", "NavigateRequest", "ElementRequest"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LayoutQuery(_Strict):
    tab: str | None = Field(None, min_length=1, max_length=64)
    interesting: bool = False
    # Read the whole tree again instead of patching the kept one (what "agent-turn" wants).
    fresh: bool = False

    @model_validator(mode="before")
    @classmethod
    def _flags(cls, data):
        if isinstance(data, dict):
            for flag in ("interesting", "fresh"):
                if data.get(flag) in ("0", "1"):
                    data = {**data, flag: data[flag] == "1"}
        return data


class TabsRequest(_Strict):
    action: Literal["new", "activate", "close"]
    url: str | None = Field(None, max_length=8192)
    id: str | None = Field(None, min_length=1, max_length=64)

    @field_validator("url")
    @classmethod
    def _scheme(cls, value: str | None) -> str | None:
        return _url(value)

    @model_validator(mode="after")
    def _check(self) -> "TabsRequest":
        if self.action == "new" and not self.url:
            self.url = "about:blank"
        if self.action in ("activate", "close") and not self.id:
            raise ValueError(f"{self.action} needs id")
        return self


# What a tab may be sent to. javascript: is code, not a place: CDP runs it in the page
# and the navigation never happens, so it is refused.
URL_SCHEMES = ("http:", "https:", "file:", "about:", "data:", "chrome:", "blob:")


def _url(value: str | None) -> str | None:
    if value is not None and not value.lower().startswith(URL_SCHEMES):
        raise ValueError(f"url must start with one of {', '.join(URL_SCHEMES)}")
    return value


class NavigateRequest(_Strict):
    url: str = Field(min_length=1, max_length=8192)
    tab: str | None = Field(None, min_length=1, max_length=64)

    @field_validator("url")
    @classmethod
    def _scheme(cls, value: str) -> str:
        return _url(value) or value


class ElementRequest(_Strict):
    action: Literal["hit_test", "scroll_into_view", "focus", "focused", "invoke", "select", "secret"]
    tab: str = Field(min_length=1, max_length=64)
    frameId: str | None = Field(None, max_length=64)
    backendDOMNodeId: int = Field(ge=1)
    x: float | None = Field(None, ge=-100_000, le=100_000)  # viewport CSS px, for hit_test
    y: float | None = Field(None, ge=-100_000, le=100_000)
    option: str | None = Field(None, min_length=1, max_length=1000)  # select: an option's text
    option_index: int | None = Field(None, ge=0, le=100_000)  # ... or its index

    @model_validator(mode="after")
    def _check(self) -> "ElementRequest":
        if self.action == "hit_test" and (self.x is None or self.y is None):
            raise ValueError("hit_test needs x and y (viewport CSS pixels)")
        if self.action == "select" and (self.option is None) == (self.option_index is None):
            raise ValueError("select needs option (its text) or option_index")
        if self.action != "select" and (self.option is not None or self.option_index is not None):
            raise ValueError("option and option_index are for select")
        return self
