"""Change detection on frames: a signature per frame, and the rectangles that differ
between two signatures.

A :class:`FrameSignature` holds two things:

- ``blocks``: one CRC-32 per ``block`` x ``block`` tile, row-major, over every byte of
  the tile (the last column and row of tiles may be narrower or shorter). These decide
  what changed: any change inside a tile changes its checksum (see ``_block_crcs`` for
  why CRC-32 is enough here).
- ``dhash``: a 64-bit difference hash of the whole frame (9 x 8 cells of brightness,
  one bit per horizontal neighbour pair, read from 64 evenly spaced pixel rows), a
  perceptual summary for "how different" (``hamming``), never for "did anything
  change".

Signing a 1920x1080 frame costs a few milliseconds: the frame is copied once, band by
band, into tile-contiguous order and each tile is checksummed with ISA-L's CRC-32
(zlib's when ``isal`` is missing, about twice as slow overall).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
from PIL import Image

from ..geometry import Region

try:
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - isal is a declared dependency
    _crc32 = zlib.crc32

__all__ = ["FrameSignature", "signature", "signature_of", "changed_regions", "hamming"]


@dataclass(frozen=True)
class FrameSignature:
    """What ``changed_regions`` compares: the frame's size, its tile edge ``block`` (device
    px), a 64-bit ``dhash`` and one checksum per tile in ``blocks`` (row-major)."""

    width: int
    height: int
    block: int
    dhash: int
    blocks: tuple[int, ...]

    @property
    def grid(self) -> tuple[int, int]:
        """Tiles across and down."""
        return -(-self.width // self.block), -(-self.height // self.block)


def signature(rgb: bytes | bytearray | memoryview, width: int, height: int, *, stride: int | None = None,
              block: int = 64) -> FrameSignature:
    """The signature of a frame of packed 8-bit RGB rows (3 bytes a pixel), ``stride``
    bytes apart (default ``width * 3``)."""
    if width <= 0 or height <= 0:
        raise ValueError(f"empty frame {width}x{height}")
    if block <= 0:
        raise ValueError(f"block must be positive, not {block}")
    row = width * 3
    stride = row if stride is None else stride
    if stride < row:
        raise ValueError(f"stride {stride} is shorter than a row of {width} RGB pixels")
    needed = stride * (height - 1) + row
    view = memoryview(rgb).cast("B")
    if len(view) < needed:
        raise ValueError(f"{len(view)} bytes cannot hold {width}x{height} RGB rows {stride} bytes apart")
    frame = np.ndarray((height, row), dtype=np.uint8, buffer=view, strides=(stride, 1))
    return FrameSignature(width, height, block, _dhash(frame, width, height), _block_crcs(frame, width, height, block))


def signature_of(image: Image.Image, *, block: int = 64) -> FrameSignature:
    """The signature of a Pillow image, the same as ``signature`` of its RGB bytes."""
    if image.mode != "RGB":
        image = image.convert("RGB")
    return signature(image.tobytes(), image.width, image.height, block=block)


def _block_crcs(frame: np.ndarray, width: int, height: int, block: int) -> tuple[int, ...]:
    """One CRC-32 per tile over all of its bytes, row-major.

    Why CRC-32 is enough: a tile's checksum is compared only with the same tile's
    checksum in the previous frame, so the question is whether a real change can leave
    it equal. CRC-32 detects every change confined to 32 consecutive bits, every change
    of up to 3 bits in a tile of this size, and any other change except with probability
    2^-32 (its polynomial divides no sparse pattern that screens produce: a repeated
    delta at two places, as a moved glyph gives, is always seen, since the polynomial's
    period of 2^32 - 1 bits far exceeds a tile's ~98,000 bits). Changes are not
    adversarial here, and an agent's turn refreshes everything regardless.
    """
    tile_row = block * 3
    full = width // block
    out: list[int] = []
    for y in range(0, height, block):
        band = frame[y:y + block]
        rows = band.shape[0]
        if full:
            # (rows, full, tile_row) -> (full, rows, tile_row): each tile's bytes contiguous.
            tiles = np.ascontiguousarray(band[:, :full * tile_row].reshape(rows, full, tile_row).transpose(1, 0, 2))
            flat = memoryview(tiles).cast("B")
            size = rows * tile_row
            out.extend(_crc32(flat[i * size:(i + 1) * size]) for i in range(full))
        if full * block < width:
            out.append(_crc32(np.ascontiguousarray(band[:, full * tile_row:]).data))
    return tuple(out)


def _dhash(frame: np.ndarray, width: int, height: int) -> int:
    """64-bit difference hash: brightness (R+G+B) averaged over 9 x 8 cells, one bit per
    horizontal neighbour pair, set where the left cell is brighter.

    Each cell row averages 8 whole pixel rows evenly spaced through it (64 rows in all):
    reading whole rows keeps this well under a millisecond at any resolution, where a
    strided sample of pixels costs several."""
    picked = frame[((np.arange(64) * 2 + 1) * height) // 128]
    rows = picked.reshape(8, 8, width * 3).sum(axis=1, dtype=np.uint32)
    gray = rows.reshape(8, width, 3).sum(axis=2)
    if width < 9:
        gray = np.repeat(gray, -(-9 // width), axis=1)
    cols = (np.arange(9) * gray.shape[1]) // 9
    sums = np.add.reduceat(gray, cols, axis=1)
    means = sums / np.diff(np.append(cols, gray.shape[1]))
    bits = (means[:, :-1] > means[:, 1:]).ravel()
    return int(np.packbits(bits).view(">u8")[0])


def hamming(a: int, b: int) -> int:
    """Bits that differ between two hashes."""
    return (a ^ b).bit_count()


def changed_regions(old: FrameSignature | None, new: FrameSignature) -> list[Region]:
    """Rectangles ``(x, y, w, h)`` in device px that together cover exactly the tiles
    whose checksums differ, adjacent tiles merged (disjoint rectangles, row-major by
    their top-left tile, clipped to the frame). The whole frame when there is no ``old``
    or its size or tiling differs; ``[]`` when nothing changed."""
    if old is None or (old.width, old.height, old.block) != (new.width, new.height, new.block):
        return [(0, 0, new.width, new.height)]
    if old.blocks == new.blocks:
        return []
    cols, rows = new.grid
    dirty = (np.array(old.blocks, dtype=np.uint32) != np.array(new.blocks, dtype=np.uint32)).reshape(rows, cols)
    return [_tile_rect(new, *tiles) for tiles in _cover(dirty)]


def _cover(dirty: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Disjoint rectangles of tiles (x0, y0, x1, y1 exclusive) covering exactly the set
    cells: from each uncovered set cell in row-major order, the longest run to the right,
    then as many rows down as repeat that whole run uncovered."""
    todo = dirty.copy()
    rows, cols = todo.shape
    out = []
    for y0, x0 in zip(*np.nonzero(todo)):
        if not todo[y0, x0]:
            continue
        x1 = x0 + 1
        while x1 < cols and todo[y0, x1]:
            x1 += 1
        y1 = y0 + 1
        while y1 < rows and todo[y1, x0:x1].all():
            y1 += 1
        todo[y0:y1, x0:x1] = False
        out.append((int(x0), int(y0), int(x1), int(y1)))
    return out


def _tile_rect(sig: FrameSignature, x0: int, y0: int, x1: int, y1: int) -> Region:
    b = sig.block
    left, top = x0 * b, y0 * b
    return left, top, min(x1 * b, sig.width) - left, min(y1 * b, sig.height) - top
