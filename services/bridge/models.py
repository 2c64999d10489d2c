"""Request models of the CDP bridge."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["LayoutQuery", "TabsRequest", "NavigateRequest"]


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

    @model_validator(mode="after")
    def _check(self) -> "TabsRequest":
        if self.action == "new" and not self.url:
            self.url = "about:blank"
        if self.action in ("activate", "close") and not self.id:
            raise ValueError(f"{self.action} needs id")
        return self


class NavigateRequest(_Strict):
    url: str = Field(min_length=1, max_length=8192)
    tab: str | None = Field(None, min_length=1, max_length=64)
