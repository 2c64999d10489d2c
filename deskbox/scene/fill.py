"""OCR where a native app exposes nothing: the fill-in mode of the scene's OCR
(``--ocr fill``).

Some of what an app shows has no accessible text at all: GIMP's canvas (one unnamed
panel over the image), a video in VLC (an unnamed frame), a window whose app speaks no
AT-SPI. ``opaque_boxes`` finds those parts among a window's AT-SPI nodes, and
``FillIn`` reads the text in them with the scene's OCR chain, region by region: a
region is read again only when it is new, moved, or its pixels changed since it was
read. The rest of the screen is not read (``--ocr all`` reads it all).

Pure apart from the OCR provider it is given: it knows nothing of where the nodes,
frames or changes come from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from PIL import Image

from ..geometry import Rect, Region, regions_intersect
from .ocr import OcrChain, OcrWord

__all__ = ["Opaque", "FillIn", "opaque_boxes", "OPAQUE_MIN"]

# An opaque part must be at least this big (device px) to be read: smaller unnamed
# leaves are icons and separators.
OPAQUE_MIN = (120, 64)
# Roles of AT-SPI nodes that may stand for a surface an app draws on by itself.
_SURFACE_ROLES = frozenset({"panel", "filler", "frame", "canvas", "drawing area", "image", "unknown", "viewport",
                            "scroll pane", "video", "section", "layered pane", "internal frame"})



@dataclass(frozen=True, slots=True)
class Opaque:
    """A part of a window (display-local device px) with no accessible text."""

    display_id: int
    window_id: str
    box: Region


def opaque_boxes(nodes: list[Any], place: Any) -> list[Rect]:
    """The boxes of a window's nodes (``NativeNode``, in tree order) that are surfaces
    with nothing accessible in them: unnamed, no value, of a surface role, no node
    below them, and at least ``OPAQUE_MIN`` once placed. ``place(extents)`` maps a
    node's extents to a display-local Rect (or None)."""
    out = []
    for i, node in enumerate(nodes):
        if node.depth <= 1 or node.name or node.value or node.extents is None or node.role not in _SURFACE_ROLES:
            continue
        if i + 1 < len(nodes) and nodes[i + 1].depth > node.depth:
            continue  # something accessible lies inside
        box = place(node.extents)
        if box is not None and box.w >= OPAQUE_MIN[0] and box.h >= OPAQUE_MIN[1]:
            out.append(box)
    return out


class FillIn:
    """The text of opaque parts, read with ``chain`` and kept per part until its pixels
    change."""

    def __init__(self, chain: OcrChain) -> None:
        self.chain = chain
        self._read: dict[Opaque, list[OcrWord]] = {}

    @property
    def enabled(self) -> bool:
        return self.chain.enabled

    def update(self, parts: Iterable[Opaque], image_of: Callable[[int], Image.Image],
               changed: dict[int, list[Region]]) -> list[tuple[Opaque, OcrWord]]:
        """Every line of text in ``parts``, given each display's current frame (asked of
        ``image_of`` only when a part on it must be read) and the regions that changed
        on it since the previous call. Parts not named again are forgotten. Raises
        ``OcrError`` when no provider could read: the parts it was to read are then
        forgotten too, so the next call reads them whatever changed by then (the change
        that made them due is not seen twice)."""
        parts = list(dict.fromkeys(parts))
        todo = [p for p in parts if p not in self._read
                or any(regions_intersect(p.box, r) for r in changed.get(p.display_id, ()))]
        for display_id in {p.display_id for p in todo}:
            mine = [p for p in todo if p.display_id == display_id]
            try:
                read = self.chain.read(image_of(display_id), [p.box for p in mine])
            except Exception:
                for part in todo:
                    self._read.pop(part, None)
                raise
            for part, lines in zip(mine, read):
                self._read[part] = lines
        self._read = {p: self._read[p] for p in parts if p in self._read}
        return [(p, line) for p in parts for line in self._read.get(p, [])]
