"""The scene's ids on disk, so that a restarted scene honours the ids it handed out.

After a restart an old id either names the element it named before (its source's
identity is still the same: a tab's target id, frame and DOM node) or answers 409
``stale_element``; it never names another element, because the counters go on where
they were. AT-SPI identities (a bus name and an object path) can be handed to another
app by a new accessibility bus, so native ids are retired at a restart rather than
trusted.

Two files: the whole state (written in the background, at most twice a second, after a
scene that handed out or retired ids), and a reservation of the counters, written at
once, before a scene holding ids beyond the last reservation is answered, a thousand
ids at a time. A scene killed between the two resumes its counters past everything it
ever answered with: an id whose element it did not save answers 409, and no id is ever
handed out twice. Both are written atomically (a new file renamed over the old)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Hashable

from ..common.logging import get_logger
from .ids import IdRegistry

__all__ = ["IdStore"]

log = get_logger("deskbox.scene.ids")

SAVE_DELAY_S = 0.5
RESERVE_BLOCK = 1000


def _trusted(key: Hashable) -> bool:
    return not (isinstance(key, tuple) and key and key[0] == "atspi")


class IdStore:
    def __init__(self, path: str | None, registries: list[IdRegistry]) -> None:
        self.path = Path(path) if path else None
        self.reserved_path = self.path.with_name(self.path.name + ".reserved") if self.path else None
        self.registries = registries
        self._pending: asyncio.Task | None = None
        self._reserved: dict[str, dict[int, int]] = {r.prefix: {} for r in registries}

    def load(self) -> bool:
        """Take over the ids of the scene that ran before; False when there was none."""
        if self.path is None or self.reserved_path is None:
            return False
        found = False
        if self.path.exists():
            try:
                data = json.loads(self.path.read_text())
                by_prefix = {d.get("prefix"): d for d in data.get("registries", [])}
                for registry in self.registries:
                    if registry.prefix in by_prefix:
                        registry.load(by_prefix[registry.prefix], trust=_trusted)
                found = True
            except (OSError, ValueError) as exc:
                log.warning("the ids of before cannot be read", error=str(exc))
        if self.reserved_path.exists():
            try:
                reserved = json.loads(self.reserved_path.read_text())
            except (OSError, ValueError) as exc:
                log.warning("the reserved ids cannot be read", error=str(exc))
                reserved = {}
            for registry in self.registries:
                for display, bound in reserved.get(registry.prefix, {}).items():
                    registry.resume_after(int(display), int(bound))
                    self._reserved[registry.prefix][int(display)] = int(bound)
            found = True
        if found:
            log.info("ids of before taken over", live=sum(r.live_count() for r in self.registries))
        return found

    def reserve(self) -> None:
        """Before ids are answered: make sure a restart resumes past them."""
        if self.reserved_path is None:
            return
        grown = False
        for registry in self.registries:
            mine = self._reserved[registry.prefix]
            for display, nxt in registry.counters().items():
                if nxt > mine.get(display, 0):
                    mine[display] = nxt + RESERVE_BLOCK
                    grown = True
        if grown:
            text = json.dumps({p: {str(d): b for d, b in m.items()} for p, m in self._reserved.items()})
            try:
                _write_atomically(self.reserved_path, text)
            except OSError as exc:
                log.warning("the reserved ids cannot be saved", error=str(exc))

    def touched(self) -> None:
        """Ids were handed out or retired: save soon."""
        if self.path is None or not any(r.changed for r in self.registries):
            return
        if self._pending is None or self._pending.done():
            self._pending = asyncio.ensure_future(self._save_soon())

    async def _save_soon(self) -> None:
        await asyncio.sleep(SAVE_DELAY_S)
        await self.save()

    async def save(self) -> None:
        if self.path is None:
            return
        data = {"registries": [r.dump() for r in self.registries]}
        try:
            await asyncio.to_thread(self._write, json.dumps(data, separators=(",", ":")))
        except OSError as exc:
            log.warning("the ids cannot be saved", error=str(exc))

    def _write(self, text: str) -> None:
        assert self.path is not None
        _write_atomically(self.path, text)


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)
