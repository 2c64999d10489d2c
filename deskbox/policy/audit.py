"""The audit log: one JSON line per action (when, which interface and action, its
arguments redacted, what it was done to, how it ended, how long it took), rotated by
size. Readable by the session's user only: redacted or not, it says what an agent did.

Writes are small and synchronous (a line is well under a page), so calling it from the
event loop is fine; a lock keeps lines whole when threads write too."""

from __future__ import annotations

import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from .config import AuditConfig
from .redact import Redactor

__all__ = ["AuditLog"]

_MODE = 0o600


class AuditLog:
    def __init__(self, config: AuditConfig, redactor: Redactor) -> None:
        self.config = config
        self.path = Path(config.path) if config.path is not None else None
        self._redactor = redactor
        self._file: BinaryIO | None = None
        self._size = 0
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def write(self, record: dict[str, Any]) -> None:
        """Append one record: ``interface``, ``action``, ``args``, ``target`` (an element or
        its summary), ``outcome`` ("ok" or an error code), ``duration_ms``, and anything
        else given. Every string in it goes through the redactor."""
        if self.path is None:
            return
        extra = {k: v for k, v in record.items()
                 if k not in ("interface", "action", "args", "target", "outcome", "duration_ms")}
        line = {
            "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "interface": record.get("interface"),
            "action": record.get("action"),
            "args": self._redactor.args(record.get("args") or {}),
            "target": self._target(record.get("target")),
            "outcome": record.get("outcome", "ok"),
            "duration_ms": record.get("duration_ms"),
            **self._redactor.args(extra),
        }
        data = orjson.dumps(line, default=str) + b"\n"
        with self._lock:
            f = self._open()  # (first, so a big log left by an earlier run is rotated too)
            if self._size > 0 and self._size + len(data) > self.config.max_bytes:
                self._rotate()
                f = self._open()
            f.write(data)
            f.flush()
            self._size += len(data)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def _target(self, target: Any) -> dict[str, Any] | None:
        """What the action was done to, without its value (a field's value is what was typed)."""
        if not isinstance(target, dict):
            return None
        name = target.get("name")
        return {"id": target.get("id"), "role": target.get("role"),
                "name": self._redactor.text(name) if isinstance(name, str) else name,
                "bbox": target.get("bbox"), "window_id": target.get("window_id")}

    def _open(self) -> BinaryIO:
        if self._file is None:
            assert self.path is not None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, _MODE)
            os.fchmod(fd, _MODE)  # a file left by an earlier run may have been wider
            self._file = os.fdopen(fd, "ab")
            self._size = os.fstat(fd).st_size
        return self._file

    def _rotate(self) -> None:
        """audit.log -> audit.log.1 -> ... -> audit.log.<backups>, the oldest dropped."""
        assert self.path is not None and self._file is not None
        self._file.close()
        self._file = None
        backups = self.config.backups
        if backups == 0:
            self.path.unlink(missing_ok=True)  # no history kept: start over
            return
        for i in range(backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{i}")
            if older.exists():
                older.replace(self.path.with_name(f"{self.path.name}.{i + 1}"))
        self.path.replace(self.path.with_name(f"{self.path.name}.1"))
