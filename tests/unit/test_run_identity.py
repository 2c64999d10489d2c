"""deskbox.run.identity: what a run's run.json records and what a resume may not change."""

from __future__ import annotations

from deskbox.run.identity import describe, differences, tasks_hash
from deskbox.run.tasks import Task


def tasks(*ids: str, instruction: str = "-") -> list[Task]:
    return [Task("os", {"id": i, "instruction": instruction}, f"{i}.json") for i in ids]


def identity(**over):
    base = {"agent": "noop", "agent_settings": {"model": "gpt-4o", "max_trajectory_length": 3}, "agent_args": {},
            "options": {"max_steps": 15, "observation_type": "screenshot", "action_space": "pyautogui",
                        "sleep_after_action": 0.0, "screen": [1920, 1080]},
            "tasks": tasks("a", "b"), "provider": "local", "image": "deskbox"}
    return describe(**{**base, **over})


def test_the_task_hash_is_of_the_selection_and_its_configs_not_their_order():
    assert tasks_hash(tasks("a", "b")) == tasks_hash(tasks("b", "a"))
    assert tasks_hash(tasks("a", "b")) != tasks_hash(tasks("a"))
    assert tasks_hash(tasks("a")) != tasks_hash(tasks("a", instruction="changed"))


def test_a_resume_may_change_where_it_runs_but_not_what_decides_its_scores():
    before = identity()
    assert before["image"] is None and before["image_id"] is None  # (a local session has no image)
    assert differences(before, identity(provider="attach")) == []
    assert differences(before, identity(agent_settings={"model": "gpt-4o", "max_trajectory_length": 5})) == [
        "agent_settings: {'model': 'gpt-4o', 'max_trajectory_length': 3} then, "
        "{'model': 'gpt-4o', 'max_trajectory_length': 5} now"]
    changed = differences(before, identity(tasks=tasks("a"), agent_args={"x": 1}))
    assert [c.split(":")[0] for c in changed] == ["agent_args", "tasks_hash"]
    # An older run.json, without these keys, is not held against a resume.
    assert differences({"max_steps": 15}, before) == []
    assert differences({"max_steps": 10}, before) == ["max_steps: 10 then, 15 now"]


def test_two_runs_on_one_machine_claim_different_local_session_users(tmp_path, monkeypatch):
    import os

    from deskbox.run import sessions
    monkeypatch.setattr(sessions, "USER_CLAIMS", tmp_path / "claims")
    first, fd1 = sessions.claim_user()
    second, fd2 = sessions.claim_user()  # (another open file: another claim, as another run's)
    assert (first, second) == ("deskbox-run0", "deskbox-run1")
    os.close(fd1)  # that run ended
    again, fd3 = sessions.claim_user()
    assert again == "deskbox-run0"
    os.close(fd2), os.close(fd3)
