"""Image encoders, chosen by measurement (`make bench`, section "encoders").

PNG is written here rather than by a library: on a 1080p text-heavy frame libpng
(Pillow or imagecodecs, level 1) spends most of its ~80 ms choosing row filters
adaptively and deflating with zlib. We pack rows straight out of Pillow's storage with
filter type 0 ("None": smallest of None/Sub/Up on screen content at this level) and
deflate them with ISA-L (the ``isal`` package), streaming 128 KB at a time so the rows
are still in cache when they are compressed. That is about 7 ms for the same frame.

With ``PNG_BANDS > 1`` the rows are split into horizontal bands deflated on their own
threads (ISA-L releases the GIL) and joined pigz-style: every band but the last ends on a
sync flush, and the Adler-32 of the whole is combined from the bands' checksums.

JPEG and WebP go through Pillow, which encodes straight from its own pixel storage:
libjpeg-turbo behind imagecodecs or simplejpeg is no faster once the frame has first
been copied out to a numpy array for them.

Without ``isal`` the stdlib's zlib does the deflating (same bytes on the wire format,
about 5x slower, still faster than libpng with its adaptive filters).
"""

from __future__ import annotations

import io
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PIL import Image

# The deflate library PNGs are written with (zlib's API): ISA-L's, several times faster
# at the levels used here, where installed. encode_png takes another (bench/encoders.py
# weighs them).
try:
    from isal import isal_zlib as DEFLATE
except ImportError:  # pragma: no cover - isal is a declared dependency
    DEFLATE = zlib

__all__ = ["encode", "encode_png", "encode_raw", "CONTENT_TYPES", "DEFAULT_QUALITY", "PNG_LEVEL", "PNG_BANDS",
           "DEFLATE"]

# "rgb": packed 8-bit RGB rows, no header (the size travels in response headers); for
# clients that analyse pixels (the scene aggregator's change detection), not for people.
CONTENT_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp", "rgb": "application/octet-stream"}
DEFAULT_QUALITY = {"jpeg": 85, "webp": 80}

# ISA-L level 1 (of 0..3): level 0 is no faster and ~18% larger; level 2 saves 1% for a
# few % more time; level 3 takes 3x as long. See the bench's encoder table.
PNG_LEVEL = 1
# One band: a second one saved ~2 ms on an idle 2-core machine and lost about as much
# while the other core was busy (Pillow's packing holds the GIL; only deflate overlaps).
PNG_BANDS = 1

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Pillow mode -> (PNG colour type, packer raw mode, bytes per pixel)
_PNG_MODES = {"RGB": (2, "RGB", 3), "RGBA": (6, "RGBA", 4), "L": (0, "L", 1)}
_CHUNK_BYTES = 128 * 1024
_pool: ThreadPoolExecutor | None = None


def encode(image: Image.Image, fmt: str, quality: int | None = None) -> bytes:
    if fmt == "png":
        return encode_png(image)
    if fmt == "jpeg":
        q = quality or DEFAULT_QUALITY["jpeg"]
        return _pillow(image if image.mode in ("RGB", "L") else image.convert("RGB"), "JPEG", quality=q)
    if fmt == "webp":
        q = quality or DEFAULT_QUALITY["webp"]
        return _pillow(image, "WEBP", quality=q, method=0)
    if fmt == "rgb":
        return image.tobytes("raw", "RGB") if image.mode == "RGB" else image.convert("RGB").tobytes()
    raise ValueError(f"unknown format {fmt}")


def encode_raw(
    data: bytes | bytearray | memoryview,
    size: tuple[int, int],
    stride: int,
    rawmode: str,
    fmt: str,
    quality: int | None = None,
    *,
    y_invert: bool = False,
) -> bytes:
    """Encode a captured frame as it came from the compositor (Pillow raw mode ``BGRX``
    or ``RGBX``, rows ``stride`` bytes apart), without converting it to an RGB image
    first when the format allows: PNG packs its RGB rows straight out of the frame (the
    conversion costs ~4 ms and a fresh 8 MB image per 1080p capture). Other formats are
    encoded from the converted image as ``encode`` would."""
    orientation = -1 if y_invert else 1
    if fmt == "png" and rawmode in ("BGRX", "RGBX") and not y_invert:
        # A zero-copy view: Pillow calls the four bytes R, G, B, X whatever they hold;
        # the packer then reads them back in the frame's real order.
        view = Image.frombuffer("RGBX", size, data, "raw", "RGBX", stride, orientation)
        return _png(view, 2, "BGR" if rawmode == "BGRX" else "RGB", 3, PNG_LEVEL, PNG_BANDS, DEFLATE)
    image = Image.frombytes("RGB", size, data, "raw", rawmode, stride, orientation)
    return encode(image, fmt, quality)


def encode_png(image: Image.Image, level: int | None = None, bands: int | None = None, *,
               deflate: Any = None) -> bytes:
    """An 8-bit PNG of ``image`` (RGB, RGBA or L; other modes become RGB), filter None;
    ``deflate``, a module with zlib's API (:data:`DEFLATE` when None)."""
    if image.mode not in _PNG_MODES:
        image = image.convert("RGB")
    color_type, rawmode, bpp = _PNG_MODES[image.mode]
    return _png(image, color_type, rawmode, bpp, PNG_LEVEL if level is None else level,
                PNG_BANDS if bands is None else bands, deflate or DEFLATE)


def _png(image: Image.Image, color_type: int, rawmode: str, bpp: int, level: int, bands: int, deflate: Any) -> bytes:
    """``image``'s rows packed by Pillow in ``rawmode`` (``bpp`` bytes a pixel) as a PNG."""
    image.load()
    w, h = image.size
    bands = max(1, min(bands, h // 64 or 1))
    # Rows are packed with one zero byte of padding at their end: prefixed by one more
    # zero byte and without the last pad, that stream is exactly PNG's filtered rows
    # (filter byte 0 before every row).
    stride = w * bpp + 1
    if bands == 1:
        idat = _deflate_rows_zlib(image, rawmode, stride, level, deflate)
    else:
        idat = _deflate_rows_banded(image, rawmode, stride, level, bands, deflate)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)
    return b"".join((_PNG_SIGNATURE, _chunk(b"IHDR", ihdr), _chunk(b"IDAT", idat), _chunk(b"IEND", b"")))


def _deflate_rows_zlib(image: Image.Image, rawmode: str, stride: int, level: int, deflate: Any) -> bytes:
    c = deflate.compressobj(level)
    out = [c.compress(b"\0")]
    for piece in _packed_rows(image, rawmode, stride, 0, image.height, last=True):
        out.append(c.compress(piece))
    out.append(c.flush())
    return b"".join(out)


def _deflate_band(image: Image.Image, rawmode: str, stride: int, level: int, y0: int, y1: int, last: bool,
                  deflate: Any):
    """Raw deflate of rows y0..y1, ending on a sync flush unless last; its Adler-32 and length."""
    c = deflate.compressobj(level, zlib.DEFLATED, -15)
    out: list[bytes] = []
    adler, length = 1, 0
    if y0 == 0:
        out.append(c.compress(b"\0"))
        adler, length = deflate.adler32(b"\0", adler), 1
    for piece in _packed_rows(image, rawmode, stride, y0, y1, last=last):
        out.append(c.compress(piece))
        adler = deflate.adler32(piece, adler)
        length += len(piece)
    out.append(c.flush(deflate.Z_FINISH if last else deflate.Z_SYNC_FLUSH))
    return b"".join(out), adler, length


def _deflate_rows_banded(image: Image.Image, rawmode: str, stride: int, level: int, bands: int,
                         deflate: Any) -> bytes:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=3, thread_name_prefix="png-band")
    h = image.height
    bounds = [round(h * i / bands) for i in range(bands + 1)]
    futures = [
        _pool.submit(_deflate_band, image, rawmode, stride, level, bounds[i], bounds[i + 1], False, deflate)
        for i in range(bands - 1)
    ]
    tail = _deflate_band(image, rawmode, stride, level, bounds[-2], bounds[-1], True, deflate)
    parts = [f.result() for f in futures] + [tail]
    adler = parts[0][1]
    for _body, band_adler, band_len in parts[1:]:
        adler = _adler32_combine(adler, band_adler, band_len)
    # 0x78 0x01: deflate, 32 KB window, "fastest" (FLEVEL is informative only).
    return b"".join((b"\x78\x01", *(p[0] for p in parts), adler.to_bytes(4, "big")))


def _packed_rows(image: Image.Image, rawmode: str, stride: int, y0: int, y1: int, *, last: bool):
    """Rows y0..y1 as Pillow's raw packer writes them with a zero-padded ``stride``, in
    pieces of about 128 KB; without the final pad byte when ``last``."""
    encoder = getattr(Image, "_getencoder", None)
    if encoder is None:  # pragma: no cover - Pillow without its (private) encoder factory
        data = image.crop((0, y0, image.width, y1)).tobytes("raw", rawmode, stride)
        yield memoryview(data)[:-1] if last else data
        return
    e = encoder(image.mode, "raw", (rawmode, stride))
    e.setimage(image.im, (0, y0, image.width, y1))
    bufsize = max(1, _CHUNK_BYTES // stride) * stride
    try:
        pending = None
        while True:
            _n, err, data = e.encode(bufsize)
            if err < 0:
                raise RuntimeError(f"Pillow raw encoder error {err}")
            if pending is not None:
                yield pending
            pending = data
            if err:
                break
        if pending is not None:
            yield memoryview(pending)[:-1] if last else pending
    finally:
        e.cleanup()


def _adler32_combine(adler1: int, adler2: int, len2: int) -> int:
    """zlib's adler32_combine: the checksum of A+B from those of A and B and len(B)."""
    base = 65521
    rem = len2 % base
    sum1 = adler1 & 0xFFFF
    sum2 = (rem * sum1) % base
    sum1 += (adler2 & 0xFFFF) + base - 1
    sum2 += ((adler1 >> 16) & 0xFFFF) + ((adler2 >> 16) & 0xFFFF) + base - rem
    sum1 %= base
    sum2 %= base
    return sum1 | (sum2 << 16)


def _chunk(tag: bytes, data: bytes) -> bytes:
    return b"".join((struct.pack(">I", len(data)), tag, data, struct.pack(">I", zlib.crc32(data, zlib.crc32(tag)))))


def _pillow(image: Image.Image, fmt: str, **options) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()
