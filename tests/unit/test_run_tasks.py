"""deskbox.run.tasks: a task whose id or domain would name a folder outside the run's is
refused as the configs are read, before anything is written."""

from __future__ import annotations

import json

import pytest

from deskbox.run.tasks import TaskError, load_tasks


def config(ident: str, snapshot: str = "os") -> dict:
    return {"id": ident, "snapshot": snapshot, "instruction": "-", "evaluator": {"func": "infeasible"}}


@pytest.mark.parametrize("ident", ["../../etc", "a/b", "..", ".hidden", "", "a" * 129])
def test_an_id_that_is_not_a_plain_name_is_refused(tmp_path, ident):
    path = tmp_path / "task.json"
    path.write_text(json.dumps(config(ident)))
    with pytest.raises(TaskError, match="cannot name a folder"):
        load_tasks([str(path)])


def test_a_domain_that_is_not_a_plain_name_is_refused_and_osworlds_own_names_are_taken(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(config("ok-id", snapshot="../up")))
    with pytest.raises(TaskError, match="domain '../up'"):
        load_tasks([str(bad)])
    good = tmp_path / "good.json"
    good.write_text(json.dumps(config("0a0faba3-5580-44df-965d-f562a99b291c", snapshot="libreoffice_calc")))
    (task,) = load_tasks([str(good)])
    assert task.key == "libreoffice_calc/0a0faba3-5580-44df-965d-f562a99b291c"
