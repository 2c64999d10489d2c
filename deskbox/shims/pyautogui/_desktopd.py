"""The shim's two nouns: the Screen (pyautogui's one coordinate space over deskbox's
displays) and the Desktopd client that sends it input.

Screen coordinates: the displays side by side, left to right in desktopd's order, in
device pixels (the pixels of their screenshots), tops aligned at y = 0. With one
display (the usual session) a screen point is that display's pixel. A point past the
edge is clamped to the nearest display pixel, as an X server keeps its pointer on
screen."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, NamedTuple

from ._errors import DesktopdError

__all__ = ["Part", "Screen", "Desktopd", "DEFAULT_URL"]

DEFAULT_URL = "http://127.0.0.1:8080"


class Part(NamedTuple):
    """One display's place on the screen."""

    display: int
    left: int
    width: int
    height: int


class Screen:
    def __init__(self, displays: list[dict]) -> None:
        if not displays:
            raise ValueError("desktopd reports no displays")
        ordered = sorted(displays, key=lambda d: (d["bounds"][0], d["bounds"][1], d["id"]))
        parts, left = [], 0
        for d in ordered:
            w, h = int(d["size"][0]), int(d["size"][1])
            parts.append(Part(int(d["id"]), left, w, h))
            left += w
        self.parts: list[Part] = parts
        self.width = left
        self.height = max(p.height for p in parts)

    @property
    def corners(self) -> list[tuple[int, int]]:
        w, h = self.width - 1, self.height - 1
        return [(0, 0), (w, 0), (0, h), (w, h)]

    def part_at(self, x: int) -> Part:
        for part in self.parts:
            if x < part.left + part.width:
                return part
        return self.parts[-1]

    def clamp(self, x: int, y: int) -> tuple[int, int]:
        """The screen point desktopd can reach nearest to (x, y)."""
        part = self.part_at(max(0, x))
        x = min(max(x, part.left), part.left + part.width - 1)
        y = min(max(y, 0), part.height - 1)
        return x, y

    def to_display(self, x: int, y: int) -> tuple[int, int, int]:
        """(display id, x, y) in that display's device pixels, after clamping."""
        x, y = self.clamp(x, y)
        part = self.part_at(x)
        return part.display, x - part.left, y

    def to_screen(self, display: int, x: float, y: float) -> tuple[int, int]:
        for part in self.parts:
            if part.display == display:
                return part.left + int(x), int(y)
        raise ValueError(f"display {display} is not on the screen")

    def contains(self, x: int, y: int) -> bool:
        return any(p.left <= x < p.left + p.width and 0 <= y < p.height for p in self.parts)


class Desktopd:
    """A small synchronous client: the environment names desktopd (DESKBOX_DESKTOPD,
    default http://127.0.0.1:8080) and its token (DESKBOX_TOKEN)."""

    DISPLAYS_TTL = 1.0

    def __init__(self, url: str | None = None, token: str | None = None, timeout: float = 60) -> None:
        self._url = url
        self._token = token
        self.timeout = timeout
        self._screen: tuple[float, Screen] | None = None

    @property
    def url(self) -> str:
        return (self._url or os.environ.get("DESKBOX_DESKTOPD") or DEFAULT_URL).rstrip("/")

    @property
    def token(self) -> str | None:
        return self._token if self._token is not None else os.environ.get("DESKBOX_TOKEN") or None

    def request(self, method: str, path: str, body: Any = None, query: dict | None = None) -> tuple[bytes, dict]:
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        interface = os.environ.get("DESKBOX_INTERFACE")
        if interface:  # what traces and the session's policy call this program's input
            req.add_header("X-Deskbox-Interface", interface)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.read(), {k.lower(): v for k, v in resp.headers.items()}
        except urllib.error.HTTPError as err:
            raw = err.read()
            try:
                error = json.loads(raw)["error"]
                message, code = str(error.get("message")), error.get("code")
            except (ValueError, KeyError, TypeError, AttributeError):
                message, code = raw.decode("utf-8", "replace")[:500] or err.reason, None
            raise DesktopdError(f"desktopd refused {method} {path}: {message}", status=err.code, code=code) from None
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise DesktopdError(f"cannot reach desktopd at {self.url}: {reason}") from None

    def json(self, method: str, path: str, body: Any = None) -> Any:
        raw, _ = self.request(method, path, body)
        return json.loads(raw)

    def screen(self, fresh: bool = False) -> Screen:
        now = time.monotonic()
        if fresh or self._screen is None or now - self._screen[0] > self.DISPLAYS_TTL:
            self._screen = (now, Screen(self.json("GET", "/api/v1/displays")["displays"]))
        return self._screen[1]

    def pointer(self, **body: Any) -> dict:
        return self.json("POST", "/api/v1/pointer", body)

    def keyboard(self, **body: Any) -> dict:
        return self.json("POST", "/api/v1/keyboard", body)

    def position(self) -> tuple[int, int] | None:
        """Where desktopd last put the pointer, in screen coordinates; None if it has
        not moved it yet."""
        pos = self.json("GET", "/api/v1/pointer")
        if pos.get("display") is None:
            return None
        return self.screen().to_screen(pos["display"], pos["x"], pos["y"])

    def screenshot(self, display: int, region: tuple[int, int, int, int] | None = None) -> bytes:
        query: dict[str, Any] = {"display": display, "format": "png"}
        if region is not None:
            query["region"] = ",".join(str(v) for v in region)
        raw, _ = self.request("GET", "/api/v1/screenshot", query=query)
        return raw
