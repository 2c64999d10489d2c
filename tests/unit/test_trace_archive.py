"""A trace folder packed into a tar stream and unpacked elsewhere (deskbox.trace.archive):
the same files, and nothing kept of a stream that would write outside its folder."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from deskbox.trace.archive import ArchiveError, pack, unpack


def _trace(folder: Path) -> Path:
    (folder / "shots").mkdir(parents=True)
    (folder / "steps.jsonl").write_text('{"step": 1}\n')
    (folder / "trace.json").write_text('{"label": "t"}')
    (folder / "shots" / "00001-before.jpg").write_bytes(bytes(range(256)) * 40)
    return folder


def test_a_packed_trace_unpacks_to_the_same_files(tmp_path):
    source = _trace(tmp_path / "in")
    with pack(source) as stream:
        data = stream.read()
    assert unpack(data, tmp_path / "out" / "trace") == 3
    for rel in ("steps.jsonl", "trace.json", "shots/00001-before.jpg"):
        assert (tmp_path / "out" / "trace" / rel).read_bytes() == (source / rel).read_bytes()
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["trace"]  # no staging folder left


def _tar(*members: tarfile.TarInfo, data: bytes = b"x") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for m in members:
            tar.addfile(m, io.BytesIO(data) if m.isfile() else None)
    return out.getvalue()


def _file(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = 1
    return info


def _link(name: str, to: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, to
    return info


@pytest.mark.parametrize("members", [
    [_file("ok.txt"), _file("../escaped.txt")],
    [_file("/etc/escaped.txt")],
    [_link("shots", "/etc")],
])
def test_a_stream_that_would_write_outside_its_folder_is_refused_and_leaves_nothing(tmp_path, members):
    with pytest.raises(ArchiveError):
        unpack(_tar(*members), tmp_path / "out" / "trace")
    assert not (tmp_path / "out" / "trace").exists()
    assert list((tmp_path / "out").iterdir()) == []
    assert not (tmp_path / "escaped.txt").exists()


def test_what_is_not_a_tar_stream_is_an_archive_error(tmp_path):
    with pytest.raises(ArchiveError, match="not a tar"):
        unpack(b"<html>a proxy's page</html>" * 30, tmp_path / "trace")


class _Forward(io.RawIOBase):
    """A stream that only reads forward, as an HTTP answer does: no seek, no tell, and
    reads of at most a few KB, so that nothing is had whole."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at, self.largest = data, 0, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), 4096, len(self.data) - self.at)
        buffer[:n] = self.data[self.at:self.at + n]
        self.at += n
        self.largest = max(self.largest, n)
        return n


def test_a_trace_unpacks_from_a_stream_read_once_forward(tmp_path):
    source = _trace(tmp_path / "in")
    with pack(source) as stream:
        data = stream.read()
    forward = _Forward(data)
    assert unpack(forward, tmp_path / "out" / "trace") == 3
    assert forward.largest <= 4096  # (the zero blocks that end a tar are not read)
    assert (tmp_path / "out" / "trace" / "shots" / "00001-before.jpg").read_bytes() == \
        (source / "shots" / "00001-before.jpg").read_bytes()


def test_a_stream_cut_short_is_an_archive_error_and_leaves_nothing(tmp_path):
    source = _trace(tmp_path / "in")
    with pack(source) as stream:
        data = stream.read()
    with pytest.raises(ArchiveError):
        unpack(_Forward(data[:len(data) // 2]), tmp_path / "out" / "trace")
    assert not (tmp_path / "out" / "trace").exists()
