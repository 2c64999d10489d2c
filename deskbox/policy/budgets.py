"""The session's budgets: how many actions, screenshots and model tokens, for how long,
how fast.

Charged before the work is done, so what a budget refuses never runs; what it refuses
is not counted, so a refused call costs nothing, and a charged call that did nothing
(refused further on) can be refunded. A vision model's tokens are the exception: what a
call costs is known only from its answer, so the budget is checked before the call and
charged after it with what the call used (one call may take it past its limit; the next
is refused). No awaits inside: each charge is one step of the event loop (and a lock
makes it safe from threads too)."""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Callable

from ..common.errors import BudgetExceededError
from .config import BudgetsConfig

__all__ = ["Budgets"]

_WINDOW_S = 60.0  # actions_per_minute is counted over the last minute, sliding


class Budgets:
    def __init__(self, config: BudgetsConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self._started = clock()
        self._actions = 0
        self._screenshots = 0
        self._vlm_tokens = 0
        self._recent: deque[float] = deque()  # when the actions of the last minute were charged
        self._lock = threading.Lock()

    def charge_action(self) -> None:
        """Count one action, or raise BudgetExceededError (the session's time, its actions, or
        the actions of the last minute) without counting it."""
        with self._lock:
            now = self._clock()
            self._check_session(now)
            limit = self.config.max_actions
            if limit is not None and self._actions >= limit:
                raise _exceeded("max_actions", limit, self._actions, "actions")
            rate = self.config.actions_per_minute
            if rate is not None:
                self._slide(now)
                if len(self._recent) >= rate:
                    # Recoverable: the oldest action of the window leaves it in retry_after_s.
                    retry = round(self._recent[0] + _WINDOW_S - now, 1)
                    raise _exceeded("actions_per_minute", rate, len(self._recent), "actions in the last minute",
                                    recoverable=True, retry_after_s=retry)
                self._recent.append(now)
            self._actions += 1

    def charge_screenshot(self) -> None:
        """Count one screenshot, or raise BudgetExceededError without counting it."""
        with self._lock:
            self._check_session(self._clock())
            limit = self.config.max_screenshots
            if limit is not None and self._screenshots >= limit:
                raise _exceeded("max_screenshots", limit, self._screenshots, "screenshots")
            self._screenshots += 1

    def check_vlm_tokens(self) -> None:
        """Raise BudgetExceededError when the model's tokens (or the session's time) are used up;
        before a call of the model, whose cost ``charge_vlm_tokens`` counts after it."""
        with self._lock:
            self._check_session(self._clock())
            limit = self.config.max_vlm_tokens
            if limit is not None and self._vlm_tokens >= limit:
                raise _exceeded("max_vlm_tokens", limit, self._vlm_tokens, "model tokens")

    def charge_vlm_tokens(self, tokens: int) -> None:
        """Count the tokens a call of the model used (it was made: counted even past the limit)."""
        with self._lock:
            self._vlm_tokens += max(0, int(tokens))

    def refund_action(self) -> None:
        """Un-count the latest action: it was charged but never reached the desktop."""
        with self._lock:
            if self._actions > 0:
                self._actions -= 1
                if self._recent:
                    self._recent.pop()

    def refund_screenshot(self) -> None:
        with self._lock:
            self._screenshots = max(0, self._screenshots - 1)

    def check_session(self) -> None:
        """Raise BudgetExceededError once the session has lasted max_session_seconds."""
        with self._lock:
            self._check_session(self._clock())

    def status(self) -> dict[str, Any]:
        """Each budget's limit (None: unlimited), what was used and what remains."""
        with self._lock:
            now = self._clock()
            self._slide(now)
            c = self.config
            return {
                "max_actions": _entry(c.max_actions, self._actions),
                "max_screenshots": _entry(c.max_screenshots, self._screenshots),
                "max_vlm_tokens": _entry(c.max_vlm_tokens, self._vlm_tokens),
                "max_session_seconds": _entry(c.max_session_seconds, round(now - self._started, 1)),
                "actions_per_minute": _entry(c.actions_per_minute, len(self._recent)),
            }

    def _check_session(self, now: float) -> None:
        limit = self.config.max_session_seconds
        elapsed = now - self._started
        if limit is not None and elapsed >= limit:
            raise _exceeded("max_session_seconds", limit, round(elapsed, 1), "seconds")

    def _slide(self, now: float) -> None:
        while self._recent and self._recent[0] <= now - _WINDOW_S:
            self._recent.popleft()


def _entry(limit: int | None, used: float) -> dict[str, Any]:
    return {"limit": limit, "used": used, "remaining": None if limit is None else max(0, round(limit - used, 1))}


def _exceeded(budget: str, limit: int, used: float, what: str, *, recoverable: bool = False,
              retry_after_s: float | None = None) -> BudgetExceededError:
    context: dict[str, Any] = {"budget": budget, "limit": limit, "used": used}
    message = f"budget {budget} exceeded: {used:g} {what} used of {limit}"
    if retry_after_s is not None:
        context["retry_after_s"] = retry_after_s
        message += f"; retry in {retry_after_s:g} s"
    return BudgetExceededError(message, context=context, recoverable=recoverable)
