"""The session's claim (deskbox.session.claims): one holder at a time, renewed by its
holder, gone when it runs out or is let go. Pure logic over a clock given here."""

from __future__ import annotations

import pytest

from deskbox.session.claims import MAX_TTL_S, Claim, Claimed, NotHolder


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_one_holder_at_a_time_until_it_lets_go():
    clock = Clock()
    claim = Claim(clock)
    assert claim.describe() is None
    held = claim.take("runner-a", 60)
    assert held["holder"] == "runner-a" and held["expires_in_s"] == 60
    with pytest.raises(Claimed, match="runner-a"):
        claim.take("runner-b", 60)
    with pytest.raises(NotHolder, match="runner-a"):
        claim.let_go("runner-b")
    assert claim.let_go("runner-a") is True
    assert claim.describe() is None
    assert claim.take("runner-b", 60)["holder"] == "runner-b"


def test_the_holder_renews_and_the_claim_runs_out_without_renewal():
    clock = Clock()
    claim = Claim(clock)
    first = claim.take("runner-a", 30)
    clock.now += 20
    renewed = claim.take("runner-a", 30)
    assert renewed["expires_in_s"] == 30 and renewed["since"] == first["since"]
    clock.now += 29.9
    with pytest.raises(Claimed):
        claim.take("runner-b", 30)
    clock.now += 0.1  # the holder went away: its claim is over at its end, not later
    assert claim.describe() is None
    assert claim.let_go("runner-a") is False
    assert claim.take("runner-b", 30)["holder"] == "runner-b"


@pytest.mark.parametrize("ttl", [0, -1, MAX_TTL_S + 1])
def test_a_time_to_live_out_of_range_is_refused(ttl):
    with pytest.raises(ValueError, match="ttl_s"):
        Claim(Clock()).take("runner-a", ttl)
