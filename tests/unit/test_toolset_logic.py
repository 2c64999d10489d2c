"""The observer toolset's pure parts: the selector grammar, observation diffs (both forms),
the token and snapshot store, and SSIM."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageDraw

from deskbox.common.errors import ExpiredError, NotFoundError
from deskbox.toolset.checks import ssim
from deskbox.toolset.observation import apply_patch, diff, document, tree_hash
from deskbox.toolset.selector import SelectorError, nodes_of, parse, select
from deskbox.toolset.sketch import describe, sketch
from deskbox.toolset.store import Store


def _el(ident, role, name, parent=None, value=None, states=(), actions=("click",), window="w1"):
    return {"id": ident, "role": role, "name": name, "value": value, "bbox": [0, 0, 10, 10], "display_id": 0,
            "window_id": window, "source": "atspi", "states": list(states), "actions": list(actions),
            "visibility": "visible", "parent": parent}


SCENE = {
    "apps": [{"name": "soffice", "windows": [{"id": "w1", "title": "Untitled 1 - LibreOffice Calc",
                                              "bounds": [0, 0, 800, 600], "display_id": 0, "focused": True}]},
             {"name": "chromium", "windows": [{"id": "w2", "title": "Form - Chromium",
                                               "bounds": [800, 0, 800, 600], "display_id": 0, "focused": False}]}],
    "focused_window": {"id": "w1"},
    "ax": [
        _el("a0-1", "toolbar", "Formatting", actions=()),
        _el("a0-2", "button", "Bold", parent="a0-1", states=("pressed",)),
        _el("a0-3", "button", "Italic", parent="a0-1"),
        _el("a0-4", "group", "Sidebar", actions=()),
        _el("a0-5", "button", "Bold", parent="a0-4", states=("disabled",), actions=()),
        _el("a0-6", "cell", "B2", value="42", states=("focused",)),
        _el("a0-7", "textbox", "Email", value="me@example.com", window="w2"),
        _el("a0-8", "button", "Save as...", window="w2"),
    ],
    "ocr": [{"id": "t0-1", "text": "Total", "bbox": [1, 2, 3, 4]}],
}
NODES = nodes_of(SCENE)


def ids(selector: str) -> list[str]:
    return [n["id"] for n in select(selector, NODES)]


def test_windows_are_the_roots_and_elements_follow_their_window():
    assert [n["id"] for n in NODES][:2] == ["w1", "a0-1"]
    assert next(n for n in NODES if n["id"] == "a0-1")["parent"] == "w1"
    assert next(n for n in NODES if n["id"] == "a0-7")["app"] == "chromium"


@pytest.mark.parametrize("selector, expected", [
    ('button[name="Bold"]', ["a0-2", "a0-5"]),
    ("Button[name=Bold]", ["a0-2", "a0-5"]),                  # roles compare without case
    ('toolbar > button[name="Bold"]', ["a0-2"]),              # child
    ('toolbar/button', ["a0-2", "a0-3"]),                     # XPath-ish child
    ('window[name*="calc"] button', ["a0-2", "a0-3", "a0-5"]),  # descendant of a window, contains any case
    ('window//button[enabled]', ["a0-2", "a0-3", "a0-8"]),
    ("button:disabled", ["a0-5"]),
    ("button[pressed]", ["a0-2"]),
    ("button[pressed=false][enabled=true]", ["a0-3", "a0-8"]),
    ('button[name~="Save.*"]', ["a0-8"]),                     # regex, whole value
    ('button[name~="Sav"]', []),
    ('*[value="42"]', ["a0-6"]),
    ("cell:focused", ["a0-6"]),
    ("Edit[name=Email]", ["a0-7"]),                           # another toolkit's role name
    ("button[index=1]", ["a0-3"]),
    ("toolbar button:nth-of-type(2)", ["a0-3"]),
    ('group:has-text("bold")', ["a0-4"]),
    ("#a0-6", ["a0-6"]),
    ('button[app="chromium"]', ["a0-8"]),
    ("button[role!=button]", []),
    ("toolbar > button > button", []),
])
def test_selectors(selector, expected):
    assert ids(selector) == expected


@pytest.mark.parametrize("selector", ["", "button[", 'button[name="x', "button[colour=red]", "button:hover",
                                      "button[index=-1]", "button >", "button[name~='(']", "[name]"])
def test_a_bad_selector_is_a_clear_error(selector):
    with pytest.raises(SelectorError) as err:
        parse(selector)
    assert err.value.status == 400 and err.value.code in ("invalid_selector", "predicate_unsupported")


def test_keyboard_shortcut_is_said_to_be_unsupported():
    with pytest.raises(SelectorError) as err:
        parse('button[keyboard_shortcut="Ctrl+B"]')
    assert err.value.code == "predicate_unsupported"


def _changed_scene():
    s = {**SCENE, "ax": [dict(e) for e in SCENE["ax"]]}
    s["ax"][5]["value"] = "43"                       # a cell's value
    s["ax"] = [e for e in s["ax"] if e["id"] != "a0-8"]  # a button gone
    s["ax"].append(_el("a0-9", "dialog", "Save", window="w2"))
    s["ax"][6]["states"] = ["focused"]               # focus moved to the Email box
    s["ax"][5]["states"] = []
    return s


def test_a_json_patch_applied_to_the_old_state_gives_the_new_one():
    old, new = document(SCENE), document(_changed_scene())
    ops = diff(old, new, "json-patch")
    assert apply_patch(old, ops) == new
    assert {"op": "remove", "path": "/elements/a0-8"} in ops
    assert {"op": "replace", "path": "/elements/a0-6/value", "value": "43"} in ops
    assert {"op": "replace", "path": "/focused_element", "value": "a0-7"} in ops
    assert diff(old, old, "json-patch") == [] and tree_hash(old) == tree_hash(document(SCENE))
    assert tree_hash(old) != tree_hash(new)


def test_the_compact_diff_names_what_changed_with_both_sides():
    out = diff(document(SCENE), document(_changed_scene()), "compact")
    assert [e["id"] for e in out["added"]] == ["a0-9"]
    assert out["removed"] == [{"id": "a0-8", "role": "button", "name": "Save as..."}]
    cell = next(c for c in out["changed"] if c["id"] == "a0-6")
    assert cell["fields"]["value"] == {"from": "42", "to": "43"}
    assert out["focus"] == {"from": "a0-6", "to": "a0-7"} and out["focused_window"] is None
    assert out["windows_added"] == out["windows_removed"] == out["text_added"] == []


def test_a_store_keeps_within_its_cap_and_ttl_and_says_expired_for_what_it_handed_out():
    now = [0.0]
    store = Store("o", cap=2, ttl_s=10, what="token", instead="observe again", clock=lambda: now[0])
    a, b = store.put({"a": 1}, 1), store.put({"b": 1}, 2)
    assert store.get(a.id).doc == {"a": 1}
    store.put({"c": 1}, 3)  # over the cap: the least lately used (b) goes
    with pytest.raises(ExpiredError) as err:
        store.get(b.id)
    assert err.value.status == 410 and err.value.code == "token_expired" and err.value.suggested_next_tool
    now[0] = 11.0
    with pytest.raises(ExpiredError):
        store.get(a.id)
    with pytest.raises(NotFoundError):
        store.get("o99")
    assert len(store) == 0


def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


def test_ssim_is_one_for_the_same_picture_and_falls_as_it_changes():
    rng = np.random.default_rng(1)
    base = Image.fromarray(rng.integers(0, 255, (200, 300, 3), dtype=np.uint8))
    assert ssim(_png(base), _png(base)) == pytest.approx(1.0)
    marked = base.copy()
    ImageDraw.Draw(marked).rectangle([0, 0, 150, 100], fill=(255, 0, 0))
    score = ssim(_png(base), _png(marked))
    assert 0.3 < score < 0.9
    assert ssim(_png(base), _png(Image.new("RGB", (300, 200), "white"))) < 0.1


def test_a_sketch_draws_labelled_boxes_and_puts_small_ones_in_a_legend():
    scene = {"displays": [{"id": 0, "size": [800, 600]}], "apps": SCENE["apps"], "focused_window": {"id": "w1"},
             "ax": [{**_el("a0-1", "toolbar", "Formatting", actions=()), "bbox": [0, 0, 800, 100]},
                    {**_el("a0-2", "button", "Bold", parent="a0-1"), "bbox": [10, 10, 300, 80]},
                    {**_el("a0-3", "button", "Italic", parent="a0-1"), "bbox": [400, 10, 8, 8]}]}
    out = sketch(scene, window="w1", cols=80)
    text = out["sketch"]
    assert "soffice window 'Untitled 1 - LibreOffice Calc'" in text
    assert "a0-2 button Bold" in text and "a0-1 toolbar Formatting" in text
    assert out["legend"] == [{"mark": "[1]", "id": "a0-3", "role": "button", "name": "Italic", "bbox": [400, 10, 8, 8]}]
    assert text.splitlines()[-1] == "[1] a0-3 button Italic"
    assert text.splitlines()[0] == "soffice window 'Untitled 1 - LibreOffice Calc'"
    assert all(len(line) == 80 for line in text.splitlines()[1:out["rows"] + 1])


def test_a_description_says_the_window_the_focus_and_what_can_be_done_in_reading_order():
    text = describe(SCENE)
    assert text.startswith("soffice window 'Untitled 1 - LibreOffice Calc' [w1] (focused)")
    assert "Focused: cell 'B2' = '42' [a0-6]." in text
    assert "button 'Bold' (pressed) [a0-2]" in text and "Other windows: chromium 'Form - Chromium' [w2]." in text


def test_a_catastrophic_regex_ends_within_its_budget_with_a_clear_error():
    import asyncio

    from deskbox.toolset.patterns import BUDGET_S, PatternTooSlow
    from deskbox.toolset.selector import select_bounded

    nodes = [_el(f"a0-{i}", "button", "a" * 40 + "b") for i in range(50)]
    # (Without the time limit this match runs for minutes: the error is the limit at work.)
    with pytest.raises(PatternTooSlow) as err:
        asyncio.run(select_bounded('button[name~="(a|aa)+"]', nodes))
    assert err.value.context == {"budget_s": BUDGET_S}
    assert err.value.status == 400 and err.value.code == "regex_too_slow" and "(a|aa)+" in err.value.message
    # A pattern that answers at once still matches, in the thread and without one.
    nodes[7]["name"] = "aab"
    assert [n["id"] for n in asyncio.run(select_bounded('button[name~="a{2}b"]', nodes))] == ["a0-7"]
    assert [n["id"] for n in select(parse('button[name~="a{2}b"]'), nodes)] == ["a0-7"]
