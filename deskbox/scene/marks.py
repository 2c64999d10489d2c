"""Set-of-Mark screenshots: each element's box outlined and its id written beside it.

``layout_marks`` decides where everything goes (pure geometry, testable without
looking at pixels); ``draw_marks`` paints that layout on a copy of the screenshot.

Placement, per mark in the order given: the label's corners against the box's corners,
outside first (just above the box's top-left corner, so it hides neither the element's
own text nor a neighbour's), then inside, then beside. The spot that overlaps no placed
label and covers the least of other boxes wins. When every such spot is taken, the label
is nudged: first to the nearest of the spots that just clear each label in the way,
then, in a crowd, to the free spot nearest its first choice anywhere in the image
(summed-area tables of the space labels already cover, over windows that grow until one
holds a free spot). A label is never dropped: with no free spot left at all it goes
where it covers the least of other labels. One that ends up away from its box gets a
thin leader line to it. Labels stay inside the image. Colours come from a palette of
distinct hues, chosen so that marks whose boxes or labels are near each other differ.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from ..geometry import Region, grow_region, region_overlap, region_union

__all__ = ["Mark", "layout_marks", "draw_marks", "FONT_PATH"]

FONT_PATH = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"  # fonts-dejavu-core

# Label backgrounds: distinct hues, all light (Rec. 601 luma 185 or more) under black
# text, contrast 10:1 or better. Light backgrounds are what OCR binarizes correctly: on a
# grid of 144 labels Tesseract read 26 when half the palette was mid or dark (red, blue,
# purple, maroon; white or black text alike), all of them with this one. Outlines use a
# darker shade of the same hue so that they show on light pages too.
PALETTE: tuple[tuple[int, int, int], ...] = (
    (255, 225, 25), (160, 190, 255), (130, 240, 150), (255, 150, 220), (90, 225, 255), (255, 180, 70),
    (215, 175, 255), (191, 239, 69), (120, 245, 215), (230, 210, 120),
)
_SHADE = 0.5

# Spots tried around a label's first choice before the whole image is searched.
_NUDGES = 24


@dataclass(frozen=True)
class Mark:
    """One mark as drawn: its ``label``, the element's ``box`` and the label's own
    rectangle ``label_box`` (x, y, w, h device px), its ``colour`` and ``text_colour``."""

    label: str
    box: Region
    label_box: Region
    colour: tuple[int, int, int]
    text_colour: tuple[int, int, int]

    @property
    def outline(self) -> tuple[int, int, int]:
        """The box's outline (and the label's border): a darker shade of ``colour``."""
        return tuple(round(c * _SHADE) for c in self.colour)


def font_size_for(size: tuple[int, int]) -> int:
    """Label text size in px for an image: 16 px up to 1280x800 or so, 18 on 1920x1080,
    27 on a 2560x1600 scale-2 display, so labels read alike at any device scale.

    16 px is the floor because below it Tesseract misread or missed up to half of the
    labels of a crowded 1280x800 grid (79 of 144 read at 14 px, 114 at 15, 143 at 16):
    a label that an OCR engine cannot read is one a downscaled screenshot sent to a
    model will blur too."""
    return max(16, min(36, round(min(size) / 60)))


@lru_cache(maxsize=16)
def _font(px: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.truetype(FONT_PATH, px)
    except OSError:
        try:
            return ImageFont.load_default(size=px)
        except TypeError:  # pragma: no cover - Pillow built without FreeType
            return ImageFont.load_default()


def draw_marks(image: Image.Image, marks: list[tuple[str, Region]]) -> Image.Image:
    """A copy of ``image`` (RGB) with every mark's box outlined and its label drawn.
    ``marks`` are (label, (x, y, w, h) device px of ``image``)."""
    out = image.convert("RGB") if image.mode != "RGB" else image.copy()
    px = font_size_for(out.size)
    font = _font(px)
    laid = layout_marks(out.size, marks, font=font)
    draw = ImageDraw.Draw(out)
    line = max(1, px // 9)
    pad_x, pad_y = _padding(px)
    for m in laid:
        x, y, w, h = m.box
        if w > 0 and h > 0:
            draw.rectangle((x, y, x + w - 1, y + h - 1), outline=m.outline, width=line)
        leader = _leader(m.box, m.label_box)
        if leader is not None:
            draw.line(leader, fill=m.outline, width=line)
    # Labels last, so no outline crosses one.
    top = _text_top(font, [m.label for m in laid])
    for m in laid:
        x, y, w, h = m.label_box
        draw.rectangle((x, y, x + w - 1, y + h - 1), fill=m.colour, outline=m.outline)
        left = font.getbbox(m.label)[0]
        draw.text((x + pad_x - left, y + pad_y - top), m.label, font=font, fill=m.text_colour)
    return out


def layout_marks(size: tuple[int, int], marks: list[tuple[str, Region]], *,
                 font: ImageFont.FreeTypeFont | ImageFont.ImageFont | None = None) -> list[Mark]:
    """Where each mark's label goes and in which colours, in the order of ``marks``."""
    font = font or _font(font_size_for(size))
    px = getattr(font, "size", 11)
    pad_x, pad_y = _padding(px)
    labels = [label for label, _ in marks]
    top, bottom = _text_top(font, labels), _text_bottom(font, labels)
    height = bottom - top + 2 * pad_y
    boxes = [tuple(int(round(v)) for v in box) for _, box in marks]
    # Boxes reaching off the image count only for their part on it.
    visible = [_clip(size, box) for box in boxes]
    box_index = _Grid(2 * height)
    for i, box in enumerate(visible):
        box_index.add(i, box)
    placed = _Grid(2 * height)
    free = _FreeSpace(size)
    label_boxes: list[Region] = []
    for i, (label, box) in enumerate(zip(labels, boxes)):
        left, _, right, _ = font.getbbox(label)
        lw, lh = min(size[0], right - left + 2 * pad_x), min(size[1], height)
        spot = _place(size, box, (lw, lh), i, box_index, visible, placed, free)
        placed.add(i, spot)
        free.add(spot)
        label_boxes.append(spot)
    colours = _colour(visible, label_boxes, height)
    return [
        Mark(label, box, spot, PALETTE[c], _text_colour(PALETTE[c]))
        for label, box, spot, c in zip(labels, boxes, label_boxes, colours)
    ]


def _padding(px: int) -> tuple[int, int]:
    """Space between a label's text and its edge, across and down. Half an em across:
    with less, OCR glued the label's border to its first or last character ("[a0-38]",
    "a0-21/"), and read 56 of 144 labels where this reads 143."""
    return max(2, round(px * 0.5)), max(2, round(px * 0.2))


def _text_top(font, labels: list[str]) -> int:
    return min((font.getbbox(label)[1] for label in labels), default=0)


def _text_bottom(font, labels: list[str]) -> int:
    return max((font.getbbox(label)[3] for label in labels), default=1)


def _candidates(size: tuple[int, int], box: Region, lw: int, lh: int) -> list[tuple[int, int]]:
    """Top-left corners for a label, in order of preference, kept within the image."""
    x0, y0, w, h = box  # the part on the image
    x1, y1 = x0 + w, y0 + h
    spots = [
        (x0, y0 - lh), (x0, y0), (x0, y1), (x0, y1 - lh),                      # left-aligned
        (x1 - lw, y0 - lh), (x1 - lw, y0), (x1 - lw, y1), (x1 - lw, y1 - lh),  # right-aligned
        (x0 - lw, y0), (x1, y0), (x0 - lw, y1 - lh), (x1, y1 - lh),            # beside
    ]
    out = []
    for sx, sy in spots:
        spot = (max(0, min(sx, size[0] - lw)), max(0, min(sy, size[1] - lh)))
        if spot not in out:
            out.append(spot)
    return out


def _place(size, box, label_size, index, box_index, boxes, placed: "_Grid", free: "_FreeSpace") -> Region:
    lw, lh = label_size
    candidates = _candidates(size, box, lw, lh)
    best = None
    for order, (x, y) in enumerate(candidates):
        rect = (x, y, lw, lh)
        if placed.hits(rect):
            continue
        score = (_covered(rect, index, box_index, boxes), order)
        if best is None or score < best[0]:
            best = (score, rect)
    if best is not None:
        return best[1]
    return _nudge(size, candidates[0], (lw, lh), placed) or free.nearest(candidates[0], (lw, lh))


def _nudge(size, start: tuple[int, int], label_size: tuple[int, int], placed: "_Grid") -> Region | None:
    """A free spot near ``start`` among those that just clear each label in the way
    (left of, right of, above or below it), nearest first; None when the few tried are
    all taken."""
    lw, lh = label_size
    sx, sy = start
    heap = [(0, sx, sy)]
    seen = {(sx, sy)}
    for _ in range(_NUDGES):
        if not heap:
            break
        _, x, y = heapq.heappop(heap)
        rect = (x, y, lw, lh)
        blockers = placed.colliding(rect)
        if not blockers:
            return rect
        for bx, by, bw, bh in blockers:
            for nx, ny in ((bx + bw, y), (bx - lw, y), (x, by + bh), (x, by - lh)):
                nx, ny = max(0, min(nx, size[0] - lw)), max(0, min(ny, size[1] - lh))
                if (nx, ny) not in seen:
                    seen.add((nx, ny))
                    heapq.heappush(heap, ((nx - sx) ** 2 + (ny - sy) ** 2, nx, ny))
    return None


class _FreeSpace:
    """Which parts of the image placed labels cover, in cells of ``CELL`` px (a cell
    partly covered counts as covered): the whole image searched at once for the free
    spot nearest a point."""

    CELL = 4

    def __init__(self, size: tuple[int, int]) -> None:
        c = self.CELL
        self.size = size
        self.taken = np.zeros((-(-size[1] // c), -(-size[0] // c)), dtype=np.int32)

    def add(self, r: Region) -> None:
        c = self.CELL
        x, y, w, h = r
        self.taken[y // c:-(-(y + h) // c), x // c:-(-(x + w) // c)] = 1

    def nearest(self, start: tuple[int, int], label_size: tuple[int, int]) -> Region:
        """The free spot (on the cell grid) nearest ``start`` for a label of
        ``label_size``; the least covered one when no spot is free. Searched in windows
        around ``start`` that grow fourfold until one holds a free spot no farther than
        the window's reach (so nothing outside could be nearer)."""
        c = self.CELL
        lw, lh = label_size
        cw, ch = -(-lw // c), -(-lh // c)
        # Top-left cells that keep the label inside the image.
        rows = (self.size[1] - lh) // c + 1
        cols = (self.size[0] - lw) // c + 1
        reach = 2 * max(lw, lh)
        while True:
            x0, x1 = max(0, (start[0] - reach) // c), min(cols, (start[0] + reach) // c + 1)
            y0, y1 = max(0, (start[1] - reach) // c), min(rows, (start[1] + reach) // c + 1)
            whole = (x0, y0, x1, y1) == (0, 0, cols, rows)
            taken = self.taken[y0:y1 + ch - 1, x0:x1 + cw - 1]
            # Coverage of every spot's window, from a summed-area table.
            table = np.zeros((taken.shape[0] + 1, taken.shape[1] + 1), dtype=np.int64)
            table[1:, 1:] = taken.cumsum(0).cumsum(1)
            sums = table[ch:, cw:] - table[:-ch, cw:] - table[ch:, :-cw] + table[:-ch, :-cw]
            sums = sums[:y1 - y0, :x1 - x0]
            dx = (np.arange(x0, x1, dtype=np.int64) * c - start[0]) ** 2
            dy = (np.arange(y0, y1, dtype=np.int64) * c - start[1]) ** 2
            distance = dy[:, None] + dx[None, :]
            free = np.where(sums == 0, distance, np.iinfo(np.int64).max)
            best = np.unravel_index(np.argmin(free), free.shape)
            if free[best] <= reach * reach or (whole and free[best] != np.iinfo(np.int64).max):
                return int(best[1] + x0) * c, int(best[0] + y0) * c, lw, lh
            if whole:
                crowd = sums * (int(distance.max()) + 1) + distance
                best = np.unravel_index(np.argmin(crowd), crowd.shape)
                return int(best[1] + x0) * c, int(best[0] + y0) * c, lw, lh
            reach *= 4


def _covered(rect: Region, index: int, box_index: "_Grid", boxes: list[Region]) -> int:
    """How much of other elements' boxes a label would hide. A box that holds the whole
    label (a large container) counts once, lightly: covering it hides little."""
    total = 0
    for j in box_index.candidates(rect):
        if j == index:
            continue
        other = boxes[j]
        area = region_overlap(rect, other)
        if area and area == rect[2] * rect[3] and other[2] * other[3] > 4 * area:
            total += 1
        else:
            total += area
    return total


def _colour(boxes: list[Region], labels: list[Region], height: int) -> list[int]:
    """A palette index per mark, differing from every mark near it already coloured
    (near: its box or label within a label's height); the least used among the near
    ones when there are more neighbours than colours."""
    reach = _Grid(2 * height)
    areas = []
    for i, (box, label) in enumerate(zip(boxes, labels)):
        area = grow_region(region_union(box, label), height)
        areas.append(area)
        reach.add(i, area)
    out: list[int] = []
    for i, area in enumerate(areas):
        near = [out[j] for j in reach.candidates(area) if j < i and region_overlap(area, areas[j])]
        taken = set(near)
        free = [c for c in range(len(PALETTE)) if c not in taken]
        # Start each search where the previous mark's colour left off, so that the
        # palette is used evenly rather than its first colours everywhere.
        start = (out[-1] + 1) if out else 0
        if free:
            out.append(min(free, key=lambda c: (c - start) % len(PALETTE)))
        else:
            out.append(min(range(len(PALETTE)), key=lambda c: (near.count(c), (c - start) % len(PALETTE))))
    return out


def _text_colour(colour: tuple[int, int, int]) -> tuple[int, int, int]:
    """Black or white, whichever contrasts more with ``colour`` (WCAG luminance)."""
    def channel(v: int) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    lum = 0.2126 * channel(colour[0]) + 0.7152 * channel(colour[1]) + 0.0722 * channel(colour[2])
    return (0, 0, 0) if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else (255, 255, 255)


def _leader(box: Region, label: Region) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """A line from a label to its box when they do not touch."""
    gap = 2
    bx, by, bw, bh = box
    if region_overlap(grow_region(box, gap), label):
        return None
    lx, ly, lw, lh = label
    cx, cy = lx + lw // 2, ly + lh // 2
    px = max(bx, min(cx, bx + bw - 1))
    py = max(by, min(cy, by + bh - 1))
    qx = max(lx, min(px, lx + lw - 1))
    qy = max(ly, min(py, ly + lh - 1))
    return (qx, qy), (px, py)


def _clip(size: tuple[int, int], r: Region) -> Region:
    x0, y0 = max(0, min(r[0], size[0])), max(0, min(r[1], size[1]))
    x1, y1 = max(0, min(r[0] + r[2], size[0])), max(0, min(r[1] + r[3], size[1]))
    return x0, y0, x1 - x0, y1 - y0


class _Grid:
    """Rectangles bucketed by the grid cells they cover: which ones may meet a rectangle."""

    def __init__(self, cell: int) -> None:
        self.cell = cell
        self.cells: dict[tuple[int, int], list[int]] = {}
        self.rects: dict[int, Region] = {}

    def _keys(self, r: Region):
        c = self.cell
        for gy in range(r[1] // c, (r[1] + max(r[3], 1) - 1) // c + 1):
            for gx in range(r[0] // c, (r[0] + max(r[2], 1) - 1) // c + 1):
                yield gx, gy

    def add(self, key: int, r: Region) -> None:
        self.rects[key] = r
        for k in self._keys(r):
            self.cells.setdefault(k, []).append(key)

    def candidates(self, r: Region) -> set[int]:
        out: set[int] = set()
        for k in self._keys(r):
            out.update(self.cells.get(k, ()))
        return out

    def colliding(self, r: Region) -> list[Region]:
        return [self.rects[k] for k in self.candidates(r) if region_overlap(r, self.rects[k])]

    def hits(self, r: Region) -> bool:
        return any(region_overlap(r, self.rects[k]) for k in self.candidates(r))
