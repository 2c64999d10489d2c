"""The OS Screen Observer shapes: window order and indexes, desktop-wide bounds on a
second, scaled display, points back to a display, trees with filters, and error codes."""

from __future__ import annotations

from deskbox.observer.shapes import displays_of, oso_code, structure, to_display, windows

SCENE = {
    "displays": [{"id": 0, "name": "A", "size": [1280, 800], "layout_bounds": [0, 0, 1280, 800], "scale": 1.0,
                  "primary": True},
                 {"id": 1, "name": "B", "size": [1600, 1200], "layout_bounds": [1280, 0, 800, 600], "scale": 2.0}],
    "apps": [{"name": "gedit", "pid": 7, "windows": [{"id": "w2", "title": "notes", "bounds": [100, 100, 800, 600],
                                                      "display_id": 1, "focused": False}]},
             {"name": "chromium", "pid": 5, "windows": [
                 {"id": "w1", "title": "Zeta", "bounds": [0, 0, 1280, 800], "display_id": 0, "focused": False},
                 {"id": "w3", "title": "alpha", "bounds": [0, 0, 640, 400], "display_id": 0, "focused": True}]}],
    "ax": [
        {"id": "a1-1", "role": "toolbar", "name": "Tools", "value": None, "bbox": [100, 100, 800, 40],
         "display_id": 1, "window_id": "w2", "states": [], "actions": [], "visibility": "visible", "parent": None},
        {"id": "a1-2", "role": "button", "name": "Save", "value": None, "bbox": [110, 110, 60, 20],
         "display_id": 1, "window_id": "w2", "states": ["disabled"], "actions": [], "visibility": "visible",
         "parent": "a1-1"},
        {"id": "a1-3", "role": "textbox", "name": "", "value": "x" * 50, "bbox": [100, 200, 400, 300],
         "display_id": 1, "window_id": "w2", "states": ["focused"], "actions": ["click"], "visibility": "visible",
         "parent": None},
    ],
}


def test_windows_come_focused_first_then_by_title_with_desktop_wide_bounds():
    listed = windows(SCENE)
    assert [(w["index"], w["window_uid"]) for w in listed] == [(0, "w3"), (1, "w2"), (2, "w1")]
    notes = listed[1]
    # Display 1 sits right of display 0, at scale 2: its device pixels are halved.
    assert notes["bounds"] == {"x": 1330, "y": 50, "width": 400, "height": 300}
    assert notes["physical_bounds"] == {"x": 100, "y": 100, "width": 800, "height": 600}
    assert notes["monitor_index"] == 1 and notes["scale_factor"] == 2.0 and notes["process"] == "gedit"


def test_a_desktop_point_goes_back_to_its_display():
    displays = displays_of(SCENE)
    assert to_display(displays, 1330, 50) == (1, 100.0, 100.0)
    assert to_display(displays, 10, 10) == (0, 10.0, 10.0)
    assert to_display(displays, 5000, 10) is None


def test_the_tree_nests_by_parent_and_filters_keep_the_path_to_a_match():
    notes = windows(SCENE)[1]
    tree, elements, nodes, truncated = structure(SCENE, notes, max_text_len=10)
    assert tree["id"] == "w2" and [c["id"] for c in tree["children"]] == ["a1-1", "a1-3"]
    save = tree["children"][0]["children"][0]
    assert save["name"] == "Save" and save["enabled"] is False and save["bounds"]["x"] == 1335
    assert tree["children"][1]["value"] == "x" * 10 + "..." and tree["children"][1]["focused"]
    assert (elements, nodes, truncated) == (3, 4, False)
    only, elements, _, _ = structure(SCENE, notes, roles={"button"})
    assert [c["id"] for c in only["children"]] == ["a1-1"] and only["children"][0]["children"][0]["id"] == "a1-2"
    pruned, elements, _, _ = structure(SCENE, notes, prune_empty=True, max_nodes=1)
    assert elements == 1


def test_error_codes_map_to_its_own():
    assert oso_code("unknown_element", 404) == "ElementNotFound"
    assert oso_code("token_expired", 410) == "SnapshotExpired"
    assert oso_code("validation_error", 400) == "BadRequest"
    assert oso_code("not_implemented", 501) == "PlatformUnsupported"
    assert oso_code("anything", 500) == "Internal"
