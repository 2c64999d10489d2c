"""What ``wait_for`` waits for and ``assert_state`` asserts, checked against one look at
the session: a Scene (its JSON, its selector nodes, its observation document), with the
browser's tabs, a screenshot and OCR read only when a check needs them.

A check answers ``(passed, observed)``: ``observed`` is what was seen, so that a failed
assertion says why (the value found, the windows there were). SSIM is computed here:
grey, a quarter of the pixels, 8x8 windows (Wang et al., 2004, with their constants)."""

from __future__ import annotations

import asyncio
import base64
import io
from typing import Any, Awaitable, Callable

import numpy as np
from PIL import Image

from ..common.errors import InvalidRequestError
from .observation import document, tree_hash
from .patterns import budget, compile_pattern, fullmatch, search
from .selector import nodes_of, select_bounded

__all__ = ["Look", "check", "ssim"]

_MAX_OBSERVED = 20  # matches or windows reported in an answer


class Look:
    """One look at the session; the costly parts are read once, on first use."""

    def __init__(self, scene: Any, *, tabs: Callable[[], Awaitable[list[dict]]],
                 screenshot: Callable[[int], Awaitable[bytes]], ocr: Callable[[bytes], Awaitable[list[str]]],
                 kept: Callable[[str], Any]) -> None:
        self.seq = scene.seq
        self._scene = scene
        self.scene = scene.to_json()
        self.nodes = nodes_of(self.scene)
        self._doc: dict | None = None
        self._tabs, self._screenshot, self._ocr, self.kept = tabs, screenshot, ocr, kept
        self._cache: dict[Any, Any] = {}

    @property
    def doc(self) -> dict:
        if self._doc is None:
            self._doc = document(self.scene)
        return self._doc

    def doc_for(self, view: dict[str, Any]) -> dict:
        """The observation document through a view's filters (interactive, display, window)."""
        return document(self._scene.to_json(**view)) if any(view.values()) else self.doc

    async def _once(self, key: Any, make: Callable[[], Awaitable[Any]]) -> Any:
        if key not in self._cache:
            self._cache[key] = await make()
        return self._cache[key]

    async def tabs(self) -> list[dict]:
        return await self._once("tabs", self._tabs)

    async def screenshot(self, display: int) -> bytes:
        return await self._once(("png", display), lambda: self._screenshot(display))

    async def ocr_lines(self) -> list[str]:
        displays = [d["id"] for d in self.scene.get("displays") or ()]

        async def read() -> list[str]:
            lines: list[str] = []
            for d in displays:
                lines += await self._ocr(await self.screenshot(d))
            return lines
        return await self._once("ocr", read)

    def windows(self) -> list[dict]:
        return [n for n in self.nodes if n.get("kind") == "window"]


def _brief(node: dict) -> dict[str, Any]:
    return {"id": node["id"], "role": node.get("role"), "name": node.get("name"), "value": node.get("value"),
            "bbox": node.get("bbox")}


def _text_test(spec: Any) -> Callable[[str], bool]:
    if spec.regex is not None:
        pattern = compile_pattern(spec.regex)
        return lambda s: search(pattern, s)
    needle = spec.text.lower()
    return lambda s: needle in s.lower()


def _title_test(regex: str | None, app: str | None) -> Callable[[dict], bool]:
    pattern = compile_pattern(regex) if regex is not None else None
    return lambda w: ((pattern is None or search(pattern, w.get("name") or ""))
                      and (app is None or (w.get("app") or "").lower() == app.lower()))


async def _text_visible(spec: Any, look: Look) -> tuple[bool, Any]:
    test = _text_test(spec)
    if spec.mode in ("tree", "auto"):
        for n in look.nodes:
            for s in (n.get("name"), n.get("value")):
                if s and test(s):
                    return True, {"where": "tree", "element": _brief(n)}
        for t in look.scene.get("ocr") or ():
            if test(t.get("text") or ""):
                return True, {"where": "scene-ocr", "text": t}
        if spec.mode == "tree":
            return False, {"where": "tree", "elements": len(look.nodes)}
    lines = await look.ocr_lines()
    hit = next((line for line in lines if test(line)), None)
    return hit is not None, {"where": "ocr", "line": hit, "lines": len(lines)}


async def check(spec: Any, look: Look, start: Look | None = None) -> tuple[bool, Any]:
    """Whether ``spec`` (a wait_for condition or an assert_state predicate) holds in
    ``look``; ``start`` is the first look of a wait (what "changes" compare with). Its
    regexes, all together, take at most ``patterns.BUDGET_S``."""
    with budget():
        return await _check(spec, look, start)


async def _check(spec: Any, look: Look, start: Look | None) -> tuple[bool, Any]:
    kind = getattr(spec, "type", None) or spec.kind
    if kind in ("element_appears", "element_exists", "element_absent"):
        found = await select_bounded(spec.selector, look.nodes)
        return (not found if kind == "element_absent" else bool(found)), {
            "count": len(found), "matches": [_brief(n) for n in found[:_MAX_OBSERVED]]}
    if kind == "element_disappears":
        found = (await select_bounded(spec.selector, look.nodes) if spec.selector is not None
                 else [n for n in look.nodes if n["id"] == spec.element_id])
        return not found, {"count": len(found)}
    if kind in ("value_equals", "value_matches"):
        found = await select_bounded(spec.selector, look.nodes)
        if not found:
            return False, {"count": 0, "value": None}
        value = found[0].get("value")
        if kind == "value_equals":
            passed = value == spec.expected
        else:
            passed = value is not None and fullmatch(compile_pattern(spec.regex), value)
        return passed, {"count": len(found), "value": value, "element": _brief(found[0])}
    if kind == "text_visible":
        return await _text_visible(spec, look)
    if kind in ("window_appears", "window_exists", "window_focused"):
        if getattr(spec, "window_id", None) is not None:
            match = [w for w in look.windows() if w["id"] == spec.window_id]
        else:
            test = _title_test(spec.title_regex, spec.app)
            match = [w for w in look.windows() if test(w)]
        if kind == "window_focused":
            match = [w for w in match if "focused" in w.get("states", ())]
        seen = [{"id": w["id"], "title": w.get("name"), "app": w.get("app"), "focused": "focused" in w["states"]}
                for w in look.windows()[:_MAX_OBSERVED]]
        return bool(match), {"matched": [m["id"] for m in match], "windows": seen}
    if kind == "window_disappears":
        if spec.window_id is not None:
            match = [w for w in look.windows() if w["id"] == spec.window_id]
        else:
            test = _title_test(spec.title_regex, None)
            match = [w for w in look.windows() if test(w)]
        return not match, {"matched": [m["id"] for m in match]}
    if kind == "url_matches":
        pattern = compile_pattern(spec.regex)
        tabs = await look.tabs()
        hit = next((t for t in tabs if search(pattern, t.get("url") or "")), None)
        return hit is not None, {"url": hit.get("url") if hit else None,
                                 "urls": [t.get("url") for t in tabs[:_MAX_OBSERVED]]}
    if kind == "tree_changes":
        base = look.kept(spec.since)
        now = tree_hash(look.doc_for(base.extra["view"]))
        return tree_hash(base.doc) != now, {"since": spec.since, "tree_hash": now}
    if kind == "focus_changes":
        was = (start or look).doc
        now = look.doc
        key = ("focused_window", "focused_element")
        return any(was[k] != now[k] for k in key), {k: {"from": was[k], "to": now[k]} for k in key}
    if kind == "tree_hash_equals":
        have = tree_hash(look.doc)
        return have == spec.expected_hash, {"tree_hash": have}
    if kind == "screenshot_similar":
        if spec.snapshot is not None:
            kept = look.kept(spec.snapshot)
            reference = kept.extra.get("screenshots", {}).get(spec.display)
            if reference is None:
                raise InvalidRequestError(f"snapshot {spec.snapshot} holds no screenshot of display {spec.display} "
                                          "(save it with screenshot=true)", code="no_screenshot")
        else:
            try:
                reference = base64.b64decode(spec.reference_png, validate=True)
            except ValueError:
                raise InvalidRequestError("reference_png is not base64", code="invalid_image") from None
        now = await look.screenshot(spec.display)
        score = await asyncio.to_thread(ssim, reference, now)
        return score >= spec.min_ssim, {"ssim": round(score, 4), "min_ssim": spec.min_ssim}
    raise InvalidRequestError(f"unsupported check {kind!r}", code="predicate_unsupported")


def _grey(data: bytes, size: tuple[int, int] | None = None) -> np.ndarray:
    try:
        image = Image.open(io.BytesIO(data))
        image.load()
    except Exception:
        raise InvalidRequestError("the reference is not an image PIL can read (PNG or JPEG)",
                                  code="invalid_image") from None
    image = image.convert("L")
    target = size or (max(1, image.width // 2), max(1, image.height // 2))
    return np.asarray(image.resize(target, Image.Resampling.BOX), dtype=np.float64)


def _window_means(a: np.ndarray, k: int) -> np.ndarray:
    """Means of every k x k window of ``a`` (valid positions), through a summed-area table."""
    s = np.pad(a, ((1, 0), (1, 0))).cumsum(0).cumsum(1)
    return (s[k:, k:] - s[:-k, k:] - s[k:, :-k] + s[:-k, :-k]) / (k * k)


def ssim(reference: bytes, current: bytes) -> float:
    """Mean SSIM of two images (the reference scaled to the current's half size)."""
    b = _grey(current)
    a = _grey(reference, (b.shape[1], b.shape[0]))
    k = 8
    if min(a.shape) < k:
        return 1.0 if np.array_equal(a, b) else 0.0
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    mu_a, mu_b = _window_means(a, k), _window_means(b, k)
    var_a = _window_means(a * a, k) - mu_a ** 2
    var_b = _window_means(b * b, k) - mu_b ** 2
    cov = _window_means(a * b, k) - mu_a * mu_b
    score = ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a ** 2 + mu_b ** 2 + c1) * (var_a + var_b + c2))
    return float(score.mean())
