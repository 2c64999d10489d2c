"""Semantic element references: a recorded step ("click the Submit button near (140,
220)") -> the best matching element of the current scene, with its score, the runner-up
and whether the choice is ambiguous. Accessibility elements are tried first; OCR text
only when no accessibility element matches well.

Scores are in 0..1: a weighted mean of role agreement, name similarity and closeness of
box centres, over the parts the request gives. Closeness is judged against the size of
the recorded box: a neighbour one button-width away scores low, so two look-alike
buttons side by side are told apart by place."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Iterable

from ..geometry import Rect, device_rect, rect_center
from .elements import Element, normalize_atspi_role
from .scene_json import OcrItem

__all__ = ["Match", "resolve", "name_similarity", "place_score", "AMBIGUOUS_GAP", "MIN_SCORE"]

AMBIGUOUS_GAP = 0.08  # a runner-up this close means we cannot tell them apart
MIN_SCORE = 0.5  # below this nothing matches
_WEIGHTS = {"role": 0.25, "name": 0.5, "place": 0.25}


@dataclass(frozen=True, slots=True)
class Match:
    id: str
    score: float
    kind: str  # "ax" or "ocr"
    role: str | None
    name: str
    bbox: tuple[int, int, int, int] | None
    display_id: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "score": round(self.score, 3), "kind": self.kind, "role": self.role,
                "name": self.name, "bbox": list(self.bbox) if self.bbox else None, "display_id": self.display_id}


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def name_similarity(want: str, have: str) -> float:
    a, b = _norm(want), _norm(have)
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    ratio = difflib.SequenceMatcher(None, a, b).ratio()
    if a in b or b in a:
        ratio = max(ratio, 0.75 * min(len(a), len(b)) / max(len(a), len(b)) + 0.2)
    return ratio


def _role_score(want: str, have: str | None) -> float:
    if have is None:
        return 0.0
    want_n = normalize_atspi_role(want.lower()) if " " in want else want.lower()
    return 1.0 if want_n == have.lower() else 0.0


_MIN_REACH = 40.0  # device px: the scale of "near" for a recorded point or a tiny box


def place_score(want: tuple[float, float, float, float], have: Rect | None, *, reach: float = 1.0) -> float:
    """1 when ``have``'s centre is ``want``'s, falling off over ``reach`` times the
    recorded box's diagonal (at least ``_MIN_REACH``)."""
    if have is None:
        return 0.0
    wx, wy = want[0] + want[2] / 2, want[1] + want[3] / 2
    hx, hy = rect_center(have)
    scale = reach * max(_MIN_REACH, math.hypot(want[2], want[3]))
    return math.exp(-math.hypot(wx - hx, wy - hy) / scale)


def _score(role: str | None, name: str | None, bbox, cand_role: str | None, cand_name: str,
           cand_box: Rect | None) -> float:
    total = weight = 0.0
    if role:
        total += _WEIGHTS["role"] * _role_score(role, cand_role)
        weight += _WEIGHTS["role"]
    if name:
        total += _WEIGHTS["name"] * name_similarity(name, cand_name)
        weight += _WEIGHTS["name"]
    if bbox is not None:
        total += _WEIGHTS["place"] * place_score(bbox, cand_box)
        weight += _WEIGHTS["place"]
    return total / weight if weight else 0.0


def resolve(role: str | None, name: str | None, bbox, *, elements: Iterable[Element], ocr: Iterable[OcrItem],
            display: int | None = None) -> tuple[Match | None, Match | None, bool]:
    """(best, runner-up, ambiguous) for a recorded ``role``, ``name`` and ``bbox``
    (display-local device px), any of which may be None."""
    ranked: list[Match] = []
    for e in elements:
        if display is not None and e.display_id != display:
            continue
        if e.visibility == "hidden":
            continue
        s = _score(role, name, bbox, e.role, e.name, e.bbox)
        ranked.append(Match(e.id, s, "ax", e.role, e.name, device_rect(e.bbox) if e.bbox else None, e.display_id))
    ranked.sort(key=lambda m: -m.score)
    if (not ranked or ranked[0].score < MIN_SCORE) and name:
        # Text the accessibility tree does not have: what OCR read on screen.
        for o in ocr:
            if display is not None and o.display_id != display:
                continue
            s = _score(None, name, bbox, None, o.text, Rect(*o.bbox))
            ranked.append(Match(o.id, s, "ocr", None, o.text, tuple(o.bbox), o.display_id))
        ranked.sort(key=lambda m: -m.score)
    ranked = [m for m in ranked if m.score > 0]
    best = ranked[0] if ranked and ranked[0].score >= MIN_SCORE else None
    runner = ranked[1] if len(ranked) > 1 else None
    ambiguous = best is not None and runner is not None and best.score - runner.score < AMBIGUOUS_GAP
    return best, runner, ambiguous
