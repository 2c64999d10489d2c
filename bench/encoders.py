"""Encoders side by side on one captured 1080p frame, in this process.

Every candidate starts from what desktopd's encoder is handed: a Pillow RGB image made
from the compositor's BGRX pixels. Candidates that want a numpy array pay for getting
one (``np.asarray(image)``), as they would in desktopd. Each output is checked once:
lossless ones must decode (Pillow; PNG also libpng through imagecodecs) to the same
pixels, lossy ones must decode and report their PSNR.
"""

from __future__ import annotations

import importlib
import io
import time
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
from PIL import Image

from deskbox.desktopd import encode as desktopd_encode

from .stats import summarize

__all__ = ["run_encoders", "bgrx_from_rgb"]


@dataclass
class Case:
    section: str
    name: str
    fn: Callable[[], object]
    lossless: bool = True
    chosen: bool = False


def bgrx_from_rgb(rgb: np.ndarray) -> bytes:
    """The frame as the compositor hands it over (wl_shm XRGB8888, little-endian)."""
    h, w, _ = rgb.shape
    out = np.empty((h, w, 4), np.uint8)
    out[..., 0], out[..., 1], out[..., 2], out[..., 3] = rgb[..., 2], rgb[..., 1], rgb[..., 0], 255
    return out.tobytes()


def _optional(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _pillow(image: Image.Image, fmt: str, **options) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def _cases(rgb: np.ndarray, raw: bytes) -> list[Case]:
    h, w, _ = rgb.shape
    image = Image.frombuffer("RGB", (w, h), raw, "raw", "BGRX", w * 4, 1)
    bgrx = np.frombuffer(raw, np.uint8).reshape(h, w, 4)
    ic = _optional("imagecodecs")
    simplejpeg = _optional("simplejpeg")
    isal = _optional("isal.isal_zlib")
    zlib_ng = _optional("zlib_ng.zlib_ng")
    enc = desktopd_encode
    cases = [
        Case("convert", "Pillow frombuffer BGRX->RGB (desktopd's Frame.to_image)",
             lambda: Image.frombuffer("RGB", (w, h), raw, "raw", "BGRX", w * 4, 1), chosen=True),
        Case("convert", "numpy BGRX->RGB (bgrx[..., 2::-1] copied)", lambda: np.ascontiguousarray(bgrx[..., 2::-1])),
        Case("convert", "bytes copy of the shm frame (Screencopy's buf.map[:])", lambda: bytearray(raw)),
        Case("convert", "np.asarray(image): what array-based encoders pay first", lambda: np.asarray(image)),
    ]

    def deskbox_png(level: int, bands: int, module=None) -> Callable[[], bytes]:
        return lambda: enc.encode_png(image, level=level, bands=bands, deflate=module)

    cases.append(Case("png", "Pillow, compress_level=1 (adaptive filters, zlib)",
                      lambda: _pillow(image, "PNG", compress_level=1)))
    if ic is not None:
        cases.append(Case("png", "imagecodecs.png_encode level=1 (libpng; desktopd before)",
                          lambda: ic.png_encode(np.asarray(image), level=1)))
        cases.append(Case("png", "imagecodecs.png_encode level=1 filter=NONE",
                          lambda: ic.png_encode(np.asarray(image), level=1, filter=8)))
        cases.append(Case("png", "imagecodecs.png_encode level=1 RLE + SUB (OpenCV's fast)",
                          lambda: ic.png_encode(np.asarray(image), level=1, strategy=3, filter=16)))
    if isal is not None:
        for level in (0, 1, 2, 3):
            chosen = level == enc.PNG_LEVEL and enc.PNG_BANDS == 1
            cases.append(Case("png", f"deskbox writer, filter NONE, ISA-L level {level}", deskbox_png(level, 1), chosen=chosen))
        cases.append(Case("png", f"deskbox writer, ISA-L level {enc.PNG_LEVEL}, 2 bands on 2 threads",
                          deskbox_png(enc.PNG_LEVEL, 2), chosen=enc.PNG_BANDS == 2))
    if zlib_ng is not None:
        cases.append(Case("png", "deskbox writer, filter NONE, zlib-ng level 1", deskbox_png(1, 1, zlib_ng)))
    cases.append(Case("png", "deskbox writer, filter NONE, stdlib zlib level 1 (fallback)", deskbox_png(1, 1, zlib)))
    cases.append(Case("png+convert", "Frame.to_image, then encode(png): desktopd's fresh path today",
                      lambda: enc.encode(Image.frombuffer("RGB", (w, h), raw, "raw", "BGRX", w * 4, 1), "png"),
                      chosen=True))
    cases.append(Case("png+convert", "encode_raw(png) from the BGRX frame: no conversion (not wired into desktopd yet)",
                      lambda: enc.encode_raw(raw, (w, h), w * 4, "BGRX", "png")))

    q = enc.DEFAULT_QUALITY["jpeg"]
    cases.append(Case("jpeg", f"Pillow quality={q} (libjpeg-turbo, 4:2:0)", lambda: _pillow(image, "JPEG", quality=q),
                      lossless=False, chosen=True))
    if ic is not None:
        cases.append(Case("jpeg", f"imagecodecs.jpeg8_encode level={q} (desktopd before)",
                          lambda: ic.jpeg8_encode(np.asarray(image), level=q), lossless=False))
    if simplejpeg is not None:
        cases.append(Case("jpeg", f"simplejpeg quality={q} 4:2:0",
                          lambda: simplejpeg.encode_jpeg(np.asarray(image), quality=q, colorspace="RGB",
                                                         colorsubsampling="420"), lossless=False))
    cases.append(Case("jpeg+convert", "Frame.to_image, then encode(jpeg): desktopd's fresh path today",
                      lambda: enc.encode(Image.frombuffer("RGB", (w, h), raw, "raw", "BGRX", w * 4, 1), "jpeg"),
                      lossless=False, chosen=True))
    if simplejpeg is not None:
        cases.append(Case("jpeg+convert", f"simplejpeg quality={q} 4:2:0 from the BGRX frame: no conversion",
                          lambda: simplejpeg.encode_jpeg(bgrx, quality=q, colorspace="BGRX", colorsubsampling="420"),
                          lossless=False))
    wq = enc.DEFAULT_QUALITY["webp"]
    cases.append(Case("webp", f"Pillow quality={wq} method=0", lambda: _pillow(image, "WEBP", quality=wq, method=0),
                      lossless=False, chosen=True))
    if ic is not None:
        cases.append(Case("webp", f"imagecodecs.webp_encode level={wq} method=0",
                          lambda: ic.webp_encode(np.asarray(image), level=wq, method=0, lossless=False),
                          lossless=False))
    return cases


def _check(case: Case, out: object, rgb: np.ndarray) -> tuple[int | None, str]:
    """(encoded size, verdict) of one output."""
    if case.section == "convert":
        return None, "-"
    data = bytes(out)
    decoded = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    if decoded.shape != rgb.shape:
        return len(data), f"WRONG SIZE {decoded.shape}"
    if case.lossless:
        if not np.array_equal(decoded, rgb):
            return len(data), "PIXELS DIFFER"
        ic = _optional("imagecodecs")
        if case.section.startswith("png") and ic is not None:
            if not np.array_equal(np.asarray(ic.png_decode(data))[..., :3], rgb):
                return len(data), "libpng: PIXELS DIFFER"
            return len(data), "exact (Pillow, libpng)"
        return len(data), "exact (Pillow)"
    mse = float(np.mean((decoded.astype(np.float32) - rgb.astype(np.float32)) ** 2))
    psnr = 99.0 if mse == 0 else 10 * np.log10(255.0**2 / mse)
    return len(data), f"PSNR {psnr:.1f} dB"


def run_encoders(rgb: np.ndarray, iterations: int) -> list[dict]:
    raw = bgrx_from_rgb(rgb)
    cases = _cases(rgb, raw)
    checks = {}
    for case in cases:
        checks[case.name] = _check(case, case.fn(), rgb)
    times: dict[str, list[float]] = {case.name: [] for case in cases}
    for i in range(iterations):
        k = i % len(cases)
        for case in cases[k:] + cases[:k]:
            started = time.perf_counter()
            case.fn()
            times[case.name].append(time.perf_counter() - started)
    rows = []
    for case in cases:
        size, verdict = checks[case.name]
        rows.append({
            "section": case.section,
            "encoder": case.name,
            "chosen": case.chosen,
            "bytes": size,
            "check": verdict,
            **summarize(times[case.name]),
        })
    return rows
