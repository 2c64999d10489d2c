"""OCR for the scene's ``ocr`` list: providers, and a chain that keeps each display's
text current by reading again only what changed.

Nouns:

- :class:`OcrWord`: one **line** of text (words on one baseline, close together) with its
  box in display-local device pixels. Lines, not single words: "Save changes" is one
  target for an agent, and one line per control is what a prompt can afford. A line is
  split where words are far apart (see ``_lines``), so two buttons side by side stay two
  entries even when Tesseract puts them on one text line.
- :class:`OcrProvider`: anything that reads text from an image (Tesseract here; a cloud
  or model-based reader would be another).
- :class:`OcrChain`: the providers in order of preference plus a per-display cache; it
  re-reads changed regions only and falls back to the next provider when one fails.

Failures never propagate out of the chain: a provider that is missing reports
``available() == False``, and a call that fails is logged while the display's previous
lines are kept (and its regions are read again on the next update).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from typing import Iterable, Protocol, runtime_checkable

from PIL import Image

from ..common.logging import get_logger
from ..geometry import Region, clip_region, merge_regions, region_contains, regions_intersect

__all__ = ["OcrWord", "OcrProvider", "OcrError", "TesseractProvider", "OcrChain"]

log = get_logger("deskbox.scene.ocr")



@dataclass(frozen=True)
class OcrWord:
    """One line of recognized text: ``bbox`` is (x, y, w, h) in device pixels of the frame
    it was read from, ``conf`` the mean confidence of its words, 0..1."""

    text: str
    bbox: Region
    conf: float


class OcrError(RuntimeError):
    """A provider could not read an image (its engine failed, timed out or is missing)."""


@runtime_checkable
class OcrProvider(Protocol):
    name: str

    def available(self) -> bool:
        """Whether the provider can run here (cheap after the first call)."""
        ...

    def recognize(self, image: Image.Image, region: Region | None = None) -> list[OcrWord]:
        """Lines of text in ``region`` of ``image`` (all of it when None), boxes in the
        coordinates of ``image``. Blocking: call it from a worker thread."""
        ...


# -- Tesseract -------------------------------------------------------------------------

# A line of one or two characters is kept only with this confidence: icons read as
# letters ("x", "G", "fh,") are the usual source of such lines.
_SHORT_LINE_CONF = 0.7


class TesseractProvider:
    """The ``tesseract`` command line (Debian's tesseract-ocr): the image goes in on
    stdin as a PGM and TSV comes back on stdout, so no file is written anywhere.

    Screen text is small (11-14 px) and Tesseract's models are trained on larger glyphs:
    ``upscale`` 2 read 232 of 238 button, link and text captions on a dense 1280x800
    page where 1x read 212, for about twice the time. Page segmentation mode 11 ("sparse
    text") finds scattered UI labels that mode 3's paragraph analysis skips.
    ``OMP_THREAD_LIMIT=1``: on these 2-core machines Tesseract's OpenMP threads spin
    against each other and against the rest of the session, making a read 1.5-2x slower,
    not faster.

    Known misses, measured: Tesseract binarizes the page with one global threshold, so
    text on mid-tone surfaces (white on a blue, red or green button) is lost when the
    page around it is light or dark (7 of 19 such labels read on a dark test page), and
    its layout analysis sometimes skips a short word boxed in by a control's border
    (Chromium's default "Other" button on the input fixture). Accessibility trees carry
    those names; OCR is for what they miss. ``config`` passes ``-c`` variables, e.g.
    ``{"thresholding_method": "1"}`` (adaptive Otsu: 14 of those 19, but 226 instead of
    235 labels on a dense light page).
    """

    name = "tesseract"
    # White px between regions packed on one sheet.
    GAP = 24

    def __init__(self, binary: str = "tesseract", *, lang: str = "eng", upscale: int = 2, psm: int = 11,
                 min_conf: float = 0.3, timeout: float = 60.0, config: dict[str, str] | None = None) -> None:
        self.binary = binary
        self.config = dict(config or {})
        self.lang = lang
        self.upscale = max(1, int(upscale))
        self.psm = psm
        self.min_conf = min_conf
        self.timeout = timeout
        self._available: bool | None = None
        self._lock = threading.Lock()

    def available(self) -> bool:
        with self._lock:
            if self._available is None:
                self._available = self._probe()
            return self._available

    def _probe(self) -> bool:
        path = shutil.which(self.binary)
        if path is None:
            log.info("ocr_provider_missing", provider=self.name, binary=self.binary)
            return False
        try:
            out = subprocess.run([path, "--list-langs"], capture_output=True, timeout=10, env=self._env())
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("ocr_provider_broken", provider=self.name, error=f"{type(exc).__name__}: {exc}")
            return False
        langs = {line.strip() for line in out.stdout.decode(errors="replace").splitlines()[1:]}
        if out.returncode != 0 or self.lang not in langs:
            log.warning("ocr_provider_missing_language", provider=self.name, lang=self.lang,
                        langs=sorted(langs), returncode=out.returncode)
            return False
        return True

    def _env(self) -> dict[str, str]:
        return {**os.environ, "OMP_THREAD_LIMIT": "1"}

    def recognize(self, image: Image.Image, region: Region | None = None) -> list[OcrWord]:
        box = clip_region(region if region is not None else (0, 0, image.width, image.height), image.size)
        return self.recognize_regions(image, [box]) if box is not None else []

    def recognize_regions(self, image: Image.Image, regions: list[Region]) -> list[OcrWord]:
        """Lines of text in each of ``regions`` (clipped to ``image``), read in one run:
        the regions are packed on one sheet (a Tesseract run costs ~0.2 s before it reads
        a pixel), and each word goes back to the region it was read in before words are
        joined into lines, so no line spans two regions."""
        boxes = [b for b in (clip_region(r, image.size) for r in regions) if b is not None]
        if not boxes:
            return []
        if len(boxes) == 1:
            x, y, w, h = boxes[0]
            sheet, places = image.crop((x, y, x + w, y + h)), [(0, 0)]
        else:
            sheet, places = _pack(image, boxes, self.GAP)
        words = self._run(sheet)
        k = self.upscale
        placed: list[_Word] = []
        for word in words:
            x, y, w, h = word.bbox
            cx, cy = (x + w / 2) / k, (y + h / 2) / k
            for i, ((px, py), (rx, ry, rw, rh)) in enumerate(zip(places, boxes)):
                if px <= cx < px + rw and py <= cy < py + rh:
                    bbox = _to_frame(word.bbox, k, rx - px, ry - py, (rx, ry, rw, rh))
                    placed.append(_Word((i, *word.line), word.text, bbox, word.conf))
                    break
        return [OcrWord(line.text, line.bbox, line.conf) for line in _lines(placed, self.min_conf)]

    def _run(self, sheet: Image.Image) -> list[_Word]:
        """Tesseract's words on ``sheet`` (boxes in upscaled sheet pixels)."""
        gray = sheet.convert("L")
        k = self.upscale
        if k > 1:
            gray = gray.resize((gray.width * k, gray.height * k), Image.Resampling.LANCZOS)
        pgm = io.BytesIO()
        gray.save(pgm, "PPM")  # mode L is written as binary PGM
        argv = [self.binary, "stdin", "stdout", "-l", self.lang, "--psm", str(self.psm), "--dpi", str(96 * k)]
        for key, value in self.config.items():
            argv += ["-c", f"{key}={value}"]
        argv.append("tsv")
        try:
            done = subprocess.run(argv, input=pgm.getvalue(), capture_output=True, timeout=self.timeout,
                                  env=self._env())
        except subprocess.TimeoutExpired as exc:
            raise OcrError(f"tesseract took longer than {self.timeout:.0f}s on {sheet.width}x{sheet.height} px") from exc
        except OSError as exc:
            raise OcrError(f"tesseract could not run: {exc}") from exc
        if done.returncode != 0:
            raise OcrError(f"tesseract exited with {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}")
        return _parse_tsv(done.stdout.decode("utf-8", errors="replace"))


def _pack(image: Image.Image, regions: list[Region], gap: int) -> tuple[Image.Image, list[tuple[int, int]]]:
    """The regions of ``image`` on one white sheet, ``gap`` px apart, in rows about as
    wide as the sheet is tall; where each one's top-left corner went.

    Roughly square, because Tesseract's page layout analysis gives up on a tall strip:
    144 small regions stacked one under another (70 x 7176 px) yielded 40 of their 144
    words."""
    area = sum((w + gap) * (h + gap) for _, _, w, h in regions)
    width = max(max(w for _, _, w, _ in regions), int(area ** 0.5))
    places, x, y, row = [], 0, 0, 0
    for _, _, w, h in regions:
        if x and x + w > width:
            x, y, row = 0, y + row + gap, 0
        places.append((x, y))
        x += w + gap
        row = max(row, h)
    size = (max(px + r[2] for (px, _), r in zip(places, regions)), y + row)
    sheet = Image.new("RGB", size, "white")
    for (px, py), (x0, y0, w, h) in zip(places, regions):
        sheet.paste(image.crop((x0, y0, x0 + w, y0 + h)), (px, py))
    return sheet, places


@dataclass(frozen=True)
class _Word:
    line: tuple[int, ...]  # Tesseract's page, block, paragraph, line (after a region index)
    text: str
    bbox: Region
    conf: float


def _parse_tsv(tsv: str) -> list[_Word]:
    """Word rows (level 5) of Tesseract's TSV, in reading order."""
    out = []
    for row in tsv.splitlines()[1:]:
        cols = row.split("\t")
        if len(cols) != 12 or cols[0] != "5":
            continue
        try:
            key = (int(cols[1]), int(cols[2]), int(cols[3]), int(cols[4]))
            bbox = (int(cols[6]), int(cols[7]), int(cols[8]), int(cols[9]))
            conf = float(cols[10]) / 100.0
        except ValueError:
            continue
        out.append(_Word(key, cols[11], bbox, conf))
    return out


def _clean(text: str) -> str:
    """A word without the border strokes glued to it ("|Link", "11]", "_a0-93",
    "a0-21/"), or "" when nothing but strokes and punctuation remains. Brackets that pair
    up are kept."""
    text = text.strip()
    while text and text[0] in "|¦_[({" and _unpaired(text, 0):
        text = text[1:]
    while text and text[-1] in "|¦_/])}" and _unpaired(text, len(text) - 1):
        text = text[:-1]
    if not any(ch.isalnum() for ch in text):
        return ""
    return text


_PAIRS = {"[": "]", "(": ")", "{": "}", "]": "[", ")": "(", "}": "{"}


def _unpaired(text: str, i: int) -> bool:
    ch = text[i]
    if ch not in _PAIRS:
        return True
    other = _PAIRS[ch]
    return other not in (text[i + 1:] if i == 0 else text[:i])


def _lines(words: Iterable[_Word], min_conf: float) -> list[_Word]:
    """Tesseract's lines made of the words worth keeping, split where they are not one
    label: at a word that was dropped (a border stroke "|" between two controls, or an
    unreadable word: a line holds only what was read), at a stroke glued to a word
    ("|Link"), and at a gap wider than 1.1 x the line's median word height: a space in
    16 px DejaVu Sans measured up to 0.85 x, two controls side by side on a Chromium
    page 1.3 x or more."""
    groups: dict[tuple[int, ...], list[_Word | None]] = {}
    for word in words:
        text = _clean(word.text)
        group = groups.setdefault(word.line, [])
        if not text or word.conf < min_conf:
            group.append(None)
            continue
        stripped = word.text.strip()
        at = stripped.find(text)
        if at > 0:
            group.append(None)
        group.append(_Word(word.line, text, word.bbox, word.conf))
        if at + len(text) < len(stripped):
            group.append(None)
    out = []
    for key, group in groups.items():
        kept = [wd for wd in group if wd is not None]
        if not kept:
            continue
        heights = sorted(wd.bbox[3] for wd in kept)
        gap = 1.1 * heights[len(heights) // 2]
        run: list[_Word] = []
        for word in group:
            if word is None or (run and word.bbox[0] - (run[-1].bbox[0] + run[-1].bbox[2]) > gap):
                if run:
                    out.append(_join(key, run))
                run = []
            if word is not None:
                run.append(word)
        if run:
            out.append(_join(key, run))
    # A character or two read off an icon is noise unless Tesseract is sure of it.
    return [line for line in out if sum(ch.isalnum() for ch in line.text) > 2 or line.conf >= _SHORT_LINE_CONF]


def _join(key: tuple[int, ...], run: list[_Word]) -> _Word:
    x0 = min(wd.bbox[0] for wd in run)
    y0 = min(wd.bbox[1] for wd in run)
    x1 = max(wd.bbox[0] + wd.bbox[2] for wd in run)
    y1 = max(wd.bbox[1] + wd.bbox[3] for wd in run)
    conf = sum(wd.conf for wd in run) / len(run)
    return _Word(key, " ".join(wd.text for wd in run), (x0, y0, x1 - x0, y1 - y0), round(conf, 3))


def _to_frame(bbox: Region, k: int, ox: int, oy: int, clip: Region) -> Region:
    """A box in the upscaled crop -> device px of the frame, rounded outwards and kept
    within the crop."""
    x0 = ox + bbox[0] // k
    y0 = oy + bbox[1] // k
    x1 = ox + -(-(bbox[0] + bbox[2]) // k)
    y1 = oy + -(-(bbox[1] + bbox[3]) // k)
    cx, cy, cw, ch = clip
    x0, y0 = max(x0, cx), max(y0, cy)
    x1, y1 = min(x1, cx + cw), min(y1, cy + ch)
    return x0, y0, max(1, x1 - x0), max(1, y1 - y0)


# -- the chain -------------------------------------------------------------------------


class OcrChain:
    """Providers in order of preference (none: OCR is off) and what each display showed
    when last read.

    ``update`` re-reads only the changed regions: each grown by ``margin`` so that
    Tesseract sees whitespace around the glyphs, then widened to the whole of every
    cached line it touches (a line with one changed word is read again as a whole). The
    cached lines inside are dropped, the rest kept as they were (the same objects, so an
    id keyed on them stays). A provider with ``recognize_regions`` reads all regions in
    one call (Tesseract packs them on one sheet).
    """

    # Re-read the whole frame when the changed regions cover more than this share of it.
    FULL_FRAME_SHARE = 0.5
    # Device px around each changed region.
    MARGIN = 16

    def __init__(self, providers: list[OcrProvider] | None = None, *, margin: int | None = None) -> None:
        self.providers = list(providers or [])
        self.margin = self.MARGIN if margin is None else margin
        self._lines: dict[int, list[OcrWord]] = {}
        self._sizes: dict[int, tuple[int, int]] = {}
        self._pending: dict[int, list[Region]] = {}
        self._locks: dict[int, threading.Lock] = {}
        self._guard = threading.Lock()

    @classmethod
    def default(cls, enabled: bool) -> "OcrChain":
        """Tesseract when ``enabled`` and installed; otherwise a chain that reads nothing."""
        if not enabled:
            return cls([])
        tesseract = TesseractProvider()
        return cls([tesseract] if tesseract.available() else [])

    @property
    def enabled(self) -> bool:
        return any(p.available() for p in self.providers)

    def current(self, display_id: int) -> list[OcrWord]:
        """The lines last read on ``display_id``, without reading anything."""
        return list(self._lines.get(display_id, []))

    def forget(self, display_id: int) -> None:
        """Drop what is known about a display (it went away)."""
        with self._lock_for(display_id):
            self._lines.pop(display_id, None)
            self._sizes.pop(display_id, None)
            self._pending.pop(display_id, None)

    def update(self, display_id: int, image: Image.Image, changed: list[Region]) -> list[OcrWord]:
        """All lines of text on ``display_id`` now, given its current frame ``image`` and
        the regions (x, y, w, h device px) that changed since the previous call."""
        if not self.providers:
            return []
        with self._lock_for(display_id):
            size = image.size
            known = self._lines.get(display_id)
            if known is None or self._sizes.get(display_id) != size:
                return self._read_all(display_id, image)
            dirty = [r for r in (clip_region(r, size) for r in [*changed, *self._pending.get(display_id, [])]) if r]
            if not dirty:
                return list(known)
            regions = self._regions(dirty, known, size)
            if sum(r[2] * r[3] for r in regions) > self.FULL_FRAME_SHARE * size[0] * size[1]:
                return self._read_all(display_id, image)
            try:
                fresh = self._read_regions(image, regions)
            except OcrError as exc:
                log.warning("ocr_failed", display=display_id, regions=len(regions), error=str(exc))
                self._pending[display_id] = dirty
                return list(known)
            kept = [line for line in known if not any(regions_intersect(line.bbox, r) for r in regions)]
            self._lines[display_id] = _reading_order(kept + fresh)
            self._pending.pop(display_id, None)
            return list(self._lines[display_id])

    def read(self, image: Image.Image, regions: list[Region]) -> list[list[OcrWord]]:
        """The whole lines inside each region of ``image``, read now (nothing is kept).
        Raises ``OcrError`` when no provider could read them."""
        if not regions:
            return []
        return [_inside(lines, region, image.size) for region, lines in zip(regions, self._recognize(image, regions))]

    def _lock_for(self, display_id: int) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(display_id, threading.Lock())

    def _read_all(self, display_id: int, image: Image.Image) -> list[OcrWord]:
        try:
            lines = self._recognize(image, None)[0]
        except OcrError as exc:
            log.warning("ocr_failed", display=display_id, regions="all", error=str(exc))
            self._pending[display_id] = [(0, 0, image.width, image.height)]
            return list(self._lines.get(display_id, []))
        self._lines[display_id] = _reading_order(lines)
        self._sizes[display_id] = image.size
        self._pending.pop(display_id, None)
        return list(self._lines[display_id])

    def _regions(self, dirty: list[Region], known: list[OcrWord], size: tuple[int, int]) -> list[Region]:
        """Changed rects grown by the margin, widened over every cached line they touch
        (with its margin), merged until every line they touch lies inside one of them."""
        regions = merge_regions([r for r in (self._grow(r, size) for r in dirty) if r])
        while True:
            touched = [line.bbox for line in known if any(regions_intersect(line.bbox, r) for r in regions)
                       and not any(region_contains(r, self._grow(line.bbox, size) or line.bbox) for r in regions)]
            if not touched:
                return regions
            regions = merge_regions(regions + [r for r in (self._grow(b, size) for b in touched) if r])

    def _grow(self, rect: Region, size: tuple[int, int]) -> Region | None:
        m = self.margin
        x, y, w, h = rect
        return clip_region((x - m, y - m, w + 2 * m, h + 2 * m), size)

    def _read_regions(self, image: Image.Image, regions: list[Region]) -> list[OcrWord]:
        return [line for region, lines in zip(regions, self._recognize(image, regions))
                for line in _inside(lines, region, image.size)]

    def _recognize(self, image: Image.Image, regions: list[Region] | None) -> list[list[OcrWord]]:
        """The lines in each region (the whole image when None) by the first available
        provider; by the next one when it fails."""
        errors = []
        for provider in self.providers:
            if not provider.available():
                continue
            try:
                if regions is None:
                    return [provider.recognize(image, None)]
                if len(regions) > 1 and hasattr(provider, "recognize_regions"):
                    lines = provider.recognize_regions(image, regions)
                    return [[ln for ln in lines if region_contains(r, ln.bbox)] for r in regions]
                return [provider.recognize(image, r) for r in regions]
            except Exception as exc:  # any failure of a provider falls through to the next one
                errors.append(f"{provider.name}: {type(exc).__name__}: {exc}")
        raise OcrError("; ".join(errors) or "no OCR provider is available")


def _inside(lines: list[OcrWord], region: Region, size: tuple[int, int]) -> list[OcrWord]:
    """The lines of a region's reading that are whole: a line touching an edge of the
    region that is not the frame's own border was cut by the crop."""
    x0, y0, w, h = region
    x1, y1 = x0 + w, y0 + h
    out = []
    for line in lines:
        if not region_contains(region, line.bbox):
            continue
        lx0, ly0, lw, lh = line.bbox
        cut = ((lx0 <= x0 and x0 > 0) or (ly0 <= y0 and y0 > 0)
               or (lx0 + lw >= x1 and x1 < size[0]) or (ly0 + lh >= y1 and y1 < size[1]))
        if not cut:
            out.append(line)
    return out


def _reading_order(lines: list[OcrWord]) -> list[OcrWord]:
    """Top to bottom, and left to right among lines that share a row (their vertical
    centres within half a line of the row's first)."""
    rows: list[list[OcrWord]] = []
    for line in sorted(lines, key=lambda ln: (ln.bbox[1] + ln.bbox[3] / 2, ln.bbox[0])):
        centre = line.bbox[1] + line.bbox[3] / 2
        if rows:
            first = rows[-1][0]
            if abs(centre - (first.bbox[1] + first.bbox[3] / 2)) <= first.bbox[3] / 2:
                rows[-1].append(line)
                continue
        rows.append([line])
    return [line for row in rows for line in sorted(row, key=lambda ln: ln.bbox[0])]
