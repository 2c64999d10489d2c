"""Change detection on frames: signatures see every pixel, and changed_regions reports
exactly the tiles that changed, merged into rectangles."""

from __future__ import annotations

import random

import numpy as np
import pytest
from PIL import Image

from deskbox.scene.frames import FrameSignature, changed_regions, hamming, signature, signature_of


def frame(width: int, height: int, seed: int = 1) -> np.ndarray:
    """A screen-like frame: flat background with a few coloured bars."""
    rng = np.random.default_rng(seed)
    pixels = np.full((height, width, 3), 240, dtype=np.uint8)
    for _ in range(12):
        x, y = rng.integers(0, width), rng.integers(0, height)
        pixels[y:y + rng.integers(2, 30), x:x + rng.integers(2, 90)] = rng.integers(0, 256, 3)
    return pixels


def sign(pixels: np.ndarray, block: int = 64) -> FrameSignature:
    h, w, _ = pixels.shape
    return signature(pixels.tobytes(), w, h, block=block)


def cells(rects: list[tuple[int, int, int, int]], block: int) -> list[tuple[int, int]]:
    """The tiles the rectangles cover, each as often as it is covered."""
    out = []
    for x, y, w, h in rects:
        for ty in range(y // block, -(-(y + h) // block)):
            for tx in range(x // block, -(-(x + w) // block)):
                out.append((tx, ty))
    return out


def test_identical_frames_have_no_changed_region():
    pixels = frame(1280, 800)
    assert changed_regions(sign(pixels), sign(pixels.copy())) == []


def test_without_a_previous_frame_the_whole_frame_changed():
    assert changed_regions(None, sign(frame(1280, 800))) == [(0, 0, 1280, 800)]


def test_a_frame_of_another_size_changed_everywhere():
    assert changed_regions(sign(frame(1280, 800)), sign(frame(1920, 1080))) == [(0, 0, 1920, 1080)]


def test_the_signature_lists_one_tile_per_block_row_major_including_partial_edges():
    sig = sign(frame(200, 130), block=64)
    assert sig.grid == (4, 3)
    assert len(sig.blocks) == 12
    assert (sig.width, sig.height, sig.block) == (200, 130, 64)


def test_a_change_to_any_single_byte_is_seen_in_exactly_its_own_tile():
    # Every byte of a small frame with partial edge tiles, one at a time: the signature
    # covers the whole tile, not a sample of it.
    width, height, block = 45, 21, 16
    pixels = frame(width, height)
    base = sign(pixels, block)
    flat = pixels.reshape(-1)
    for i in range(flat.size):
        flat[i] ^= 0x01
        y, x = divmod(i // 3, width)
        tx, ty = x // block, y // block
        expected = (tx * block, ty * block, min(block, width - tx * block), min(block, height - ty * block))
        assert changed_regions(base, sign(pixels, block)) == [expected], (x, y, i % 3)
        flat[i] ^= 0x01


def test_two_pixels_trading_places_in_a_tile_is_seen():
    # The same bytes in another order: a sum of the tile's bytes would miss this.
    pixels = frame(128, 128)
    pixels[10, 10], pixels[10, 11] = (1, 2, 3), (4, 5, 6)
    base = sign(pixels)
    pixels[10, 10], pixels[10, 11] = (4, 5, 6), (1, 2, 3)
    assert changed_regions(base, sign(pixels)) == [(0, 0, 64, 64)]


def test_adjacent_changed_tiles_merge_into_one_rectangle():
    pixels = frame(640, 480)
    base = sign(pixels)
    pixels[70:200, 70:200] = (0, 0, 255)  # tiles (1..3, 1..3)
    assert changed_regions(base, sign(pixels)) == [(64, 64, 192, 192)]


def test_an_l_shaped_change_is_covered_exactly_by_disjoint_rectangles():
    pixels = frame(640, 480)
    base = sign(pixels)
    pixels[0:10, 0:300] = 0  # tiles (0..4, 0)
    pixels[0:300, 0:10] = 0  # tiles (0, 0..4)
    rects = changed_regions(base, sign(pixels))
    assert rects == [(0, 0, 320, 64), (0, 64, 64, 256)]


def test_changed_rectangles_cover_every_changed_tile_once_and_nothing_else():
    rnd = random.Random(4)
    width, height, block = 333, 250, 32
    pixels = frame(width, height)
    base = sign(pixels, block)
    for _ in range(40):
        changed = pixels.copy()
        touched = set()
        for _ in range(rnd.randint(1, 25)):
            x, y = rnd.randrange(width), rnd.randrange(height)
            changed[y, x] = 255 - changed[y, x]
            touched.add((x // block, y // block))
        rects = changed_regions(base, sign(changed, block))
        covered = cells(rects, block)
        assert sorted(covered) == sorted(touched)
        for x, y, w, h in rects:
            assert 0 <= x and 0 <= y and x + w <= width and y + h <= height


def test_padding_between_rows_is_ignored():
    pixels = frame(100, 50)
    padded = np.zeros((50, 100 * 3 + 20), dtype=np.uint8)
    padded[:, :300] = pixels.reshape(50, 300)
    sig = signature(padded.tobytes(), 100, 50, stride=320)
    assert sig == sign(pixels)
    padded[:, 300:] = 99
    assert signature(padded.tobytes(), 100, 50, stride=320) == sig
    # The last row needs no padding after it.
    assert signature(padded.tobytes()[:-20], 100, 50, stride=320) == sig


def test_a_buffer_too_short_for_the_frame_is_refused():
    with pytest.raises(ValueError):
        signature(b"\0" * (100 * 3 * 50 - 1), 100, 50)
    with pytest.raises(ValueError):
        signature(b"\0" * 1000, 100, 3, stride=200)


def test_a_pillow_image_signs_like_its_rgb_bytes():
    pixels = frame(300, 200)
    image = Image.fromarray(pixels, "RGB")
    assert signature_of(image) == sign(pixels)
    assert signature_of(image.convert("RGBA")) == sign(pixels)


def test_dhash_barely_moves_for_a_small_change():
    pixels = frame(1280, 800)
    base = sign(pixels).dhash
    pixels[400:410, 600:640] = 0
    assert hamming(base, sign(pixels).dhash) <= 4


def test_dhash_of_a_horizontal_gradient_sets_every_bit():
    ramp = np.repeat(np.linspace(255, 0, 300).astype(np.uint8)[None, :, None], 3, axis=2)
    pixels = np.repeat(ramp, 40, axis=0)
    assert sign(pixels).dhash == (1 << 64) - 1
    assert sign(np.ascontiguousarray(pixels[:, ::-1])).dhash == 0


def test_dhash_works_on_frames_smaller_than_its_grid():
    tiny = np.arange(4 * 3 * 3, dtype=np.uint8).reshape(3, 4, 3)
    assert 0 <= sign(tiny).dhash < 1 << 64


def test_hamming_counts_differing_bits():
    assert hamming(0b1011, 0b0001) == 2
    assert hamming((1 << 64) - 1, 0) == 64
