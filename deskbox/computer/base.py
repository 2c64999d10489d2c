"""What the three provider adapters share: the declared screen, screenshots at that size,
real input through desktopd, settling, the browser's URL, and key names.

Nouns: a ``Computer`` (one per app: the desktopd and bridge clients, one action at a time)
hands each request a ``Screen``: one display seen at the size the model was told
(``display_width`` x ``display_height``, by default the display's own size). Every point a
model sends goes through the Screen into display device pixels (deskbox.geometry), and
every screenshot comes back at the declared size. Handlers convert and check all their
points before the first input is sent, so a rejected request sends nothing."""

from __future__ import annotations

import asyncio
import base64
import io
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, TypeVar

from aiohttp import web
from PIL import Image
from pydantic import BaseModel, ConfigDict

from ..api.computer import ScreenQuery
from ..common.errors import ActionFailedError, InvalidRequestError, NotFoundError, UnavailableError
from ..common.session_api import SessionControl
from ..common.web import read_body, taking_turn
from ..geometry import (
    Display,
    Rect,
    declared_region_to_display,
    declared_to_display,
    device_rect,
    device_span_to_layout,
    display_to_declared,
    fit_within,
    normalized_to_display,
)
from ..scene.engine import SceneEngine
from ..scene.gate import Gate, traced
from ..scene.sources import Bridge, Desktop

__all__ = ["COMPUTER", "Computer", "Screen", "ScreenQuery", "Shot", "split_combo", "key_name", "png_b64",
           "read_object"]

T = TypeVar("T")
# Chromium under Sway scrolls 180 CSS px per wheel notch from desktopd's virtual
# pointer (measured here on a scale-1 display: 1 notch 180 px, 3 notches 540, half a notch
# 90; tests/test_computer_adapters.py checks the conversion). Providers that give scroll
# distances in pixels (OpenAI, Gemini) are turned into notches with it.
PIXELS_PER_NOTCH = 180.0
# How long open_web_browser waits for the window of a browser it started.
BROWSER_WINDOW_S = 20.0


class _Object(BaseModel):
    model_config = ConfigDict(extra="allow")


async def read_object(request: web.Request) -> dict:
    """The request body as a JSON object, to be validated by the provider's own models
    once an unknown action name has had its own clear error."""
    return (await read_body(request, _Object)).model_dump()


@dataclass(frozen=True)
class Shot:
    """A PNG and its size in pixels."""

    png: bytes
    width: int
    height: int

    @property
    def b64(self) -> str:
        return png_b64(self.png)


def png_b64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")


def _encode(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG", compress_level=3)
    return buf.getvalue()


class Screen:
    """One display, as a model sees it: ``declared`` is the size of the pictures it gets
    and of the space its coordinates are in."""

    def __init__(self, computer: "Computer", display: Display, declared: tuple[int, int]) -> None:
        self.computer = computer
        self.display = display
        self.declared = declared

    @property
    def size(self) -> tuple[int, int]:
        return int(self.display.size[0]), int(self.display.size[1])

    # -- coordinates ------------------------------------------------------------------

    def point(self, x: float, y: float, what: str = "coordinate") -> tuple[float, float]:
        """A declared-size point -> display device pixels; outside the picture is a 400."""
        w, h = self.declared
        if not (0 <= x < w and 0 <= y < h):
            raise InvalidRequestError(f"{what} ({x}, {y}) is outside the {w}x{h} screen", code="out_of_bounds")
        return declared_to_display(self.size, self.declared, x, y)

    def grid_point(self, x: float, y: float, what: str = "coordinate") -> tuple[float, float]:
        """A point on Gemini's 0-999 grid -> display device pixels."""
        if not (0 <= x <= 999 and 0 <= y <= 999):
            raise InvalidRequestError(f"{what} ({x}, {y}) is outside the 0-999 grid", code="out_of_bounds")
        return normalized_to_display(self.size, x, y)

    def grid_distance(self, dx: float, dy: float) -> tuple[float, float]:
        """A distance on Gemini's 0-999 grid -> display device pixels."""
        return normalized_to_display(self.size, dx, dy)

    def declared_point(self, x: float, y: float) -> tuple[int, int]:
        """Display device pixels -> the declared picture's pixels."""
        dx, dy = display_to_declared(self.size, self.declared, x, y)
        return int(dx), int(dy)

    def region(self, x0: float, y0: float, x1: float, y1: float) -> Rect:
        w, h = self.declared
        for x, y in ((x0, y0), (x1, y1)):
            if not (0 <= x <= w and 0 <= y <= h):
                raise InvalidRequestError(f"region corner ({x}, {y}) is outside the {w}x{h} screen",
                                          code="out_of_bounds")
        rect = declared_region_to_display(self.size, self.declared, x0, y0, x1, y1)
        if rect.w < 1 or rect.h < 1:
            raise InvalidRequestError("region is empty: give [x0, y0, x1, y1] with x1 > x0 and y1 > y0",
                                      code="empty_region")
        return rect

    def wheel(self, dx_px: float, dy_px: float) -> tuple[float, float]:
        """A scroll distance in declared pixels -> wheel notches (fractions allowed)."""
        return self.notches(*declared_to_display(self.size, self.declared, dx_px, dy_px))

    def notches(self, dx: float, dy: float) -> tuple[float, float]:
        """A scroll distance in display device pixels -> wheel notches."""
        # Device px -> layout px, the CSS px of an unzoomed page (the notch is measured in CSS px).
        lx, ly = device_span_to_layout(dx, dy, self.display.scale)
        return round(lx / PIXELS_PER_NOTCH, 3), round(ly / PIXELS_PER_NOTCH, 3)

    # -- input (desktopd's HTTP API; never synthetic events) ---------------------------

    async def pointer(self, action: str, at: tuple[float, float] | None = None, **request) -> None:
        if at is not None:
            request["x"], request["y"] = round(at[0], 2), round(at[1], 2)
        await self.computer.desktop.pointer(action=action, display=self.display.id, **request)

    async def keyboard(self, action: str, **request) -> None:
        await self.computer.desktop.keyboard(action=action, **request)

    async def hold(self, keys: list[str], seconds: float) -> None:
        """Press ``keys`` in order, hold them ``seconds``, release them in reverse. Keys
        already down are released whatever happens (a bad key name, a cancelled request)."""
        down: list[str] = []
        try:
            for key in keys:
                await self.keyboard("down", key=key)
                down.append(key)
            await asyncio.sleep(seconds)
        finally:
            for key in reversed(down):
                await self.keyboard("up", key=key)

    async def cursor(self) -> tuple[int, int]:
        """The pointer in declared pixels. desktopd knows where it put the pointer itself
        (GET /api/v1/pointer); before it has moved it, or while it is on another display,
        there is no position on this screen to give."""
        pos = await self.computer.desktop.pointer_position()
        if pos is None:
            raise ActionFailedError("the pointer has no position yet; move it first (mouse_move)",
                                    code="no_pointer_position")
        display, x, y = pos
        if display != self.display.id:
            raise ActionFailedError(f"the pointer is on display {display}, not on display {self.display.id}",
                                    code="pointer_elsewhere")
        return self.declared_point(x, y)

    # -- pictures ---------------------------------------------------------------------

    async def _image(self) -> Image.Image:
        frame = await self.computer.desktop.frame(self.display.id)
        image = Image.frombuffer("RGB", (frame.width, frame.height), frame.rgb, "raw", "RGB", 0, 1)
        guard = self.computer.gate.policy if self.computer.gate is not None else None
        if guard is not None and guard.blurs:
            # (The newest scene's boxes: secrets the engine has seen.)
            image = await asyncio.to_thread(guard.blur_image, image, self.display.id, self.computer.engine.last)
        return image

    async def screenshot(self) -> Shot:
        """The whole display at the declared size."""
        image = await self._image()
        size = self.declared

        def render() -> bytes:
            out = image if image.size == size else image.resize(size, Image.Resampling.LANCZOS)
            return _encode(out)

        return Shot(await asyncio.to_thread(render), *size)

    async def zoom(self, rect: Rect) -> Shot:
        """A region at the display's full resolution (its device pixels), shrunk only
        when it is larger than the declared screen."""
        image = await self._image()
        x, y, w, h = device_rect(rect)
        size = fit_within((w, h), self.declared)

        def render() -> bytes:
            crop = image.crop((x, y, x + w, y + h))
            return _encode(crop if crop.size == size else crop.resize(size, Image.Resampling.LANCZOS))

        return Shot(await asyncio.to_thread(render), *size)


COMPUTER: web.AppKey["Computer"] = web.AppKey("computer")


class Computer:
    """The adapters' access to the session: input and pictures through desktopd, the
    browser through the bridge, change detection through the scene engine."""

    def __init__(self, desktop: Desktop, bridge: Bridge | None, engine: SceneEngine,
                 input_lock: asyncio.Lock | None = None, gate: Gate | None = None,
                 session: SessionControl | None = None) -> None:
        self.desktop = desktop
        self.bridge = bridge
        self.engine = engine
        self.gate = gate
        # The session's control, which starts a browser that is not running (an
        # OSWorld-mode session after its reset); None outside deskbox up.
        self.session = session
        # One action at a time: input is a shared resource (shared with /act's Actor).
        self.input_lock = input_lock or asyncio.Lock()

    async def screen(self, q: ScreenQuery) -> Screen:
        displays = {d.id: d for d in await self.desktop.displays()}
        display = displays.get(q.display)
        if display is None:
            raise NotFoundError(f"unknown display {q.display}; displays are {sorted(displays)}",
                                code="unknown_display")
        size = (int(display.size[0]), int(display.size[1]))
        declared = (q.display_width, q.display_height) if q.display_width and q.display_height else size
        return Screen(self, display, declared)

    async def act(self, q: ScreenQuery, work: Callable[[Screen], Awaitable[T]], *, settle: bool = True,
                  action: str = "computer", args: dict[str, Any] | None = None) -> tuple[Screen, T]:
        """Run ``work`` on the screen, then wait (at most ``settle_ms``) until the display
        has stopped changing, so that the screenshot shows what the action did. The
        provider's ``action`` (with ``args``) is one step of the gate; an action that only
        looks (``settle`` false) counts as a screenshot."""
        async with taking_turn(self.input_lock):
            screen = await self.screen(q)
            did = screen.display.id
            async with traced(self.gate, action, args or {}, display=did, looking=not settle) as step:
                before = (await self.engine.frame_signatures([did]))[did] if settle and q.settle_ms else None
                result = await work(screen)
                self.engine.mark_dirty()
                if before is not None:
                    await self.engine.settle(did, before, q.settle_ms)
                step.receipt = {"ok": True}
            return screen, result

    # -- the browser ------------------------------------------------------------------

    def _need_bridge(self) -> Bridge:
        if self.bridge is None:
            raise UnavailableError("this scene aggregator runs without the CDP bridge (no browser)", code="no_browser")
        return self.bridge

    async def front_tab(self) -> dict | None:
        """The browser tab most recently active (DevTools lists it first), or None."""
        if self.bridge is None:
            return None
        tabs = await self.bridge.tabs()
        return tabs[0] if tabs else None

    async def current_url(self) -> str | None:
        tab = await self.front_tab()
        return tab.get("url") if tab else None

    async def navigate(self, url: str) -> None:
        bridge = self._need_bridge()
        tab = await self.front_tab()
        await bridge.navigate(url, tab["id"] if tab else None)

    async def wait_url(self, changed_from: str | None, timeout: float) -> str | None:
        """The front tab's URL once it differs from ``changed_from`` (or after
        ``timeout`` seconds, whatever it is then)."""
        deadline = time.monotonic() + timeout
        while True:
            url = await self.current_url()
            if url != changed_from or time.monotonic() >= deadline:
                return url
            await asyncio.sleep(0.05)

    async def _browser_windows(self) -> list:
        tree = await self.desktop.tree()
        return [w for w in tree.windows if (w.app_id or "").lower() in ("chromium", "chromium-browser",
                                                                        "google-chrome", "chrome")]

    async def focus_browser(self, *, start: bool = False) -> None:
        """Give the browser window the keyboard (browser shortcuts go to the focused
        window); a 409 when there is no browser window. With ``start``, a browser that
        is not running is started first (through the session, which knows how), and
        its window waited for."""
        windows = await self._browser_windows()
        if not windows and start and self.session is not None and self.session.available:
            await self.session.call("POST", "/browser", {"urls": []})
            deadline = time.monotonic() + BROWSER_WINDOW_S
            while not windows and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
                windows = await self._browser_windows()
        if not windows:
            raise ActionFailedError("there is no browser window", code="no_browser")
        if not any(w.focused for w in windows):
            await self.desktop.focus_window(windows[0].id)


# -- key names --------------------------------------------------------------------------

# Names OpenAI (["CTRL", "A"]) and Gemini/Playwright ("Control+A") use for keys, lower
# case -> the names desktopd takes (xdotool/pyautogui style). Anything else passes through.
_KEY_NAMES = {
    "control": "ctrl", "ctl": "ctrl", "meta": "super", "cmd": "super", "command": "super", "win": "super",
    "windows": "super", "os": "super", "option": "alt", "altgr": "alt_r",
    "enter": "enter", "return": "enter", "esc": "escape", "escape": "escape",
    "arrowleft": "left", "arrowright": "right", "arrowup": "up", "arrowdown": "down",
    "pageup": "pageup", "pagedown": "pagedown", "backspace": "backspace", "delete": "delete",
    "space": "space", "spacebar": "space", "tab": "tab", "home": "home", "end": "end", "insert": "insert",
    "+": "plus", " ": "space",
}


def key_name(name: str) -> str:
    """One key as OpenAI or Gemini names it -> desktopd's name. Letters name keys, not
    characters: "A" is the A key (shift+a would be spelled out), as on a keyboard."""
    if len(name) == 1:
        return _KEY_NAMES.get(name, name.lower() if name.isalpha() else name)
    return _KEY_NAMES.get(name.lower(), name.lower())  # desktopd's names are case-blind


def split_combo(combo: str) -> list[str]:
    """"Control+Shift+T" -> ["Control", "Shift", "T"]; "Control++" ends with the plus
    key; surrounding spaces are dropped."""
    combo = combo.strip()
    if combo == "+":
        return ["+"]
    parts: list[str] = []
    for token in combo.split("+"):
        token = token.strip()
        if token:
            parts.append(token)
        elif parts and parts[-1] != "+":
            parts.append("+")
    if not parts:
        raise InvalidRequestError(f"empty key combination {combo!r}", code="unknown_key")
    return parts
