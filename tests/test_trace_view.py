"""The trace viewer: a trace folder rendered as one page and opened in a real browser
(Playwright on Debian's Chromium), served by ``serve``. The click's ring sits on the
button where the scaled screenshot shows it, the element's name and form are beside it,
the arrow keys and ``#step-N`` choose a step, a drag's path is drawn, a name that is
markup stays text, a cut last line is left out, and nothing outside the folder is served."""

from __future__ import annotations

import asyncio
import datetime as dt
import http.client
import json
import re
import threading
from pathlib import Path

import pytest
from PIL import Image, ImageDraw
from playwright.sync_api import sync_playwright

from deskbox.trace.view import main, render, serve
from tests.support import free_port

W, H = 640, 400
SUBMIT = [400, 300, 120, 40]  # the Submit button's box, in device pixels
USER = [100, 100, 200, 30]  # the user name field's box
STARTED = dt.datetime(2025, 3, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
INJECTED = '<img src=x onerror="window.__pwned = 1">Evil'


def screenshot(path: Path, pressed: bool = False, typed: str = "") -> None:
    """A 640x400 screen: a form with a user name field and a Submit button, darker once pressed."""
    im = Image.new("RGB", (W, H), (245, 246, 250))
    draw = ImageDraw.Draw(im)
    x, y, w, h = USER
    draw.rectangle([x, y, x + w, y + h], fill=(255, 255, 255), outline=(120, 120, 120))
    if typed:
        draw.text((x + 6, y + 8), typed, fill=(0, 0, 0))
    x, y, w, h = SUBMIT
    draw.rectangle([x, y, x + w, y + h], fill=(20, 60, 160) if pressed else (47, 111, 237))
    path.parent.mkdir(parents=True, exist_ok=True)
    im.save(path, "JPEG", quality=85)


def element(id_: str, role: str, name: str, bbox: list[int], ancestors: list[dict]) -> dict:
    return {"id": id_, "role": role, "name": name, "value": None, "states": ["focusable"], "source": "cdp",
            "app": "chromium", "pid": 123, "window_id": "w3", "window_title": "Sign in - Chromium",
            "url": "http://127.0.0.1:9000/login", "ancestors": ancestors, "bbox": bbox, "display_id": 0}


def step(n: int, interface: str, action: str, *, args=None, element=None, point=None, path=None, ok=True,
         error=None, receipt=None, shots=("before", "after")) -> dict:
    t = n * 1.5
    return {"step": n, "t": t, "time": (STARTED + dt.timedelta(seconds=t)).isoformat(), "interface": interface,
            "action": action, "args": args or {}, "element": element, "point": point, "path": path, "display_id": 0,
            "parts": [{"kind": "pointer" if point else "keyboard"}], "ok": ok, "receipt": receipt, "error": error,
            "duration_ms": 40, "shots": {w: (f"shots/{n:05d}-{w}.jpg" if w in shots else None)
                                         for w in ("before", "after")}}


FORM = [{"role": "form", "name": "Login"}, {"role": "document", "name": "Sign in"}]
STEPS = [
    step(1, "act", "click", args={"target": "a0-12"}, point=[460, 320], receipt={"clicked": "a0-12"},
         element=element("a0-12", "button", "Submit", SUBMIT, FORM)),
    step(2, "toolset", "type", args={"text": "hello"}, receipt={"typed": 5},
         element=element("a0-7", "textbox", "User name", USER, FORM)),
    step(3, "anthropic", "drag", point=[100, 200], path=[[100, 200], [200, 220], [300, 260]]),
    step(4, "mcp", "key", args={"keys": "ctrl+s"}, shots=("before",)),
    step(5, "desktopd", "click", point=[50, 60], shots=()),
    step(6, "openai", "click", ok=False, point=[20, 380],
         error={"code": "not_found", "message": "no element matches link[name=Evil]"},
         element=element("a0-99", "link", INJECTED, [10, 370, 60, 20], [{"role": "list", "name": INJECTED}])),
]


def write_trace(folder: Path, steps: list[dict], meta: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for s in steps:
        for when, rel in s["shots"].items():
            if rel:
                screenshot(folder / rel, pressed=when == "after" and s["step"] == 1,
                           typed="hello" if (s["step"], when) > (2, "after") else "")
    if meta:
        (folder / "trace.json").write_text(json.dumps({
            "version": 1, "trace_id": "20250301T120000-abc123", "label": "log in", "started_at": STARTED.isoformat(),
            "stopped_at": (STARTED + dt.timedelta(seconds=12)).isoformat(), "step_count": len(steps) + 1,
            "displays": [{"id": 0, "size": [W, H]}], "video": "video.mp4"}))
    lines = "".join(json.dumps(s) + "\n" for s in steps)
    # The session died as it wrote the next step: its line is cut short, inside the "é".
    cut = '{"step": 7, "t": 10.5, "interface": "act", "action": "type", "args": {"text": "caf\u00e9'.encode()[:-1]
    (folder / "steps.jsonl").write_bytes(lines.encode() + cut)
    return folder


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("traces")
    (root / "secret.txt").write_text("not for the viewer")
    folder = write_trace(root / "20250301T120000-abc123", STEPS)
    (folder / "video.mp4").write_bytes(b"\0\0\0\x18ftypmp42")
    (folder / "escape.txt").symlink_to(root / "secret.txt")
    return folder


@pytest.fixture(scope="module")
def served(trace):
    """``serve`` on its own event loop in a thread (Playwright's sync API wants this one)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    runner, url = asyncio.run_coroutine_threadsafe(serve(trace, port=free_port()), loop).result(10)
    yield url
    asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    # Narrow enough that the screenshots are shown smaller than they are.
    context = browser.new_context(viewport={"width": 1100, "height": 800})
    p = context.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda exc: errors.append(str(exc)))
    p.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    yield p
    context.close()
    assert errors == []  # no script error, no blocked resource


def open_viewer(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("#steps li.selected")


def shown_image(page, which: str = "before") -> dict:
    page.wait_for_function("(which) => { const i = document.querySelector(`#shot-${which} img`);"
                           " return i.complete && i.naturalWidth > 0; }", arg=which)
    return page.locator(f"#shot-{which} img").bounding_box()


def centre(box: dict) -> tuple[float, float]:
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def on_image(img: dict, x: float, y: float) -> tuple[float, float]:
    """Where device pixel (x, y) of the screenshot is on the page, as the image is shown."""
    return img["x"] + x * img["width"] / W, img["y"] + y * img["height"] / H


def selected(page) -> str:
    return page.get_attribute("#steps li.selected", "data-step")


def test_the_header_and_the_timeline_list_every_readable_step(page, served):
    open_viewer(page, served)
    assert page.text_content("#label") == "log in"
    assert page.text_content("#trace-id") == "20250301T120000-abc123"
    assert page.text_content("#duration") == "12.0 s"
    assert page.text_content("#step-count") == "6 readable of 7 recorded"  # (the cut line is left out)
    assert page.get_attribute("#video", "href") == "video.mp4" and page.is_visible("#video")
    assert page.eval_on_selector_all("#steps li", "items => items.map(li => li.dataset.step)") == \
        ["1", "2", "3", "4", "5", "6"]
    first = page.text_content('#steps li[data-step="1"]')
    assert "click" in first and "act" in first and "button \u201cSubmit\u201d" in first and "ok" in first
    assert "at (50, 60)" in page.text_content('#steps li[data-step="5"]')  # desktopd's raw click: its point
    assert page.text_content('#steps li[data-step="6"] .badge.error') == "not_found"


def test_the_first_step_rings_the_click_on_the_scaled_screenshot(page, served):
    open_viewer(page, served)
    assert selected(page) == "1"
    img = shown_image(page)
    assert img["width"] < W  # shown smaller than it is: the ring has to be scaled
    for which in ("before", "after"):
        img = shown_image(page, which)
        ring = centre(page.locator(f"#overlay-{which} .marker").bounding_box())
        expected = on_image(img, 460, 320)
        assert abs(ring[0] - expected[0]) <= 3 and abs(ring[1] - expected[1]) <= 3, (ring, expected)
    img = shown_image(page, "before")
    outline = page.locator("#overlay-before .bbox").bounding_box()
    top_left = on_image(img, SUBMIT[0], SUBMIT[1])
    assert abs(outline["x"] - top_left[0]) <= 3 and abs(outline["y"] - top_left[1]) <= 3
    assert abs(outline["width"] - SUBMIT[2] * img["width"] / W) <= 3


def test_the_element_reference_names_the_button_and_its_form(page, served):
    open_viewer(page, served)
    ref = page.text_content("#element-ref")
    assert "Submit" in ref and "a0-12" in ref and "Sign in - Chromium" in ref
    assert page.locator("#element-ref .breadcrumb li").all_text_contents() == [
        "document \u201cSign in\u201d", "form \u201cLogin\u201d", "button \u201cSubmit\u201d"]
    assert '"clicked": "a0-12"' in page.text_content("#receipt")
    assert '"target": "a0-12"' in page.text_content("#args")


def test_the_down_key_selects_the_typing_and_shows_the_text(page, served):
    open_viewer(page, served)
    page.keyboard.press("ArrowDown")
    assert selected(page) == "2"
    assert page.url.endswith("#step-2")
    assert "hello" in page.text_content("#overlay-before .label")
    assert "User name" in page.text_content("#element-ref")
    page.keyboard.press("k")
    assert selected(page) == "1"
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert selected(page) == "3"


def test_step_3_in_the_address_selects_the_drag_and_draws_its_path(page, served):
    open_viewer(page, served + "#step-3")
    assert selected(page) == "3"
    points = page.get_attribute("#overlay-before .path", "points").split()
    assert points == ["100,200", "200,220", "300,260"]
    assert page.locator("#overlay-before .arrow").count() == 1
    img = shown_image(page)
    start = centre(page.locator("#overlay-before .marker").bounding_box())
    expected = on_image(img, 100, 200)
    assert abs(start[0] - expected[0]) <= 3 and abs(start[1] - expected[1]) <= 3
    assert "No element" in page.text_content("#element-ref")
    page.evaluate("location.hash = '#step-5'")
    page.wait_for_selector('#steps li[data-step="5"].selected')


def test_a_step_without_screenshots_still_shows_where_it_acted(page, served):
    open_viewer(page, served + "#step-4")
    assert "ctrl+s" in page.text_content("#overlay-before .label")
    assert page.is_visible("#shot-after .missing") and not page.is_visible("#shot-after img")
    page.keyboard.press("ArrowDown")
    assert selected(page) == "5"
    assert page.is_visible("#shot-before .missing")
    assert page.locator("#overlay-before .marker").count() == 1


def test_a_name_that_is_markup_is_shown_as_text(page, served):
    open_viewer(page, served + "#step-6")
    assert selected(page) == "6"
    assert page.locator("#element-ref img, #steps img, #step-title img").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert INJECTED in page.text_content("#element-ref")
    assert page.text_content("#error") == "not_foundno element matches link[name=Evil]"


def test_the_page_works_opened_from_the_folder(page, trace):
    render(trace)
    open_viewer(page, (trace / "index.html").as_uri())
    img = shown_image(page)
    ring = centre(page.locator("#overlay-before .marker").bounding_box())
    expected = on_image(img, 460, 320)
    assert abs(ring[0] - expected[0]) <= 3 and abs(ring[1] - expected[1]) <= 3


def get(url: str, path: str) -> tuple[int, bytes]:
    """A GET of ``path`` exactly as written (urllib would tidy the dots away)."""
    host, port = re.match(r"http://([^:/]+):(\d+)/", url).groups()
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_only_files_inside_the_trace_are_served(served):
    assert get(served, "/shots/00001-before.jpg")[0] == 200
    assert get(served, "/")[0] == 200
    for path in ["/../secret.txt", "/shots/../../secret.txt", "/%2e%2e/secret.txt", "/..%2fsecret.txt",
                 "/escape.txt"]:
        status, body = get(served, path)
        assert status in (400, 403, 404), (path, status)
        assert b"not for the viewer" not in body, path


def test_render_without_trace_json_derives_what_it_can(tmp_path):
    folder = write_trace(tmp_path / "t-0001", STEPS[:2], meta=False)
    (folder / "shots/00002-after.jpg").unlink()
    index = render(folder)
    html = index.read_text()
    data = json.loads(re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', html, re.S)[1])
    trace = data["trace"]
    assert trace["trace_id"] == "t-0001" and trace["label"] is None and trace["has_meta"] is False
    assert trace["started_at"] == STARTED.isoformat(timespec="milliseconds")  # first step's time less its offset
    assert trace["step_count"] == 2 and trace["video"] is None
    assert trace["displays"] == {"0": [W, H]}  # (the screenshots' size)
    assert trace["duration_s"] == 3.04  # to the end of the last step
    assert [s["step"] for s in data["steps"]] == [1, 2]
    assert data["steps"][1]["shots"] == {"before": "shots/00002-before.jpg", "after": None}


def test_markup_in_the_data_cannot_close_the_data_script(tmp_path):
    hostile = step(1, "act", "click", point=[1, 2], shots=(),
                   element=element("a0-1", "button", "</script><script>alert(1)</script><!--", [0, 0, 5, 5], []))
    folder = write_trace(tmp_path / "t", [hostile])
    html = render(folder).read_text()
    assert html.count("<script") == 2 and html.count("</script>") == 2
    data = json.loads(re.search(r'id="trace-data">(.*?)</script>', html, re.S)[1])
    assert data["steps"][0]["element"]["name"] == "</script><script>alert(1)</script><!--"


def test_main_without_serving_writes_the_page_and_prints_its_address(tmp_path, capsys):
    folder = write_trace(tmp_path / "t", STEPS[:1])
    main([str(folder), "--no-serve"])
    assert capsys.readouterr().out.strip() == (folder / "index.html").resolve().as_uri()
