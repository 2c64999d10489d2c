"""The scene aggregator against a real session: Scene JSON in display pixels, stable ids,
the prompt text, filters, errors, element actions and their receipts, the stream, marks
and semantic references. The grounding suite (every element of hard pages clicked through
/act) is in test_grounding.py."""

from __future__ import annotations

import io
import json
import subprocess
import time

import pytest
from PIL import Image
from websockets.sync.client import connect

from tests.conftest import open_fixture
from tests.support import ROOT, Process, http, wait_until


@pytest.fixture
def grounding(single, pages):
    open_fixture(single, pages, "grounding.html")
    # The cross-origin frame loads after the page: wait until the scene has its buttons.
    wait_until(lambda: "cross-three" in names(scene(single)), 20, what="the frames' buttons in the scene")
    return single


def scene(session, **params) -> dict:
    params.setdefault("mode", "agent-turn")
    resp = http("GET", session.scene + "/api/v1/scene?" + "&".join(f"{k}={v}" for k, v in params.items()))
    assert resp.status == 200, resp.body[:500]
    return resp.json()


def names(s: dict) -> dict[str, dict]:
    return {e["name"]: e for e in s["ax"] if e["source"] == "cdp"}


def act(session, target: str, action: str = "click", **extra) -> dict:
    resp = http("POST", session.scene + "/api/v1/act", {"target": target, "action": action, **extra})
    assert resp.status == 200, resp.body[:500]
    return resp.json()


def test_the_scene_places_page_elements_in_display_pixels(grounding, pages):
    s = scene(grounding)
    assert s["version"] == 1 and s["mode"] == "agent-turn"
    assert s["displays"][0]["size"] == [1280, 800]
    window = s["focused_window"]
    assert window["app"] == "chromium" and window["pid"] == grounding.chromium_pid()
    button = names(s)["top-a"]
    assert button["role"] == "button" and button["window_id"] == window["id"] and button["display_id"] == 0
    assert button["visibility"] == "visible" and "click" in button["actions"]
    # The box is where the pixels are: a real click at its centre (not through /act) lands.
    x, y, w, h = button["bbox"]
    pages.clear()
    grounding.pointer(action="click", x=x + w / 2, y=y + h / 2)
    pages.wait_for(type="click", target="top-a")
    assert names(s)["hidden-one"]["visibility"] == "hidden" and names(s)["hidden-one"]["bbox"] is None
    assert names(s)["bottom-a"]["visibility"] == "offscreen"


def test_browser_ui_comes_from_atspi_and_page_content_from_cdp_never_both(grounding, pages):
    s = scene(grounding)
    window = s["focused_window"]["id"]
    native = [e for e in s["ax"] if e["source"] == "atspi" and e["window_id"] == window]
    bar = next(e for e in native if e["name"] == "Address and search bar")
    assert bar["role"] == "textbox" and "/grounding.html" in bar["value"]
    assert {"Back", "Reload"} <= {e["name"] for e in native}
    page = {e["name"] for e in s["ax"] if e["source"] == "cdp"}
    assert not page & {e["name"] for e in native}  # nothing listed twice
    # The toolbar is above the page's viewport, inside the window.
    wx, wy, ww, wh = s["focused_window"]["bounds"]
    x, y, w, h = bar["bbox"]
    assert wx <= x and x + w <= wx + ww and wy <= y < names(s)["head-home"]["bbox"][1]
    pages.clear()
    http("POST", grounding.scene + "/api/v1/act", {"target": bar["id"], "action": "set_value",
                                                  "text": pages.url("grounding.html") + "?typed\n"})
    pages.wait_for(type="load", page="/grounding.html", timeout=20)


def test_ids_stay_while_nothing_changes_and_a_new_element_gets_a_new_id(grounding, pages):
    first = scene(grounding)
    second = scene(grounding)
    assert {e["id"]: e["name"] for e in first["ax"]} == {e["id"]: e["name"] for e in second["ax"]}
    assert second["seq"] > first["seq"]
    before = {e["id"] for e in second["ax"]}
    act(grounding, names(second)["add-one"]["id"])
    pages.wait_for(type="click", target="add-one")
    third = wait_until(lambda: (lambda s: s if "added-1" in names(s) else None)(scene(grounding)), 10,
                       what="the added button in the scene")
    added = names(third)["added-1"]
    assert added["id"] not in before
    # Everything that was there keeps its id.
    for name in ("top-a", "same-one", "cross-two", "shadow-b", "add-one"):
        assert names(third)[name]["id"] == names(second)[name]["id"]
    # Removed, its id is stale, never unknown, never reused.
    act(grounding, names(third)["remove-added"]["id"])
    wait_until(lambda: "added-1" not in names(scene(grounding)), 10, what="the added button gone")
    resp = http("POST", grounding.scene + "/api/v1/act", {"target": added["id"]})
    assert resp.status == 409 and resp.json()["error"]["code"] == "stale_element"
    assert "added-1" in resp.json()["error"]["message"]
    act(grounding, names(scene(grounding))["add-one"]["id"])
    again = wait_until(lambda: (lambda s: names(s).get("added-2"))(scene(grounding)), 10, what="added-2")
    assert again["id"] != added["id"] and again["id"] not in before


def test_bad_requests_get_clear_errors_and_the_service_keeps_serving(grounding):
    base = grounding.scene
    cases = [
        ("GET", "/api/v1/scene?mode=fast", None, 400),
        ("GET", "/api/v1/scene?display=7", None, 400),
        ("GET", "/api/v1/scene?window=nope", None, 400),
        ("GET", "/api/v1/scene/text?max_chars=5", None, 400),
        ("POST", "/api/v1/act", {"target": "button-1"}, 400),
        ("POST", "/api/v1/act", {"target": "a0-1", "action": "type"}, 400),
        ("POST", "/api/v1/act", {"target": "a0-1", "action": "explode"}, 400),
        ("POST", "/api/v1/act", {"target": "a0-999999"}, 404),
        ("POST", "/api/v1/resolve", {}, 400),
        ("POST", "/api/v1/scene/vlm", {"vlm_elements": "not a list"}, 400),
    ]
    for method, path, body, status in cases:
        resp = http(method, base + path, body)
        assert resp.status == status, (path, body, resp.status, resp.body[:300])
        err = resp.json()["error"]
        assert err["code"] and err["message"]
    assert scene(grounding)["ax"]


def test_unknown_ids_say_how_to_refresh(grounding):
    resp = http("POST", grounding.scene + "/api/v1/act", {"target": "a0-999999"})
    assert resp.status == 404 and "/api/v1/scene" in resp.json()["error"]["message"]


def test_filters_pick_interactive_elements_a_display_or_a_window(grounding):
    s = scene(grounding, interactive=1)
    assert s["ax"] and all(e["actions"] for e in s["ax"])
    assert "check" in {e["name"] for e in scene(grounding)["ax"]} - {e["name"] for e in s["ax"]}  # plain text
    window = s["focused_window"]["id"]
    by_window = scene(grounding, window=window)
    assert by_window["ax"] and all(e["window_id"] == window for e in by_window["ax"])
    assert all(e["display_id"] == 0 for e in scene(grounding, display=0)["ax"])


def test_text_is_one_line_per_element_and_keeps_to_its_budget(grounding):
    s = scene(grounding)
    text = http("GET", grounding.scene + "/api/v1/scene/text?mode=agent-turn").body.decode()
    button = names(s)["top-a"]
    x, y, w, h = button["bbox"]
    assert f'{button["id"]} button "top-a" [{x},{y},{w},{h}]' in text.splitlines()
    assert "## window " in text and "# display 0 HEADLESS-1 1280x800" in text
    cut = http("GET", grounding.scene + "/api/v1/scene/text?max_chars=800").body.decode()
    assert len(cut) <= 800 and cut.splitlines()[-1].startswith("# truncated:")
    tokens = http("GET", grounding.scene + "/api/v1/scene/text?max_tokens=200").body.decode()
    assert len(tokens) <= 200 * 3.5 and "# truncated:" in tokens


def test_vlm_fields_are_set_by_a_client_and_carried_forward(grounding):
    body = {"vlm_scene": "a test page with buttons", "vlm_elements": [{"label": "x", "bbox": [1, 2, 3, 4]}]}
    assert http("POST", grounding.scene + "/api/v1/scene/vlm", body).status == 200
    for _ in range(2):
        s = scene(grounding)
        assert s["vlm_scene"] == body["vlm_scene"] and s["vlm_elements"] == body["vlm_elements"]
    http("POST", grounding.scene + "/api/v1/scene/vlm", {"vlm_scene": None, "vlm_elements": None})
    assert scene(grounding)["vlm_scene"] is None


def test_act_receipts_and_each_pointer_action_land_on_the_element(grounding, pages):
    s = scene(grounding)
    top = names(s)["top-a"]
    pages.clear()
    receipt = act(grounding, top["id"], "double_click")
    pages.wait_for(type="dblclick", target="top-a")
    assert receipt["target"]["id"] == top["id"] and receipt["target"]["name"] == "top-a"
    x, y, w, h = receipt["target"]["bbox"]
    px, py = receipt["point"]
    assert x <= px < x + w and y <= py < y + h
    act(grounding, top["id"], "right_click")
    pages.wait_for(type="contextmenu", target="top-a")
    act(grounding, names(s)["top-link"]["id"], "hover")
    pages.wait_for(type="mouseover", target="top-link")


def test_type_and_set_value_go_to_the_field(grounding, pages):
    field = names(scene(grounding))["top-input"]
    pages.clear()
    act(grounding, field["id"], "type", text="héllo <wörld>")
    pages.wait_for(type="input", target="top-input", value="héllo <wörld>")
    act(grounding, field["id"], "set_value", text="replaced")
    pages.wait_for(type="input", target="top-input", value="replaced")
    assert names(scene(grounding))["top-input"]["value"] == "replaced"


def test_keys_are_not_sent_when_a_popup_of_the_browser_took_the_click_meant_for_the_field(single, pages):
    """A select's list is drawn by Chromium over the page, where neither the page's hit
    test nor Sway's window list sees it (a menu of the tab strip left open by a fuzzed
    right click was the same: the click on a field landed on its "Task manager" item and
    the text was typed into the page's body). The click lands on the list; the field is
    not focused, so /act answers 409 not_focused and sends no key."""
    open_fixture(single, pages, "popup.html")
    s = scene(single)
    pick = next(e for e in s["ax"] if e["source"] == "cdp" and e["role"] == "combobox")
    field = next(e for e in s["ax"] if e["source"] == "cdp" and e["name"] == "Below")
    act(single, pick["id"])  # a real click: Chromium opens its list, over the field
    wait_until(lambda: "expanded" in next(e for e in scene(single)["ax"] if e["id"] == pick["id"])["states"],
               10, what="the select's list open")
    resp = http("POST", single.scene + "/api/v1/act", {"target": field["id"], "action": "set_value", "text": "no"})
    assert resp.status == 409 and resp.json()["error"]["code"] == "not_focused", resp.body[:500]
    pages.wait_for(type="change", target="pick")  # the click went to the list: an option was picked
    pages.settle(0.5)
    assert not pages.matching(type="keydown"), pages.events
    assert not pages.matching(type="input", target="below"), pages.events
    # With the list gone, the same action reaches the field.
    act(single, field["id"], "type", text="yes")
    pages.wait_for(type="input", target="below", value="yes")


def test_a_click_right_after_a_tiled_neighbour_closed_lands_on_its_element(grounding, pages):
    """Sway widens the browser the moment its neighbour's window goes; Chromium lays the
    page out for the new width a moment later (tens of ms idle, more on a busy machine).
    A scene read in between would place the page's elements where they are not drawn
    (anchored at the window's new right edge with the old width), and the click would
    land beside them: the scene reads the page again until it fits its window."""
    for _ in range(3):
        neighbour = Process(grounding, ["/usr/bin/python3", str(ROOT / "tests" / "apps" / "gtk3_buttons.py"),
                                        "--title", "Tiled neighbour"])
        neighbour.wait_for(event="ready", timeout=30)
        wait_until(lambda: any(w["title"] == "Tiled neighbour" for w in grounding.windows()), 20,
                   what="the neighbour tiled beside the browser")
        wait_until(lambda: grounding.browser_window()["bounds"][2] < 1280, 10, what="the browser narrowed")
        top = names(scene(grounding))["top-a"]
        pages.clear()
        neighbour.stop()
        receipt = act(grounding, top["id"])
        pages.wait_for(type="click", target="top-a")
        assert receipt["target"]["id"] == top["id"]


def test_a_click_on_a_window_under_another_raises_it_first(single):
    """Two floating windows in the same place: the one below is covered, and a click
    sent to its button's centre would reach the one above (as LibreOffice's spellcheck
    message under its Spelling dialog did). /act raises the element's window first,
    and says so; then the other way round."""
    sway = ["swaymsg", "-s", single.state["swaysock"]]
    apps = {}
    try:
        for title in ("Lower fixture", "Upper fixture"):
            app = Process(single, ["/usr/bin/python3", str(ROOT / "tests" / "apps" / "gtk3_buttons.py"),
                                   "--title", title])
            app.wait_for(event="ready", timeout=30)
            wait_until(lambda t=title: any(w["title"] == t for w in single.windows()), 20, what=f"{title} mapped")
            subprocess.run([*sway, f"[pid={app.pid}] floating enable, move position 300 200"], check=True,
                           capture_output=True)
            apps[title] = app
        bounds = lambda t: next(w for w in single.windows() if w["title"] == t)["layout_bounds"]  # noqa: E731
        wait_until(lambda: bounds("Lower fixture") == bounds("Upper fixture"), 10, what="the two windows on one spot")
        for below, above in (("Lower fixture", "Upper fixture"), ("Upper fixture", "Lower fixture")):
            order = [w["title"] for w in single.windows() if w["title"] in apps]
            assert order == [below, above], order  # desktopd lists them as Sway draws them

            def alpha(s: dict, title: str = below) -> dict | None:
                window = next((w for a in s["apps"] for w in a["windows"] if w["title"] == title), None)
                return next((e for e in s["ax"] if window and e["window_id"] == window["id"]
                             and e["role"] == "button" and e["name"] == "Alpha"), None)

            button = wait_until(lambda: alpha(scene(single)), 20, what=f"{below}'s Alpha in the scene")
            receipt = act(single, button["id"])
            apps[below].wait_for(event="click", widget="Alpha")
            assert receipt["raised"] == button["window_id"], receipt
            assert apps[above].latest(event="click") is None, f"{above} took the click meant for {below}"
    finally:
        for app in apps.values():
            app.stop()


def test_an_offscreen_element_is_scrolled_into_view_before_the_click(grounding, pages):
    bottom = names(scene(grounding))["bottom-a"]
    assert bottom["visibility"] == "offscreen"
    pages.clear()
    receipt = act(grounding, bottom["id"])
    pages.wait_for(type="click", target="bottom-a")
    assert receipt["scrolled"] is True and receipt["changed"] is True
    assert names(scene(grounding))["bottom-a"]["visibility"] == "visible"


def test_an_element_under_the_fixed_header_is_uncovered_before_the_click(single, pages):
    pages.clear()
    single.open_page(pages.url("grounding.html") + "#under-header")
    pages.wait_for(type="load", page="/grounding.html", timeout=20)
    top = wait_until(lambda: names(scene(single)).get("top-a"), 10, what="top-a in the scene")
    header = names(scene(single))["head-home"]
    # The page is scrolled so that top-a is on screen but under the 64 px fixed header.
    assert top["visibility"] == "visible" and top["bbox"][1] < header["bbox"][1] + 64
    pages.clear()
    receipt = act(single, top["id"])
    pages.wait_for(type="click", target="top-a")
    assert receipt["scrolled"] is True
    assert not pages.matching(type="click", target="head-home")


def test_the_stream_pushes_a_new_scene_after_a_change(grounding, pages):
    base = grounding.scene.replace("http://", "ws://")
    with connect(base + "/api/v1/scene/stream?interactive=1", open_timeout=10) as ws:
        first = json.loads(ws.recv(timeout=10))
        assert first["ax"] and all(e["actions"] for e in first["ax"])
        add = names(first)["add-one"]["id"]
        act(grounding, add)
        deadline_hits = 0
        while True:
            pushed = json.loads(ws.recv(timeout=10))
            assert pushed["seq"] > first["seq"]
            if any(n.startswith("added-") and n not in names(first) for n in names(pushed)):
                break
            deadline_hits += 1
            assert deadline_hits < 20, "no pushed scene showed the added button"


def _frames_asked(session) -> float:
    """How many frames (``format=rgb``, the scene's) desktopd has answered (its metrics)."""
    text = http("GET", session.desktopd + "/metrics").body.decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("deskbox_desktopd_screenshots_total{") and 'format="rgb"' in line)


def test_the_screen_is_watched_only_for_a_subscriber_and_an_idle_scene_still_sees_a_change(grounding, pages):
    # A field with the focus: its caret blinks, so the screen changes twice a second.
    act(grounding, names(scene(grounding))["top-input"]["id"], "focus")
    time.sleep(1.5)
    before = _frames_asked(grounding)
    time.sleep(3)
    assert _frames_asked(grounding) == before, "the screen was captured with no one to build a scene for"
    base = grounding.scene.replace("http://", "ws://")
    with connect(base + "/api/v1/scene/stream", open_timeout=10) as ws:
        ws.recv(timeout=10)
        watched = _frames_asked(grounding)
        time.sleep(2)
        assert _frames_asked(grounding) >= watched + 2, "a subscriber's screen is not watched"
    # A change the scene was not told of (the bridge navigated, no input sent): the
    # next idle scene is built afresh, not the last one answered again.
    first = scene(grounding, mode="idle")
    resp = http("POST", grounding.bridge + "/navigate", {"url": pages.url("input.html")})
    assert resp.status == 200, resp.body[:300]
    wait_until(lambda: "top-input" not in names(scene(grounding, mode="idle")), 20,
               what="an idle scene without the grounding page's field")
    assert scene(grounding, mode="idle")["seq"] > first["seq"]


def test_marks_draw_ids_on_the_screenshot(grounding):
    s = scene(grounding, interactive=1)
    resp = http("GET", grounding.scene + "/api/v1/screenshot?display=0&marks=1")
    assert resp.status == 200 and resp.headers["content-type"] == "image/png"
    marked = Image.open(io.BytesIO(resp.body))
    assert marked.size == (1280, 800)
    visible = [e for e in s["ax"] if e["visibility"] in ("visible", "partial")]
    assert int(resp.headers["x-deskbox-marks"]) >= len(visible) - 2  # the page may have moved a little
    plain = Image.open(io.BytesIO(http("GET", grounding.scene + "/api/v1/screenshot?display=0").body))
    assert plain.size == (1280, 800) and plain.convert("RGB").tobytes() != marked.convert("RGB").tobytes()


def test_a_recorded_step_resolves_to_the_current_element(grounding):
    s = scene(grounding)
    top = names(s)["top-a"]
    x, y, w, h = top["bbox"]
    resp = http("POST", grounding.scene + "/api/v1/resolve",
                {"role": "button", "name": "Top-A", "bbox": [x + 15, y + 10, w, h]}).json()
    assert resp["match"]["id"] == top["id"] and not resp["ambiguous"]
    # Two buttons named Save: without a place it cannot tell, and says so.
    saves = [e for e in s["ax"] if e["name"] == "Save"]
    assert len(saves) == 2
    resp = http("POST", grounding.scene + "/api/v1/resolve", {"role": "button", "name": "Save"}).json()
    assert resp["ambiguous"] and {resp["match"]["id"], resp["runner_up"]["id"]} == {e["id"] for e in saves}
    second = saves[1]
    resp = http("POST", grounding.scene + "/api/v1/resolve", {"role": "button", "name": "Save",
                                                              "bbox": second["bbox"]}).json()
    assert resp["match"]["id"] == second["id"] and not resp["ambiguous"]


@pytest.fixture(scope="module")
def ocr_session():
    from tests.support import Session

    session = Session(["1280x800"], extra_env={"DESKBOX_OCR": "1"}).start()
    session.browser_window()
    yield session
    session.stop()


def test_ocr_lines_get_text_ids_that_stay_while_the_text_stays(ocr_session, pages):
    assert scene(ocr_session)["sources"]["ocr"] is None  # on, and working
    open_fixture(ocr_session, pages, "grounding.html")
    first = wait_until(lambda: (lambda s: s if any("top-link" in o["text"] for o in s["ocr"]) else None)(
        scene(ocr_session)), 30, what="OCR to read the page")
    line = next(o for o in first["ocr"] if "top-link" in o["text"])
    assert line["id"].startswith("t0-") and 0 < line["conf"] <= 1
    x, y, w, h = line["bbox"]
    link = names(first)["top-link"]
    lx, ly, lw, lh = link["bbox"]
    assert x <= lx + lw and lx <= x + w and y <= ly + lh and ly <= y + h  # OCR found it where CDP says it is
    again = scene(ocr_session)
    # Each line read again with the same text keeps its id. (The page may still paint
    # between the two reads: once, under make flakes, its fixed header's search field
    # came in one read later, as two new lines with new ids.)
    before, after = {o["id"]: o["text"] for o in first["ocr"]}, {o["id"]: o["text"] for o in again["ocr"]}
    kept = {i: t for i, t in before.items() if t in after.values()}
    assert line["id"] in kept and {i: after.get(i) for i in kept} == kept, (before, after)
    text = http("GET", ocr_session.scene + "/api/v1/scene/text").body.decode()
    assert f'{line["id"]} text ' in text


def test_ocr_is_off_by_default(grounding):
    s = scene(grounding)
    assert s["ocr"] == [] and s["sources"]["ocr"] == "disabled"
