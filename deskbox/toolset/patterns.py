"""A client's regular expressions (a selector's ``~=``, the ``regex`` of ``wait_for`` and
``assert_state``), matched within a time limit.

Python's ``re`` cannot be stopped: a pattern with nested repeats (``(a|aa)+$``) on a long
name runs for minutes, and the scene with it. These are compiled with the ``regex``
package, whose matching takes a timeout, and every match made for one request draws on
one budget (:data:`BUDGET_S`, set with :func:`budget`): past it the request answers 400
``regex_too_slow`` and the scene goes on. Selectors with a pattern are also matched in a
thread (``selector.select_bounded``), so the scene's other requests do not wait for them."""

from __future__ import annotations

import contextlib
import contextvars
import time
from typing import Iterator

import regex

from ..common.errors import InvalidRequestError

__all__ = ["BUDGET_S", "PatternTooSlow", "budget", "compile_pattern", "fullmatch", "search"]

# What one request's patterns may take, all their matches together.
BUDGET_S = 0.5

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("deskbox_pattern_deadline", default=None)


class PatternTooSlow(InvalidRequestError):
    code = "regex_too_slow"


def compile_pattern(text: str) -> regex.Pattern:
    """``text`` compiled (Python's ``re`` syntax), or a 400 saying why it is not a pattern."""
    try:
        return regex.compile(text)
    except (regex.error, ValueError, OverflowError) as exc:
        raise InvalidRequestError(f"bad regex {text!r}: {exc}", code="invalid_regex") from None


@contextlib.contextmanager
def budget(seconds: float = BUDGET_S) -> Iterator[None]:
    """The matches made in the block (and in threads started from it) share ``seconds``."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def _left() -> float:
    deadline = _deadline.get()
    if deadline is None:
        return BUDGET_S
    return max(0.001, deadline - time.monotonic())


def _run(method, pattern: regex.Pattern, text: str) -> regex.Match | None:
    try:
        return method(text, timeout=_left())
    except TimeoutError:
        raise PatternTooSlow(f"the regex {pattern.pattern!r} took over {BUDGET_S:g} s on the session's text (a "
                             "repeat inside a repeat, such as (a+)+, backtracks without end): make it simpler",
                             context={"budget_s": BUDGET_S}) from None


def fullmatch(pattern: regex.Pattern, text: str) -> bool:
    return _run(pattern.fullmatch, pattern, text) is not None


def search(pattern: regex.Pattern, text: str) -> bool:
    return _run(pattern.search, pattern, text) is not None
