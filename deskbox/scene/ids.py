"""Stable element ids: ``a<display>-<seq>`` for accessibility elements and
``t<display>-<seq>`` for OCR text.

An id names one logical element, keyed on its source's own identity (a backend DOM node
id within its document, an AT-SPI object path, OCR text and place), and stays the same
across scenes while that element lives. Once an element is gone its id is retired:
it is never handed to anything else during the service's lifetime, and asking for it
says it is stale rather than unknown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Iterable

__all__ = ["IdRegistry", "Retired", "RETIRED_MEMORY", "to_json_key", "from_json_key"]

# How many retired ids keep what they named. That only adds "(it was button 'Go')" to
# a stale id's error: whether an id is stale comes from the counters (``issued``), for
# every id ever handed out. The descriptions are saved with the ids after every scene
# that changed them, so their number is the cost of a long-lived session: 100,000 of
# them held 26 MB and took 80-100 ms of the event loop a save, 5,000 hold 1.3 MB
# and 2 ms, and still cover the last scenes an agent can have seen.
RETIRED_MEMORY = 5_000


def to_json_key(key: Hashable) -> object:
    return [to_json_key(k) for k in key] if isinstance(key, tuple) else key


def from_json_key(key: object) -> Hashable:
    return tuple(from_json_key(k) for k in key) if isinstance(key, list) else key  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Retired:
    """What a retired id used to name, so an error can say what went away."""

    id: str
    role: str | None
    name: str | None


class IdRegistry:
    """Assigns ids for one kind of element (``prefix`` "a" or "t").

    Keys are per display: the same element moved to another display is a new element
    there (its id's display part must say where it is)."""

    def __init__(self, prefix: str, *, retired_memory: int = RETIRED_MEMORY) -> None:
        self.prefix = prefix
        self._next: dict[int, int] = {}
        self._live: dict[tuple[int, Hashable], str] = {}
        self._retired: dict[str, Retired] = {}
        self._retired_memory = retired_memory
        self.changed = False  # since the last dump: an id was handed out or retired

    def assign(self, display_id: int, key: Hashable) -> str:
        """The id of the element ``key`` on ``display_id``: its existing one while it
        lives, else a fresh one."""
        full = (display_id, key)
        found = self._live.get(full)
        if found is not None:
            return found
        seq = self._next.get(display_id, 1)
        self._next[display_id] = seq + 1
        new = f"{self.prefix}{display_id}-{seq}"
        self._live[full] = new
        self.changed = True
        return new

    def retire_absent(self, seen: Iterable[tuple[int, Hashable]], *, keep: "callable | None" = None,
                      describe: "callable | None" = None) -> list[str]:
        """Retire every live key not in ``seen`` unless ``keep(key)`` says its source
        could not be read this time (absence of evidence is not a removal). Returns the
        retired ids. ``describe(key)`` gives (role, name) for stale-id errors."""
        seen = set(seen)
        gone = []
        for full, ident in list(self._live.items()):
            if full in seen or (keep is not None and keep(full)):
                continue
            del self._live[full]
            role, name = describe(full) if describe else (None, None)
            self._retired[ident] = Retired(ident, role, name)
            gone.append(ident)
            self.changed = True
        self._forget_oldest_retired()
        return gone

    def _forget_oldest_retired(self) -> None:
        while len(self._retired) > self._retired_memory:
            self._retired.pop(next(iter(self._retired)))

    def retire_all(self, describe: "callable | None" = None) -> list[str]:
        """Retire every live id (a new epoch: the session was reset). Counters go on, so
        no id of before is ever handed out again."""
        return self.retire_absent((), describe=describe)

    def retired(self, ident: str) -> Retired | None:
        return self._retired.get(ident)

    def issued(self, ident: str) -> bool:
        """Whether ``ident`` looks like one this registry has handed out (live or not)."""
        if not ident.startswith(self.prefix):
            return False
        display, sep, seq = ident[len(self.prefix):].partition("-")
        if not sep or not display.isdigit() or not seq.isdigit():
            return False
        return int(seq) < self._next.get(int(display), 1)

    def live_count(self) -> int:
        return len(self._live)

    # -- across restarts ------------------------------------------------------------------

    def counters(self) -> dict[int, int]:
        """Per display, the sequence number the next new id gets."""
        return dict(self._next)

    def resume_after(self, display_id: int, bound: int) -> None:
        """New ids of ``display_id`` start at ``bound`` or later."""
        self._next[display_id] = max(self._next.get(display_id, 1), bound)

    def dump(self) -> dict:
        """Everything needed to honour the ids handed out so far (JSON-ready)."""
        self.changed = False
        return {
            "prefix": self.prefix,
            "next": {str(d): n for d, n in self._next.items()},
            "live": [[d, to_json_key(k), ident] for (d, k), ident in self._live.items()],
            "retired": [[r.id, r.role, r.name] for r in self._retired.values()],
        }

    def load(self, data: dict, *, trust: "callable") -> None:
        """Take over a dump (of the service before a restart). Counters go on from
        where they were, so no id is handed out twice; a live id whose key ``trust(key)``
        cannot vouch for any more (its source's identities may have been reused since)
        is retired rather than kept."""
        if data.get("prefix") != self.prefix:
            return
        self._next = {int(d): int(n) for d, n in data.get("next", {}).items()}
        self._retired = {r[0]: Retired(r[0], r[1], r[2]) for r in data.get("retired", [])}
        for display, key, ident in data.get("live", []):
            key = from_json_key(key)
            if trust(key):
                self._live[(display, key)] = ident
            else:
                self._retired[ident] = Retired(ident, None, None)
        self._forget_oldest_retired()
        self.changed = False
