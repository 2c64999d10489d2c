"""The client's answers as models: the services' JSON validated into them, fields a newer
service adds kept, and the dict reading of before still working, with a warning."""

from __future__ import annotations

import warnings

import pytest

from deskbox import answers
from deskbox.answers import Answer, Matches, Receipt, Scene, WindowTree

SCENE = {
    "version": 1, "seq": 7, "timestamp": 1.5, "mode": "active",
    "displays": [{"id": 0, "name": "HEADLESS-1", "bounds": [0, 0, 1280, 800], "size": [1280, 800],
                  "layout_bounds": [0, 0, 1280, 800], "scale": 1.0, "primary": True}],
    "focused_window": {"id": "w3", "app": "chromium", "pid": 42, "title": "T", "display_id": 0,
                       "bounds": [0, 0, 1280, 800]},
    "apps": [{"name": "chromium", "pid": 42, "app_id": "chromium", "windows": [
        {"id": "w3", "app_id": "chromium", "pid": 42, "title": "T", "bounds": [0, 0, 1280, 800],
         "display_id": 0, "focused": True}]}],
    "ax": [{"id": "a0-1", "role": "button", "name": "Submit", "value": None, "bbox": [10, 20, 80, 30],
            "display_id": 0, "window_id": "w3", "source": "cdp", "states": ["focusable"], "actions": ["click"],
            "visibility": "visible", "parent": None, "formula": "=A1"}],
    "ocr": [], "vlm_scene": None, "vlm_elements": None, "sources": {"cdp": None}, "build_ms": 12.0,
    "timings_ms": {"tree": 1.0},
}


def test_a_scene_is_read_as_attributes_with_what_a_newer_service_adds_kept():
    scene = Scene.model_validate(SCENE)
    assert scene.seq == 7 and scene.displays[0].size == [1280, 800]
    button = scene.element("a0-1")
    assert button is not None and button.bbox == [10, 20, 80, 30] and button.actions == ["click"]
    assert button.formula == "=A1"  # not declared: kept, and read as an attribute
    assert scene.apps[0].windows[0].focused is True and scene.focused_window.app == "chromium"
    assert scene.element("a0-2") is None
    # model_dump gives the JSON back: only what the service sent.
    assert scene.model_dump(exclude_unset=True) == SCENE


def test_answers_read_as_the_dicts_they_were_warn_and_answer_the_same():
    receipt = Receipt.model_validate({"ok": True, "action": "click", "target": {"id": "a0-1", "bbox": [1, 2, 3, 4]},
                                      "point": [2.5, 4.0], "elapsed_ms": 30})
    with pytest.warns(DeprecationWarning, match=r"Receipt\.point"):
        assert receipt["point"] == [2.5, 4.0]
    with pytest.warns(DeprecationWarning):
        assert receipt["target"]["id"] == "a0-1"
    with pytest.warns(DeprecationWarning):
        assert receipt.get("step") is None and receipt.get("nothing", 3) == 3
    with pytest.warns(DeprecationWarning), pytest.raises(KeyError):
        receipt["nothing"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "in" reads what was sent, without a warning
        assert "point" in receipt and "step" not in receipt and 3 not in receipt


def test_lists_and_generic_answers():
    found = Matches.model_validate({"selector": "button", "count": 1, "ambiguous": False, "truncated": False,
                                    "matches": [{"id": "a0-1", "kind": "element", "role": "button"}]})
    assert found.matches[0].role == "button"
    tree = WindowTree.model_validate({"displays": [{"id": 0}], "windows": [{"id": "w1", "wm_class": ["a", "B"]}],
                                      "focused": "w1"})
    assert tree.windows[0].wm_class == ["a", "B"] and tree.windows[0].bounds is None
    observed = Answer.model_validate({"token": "o3", "format": "full", "changes": {"removed": []}})
    assert observed.token == "o3" and observed.changes == {"removed": []}


def test_undeclared_names_the_fields_a_model_lacks() -> None:
    scene = answers.Scene.model_validate({"seq": 1, "ax": [{"id": "a0-1", "checked": True}], "new": 1,
                                          "displays": [{"id": 0}]})
    assert answers.undeclared(scene) == ["new", "ax.0.checked"]
    observed = answers.Observed.model_validate({"token": "o1", "seq": 1, "tree_hash": "x", "format": "full",
                                                "observation": {"elements": {"a0-1": {"id": "a0-1", "x": 1}}}})
    assert answers.undeclared(observed) == ["observation.elements.a0-1.x"]
    assert answers.undeclared(answers.Dropped(dropped=True)) == []
