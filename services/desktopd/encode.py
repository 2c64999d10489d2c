"""Image encoders, chosen by measurement (see `make bench`): imagecodecs' libpng with
zlib level 1 and libjpeg-turbo are the fastest we can install from PyPI; Pillow is the
fallback when imagecodecs is missing."""

from __future__ import annotations

import numpy as np
from PIL import Image

try:
    import imagecodecs
except ImportError:  # pragma: no cover - imagecodecs is a declared dependency
    imagecodecs = None

__all__ = ["encode", "CONTENT_TYPES", "DEFAULT_QUALITY"]

CONTENT_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}
DEFAULT_QUALITY = {"jpeg": 85, "webp": 80}


def encode(image: Image.Image, fmt: str, quality: int | None = None) -> bytes:
    if fmt == "png":
        if imagecodecs is not None:
            return bytes(imagecodecs.png_encode(np.asarray(image), level=1))
        return _pillow(image, "PNG", compress_level=1)
    if fmt == "jpeg":
        q = quality or DEFAULT_QUALITY["jpeg"]
        if imagecodecs is not None:
            return bytes(imagecodecs.jpeg8_encode(np.asarray(image), level=q))
        return _pillow(image, "JPEG", quality=q)
    if fmt == "webp":
        q = quality or DEFAULT_QUALITY["webp"]
        return _pillow(image, "WEBP", quality=q, method=0)
    raise ValueError(f"unknown format {fmt}")


def _pillow(image: Image.Image, fmt: str, **options) -> bytes:
    import io

    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()
