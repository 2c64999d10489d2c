"""OSWorld's computer_13 action space on deskbox's pyautogui.

An action is ``{"action_type": "CLICK", "parameters": {"x": 10, "y": 20, "button":
"right"}}`` (the parameters may also sit beside action_type, and WAIT, FAIL and DONE may
be bare strings), as OSWorld documents it. ``parse`` turns one into the pyautogui calls
OSWorld's controller makes for it; ``run`` makes them and returns the verdict ("DONE" or
"FAIL") or None. From a shell: ``python -m pyautogui.computer13 '<action JSON>'``.

Differences from OSWorld's controller, on purpose: MOVE_TO moves straight to the point
(OSWorld glides there over a random 0.5-1 s with a random easing, for show); WAIT sleeps
here (``seconds``, default 2 s, what OSWorld's ``DesktopEnv.step`` pauses), where
OSWorld's controller leaves the pause to its caller.
"""

from __future__ import annotations

import importlib
import json
import numbers
import sys
from dataclasses import dataclass, field
from typing import Any

from ._errors import BadArgument
from ._keys import KEYBOARD_KEYS

__all__ = ["ACTION_TYPES", "Call", "parse", "run", "main", "WAIT_SECONDS"]

ACTION_TYPES = (
    "MOVE_TO", "CLICK", "MOUSE_DOWN", "MOUSE_UP", "RIGHT_CLICK", "DOUBLE_CLICK", "DRAG_TO", "SCROLL",
    "TYPING", "PRESS", "KEY_DOWN", "KEY_UP", "HOTKEY", "WAIT", "FAIL", "DONE",
)
VERDICTS = ("FAIL", "DONE")
WAIT_SECONDS = 2.0
BUTTONS = ("left", "right", "middle")


@dataclass(frozen=True)
class Call:
    """One pyautogui call: the function's name and its arguments."""

    function: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


def _params(action: dict, allowed: tuple[str, ...]) -> dict:
    params = action.get("parameters") if "parameters" in action else {
        k: v for k, v in action.items() if k != "action_type"}
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise BadArgument(f"parameters must be an object, not {params!r}")
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise BadArgument(f"{action['action_type']} takes {', '.join(allowed) or 'no parameters'}; "
                          f"unknown: {', '.join(unknown)}")
    return params


def _number(params: dict, name: str, kind: type = float) -> Any:
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or (kind is int and value != int(value)):
        raise BadArgument(f"{name} must be {'an integer' if kind is int else 'a number'}, not {value!r}")
    return value


def _xy(params: dict, required: bool) -> tuple[Any, Any] | None:
    has_x, has_y = "x" in params, "y" in params
    if has_x != has_y:
        raise BadArgument("give both x and y, or neither")
    if not has_x:
        if required:
            raise BadArgument("x and y are required")
        return None
    return _number(params, "x"), _number(params, "y")


def _button(params: dict) -> str | None:
    button = params.get("button")
    if button is None:
        return None
    if not isinstance(button, str) or button.lower() not in BUTTONS:
        raise BadArgument(f"button must be one of {', '.join(BUTTONS)}, not {button!r}")
    return button.lower()


def _key(params: dict, name: str = "key") -> str:
    if name not in params:
        raise BadArgument(f"{name} is required")
    key = params[name]
    if not isinstance(key, str) or key.lower() not in KEYBOARD_KEYS:
        raise BadArgument(f"{key!r} is not one of pyautogui's KEYBOARD_KEYS")
    return key


def _move_to(p: dict) -> list[Call]:
    xy = _xy(p, required=False)
    return [Call("moveTo", xy)] if xy else []


def _click(p: dict) -> list[Call]:
    kwargs: dict[str, Any] = {}
    xy = _xy(p, required=False)
    if xy:
        kwargs.update(x=xy[0], y=xy[1])
    if "num_clicks" in p:
        clicks = _number(p, "num_clicks", int)
        if clicks not in (1, 2, 3):
            raise BadArgument(f"num_clicks must be 1, 2 or 3, not {clicks!r}")
        kwargs["clicks"] = int(clicks)
    button = _button(p)
    if button:
        kwargs["button"] = button
    return [Call("click", (), kwargs)]


def _mouse(function: str):
    def plan(p: dict) -> list[Call]:
        button = _button(p)
        return [Call(function, (), {"button": button} if button else {})]

    return plan


def _at(function: str):
    def plan(p: dict) -> list[Call]:
        xy = _xy(p, required=False)
        return [Call(function, (), {"x": xy[0], "y": xy[1]} if xy else {})]

    return plan


def _drag_to(p: dict) -> list[Call]:
    x, y = _xy(p, required=True)  # type: ignore[misc]
    return [Call("dragTo", (x, y), {"duration": 1.0, "button": "left", "mouseDownUp": True})]


def _scroll(p: dict) -> list[Call]:
    if "dx" not in p and "dy" not in p:
        raise BadArgument("SCROLL needs dx, dy or both")
    calls = []
    if "dx" in p:
        calls.append(Call("hscroll", (int(_number(p, "dx", int)),)))
    if "dy" in p:
        calls.append(Call("vscroll", (int(_number(p, "dy", int)),)))
    return calls


def _typing(p: dict) -> list[Call]:
    if not isinstance(p.get("text"), str):
        raise BadArgument(f"TYPING needs text, a string; got {p.get('text')!r}")
    return [Call("typewrite", (p["text"],))]


def _keyed(function: str):
    def plan(p: dict) -> list[Call]:
        return [Call(function, (_key(p),))]

    return plan


def _hotkey(p: dict) -> list[Call]:
    keys = p.get("keys")
    if not isinstance(keys, list) or not keys:
        raise BadArgument(f"HOTKEY needs keys, a list of key names; got {keys!r}")
    for key in keys:
        _key({"key": key})
    return [Call("hotkey", tuple(keys))]


def _wait(p: dict) -> list[Call]:
    given = [name for name in ("seconds", "duration", "time") if name in p]
    seconds = _number(p, given[0]) if given else WAIT_SECONDS
    if seconds < 0:
        raise BadArgument(f"WAIT cannot wait {seconds} seconds")
    return [Call("sleep", (seconds,))]


# action type -> (allowed parameters, planner)
_ACTIONS = {
    "CLICK": (("button", "x", "y", "num_clicks"), _click),
    "DONE": ((), lambda p: []),
    "DOUBLE_CLICK": (("x", "y"), _at("doubleClick")),
    "DRAG_TO": (("x", "y"), _drag_to),
    "FAIL": ((), lambda p: []),
    "HOTKEY": (("keys",), _hotkey),
    "KEY_DOWN": (("key",), _keyed("keyDown")),
    "KEY_UP": (("key",), _keyed("keyUp")),
    "MOUSE_DOWN": (("button",), _mouse("mouseDown")),
    "MOUSE_UP": (("button",), _mouse("mouseUp")),
    "MOVE_TO": (("x", "y"), _move_to),
    "PRESS": (("key",), _keyed("press")),
    "RIGHT_CLICK": (("x", "y"), _at("rightClick")),
    "SCROLL": (("dx", "dy"), _scroll),
    "TYPING": (("text",), _typing),
    "WAIT": (("seconds", "duration", "time"), _wait),
}


def _action_dict(action: Any) -> dict:
    if isinstance(action, str):
        text = action.strip()
        if text.startswith("{"):
            try:
                action = json.loads(text)
            except ValueError as exc:
                raise BadArgument(f"not a computer_13 action: {exc}") from None
        else:
            action = {"action_type": text}
    if not isinstance(action, dict) or not isinstance(action.get("action_type"), str):
        raise BadArgument(f"a computer_13 action is {{'action_type': ..., 'parameters': {{...}}}}, not {action!r}")
    return action


def action_type(action: Any) -> str:
    kind = _action_dict(action)["action_type"].upper()
    if kind not in _ACTIONS:
        raise BadArgument(f"unknown action_type {kind!r}; computer_13 has {', '.join(ACTION_TYPES)}")
    return kind


def parse(action: Any) -> list[Call]:
    """The pyautogui calls a computer_13 action stands for (none for FAIL and DONE)."""
    kind = action_type(action)
    allowed, plan = _ACTIONS[kind]
    return plan(_params({**_action_dict(action), "action_type": kind}, allowed))


def run(action: Any) -> str | None:
    """Perform a computer_13 action; "DONE" or "FAIL" for those verdicts, else None."""
    calls = parse(action)
    pyautogui = importlib.import_module(__package__)
    for call in calls:
        getattr(pyautogui, call.function)(*call.args, **call.kwargs)
    kind = action_type(action)
    return kind if kind in VERDICTS else None


def main(argv: list[str] | None = None) -> int:
    """Run the actions given as JSON arguments (each one action or a list of them);
    print the verdict of the last: {"verdict": "DONE" | "FAIL" | null}."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print("usage: python -m pyautogui.computer13 '<computer_13 action as JSON>' ...", file=sys.stderr)
        return 2
    verdict = None
    for arg in argv:
        try:
            actions = json.loads(arg) if arg.strip().startswith(("{", "[")) else arg
        except ValueError as exc:
            print(f"not JSON: {exc}", file=sys.stderr)
            return 2
        for action in actions if isinstance(actions, list) else [actions]:
            verdict = run(action)
    print(json.dumps({"verdict": verdict}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
