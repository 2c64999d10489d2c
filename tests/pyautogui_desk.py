"""The desks the pyautogui shim's tests run on: headless Sway (Wayland) and desktopd's
X11 backend (Xvfb), each with the fixture page in a real Chromium recording what arrives
(tests/test_pyautogui_shim.py, tests/test_pyautogui_computer13.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import urllib.parse
from pathlib import Path

import pytest

from deskbox.common.paths import SHIMS_DIR
from deskbox.session.layout import SESSION_SITE
from tests.conftest import open_fixture
from tests.support import css_to_device, free_port, http, wait_until
from tests.test_x11_backend import XvfbDesktop, _stop

PAGE = "pyautogui.html"
SWATCH = (12, 200, 34)


class Desk:
    """One backend under test: where pyautogui programs run, and the page they act on."""

    def __init__(self, name: str, pages, desktopd_url: str) -> None:
        self.name = name
        self.pages = pages
        self.desktopd = desktopd_url

    # -- running pyautogui programs -------------------------------------------------------

    def env(self) -> dict[str, str]:
        raise NotImplementedError

    def popen(self, argv: list[str]) -> subprocess.Popen:
        return subprocess.Popen(argv, env=self.env(), cwd="/", stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def run(self, code: str, *, stdlib_only: bool = True, ok: bool = True, timeout: float = 90):
        """Run ``code`` (after ``import pyautogui``) in a new Python inside the session.
        ``stdlib_only``: with -S, no site-packages at all, as a bare system Python."""
        argv = [sys.executable, *(["-S"] if stdlib_only else []), "-c",
                "import pyautogui\n" + textwrap.dedent(code)]
        proc = self.popen(argv)
        out, err = proc.communicate(timeout=timeout)
        if ok:
            assert proc.returncode == 0, f"pyautogui program failed:\n{err[-3000:]}"
        return proc.returncode, out, err

    def output(self, code: str, **kw) -> dict:
        """Run ``code`` that prints one JSON object last; return it."""
        _, out, _ = self.run(code, **kw)
        return json.loads(out.strip().splitlines()[-1])

    # -- the page -------------------------------------------------------------------------

    def desktopd_get(self, path: str) -> dict:
        resp = http("GET", self.desktopd + path)
        assert resp.status == 200, resp.body[:300]
        return resp.json()

    def window(self) -> dict:
        def find():
            tree = self.desktopd_get("/api/v1/tree")
            return next((w for w in tree["windows"] if "chromium" in (w["app_id"] or "").lower()), None)

        return wait_until(find, 20, what="a Chromium window")

    def open(self) -> dict:
        raise NotImplementedError

    def centre(self, load: dict, element: str) -> tuple[int, int]:
        r = load["rects"][element]
        x, y = css_to_device(self.window(), load, r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
        return int(x), int(y)


class WaylandDesk(Desk):
    def __init__(self, session, pages) -> None:
        super().__init__("wayland", pages, session.desktopd)
        self.session = session

    def env(self) -> dict[str, str]:
        return self.session.app_env()

    def popen(self, argv: list[str]) -> subprocess.Popen:
        # As the session's user, as OSWorld's commands run.
        return self.session.launch(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def open(self) -> dict:
        return open_fixture(self.session, self.pages, PAGE)


class X11Desk(Desk):
    """Xvfb, desktopd --backend x11, and Chromium on it with a DevTools port to open pages."""

    def __init__(self, pages) -> None:
        self.xvfb = XvfbDesktop()
        super().__init__("x11", pages, self.xvfb.url)
        self.chromium: subprocess.Popen | None = None
        self.cdp = f"http://127.0.0.1:{free_port()}"

    def start(self) -> "X11Desk":
        self.xvfb.start()
        profile = tempfile.mkdtemp(prefix="deskbox-pyautogui-chromium-", dir=self.xvfb.tmp)
        port = urllib.parse.urlsplit(self.cdp).port
        argv = ["chromium", "--ozone-platform=x11", "--no-sandbox", "--no-first-run", "--no-default-browser-check",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-gpu",
                f"--user-data-dir={profile}", "--window-position=0,0", "--window-size=1280,800",
                "--remote-debugging-address=127.0.0.1", f"--remote-debugging-port={port}", "about:blank"]
        with open(self.xvfb.tmp / "chromium.log", "wb") as log:
            self.chromium = subprocess.Popen(argv, env={**os.environ, "DISPLAY": self.xvfb.display}, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(lambda: self._tabs() is not None, 30, what="Chromium's DevTools on X11")
        return self

    def stop(self) -> None:
        if self.chromium is not None:
            _stop(self.chromium)
            try:
                os.killpg(self.chromium.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.xvfb.stop()

    def _tabs(self) -> list[dict] | None:
        try:
            return [t for t in http("GET", self.cdp + "/json/list", timeout=5).json() if t["type"] == "page"]
        except (OSError, ValueError):
            return None

    def env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/"),
                "PYTHONPATH": f"{SHIMS_DIR}:{SESSION_SITE}", "DESKBOX_DESKTOPD": self.desktopd}

    def open(self) -> dict:
        self.pages.clear()
        old = self._tabs() or []
        url = self.pages.url(PAGE)
        tab = http("PUT", self.cdp + "/json/new?" + urllib.parse.quote(url, safe=":/?=&")).json()
        for t in old:
            http("GET", self.cdp + f"/json/close/{t['id']}")
        http("GET", self.cdp + f"/json/activate/{tab['id']}")
        load = self.pages.wait_for(type="load", page="/" + PAGE, timeout=20)
        self.pages.settle(0.2)
        self.pages.clear()
        return load


@pytest.fixture(scope="module", params=[pytest.param("wayland", marks=pytest.mark.desktop),
                                        pytest.param("x11", marks=pytest.mark.x11)])
def desk(request, pages):
    if request.param == "wayland":
        yield WaylandDesk(request.getfixturevalue("single"), pages)
        return
    x11 = X11Desk(pages)
    try:
        yield x11.start()
    finally:
        x11.stop()


@pytest.fixture
def shared_dir():
    """A folder the session's user may write to."""
    path = Path(tempfile.mkdtemp(prefix="deskbox-pyautogui-test-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def page(desk):
    """The fixture page, fresh; the pointer parked mid-screen (away from the fail-safe
    corners) by a plain desktopd move. Returns the page's load report."""
    load = desk.open()
    resp = http("POST", desk.desktopd + "/api/v1/pointer", {"action": "move", "x": 640, "y": 600})
    assert resp.status == 200, resp.body
    return load
