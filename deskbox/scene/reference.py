"""Element references: what a trace keeps of the element an action hit, so that a replay
can find that element again on a UI that has changed since.

A reference is what a person would say about the element ("the Submit button of the
Login form, in Chromium's window 'Sign in'"): role, name, value, states, its app and
window, the page's URL, the roles and names of its ancestors, and where it was (box and
Scene id, as hints only: boxes move, and ids are only stable within one session).

``resolve`` answers the element of a new Scene that fits a reference best, and how it
was found: ``element`` (accessibility or DOM element), ``ocr`` (text read on screen)
or nothing, leaving coordinates to the caller as the last resort."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..geometry import Rect, device_rect
from .elements import Element
from .resolve import name_similarity, place_score
from .scene_json import OcrItem, Scene

__all__ = ["element_ref", "element_at", "resolve", "Resolution", "MIN_SCORE", "AMBIGUOUS_GAP"]

MIN_SCORE = 0.6  # below this, no element is the one recorded
AMBIGUOUS_GAP = 0.05  # a runner-up this close: the reference cannot tell them apart
ANCESTORS = 6  # how many ancestors a reference keeps (nearest first)
PLACE_REACH = 4.0  # how far (in the recorded box's sizes) a moved element still counts as near


def element_ref(e: Element, scene: Scene, url: str | None = None) -> dict[str, Any]:
    """The reference of ``e``, an element of ``scene``."""
    window = scene.window(e.window_id)
    app = next((a["name"] for a in scene.apps if window is not None and a["pid"] == window.pid), None)
    by_id = {x.id: x for x in scene.ax}
    ancestors: list[dict[str, Any]] = []
    parent = by_id.get(e.parent) if e.parent else None
    while parent is not None and len(ancestors) < ANCESTORS:
        ancestors.append({"role": parent.role, "name": parent.name})
        parent = by_id.get(parent.parent) if parent.parent else None
    return {
        "id": e.id,
        "role": e.role,
        "name": e.name,
        "value": e.value,
        "states": list(e.states),
        "source": e.source,
        "app": app,
        "pid": window.pid if window is not None else None,
        "window_id": e.window_id,
        "window_title": window.title if window is not None else None,
        "url": url,
        "ancestors": ancestors,
        "bbox": list(device_rect(e.bbox)) if e.bbox is not None else None,
        "display_id": e.display_id,
    }


def ocr_ref(o: OcrItem, scene: Scene) -> dict[str, Any]:
    window = scene.window(o.window_id)
    return {"id": o.id, "role": "text", "name": o.text, "value": None, "states": [], "source": "ocr", "app": None,
            "pid": window.pid if window is not None else None, "window_id": o.window_id,
            "window_title": window.title if window is not None else None, "url": None, "ancestors": [],
            "bbox": list(o.bbox), "display_id": o.display_id}


def _contains(box: Rect | tuple, x: float, y: float) -> bool:
    return (box if isinstance(box, Rect) else Rect(*box)).contains(x, y)


def element_at(scene: Scene, display: int, x: float, y: float) -> dict[str, Any] | None:
    """The reference of what a pointer at (x, y) of ``display`` reaches: the smallest
    visible element there (an element inside another is drawn over it), else an OCR line
    there, else None."""
    best: Element | None = None
    for e in scene.ax:
        if e.display_id != display or e.bbox is None or e.visibility == "hidden" or not _contains(e.bbox, x, y):
            continue
        if e.clip is not None and not _contains(e.clip, x, y):
            continue
        if best is None or e.bbox.w * e.bbox.h <= best.bbox.w * best.bbox.h:
            best = e
    if best is not None:
        return element_ref(best, scene)
    text = next((o for o in scene.ocr if o.display_id == display and _contains(o.bbox, x, y)), None)
    return ocr_ref(text, scene) if text is not None else None


@dataclass(frozen=True, slots=True)
class Resolution:
    element: Element | None  # the element found (None: none fits, or OCR text below)
    ocr: OcrItem | None
    by: str | None  # "element", "ocr", or None (not found)
    score: float
    runner_up: float
    candidates: int

    @property
    def ambiguous(self) -> bool:
        return self.by is not None and self.score - self.runner_up < AMBIGUOUS_GAP

    def to_json(self) -> dict[str, Any]:
        found = self.element.id if self.element is not None else self.ocr.id if self.ocr is not None else None
        return {"by": self.by, "id": found, "score": round(self.score, 3), "runner_up": round(self.runner_up, 3),
                "ambiguous": self.ambiguous}


def _place(recorded: list | None, box: Rect | tuple | None) -> float:
    """1 at the recorded place, falling off over a few of the recorded box's sizes (a
    layout change moves things: place only breaks ties between look-alikes)."""
    if not recorded or box is None:
        return 0.5
    return place_score(tuple(recorded), box if isinstance(box, Rect) else Rect(*box), reach=PLACE_REACH)


def _ancestry(recorded: list[dict], e: Element, by_id: dict[str, Element]) -> float:
    """How many of the recorded ancestors' names the candidate's ancestors share."""
    named = [a for a in recorded if a.get("name")]
    if not named:
        return 1.0
    have = []
    parent = by_id.get(e.parent) if e.parent else None
    while parent is not None and len(have) < ANCESTORS * 2:
        have.append(parent.name)
        parent = by_id.get(parent.parent) if parent.parent else None
    hits = sum(1 for a in named if any(name_similarity(a["name"], h) > 0.85 for h in have))
    return hits / len(named)


def _window_of(scene: Scene, e: Element) -> tuple[str | None, str | None]:
    w = scene.window(e.window_id)
    if w is None:
        return None, None
    app = next((a["name"] for a in scene.apps if a["pid"] == w.pid), None)
    return app, w.title


def _score(ref: dict[str, Any], e: Element, scene: Scene, by_id: dict[str, Element]) -> float:
    if ref.get("role") and ref["role"] != e.role:
        return 0.0  # a button recorded is a button replayed
    name = ref.get("name") or ""
    if name:
        named = name_similarity(name, e.name)
        if named < 0.6:
            return 0.5 * named  # another label: another element, however close it sits
    else:
        # Nameless (an unlabelled text box): its value, its place among its ancestors.
        named = 0.7 if not e.name else 0.4
    app, title = _window_of(scene, e)
    same_app = 1.0 if not ref.get("app") or ref["app"] == app else 0.0
    same_window = 1.0 if not ref.get("window_title") or ref["window_title"] == title else 0.5
    return (0.55 * named + 0.15 * _ancestry(ref.get("ancestors") or [], e, by_id) + 0.1 * same_app
            + 0.1 * same_window + 0.1 * _place(ref.get("bbox"), e.bbox))


def resolve(ref: dict[str, Any], scene: Scene) -> Resolution:
    """The element of ``scene`` that ``ref`` names: accessibility elements first (same
    role, similar name and ancestors, same app; the place decides between look-alikes),
    then OCR text with the recorded name."""
    by_id = {e.id: e for e in scene.ax}
    display = ref.get("display_id")
    scored = sorted(((_score(ref, e, scene, by_id), e) for e in scene.ax
                     if e.visibility != "hidden" and (display is None or e.display_id == display)),
                    key=lambda pair: pair[0], reverse=True)
    if scored and scored[0][0] >= MIN_SCORE:
        runner = scored[1][0] if len(scored) > 1 else 0.0
        return Resolution(scored[0][1], None, "element", scored[0][0], runner, len(scored))
    name = ref.get("name") or ""
    if name:
        texts = sorted(((0.8 * name_similarity(name, o.text) + 0.2 * _place(ref.get("bbox"), o.bbox), o)
                        for o in scene.ocr if display is None or o.display_id == display),
                       key=lambda pair: pair[0], reverse=True)
        if texts and texts[0][0] >= MIN_SCORE:
            runner = texts[1][0] if len(texts) > 1 else 0.0
            return Resolution(None, texts[0][1], "ocr", texts[0][0], runner, len(texts))
    best = scored[0][0] if scored else 0.0
    return Resolution(None, None, None, best, scored[1][0] if len(scored) > 1 else 0.0, len(scored))
