"""Screenshots: capture, crop, resize, encode; and a cache that only serves what the
screen still shows (keyed on the backend's damage generation)."""

from __future__ import annotations

import os
import zlib
from collections import OrderedDict
from dataclasses import dataclass, replace

from PIL import Image, ImageDraw

from ..common.errors import InvalidRequestError, TooLargeError, UnavailableError
from ..common.memory import release_memory
from ..geometry import Display, device_to_region, resize_factor, scaled_size
from ..policy.redact import Redactor
from .backends.base import Backend, Frame
from .encode import CONTENT_TYPES, encode, encode_raw
from .models import ScreenshotQuery

__all__ = ["Screenshots", "Shot"]


@dataclass(frozen=True, slots=True)
class Shot:
    body: bytes
    content_type: str
    size: tuple[int, int]
    factor: float
    region: tuple[int, int, int, int]
    display: Display
    cached: bool
    # Names this exact picture while the screen does not change (None when the backend
    # cannot tell); ``not_modified``: the client already has it, and body is empty.
    etag: str | None = None
    not_modified: bool = False

    def headers(self) -> dict[str, str]:
        extra = {"ETag": self.etag} if self.etag else {}
        return {
            **extra,
            "X-Deskbox-Display": str(self.display.id),
            "X-Deskbox-Width": str(self.size[0]),
            "X-Deskbox-Height": str(self.size[1]),
            "X-Deskbox-Scale": f"{self.factor:.6g}",
            "X-Deskbox-Region": ",".join(str(v) for v in self.region),
            "X-Deskbox-Display-Size": f"{self.display.size[0]}x{self.display.size[1]}",
            "X-Deskbox-Cache": "hit" if self.cached else "miss",
            "Cache-Control": "no-store",
        }


def _draw_cursor(image: Image.Image, x: float, y: float, scale: float) -> None:
    """A plain arrow at the pointer's hotspot; headless Sway draws no cursor image."""
    s = 1.5 * scale
    pts = [(0, 0), (0, 16), (4, 12), (7, 19), (10, 18), (7, 11), (12, 11)]
    poly = [(x + px * s, y + py * s) for px, py in pts]
    draw = ImageDraw.Draw(image)
    draw.polygon(poly, fill=(255, 255, 255), outline=(0, 0, 0))


# A screenshot is at most this many pixels: 4 times its display, and never over 64 MP
# (an 8K display twice over). Beyond it: 422, with the limit in the message.
MAX_PIXELS_FACTOR = 4
MAX_PIXELS = 64_000_000
# WebP's format cannot say more than this per side.
WEBP_MAX_SIDE = 16383
# Encoded screenshots larger than this are not kept for the next request.
MAX_CACHED_BYTES = 8 * 1024 * 1024


def _check_size(display: Display, fmt: str, out_size: tuple[int, int]) -> None:
    limit = min(MAX_PIXELS_FACTOR * display.size[0] * display.size[1], MAX_PIXELS)
    w, h = out_size
    if w * h > limit:
        raise TooLargeError(f"a {w}x{h} screenshot is {w * h:,} pixels; the limit is {limit:,} (4 times display "
                            f"{display.id}'s {display.size[0]}x{display.size[1]}, at most {MAX_PIXELS:,})")
    if fmt == "webp" and max(w, h) > WEBP_MAX_SIDE:
        raise TooLargeError(f"WebP pictures are at most {WEBP_MAX_SIDE} pixels a side; {w}x{h} asked")


class Screenshots:
    """Takes screenshots and keeps the encoded result of each recent request while the
    screen has not changed (keyed on the backend's damage generation)."""

    def __init__(self, backend: Backend, cache_size: int = 8) -> None:
        self.backend = backend
        # Tags from an earlier desktopd (whose generations restarted) never match.
        self._boot = os.urandom(4).hex()
        # request key -> (damage generation it was taken at, shot)
        self._encoded: OrderedDict[tuple, tuple[int, Shot]] = OrderedDict()
        self._cache_size = cache_size

    async def take(self, display: Display, q: ScreenshotQuery, if_none_match: str | None = None,
                   blur: tuple[tuple[int, int, int, int], ...] = ()) -> Shot:
        """The screenshot ``q`` asks for. With ``if_none_match`` (the ETag of an earlier
        shot), a shot without a body when the screen has not changed since: a client
        polling for change (the scene's watcher) then costs no capture, no encoding and
        no transfer. ``blur``: boxes (display device px) blurred past reading, as the
        session's policy asks (part of the shot's key: a shot kept unblurred is never
        given for one that must be blurred)."""
        down = self.backend.health().get("error")
        if down is not None:
            # Never the old compositor's pixels: what was kept of it goes.
            self._encoded.clear()
            raise UnavailableError(f"the display server is not there: {down}", code="display_unavailable")
        region = self._region(display, q)
        factor = resize_factor((region[2], region[3]), width=q.width, scale=q.scale)
        out_size = scaled_size((region[2], region[3]), factor)
        _check_size(display, q.format, out_size)
        pointer = self.backend.pointer_position() if q.cursor else None
        generation = self.backend.frame_generation(display)
        key = (display.id, display.size, q.format, q.quality, region, out_size, pointer, blur)
        etag = None
        if generation is not None:
            etag = f'"{self._boot}-{generation:x}-{zlib.crc32(repr(key).encode()):08x}"'
            if if_none_match is not None and etag in (t.strip() for t in if_none_match.split(",")):
                return Shot(b"", CONTENT_TYPES[q.format], out_size, out_size[0] / region[2], region, display,
                            True, etag, not_modified=True)
            hit = self._encoded.get(key)
            if hit is not None and hit[0] == generation:
                self._encoded.move_to_end(key)
                return replace(hit[1], cached=True)

        def render(frame: Frame) -> bytes:
            return _render(frame, display, region, out_size, q, pointer, blur)

        body = await self.backend.capture_with(display, render)
        shot = Shot(body, CONTENT_TYPES[q.format], out_size, out_size[0] / region[2], region, display, False)
        if out_size[0] * out_size[1] > display.size[0] * display.size[1]:
            release_memory()  # a picture larger than the screen: its buffers go back
        if len(body) > MAX_CACHED_BYTES:
            return replace(shot, etag=etag if generation == self.backend.frame_generation(display) else None)
        if generation is not None and generation == self.backend.frame_generation(display):
            shot = replace(shot, etag=etag)
            self._encoded[key] = (generation, shot)
            while len(self._encoded) > self._cache_size:
                self._encoded.popitem(last=False)
        return shot

    @staticmethod
    def _region(display: Display, q: ScreenshotQuery) -> tuple[int, int, int, int]:
        w, h = display.size
        if q.region is None:
            return (0, 0, w, h)
        x, y, rw, rh = q.region
        if x + rw > w or y + rh > h:
            raise InvalidRequestError(
                f"region {x},{y},{rw},{rh} is outside display {display.id} ({w}x{h} device pixels)",
                code="out_of_bounds",
            )
        return (x, y, rw, rh)


def _render(frame: Frame, display: Display, region, out_size, q: ScreenshotQuery, pointer, blur=()) -> bytes:
    """Runs in a worker thread, on the frame as captured (possibly the shared buffer)."""
    x, y, w, h = region
    whole = (x, y, w, h) == (0, 0, frame.width, frame.height)
    drawn = pointer is not None and pointer[0] == display.id
    if whole and not drawn and not blur and out_size == (w, h):
        # The common request: encoded straight from the compositor's pixels.
        return encode_raw(frame.data, (frame.width, frame.height), frame.stride, frame.mode, q.format, q.quality,
                          y_invert=frame.y_invert)
    image = frame.to_image()
    if blur:
        image = Redactor.blur(image, blur)  # (boxes in the frame's pixels: before the crop)
    if not whole:
        image = image.crop((x, y, x + w, y + h))
    if drawn:
        _draw_cursor(image, *device_to_region(region, pointer[1], pointer[2]), display.scale)
    if out_size != (w, h):
        image = image.resize(out_size, Image.Resampling.BILINEAR, reducing_gap=2.0)
    return encode(image, q.format, q.quality)
