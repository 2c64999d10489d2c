"""One wait loop for the code, the tests and the benches."""

from __future__ import annotations

import asyncio

import pytest

from deskbox.common.waiting import until, wait_until


def test_one_wait_returns_the_first_true_answer_tolerates_what_it_is_told_and_times_out():
    answers = iter([OSError("not yet"), 0, "ready"])

    def ask():
        value = next(answers)
        if isinstance(value, Exception):
            raise value
        return value

    assert wait_until(ask, 5, 0.001, tolerate=(OSError,)) == "ready"
    with pytest.raises(RuntimeError, match="timed out after 0.05s waiting for the moon .last: OSError"):
        wait_until(lambda: (_ for _ in ()).throw(OSError("x")), 0.05, 0.01, "the moon", tolerate=(OSError,),
                   error=RuntimeError)

    async def later():
        return 7

    assert asyncio.run(until(later, 1)) == 7
    assert asyncio.run(until(lambda: 3, 1)) == 3
