"""Persistent browser contexts: a browser profile that outlives sessions.

A context is a folder ``<contexts dir>/<id>/`` holding a Chromium profile (cookies,
local storage, IndexedDB, service workers, saved logins, history, settings; caches
left out). A session bound to it starts its browser on a copy of it and, when bound
with ``persist``, copies the profile back when it lets go (at its end, or when bound to
another context). While a session is bound to a context it holds a lock on it
(``flock`` on the folder's lock file, which works across containers sharing the
folder on one machine): a second session asking for the same context is refused.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Contexts", "Context", "ContextError", "ContextInUse", "ID_PATTERN"]

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# Parts of a profile that are caches or crash reports: never saved into a context.
NOT_SAVED = frozenset({
    "Cache", "Code Cache", "GPUCache", "DawnCache", "DawnGraphiteCache", "DawnWebGPUCache", "GrShaderCache",
    "GraphiteDawnCache", "ShaderCache", "Crashpad", "Crash Reports", "component_crx_cache",
    "extensions_crx_cache", "optimization_guide_model_store", "Safe Browsing", "SingletonLock",
    "SingletonSocket", "SingletonCookie", "BrowserMetrics",
})


class ContextError(Exception):
    pass


class ContextInUse(ContextError):
    pass


@dataclass
class Context:
    ident: str
    folder: Path
    persist: bool
    bound_at: float = field(default_factory=time.time)
    lock_fd: int | None = None

    def to_json(self) -> dict:
        return {"id": self.ident, "persist": self.persist, "bound_at": self.bound_at}


class Contexts:
    def __init__(self, root: str | None, *, uid: int, gid: int) -> None:
        self.root = Path(root) if root else None
        self.uid, self.gid = uid, gid

    def bind(self, ident: str, *, persist: bool) -> Context:
        """Lock context ``ident`` (made if new) for this session."""
        if self.root is None:
            raise ContextError("this session has no contexts folder (--contexts-dir)")
        if not ID_PATTERN.match(ident):
            raise ContextError(f"context id {ident!r} must match {ID_PATTERN.pattern}")
        folder = self.root / ident
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ContextInUse(f"context {ident!r} is in use by another live session") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return Context(ident, folder, persist, lock_fd=fd)

    def load(self, context: Context, profile: Path) -> None:
        """Make ``profile`` the context's (an empty profile for a new context)."""
        shutil.rmtree(profile, ignore_errors=True)
        saved = context.folder / "profile"
        if saved.is_dir():
            _copy(saved, profile)
        else:
            profile.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            for path in [profile, *profile.rglob("*")]:
                os.chown(path, self.uid, self.gid, follow_symlinks=False)

    def release(self, context: Context, profile: Path) -> None:
        """Save the profile into the context when it persists, then unlock it. The
        browser must have stopped (its files flushed)."""
        try:
            if context.persist and profile.is_dir():
                tmp = context.folder / f".profile.{os.getpid()}.tmp"
                shutil.rmtree(tmp, ignore_errors=True)
                _copy(profile, tmp)
                old = context.folder / "profile"
                if old.exists():
                    gone = context.folder / f".profile.{os.getpid()}.old"
                    old.rename(gone)
                    tmp.rename(old)
                    shutil.rmtree(gone, ignore_errors=True)
                else:
                    tmp.rename(old)
        finally:
            if context.lock_fd is not None:
                os.close(context.lock_fd)
                context.lock_fd = None


def _copy(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True, ignore=lambda _d, names: [n for n in names if n in NOT_SAVED])
