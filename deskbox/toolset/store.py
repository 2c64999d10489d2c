"""Kept observations: the tokens ``observe`` hands out and the snapshots a client saves.

Each is kept for a time-to-live and within a cap (the oldest goes first). Asking for one
that was handed out and is gone answers ``Expired`` (410), telling the client what to do
instead; one that was never handed out is not found (404)."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

import orjson

from ..common.errors import ExpiredError, NotFoundError

__all__ = ["Kept", "Store"]


@dataclass(slots=True)
class Kept:
    """One kept observation. The document is kept as JSON bytes: a 5,000-element page's
    observation is about 1.3 MB that way, several times that as Python objects."""

    id: str
    data: bytes
    seq: int
    created: float
    expires: float
    extra: dict[str, Any]

    @property
    def doc(self) -> dict[str, Any]:
        return orjson.loads(self.data)


class Store:
    def __init__(self, prefix: str, *, cap: int, ttl_s: float, what: str, instead: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.prefix = prefix
        self.cap = cap
        self.ttl_s = ttl_s
        self._what = what  # "token", "snapshot"
        self._instead = instead  # what the client should do when one expired
        self._clock = clock
        self._items: OrderedDict[str, Kept] = OrderedDict()
        self._issued = 0

    def put(self, doc: dict[str, Any], seq: int, *, ttl_s: float | None = None, **extra: Any) -> Kept:
        self._drop_expired()
        self._issued += 1
        now = self._clock()
        kept = Kept(f"{self.prefix}{self._issued}", orjson.dumps(doc), seq, time.time(), now + (ttl_s or self.ttl_s),
                    extra)
        self._items[kept.id] = kept
        while len(self._items) > self.cap:
            self._items.popitem(last=False)
        return kept

    def get(self, ident: str) -> Kept:
        self._drop_expired()
        kept = self._items.get(ident)
        if kept is not None:
            self._items.move_to_end(ident)  # (the cap drops what was used least lately)
            return kept
        if self._was_issued(ident):
            raise ExpiredError(f"{self._what} {ident!r} expired (kept {self.ttl_s:g} s, at most {self.cap}); "
                               f"{self._instead}", code=f"{self._what}_expired", context={self._what: ident},
                               suggested_next_tool="observe")
        raise NotFoundError(f"no {self._what} {ident!r}: {self._what}s are handed out as {self.prefix}N",
                            code=f"unknown_{self._what}", context={self._what: ident})

    def items(self) -> list[Kept]:
        """What is kept, the least lately used first."""
        self._drop_expired()
        return list(self._items.values())

    def drop(self, ident: str) -> bool:
        return self._items.pop(ident, None) is not None

    def __len__(self) -> int:
        self._drop_expired()
        return len(self._items)

    def _was_issued(self, ident: str) -> bool:
        number = ident.removeprefix(self.prefix)
        return ident.startswith(self.prefix) and number.isdigit() and 0 < int(number) <= self._issued

    def _drop_expired(self) -> None:
        now = self._clock()
        for ident in [k for k, v in self._items.items() if v.expires <= now]:
            del self._items[ident]
