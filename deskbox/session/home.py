"""The session user's home folder: made fresh, saved as named snapshots, put back.

A session's home holds everything a task changes: files in the XDG folders, app
settings under ``~/.config`` and the browser profile. ``Home`` makes it from a small
template at start, saves it under a name (a plain copy in the session's runtime
folder) and restores it: what the snapshot lacks is removed, what differs is copied
back. A restore skips the files it can prove untouched since it last wrote them (same
inode and change time), so putting back a home where a task changed a few files costs
only those files.

Names of snapshots are checked against ``NAME_PATTERN``: they become folder names.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Home", "HomeError", "HomeInUse", "SnapshotInfo", "NAME_PATTERN", "XDG_FOLDERS", "MARKER"]

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
START = "start"
# The folders xdg-user-dirs makes, named as it names them in English.
XDG_FOLDERS = {
    "DESKTOP": "Desktop", "DOWNLOAD": "Downloads", "TEMPLATES": "Templates", "PUBLICSHARE": "Public",
    "DOCUMENTS": "Documents", "MUSIC": "Music", "PICTURES": "Pictures", "VIDEOS": "Videos",
}
# A home deskbox made carries this file: only such a home is ever emptied or removed.
MARKER = ".deskbox-home"


class HomeError(Exception):
    pass


class HomeInUse(HomeError):
    pass


@dataclass(frozen=True)
class SnapshotInfo:
    name: str
    created: float
    files: int
    bytes: int
    meta: dict

    def to_json(self) -> dict:
        return {"name": self.name, "created": self.created, "files": self.files, "bytes": self.bytes, **self.meta}


# What the home looked like right after deskbox last wrote it: relative path -> (inode,
# change time in ns). A file whose stat still says that was not touched since.
_Index = dict[str, tuple[int, int]]


class Home:
    def __init__(self, path: Path, *, uid: int, gid: int, snapshots: Path, skip: tuple[str, ...] = ()) -> None:
        self.path = path
        self.uid, self.gid = uid, gid
        self.snapshots = snapshots
        # Relative paths never saved (caches that only cost time): a restore removes them.
        self.skip = frozenset(skip)
        self._lock_fd: int | None = None
        self._basis: tuple[str, _Index] | None = None  # the snapshot the home equals, where untouched

    # -- the folder itself ----------------------------------------------------------------

    def lock(self) -> None:
        """Hold the home for this session (made if missing): a second session on it is
        refused."""
        if not self.path.exists():
            self.path.mkdir(mode=0o700, parents=True)
            self.chown(self.path)
        fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise HomeInUse(f"{self.path} is the home of another running session") from None
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def make_fresh(self, files: dict[str, str | bytes], skel: Path | None = None) -> None:
        """Empty the home (only one deskbox made, or a new one) and write the template:
        what ``skel`` holds (the system's /etc/skel: a shell's dot files), the XDG user
        folders, their ``user-dirs.dirs``, and ``files`` (relative path -> text or bytes)."""
        if self.path.exists() and any(self.path.iterdir()) and not (self.path / MARKER).exists():
            raise HomeError(f"{self.path} exists and deskbox did not make it: refusing to empty it")
        self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.chown(self.path)
        os.chmod(self.path, 0o700)
        for entry in list(self.path.iterdir()):
            _remove(entry)
        if skel is not None and skel.is_dir():
            self._copy_tree(skel, self.path, {}, record_source=False)
            for path in self.path.rglob("*"):
                self.chown(path)
        self.write_template(files)
        (self.path / MARKER).write_text("This home was made by deskbox up and goes when its session ends.\n")
        self.chown(self.path / MARKER)

    def write_template(self, files: dict[str, str | bytes]) -> None:
        """The XDG folders and ``files``, where missing; nothing existing is changed."""
        dirs = "".join(f'XDG_{key}_DIR="$HOME/{name}"\n' for key, name in XDG_FOLDERS.items())
        files = {".config/user-dirs.dirs": dirs, ".config/user-dirs.locale": "en_US\n", **files}
        for name in XDG_FOLDERS.values():
            self._mkdir(self.path / name)
        for rel, text in files.items():
            target = self.path / rel
            if target.exists():
                continue
            self._mkdir(target.parent)
            if isinstance(text, bytes):
                target.write_bytes(text)
            else:
                target.write_text(text)
            self.chown(target)

    def add_missing(self, src: Path) -> int:
        """Copy the files of ``src`` (a tree shaped like a home) into the home where they
        are missing, owned by the session user; nothing existing is changed. Answers
        how many files were copied."""
        copied = 0
        for path in sorted(src.rglob("*")):
            rel = path.relative_to(src)
            if rel.name.startswith(".made-by") and len(rel.parts) == 1:
                continue
            target = self.path / rel
            if path.is_dir() and not path.is_symlink():
                self._mkdir(target)
            elif path.is_file() and not target.exists():
                self._mkdir(target.parent)
                shutil.copy2(path, target)
                self.chown(target)
                copied += 1
        return copied

    def remove(self) -> None:
        """Delete a home deskbox made (its marker says so), if this session holds it
        and the folder at its path is still the one it holds."""
        if self._lock_fd is None:
            return  # not this session's: it never held it
        try:
            if os.stat(self.path).st_ino != os.fstat(self._lock_fd).st_ino:
                return
        except FileNotFoundError:
            return
        if (self.path / MARKER).exists():
            shutil.rmtree(self.path, ignore_errors=True)

    # -- snapshots ----------------------------------------------------------------------

    def _snapshot_dir(self, name: str) -> Path:
        if not NAME_PATTERN.match(name):
            raise HomeError(f"snapshot name {name!r} must match {NAME_PATTERN.pattern}")
        return self.snapshots / name

    def has(self, name: str) -> bool:
        return (self._snapshot_dir(name) / "meta.json").exists()

    def info(self, name: str) -> SnapshotInfo:
        meta = json.loads((self._snapshot_dir(name) / "meta.json").read_text())
        return SnapshotInfo(name, meta.pop("created"), meta.pop("files"), meta.pop("bytes"), meta)

    def list(self) -> list[SnapshotInfo]:
        if not self.snapshots.is_dir():
            return []
        names = sorted(p.name for p in self.snapshots.iterdir() if (p / "meta.json").exists())
        return sorted((self.info(n) for n in names), key=lambda s: s.created)

    def save(self, name: str, meta: dict) -> SnapshotInfo:
        """Copy the home to snapshot ``name`` (replacing one of that name)."""
        final = self._snapshot_dir(name)
        self.snapshots.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.snapshots / f".{name}.{os.getpid()}.tmp"
        _remove(tmp)
        tmp.mkdir(mode=0o700)
        index: _Index = {}
        files, size = self._copy_tree(self.path, tmp / "home", index, record_source=True)
        (tmp / "meta.json").write_text(json.dumps({"created": time.time(), "files": files, "bytes": size, **meta}))
        old = None
        if final.exists():
            old = self.snapshots / f".{name}.{os.getpid()}.old"
            final.rename(old)
        tmp.rename(final)
        if old is not None:
            _remove(old)
        self._basis = (name, index)
        return self.info(name)

    def delete(self, name: str) -> None:
        folder = self._snapshot_dir(name)
        if not (folder / "meta.json").exists():
            raise KeyError(name)
        _remove(folder)
        if self._basis is not None and self._basis[0] == name:
            self._basis = None

    def restore(self, name: str) -> dict:
        """Make the home equal to snapshot ``name``. Returns what it did (counts)."""
        source = self._snapshot_dir(name) / "home"
        if not source.is_dir():
            raise KeyError(name)
        basis = self._basis[1] if self._basis is not None and self._basis[0] == name else {}
        index: _Index = {}
        counts = {"copied": 0, "kept": 0, "removed": 0}
        self._sync(source, self.path, "", basis, index, counts)
        self._basis = (name, index)
        return counts

    # -- copying ------------------------------------------------------------------------
    #
    # The home is the session user's, and an agent's commands run as that user while
    # deskbox (as root) saves and restores it: between the look at an entry and its use,
    # a file or a folder can become a symlink to anywhere. So every step goes through
    # folders opened with O_NOFOLLOW and names relative to them (``dir_fd``), files are
    # opened with O_NOFOLLOW and made with O_EXCL: a link is copied as a link and never
    # followed, on either side, whatever it became in between.

    def _copy_tree(self, src: Path, dst: Path, index: _Index, *, record_source: bool) -> tuple[int, int]:
        """Copy ``src`` into ``dst`` (made if missing); with ``record_source`` the index
        gets the source's stats (the home, when saving), else the copy's."""
        dst.mkdir(mode=stat.S_IMODE(src.stat().st_mode) | 0o700, exist_ok=True)
        src_fd, dst_fd = _open_dir(str(src)), _open_dir(str(dst))
        try:
            return self._copy_at(src_fd, dst_fd, index, record_source, "")
        finally:
            os.close(src_fd)
            os.close(dst_fd)

    def _copy_at(self, src_fd: int, dst_fd: int, index: _Index, record_source: bool, rel: str) -> tuple[int, int]:
        files = size = 0
        with os.scandir(src_fd) as entries:
            for entry in entries:
                name = entry.name
                r = f"{rel}/{name}" if rel else name
                if r in self.skip or name == MARKER and not rel:
                    continue
                try:
                    kind = _kind(entry)
                    if kind == "link":
                        os.symlink(os.readlink(name, dir_fd=src_fd), name, dir_fd=dst_fd)
                    elif kind == "dir":
                        mode = stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode) | 0o700
                        os.mkdir(name, mode, dir_fd=dst_fd)
                        sub_src, sub_dst = _open_dir(name, src_fd), _open_dir(name, dst_fd)
                        try:
                            f, n = self._copy_at(sub_src, sub_dst, index, record_source, r)
                        finally:
                            os.close(sub_src)
                            os.close(sub_dst)
                        files, size = files + f, size + n
                    elif kind == "file":
                        copied = _copy_file(src_fd, name, dst_fd)
                        if copied is None:
                            continue  # (not a regular file any more)
                        theirs, ours = copied
                        st = theirs if record_source else ours
                        index[r] = (st.st_ino, st.st_ctime_ns)
                        files, size = files + 1, size + st.st_size
                    # sockets, fifos and devices are not part of a home's state
                except (FileNotFoundError, NotADirectoryError, OSError) as exc:
                    if isinstance(exc, (FileNotFoundError, NotADirectoryError)) or exc.errno == errno.ELOOP:
                        continue  # went, or became a link, while we copied (a lock file)
                    raise
        return files, size

    def _sync(self, src: Path, dst: Path, rel: str, basis: _Index, index: _Index, counts: dict) -> None:
        src_fd, dst_fd = _open_dir(str(src)), _open_dir(str(dst))
        try:
            self._sync_at(src_fd, dst_fd, rel, basis, index, counts)
        finally:
            os.close(src_fd)
            os.close(dst_fd)

    def _sync_at(self, src_fd: int, dst_fd: int, rel: str, basis: _Index, index: _Index, counts: dict) -> None:
        with os.scandir(src_fd) as entries:
            wanted = {e.name: _kind(e) for e in entries}
        with os.scandir(dst_fd) as entries:
            present = {e.name: _kind(e) for e in entries}
        for name, kind in present.items():
            if not rel and name == MARKER:
                continue
            if wanted.get(name) != kind:
                _remove_at(dst_fd, name)
                counts["removed"] += 1
        for name, kind in wanted.items():
            r = f"{rel}/{name}" if rel else name
            if kind == "dir":
                if present.get(name) != "dir":
                    mode = stat.S_IMODE(os.stat(name, dir_fd=src_fd, follow_symlinks=False).st_mode) | 0o700
                    os.mkdir(name, mode, dir_fd=dst_fd)
                    self._chown_at(dst_fd, name)
                sub_src, sub_dst = _open_dir(name, src_fd), _open_dir(name, dst_fd)
                try:
                    self._sync_at(sub_src, sub_dst, r, basis, index, counts)
                finally:
                    os.close(sub_src)
                    os.close(sub_dst)
            elif kind == "link":
                link = os.readlink(name, dir_fd=src_fd)
                if present.get(name) != "link" or os.readlink(name, dir_fd=dst_fd) != link:
                    _remove_at(dst_fd, name)
                    os.symlink(link, name, dir_fd=dst_fd)
                    self._chown_at(dst_fd, name)
            elif kind == "file":
                if present.get(name) == "file":
                    st = os.stat(name, dir_fd=dst_fd, follow_symlinks=False)
                    if basis.get(r) == (st.st_ino, st.st_ctime_ns):
                        index[r] = basis[r]
                        counts["kept"] += 1
                        continue
                _remove_at(dst_fd, name)
                copied = _copy_file(src_fd, name, dst_fd, owner=self._owner())
                if copied is None:
                    continue
                st = copied[1]
                index[r] = (st.st_ino, st.st_ctime_ns)
                counts["copied"] += 1

    def _owner(self) -> tuple[int, int] | None:
        return (self.uid, self.gid) if os.geteuid() == 0 else None

    def _chown_at(self, dir_fd: int, name: str) -> None:
        if os.geteuid() == 0:
            os.chown(name, self.uid, self.gid, dir_fd=dir_fd, follow_symlinks=False)

    def _mkdir(self, path: Path) -> None:
        if not path.exists():
            self._mkdir(path.parent) if path.parent != self.path and not path.parent.exists() else None
            path.mkdir(mode=0o755)
            self.chown(path)

    def chown(self, path: Path) -> None:
        if os.geteuid() == 0:
            os.chown(path, self.uid, self.gid, follow_symlinks=False)


def _kind(entry: os.DirEntry) -> str:
    if entry.is_symlink():
        return "link"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return "other"


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_dir(name: str, dir_fd: int | None = None) -> int:
    """A folder, opened without following a link (ELOOP / ENOTDIR if it is one now)."""
    return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def _copy_file(src_fd: int, name: str, dst_fd: int,
               owner: tuple[int, int] | None = None) -> tuple[os.stat_result, os.stat_result] | None:
    """``name`` of folder ``src_fd`` copied to a new ``name`` in ``dst_fd`` (mode, times,
    and ``owner``), neither side followed if it is a link; the source's stat and the
    copy's, or None when the source is not a regular file (any more)."""
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=src_fd)
    try:
        theirs = os.fstat(src)
        if not stat.S_ISREG(theirs.st_mode):
            return None
        dst = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                      stat.S_IMODE(theirs.st_mode), dir_fd=dst_fd)
        try:
            left = theirs.st_size
            while left > 0:
                sent = os.sendfile(dst, src, None, min(left, 1 << 30))
                if sent == 0:
                    break  # (it got shorter while we copied)
                left -= sent
            os.fchmod(dst, stat.S_IMODE(theirs.st_mode))
            if owner is not None:
                os.fchown(dst, *owner)
            os.utime(dst, ns=(theirs.st_atime_ns, theirs.st_mtime_ns))
            return theirs, os.fstat(dst)
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _remove_at(dir_fd: int, name: str) -> None:
    """``name`` in folder ``dir_fd`` removed, a folder with all it holds (links not followed)."""
    try:
        if stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            shutil.rmtree(name, dir_fd=dir_fd)
        else:
            os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def _remove(path: Path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        pass
