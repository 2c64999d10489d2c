"""deskbox run's summary means, the bounds a run's callers wait for, and its sessions' tokens."""

from __future__ import annotations

from deskbox.run.stats import summary


def test_an_error_counts_zero_in_the_mean_over_every_task_and_is_left_out_of_the_graded_mean():
    records = [{"domain": "os", "status": "done", "score": 1.0}, {"domain": "os", "status": "done", "score": 0.0},
               {"domain": "os", "status": "agent_error", "score": None},
               {"domain": "chrome", "status": "infra_error", "score": None}]
    s = summary(records)
    assert s["total"] == {"tasks": 4, "graded": 2, "mean_all": 0.25, "mean_graded": 0.5, "mean": 0.5}
    assert (s["domains"]["os"]["mean_all"], s["domains"]["os"]["mean_graded"]) == (0.3333, 0.5)
    assert (s["domains"]["chrome"]["mean_all"], s["domains"]["chrome"]["mean_graded"]) == (0.0, None)
    assert summary([])["total"] == {"tasks": 0, "graded": 0, "mean_all": None, "mean_graded": None, "mean": None}


def test_the_providers_reset_waits_longer_than_the_scene_bounds_its_reset_route():
    """The outermost caller waits longest: the provider sees the scene's own answer (a
    504 naming its bound at worst), not a timeout of its own first."""
    import inspect

    from deskbox.common.session_api import RESET_TIMEOUT_S, SCENE_RESET_S
    from deskbox.provider import RESET_WAIT_S, Environment

    assert RESET_TIMEOUT_S < SCENE_RESET_S < RESET_WAIT_S
    assert inspect.signature(Environment.reset).parameters["timeout"].default == RESET_WAIT_S


def test_each_session_a_run_starts_has_a_token_of_its_own():
    """An agent in one session of a run (its commands may read the session's token)
    cannot drive another: every make(n) draws its own."""
    from deskbox.provider import EnvironmentSpec
    from deskbox.run.sessions import _Started

    class Backend:
        def __init__(self) -> None:
            self.specs = []

        def start(self, spec, name):
            self.specs.append(spec)
            return name

    backend = Backend()
    make = _Started(backend, EnvironmentSpec(token="shared", osworld=True))
    make(0)
    make(1)
    tokens = [s.token for s in backend.specs]
    assert len(set(tokens)) == 2 and "shared" not in tokens and all(len(t) >= 24 for t in tokens), tokens
    assert all(s.osworld for s in backend.specs)
