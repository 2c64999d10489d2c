"""The inspector in a real browser (Playwright on Debian's Chromium) against a real
session with a token: the page asks for the token and never puts it in an address;
hovering the fixture's button shows its Scene id; a search by name, by id and by selector
highlights the element at the box the Scene gives; typing into the page's field shows up
in the screenshot, the tree and the prompt text without a reload; the keyboard alone
finds and picks an element; the Observer API serves the same page at ``/`` and it works
through it.

With ``DESKBOX_DOCS_SHOTS=DIR`` (``make docs-shots``) the tour's picture of the page is
written to DIR/inspector.png."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.support import PageServer, Session, free_port, http, wait_until
from tests.support.firefox import Firefox

pytestmark = pytest.mark.desktop

TOKEN = secrets.token_hex(8) + "/+="  # (characters a URL and a subprotocol would both mangle)


@pytest.fixture(scope="module")
def session(pages: PageServer):
    s = Session(["1280x800"], extra_env={"DESKBOX_TOKEN": TOKEN},
                extra_args=["--observer", "--observer-port", str(free_port()), "--url", pages.url("input.html")])
    s.start()
    yield s
    s.stop()


def authed(method: str, url: str, body=None):
    return http(method, url, body, headers={"Authorization": f"Bearer {TOKEN}"})


def element(session: Session, role: str, name: str) -> dict:
    def find():
        scene = authed("GET", session.scene + "/api/v1/scene").json()
        return next((e for e in scene["ax"] if e["role"] == role and e["name"] == name and e["bbox"]), None)

    return wait_until(find, 30, what=f"{role} {name!r} in the scene")


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1500, "height": 900})
    p = context.new_page()
    errors: list[str] = []
    urls: list[str] = []
    p.on("pageerror", lambda exc: errors.append(str(exc)))
    p.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    p.on("request", lambda req: urls.append(req.url))
    p.on("websocket", lambda ws: urls.append(ws.url))
    p.urls = urls
    p.answers_expected = {401}  # (the browser notes an answer the page reads as an error)
    yield p
    context.close()
    # No script error, nothing the page's CSP blocked, no answer the test did not ask for.
    assert [e for e in errors if not any(f"status of {n}" in e for n in p.answers_expected)] == []
    assert not [u for u in urls if TOKEN in u or TOKEN.replace("/", "%2F") in u]


def logged_in(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("#login[open]")
    page.fill("#token", TOKEN)
    page.press("#token", "Enter")
    page.wait_for_function("() => document.getElementById('status').textContent === 'live'", timeout=30_000)
    page.wait_for_function("() => { const i = document.getElementById('shot'); return i.naturalWidth > 0; }")


def on_page(page, bbox: list[float]) -> tuple[float, float, float, float]:
    """Where a box in screenshot pixels is on the page, as the screenshot is shown. Read
    at once, from a loaded image: while the page swaps in a new screenshot, the image's
    natural width is 0 for a moment."""
    x, y, width, natural = page.evaluate("""async () => {
        const img = document.getElementById('shot');
        while (!(img.complete && img.naturalWidth > 0)) await new Promise((r) => setTimeout(r, 20));
        const r = img.getBoundingClientRect();
        return [r.x, r.y, r.width, img.naturalWidth];
    }""")
    k = width / natural
    return x + bbox[0] * k, y + bbox[1] * k, bbox[2] * k, bbox[3] * k


def highlighted_at_scene_box(session: Session, page, ident: str) -> bool:
    scene = authed("GET", session.scene + "/api/v1/scene").json()
    want = on_page(page, next(e["bbox"] for e in scene["ax"] if e["id"] == ident))
    box = page.locator("#found .box.current").bounding_box()
    return box is not None and all(abs(a - b) <= 2.5 for a, b in zip(
        (box["x"], box["y"], box["width"], box["height"]), want))


def hover(session: Session, page, role: str, name: str) -> dict:
    """Point at the element's centre, as the Scene has it now, until the page names it."""
    def pointed():
        e = element(session, role, name)
        x, y, w, h = on_page(page, e["bbox"])
        page.mouse.move(x + w / 2, y + h / 2)
        deadline = time.monotonic() + 2
        while shown_id(page) != e["id"] and time.monotonic() < deadline:
            time.sleep(0.05)
        return e if shown_id(page) == e["id"] else None

    return wait_until(pointed, 15, what=f"{role} {name!r}: its id in the details")


def shown_id(page) -> str:
    return page.get_attribute("#details", "data-id")


def test_the_page_asks_for_the_token_and_keeps_it_out_of_addresses(session, page):
    assert http("GET", session.scene + "/inspect").status == 200  # (the page itself holds nothing)
    assert http("GET", session.scene + "/api/v1/scene").status == 401
    page.goto(session.scene + "/inspect")
    page.wait_for_selector("#login[open]")
    page.fill("#token", "wrong")
    page.press("#token", "Enter")
    page.wait_for_function("() => document.getElementById('login-note').textContent === 'That is not the token.'")
    page.fill("#token", TOKEN)
    page.press("#token", "Enter")
    page.wait_for_function("() => document.getElementById('status').textContent === 'live'", timeout=30_000)
    assert any("/api/v1/scene/stream" in u for u in page.urls)  # (the stream, with the token in no address)


def test_hovering_the_button_shows_its_scene_id(session, page):
    logged_in(page, session.scene + "/inspect")
    submit = hover(session, page, "button", "Submit")
    assert page.text_content("#details [data-field=id]") == submit["id"]
    assert page.text_content("#details [data-field=name]") == "Submit"
    assert page.text_content("#details [data-field=source]").startswith("CDP")
    assert page.text_content("#details [data-field=selector]") == 'button[name="Submit"]'
    page.mouse.move(5, 5)  # (off the screen: nothing under the pointer, nothing picked)
    wait_until(lambda: shown_id(page) == "", 5, what="the details emptied")


def test_search_highlights_the_element_at_the_scenes_box(session, page):
    other = element(session, "button", "Other")
    logged_in(page, session.scene + "/inspect")
    for query in ("Other", other["id"], 'button[name="Other"]'):
        page.fill("#search", query)
        page.press("#search", "Enter")
        page.wait_for_function("(id) => { const b = document.querySelector('#found .box.current');"
                               " return b && b.dataset.id === id; }", arg=other["id"])
        # (The page follows the screen: compared with the Scene as it is now, until both agree.)
        wait_until(lambda: highlighted_at_scene_box(session, page, other["id"]), 10, what=f"{query}: the box")
        assert shown_id(page) == other["id"]  # (Enter picks the first match)
        assert page.locator(f'#tree .node.selected[data-id="{other["id"]}"]').count() == 1
    page.answers_expected.add(400)
    page.fill("#search", "button[name=")  # not a selector: the page says so and matches text
    page.press("#search", "Enter")
    page.wait_for_function("() => document.getElementById('search-note').textContent.startsWith('not a selector')")


def test_the_page_follows_the_screen_as_it_changes(session, page):
    field = element(session, "textbox", "")
    logged_in(page, session.scene + "/inspect")
    seq = int(page.text_content("#seq"))
    shot = page.get_attribute("#shot", "src")
    word = "inspected" + secrets.token_hex(3)
    done = authed("POST", session.scene + "/api/v1/act", {"target": field["id"], "action": "type", "text": word})
    assert done.status == 200, done.body[:300]
    page.wait_for_function("(w) => document.getElementById('text').textContent.includes(w)", arg=word,
                           timeout=20_000)
    page.wait_for_function("(w) => [...document.querySelectorAll('#tree .node')].some(n => n.textContent.includes(w))",
                           arg=word, timeout=20_000)
    assert int(page.text_content("#seq")) > seq
    assert page.get_attribute("#shot", "src") != shot  # (a new screenshot, without a reload)
    if os.environ.get("DESKBOX_DOCS_SHOTS"):
        page.fill("#search", "Submit")
        page.press("#search", "Enter")
        page.wait_for_selector("#found .box.current")
        page.screenshot(path=str(Path(os.environ["DESKBOX_DOCS_SHOTS"]) / "inspector.png"))


def test_the_keyboard_alone_finds_and_picks_elements(session, page):
    submit, other = element(session, "button", "Submit"), element(session, "button", "Other")
    logged_in(page, session.scene + "/inspect")
    page.locator("body").focus()
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "search"
    page.keyboard.type("Submit")
    page.keyboard.press("Enter")
    wait_until(lambda: shown_id(page) == submit["id"], 10, what="Submit picked")
    page.keyboard.press("ArrowDown")  # into the tree, at the first match
    assert page.evaluate("document.activeElement.dataset.id") == submit["id"]
    ids = page.evaluate("[...document.querySelectorAll('#tree .node[data-id]')].map(n => n.dataset.id)")
    page.keyboard.press("ArrowDown")
    after = ids[ids.index(submit["id"]) + 1]
    assert shown_id(page) == after and page.evaluate("document.activeElement.dataset.id") == after
    page.keyboard.press("Home")
    assert shown_id(page) == ids[0]
    assert other["id"] in ids
    page.locator("#copy-id").focus()
    assert page.evaluate("document.activeElement.id") == "copy-id"


def test_the_observer_serves_the_same_page_at_its_root(session, page):
    observer = session.state["observer"]
    assert http("GET", observer + "/").status == 200
    assert http("GET", observer + "/inspect/api/v1/scene").status == 401
    assert authed("GET", observer + "/inspect/api/v1/scene?mode=bogus").status == 400
    logged_in(page, observer + "/")
    submit = hover(session, page, "button", "Submit")
    page.fill("#search", 'button[name="Submit"]')
    page.press("#search", "Enter")
    page.wait_for_function("(id) => { const b = document.querySelector('#found .box.current');"
                           " return b && b.dataset.id === id; }", arg=submit["id"])
    assert all("/inspect/api/v1/" in u for u in page.urls if "/api/" in u)  # (nothing but this origin's pass-through)


@pytest.fixture(scope="module")
def firefox():
    f = Firefox()
    yield f
    f.close()


def test_the_page_works_in_firefox(session, firefox):
    ff = firefox
    ff.goto(session.scene + "/inspect")
    ff.wait("document.getElementById('login').open")
    ff.js("document.getElementById('token').focus()")
    ff.type(TOKEN + "\ue007")  # (the token, then Enter)
    ff.wait("document.getElementById('status').textContent === 'live'", 30)
    ff.wait("document.getElementById('shot').naturalWidth > 0")

    def hovered():
        e = element(session, "button", "Submit")
        x, y, w, k = ff.js("(() => { const i = document.getElementById('shot'); const r = i.getBoundingClientRect();"
                           " return [r.x, r.y, r.width, r.width / i.naturalWidth]; })()")
        ff.move(x + (e["bbox"][0] + e["bbox"][2] / 2) * k, y + (e["bbox"][1] + e["bbox"][3] / 2) * k)
        time.sleep(0.2)
        return ff.js("document.getElementById('details').dataset.id") == e["id"]

    wait_until(hovered, 15, what="Submit's id under Firefox's pointer")
    other = element(session, "button", "Other")
    ff.js("document.getElementById('search').focus()")
    ff.type("Other\ue007")
    ff.wait(f"(() => {{ const b = document.querySelector('#found .box.current'); return b && b.dataset.id === "
            f"{other['id']!r}; }})()")
    assert ff.js("document.getElementById('details').dataset.id") == other["id"]
    assert [e for e in ff.errors if "401" not in e] == []
