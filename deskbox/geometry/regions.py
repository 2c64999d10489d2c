"""Pixel regions: whole-pixel rectangles (x, y, w, h) in one image's pixels, what changed
between two frames, what OCR reads, where a mark's label goes. Edges are exclusive:
(0, 0, 10, 10) and (10, 0, 10, 10) touch but do not meet. Part of ``deskbox.geometry``,
which exports them."""

from __future__ import annotations

from typing import Iterable

__all__ = ["Region", "clip_region", "region_overlap", "regions_intersect", "region_contains", "region_union",
           "grow_region", "merge_regions"]


Region = tuple[int, int, int, int]


def clip_region(rect: Region, size: tuple[int, int]) -> Region | None:
    """``rect`` cut to an image of ``size``; None when nothing of it is inside."""
    x, y, w, h = (int(v) for v in rect)
    x0, y0 = max(0, x), max(0, y)
    x1, y1 = min(size[0], x + w), min(size[1], y + h)
    if x1 <= x0 or y1 <= y0:
        return None
    return x0, y0, x1 - x0, y1 - y0


def region_overlap(a: Region, b: Region) -> int:
    """The area ``a`` and ``b`` share (0 when they only touch)."""
    w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0


def regions_intersect(a: Region, b: Region) -> bool:
    """Whether they share any pixel (touching edges do not)."""
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def region_contains(outer: Region, inner: Region) -> bool:
    return (outer[0] <= inner[0] and outer[1] <= inner[1]
            and inner[0] + inner[2] <= outer[0] + outer[2] and inner[1] + inner[3] <= outer[1] + outer[3])


def region_union(a: Region, b: Region) -> Region:
    """The bounding box of both."""
    x0, y0 = min(a[0], b[0]), min(a[1], b[1])
    return x0, y0, max(a[0] + a[2], b[0] + b[2]) - x0, max(a[1] + a[3], b[1] + b[3]) - y0


def grow_region(rect: Region, d: int) -> Region:
    """``rect`` with ``d`` pixels more on every side (fewer when ``d`` is negative)."""
    return rect[0] - d, rect[1] - d, rect[2] + 2 * d, rect[3] + 2 * d


def merge_regions(rects: Iterable[Region]) -> list[Region]:
    """Regions that overlap replaced by their bounding box until none overlap, top to
    bottom then left to right."""
    out = list(rects)
    merged = True
    while merged:
        merged = False
        for i in range(len(out)):
            for j in range(i + 1, len(out)):
                if regions_intersect(out[i], out[j]):
                    out[i] = region_union(out[i], out[j])
                    del out[j]
                    merged = True
                    break
            if merged:
                break
    return sorted(out, key=lambda r: (r[1], r[0]))
