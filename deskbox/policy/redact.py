"""Redaction: secrets kept out of what an agent reads, what the logs keep and what the
screenshots show.

A secret is a field's text (a password field, a ``protected`` one, one whose name matches
a pattern), all the text of a window whose title matches a pattern, or any text matching
a text pattern (a card number). A secret element keeps its role and box, so an agent can
still fill or skip it; only its text goes. A value once seen in a secret field is
remembered and replaced wherever it shows up later (typed into a prompt, read by OCR).

With ``enabled`` off nothing is redacted, except action arguments under
``redact_arg_keys``: those never reach an audit or trace record."""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from typing import Any, Iterable

from PIL import Image, ImageFilter

from .config import RedactionConfig

__all__ = ["Box", "Redactor"]

Box = tuple[float, float, float, float]  # x, y, w, h in display-local device pixels

_MIN_REMEMBERED = 4  # shorter values ("1", "on") would blank ordinary text everywhere
_MAX_REMEMBERED = 64  # values remembered; the oldest go first
_MASK_CHARS = frozenset("\u2022\u25cf\u00b7*")  # a masked value shows nothing worth remembering
_PIXEL = 12  # device pixels per block of a pixelated box: too coarse for a glyph to survive


class Redactor:
    def __init__(self, config: RedactionConfig) -> None:
        self.config = config
        self.applied_count = 0  # texts replaced, for the status
        self._roles = {r.lower() for r in config.password_roles}
        self._names = [re.compile(p) for p in config.element_name_patterns]
        self._titles = [re.compile(p) for p in config.window_title_patterns]
        self._texts = [re.compile(p) for p in config.text_patterns]
        self._keys = [k.lower().replace("-", "_") for k in config.redact_arg_keys]
        self._remembered: OrderedDict[str, None] = OrderedDict()
        self._remembered_re: re.Pattern[str] | None = None

    @property
    def enabled(self) -> bool:
        return self.config.enabled

    # -- what is secret

    def is_secret(self, role: str | None, name: str | None, states: Iterable[str] | None,
                  window_title: str | None) -> bool:
        """Whether an element's text is secret (always False with redaction off)."""
        return self.why_secret(role, name, states, window_title) is not None

    def why_secret(self, role: str | None, name: str | None, states: Iterable[str] | None,
                    window_title: str | None) -> str | None:
        """Why an element is secret: "field" (its value), "all" (its name and value) or None."""
        if not self.enabled:
            return None
        if window_title and any(p.search(window_title) for p in self._titles):
            return "all"
        if name and any(p.search(name) for p in self._names):
            return "all"
        if (role or "").lower() in self._roles or "protected" in (states or ()):
            return "field"
        return None

    def remember(self, value: str | None) -> None:
        """Replace ``value`` wherever text is redacted from now on (a password read from its
        field, or typed into one)."""
        if not self.enabled or not value or len(value.strip()) < _MIN_REMEMBERED:
            return
        if set(value) <= _MASK_CHARS or value == self.config.replacement or value in self._remembered:
            return
        self._remembered[value] = None
        while len(self._remembered) > _MAX_REMEMBERED:
            self._remembered.popitem(last=False)
        # Longest first, so a secret that contains another is replaced whole.
        alternatives = sorted(self._remembered, key=len, reverse=True)
        self._remembered_re = re.compile("|".join(re.escape(v) for v in alternatives))

    # -- text

    def text(self, s: str) -> str:
        """``s`` with text patterns and remembered secrets replaced."""
        if not self.enabled or not s:
            return s
        replacement = self.config.replacement
        for pattern in (*self._texts, self._remembered_re):
            if pattern is not None:
                # (A function, so a backslash in the replacement is not read as a group.)
                s, n = pattern.subn(lambda _: replacement, s)
                self.applied_count += n
        return s

    def _matches(self, s: str | None) -> bool:
        """Whether ``s`` holds something ``text`` replaces, or already replaced."""
        if not s:
            return False
        return self.config.replacement in s or any(
            p.search(s) for p in (*self._texts, self._remembered_re) if p is not None)

    def hide(self, s: str | None) -> str | None:
        if not s:
            return s  # nothing there: "[REDACTED]" would claim there was
        if s != self.config.replacement:
            self.applied_count += 1
        return self.config.replacement

    # -- the scene

    def scene(self, scene_json: dict[str, Any]) -> dict[str, Any]:
        """Redact a Scene's JSON (``Scene.to_json``) in place and return it. Window titles
        stay (an agent must still tell windows apart, to close one) with text patterns
        applied; elements and OCR lines of a secret window lose their text."""
        if not self.enabled:
            return scene_json
        titles, secret_windows = self._windows(scene_json)
        elements = scene_json.get("ax") or []
        # Remember first: a password may show up in an element listed before its field.
        whys = [self.why_secret(e.get("role"), e.get("name"), e.get("states"), titles.get(e.get("window_id")))
                for e in elements]
        for element, why in zip(elements, whys):
            if why == "field":
                self.remember(element.get("value"))
        for element, why in zip(elements, whys):
            if why is not None:
                element["value"] = self.hide(element.get("value"))
            if why == "all":
                element["name"] = self.hide(element.get("name"))
            for key in ("name", "value", "formula"):
                if isinstance(element.get(key), str):
                    element[key] = self.text(element[key])
        for line in scene_json.get("ocr") or []:
            if self.ocr_window(line, secret_windows) is not None:
                line["text"] = self.hide(line.get("text"))
            elif isinstance(line.get("text"), str):
                line["text"] = self.text(line["text"])
        for app in scene_json.get("apps") or []:
            for window in app.get("windows") or []:
                if window.get("title"):
                    window["title"] = self.text(window["title"])
        focused = scene_json.get("focused_window")
        if isinstance(focused, dict) and focused.get("title"):
            focused["title"] = self.text(focused["title"])
        for key in ("vlm_scene", "vlm_elements"):  # a model's description can quote the screen
            if scene_json.get(key) is not None:
                scene_json[key] = self._strings(scene_json[key])
        return scene_json

    def boxes(self, scene_json: dict[str, Any]) -> dict[int, list[Box]]:
        """Per display id, the boxes a screenshot must blur: secret windows, secret
        elements, and elements and OCR lines whose text matched. Gives the same boxes
        before and after ``scene`` redacted the JSON."""
        out: dict[int, list[Box]] = {}
        if not self.enabled:
            return out
        titles, secret_windows = self._windows(scene_json)
        for window in secret_windows.values():
            _add(out, window.get("display_id"), window.get("bounds"))
        # A secret window's box covers its elements.
        elements = [e for e in scene_json.get("ax") or [] if e.get("window_id") not in secret_windows]
        whys = [self.why_secret(e.get("role"), e.get("name"), e.get("states"), titles.get(e.get("window_id")))
                for e in elements]
        for e, why in zip(elements, whys):  # (as ``scene`` does: the boxes may be asked for first)
            if why == "field":
                self.remember(e.get("value"))
        for e, why in zip(elements, whys):
            if why is not None or self._matches(e.get("name")) or self._matches(e.get("value")):
                _add(out, e.get("display_id"), e.get("bbox"))
        for line in scene_json.get("ocr") or []:
            if self.ocr_window(line, secret_windows) is None and self._matches(line.get("text")):
                _add(out, line.get("display_id"), line.get("bbox"))
        return out

    def _windows(self, scene_json: dict[str, Any]) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
        """Every window's title by id, and the windows whose title makes them secret."""
        titles: dict[str, str] = {}
        secret: dict[str, dict[str, Any]] = {}
        for app in scene_json.get("apps") or []:
            for window in app.get("windows") or []:
                title = window.get("title") or ""
                titles[window.get("id")] = title
                if any(p.search(title) for p in self._titles):
                    secret[window.get("id")] = window
        return titles, secret

    @staticmethod
    def ocr_window(line: dict[str, Any], secret_windows: dict[str, dict[str, Any]]) -> str | None:
        """The secret window an OCR line was read in: the one it names, or (reading the whole
        screen names none) one its centre lies in. Another window may be in front there:
        hiding an ordinary line is the cheaper mistake."""
        if line.get("window_id") is not None:
            return line["window_id"] if line["window_id"] in secret_windows else None
        bbox = line.get("bbox")
        if not bbox:
            return None
        cx, cy = bbox[0] + bbox[2] / 2, bbox[1] + bbox[3] / 2
        for ident, window in secret_windows.items():
            b = window.get("bounds")
            if b and window.get("display_id") == line.get("display_id") and \
                    b[0] <= cx < b[0] + b[2] and b[1] <= cy < b[1] + b[3]:
                return ident
        return None

    # -- arguments

    def args(self, d: dict[str, Any]) -> dict[str, Any]:
        """A copy of action arguments for a record: the value of any key containing one of
        ``redact_arg_keys`` (ignoring case: ``new_password`` too) replaced, text patterns
        applied to every string, at any depth."""
        return self._strings(d)

    def _strings(self, value: Any) -> Any:
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if v is not None and self._secret_key(k):
                    out[k] = self.config.replacement
                    self.applied_count += 1
                else:
                    out[k] = self._strings(v)
            return out
        if isinstance(value, (list, tuple)):
            return [self._strings(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def _secret_key(self, key: Any) -> bool:
        k = str(key).lower().replace("-", "_")
        return any(secret in k for secret in self._keys)

    # -- screenshots

    @staticmethod
    def blur(image: Image.Image, boxes: Iterable[Box], scale: float = 1.0) -> Image.Image:
        """A copy of ``image`` with each box (display device pixels; ``scale`` is the
        image's size over the display's) pixelated and blurred past reading."""
        out = image.copy()
        for x, y, w, h in boxes:
            # Grown outwards to whole pixels: a half-covered glyph edge is still legible.
            x0, y0 = max(0, math.floor(x * scale)), max(0, math.floor(y * scale))
            x1, y1 = min(out.width, math.ceil((x + w) * scale)), min(out.height, math.ceil((y + h) * scale))
            if x1 <= x0 or y1 <= y0:
                continue
            region = out.crop((x0, y0, x1, y1))
            block = max(2, round(_PIXEL * scale))
            small = region.resize((max(1, region.width // block), max(1, region.height // block)),
                                  Image.Resampling.BOX)
            region = small.resize(region.size, Image.Resampling.NEAREST).filter(ImageFilter.GaussianBlur(block / 2))
            out.paste(region, (x0, y0))
        return out


def _add(out: dict[int, list[Box]], display_id: Any, bbox: Any) -> None:
    if display_id is None or not bbox or len(bbox) != 4 or bbox[2] <= 0 or bbox[3] <= 0:
        return
    out.setdefault(int(display_id), []).append((bbox[0], bbox[1], bbox[2], bbox[3]))
