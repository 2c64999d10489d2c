"""The observer toolset against a real session: find with selectors, observe with diffs
since a token, wait_for, assert_state, snapshots, and actions that answer with what they
changed; all on the toolset fixture page in a real Chromium."""

from __future__ import annotations

import base64
import concurrent.futures
import io
import time
import urllib.parse

import pytest
from PIL import Image

from deskbox.toolset.observation import apply_patch, tree_hash
from tests.conftest import open_fixture
from tests.support import ROOT, Process, http, run_js, wait_until


@pytest.fixture
def page(single, pages):
    open_fixture(single, pages, "toolset.html")
    return single


def get(session, path: str, **params) -> dict:
    resp = http("GET", session.scene + path + ("?" + urllib.parse.urlencode(params) if params else ""))
    assert resp.status == 200, resp.body[:500]
    return resp.json()


def post(session, path: str, body: dict, status: int = 200) -> dict:
    resp = http("POST", session.scene + path, body)
    assert resp.status == status, resp.body[:500]
    return resp.json()


def find(session, selector: str, **params) -> dict:
    return get(session, "/api/v1/find", selector=selector, mode="agent-turn", **params)


def one(session, selector: str) -> dict:
    found = find(session, selector)
    assert found["count"] == 1, found
    return found["matches"][0]


def test_find_answers_what_a_selector_matches_with_ids_boxes_and_ambiguity(page):
    add = one(page, 'button[name="Add item"]')
    assert add["id"].startswith("a0-") and add["source"] == "cdp" and add["visibility"] == "visible"
    assert len(add["bbox"]) == 4 and add["bbox"][2] > 0
    # Its parent is the region it sits in; the region's root is the browser's window.
    actions = one(page, 'region[name="Actions"]')
    assert add["parent"] == actions["id"]
    assert [m["name"] for m in find(page, 'region[name="Actions"] > button')["matches"]] == [
        "Add item", "Hide banner", "Delete", "Mutate"]
    assert one(page, "button[source=cdp]:disabled")["name"] == "Delete"  # (Chromium's Back is disabled too)
    window = one(page, 'window[app="chromium"]')
    assert window["kind"] == "window" and window["id"] == add["window_id"]
    assert one(page, 'window[app="chromium"] button[name~="Add.*"]')["id"] == add["id"]
    both = find(page, 'region[name="Actions"] > *[interactive]')
    # All but Delete, which is disabled: nothing can be done with it.
    assert both["ambiguous"] and [m["name"] for m in both["matches"]] == ["Add item", "Hide banner", "Finish",
                                                                          "Mutate"]
    assert find(page, 'button[name="Nothing like it"]')["count"] == 0


def test_every_parent_is_an_element_of_the_same_scene(page):
    s = get(page, "/api/v1/scene", mode="agent-turn")
    ids = {e["id"] for e in s["ax"]}
    parents = [e["parent"] for e in s["ax"] if e["source"] == "cdp"]
    assert any(parents) and all(p is None or p in ids for p in parents)


def test_a_bad_selector_answers_a_structured_error(page):
    resp = http("GET", page.scene + "/api/v1/find?" + urllib.parse.urlencode({"selector": "button[colour=red]"}))
    assert resp.status == 400
    error = resp.json()["error"]
    assert error["code"] == "invalid_selector" and "colour" in error["message"]
    assert error["recoverable"] is True and "suggested_next_tool" in error and "context" in error


def test_a_regex_that_backtracks_without_end_answers_400_and_holds_up_nothing_else(page):
    """A selector's ~= is matched in a thread within a time budget (scene.toolset.patterns):
    with Python's re on the event loop, this find ran for minutes and the scene with it."""
    tab = next(t for t in page.tabs() if t["url"].endswith("toolset.html"))
    run_js(page, tab["id"], "document.getElementById('add').textContent = 'a'.repeat(40) + '!'")
    wait_until(lambda: find(page, 'button[name*="aaaaaaaaaaaaaaaaaaaa"]')["count"] == 1, 10, 0.2,
               what="the renamed button in the scene")
    query = urllib.parse.urlencode({"selector": 'button[name~="(a|aa)+"]', "mode": "agent-turn"})
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        slow = pool.submit(http, "GET", page.scene + "/api/v1/find?" + query)
        time.sleep(0.2)
        health = http("GET", page.scene + "/api/v1/health")
        health_done = time.monotonic()
        resp = slow.result()
        slow_done = time.monotonic()
    assert resp.status == 400, resp.body[:300]
    error = resp.json()["error"]
    assert error["code"] == "regex_too_slow" and "(a|aa)+" in error["message"]
    assert health.status == 200 and health_done < slow_done
    # The scene goes on: the same page, another selector.
    assert find(page, 'button[name~="a{40}!"]')["count"] == 1


def test_observe_gives_a_token_then_only_what_changed(page, pages):
    full = get(page, "/api/v1/observe", mode="agent-turn")
    assert full["format"] == "full" and full["base_token"] is None and full["token"].startswith("o")
    banner = next(e for e in full["observation"]["elements"].values() if e["name"] == "Welcome banner")
    hide = one(page, 'button[name="Hide banner"]')
    post(page, "/api/v1/act", {"target": hide["id"]})
    pages.wait_for(type="click", target="hide")

    compact = get(page, "/api/v1/observe", mode="agent-turn", since=full["token"])
    assert compact["format"] == "compact" and compact["base_token"] == full["token"]
    assert compact["unchanged"] is False and compact["observation"] is None
    assert banner["id"] in [e["id"] for e in compact["changes"]["removed"]]

    # A JSON Patch applied to the first observation gives the state the answer hashes.
    patch = get(page, "/api/v1/observe", mode="agent-turn", since=full["token"], format="json-patch")
    assert {"op": "remove", "path": f"/elements/{banner['id']}"} in patch["changes"]
    assert tree_hash(apply_patch(full["observation"], patch["changes"])) == patch["tree_hash"]

    again = get(page, "/api/v1/observe", mode="agent-turn", since=patch["token"])
    assert again["unchanged"] is True and again["changes"]["removed"] == []


def test_a_patch_gives_the_new_state_when_elements_are_added_removed_relabelled_and_moved(page, pages):
    before = get(page, "/api/v1/observe", mode="agent-turn")
    old = {e["name"]: e for e in before["observation"]["elements"].values() if e["source"] == "cdp"}
    act(page, one(page, "button[name=Mutate]")["id"], "click")
    pages.wait_for(type="click", target="mutate")
    post(page, "/api/v1/wait_for", {"any_of": [{"type": "element_appears", "selector": "button[name=Fresh]"}]})
    patch = get(page, "/api/v1/observe", mode="agent-turn", since=before["token"], format="json-patch")
    new = apply_patch(before["observation"], patch["changes"])
    assert tree_hash(new) == patch["tree_hash"]
    names = {e["name"]: e for e in new["elements"].values() if e["source"] == "cdp"}
    assert "Fresh" in names and "Delete" not in names
    assert names["Done"]["id"] == old["Finish"]["id"]              # relabelled: the same element
    assert names["Agree"]["bbox"][0] > old["Agree"]["bbox"][0]    # moved right
    compact = get(page, "/api/v1/observe", mode="agent-turn", since=before["token"])["changes"]
    assert "Fresh" in [e["name"] for e in compact["added"]]
    assert "Delete" in [e["name"] for e in compact["removed"]]
    changed = {c["id"]: c["fields"] for c in compact["changed"]}
    assert changed[old["Finish"]["id"]]["name"] == {"from": "Finish", "to": "Done"}
    assert "bbox" in changed[old["Agree"]["id"]]


def test_an_unknown_token_is_a_clear_error(page):
    resp = http("GET", page.scene + "/api/v1/observe?since=o999999")
    assert resp.status == 404 and resp.json()["error"]["code"] == "unknown_token"


def test_wait_for_says_which_condition_matched_and_when(page, pages):
    add = one(page, 'button[name="Add item"]')
    post(page, "/api/v1/act", {"target": add["id"], "settle_ms": 0})
    # The item appears 400 ms after the click.
    out = post(page, "/api/v1/wait_for", {"any_of": [
        {"type": "element_appears", "selector": 'button[name="Never there"]'},
        {"type": "element_appears", "selector": 'list[name=Items] > text[name="Item 1"]'},
    ], "timeout_ms": 10_000, "poll_ms": 100})
    assert out["matched"] is True and out["matched_index"] == 1 and out["polls"] >= 1
    assert out["observed"]["count"] == 1 and out["elapsed_ms"] < 10_000

    finish = one(page, 'link[name="Finish"]')
    post(page, "/api/v1/act", {"target": finish["id"], "settle_ms": 0})
    url = post(page, "/api/v1/wait_for", {"any_of": [{"type": "url_matches", "regex": "#done$"}]})
    assert url["matched"] is True and url["observed"]["url"].endswith("#done")

    idle = post(page, "/api/v1/wait_for", {"any_of": [{"type": "screen_idle", "quiet_ms": 500}],
                                           "timeout_ms": 10_000})
    assert idle["matched"] is True and idle["observed"]["still_ms"] >= 500


def test_wait_for_times_out_with_what_it_last_saw(page):
    out = post(page, "/api/v1/wait_for", {"any_of": [{"type": "element_appears", "selector": "button[name=Never]"},
                                                     {"type": "window_appears", "title_regex": "^No such$"}],
                                          "timeout_ms": 600, "poll_ms": 100})
    assert out["matched"] is False and out["matched_index"] is None and out["polls"] >= 2
    assert out["elapsed_ms"] >= 600 and out["last_observed"][0]["count"] == 0
    assert any(w["app"] == "chromium" for w in out["last_observed"][1]["windows"])


def wait(session, condition: dict, timeout_ms: int = 10_000) -> dict:
    return post(session, "/api/v1/wait_for", {"any_of": [condition], "timeout_ms": timeout_ms, "poll_ms": 100})


def test_every_wait_condition_matches_and_times_out(page, pages):
    missed = lambda c: wait(page, c, 300)  # noqa: E731
    banner = one(page, 'text[name="Welcome banner"]')
    email = one(page, "textbox[name=Email]")
    # A token taken once the page's tree holds still: a page just loaded (this test may
    # come first in a random order) still changes, and tree_changes then matches.
    def still_token() -> str | None:
        token = get(page, "/api/v1/observe", mode="agent-turn")["token"]
        time.sleep(0.5)
        return token if get(page, "/api/v1/observe", since=token, mode="agent-turn")["unchanged"] else None

    token = wait_until(still_token, 20, 0.2, what="the page's tree holding still")
    browser = email["window_id"]
    timeouts = [
        {"type": "element_appears", "selector": "button[name=Never]"},
        {"type": "element_disappears", "selector": 'text[name="Welcome banner"]'},
        {"type": "element_disappears", "element_id": banner["id"]},
        {"type": "text_visible", "text": "zqxw nowhere"},
        {"type": "text_visible", "regex": "zqxw.*", "mode": "ocr"},
        {"type": "window_appears", "title_regex": "^No such window$"},
        {"type": "window_disappears", "window_id": browser},
        {"type": "url_matches", "regex": "#never$"},
        {"type": "tree_changes", "since": token},
        {"type": "focus_changes"},
        {"type": "screen_idle", "quiet_ms": 5000},
    ]
    for condition in timeouts:
        out = missed(condition)
        assert out["matched"] is False and out["polls"] >= 1 and out["elapsed_ms"] >= 300, (condition, out)

    assert wait(page, {"type": "text_visible", "text": "WELCOME banner"})["observed"]["where"] == "tree"
    ocr = wait(page, {"type": "text_visible", "regex": "Welcome ban+er", "mode": "ocr"})
    assert ocr["matched"] and "Welcome" in ocr["observed"]["line"]
    # The focus changes while the wait runs (from what its first look saw).
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(wait, page, {"type": "focus_changes"})
        time.sleep(0.5)
        act(page, email["id"], "click", settle_ms=0)
        focus = waiting.result()
    assert focus["matched"] and focus["observed"]["focused_element"]["to"] == email["id"]
    assert wait(page, {"type": "tree_changes", "since": token})["matched"]
    act(page, one(page, 'button[name="Hide banner"]')["id"], "click", settle_ms=0)
    assert wait(page, {"type": "element_disappears", "element_id": banner["id"]})["matched"]
    assert wait(page, {"type": "element_disappears", "selector": 'text[name="Welcome banner"]'})["matched"]
    act(page, one(page, 'button[name="Add item"]')["id"], "click", settle_ms=0)
    assert wait(page, {"type": "text_visible", "regex": r"Item \d"})["matched"]


def test_windows_appearing_and_going_are_waited_for(single):
    app = Process(single, [SYSTEM_PYTHON, str(GTK_APP), "--title", "waited-for window"])
    try:
        came = wait(single, {"type": "window_appears", "title_regex": "^waited-for window$"}, 30_000)
        assert came["matched"] and came["observed"]["matched"]
        uid = came["observed"]["matched"][0]
    finally:
        app.stop()
    went = wait(single, {"type": "window_disappears", "window_id": uid}, 30_000)
    assert went["matched"] and went["observed"]["matched"] == []


def test_every_assert_predicate_passes_and_fails(page):
    saved = post(page, "/api/v1/snapshots", {"screenshot": True, "mode": "agent-turn"})
    black = io.BytesIO()
    Image.new("RGB", (1280, 800), "black").save(black, "PNG")
    browser = one(page, 'window[app="chromium"]')
    cases = [
        ({"kind": "element_exists", "selector": "checkbox[name=Agree]"}, True),
        ({"kind": "element_exists", "selector": "checkbox[name=Disagree]"}, False),
        ({"kind": "element_absent", "selector": "checkbox[name=Disagree]"}, True),
        ({"kind": "element_absent", "selector": "button[name=Delete]"}, False),
        ({"kind": "value_equals", "selector": "textbox[name=Email]", "expected": "me@example.com"}, True),
        ({"kind": "value_equals", "selector": "textbox[name=Email]", "expected": "you@example.com"}, False),
        ({"kind": "value_matches", "selector": "textbox[name=Email]", "regex": r".+@example\.com"}, True),
        ({"kind": "value_matches", "selector": "textbox[name=Email]", "regex": r".+@example\.org"}, False),
        ({"kind": "text_visible", "text": "welcome BANNER"}, True),
        ({"kind": "text_visible", "regex": "^Goodbye"}, False),
        ({"kind": "window_focused", "app": "chromium"}, True),
        ({"kind": "window_focused", "title_regex": "^No such$"}, False),
        ({"kind": "window_exists", "window_id": browser["id"]}, True),
        ({"kind": "window_exists", "app": "gimp"}, False),
        ({"kind": "tree_hash_equals", "expected_hash": saved["tree_hash"]}, True),
        ({"kind": "tree_hash_equals", "expected_hash": "0" * 16}, False),
        ({"kind": "screenshot_similar", "snapshot": saved["id"], "min_ssim": 0.98}, True),
        ({"kind": "screenshot_similar", "reference_png": base64.b64encode(black.getvalue()).decode()}, False),
    ]
    out = post(page, "/api/v1/assert_state", {"predicates": [p for p, _ in cases], "mode": "agent-turn"})
    assert [r["passed"] for r in out["results"]] == [want for _, want in cases], out["results"]
    assert out["all_passed"] is False
    assert out["results"][5]["observed"]["value"] == "me@example.com"
    assert out["results"][17]["observed"]["ssim"] < 0.5
    assert "reference_png" not in out["results"][17]["args"]


def test_assert_state_answers_each_predicate_with_what_it_saw(page):
    out = post(page, "/api/v1/assert_state", {"predicates": [
        {"kind": "value_equals", "selector": "textbox[name=Email]", "expected": "me@example.com"},
        {"kind": "value_matches", "selector": "textbox[name=Email]", "regex": r".+@example\.org"},
        {"kind": "element_exists", "selector": "checkbox[name=Agree]"},
        {"kind": "element_absent", "selector": "button[name=Delete]"},
        {"kind": "text_visible", "text": "welcome BANNER"},
        {"kind": "window_focused", "app": "chromium"},
    ], "mode": "agent-turn"})
    assert [r["passed"] for r in out["results"]] == [True, False, True, False, True, True]
    assert out["all_passed"] is False
    assert out["results"][1]["observed"]["value"] == "me@example.com"
    assert out["results"][3]["observed"]["count"] == 1


def test_a_snapshot_expires_after_its_time_to_live(page):
    saved = post(page, "/api/v1/snapshots", {"ttl_s": 0.5})
    assert get(page, f"/api/v1/snapshots/{saved['id']}")["id"] == saved["id"]
    time.sleep(0.8)
    gone = http("GET", page.scene + f"/api/v1/snapshots/{saved['id']}")
    assert gone.status == 410 and gone.json()["error"]["code"] == "snapshot_expired"
    assert saved["id"] not in [s["id"] for s in get(page, "/api/v1/snapshots")["snapshots"]]


def test_snapshots_save_diff_compare_pixels_and_expire(page, pages):
    saved = post(page, "/api/v1/snapshots", {"label": "before", "screenshot": True, "mode": "agent-turn"})
    assert saved["id"].startswith("s") and saved["summary"]["elements"] > 5 and saved["screenshots"] == [0]
    same = post(page, "/api/v1/assert_state", {"predicates": [
        {"kind": "screenshot_similar", "snapshot": saved["id"], "min_ssim": 0.98}]})
    assert same["all_passed"], same

    post(page, "/api/v1/act", {"target": one(page, 'button[name="Hide banner"]')["id"]})
    pages.wait_for(type="click", target="hide")
    diff = post(page, "/api/v1/snapshots/diff", {"a": saved["id"], "b": "now"})
    assert diff["unchanged"] is False
    assert "Welcome banner" in [e["name"] for e in diff["changes"]["removed"]]
    assert get(page, f"/api/v1/snapshots/{saved['id']}")["observation"]["elements"]
    assert saved["id"] in [s["id"] for s in get(page, "/api/v1/snapshots")["snapshots"]]

    assert http("DELETE", page.scene + f"/api/v1/snapshots/{saved['id']}").json() == {"dropped": True}
    gone = http("GET", page.scene + f"/api/v1/snapshots/{saved['id']}")
    assert gone.status == 410 and gone.json()["error"]["code"] == "snapshot_expired"


def test_actions_that_observe_answer_the_receipt_and_the_change(page, pages):
    hide = one(page, 'button[name="Hide banner"]')
    out = post(page, "/api/v1/act_and_observe", {"target": hide["id"]})
    assert out["receipt"]["ok"] and out["receipt"]["target"]["id"] == hide["id"]
    assert "Welcome banner" in [e["name"] for e in out["changes"]["removed"]]

    email = one(page, "textbox[name=Email]")
    post(page, "/api/v1/act", {"target": email["id"], "action": "click"})
    post(page, "/api/v1/key_and_observe", {"keys": "ctrl+a"})
    typed = post(page, "/api/v1/type_and_observe", {"text": "new@example.org", "since": out["token"]})
    pages.wait_for(type="input", target="email", value="new@example.org")
    assert typed["base_token"] == out["token"] and typed["receipt"]["action"] == "type"
    change = next(c for c in typed["changes"]["changed"] if c["id"] == email["id"])
    assert change["fields"]["value"] == {"from": "me@example.com", "to": "new@example.org"}


def test_bad_toolset_requests_are_refused_before_anything_happens(page):
    for path, body, code in [
        ("/api/v1/wait_for", {"any_of": []}, "validation_error"),
        ("/api/v1/wait_for", {"any_of": [{"type": "element_appears", "selector": "button["}]}, "invalid_selector"),
        ("/api/v1/wait_for", {"any_of": [{"type": "tree_changes", "since": "o999999"}]}, "unknown_token"),
        ("/api/v1/assert_state", {"predicates": [{"kind": "no_such_kind"}]}, "validation_error"),
        ("/api/v1/snapshots/diff", {"a": "s999999"}, "unknown_snapshot"),
    ]:
        resp = http("POST", page.scene + path, body)
        assert 400 <= resp.status < 500 and resp.json()["error"]["code"] == code, (path, resp.body[:300])


def act(session, target: str, action: str, status: int = 200, **extra) -> dict:
    return post(session, "/api/v1/act", {"target": target, "action": action, **extra}, status)


def test_select_picks_an_option_by_name_or_index(page, pages):
    size = one(page, "combobox[name=Size]")
    assert act(page, size["id"], "select", option="large")["ok"]  # (any case)
    pages.wait_for(type="change", target="size", value="Large")
    act(page, size["id"], "select", option_index=0)
    pages.wait_for(type="change", target="size", value="Small")
    refused = act(page, size["id"], "select", 409, option="Huge")["error"]
    assert refused["code"] == "no_such_option" and "Medium" in refused["message"]


def test_invoke_runs_the_default_action_without_the_pointer(page, pages):
    where = http("GET", page.desktopd + "/api/v1/pointer").json()
    receipt = act(page, one(page, 'button[name="Hide banner"]')["id"], "invoke")
    pages.wait_for(type="click", target="hide")
    assert receipt["ok"] and http("GET", page.desktopd + "/api/v1/pointer").json() == where
    assert find(page, 'text[name="Welcome banner"]')["count"] == 0


def test_clear_text_and_key_go_to_the_element_with_real_keys(page, pages):
    email = one(page, "textbox[name=Email]")["id"]
    act(page, email, "key", keys=["End", "x"])
    pages.wait_for(type="input", target="email", value="me@example.comx")
    act(page, email, "clear_text")
    pages.wait_for(type="input", target="email", value="")
    assert one(page, "textbox[name=Email]")["value"] is None


def test_drag_moves_a_slider_to_a_point_and_takes_one_end(page, pages):
    slider = one(page, "slider[name=Volume]")
    x, y, w, h = slider["bbox"]
    act(page, slider["id"], "drag", to={"point": [x + w + 40, y + h / 2]})
    pages.wait_for(type="change", target="volume", value="100")
    email = one(page, "textbox[name=Email]")
    refused = act(page, slider["id"], "drag", 400, to={"point": [1, 2], "target": email["id"]})
    assert refused["error"]["code"] == "validation_error"


def test_a_sketch_and_a_description_of_the_browser_window(page):
    add = one(page, 'button[name="Add item"]')
    drawn = get(page, "/api/v1/sketch", window=add["window_id"], cols=160, mode="agent-turn")
    text = drawn["sketch"]
    assert text.splitlines()[0].startswith("chromium window")
    assert f"{add['id']} button Add item" in text or add["id"] in [m["id"] for m in drawn["legend"]]
    assert drawn["elements"] > 5 and len(text.splitlines()[1]) == 160
    said = get(page, "/api/v1/description", window=add["window_id"])["text"]
    assert said.startswith("chromium window") and f"button 'Add item' [{add['id']}]" in said
    # In reading order: the banner's buttons come before the form's fields.
    assert said.index("'Add item'") < said.index("'Hide banner'") < said.index("textbox 'Email'")
    refused = http("GET", page.scene + "/api/v1/sketch?window=nope")
    assert refused.status == 400 and refused.json()["error"]["code"] == "unknown_window"


# -- a GTK app ---------------------------------------------------------------------------

SYSTEM_PYTHON = "/usr/bin/python3"
GTK_APP = ROOT / "tests" / "apps" / "gtk3_buttons.py"


@pytest.fixture
def gtk_app(single):
    app = Process(single, [SYSTEM_PYTHON, str(GTK_APP), "--combo", "--title", "toolset GTK fixture"])
    app.wait_for(event="ready", timeout=30)
    wait_until(lambda: find(single, 'window[name="toolset GTK fixture"] button[name=Alpha]')["count"] == 1, 30,
               what="the GTK fixture in the Scene")
    yield app
    app.stop()


def gtk(session, selector: str) -> dict:
    return one(session, f'window[name="toolset GTK fixture"] {selector}')


def test_a_native_elements_parent_holds_it(single, gtk_app):
    # (The GTK fixture's widgets sit in unnamed boxes, which are no elements: their parent
    # is their window. Chromium's own UI nests: a tab's Close button is in its tab.)
    s = get(single, "/api/v1/scene", mode="agent-turn")
    by_id = {e["id"]: e for e in s["ax"]}
    native = [e for e in s["ax"] if e["source"] == "atspi" and e["bbox"] is not None]
    assert [e for e in native if e["name"] == "Alpha"][0]["parent"] is None
    nested = [e for e in native if e["parent"] is not None]
    assert any(by_id[e["parent"]]["role"] == "tab" for e in nested), nested
    for e in nested:
        parent = by_id[e["parent"]]
        (x, y, w, h), (px, py, pw, ph) = e["bbox"], parent["bbox"]
        assert px - 1 <= x and py - 1 <= y and x + w <= px + pw + 1 and y + h <= py + ph + 1, (e, parent)


def test_select_invoke_and_clear_text_on_a_gtk_app(single, gtk_app):
    act(single, gtk(single, "button[name=Beta]")["id"], "invoke")
    gtk_app.wait_for(event="click", widget="Beta")
    name = gtk(single, "textbox[name=Name]")["id"]
    act(single, name, "type", text="hello")
    gtk_app.wait_for(event="text", widget="Name", text="hello")
    act(single, name, "clear_text")
    gtk_app.wait_for(event="text", widget="Name", text="")
    size = gtk(single, "combobox[name=Size]")["id"]
    act(single, size, "select", option="Large")
    gtk_app.wait_for(event="select", widget="Size", value="Large")
    act(single, size, "select", option_index=1)
    gtk_app.wait_for(event="select", widget="Size", value="Medium")


def test_observe_can_answer_the_prompt_text_with_its_token(page):
    out = get(page, "/api/v1/observe", text=1, observation=0)
    assert out["format"] == "full" and out["observation"] is None and out["token"].startswith("o")
    assert "Add item" in out["text"] and "a0-" in out["text"]
