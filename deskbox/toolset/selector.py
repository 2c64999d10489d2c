"""Selectors over a Scene: parse one, and find what it matches.

Grammar (whitespace around combinators is free)::

    selector  := compound (combinator compound)*
    combinator:= ">" | "/"            a child of what came before
               | "//" | whitespace    a descendant of what came before
    compound  := [role | "*" | "#" id] (predicate | pseudo)*
    predicate := "[" attribute [op value] "]"
    op        := "=" (equals) | "!=" | "~=" (regex, whole value) | "*=" (contains, any case)
    pseudo    := ":has-text(" value ")" | ":nth-of-type(" N ")" | ":" state

Attributes: ``role``, ``name``, ``value``, ``id``, ``source`` (cdp, atspi),
``visibility``, ``formula``, ``window`` (its id), ``app``, ``display``; ``index=N``
keeps the N-th (from 0) of what the compound matched so far, in reading order; a state
(``focused``, ``enabled``, ``disabled``, ``checked``, ``selected``, ``expanded``,
``collapsed``, ``editable``, ``pressed``, ``focusable``, ``multiline``, ``visible``,
``interactive``) alone means true, or takes ``=true`` / ``=false``. Roles compare
without case, spaces or dashes, and a few other toolkits' names are understood
(``Edit`` is a textbox, ``Hyperlink`` a link, ``Pane`` a group).

Windows are the roots: ``window[name*="Calc"] button[name="Bold"]`` is the Bold button
of a window whose title has Calc in it. Pure logic: the nodes are plain dicts
(``nodes_of`` makes them from a Scene), so the grammar is tested without a desktop."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any

import regex

from ..common.errors import InvalidRequestError
from .patterns import budget, compile_pattern, fullmatch

__all__ = ["Selector", "SelectorError", "parse", "select", "select_bounded", "nodes_of", "STATES"]

STATES = frozenset({"focused", "enabled", "disabled", "checked", "selected", "expanded", "collapsed", "editable",
                    "pressed", "focusable", "multiline", "visible", "interactive"})
_ATTRIBUTES = frozenset({"role", "name", "value", "id", "source", "visibility", "formula", "window", "app",
                         "display", "index"})
_ROLE_ALIASES = {"edit": "textbox", "hyperlink": "link", "pane": "group", "tabitem": "tab", "statictext": "text",
                 "checkbutton": "checkbox", "radiobutton": "radio", "pushbutton": "button", "entry": "textbox",
                 "frame": "window", "toolbarbutton": "button", "spinner": "spinbutton"}
_MAX_SELECTOR = 2000
_MAX_REGEX = 500


class SelectorError(InvalidRequestError):
    code = "invalid_selector"


@dataclass(slots=True)
class _Predicate:
    attribute: str
    op: str | None  # None: a state alone
    value: str | None
    pattern: regex.Pattern | None = None


@dataclass(slots=True)
class _Compound:
    role: str | None = None  # normalised; None: any
    id: str | None = None
    predicates: list[_Predicate] = field(default_factory=list)
    has_text: list[str] = field(default_factory=list)
    nth_of_type: int | None = None
    index: int | None = None


@dataclass(slots=True)
class Selector:
    text: str
    steps: list[tuple[str, _Compound]]  # (combinator, compound); the first's combinator is ""


def normalise_role(role: str) -> str:
    flat = re.sub(r"[\s_-]+", "", role).lower()
    return _ROLE_ALIASES.get(flat, flat)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def fail(self, what: str) -> SelectorError:
        return SelectorError(f"selector {self.text!r}: {what} at position {self.i}")

    def peek(self, n: int = 1) -> str:
        return self.text[self.i:self.i + n]

    def spaces(self) -> bool:
        start = self.i
        while self.i < len(self.text) and self.text[self.i].isspace():
            self.i += 1
        return self.i > start

    def ident(self) -> str:
        m = re.compile(r"[\w\-.]+").match(self.text, self.i)
        if m is None:
            raise self.fail("expected a name")
        self.i = m.end()
        return m.group(0)

    def value(self) -> str:
        quote = self.peek()
        if quote in ("'", '"'):
            out = []
            self.i += 1
            while self.i < len(self.text):
                c = self.text[self.i]
                if c == "\\" and self.i + 1 < len(self.text):
                    out.append(self.text[self.i + 1])
                    self.i += 2
                    continue
                if c == quote:
                    self.i += 1
                    return "".join(out)
                out.append(c)
                self.i += 1
            raise self.fail("unterminated string")
        m = re.compile(r"[^\]\)\s]+").match(self.text, self.i)
        if m is None:
            raise self.fail("expected a value")
        self.i = m.end()
        return m.group(0)

    def parse(self) -> Selector:
        if not self.text.strip():
            raise SelectorError("the selector is empty")
        if len(self.text) > _MAX_SELECTOR:
            raise SelectorError(f"a selector is at most {_MAX_SELECTOR} characters")
        steps: list[tuple[str, _Compound]] = []
        self.spaces()
        combinator = ""
        while True:
            steps.append((combinator, self.compound()))
            spaced = self.spaces()
            if self.i >= len(self.text):
                break
            if self.peek(2) == "//":
                combinator, self.i = "descendant", self.i + 2
            elif self.peek() in (">", "/"):
                combinator, self.i = "child", self.i + 1
            elif spaced:
                combinator = "descendant"
            else:
                raise self.fail(f"unexpected {self.peek()!r}")
            self.spaces()
            if self.i >= len(self.text):
                raise self.fail("a combinator with nothing after it")
        return Selector(self.text, steps)

    def compound(self) -> _Compound:
        c = _Compound()
        start = self.i
        if self.peek() == "*":
            self.i += 1
        elif self.peek() == "#":
            self.i += 1
            c.id = self.ident()
        elif self.peek() and (self.peek().isalpha() or self.peek() == "_"):
            c.role = normalise_role(self.ident())
        while self.i < len(self.text):
            if self.peek() == "[":
                self.i += 1
                self.predicate(c)
            elif self.peek() == ":":
                self.i += 1
                self.pseudo(c)
            else:
                break
        if self.i == start:
            raise self.fail("expected a role, *, #id, [predicate] or :pseudo")
        return c

    def predicate(self, c: _Compound) -> None:
        self.spaces()
        attribute = self.ident().lower().replace("-", "_")
        if attribute == "keyboard_shortcut":
            raise SelectorError("keyboard_shortcut is not in the Scene; select by name or role",
                                code="predicate_unsupported")
        if attribute not in _ATTRIBUTES and attribute not in STATES:
            raise self.fail(f"unknown attribute {attribute!r} (attributes: {sorted(_ATTRIBUTES)}; "
                            f"states: {sorted(STATES)})")
        self.spaces()
        op = None
        for candidate in ("~=", "!=", "*=", "="):
            if self.peek(len(candidate)) == candidate:
                op = candidate
                self.i += len(candidate)
                break
        value = None
        if op is not None:
            self.spaces()
            value = self.value()
            self.spaces()
        if self.peek() != "]":
            raise self.fail("expected ]")
        self.i += 1
        if attribute == "index":
            if op != "=" or value is None or not value.isdigit():
                raise self.fail("index takes =N, N from 0")
            c.index = int(value)
            return
        if attribute in STATES:
            if op not in (None, "=") or (value is not None and value.lower() not in ("true", "false")):
                raise self.fail(f"a state takes nothing, =true or =false: [{attribute}]")
            c.predicates.append(_Predicate(attribute, None, value.lower() if value else "true"))
            return
        if op is None:
            raise self.fail(f"{attribute} needs an operator: =, !=, ~= or *=")
        pattern = None
        if op == "~=":
            if len(value) > _MAX_REGEX:
                raise self.fail(f"a regex is at most {_MAX_REGEX} characters")
            try:
                pattern = compile_pattern(value)
            except InvalidRequestError as exc:
                raise self.fail(exc.message) from None
        if attribute == "role":
            value = normalise_role(value) if op in ("=", "!=") else value
        c.predicates.append(_Predicate(attribute, op, value, pattern))

    def pseudo(self, c: _Compound) -> None:
        name = self.ident().lower()
        if name in ("has-text", "nth-of-type"):
            if self.peek() != "(":
                raise self.fail(f":{name} needs (...)")
            self.i += 1
            self.spaces()
            value = self.value()
            self.spaces()
            if self.peek() != ")":
                raise self.fail("expected )")
            self.i += 1
            if name == "has-text":
                c.has_text.append(value.lower())
            elif not value.isdigit() or int(value) < 1:
                raise self.fail(":nth-of-type takes N from 1")
            else:
                c.nth_of_type = int(value)
        elif name in STATES:
            c.predicates.append(_Predicate(name, None, "true"))
        else:
            raise self.fail(f"unknown pseudo-class :{name} (:has-text, :nth-of-type, or a state)")


def parse(text: str) -> Selector:
    return _Parser(text).parse()


def nodes_of(scene_json: dict[str, Any]) -> list[dict[str, Any]]:
    """A Scene's windows (as roots) and elements as selector nodes, in reading order:
    each window followed by its elements."""
    apps = {}
    windows = []
    for app in scene_json.get("apps") or ():
        for w in app.get("windows") or ():
            apps[w["id"]] = app.get("name")
            windows.append(w)
    by_window: dict[Any, list[dict]] = {}
    for e in scene_json.get("ax") or ():
        node = dict(e)
        node["app"] = apps.get(e.get("window_id"))
        if node.get("parent") is None and e.get("window_id") in apps:
            node["parent"] = e["window_id"]
        by_window.setdefault(e.get("window_id"), []).append(node)
    out: list[dict[str, Any]] = []
    for w in windows:
        out.append({"id": w["id"], "role": "window", "name": w.get("title") or "", "value": None,
                    "bbox": w.get("bounds"), "display_id": w.get("display_id"), "window_id": w["id"],
                    "source": "window", "states": ["focused"] if w.get("focused") else [], "actions": [],
                    "visibility": "visible" if w.get("bounds") else "hidden", "parent": None,
                    "app": apps.get(w["id"]), "kind": "window"})
        out += by_window.pop(w["id"], [])
    for rest in by_window.values():
        out += rest
    return out


async def select_bounded(selector: Selector | str, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`select` for a request: a selector with a regex is matched in a thread and
    within the patterns' time limit (``patterns``), so that it cannot hold the scene."""
    sel = parse(selector) if isinstance(selector, str) else selector
    if not any(p.pattern is not None for _, c in sel.steps for p in c.predicates):
        return select(sel, nodes)
    with budget():
        return await asyncio.to_thread(select, sel, nodes)


def select(selector: Selector | str, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The nodes ``selector`` matches, in reading order."""
    sel = parse(selector) if isinstance(selector, str) else selector
    by_id = {n["id"]: n for n in nodes}
    children: dict[Any, list[dict]] = {}
    for n in nodes:
        children.setdefault(n.get("parent"), []).append(n)
    order = {n["id"]: i for i, n in enumerate(nodes)}
    current: list[dict] | None = None
    for combinator, compound in sel.steps:
        if current is None:
            candidates = nodes
        else:
            chosen = {n["id"] for n in current}
            if combinator == "child":
                candidates = [n for n in nodes if n.get("parent") in chosen]
            else:
                candidates = [n for n in nodes if _has_ancestor_in(n, chosen, by_id)]
        matched = [n for n in candidates if _matches(compound, n, children, by_id)]
        if compound.index is not None:
            matched = matched[compound.index:compound.index + 1]
        current = sorted(matched, key=lambda n: order[n["id"]])
    return current or []


def _has_ancestor_in(node: dict, ids: set, by_id: dict) -> bool:
    seen = set()
    parent = node.get("parent")
    while parent is not None and parent not in seen:
        if parent in ids:
            return True
        seen.add(parent)
        parent = by_id.get(parent, {}).get("parent")
    return False


def _field(node: dict, attribute: str) -> str | None:
    value = {"window": node.get("window_id"), "display": node.get("display_id")}.get(attribute, node.get(attribute))
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _state(node: dict, state: str) -> bool:
    states = node.get("states") or ()
    if state == "enabled":
        return "disabled" not in states
    if state == "visible":
        return node.get("visibility") in ("visible", "partial")
    if state == "interactive":
        return bool(node.get("actions"))
    return state in states


def _matches(c: _Compound, node: dict, children: dict, by_id: dict) -> bool:
    if c.id is not None and node["id"] != c.id:
        return False
    if c.role is not None and normalise_role(node.get("role") or "") != c.role:
        return False
    for p in c.predicates:
        if p.op is None:
            if _state(node, p.attribute) != (p.value == "true"):
                return False
            continue
        have = _field(node, p.attribute)
        if p.attribute == "role" and have is not None and p.op in ("=", "!="):
            have = normalise_role(have)
        if p.op == "=" and have != p.value:
            return False
        if p.op == "!=" and have == p.value:
            return False
        if p.op == "~=" and (have is None or not fullmatch(p.pattern, have)):
            return False
        if p.op == "*=" and (have is None or p.value.lower() not in have.lower()):
            return False
    for text in c.has_text:
        if not _has_text(node, text, children):
            return False
    if c.nth_of_type is not None:
        role = normalise_role(node.get("role") or "")
        same = [n for n in children.get(node.get("parent"), ()) if normalise_role(n.get("role") or "") == role]
        if len(same) < c.nth_of_type or same[c.nth_of_type - 1] is not node:
            return False
    return True


def _has_text(node: dict, text: str, children: dict) -> bool:
    todo, seen = [node], set()
    while todo:
        n = todo.pop()
        if n["id"] in seen:
            continue
        seen.add(n["id"])
        if text in (n.get("name") or "").lower() or text in (n.get("value") or "").lower():
            return True
        todo += children.get(n["id"], ())
    return False
