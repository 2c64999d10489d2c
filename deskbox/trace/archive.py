"""A trace folder as one tar stream, and back: how a trace leaves a session over HTTP
(``GET /api/v1/traces/{trace_id}``) when no file copy reaches it (a pod in a cluster, a
session of a pool), and how the runner unpacks it. Plain tar: the screenshots are JPEG
and the video mp4, already compressed."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import IO

__all__ = ["TRACE_ID", "ArchiveError", "pack", "unpack"]

# The ids TraceWriter gives: its start in UTC and six hex digits.
TRACE_ID = r"^\d{8}T\d{6}-[0-9a-f]{6}$"


class ArchiveError(ValueError):
    """A tar stream that is not a trace's: a member outside its folder, a link, a device."""


def pack(folder: Path) -> IO[bytes]:
    """``folder``'s files in a tar stream (names relative to it), in an unnamed temporary
    file at its start: the caller reads it and closes it."""
    out = tempfile.TemporaryFile()
    try:
        with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for root, dirs, files in os.walk(folder):
                dirs.sort()
                for name in sorted(files):
                    path = Path(root) / name
                    if path.is_file() and not path.is_symlink():
                        tar.add(path, arcname=path.relative_to(folder).as_posix(), recursive=False)
        out.seek(0)
        return out
    except BaseException:
        out.close()
        raise


def unpack(data: bytes | IO[bytes], dest: Path) -> int:
    """A stream :func:`pack` made, written under ``dest`` (created); the number of files.
    ``data`` may be a stream that only reads forward (an HTTP answer): it is read once,
    a member at a time, and never held whole. Anything but plain files and folders, or
    a name that would land outside ``dest``, is an ArchiveError and nothing of the
    stream is kept."""
    stream = io.BytesIO(data) if isinstance(data, bytes) else data
    staging = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=_made(dest.parent)))
    try:
        count = 0
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                rel = PurePosixPath(member.name)
                if rel.is_absolute() or ".." in rel.parts or not rel.parts:
                    raise ArchiveError(f"{member.name!r} would land outside the trace's folder")
                target = staging.joinpath(*rel.parts)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                elif member.isfile():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    source = tar.extractfile(member)
                    assert source is not None
                    with source, open(target, "wb") as out:
                        shutil.copyfileobj(source, out)
                    count += 1
                else:
                    raise ArchiveError(f"{member.name!r} is not a plain file or folder")
        _made(dest)
        for entry in staging.iterdir():
            target = dest / entry.name
            if entry.is_dir() and target.is_dir():
                shutil.copytree(entry, target, dirs_exist_ok=True)
            else:
                os.replace(entry, target)
        return count
    except tarfile.TarError as exc:
        raise ArchiveError(f"not a tar stream: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder
