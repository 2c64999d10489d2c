"""Provider adapters against a real session: Anthropic's computer tool, OpenAI's
computer_call actions and Gemini's computer use functions, each action checked on the
page (tests/pages/computer.html reports every input it receives). The display is
1920x1080 and most requests declare 1280x720, so every coordinate goes through the
declared-size scaling; Gemini's go through its 0-999 grid."""

from __future__ import annotations

import base64
import io
import json
import socket
import threading
import time

import pytest
from PIL import Image

from tests.conftest import open_fixture
from tests.support import Session, css_to_device, http, wait_until

DISPLAY = (1920, 1080)
DECLARED = (1280, 720)


@pytest.fixture(scope="module")
def session():
    s = Session(["1920x1080"]).start()
    s.browser_window()
    yield s
    s.stop()


@pytest.fixture
def page(session, pages):
    """The fixture page, fresh; its load report (element rects, viewport) plus the
    browser window's bounds."""
    load = open_fixture(session, pages, "computer.html")
    load["window"] = session.windows("chromium")[0]
    # The pointer starts on the page's empty corner, whatever the test before left it
    # over: a move onto an element the pointer already rests on is no motion, and the
    # page sees no hover (in a random order, a hover test after another's hover failed).
    x, y = css_to_device(load["window"], load, 5, 5)
    session.pointer(action="move", x=x, y=y)
    pages.settle(0.2)
    pages.clear()
    return load


# -- helpers ---------------------------------------------------------------------------


def post(session, provider: str, body, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return http("POST", f"{session.scene}/api/v1/computer/{provider}" + (f"?{query}" if query else ""), body)


def declared(**extra):
    return {"display_width": DECLARED[0], "display_height": DECLARED[1], **extra}


def ok(session, provider: str, body, **params) -> dict:
    resp = post(session, provider, body, **params)
    assert resp.status == 200, (body, resp.status, resp.body[:400])
    return resp.json()


def anthropic(session, body, **params) -> dict:
    return ok(session, "anthropic", body, **{**declared(), **params})


def openai(session, body, **params) -> dict:
    return ok(session, "openai", body, **{**declared(), **params})


def gemini(session, body, **params) -> dict:
    return ok(session, "gemini", body, **{**declared(), **params})


def device_point(page: dict, element: str, fx: float = 0.5, fy: float = 0.5) -> tuple[float, float]:
    r = page["rects"][element]
    return css_to_device(page["window"], page, r["x"] + r["w"] * fx, r["y"] + r["h"] * fy)


def at(page: dict, element: str, fx: float = 0.5, fy: float = 0.5) -> list[int]:
    """The element's point in pixels of the declared 1280x720 screenshot."""
    x, y = device_point(page, element, fx, fy)
    return [round(x * DECLARED[0] / DISPLAY[0]), round(y * DECLARED[1] / DISPLAY[1])]


def grid(page: dict, element: str, fx: float = 0.5, fy: float = 0.5) -> dict:
    """The element's point on Gemini's 0-999 grid."""
    x, y = device_point(page, element, fx, fy)
    return {"x": round(x * 1000 / DISPLAY[0]), "y": round(y * 1000 / DISPLAY[1])}


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return Image.open(io.BytesIO(data)).size


def only(pages, **fields) -> list[dict]:
    pages.settle(0.3)
    return pages.matching(**fields)


def pointer_position(session) -> dict:
    return session.ok("/api/v1/pointer")


def nothing_sent(session, pages, before: dict) -> None:
    pages.settle(0.4)
    kinds = {e["type"] for e in pages.events}
    assert not kinds & {"mousedown", "mouseup", "click", "keydown", "wheel", "mousemove", "input"}, kinds
    assert pointer_position(session) == before


# -- Anthropic ---------------------------------------------------------------------------


def test_anthropic_left_click_at_the_declared_centre_of_a_button_lands_on_it(session, pages, page):
    reply = anthropic(session, {"action": "left_click", "coordinate": at(page, "target")})
    down = pages.wait_for(type="mousedown", target="target")
    assert down["button"] == 0 and down["detail"] == 1 and not down["shift"]
    pages.wait_for(type="click", target="target")
    # The reply: the screenshot at the declared size, three ways.
    assert png_size(base64.b64decode(reply["base64_image"])) == DECLARED
    assert reply["output"] is None and reply["error"] is None and reply["tool_result"] is None
    (image,) = reply["content"]
    assert image == {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                 "data": reply["base64_image"]}}
    # Another declared size, another aspect (1024x768 on 16:9: x and y scale apart): the
    # 24 px box is still hit, and the picture has the declared size.
    x, y = device_point(page, "small")
    pages.clear()
    reply = ok(session, "anthropic", {"action": "left_click", "coordinate": [round(x * 1024 / 1920),
                                                                             round(y * 768 / 1080)]},
               display_width=1024, display_height=768)
    pages.wait_for(type="click", target="small")
    assert png_size(base64.b64decode(reply["base64_image"])) == (1024, 768)


def test_anthropic_buttons_and_counts_stay_what_was_asked(session, pages, page):
    point = at(page, "target")
    anthropic(session, {"action": "right_click", "coordinate": point})
    assert pages.wait_for(type="contextmenu", target="target")["button"] == 2
    assert [e["button"] for e in only(pages, type="mousedown")] == [2]
    assert not only(pages, type="click")
    pages.clear()
    anthropic(session, {"action": "middle_click", "coordinate": point})
    assert pages.wait_for(type="auxclick", target="target")["button"] == 1
    assert [e["button"] for e in only(pages, type="mousedown")] == [1]
    pages.clear()
    anthropic(session, {"action": "double_click", "coordinate": point})
    pages.wait_for(type="dblclick", target="target")
    assert [e["detail"] for e in only(pages, type="mousedown")] == [1, 2]
    pages.clear()
    anthropic(session, {"action": "triple_click", "coordinate": point})
    assert [e["detail"] for e in only(pages, type="mousedown", target="target")] == [1, 2, 3]


def test_anthropic_click_holds_the_modifier_given_in_text(session, pages, page):
    anthropic(session, {"action": "left_click", "coordinate": at(page, "target"), "text": "shift"})
    click = pages.wait_for(type="click", target="target")
    assert click["shift"] and not click["ctrl"]
    pages.clear()
    anthropic(session, {"action": "left_click", "coordinate": at(page, "other"), "text": "ctrl+shift"})
    click = pages.wait_for(type="click", target="other")
    assert click["shift"] and click["ctrl"]
    # The modifiers went up again: a plain click after it has none.
    pages.clear()
    anthropic(session, {"action": "left_click", "coordinate": at(page, "target")})
    click = pages.wait_for(type="click", target="target")
    assert not click["shift"] and not click["ctrl"]


def test_anthropic_mouse_move_hovers_without_clicking(session, pages, page):
    anthropic(session, {"action": "mouse_move", "coordinate": at(page, "hover")})
    pages.wait_for(type="hover", target="hover")
    assert not only(pages, type="mousedown") and not only(pages, type="click")
    reply = anthropic(session, {"action": "cursor_position"})
    assert reply["output"] == "X={},Y={}".format(*at(page, "hover"))
    assert reply["base64_image"] is None and reply["content"] == [{"type": "text", "text": reply["output"]}]


def test_anthropic_left_click_drag_is_a_real_drag(session, pages, page):
    start = at(page, "drag")
    anthropic(session, {"action": "left_click_drag", "start_coordinate": start,
                        "coordinate": [start[0] + 200, start[1] + 100]})
    dropped = pages.wait_for(type="dropped")
    # 200 x 100 declared px are 300 x 150 device px (= CSS px at scale 1).
    assert abs(dropped["left"] - (700 + 300)) <= 3 and abs(dropped["top"] - (120 + 150)) <= 3
    assert dropped["moves"] >= 3  # it travelled, it did not jump


def test_anthropic_mouse_down_move_up_drags_step_by_step(session, pages, page):
    start = at(page, "drag")
    anthropic(session, {"action": "left_mouse_down", "coordinate": start})
    moves = only(pages, type="mousedown", target="drag")
    assert moves and moves[0]["button"] == 0 and not only(pages, type="mouseup")
    anthropic(session, {"action": "mouse_move", "coordinate": [start[0] + 100, start[1]]})
    anthropic(session, {"action": "mouse_move", "coordinate": [start[0] + 100, start[1] + 100]})
    anthropic(session, {"action": "left_mouse_up"})
    dropped = pages.wait_for(type="dropped")
    assert abs(dropped["left"] - 850) <= 3 and abs(dropped["top"] - 270) <= 3


def test_anthropic_scroll_goes_the_way_asked_with_its_modifier(session, pages, page):
    anthropic(session, {"action": "scroll", "coordinate": at(page, "hover"), "scroll_direction": "down",
                        "scroll_amount": 2})
    wheels = only(pages, type="wheel")
    assert wheels and all(w["dy"] > 0 and w["dx"] == 0 for w in wheels)
    # scroll_amount is wheel notches: 2 notches, 360 px in Chromium here.
    assert abs(pages.wait_for(type="scroll")["scrollY"] - 360) <= 20
    pages.clear()
    anthropic(session, {"action": "scroll", "coordinate": at(page, "hover"), "scroll_direction": "up",
                        "scroll_amount": 2})
    assert all(w["dy"] < 0 for w in only(pages, type="wheel"))
    pages.clear()
    anthropic(session, {"action": "scroll", "scroll_direction": "right", "scroll_amount": 1})
    wheels = only(pages, type="wheel")
    assert wheels and all(w["dx"] > 0 and w["dy"] == 0 for w in wheels)
    pages.clear()
    anthropic(session, {"action": "scroll", "scroll_direction": "down", "scroll_amount": 1, "text": "ctrl"})
    wheels = only(pages, type="wheel")
    assert wheels and all(w["ctrl"] and w["dy"] > 0 for w in wheels)


def test_anthropic_key_and_type_edit_a_field(session, pages, page):
    anthropic(session, {"action": "left_click", "coordinate": at(page, "text")})
    pages.wait_for(type="click", target="text")
    anthropic(session, {"action": "key", "text": "ctrl+a"})
    anthropic(session, {"action": "type", "text": "héllo wörld ✓"})
    pages.wait_for(type="input", target="text", value="héllo wörld ✓")
    # xdotool syntax: several keys separated by spaces, pressed one after the other.
    anthropic(session, {"action": "key", "text": "BackSpace BackSpace Return"})
    pages.wait_for(type="input", target="text", value="héllo wörld")
    pages.wait_for(type="keydown", key="Enter")


def test_anthropic_hold_key_holds_it_for_the_duration(session, pages, page):
    anthropic(session, {"action": "hold_key", "text": "shift", "duration": 1})
    down = pages.wait_for(type="keydown", key="Shift")
    up = pages.wait_for(type="keyup", key="Shift")
    assert up["t"] - down["t"] >= 900


def test_an_act_click_sent_while_an_adapter_holds_a_key_waits_for_its_release(session, pages, page):
    """/act and the adapters take turns at the input: a click by Scene id sent while
    hold_key has shift down lands after the release, as a plain click."""
    scene = http("GET", f"{session.scene}/api/v1/scene?mode=agent-turn").json()
    target = next(e for e in scene["ax"] if e["source"] == "cdp" and e["name"] == "Other" and e["bbox"])
    holder = threading.Thread(target=anthropic, args=(session, {"action": "hold_key", "text": "shift", "duration": 1.5}))
    holder.start()
    pages.wait_for(type="keydown", key="Shift")
    act = http("POST", f"{session.scene}/api/v1/act", {"target": target["id"], "action": "click"})
    holder.join()
    assert act.status == 200, act.body[:300]
    up = pages.wait_for(type="keyup", key="Shift")
    down = pages.wait_for(type="mousedown", target="other")
    assert not down["shift"] and down["t"] >= up["t"], (up, down)


def test_a_hold_whose_client_leaves_ends_and_lets_the_key_go(session, pages, page):
    """A 30 s hold_key whose client goes away after it began: the key comes up then,
    not 30 s later, and the next action answers at once instead of queueing."""
    body = json.dumps({"action": "hold_key", "text": "shift", "duration": 30}).encode()
    with socket.create_connection(("127.0.0.1", session.scene_port)) as s:
        s.sendall(b"POST /api/v1/computer/anthropic HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        down = pages.wait_for(type="keydown", key="Shift")
    up = pages.wait_for(type="keyup", key="Shift", timeout=10)
    assert up["t"] - down["t"] < 10_000, (down, up)  # let go when the client left, not at 30 s
    reply = anthropic(session, {"action": "left_click", "coordinate": at(page, "other")})
    assert reply["error"] is None
    assert not pages.wait_for(type="mousedown", target="other")["shift"]


def test_an_action_waits_its_turn_at_most_ten_seconds_then_answers_busy(session, pages, page):
    holder = threading.Thread(target=anthropic, args=(session, {"action": "hold_key", "text": "shift", "duration": 14}))
    holder.start()
    try:
        pages.wait_for(type="keydown", key="Shift")
        x, y = at(page, "other")
        resp = post(session, "openai", {"type": "click", "x": x, "y": y, "button": "left"}, **declared())
        assert resp.status == 409 and resp.json()["error"]["code"] == "input_busy", resp.body[:300]
        assert not pages.matching(type="mousedown")  # nothing was sent
    finally:
        holder.join()
    pages.wait_for(type="keyup", key="Shift")


def test_anthropic_screenshot_wait_and_zoom_sizes(session, pages, page):
    reply = anthropic(session, {"action": "screenshot"})
    assert png_size(base64.b64decode(reply["base64_image"])) == DECLARED
    reply = ok(session, "anthropic", {"action": "screenshot"})  # no declared size: the display's
    assert png_size(base64.b64decode(reply["base64_image"])) == DISPLAY
    started = time.monotonic()
    anthropic(session, {"action": "wait", "duration": 0.5})
    assert time.monotonic() - started >= 0.5
    # Zoom: the region at the display's full resolution (640x360 declared = 960x540 device).
    reply = anthropic(session, {"action": "zoom", "region": [0, 0, 640, 360]}, tool_use_id="toolu_1")
    data = base64.b64decode(reply["base64_image"])
    assert png_size(data) == (960, 540)
    full = Image.open(io.BytesIO(base64.b64decode(ok(session, "anthropic", {"action": "screenshot"})
                                                  ["base64_image"])))
    assert Image.open(io.BytesIO(data)).convert("RGB").getpixel((700, 200)) == full.convert("RGB").getpixel((700, 200))
    assert reply["tool_result"] == {"type": "tool_result", "tool_use_id": "toolu_1", "content": reply["content"]}
    resp = post(session, "anthropic", {"action": "zoom", "region": [0, 0, 640, 360]},
                tool="computer_20250124", **declared())
    assert resp.status == 400 and resp.json()["error"]["code"] == "unsupported_action"


def test_anthropic_bad_requests_are_4xx_and_send_nothing(session, pages, page):
    anthropic(session, {"action": "mouse_move", "coordinate": [10, 10]})
    pages.settle(0.3)
    pages.clear()
    before = pointer_position(session)
    cases = [
        ({"action": "hover", "coordinate": [100, 100]}, "unsupported_action"),
        ({"action": "left_click", "coordinate": [1280, 100]}, "out_of_bounds"),  # outside 1280x720
        ({"action": "left_click", "coordinate": [100, 100], "scroll_direction": "up"}, "validation_error"),
        ({"action": "left_click", "coordinate": [100, 100], "text": "shift+q"}, "unknown_key"),
        ({"action": "scroll", "coordinate": [100, 100], "scroll_direction": "down", "scroll_amount": 0},
         "validation_error"),
        ({"action": "left_click_drag", "start_coordinate": [10, 10], "coordinate": [2000, 10]}, "out_of_bounds"),
        ({"action": "key"}, "validation_error"),
        ({"action": "key", "text": "ctrl+nosuchkey"}, "unknown_key"),
        ({"action": "hold_key", "text": "nosuchkey", "duration": 1}, "unknown_key"),
        ({"action": "wait", "duration": 1000}, "validation_error"),
        ({"coordinate": [100, 100]}, "validation_error"),
    ]
    for body, code in cases:
        resp = post(session, "anthropic", body, **declared())
        assert resp.status == 400, (body, resp.status, resp.body[:300])
        assert resp.json()["error"]["code"] == code, (body, resp.json())
    resp = post(session, "anthropic", {"action": "screenshot"}, display=5)
    assert resp.status == 404 and resp.json()["error"]["code"] == "unknown_display"
    resp = post(session, "anthropic", {"action": "screenshot"}, display_width=1280)
    assert resp.status == 400
    nothing_sent(session, pages, before)


# -- OpenAI ------------------------------------------------------------------------------


def test_openai_click_buttons_are_the_buttons_asked_for(session, pages, page):
    x, y = at(page, "target")
    for button, dom in (("left", 0), ("right", 2), ("wheel", 1), ("back", 3), ("forward", 4)):
        pages.clear()
        openai(session, {"type": "click", "x": x, "y": y, "button": button})
        downs = only(pages, type="mousedown")
        assert [(e["button"], e["target"], e["detail"]) for e in downs] == [(dom, "target", 1)], button
    assert http("GET", session.bridge + "/tabs").json()[0]["url"].endswith("/computer.html")  # no history move
    pages.clear()
    openai(session, {"type": "click", "x": x, "y": y, "button": "left", "keys": ["SHIFT"]})
    assert pages.wait_for(type="click", target="target")["shift"]


def test_openai_reply_is_the_computer_call_output_item(session, pages, page):
    item = {"type": "computer_call", "id": "cu_1", "call_id": "call_42", "status": "completed",
            "action": {"type": "double_click", "x": at(page, "target")[0], "y": at(page, "target")[1]},
            "pending_safety_checks": [{"id": "sc_1", "code": "malicious_instructions", "message": "..."}]}
    reply = openai(session, item)
    pages.wait_for(type="dblclick", target="target")
    assert [e["detail"] for e in only(pages, type="mousedown")] == [1, 2]
    assert set(reply) == {"type", "call_id", "output"}
    assert reply["type"] == "computer_call_output" and reply["call_id"] == "call_42"
    assert reply["output"]["type"] == "computer_screenshot"
    prefix = "data:image/png;base64,"
    assert reply["output"]["image_url"].startswith(prefix)
    assert png_size(base64.b64decode(reply["output"]["image_url"][len(prefix):])) == DECLARED
    # The bare action with ?call_id= answers the same shape.
    reply = openai(session, {"type": "screenshot"}, call_id="call_43")
    assert reply["call_id"] == "call_43"


def test_openai_move_hovers_and_drag_follows_its_path(session, pages, page):
    x, y = at(page, "hover")
    openai(session, {"type": "move", "x": x, "y": y})
    pages.wait_for(type="hover", target="hover")
    assert not only(pages, type="mousedown")
    pages.clear()
    sx, sy = at(page, "drag")
    openai(session, {"type": "drag", "path": [{"x": sx, "y": sy}, {"x": sx + 100, "y": sy},
                                              {"x": sx + 100, "y": sy + 100}]})
    dropped = pages.wait_for(type="dropped")
    assert abs(dropped["left"] - 850) <= 3 and abs(dropped["top"] - 270) <= 3
    # It went by the corner (CSS 900, 170; the box's centre starts at 750, 170), not
    # straight to the end: with the button held the pointer was far right while still high.
    held = [e for e in pages.matching(type="mousemove") if e["buttons"] == 1]
    assert any(e["x"] >= 860 and abs(e["y"] - 170) <= 3 for e in held), held


def test_openai_keypress_type_and_wait(session, pages, page):
    x, y = at(page, "text")
    openai(session, {"type": "click", "x": x, "y": y})
    openai(session, {"type": "keypress", "keys": ["CTRL", "A"]})
    down = pages.wait_for(type="keydown", key="a")
    assert down["ctrl"] and not down["shift"]  # "A" names the key, not a capital letter
    openai(session, {"type": "type", "text": "typed by gpt"})
    pages.wait_for(type="input", target="text", value="typed by gpt")
    openai(session, {"type": "keypress", "keys": ["ENTER"]})
    pages.wait_for(type="keydown", key="Enter")
    openai(session, {"type": "keypress", "keys": ["ARROWLEFT"]})
    pages.wait_for(type="keydown", key="ArrowLeft")
    started = time.monotonic()
    openai(session, {"type": "wait"})
    assert time.monotonic() - started >= 1


def test_openai_scroll_distances_are_pixels(session, pages, page):
    x, y = at(page, "hover")
    # 240 declared px = 360 device px on this display; the page scrolls that far.
    openai(session, {"type": "scroll", "x": x, "y": y, "scroll_x": 0, "scroll_y": 240})
    assert all(w["dy"] > 0 and w["dx"] == 0 for w in only(pages, type="wheel"))
    scrolled = wait_until(lambda: (pages.matching(type="scroll") or [None])[-1], 5, what="a scroll")
    assert abs(scrolled["scrollY"] - 360) <= 20 and scrolled["scrollX"] == 0
    pages.clear()
    openai(session, {"type": "scroll", "x": x, "y": y, "scroll_x": 120, "scroll_y": 0})
    assert all(w["dx"] > 0 and w["dy"] == 0 for w in only(pages, type="wheel"))
    scrolled = wait_until(lambda: (pages.matching(type="scroll") or [None])[-1], 5, what="a scroll")
    assert abs(scrolled["scrollX"] - 180) <= 20


def test_openai_batched_actions_run_in_order(session, pages, page):
    x, y = at(page, "text")
    openai(session, {"type": "computer_call", "call_id": "call_7", "actions": [
        {"type": "click", "x": x, "y": y},
        {"type": "keypress", "keys": ["CTRL", "A"]},
        {"type": "type", "text": "batch"},
    ]})
    pages.wait_for(type="input", target="text", value="batch")


def test_openai_bad_requests_are_4xx_and_send_nothing(session, pages, page):
    before = pointer_position(session)
    x, y = at(page, "target")
    cases = [
        ({"type": "triple_click", "x": x, "y": y}, "unsupported_action"),
        ({"type": "click", "x": x, "y": y, "button": "middle"}, "validation_error"),
        ({"type": "click", "x": 5000, "y": y}, "out_of_bounds"),
        ({"type": "drag", "path": [{"x": x, "y": y}]}, "validation_error"),
        ({"type": "scroll", "x": x, "y": y, "scroll_x": 0, "scroll_y": 0}, "validation_error"),
        # A batch with one bad point sends none of it.
        ({"type": "computer_call", "call_id": "c", "actions": [{"type": "click", "x": x, "y": y},
                                                              {"type": "move", "x": x, "y": 9000}]}, "out_of_bounds"),
        ({"type": "computer_call", "call_id": "c", "action": {"type": "zoom"}}, "unsupported_action"),
    ]
    for body, code in cases:
        resp = post(session, "openai", body, **declared())
        assert resp.status == 400, (body, resp.status, resp.body[:300])
        assert resp.json()["error"]["code"] == code, (body, resp.json())
    nothing_sent(session, pages, before)


# -- Gemini ------------------------------------------------------------------------------


def test_gemini_click_at_uses_the_0_999_grid_and_answers_a_function_response(session, pages, page):
    reply = gemini(session, {"name": "click_at", "args": grid(page, "target"), "id": "fc_1"})
    down = pages.wait_for(type="mousedown", target="target")
    assert down["button"] == 0 and down["detail"] == 1
    assert set(reply) == {"name", "id", "response", "parts"}
    assert reply["name"] == "click_at" and reply["id"] == "fc_1"
    assert reply["response"]["url"].endswith("/computer.html")
    (part,) = reply["parts"]
    assert part["inline_data"]["mime_type"] == "image/png"
    assert png_size(base64.b64decode(part["inline_data"]["data"])) == DECLARED
    # The grid does not depend on the declared size: the small box is hit either way.
    pages.clear()
    ok(session, "gemini", {"name": "click_at", "args": grid(page, "small")}, display_width=1440, display_height=900)
    pages.wait_for(type="click", target="small")


def test_gemini_hover_type_and_keys(session, pages, page):
    gemini(session, {"name": "hover_at", "args": grid(page, "hover")})
    pages.wait_for(type="hover", target="hover")
    assert not only(pages, type="mousedown")
    # type_text_at clears the field first and presses Enter only when told.
    gemini(session, {"name": "type_text_at", "args": {**grid(page, "text"), "text": "gemini"}})
    pages.wait_for(type="input", target="text", value="gemini")
    assert not only(pages, type="keydown", key="Enter")
    pages.clear()
    gemini(session, {"name": "type_text_at", "args": {**grid(page, "text"), "text": " more", "press_enter": True,
                                                      "clear_before_typing": False}})
    pages.wait_for(type="input", target="text", value="gemini more")
    pages.wait_for(type="keydown", key="Enter")
    pages.clear()
    gemini(session, {"name": "key_combination", "args": {"keys": "Control+A"}})
    down = pages.wait_for(type="keydown", key="a")
    assert down["ctrl"] and not down["shift"]
    gemini(session, {"name": "key_combination", "args": {"keys": "Delete"}})
    pages.wait_for(type="input", target="text", value="")


def test_gemini_scrolls_and_drag_and_drop(session, pages, page):
    # The page has the keyboard (a click on its empty part), as after any click of an agent.
    session.pointer(action="click", x=device_point(page, "small")[0], y=device_point(page, "small")[1] + 200)
    pages.settle(0.3)
    pages.clear()
    gemini(session, {"name": "scroll_document", "args": {"direction": "down"}})
    assert pages.wait_for(type="keydown", key="PageDown")
    assert wait_until(lambda: (pages.matching(type="scroll") or [None])[-1], 5, what="a scroll")["scrollY"] > 300
    pages.clear()
    gemini(session, {"name": "scroll_document", "args": {"direction": "up"}})
    assert wait_until(lambda: (pages.matching(type="scroll") or [None])[-1], 5, what="a scroll")["scrollY"] == 0
    pages.clear()
    gemini(session, {"name": "scroll_document", "args": {"direction": "right"}})
    assert all(w["dx"] > 0 for w in only(pages, type="wheel"))
    assert wait_until(lambda: (pages.matching(type="scroll") or [None])[-1], 5, what="a scroll")["scrollX"] > 0
    page = open_fixture(session, pages, "computer.html") | {"window": page["window"]}
    # magnitude 250 of 1000 on the vertical axis: a quarter of 1080 = 270 px.
    gemini(session, {"name": "scroll_at", "args": {**grid(page, "hover"), "direction": "down", "magnitude": 250}})
    assert all(w["dy"] > 0 for w in only(pages, type="wheel"))
    scrolled = wait_until(lambda: (pages.matching(type="scroll") or [None])[-1], 5, what="a scroll")
    assert abs(scrolled["scrollY"] - 270) <= 20
    page = open_fixture(session, pages, "computer.html") | {"window": page["window"]}
    start = grid(page, "drag")
    gemini(session, {"name": "drag_and_drop", "args": {**start, "destination_x": start["x"] + 100,
                                                       "destination_y": start["y"] + 100}})
    dropped = pages.wait_for(type="dropped")
    # 100 grid units are 192 x 108 device px.
    assert abs(dropped["left"] - 892) <= 4 and abs(dropped["top"] - 228) <= 4


def test_gemini_browser_functions_change_and_report_the_url(session, pages, page):
    first = pages.url("computer.html?step=1")
    second = pages.url("computer.html?step=2")
    reply = gemini(session, {"name": "navigate", "args": {"url": first}})
    assert reply["response"]["url"] == first
    pages.wait_for(type="load", search="?step=1", timeout=20)
    reply = gemini(session, {"name": "navigate", "args": {"url": second}})
    assert reply["response"]["url"] == second
    pages.wait_for(type="load", search="?step=2", timeout=20)
    reply = gemini(session, {"name": "go_back"})
    assert reply["response"]["url"] == first
    reply = gemini(session, {"name": "go_forward"})
    assert reply["response"]["url"] == second
    reply = gemini(session, {"name": "search"}, search_url=pages.url("computer.html?search"))
    assert reply["response"]["url"] == pages.url("computer.html?search")
    reply = gemini(session, {"name": "open_web_browser"})
    assert reply["response"]["url"] == pages.url("computer.html?search")
    assert session.windows("chromium")[0]["focused"]
    started = time.monotonic()
    reply = gemini(session, {"name": "wait_5_seconds"})
    assert time.monotonic() - started >= 5 and reply["name"] == "wait_5_seconds"


def test_gemini_bad_calls_are_4xx_and_send_nothing(session, pages, page):
    before = pointer_position(session)
    cases = [
        ({"name": "double_click_at", "args": {"x": 10, "y": 10}}, "unsupported_action"),
        ({"name": "click_at", "args": {"x": 1000, "y": 10}}, "validation_error"),
        ({"name": "click_at", "args": {"x": 10}}, "validation_error"),
        ({"name": "type_text_at", "args": {"x": 10, "y": 10, "text": "a", "submit": True}}, "validation_error"),
        ({"name": "key_combination", "args": {"keys": "Control+Nosuchkey"}}, "unknown_key"),
        ({"name": "scroll_at", "args": {"x": 10, "y": 10, "direction": "sideways"}}, "validation_error"),
    ]
    for body, code in cases:
        resp = post(session, "gemini", body, **declared())
        assert resp.status == 400, (body, resp.status, resp.body[:300])
        assert resp.json()["error"]["code"] == code, (body, resp.json())
    nothing_sent(session, pages, before)
    # A safety decision rides along in args and is left to the harness.
    gemini(session, {"name": "hover_at", "args": {**grid(page, "hover"),
                                                  "safety_decision": {"decision": "require_confirmation",
                                                                      "explanation": "..."}}})
    pages.wait_for(type="hover", target="hover")


def test_the_adapters_are_in_the_openapi_document(session):
    doc = http("GET", session.scene + "/api/v1/openapi.json").json()
    for provider in ("anthropic", "openai", "gemini"):
        op = doc["paths"][f"/api/v1/computer/{provider}"]["post"]
        assert {p["name"] for p in op["parameters"]} >= {"display", "display_width", "display_height"}
        assert op["requestBody"]
