"""The aggregator's pure logic: id assignment, turning bridge nodes into elements,
the prompt text and its budget, and semantic references. No services run here."""

from __future__ import annotations

import pytest

from deskbox.common.errors import ActionFailedError
from deskbox.geometry import Display, PagePlacement, Rect
from deskbox.scene.act import lookup_element
from deskbox.scene.elements import page_elements
from deskbox.scene.ids import IdRegistry
from deskbox.scene.placing import window_above
from deskbox.scene.resolve import resolve
from deskbox.scene.scene_json import OcrItem, Scene
from deskbox.scene.sources import Window
from deskbox.scene.text import scene_text

# -- ids -------------------------------------------------------------------------------


def test_an_element_keeps_its_id_while_it_lives_and_new_ones_get_new_ids():
    ids = IdRegistry("a")
    first = [ids.assign(0, k) for k in ("x", "y", "z")]
    assert first == ["a0-1", "a0-2", "a0-3"]
    assert [ids.assign(0, k) for k in ("x", "y", "z")] == first
    assert ids.assign(0, "new") == "a0-4"
    assert ids.assign(1, "x") == "a1-1"  # another display: its own counter


def test_retired_ids_are_never_reused_and_say_what_they_were():
    ids = IdRegistry("a")
    a, b = ids.assign(0, "a"), ids.assign(0, "b")
    gone = ids.retire_absent([(0, "a")], describe=lambda key: ("button", "Bee"))
    assert gone == [b]
    assert ids.retired(b).name == "Bee" and ids.issued(b)
    # The same key coming back is a new element: a new id, never the old one.
    assert ids.assign(0, "b") not in (a, b)
    assert not ids.issued("a0-99") and not ids.issued("t0-1") and not ids.issued("a0-x")


def test_only_the_newest_retired_ids_say_what_they_were_and_every_one_stays_stale():
    ids = IdRegistry("a", retired_memory=2)
    made = [ids.assign(0, key) for key in "abcd"]
    ids.retire_absent([], describe=lambda full: ("button", full[1]))
    assert [ids.retired(i) is not None for i in made] == [False, False, True, True]
    assert ids.retired(made[3]).name == "d"
    for ident in made:
        with pytest.raises(ActionFailedError) as err:
            lookup_element({}, ids, ident)
        assert err.value.code == "stale_element"
    assert "it was button 'd'" in str(pytest.raises(ActionFailedError, lookup_element, {}, ids, made[3]).value)
    # A restarted scene takes over as many, the newest, even from a larger dump.
    again = IdRegistry("a", retired_memory=1)
    again.load(ids.dump(), trust=lambda key: True)
    assert [r[0] for r in again.dump()["retired"]] == [made[3]] and all(again.issued(i) for i in made)


def test_a_source_that_could_not_be_read_keeps_its_ids_alive():
    ids = IdRegistry("a")
    kept = ids.assign(0, ("atspi", "k"))
    ids.retire_absent([], keep=lambda full: full[1][0] == "atspi")
    assert ids.assign(0, ("atspi", "k")) == kept


# -- page elements ---------------------------------------------------------------------


def _node(node_id, role, name="", *, bounds=None, parent=None, props=(), ignored=False, backend=None, value=None):
    n = {"nodeId": node_id, "ignored": ignored, "role": {"type": "role", "value": role},
         "name": {"type": "computedString", "value": name},
         "properties": [{"name": k, "value": {"type": "boolean", "value": v}} for k, v in props],
         "backendDOMNodeId": backend if backend is not None else int(node_id), "frameId": "F"}
    if parent:
        n["parentId"] = parent
    if value is not None:
        n["value"] = {"type": "string", "value": value}
    if bounds is not None:
        x, y, w, h = bounds
        n["bounds"] = {"x": x, "y": y + 500, "width": w, "height": h}  # document frame: scrolled by 500
        n["viewportBounds"] = {"x": x, "y": y, "width": w, "height": h}
    else:
        n["bounds"] = None
        n["viewportBounds"] = None
    return n


LAYOUT = {"nodes": [
    _node("1", "RootWebArea", "Page", bounds=(0, 0, 800, 600), props=[("focusable", True)]),
    _node("2", "generic", bounds=(0, 0, 800, 600), parent="1"),
    _node("3", "button", "Submit", bounds=(100, 100, 80, 30), parent="2", props=[("focusable", True)]),
    _node("4", "StaticText", "Submit", bounds=(105, 105, 60, 20), parent="3"),
    _node("5", "textbox", "Email", bounds=(100, 200, 200, 30), props=[("focusable", True), ("focused", True)],
          value="a@b"),
    _node("6", "button", "Hidden"),
    _node("7", "link", "Below", bounds=(100, 900, 50, 20), props=[("focusable", True)]),
    _node("8", "button", "Edge", bounds=(780, 10, 40, 20)),
    _node("9", "button", "Ignored", bounds=(1, 1, 1, 1), ignored=True),
    _node("10", "StaticText", "Some prose", bounds=(10, 300, 300, 20), parent="2"),
]}


def _elements(scale=1.0):
    placement = PagePlacement(Rect(0, 87, 800 * scale, 600 * scale), scale)
    return page_elements(LAYOUT, tab_id="T", placement=placement, window_clip=Rect(0, 0, 800 * scale, 700 * scale),
                         display_id=0, window_id="w1")


def test_page_nodes_become_elements_without_structure_or_repeated_text():
    by_name = {e.name: e for e in _elements()}
    assert set(by_name) == {"Submit", "Email", "Hidden", "Below", "Edge", "Some prose"}
    assert by_name["Some prose"].role == "text" and not by_name["Some prose"].interactive


def test_boxes_are_display_pixels_from_the_viewport_frame():
    by_name = {e.name: e for e in _elements()}
    assert by_name["Submit"].bbox == Rect(100, 187, 80, 30)  # viewport y 100 + 87 chrome
    doubled = {e.name: e for e in _elements(scale=2.0)}
    assert doubled["Submit"].bbox == Rect(200, 287, 160, 60)


def test_visibility_is_marked_not_guessed():
    by_name = {e.name: e for e in _elements()}
    assert by_name["Submit"].visibility == "visible"
    assert by_name["Hidden"].visibility == "hidden" and by_name["Hidden"].bbox is None
    assert by_name["Below"].visibility == "offscreen"
    assert by_name["Edge"].visibility == "partial"


def test_states_and_actions_follow_the_node():
    by_name = {e.name: e for e in _elements()}
    email = by_name["Email"]
    assert email.value == "a@b" and "focused" in email.states
    assert email.actions == ["click", "type", "set_value", "focus"]
    assert by_name["Submit"].actions == ["click", "focus"]
    assert by_name["Submit"].key == ("cdp", "T", "F", 3)


# -- text ------------------------------------------------------------------------------


def _scene(elements, ocr=()):
    for i, e in enumerate(elements, 1):
        e.id = f"a0-{i}"
    window = Window("w1", "chromium", 1, "Page - Chromium", Rect(0, 0, 800, 700), 0, True)
    return Scene(seq=3, timestamp=0.0, mode="active", displays=[Display(0, "HEADLESS-1", Rect(0, 0, 800, 700), 1.0,
                                                                        (800, 700), True)],
                 windows=[window], focused_window=window, apps=[], ax=list(elements), ocr=list(ocr),
                 vlm_scene=None, vlm_elements=None, sources={})


def test_text_has_one_line_per_element_with_id_role_name_box_and_states():
    scene = _scene(_elements())
    text = scene_text(scene, scene.ax, [], max_chars=None)
    lines = text.splitlines()
    assert lines[1].startswith("# display 0 HEADLESS-1 800x700")
    assert lines[2].startswith('## window w1 chromium "Page - Chromium" [0,0,800,700] focused')
    submit = next(e for e in scene.ax if e.name == "Submit")
    assert f'{submit.id} button "Submit" [100,187,80,30]' in lines
    assert any(line.endswith("offscreen") and '"Below"' in line for line in lines)
    assert not any('"Hidden"' in line for line in lines)  # no box, nothing to show


def test_a_budget_keeps_visible_interactive_elements_and_says_what_it_cut():
    many = [e for _ in range(10) for e in _elements()]  # 60 elements, ~2.6k characters
    scene = _scene(many)
    full = scene_text(scene, scene.ax, [], max_chars=None)
    assert scene_text(scene, scene.ax, [], max_chars=len(full)) == full  # fits: nothing cut
    cut = scene_text(scene, scene.ax, [], max_chars=1000)
    assert len(cut) <= 1000
    assert cut.splitlines()[-1].startswith("# truncated: ")
    assert '"Submit"' in cut and '"Email"' in cut and "Some prose" not in cut


# -- resolve ---------------------------------------------------------------------------


def test_a_recorded_step_resolves_to_the_nearest_matching_element():
    scene = _scene(_elements())
    best, runner, ambiguous = resolve("button", "Submit", (130, 190, 80, 30), elements=scene.ax, ocr=[])
    assert best.name == "Submit" and best.kind == "ax" and not ambiguous
    assert runner is not None and runner.score < best.score


def test_place_tells_look_alike_neighbours_apart():
    scene = _scene(_elements())
    submit = next(e for e in scene.ax if e.name == "Submit")
    twin = _elements()[0]
    twin.key, twin.bbox = ("twin",), type(submit.bbox)(submit.bbox.x + 90, submit.bbox.y, 80, 30)
    scene = _scene(scene.ax + [twin])
    best, runner, ambiguous = resolve("button", "Submit", (190, 187, 80, 30), elements=scene.ax, ocr=[])
    assert best.id == twin.id and runner.id == submit.id and not ambiguous


def test_two_equal_candidates_are_reported_as_ambiguous():
    elements = _elements()
    twin = _elements()
    for e in twin:
        e.key = ("twin",) + e.key
    scene = _scene(elements + twin)
    best, runner, ambiguous = resolve("button", "Submit", None, elements=scene.ax, ocr=[])
    assert best.name == runner.name == "Submit" and ambiguous


def test_text_only_on_screen_resolves_through_ocr():
    scene = _scene(_elements(), [OcrItem("t0-1", "Total: 42", (300, 500, 90, 20), 0.9, 0)])
    best, _, _ = resolve(None, "Total: 42", (300, 500, 90, 20), elements=scene.ax, ocr=scene.ocr)
    assert best.id == "t0-1" and best.kind == "ocr"


# -- spreadsheets kept while their pixels hold still ------------------------------------


def _atspi(key: str, role: str, bbox: Rect | None, display_id: int = 0):
    from deskbox.scene.elements import Element

    return Element(key=("atspi", key), role=role, name="", value=None, bbox=bbox, display_id=display_id,
                   window_id="w1", source="atspi", states=[], actions=[], visibility="visible", clip=None)


def test_a_sheets_changed_bands_are_the_changed_regions_across_its_box():
    from deskbox.scene.placing import sheet_bands, sheets_in

    assert sheets_in([]) == {}
    sheets = sheets_in([
        _atspi(":1.2/t1", "table", Rect(0, 100, 800, 600)),
        _atspi(":1.2/t1#0,0", "cell", Rect(0, 100, 60, 20)),
        _atspi(":1.2/t2", "table", Rect(900, 100, 300, 300)),  # a table without cells: not a sheet
        _atspi(":1.3/t3", "table", Rect(0, 0, 500, 500), display_id=1),
        _atspi(":1.3/t3#4,2", "cell", Rect(10, 10, 60, 20), display_id=1),
    ])
    assert set(sheets) == {":1.2/t1", ":1.3/t3"}
    assert sheet_bands(sheets, {}) == {":1.2/t1": [], ":1.3/t3": []}
    beside = (850, 0, 100, 50)
    assert sheet_bands(sheets, {0: [beside]}) == {":1.2/t1": [], ":1.3/t3": []}
    corner = (790, 640, 20, 120)  # its bottom-right corner
    assert sheet_bands(sheets, {0: [beside, corner]}) == {":1.2/t1": [(0.9, 0.1)], ":1.3/t3": []}
    other_display = {1: [(0, 0, 1920, 1080)]}
    assert sheet_bands(sheets, other_display) == {":1.2/t1": [], ":1.3/t3": [(0.0, 1.0)]}


# -- a page behind its window's resize ---------------------------------------------------


def _browser(width: float) -> Window:
    return Window("w1", "chromium", 1, "Page - Chromium", Rect(0, 0, width, 800), 0, True)


def _tab(inner_width: float, dpr: float = 1.0, **extra) -> dict:
    return {"id": "t1", "title": "Page", "active": True, "error": None,
            "layout": {"window": {"innerWidth": inner_width, "innerHeight": 700, "devicePixelRatio": dpr}}, **extra}


def test_a_page_laid_out_for_another_width_than_its_window_is_a_misfit():
    from deskbox.scene.placing import misfit_pages
    from deskbox.scene.sources import Tree

    display = Display(0, "HEADLESS-1", Rect(0, 0, 1280, 800), 1.0, (1280, 800))

    def misfits(window_width: float, tab: dict) -> dict:
        return misfit_pages([tab], Tree([display], [_browser(window_width)], "w1"))

    # Sway gave the window its new width, the page still has the old one: and the reverse.
    assert misfits(1280, _tab(640)) == {"w1": (1280, 640)}
    assert misfits(640, _tab(1280)) == {"w1": (640, 1280)}
    # Laid out for its window, fractional scales' rounding included.
    assert misfits(1280, _tab(1280)) == {}
    assert misfits(1281, _tab(1025, dpr=1.25)) == {}
    assert misfits(2560, _tab(1279, dpr=2.0)) == {}
    # Tabs not shown, failing, or without metrics are not judged.
    assert misfits(1280, _tab(640, active=False)) == {}
    assert misfits(1280, _tab(640, error="gone")) == {}
    assert misfits(1280, {"id": "t1", "active": True, "layout": {}}) == {}


# -- which window is drawn over a point ----------------------------------------------------


def _win(ident: str, bounds: tuple, floating: bool = True, workspace: str = "1", display: int = 0) -> Window:
    return Window(ident, "soffice", 7, ident, Rect(*bounds), display, False, floating, workspace)


def test_a_floating_window_listed_later_covers_the_point_it_holds():
    document = _win("w1", (0, 0, 1280, 800), floating=False)
    message, spelling = _win("w2", (503, 343, 273, 113)), _win("w3", (267, 184, 745, 432))
    # The message under its Spelling dialog (listed before it): the dialog covers its OK.
    assert window_above("w2", (639.5, 433.5), [document, message, spelling]) is spelling
    assert window_above("w2", (639.5, 433.5), [document, spelling, message]) is None
    # The tiled document is under both floating windows, but only where they are.
    assert window_above("w1", (639.5, 433.5), [document, spelling, message]) is spelling
    assert window_above("w1", (100, 100), [document, spelling, message]) is None


def test_windows_of_another_workspace_or_display_or_tiled_ones_cover_nothing():
    target = _win("w1", (0, 0, 400, 300))
    assert window_above("w1", (10, 10), [target, _win("w2", (0, 0, 400, 300), workspace="2")]) is None
    assert window_above("w1", (10, 10), [target, _win("w3", (0, 0, 400, 300), display=1)]) is None
    assert window_above("w1", (10, 10), [target, _win("w4", (0, 0, 400, 300), floating=False)]) is None
    assert window_above("w9", (10, 10), [target]) is None  # (a window gone since)
