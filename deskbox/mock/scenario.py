"""A mock scenario: windows and element trees per state, reactions to actions, and the
oracles that say whether the task succeeded or failed. Read from YAML and validated here.

    name: login
    initial_state: form
    states:
      form:
        windows:
          - {id: w1, title: Sign in, app: example, bounds: [0, 0, 1280, 800], focused: true,
             tree: [{id: user, role: textbox, name: Username, bounds: [100, 100, 300, 30]}, ...]}
        reactions:
          - on: {action: click, target: submit}
            when: [{id: user, value_not_empty: true}]
            set: [{id: status, name: "Welcome, {value:user}"}]
            transition_to: done
    oracles:
      success: [{kind: element_exists, selector: 'text[name~="Welcome.*"]'}]
      failure: [{kind: element_exists, selector: 'alert'}]

Element ``id``s are the scenario's own; the Scene gives each an id of its own (``a0-N``),
the same for as long as the element exists. Reactions fire after an action's own effect
(typing adds to a field's value, a checkbox's click toggles it), in order; the first whose
``on`` and ``when`` match is applied. ``{text}`` in a value is the text typed or the
option picked; ``{value:ID}`` an element's value."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..common.errors import InvalidRequestError

__all__ = ["Scenario", "Node", "load", "ACTIONS", "BUILTIN"]

ACTIONS = ("click", "double_click", "right_click", "focus", "type", "set_value", "clear_text", "select", "key",
           "invoke", "hover")
BUILTIN = Path(__file__).with_name("scenarios")  # the examples: deskbox up --mock login


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Node(_Strict):
    id: str = Field(min_length=1, max_length=100, pattern=r"^[\w.-]+$")
    role: str = Field(min_length=1, max_length=50)
    name: str = Field("", max_length=1000)
    value: str | None = Field(None, max_length=10_000)
    bounds: tuple[int, int, int, int] | None = None  # display pixels
    states: list[str] = Field(default_factory=list, max_length=20)
    options: list[str] = Field(default_factory=list, max_length=200)  # a combobox's or listbox's
    secret: bool = False  # a password field: its value is never shown
    children: list["Node"] = Field(default_factory=list, max_length=500)


class WindowSpec(_Strict):
    id: str = Field(min_length=1, max_length=64, pattern=r"^[\w.-]+$")
    title: str = Field("", max_length=500)
    app: str = Field("app", min_length=1, max_length=100)
    bounds: tuple[int, int, int, int]
    focused: bool = False
    tree: list[Node] = Field(default_factory=list, max_length=500)


class On(_Strict):
    action: Literal["click", "double_click", "right_click", "focus", "type", "set_value", "clear_text", "select",
                    "key", "invoke", "hover"]
    target: str | None = None  # a scenario id; none: any
    text_regex: str | None = Field(None, max_length=500)  # the text typed, set, picked or the keys


class When(_Strict):
    id: str
    value: str | None = None
    value_not_empty: bool | None = None
    value_regex: str | None = Field(None, max_length=500)
    state: str | None = None  # holds this state (checked ...)


class Set(_Strict):
    id: str
    value: str | None = None
    name: str | None = None
    add_states: list[str] = Field(default_factory=list)
    remove_states: list[str] = Field(default_factory=list)


class Reaction(_Strict):
    on: On
    when: list[When] = Field(default_factory=list)
    set: list[Set] = Field(default_factory=list)
    transition_to: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _yaml_on(cls, data: Any) -> Any:
        # YAML 1.1 reads a bare `on:` key as the boolean true; `match:` says the same.
        if isinstance(data, dict) and "on" not in data:
            for alias in (True, "match"):
                if alias in data:
                    data = {**{k: v for k, v in data.items() if k != alias}, "on": data[alias]}
                    break
        return data


class StateSpec(_Strict):
    windows: list[WindowSpec] = Field(min_length=1, max_length=20)
    reactions: list[Reaction] = Field(default_factory=list, max_length=200)


class Oracles(_Strict):
    success: list[dict[str, Any]] = Field(default_factory=list)
    failure: list[dict[str, Any]] = Field(default_factory=list)


class Scenario(_Strict):
    name: str = Field(min_length=1, max_length=100)
    description: str = ""
    display: tuple[int, int] = (1280, 800)
    initial_state: str
    states: dict[str, StateSpec] = Field(min_length=1)
    oracles: Oracles = Oracles()

    @model_validator(mode="after")
    def _linked(self) -> "Scenario":
        if self.initial_state not in self.states:
            raise ValueError(f"initial_state {self.initial_state!r} is not among the states {sorted(self.states)}")
        for name, state in self.states.items():
            for r in state.reactions:
                if r.transition_to is not None and r.transition_to not in self.states:
                    raise ValueError(f"state {name}: transition_to {r.transition_to!r} is not a state")
        return self


def load(where: str) -> Scenario:
    """A scenario from a YAML file, or one of the examples by name (``login``, ``settings``)."""
    path = Path(where)
    if not path.exists() and (BUILTIN / f"{where}.yaml").exists():
        path = BUILTIN / f"{where}.yaml"
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise InvalidRequestError(f"cannot read the scenario {where!r}: {exc} (examples: "
                                  f"{sorted(p.stem for p in BUILTIN.glob('*.yaml'))})",
                                  code="scenario_invalid") from None
    except yaml.YAMLError as exc:
        raise InvalidRequestError(f"{path}: not YAML: {exc}", code="scenario_invalid") from None
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise InvalidRequestError(f"{path}: {exc}", code="scenario_invalid") from None
