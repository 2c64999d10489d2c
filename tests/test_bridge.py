"""The CDP bridge against a real Chromium: boxes equal what the page measures, in the
frame each field claims, through scrolling, iframes and shadow roots; and it survives
Chromium dying."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import jsonschema
import pytest

from tests.support import ROOT, Session, http, load_jsonc, run_js, wait_until

pytestmark = pytest.mark.desktop

SCHEMA = load_jsonc(ROOT / "layout_schema.jsonc")


@pytest.fixture(scope="module")
def browser():
    session = Session(["1280x800"]).start()
    session.browser_window()
    yield session
    session.stop()


def get_layout(session: Session, query: str = "", *, sample: int | None = None) -> dict:
    """GET /layout, validated against layout_schema.jsonc (every node, or for huge pages
    the first ``sample`` nodes: jsonschema takes seconds per ten thousand nodes)."""
    resp = http("GET", session.bridge + "/layout" + query, timeout=120)
    assert resp.status == 200, resp.body[:500]
    body = resp.json()
    if sample is None:
        jsonschema.validate(body, SCHEMA)
    else:
        for tab in body["tabs"]:
            trimmed = {**tab, "layout": tab["layout"] and {**tab["layout"], "nodes": tab["layout"]["nodes"][:sample]}}
            jsonschema.validate({"tabs": [trimmed]}, SCHEMA)
    return body


def tab_layout(session: Session, tab_id: str, query: str = "", *, sample: int | None = None) -> dict:
    body = get_layout(session, f"?tab={tab_id}" + query, sample=sample)
    (tab,) = body["tabs"]
    assert tab["error"] is None, tab["error"]
    return tab


TEXT_ROLES = {"StaticText", "InlineTextBox"}


def by_name(tab: dict, name: str) -> list[dict]:
    """Nodes of elements with that accessible name (not the text nodes inside them)."""
    return [n for n in tab["layout"]["nodes"]
            if (n.get("name") or {}).get("value") == name and n["role"]["value"] not in TEXT_ROLES]


def one(tab: dict, name: str) -> dict:
    found = [n for n in by_name(tab, name) if not n["ignored"]]
    assert len(found) == 1, f"{name!r}: {len(found)} nodes"
    return found[0]


def assert_box(box: dict, x: float, y: float, w: float, h: float) -> None:
    assert abs(box["x"] - x) <= 1 and abs(box["y"] - y) <= 1, (box, (x, y))
    assert abs(box["width"] - w) <= 1 and abs(box["height"] - h) <= 1, (box, (w, h))


@pytest.fixture
def frames(browser, pages):
    pages.clear()
    tab = browser.open_page(pages.url("frames.html"))
    report = pages.wait_for(type="load", page="/frames.html", timeout=20)
    # The cross-origin frame's renderer must have attached before its boxes are asked.
    wait_until(lambda: len(tab_layout(browser, tab["id"])["layout"]["frames"]) == 3, 20, what="all three frames")
    return tab, report


def test_health_names_the_chromium_process(browser):
    health = http("GET", browser.bridge + "/health").json()
    assert health["status"] == "ok" and health["chromium_pid"] == browser.browser_window()["pid"]


def test_boxes_equal_what_the_page_measures(browser, frames):
    tab, report = frames
    layout = tab_layout(browser, tab["id"])
    rects = report["rects"]
    for element, name in [("top", "Top button"), ("far", "Far link"), ("field", "Field"), ("shadowed", "In shadow")]:
        r = rects[element]
        node = one(layout, name)
        assert_box(node["bounds"], r["x"], r["y"], r["w"], r["h"])
        assert_box(node["bounds"]["borderBox"], r["x"], r["y"], r["w"], r["h"])
        assert_box(node["viewportBounds"], r["x"], r["y"], r["w"], r["h"])  # not scrolled


def test_hidden_and_zero_size_elements_have_no_bounds(browser, frames):
    tab, _ = frames
    layout = tab_layout(browser, tab["id"])
    assert all(n["bounds"] is None for n in by_name(layout, "Hidden"))
    zero = by_name(layout, "Zero")
    assert zero and all(n["bounds"] is None and n["viewportBounds"] is None for n in zero)


def test_same_and_cross_origin_iframes_are_merged_with_their_offsets(browser, frames):
    tab, report = frames
    layout = tab_layout(browser, tab["id"])
    inner = sorted((n for n in by_name(layout, "Inner button") if not n["ignored"]), key=lambda n: n["bounds"]["x"])
    assert len(inner) == 2
    for node, frame_element in zip(inner, ["same", "cross"]):
        r = report["rects"][frame_element]
        # The frame's document starts inside its 5 px border and 3 px padding.
        assert_box(node["bounds"], r["x"] + 8 + 30, r["y"] + 8 + 50, 110, 32)
    kinds = {f["url"].split("?from=")[-1]: f["outOfProcess"] for f in layout["layout"]["frames"][1:]}
    assert kinds == {"same": False, "cross": True}
    assert len({n["nodeId"] for n in layout["layout"]["nodes"]}) == len(layout["layout"]["nodes"])


def test_a_scrolled_page_keeps_document_boxes_and_moves_viewport_boxes(browser, pages, frames):
    tab, report = frames
    resp = http("POST", browser.bridge + "/navigate", {"tab": tab["id"], "url": pages.url("frames.html#far")})
    assert resp.status == 200
    layout = wait_until(lambda: (t := tab_layout(browser, tab["id"]))["layout"]["window"]["scrollY"] > 0 and t,
                        what="the page to scroll")
    scroll_y = layout["layout"]["window"]["scrollY"]
    assert layout["layout"]["viewport"]["visualViewport"]["y"] == scroll_y
    far, top = report["rects"]["far"], report["rects"]["top"]
    far_node, top_node = one(layout, "Far link"), one(layout, "Top button")
    assert_box(far_node["bounds"], far["x"], far["y"], far["w"], far["h"])
    assert_box(far_node["viewportBounds"], far["x"], far["y"] - scroll_y, far["w"], far["h"])
    assert_box(top_node["viewportBounds"], top["x"], top["y"] - scroll_y, top["w"], top["h"])
    inner = min((n for n in by_name(layout, "Inner button") if not n["ignored"]), key=lambda n: n["bounds"]["x"])
    same = report["rects"]["same"]
    assert_box(inner["viewportBounds"], same["x"] + 38, same["y"] + 58 - scroll_y, 110, 32)


def test_tab_filter_interesting_nodes_and_bad_parameters(browser, frames):
    tab, _ = frames
    full = tab_layout(browser, tab["id"])
    interesting = tab_layout(browser, tab["id"], "&interesting=1")
    assert not any(n["ignored"] for n in interesting["layout"]["nodes"])
    assert len(interesting["layout"]["nodes"]) < len(full["layout"]["nodes"])
    resp = http("GET", browser.bridge + "/layout?tab=NOSUCHTAB")
    assert resp.status == 404 and resp.json()["error"]["code"] == "unknown_tab"
    resp = http("GET", browser.bridge + "/layout?interesting=maybe")
    assert resp.status == 400 and resp.json()["error"]["code"] == "validation_error"
    resp = http("GET", browser.bridge + "/layout?colour=red")
    assert resp.status == 400


def test_tabs_can_be_opened_activated_closed_and_navigated(browser, pages, frames):
    tab, _ = frames
    created = http("POST", browser.bridge + "/tabs", {"action": "new", "url": pages.url("input.html")}).json()
    assert any(t["id"] == created["id"] for t in http("GET", browser.bridge + "/tabs").json())
    assert wait_until(lambda: tab_layout(browser, created["id"])["active"], what="the new tab in front")
    http("POST", browser.bridge + "/tabs", {"action": "activate", "id": tab["id"]})
    assert wait_until(lambda: tab_layout(browser, tab["id"])["active"] and not tab_layout(browser, created["id"])["active"],
                      what="the first tab in front again")
    assert http("POST", browser.bridge + "/navigate", {"tab": created["id"], "url": pages.url("big.html?n=50")}).status == 200
    wait_until(lambda: "big.html" in tab_layout(browser, created["id"])["url"], what="navigation")
    assert http("POST", browser.bridge + "/tabs", {"action": "close", "id": created["id"]}).status == 200
    wait_until(lambda: all(t["id"] != created["id"] for t in http("GET", browser.bridge + "/tabs").json()), what="close")
    bad = http("POST", browser.bridge + "/tabs", {"action": "close"})
    assert bad.status == 400 and bad.json()["error"]["code"] == "validation_error"
    assert http("POST", browser.bridge + "/tabs", {"action": "close", "id": "NOSUCHTAB"}).status == 404
    assert http("POST", browser.bridge + "/navigate", {"tab": "NOSUCHTAB", "url": "about:blank"}).status == 404


def test_concurrent_layouts_agree(browser, frames):
    tab, _ = frames
    results: list[dict] = []

    def fetch() -> None:
        results.append(tab_layout(browser, tab["id"]))

    threads = [threading.Thread(target=fetch) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6
    first = [(n["nodeId"], n["bounds"]) for n in results[0]["layout"]["nodes"]]
    assert all([(n["nodeId"], n["bounds"]) for n in r["layout"]["nodes"]] == first for r in results)


def test_a_20000_node_page_completes(browser, pages):
    pages.clear()
    tab = browser.open_page(pages.url("big.html?n=20000"))
    report = pages.wait_for(type="load", page="/big.html", timeout=60)
    assert report["count"] >= 20000
    layout = tab_layout(browser, tab["id"], sample=500)
    boxed = [n for n in layout["layout"]["nodes"] if n["bounds"] is not None]
    assert len(layout["layout"]["nodes"]) > 20000 and len(boxed) > 10000
    button = one(layout, "Button 9996")
    assert button["bounds"]["y"] > 10000  # far down the page, document-relative


def layout_and_path(session: Session, tab_id: str, query: str = "") -> tuple[dict, str]:
    resp = http("GET", session.bridge + f"/layout?tab={tab_id}" + query, timeout=120)
    assert resp.status == 200, resp.body[:500]
    (tab,) = resp.json()["tabs"]
    assert tab["error"] is None, tab["error"]
    return tab["layout"], resp.headers["x-deskbox-layout"]


# Changes made in the page, each followed by a layout that must equal a fresh full read.
# "{doc}" is the main document or the same-origin iframe's.
CHANGES = [
    ("add", "{doc}.getElementById('box').insertAdjacentHTML('beforeend', "
            "'<button id=\"b2\">Second</button><a href=\"#x\" id=\"l2\">A link</a>')"),
    ("rename", "{doc}.getElementById('b1').textContent = 'Renamed button'"),
    ("relabel", "{doc}.getElementById('b2').setAttribute('aria-label', 'Labelled')"),
    ("move", "{doc}.getElementById('box2').appendChild({doc}.getElementById('l2'))"),
    ("label text", "{doc}.getElementById('lab').firstChild.data = 'New field name'"),
    ("hide", "{doc}.getElementById('b1').style.display = 'none'"),
    ("show", "{doc}.getElementById('b1').style.display = ''"),
    ("remove", "{doc}.getElementById('b2').remove()"),
    ("focus", "{doc}.getElementById('f1').focus()"),
    ("type", "(() => { const f = {doc}.getElementById('f1'); f.value = 'typed'; "
             "f.dispatchEvent(new Event('input', {bubbles: true})); })()"),
    ("resize", "{doc}.getElementById('box').style.paddingTop = '40px'"),
    ("append to body", "{doc}.body.insertAdjacentHTML('beforeend', '<p id=\"toast\">Saved <b>now</b></p>')"),
    ("remove from body", "{doc}.getElementById('toast').remove()"),
]
SETUP = ("{doc}.body.insertAdjacentHTML('beforeend', '<div id=\"box\" style=\"position:absolute;left:10px;top:700px\">"
         "<button id=\"b1\">First</button><label id=\"lab\" for=\"f1\">Field name</label><input id=\"f1\"></div>"
         "<div id=\"box2\" style=\"position:absolute;left:10px;top:900px\"></div>')")


def node_diff(kept: dict, fresh: dict) -> str:
    a = {n["nodeId"]: n for n in kept["nodes"]}
    b = {n["nodeId"]: n for n in fresh["nodes"]}
    changed = [(a[k], b[k]) for k in a.keys() & b.keys() if a[k] != b[k]]
    other = [k for k in kept if k != "nodes" and kept[k] != fresh[k]]
    return (f"only kept {sorted(a.keys() - b.keys())[:8]}, only fresh {sorted(b.keys() - a.keys())[:8]}, "
            f"changed {changed[:2]}, order same {list(a) == list(b)}, other keys {other}")


@pytest.mark.parametrize("where", ["main frame", "same-origin iframe"])
def test_a_kept_tree_patched_after_changes_equals_a_fresh_read(browser, frames, where):
    tab, _ = frames
    doc = "document" if where == "main frame" else "document.getElementById('same').contentDocument"
    run_js(browser, tab["id"], SETUP.replace("{doc}", doc))
    layout_and_path(browser, tab["id"], "&fresh=1")
    paths = []
    for name, change in CHANGES:
        run_js(browser, tab["id"], change.replace("{doc}", doc))
        kept, path = layout_and_path(browser, tab["id"])
        fresh, fresh_path = layout_and_path(browser, tab["id"], "&fresh=1")
        assert fresh_path == "full"
        assert kept == fresh, f"after {name!r}: the kept tree differs from a fresh read: {node_diff(kept, fresh)}"
        paths.append(path)
    # Every change was patched in (by the request or by the refresh the page's report
    # started), not read whole again: or the test would prove little.
    assert all(path in ("warm", "cache") for path in paths), list(zip([c[0] for c in CHANGES], paths))


# On a page without same-process frames the boxes of a patched tree come from what the
# page measured: the changes above, and ones that move much of the page, only text, an
# element with user-agent shadow content, a transformed element, shadow DOM, list
# markers, bare text in a box that scrolls, and the scroll position (the fixed header
# moves in the document).
FLOW_CHANGES = [(name, change.replace("{doc}", "document")) for name, change in CHANGES] + [
    ("grow inline", "document.getElementById('bold').textContent = 'many more bold words '.repeat(12)"),
    ("insert above", "document.getElementById('main').insertAdjacentHTML('afterbegin', '<p>A banner</p>')"),
    ("move input", "document.getElementById('name').style.marginLeft = '30px'"),
    ("type more", "(() => { const f = document.getElementById('name'); f.value += ' and typed after'; "
                  "f.dispatchEvent(new Event('input', {bubbles: true})); })()"),
    ("turn", "document.getElementById('turned').style.transform = 'rotate(21deg)'"),
    ("shadow", "document.getElementById('host').shadowRoot.querySelector('p')"
               ".insertAdjacentHTML('afterbegin', '<b>New</b> ')"),
    ("list", "document.getElementById('list').insertAdjacentHTML('afterbegin', '<li>Zeroth item</li>')"),
    # (once its scroll event has come, as it has after a wheel: until then nothing the
    # bridge asks the page tells it anything moved)
    ("scroll a box", "new Promise(done => { const box = document.getElementById('scroller'); "
                     "box.addEventListener('scroll', done, {once: true}); box.scrollTop = 30; })"),
    ("scroll", "scrollTo(0, 120)"),
]
# Changes whose boxes need a snapshot: list items moved (the paragraph above grew by
# lines, a paragraph came above, an item came first) and their markers cannot be
# measured by the page. (What is typed into an input has no box in a snapshot either.)
SNAPSHOT_NEEDED = {"grow inline", "insert above", "list"}


@pytest.fixture
def flow(browser, pages):
    pages.clear()
    tab = browser.open_page(pages.url("flow.html"))
    pages.wait_for(type="load", page="/flow.html", timeout=20)
    return tab


def health(session: Session) -> dict:
    return http("GET", session.bridge + "/health").json()


def test_boxes_the_page_measured_equal_a_fresh_read(browser, flow):
    run_js(browser, flow["id"], SETUP.replace("{doc}", "document"))
    layout_and_path(browser, flow["id"], "&fresh=1")
    ways = {}
    checks = health(browser)["box_checks"]
    for name, change in FLOW_CHANGES:
        before = health(browser)["layouts"]
        run_js(browser, flow["id"], change)
        kept, _ = layout_and_path(browser, flow["id"])
        after = health(browser)["layouts"]
        fresh, _ = layout_and_path(browser, flow["id"], "&fresh=1")
        assert kept == fresh, f"after {name!r}: the patched tree differs from a fresh read: {node_diff(kept, fresh)}"
        # Patched (by the request, or by the refresh the page's report started), with
        # boxes from the page unless it could not tell; never read whole again.
        ways[name] = {k: after[k] - before[k] for k in after if after[k] != before[k]}
    assert all(w.get("measured") and not w.get("full") for n, w in ways.items() if n not in SNAPSHOT_NEEDED), str(ways)
    assert all(w.get("warm") and not w.get("full") for n, w in ways.items() if n in SNAPSHOT_NEEDED), str(ways)
    # The boxes were right as the page measured them: no check behind them (a snapshot
    # soon after) found one to put right, so none was hidden by a correction.
    assert health(browser)["box_checks"]["differed"] == checks["differed"]


def test_text_a_float_pushes_is_put_right_by_the_box_check(browser, flow):
    """A float that grows moves the lines of the paragraph beside it, not the paragraph:
    the page's own account of what moved misses that text, and the snapshot taken soon
    after a measured patch puts it right."""
    layout_and_path(browser, flow["id"], "&fresh=1")
    before = health(browser)
    run_js(browser, flow["id"], "document.getElementById('float').style.width = '300px'")
    layout_and_path(browser, flow["id"])
    wait_until(lambda: health(browser)["box_checks"]["run"] > before["box_checks"]["run"], 10, what="the box check")
    after = health(browser)
    assert after["layouts"]["measured"] > before["layouts"]["measured"]
    assert after["box_checks"]["differed"] > before["box_checks"]["differed"]
    checked, _ = layout_and_path(browser, flow["id"])
    fresh, _ = layout_and_path(browser, flow["id"], "&fresh=1")
    assert checked == fresh, node_diff(checked, fresh)


def test_an_element_added_hidden_then_shown_by_a_style_alone_is_patched_right(browser, flow):
    """A list added hidden under a patch with boxes from the page is in no snapshot's
    DOM yet; a style rule then shows it with no change of its own, and its items (and
    their markers) come into the AX tree and get boxes. The next answer has them, as a
    fresh read does, without waiting for a box check."""
    layout_and_path(browser, flow["id"], "&fresh=1")
    run_js(browser, flow["id"], "document.getElementById('main').insertAdjacentHTML('beforeend', "
                                "'<ul id=\"late\" style=\"display: none\"><li>Late item</li></ul>')")
    _, path = layout_and_path(browser, flow["id"])
    assert path == "measured"
    run_js(browser, flow["id"], "document.head.insertAdjacentHTML('beforeend', "
                                "'<style>#late { display: block !important }</style>')")
    shown, _ = layout_and_path(browser, flow["id"])
    fresh, _ = layout_and_path(browser, flow["id"], "&fresh=1")
    assert any((n.get("name") or {}).get("value") == "Late item" and n["bounds"] for n in fresh["nodes"])
    assert shown == fresh, node_diff(shown, fresh)


def test_an_unchanged_page_is_answered_from_the_kept_tree(browser, frames):
    tab, _ = frames
    first, _ = layout_and_path(browser, tab["id"])
    again, path = layout_and_path(browser, tab["id"])
    assert path in ("cache", "warm") and again == first
    ids = [n["nodeId"] for n in first["nodes"]]
    assert len(ids) == len(set(ids))
    assert not any(n["role"]["value"] == "InlineTextBox" for n in first["nodes"])
    known = set(ids)
    assert all(c in known for n in first["nodes"] for c in n.get("childIds", []))


def test_killing_chromium_recovers_with_its_tabs(browser, pages, frames):
    tab, _ = frames
    old = http("GET", browser.bridge + "/health").json()["chromium_pid"]
    os.killpg(old, signal.SIGKILL)
    answers: list = []

    def relaunched() -> bool:
        answers.append(h := http("GET", browser.bridge + "/health", timeout=5))
        return h.status == 200 and h.json()["chromium_pid"] not in (None, old)

    wait_until(relaunched, 60, what="Chromium relaunched")
    # While it was down, health said so with a 503 that says when to ask again.
    down = [a for a in answers if a.status == 503]
    assert down and all(a.headers.get("retry-after") for a in down), [(a.status, a.headers) for a in answers[:3]]
    body = wait_until(lambda: (b := get_layout(browser)) and any("frames.html" in t["url"] and t["layout"]
                                                                  for t in b["tabs"]) and b, 60,
                      what="the frames tab back with a layout")
    restored = next(t for t in body["tabs"] if "frames.html" in t["url"])
    assert one(restored, "Top button")["bounds"] is not None


def test_a_tab_closed_during_a_layout_fails_alone(browser, pages, frames):
    tab, _ = frames
    big = http("POST", browser.bridge + "/tabs", {"action": "new", "url": pages.url("big.html?n=5000")}).json()
    pages.wait_for(type="load", page="/big.html", timeout=60)
    http("POST", browser.bridge + "/tabs", {"action": "activate", "id": tab["id"]})
    results: list[dict] = []
    reader = threading.Thread(target=lambda: results.append(get_layout(browser, sample=200)))
    reader.start()
    time.sleep(0.3)
    http("POST", browser.bridge + "/tabs", {"action": "close", "id": big["id"]})
    reader.join()
    (body,) = results
    by_id = {t["id"]: t for t in body["tabs"]}
    assert by_id[tab["id"]]["error"] is None and one(by_id[tab["id"]], "Top button")["bounds"] is not None
    closed = by_id.get(big["id"])
    assert closed is None or closed["error"] is not None or closed["layout"]["nodes"]


def test_the_page_watch_script_records_what_changed_and_calls_its_binding_once_until_rearmed(browser):
    """deskbox/bridge/page/watch.js on its own in Chromium: under a key and a binding of
    the test's (the bridge's own copy runs in the page too, under its key)."""
    from deskbox.bridge import pagecalls

    script = (pagecalls._page_script("watch.js").replace("Symbol.for('deskbox.changes')", "Symbol.for('deskbox.test')")
              .replace("__BINDING__", "__deskboxTestChanged"))
    assert "deskbox.changes" not in script  # the key is the script's only link to the bridge's copy
    tab = browser.tabs()[0]["id"]
    # A blank page: the one another test left may go on changing its DOM on timers, and
    # its changes would be counted here (in a random order, a mutation too many).
    resp = http("POST", browser.bridge + "/navigate", {"tab": tab, "url": "about:blank"})
    assert resp.status == 200, resp.body[:300]
    result = run_js(browser, tab, """(async () => {
      document.body.innerHTML = '<div id=a></div><input type=radio name=g id=r1><input type=radio name=g id=r2>';
      const calls = [];
      window.__deskboxTestChanged = x => calls.push(x);
      const settle = () => new Promise(r => setTimeout(r, 50));
      await settle();
      """ + script + """
      const s = window[Symbol.for('deskbox.test')];
      const ids = set => [...set].map(n => n.id || n.nodeName).sort();
      const n0 = s.n;
      const p = document.createElement('p'); p.id = 'added'; document.getElementById('a').appendChild(p);
      await settle();
      const added = {n: s.n - n0, subtree: ids(s.subtree), children: ids(s.children), calls: calls.length};
      document.getElementById('a').setAttribute('title', 'changed');
      await settle();
      const again = {calls: calls.length, subtree: ids(s.subtree)};
      s.notified = false;  // the bridge re-arms it when it reads the page
      s.subtree.clear(); s.children.clear(); s.node.clear();
      document.getElementById('r2').dispatchEvent(new Event('input', {bubbles: true}));
      const radio = {calls: calls.length, subtree: ids(s.subtree), node: ids(s.node)};
      return JSON.stringify({added, again, radio});
    })()""")
    got = json.loads(result)
    assert got["added"] == {"n": 1, "subtree": ["added"], "children": ["a"], "calls": 1}, got
    assert got["again"] == {"calls": 1, "subtree": ["a", "added"]}, got  # recorded, not called again
    assert got["radio"] == {"calls": 2, "subtree": ["r2"], "node": ["r1", "r2"]}, got
