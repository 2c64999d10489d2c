"""A Scene as compact prompt text: a header per display and per window, then one line per
element (``a0-12 button "Submit" [100,200,80,32] focused``), within a character or token
budget. When the budget cuts, the most useful elements are kept (visible interactive ones
of the focused window first) and a final line says what was left out and how to ask for
it."""

from __future__ import annotations

import json
from typing import Iterable

from ..geometry import device_rect
from .elements import Element
from .scene_json import OcrItem, Scene

__all__ = ["scene_text", "CHARS_PER_TOKEN"]

# A rough, tokenizer-free estimate for English-like text with ids and numbers; the
# budget is a bound an agent can rely on only when given in characters.
CHARS_PER_TOKEN = 3.5
_MAX_NAME = 120
# Room kept for the first line and the truncation note when a budget cuts.
_RESERVED = 330
_SHOWN_STATES = ("focused", "disabled", "checked", "mixed", "selected", "pressed", "expanded", "collapsed",
                 "editable", "required", "invalid", "readonly")


def _quote(text: str, limit: int = _MAX_NAME) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return json.dumps(text, ensure_ascii=False)


def element_line(e: Element) -> str:
    parts = [e.id, e.role]
    if e.name:
        parts.append(_quote(e.name))
    if e.value is not None and e.value != e.name:
        parts.append("value=" + _quote(e.value, 80))
    if e.bbox is not None:
        x, y, w, h = device_rect(e.bbox)
        parts.append(f"[{x},{y},{w},{h}]")
    parts += [s for s in e.states if s in _SHOWN_STATES]
    if e.visibility != "visible":
        parts.append(e.visibility)
    return " ".join(parts)


def ocr_line(o: OcrItem) -> str:
    x, y, w, h = o.bbox
    return f"{o.id} text {_quote(o.text)} [{x},{y},{w},{h}]"


def _priority(e: Element, focused: str | None) -> int:
    """Lower is kept first when the budget cuts."""
    tier = 0 if e.window_id == focused else 3
    if e.interactive and e.visibility in ("visible", "partial"):
        return tier
    if e.visibility in ("visible", "partial"):
        return tier + 1
    return tier + 2


def scene_text(scene: Scene, elements: Iterable[Element], ocr: Iterable[OcrItem], *, max_chars: int | None,
               offscreen: bool = True) -> str:
    elements = [e for e in elements if e.visibility != "hidden" and (offscreen or e.visibility != "offscreen")]
    ocr = list(ocr)
    focused = scene.focused_window.id if scene.focused_window else None
    lines_of = [element_line(e) for e in elements]
    ocr_lines = [ocr_line(o) for o in ocr]

    headers: dict[tuple, str] = {}
    for d in scene.displays:
        headers[("d", d.id)] = f"# display {d.id} {d.name} {d.size[0]}x{d.size[1]} scale {d.scale:g}"
    for w in scene.windows:
        mark = " focused" if w.id == focused else ""
        box = w.bounds_list
        where = "[" + ",".join(map(str, box)) + "]" if box is not None else "offscreen"
        headers[("w", w.id)] = f"## window {w.id} {w.app_id or '?'} {_quote(w.title or '', 80)} {where}{mark}"

    chosen = set(range(len(elements)))
    dropped_ocr = 0
    if max_chars is not None:
        everything = _render(scene, elements, ocr, ocr_lines, lines_of, headers, chosen, focused, 0, max_chars)
        if len(everything) <= max_chars:
            return everything
        used = sum(len(h) + 1 for h in headers.values()) + _RESERVED
        order = sorted(range(len(elements)), key=lambda i: (_priority(elements[i], focused), i))
        chosen = set()
        for i in order:
            cost = len(lines_of[i]) + 1
            if used + cost > max_chars:
                break
            chosen.add(i)
            used += cost
        keep_ocr = []
        for line in ocr_lines:
            if used + len(line) + 1 > max_chars:
                break
            keep_ocr.append(line)
            used += len(line) + 1
        dropped_ocr = len(ocr_lines) - len(keep_ocr)
        ocr_lines = keep_ocr
    return _render(scene, elements, ocr, ocr_lines, lines_of, headers, chosen, focused, dropped_ocr, max_chars)


def _render(scene, elements, ocr, ocr_lines, lines_of, headers, chosen, focused, dropped_ocr, max_chars) -> str:
    out: list[str] = [f"scene {scene.seq} mode {scene.mode}"
                      + (f" focused {focused}" if focused else "")]
    for d in scene.displays:
        out.append(headers[("d", d.id)])
        in_display = [(i, e) for i, e in enumerate(elements) if e.display_id == d.id]
        for w in scene.windows:
            if w.display_id != d.id:
                continue
            out.append(headers[("w", w.id)])
            out += [lines_of[i] for i, e in in_display if e.window_id == w.id and i in chosen]
        ocr_here = [line for line, o in zip(ocr_lines, ocr) if o.display_id == d.id]
        if ocr_here:
            out.append(f"## ocr display {d.id}")
            out += ocr_here
    dropped = len(elements) - len(chosen)
    if dropped or dropped_ocr:
        out.append(f"# truncated: {dropped} of {len(elements)} elements and {dropped_ocr} ocr lines left out to fit "
                   f"{max_chars} characters (kept: visible interactive elements of the focused window first); "
                   "narrow with ?window=, ?display= or ?interactive=1, or raise max_chars")
    return "\n".join(out) + "\n"
