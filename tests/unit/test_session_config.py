"""`deskbox up` configuration: output specs, sway lines, the invisible cursor theme."""

import struct

import pytest

from deskbox.common.net import parse_listen
from deskbox.session.cursor import CURSOR_NAMES, write_invisible_theme, xcursor_file
from deskbox.session.outputs import OutputSpec, parse_output, sway_output_lines


def test_output_specs():
    assert parse_output("1920x1080") == OutputSpec(1920, 1080, 1.0)
    assert parse_output("2560x1440@2") == OutputSpec(2560, 1440, 2.0)
    assert OutputSpec(2560, 1440, 2.0).logical_size == (1280, 720)  # (the size a window filling it asks for)
    for bad in ["1920", "1920x1080@3", "10x10", "1921x1080@2", "axb"]:
        with pytest.raises(ValueError):
            parse_output(bad)


def test_outputs_become_side_by_side_sway_lines():
    lines = sway_output_lines([OutputSpec(1280, 800, 1.0), OutputSpec(1280, 800, 2.0)])
    assert lines == [
        "output HEADLESS-1 mode 1280x800 position 0 0 scale 1",
        "output HEADLESS-2 mode 1280x800 position 1280 0 scale 2",
    ]


def test_invisible_cursor_theme(tmp_path):
    data = xcursor_file(24)
    magic, header, version, ntoc = struct.unpack_from("<4sIII", data)
    assert (magic, header, ntoc) == (b"Xcur", 16, 1)
    assert data[16 + 12 + 36:] == b"\0" * (24 * 24 * 4)
    theme = write_invisible_theme(tmp_path)
    assert (theme / "cursors" / "left_ptr").read_bytes() == data
    assert (tmp_path / "default" / "cursors" / "text").exists()
    assert "pointer" in CURSOR_NAMES


def test_listen_addresses():
    assert parse_listen("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert parse_listen(":9000") == ("127.0.0.1", 9000)
    assert parse_listen("[::1]:8080") == ("::1", 8080)
    with pytest.raises(ValueError):
        parse_listen("localhost")
