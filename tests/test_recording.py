"""Session video on demand from the scene aggregator, outside OSWorld mode: one display
recorded to an mp4 whose video track has the display's size, one recording at a time,
and clear errors for what cannot be done."""

from __future__ import annotations

import struct
import time

import pytest

from tests.support import Session, http

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
def two_displays():
    s = Session(["1024x768", "800x600"])
    s.start()
    yield s
    s.stop()


def boxes(data: bytes, start: int = 0, end: int | None = None):
    """The ISO BMFF boxes in data[start:end]: (type, payload start, payload end)."""
    end = len(data) if end is None else end
    while start + 8 <= end:
        size, kind = struct.unpack(">I4s", data[start:start + 8])
        header = 8
        if size == 1:
            size, header = struct.unpack(">Q", data[start + 8:start + 16])[0], 16
        elif size == 0:
            size = end - start
        if size < header:
            return
        yield kind.decode("latin-1"), start + header, start + size
        start += size


def video_size(mp4: bytes) -> tuple[int, int]:
    """The width and height of the first track with a size (its tkhd box, 16.16 fixed)."""
    moov = next((s, e) for k, s, e in boxes(mp4) if k == "moov")
    for kind, s, e in boxes(mp4, *moov):
        if kind != "trak":
            continue
        tkhd = next(s2 for k2, s2, _ in boxes(mp4, s, e) if k2 == "tkhd")
        offset = tkhd + (88 if mp4[tkhd] == 1 else 76)  # (version 1 has 64-bit times)
        width, height = struct.unpack(">II", mp4[offset:offset + 8])
        if width:
            return width >> 16, height >> 16
    raise AssertionError("no track with a size")


def test_a_recording_of_the_second_display_has_its_size(two_displays):
    s = two_displays
    assert http("GET", s.scene + "/api/v1/recording").json()["recording"] is False
    started = http("POST", s.scene + "/api/v1/recording/start", {"display": 1})
    assert started.status == 200 and started.json()["display"] == 1
    again = http("POST", s.scene + "/api/v1/recording/start", {"display": 0})
    assert again.status == 409 and again.json()["error"]["code"] == "recording_in_progress"
    for x in range(100, 700, 150):
        s.pointer(action="move", display=1, x=x, y=300)
        time.sleep(0.25)
    assert http("GET", s.scene + "/api/v1/recording").json()["elapsed_s"] > 0.5
    stopped = http("POST", s.scene + "/api/v1/recording/stop")
    assert stopped.status == 200 and stopped.headers["content-type"] == "video/mp4"
    assert stopped.body[4:8] == b"ftyp" and video_size(stopped.body) == (800, 600)
    assert http("GET", s.scene + "/api/v1/recording").json()["recording"] is False


def test_recording_errors_are_clear(two_displays):
    s = two_displays
    none = http("POST", s.scene + "/api/v1/recording/stop")
    assert none.status == 409 and none.json()["error"]["code"] == "not_recording"
    nowhere = http("POST", s.scene + "/api/v1/recording/start", {"display": 7})
    assert nowhere.status == 400 and nowhere.json()["error"]["code"] == "unknown_display"
    assert http("GET", s.scene + "/api/v1/recording").json()["recording"] is False
