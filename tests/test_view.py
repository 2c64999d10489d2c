"""The live view in a real browser (Playwright on Debian's Chromium): behind the token,
the canvas shows the desktop where the screenshot has it, a click is not passed on until
"take control", and after it a click in the canvas lands on the fixture's button; the
scene's health says control was taken."""

from __future__ import annotations

import io
import os
import secrets
import signal
import struct
import subprocess
import time

import pytest
from PIL import Image
from playwright.sync_api import sync_playwright
from websockets.sync.client import connect

from tests.support import PageServer, Session, free_port, http, wait_until

pytestmark = pytest.mark.desktop

TOKEN = secrets.token_hex(8)


@pytest.fixture(scope="module")
def viewed(pages: PageServer):
    s = Session(["1280x800"], extra_env={"DESKBOX_TOKEN": TOKEN},
                extra_args=["--view", "--view-port", str(free_port()), "--url", pages.url("input.html")])
    s.start()
    yield s
    s.stop()


def authed(method: str, url: str, body=None):
    return http(method, url, body, headers={"Authorization": f"Bearer {TOKEN}"})


@pytest.fixture
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
        yield b
        b.close()


def canvas_pixel(page, x: int, y: int) -> tuple[int, int, int]:
    return tuple(page.evaluate("([x, y]) => Array.from(document.querySelector('#screen canvas')"
                               ".getContext('2d').getImageData(x, y, 1, 1).data.slice(0, 3))", [x, y]))


def log_in(page, base: str) -> None:
    page.goto(base + "/login")
    page.fill("input[name=token]", TOKEN)
    page.click("button")
    page.wait_for_url(base + "/")


def test_the_page_asks_for_the_token(viewed, browser):
    base = viewed.state["view"]
    assert http("GET", base + "/api/status").status == 401
    page = browser.new_page()
    page.goto(base + "/")
    assert page.url.endswith("/login")
    page.fill("input[name=token]", "wrong")
    page.click("button")
    assert "not the token" in page.content()
    # A token in the address is not taken (it would stay in the history and the logs).
    page.goto(f"{base}/?token={TOKEN}")
    assert page.url.endswith("/login")
    log_in(page, base)
    assert page.url == base + "/"
    page.wait_for_selector("#screen canvas", timeout=20_000)


def test_the_canvas_shows_the_desktop_and_takes_input_only_after_take_control(viewed, browser, pages):
    base = viewed.state["view"]
    window = wait_until(lambda: next((w for w in authed("GET", viewed.desktopd + "/api/v1/tree").json()["windows"]
                                      if "input fixture" in (w["title"] or "")), None), 30, what="the fixture")
    assert window
    shot = Image.open(io.BytesIO(authed("GET", viewed.desktopd + "/api/v1/screenshot").body)).convert("RGB")
    # The fixture's #drag square (#3a7) is somewhere in the page: where the screenshot has it.
    spot = next((x, y) for y in range(0, 800, 4) for x in range(0, 1280, 4) if shot.getpixel((x, y)) == (51, 170, 119))
    page = browser.new_page()
    log_in(page, base)
    page.wait_for_selector("#screen canvas", timeout=20_000)
    wait_until(lambda: canvas_pixel(page, *spot) == (51, 170, 119), 20, what="the fixture's colour in the canvas")
    assert page.text_content("#state") == "view only"

    layout = authed("GET", viewed.bridge + "/layout").json()
    assert layout  # (the bridge answers with the token)
    scene = authed("GET", viewed.scene + "/api/v1/find?selector=" + 'button%5Bname%3DSubmit%5D').json()
    x, y, w, h = scene["matches"][0]["bbox"]
    target = (x + w // 2, y + h // 2)
    canvas = page.locator("#screen canvas").bounding_box()
    pages.clear()
    page.mouse.click(canvas["x"] + target[0], canvas["y"] + target[1])
    page.wait_for_timeout(1000)
    assert pages.matching(type="click", target="submit") == []  # view only: nothing passed on

    page.click("#take")
    wait_until(lambda: page.text_content("#status") == "connected", 20, what="the controlling connection")
    assert page.text_content("#state") == "you have control"
    health = authed("GET", viewed.scene + "/api/v1/health").json()["view"]
    assert health["control"] is True and health["viewers_in_control"] == {"0": 1}
    canvas = page.locator("#screen canvas").bounding_box()
    page.mouse.click(canvas["x"] + target[0], canvas["y"] + target[1])
    pages.wait_for(type="click", target="submit", timeout=10)
    page.click("#give")
    wait_until(lambda: authed("GET", base + "/api/status").json()["control"] is False, 10,
               what="control given back")


def rfb_click(url: str, x: int, y: int) -> None:
    """A VNC client in a few lines: the handshake, then a left click at (x, y)."""
    with connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, max_size=None) as ws:
        buffer = bytearray()

        def read(n: int) -> bytes:
            while len(buffer) < n:
                buffer.extend(ws.recv(timeout=10))
            out = bytes(buffer[:n])
            del buffer[:n]
            return out

        version = read(12)
        ws.send(version)
        count = read(1)[0]
        assert 1 in read(count)  # security type None (the relay guards the socket)
        ws.send(bytes([1]))
        assert read(4) == b"\0\0\0\0"
        ws.send(bytes([1]))  # shared
        read(20)
        read(struct.unpack(">I", read(4))[0])  # the desktop's name
        for mask in (1, 0):
            ws.send(bytes([5, mask]) + struct.pack(">HH", x, y))
        time.sleep(0.5)


def test_the_relay_itself_drops_input_without_control(viewed, pages):
    base = viewed.state["view"].replace("http://", "ws://") + "/websockify?display=0"
    found = authed("GET", viewed.scene + "/api/v1/find?selector=" + "button%5Bname%3DOther%5D").json()
    x, y, w, h = found["matches"][0]["bbox"]
    pages.clear()
    rfb_click(base + "&control=0", x + w // 2, y + h // 2)
    time.sleep(0.5)
    assert pages.matching(type="click", target="other") == []
    rfb_click(base + "&control=1", x + w // 2, y + h // 2)
    pages.wait_for(type="click", target="other", timeout=10)


def test_the_page_reconnects_when_the_vnc_server_dies(viewed, browser):
    """A fault that loses nothing: wayvnc is killed under a watching page; the view starts
    a new one on the next connection, and the page reconnects by itself."""
    base = viewed.state["view"]
    page = browser.new_page()
    log_in(page, base)
    wait_until(lambda: page.text_content("#status") == "connected", 20, what="the first connection")
    sock = f"{viewed.state['runtime_dir']}/vnc-0.sock"
    found = subprocess.run(["pgrep", "-f", f"wayvnc .*{sock}"], capture_output=True, text=True).stdout.split()
    assert len(found) == 1, found
    os.kill(int(found[0]), signal.SIGKILL)
    wait_until(lambda: page.text_content("#status") != "connected", 10, what="the page to see the loss")
    wait_until(lambda: page.text_content("#status") == "connected", 30, what="the page to reconnect")
    page.wait_for_selector("#screen canvas", timeout=10_000)
    again = subprocess.run(["pgrep", "-f", f"wayvnc .*{sock}"], capture_output=True, text=True).stdout.split()
    assert again and again != found
    assert authed("GET", base + "/api/status").json()["vnc_servers"] == [0]
