"""The screenshot encoders: deskbox's own PNG writer must decode to the exact pixels."""

import io
import random

import pytest
from PIL import Image

from deskbox.desktopd.encode import encode, encode_png, encode_raw


def noisy(mode: str, size: tuple[int, int]) -> Image.Image:
    rng = random.Random(7)
    bands = len(mode)
    data = bytes(rng.randrange(256) if i % 7 else 0 for i in range(size[0] * size[1] * bands))
    return Image.frombytes(mode, size, data)


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L"])
@pytest.mark.parametrize("size", [(1, 1), (17, 3), (640, 480)])
def test_png_round_trips_exactly(mode, size):
    image = noisy(mode, size)
    decoded = Image.open(io.BytesIO(encode_png(image)))
    assert decoded.mode == mode and decoded.size == size
    assert decoded.tobytes() == image.tobytes()


@pytest.mark.parametrize("rawmode", ["BGRX", "RGBX"])
@pytest.mark.parametrize("y_invert", [False, True])
def test_raw_frames_encode_like_their_converted_image(rawmode, y_invert):
    width, height, stride = 33, 9, 33 * 4 + 12  # rows padded, as compositors may
    rng = random.Random(3)
    data = bytes(rng.randrange(256) for _ in range(stride * height))
    expected = Image.frombytes("RGB", (width, height), data, "raw", rawmode, stride, -1 if y_invert else 1)
    for fmt in ("png", "jpeg", "webp"):
        body = encode_raw(data, (width, height), stride, rawmode, fmt, 90, y_invert=y_invert)
        decoded = Image.open(io.BytesIO(body)).convert("RGB")
        assert decoded.size == (width, height)
        if fmt == "png":
            assert decoded.tobytes() == expected.tobytes()
    assert encode(expected, "png")[:8] == b"\x89PNG\r\n\x1a\n"
