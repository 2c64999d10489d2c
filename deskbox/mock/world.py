"""A scenario running: its state, what actions do to it, and the Scene it shows. The
scene aggregator serves it through the same routes as a real session (``parts()``): an
engine, an actor and a desktop that answer from the scenario instead of Sway and
Chromium. No pixels: screenshots answer 503."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from typing import Any

from ..api.scene import ActRequest
from ..common.errors import ActionFailedError, InvalidRequestError, UnavailableError
from ..geometry import Display, Rect, device_rect, probe_points
from ..scene.act import lookup_element
from ..scene.elements import INTERACTIVE_ROLES, Element
from ..scene.frames import FrameSignature
from ..scene.ids import IdRegistry
from ..scene.scene_json import Scene, apps_of
from ..scene.sources import Window
from .scenario import Node, Scenario

__all__ = ["World", "MockEngine", "MockActor", "MockDesktop"]

_TEXT_ROLES = frozenset({"textbox", "searchbox", "combobox", "spinbutton"})
_TOGGLES = frozenset({"checkbox", "switch", "togglebutton", "menuitemcheckbox"})
SECRET = "\u2022" * 8  # what a password field's value shows


@dataclass
class _Live:
    node: Node
    window: str
    parent: str | None
    value: str | None
    name: str
    states: set[str] = field(default_factory=set)


class World:
    """The scenario's state machine. ``version`` grows with every change."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.state = scenario.initial_state
        self.version = 1
        self.values: dict[str, str | None] = {}  # what actions set, by scenario id, across states
        self.names: dict[str, str] = {}
        self.added: dict[str, set[str]] = {}
        self.removed: dict[str, set[str]] = {}
        self.focused: str | None = None
        self.steps: list[dict[str, Any]] = []  # every action, for the oracle's answer

    # -- what is shown ------------------------------------------------------------------

    def live(self) -> tuple[list[Window], dict[str, _Live]]:
        spec = self.scenario.states[self.state]
        windows, nodes = [], {}
        focused_window = next((w.id for w in spec.windows if w.focused), spec.windows[0].id)
        for w in spec.windows:
            windows.append(Window(id=w.id, app_id=w.app, pid=None, title=w.title, bounds=Rect(*w.bounds),
                                  display_id=0, focused=w.id == focused_window))
            todo = [(n, None) for n in w.tree]
            while todo:
                n, parent = todo.pop(0)
                states = (set(n.states) | self.added.get(n.id, set())) - self.removed.get(n.id, set())
                if self.focused == n.id:
                    states.add("focused")
                name = re.sub(r"\{value:([\w.-]+)\}", lambda m: self.values.get(m.group(1)) or "",
                              self.names.get(n.id, n.name))  # (what was typed, in any state)
                nodes[n.id] = _Live(n, w.id, parent, self.values.get(n.id, n.value), name, states)
                todo += [(c, n.id) for c in n.children]
        return windows, nodes

    def element(self, live: _Live) -> Element:
        n = live.node
        bbox = Rect(*n.bounds) if n.bounds else None
        actions: list[str] = []
        if "disabled" not in live.states:
            if n.role in INTERACTIVE_ROLES:
                actions.append("click")
            if n.role in _TEXT_ROLES:
                actions += ["type", "set_value"]
            if n.role in INTERACTIVE_ROLES or "focusable" in live.states:
                actions.append("focus")
        value = SECRET if n.secret and live.value else live.value
        return Element(key=("mock", n.id), role=n.role, name=live.name, value=value or None, bbox=bbox, display_id=0,
                       window_id=live.window, source="mock", states=sorted(live.states), actions=actions,
                       visibility="visible" if bbox else "hidden", clip=bbox,
                       ref={"mock": n.id}, parent_key=("mock", live.parent) if live.parent else None)

    # -- acting -----------------------------------------------------------------------------

    def act(self, action: str, target: str | None, *, text: str | None = None, option: str | None = None,
            option_index: int | None = None, keys: str | list[str] | None = None) -> bool:
        """Apply an action (its own effect, then the first reaction that matches);
        whether anything changed."""
        _, nodes = self.live()
        live = nodes.get(target) if target is not None else None
        before = self._snapshot()
        said = text
        if live is not None:
            if "disabled" in live.states:
                raise ActionFailedError(f"{live.node.role} {live.name!r} is disabled", code="disabled")
            said = self._effect(action, live, text, option, option_index, keys)
        elif action == "type" and self.focused in nodes:
            said = self._effect("type", nodes[self.focused], text, None, None, None)
        elif action == "key":
            said = self._keys(nodes.get(self.focused), keys)
        self._react(action, target if live is not None else self.focused, said)
        self.steps.append({"action": action, "target": target, "text": text, "state": self.state})
        changed = self._snapshot() != before
        if changed:
            self.version += 1
        return changed

    def _effect(self, action: str, live: _Live, text: str | None, option: str | None, option_index: int | None,
                keys: str | list[str] | None) -> str | None:
        n = live.node
        if action in ("click", "double_click", "invoke", "focus"):
            if n.role in INTERACTIVE_ROLES or "focusable" in live.states:
                self.focused = n.id
            if action != "focus" and n.role in _TOGGLES:
                self._toggle(n.id, "checked", "checked" not in live.states)
            if action != "focus" and n.role == "radio":
                self._toggle(n.id, "checked", True)
            return None
        if action == "type":
            self.focused = n.id
            self.values[n.id] = (live.value or "") + (text or "")
            return text
        if action == "set_value":
            self.focused = n.id
            self.values[n.id] = text or ""
            return text
        if action == "clear_text":
            self.values[n.id] = ""
            return ""
        if action == "select":
            if option_index is not None:
                picked = n.options[option_index] if option_index < len(n.options) else None
            else:
                picked = next((o for o in n.options if o.lower() == (option or "").lower()), None)
            if picked is None:
                raise ActionFailedError(f"{n.role} {live.name!r} has no option "
                                        f"{option if option_index is None else f'#{option_index}'!r}; its options are "
                                        f"{n.options}", code="no_such_option", context={"options": n.options})
            self.values[n.id] = picked
            return picked
        if action == "key":
            self.focused = n.id
            return self._keys(live, keys)
        return None

    def _keys(self, live: _Live | None, keys: str | list[str] | None) -> str:
        pressed = [keys] if isinstance(keys, str) else list(keys or [])
        for key in pressed:
            if live is not None and key.lower() in ("backspace",) and live.value:
                self.values[live.node.id] = live.value[:-1]
            elif live is not None and key.lower() in ("ctrl+a",):
                pass
        return " ".join(pressed)

    def _toggle(self, ident: str, state: str, on: bool) -> None:
        (self.added if on else self.removed).setdefault(ident, set()).add(state)
        (self.removed if on else self.added).setdefault(ident, set()).discard(state)

    def _react(self, action: str, target: str | None, text: str | None) -> None:
        _, nodes = self.live()
        for r in self.scenario.states[self.state].reactions:
            wanted = r.on.action
            if not (wanted == action or (wanted == "click" and action in ("invoke", "double_click"))):
                continue
            if r.on.target is not None and r.on.target != target:
                continue
            if r.on.text_regex is not None and not re.fullmatch(r.on.text_regex, text or ""):
                continue
            if not all(self._holds(w, nodes) for w in r.when):
                continue
            for s in r.set:
                if s.value is not None:
                    self.values[s.id] = self._fill(s.value, text, nodes)
                if s.name is not None:
                    self.names[s.id] = self._fill(s.name, text, nodes)
                for state in s.add_states:
                    self._toggle(s.id, state, True)
                for state in s.remove_states:
                    self._toggle(s.id, state, False)
            if r.transition_to is not None:
                self.state = r.transition_to
                self.focused = None
            return

    @staticmethod
    def _holds(w: Any, nodes: dict[str, _Live]) -> bool:
        live = nodes.get(w.id)
        value = live.value if live is not None else None
        if w.value is not None and value != w.value:
            return False
        if w.value_not_empty is not None and bool(value) != w.value_not_empty:
            return False
        if w.value_regex is not None and not re.fullmatch(w.value_regex, value or ""):
            return False
        return w.state is None or (live is not None and w.state in live.states)

    @staticmethod
    def _fill(template: str, text: str | None, nodes: dict[str, _Live]) -> str:
        def value_of(m: re.Match) -> str:
            live = nodes.get(m.group(1))
            return (live.value or "") if live is not None else ""
        return re.sub(r"\{value:([\w.-]+)\}", value_of, template.replace("{text}", text or ""))

    def _snapshot(self) -> tuple:
        return (self.state, self.focused, tuple(sorted(self.values.items())), tuple(sorted(self.names.items())),
                tuple(sorted((k, tuple(sorted(v))) for k, v in self.added.items())),
                tuple(sorted((k, tuple(sorted(v))) for k, v in self.removed.items())))


class _NoIds:
    async def save(self) -> None:
        return None


class MockEngine:
    """What the scene aggregator's routes ask of its engine, answered from a World."""

    def __init__(self, world: World) -> None:
        self.world = world
        w, h = world.scenario.display
        self.display = Display(0, "MOCK-1", Rect(0, 0, w, h), 1.0, (w, h), True)
        self.ids = IdRegistry("a")
        self.text_ids = IdRegistry("t")
        self.id_store = _NoIds()
        self.atspi = None
        self.metrics = None
        self.last: Scene | None = None
        self.by_id: dict[str, Element] = {}
        self.vlm_scene: Any = None
        self.vlm_elements: Any = None
        self._built_version = 0
        self._seq = 0
        self._subscribers: set[asyncio.Queue] = set()

    async def scene(self, mode: str) -> Scene:
        if self.last is not None and self._built_version == self.world.version:
            return self.last
        windows, nodes = self.world.live()
        elements = [self.world.element(live) for live in nodes.values()]
        seen = []
        for e in elements:
            e.id = self.ids.assign(0, e.key)
            seen.append((0, e.key))
        id_of = {e.key: e.id for e in elements}
        for e in elements:
            e.parent = id_of.get(e.parent_key) if e.parent_key else None
        self.ids.retire_absent(seen)
        self._seq += 1
        scene = Scene(seq=self._seq, timestamp=time.time(), mode=mode, displays=[self.display], windows=windows,
                      focused_window=next((w for w in windows if w.focused), None), apps=apps_of(windows),
                      ax=elements, ocr=[], vlm_scene=self.vlm_scene, vlm_elements=self.vlm_elements,
                      sources={"mock": self.world.scenario.name, "desktopd": None, "cdp": "mock", "atspi": "mock",
                               "ocr": "disabled"})
        self.last, self.by_id, self._built_version = scene, {e.id: e for e in elements}, self.world.version
        for q in list(self._subscribers):
            if not q.full():
                q.put_nowait(scene)
        return scene

    def signature(self) -> FrameSignature:
        w, h = self.display.size
        return FrameSignature(w, h, max(w, h), 0, (self.world.version,))

    async def frame_signatures(self, displays: list[int]) -> dict[int, FrameSignature]:
        return {d: self.signature() for d in displays}

    async def settle(self, display_id: int, before: FrameSignature, budget_ms: int) -> tuple[bool, bool]:
        return before.blocks != self.signature().blocks, True

    def mark_dirty(self) -> None:
        return None

    def set_vlm(self, scene: Any, elements: Any) -> None:
        self.vlm_scene, self.vlm_elements = scene, elements

    def subscribe(self) -> asyncio.Queue:
        q: asyncio.Queue = asyncio.Queue(maxsize=2)
        self._subscribers.add(q)
        return q

    def unsubscribe(self, q: asyncio.Queue) -> None:
        self._subscribers.discard(q)

    async def watch(self) -> None:
        return None


class MockActor:
    """``POST /api/v1/act`` on the scenario: the receipt a real session gives."""

    def __init__(self, engine: MockEngine) -> None:
        self.engine = engine
        self.input_lock = asyncio.Lock()

    def lookup(self, ident: str) -> Element:
        return lookup_element(self.engine.by_id, self.engine.ids, ident)

    async def act(self, req: ActRequest) -> dict:
        async with self.input_lock:
            started = time.monotonic()
            await self.engine.scene("active")
            e = self.lookup(req.target)
            if req.action == "drag":
                raise ActionFailedError("drag is not played in mock mode", code="unsupported_action")
            changed = self.engine.world.act(req.action, e.ref["mock"], text=req.text, option=req.option,
                                            option_index=req.option_index, keys=req.keys)
            point = probe_points(e.bbox)[0] if e.bbox is not None else None
            return {"ok": True, "action": req.action,
                    "target": {"id": e.id, "role": e.role, "name": e.name,
                               "bbox": list(device_rect(e.bbox)) if e.bbox else None, "source": e.source,
                               "window_id": e.window_id},
                    "display_id": 0, "point": [round(point[0], 1), round(point[1], 1)] if point else None,
                    "scrolled": False, "changed": changed, "settled": True,
                    "elapsed_ms": round((time.monotonic() - started) * 1000)}


class MockDesktop:
    """desktopd's part: input at a point goes to the element there; no pixels."""

    def __init__(self, engine: MockEngine) -> None:
        self.engine = engine

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def displays(self) -> list[Display]:
        return [self.engine.display]

    async def screenshot(self, params: dict) -> tuple[bytes, dict]:
        raise UnavailableError("mock mode has no pixels: read the Scene", code="no_pixels")

    async def keyboard(self, **request: Any) -> None:
        world = self.engine.world
        if request.get("action") == "type":
            world.act("type", world.focused, text=request.get("text"))
        elif request.get("action") == "key":
            world.act("key", world.focused, keys=request.get("keys"))
        else:
            raise InvalidRequestError(f"keyboard {request.get('action')!r} is not played in mock mode")

    async def pointer(self, **request: Any) -> None:
        if request.get("action") not in ("click", "move"):
            raise InvalidRequestError(f"pointer {request.get('action')!r} is not played in mock mode")
        if request.get("action") == "move":
            return
        scene = await self.engine.scene("active")
        x, y = request.get("x"), request.get("y")
        under = [e for e in scene.ax if e.bbox is not None and e.bbox.contains(x, y)]
        if not under:
            return  # (a click on nothing)
        smallest = min(under, key=lambda e: e.bbox.w * e.bbox.h)
        action = "right_click" if request.get("button") == "right" else (
            "double_click" if request.get("count", 1) >= 2 else "click")
        self.engine.world.act(action, smallest.ref["mock"])
