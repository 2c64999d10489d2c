"""Who is using this session: one claim, held by a named holder until it is let go or
runs out.

A warm pool of sessions that several runners draw from (the pods of a Deployment on a
cluster, found through its Service) needs a way to say "this one is mine" that holds
without the cluster's API: the session keeps the claim itself. A runner claims a session
with a time to live, renews it while it works (the same holder claiming again), and lets
it go when done; a runner that dies without letting go loses the claim when it runs out,
so the session goes back to the pool by itself.

Pure logic over a clock (``time.monotonic`` unless one is given), so it is tested alone."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

__all__ = ["Claim", "Claimed", "NotHolder", "MAX_TTL_S"]

# A claim lasts at most a day between renewals: a runner renews every few minutes.
MAX_TTL_S = 24 * 3600.0


class Claimed(Exception):
    """Another holder has the session."""


class NotHolder(Exception):
    """A holder let go of a claim it does not hold."""


@dataclass
class _Held:
    holder: str
    since: float  # wall clock, for people reading GET /session
    expires: float  # the claim clock


class Claim:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._held: _Held | None = None

    def _current(self) -> _Held | None:
        if self._held is not None and self._clock() >= self._held.expires:
            self._held = None
        return self._held

    def take(self, holder: str, ttl_s: float) -> dict:
        """Claim the session for ``holder`` for ``ttl_s`` seconds, or renew its claim.
        Raises :class:`Claimed` while another holder's claim runs."""
        if not 0 < ttl_s <= MAX_TTL_S:
            raise ValueError(f"ttl_s must be in (0, {MAX_TTL_S:.0f}]")
        held = self._current()
        if held is not None and held.holder != holder:
            left = held.expires - self._clock()
            raise Claimed(f"the session is claimed by {held.holder!r} for {left:.0f} s more")
        since = held.since if held is not None else time.time()
        self._held = _Held(holder, since, self._clock() + ttl_s)
        return self.describe()

    def let_go(self, holder: str) -> bool:
        """Let go of ``holder``'s claim. False when nobody held one (it ran out);
        raises :class:`NotHolder` when somebody else holds it."""
        held = self._current()
        if held is None:
            return False
        if held.holder != holder:
            raise NotHolder(f"the session is claimed by {held.holder!r}, not by {holder!r}")
        self._held = None
        return True

    def describe(self) -> dict | None:
        held = self._current()
        if held is None:
            return None
        return {"holder": held.holder, "since": round(held.since, 3),
                "expires_in_s": round(max(0.0, held.expires - self._clock()), 1)}
