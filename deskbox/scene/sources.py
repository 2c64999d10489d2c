"""The aggregator's view of the other services: desktopd and the CDP bridge over their
HTTP APIs (never their internals). Their failures are translated here into our errors."""

from __future__ import annotations

import asyncio
import contextvars
from dataclasses import dataclass
from typing import Any, Callable

import orjson
from aiohttp import ClientError, ClientSession, ClientTimeout

from ..common.errors import ServiceError, Unavailable, from_answer
from ..common.web import INTERNAL_HEADER
from ..geometry import Display, Rect, device_rect

__all__ = ["Desktop", "Bridge", "Frame", "Window", "Tree", "INPUT_SINK"]


@dataclass(frozen=True, slots=True)
class Window:
    id: str
    app_id: str | None
    pid: int | None
    title: str | None
    bounds: Rect | None  # display-local device pixels
    display_id: int | None
    focused: bool

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "app_id": self.app_id, "pid": self.pid, "title": self.title,
                "bounds": self.bounds_list, "display_id": self.display_id, "focused": self.focused}

    @property
    def bounds_list(self) -> list[int] | None:
        return list(device_rect(self.bounds)) if self.bounds is not None else None


@dataclass(frozen=True, slots=True)
class Tree:
    displays: list[Display]
    windows: list[Window]
    focused: str | None


@dataclass(frozen=True, slots=True)
class Frame:
    """One display's pixels as packed RGB rows."""

    display_id: int
    width: int
    height: int
    rgb: bytes


class _Service:
    name = "service"

    def __init__(self, base: str, token: str | None, timeout: float = 30.0) -> None:
        self.base = base
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._timeout = ClientTimeout(total=timeout)
        self._http: ClientSession | None = None

    async def start(self) -> None:
        self._http = ClientSession(timeout=self._timeout, headers=self._headers, json_serialize=lambda o: orjson.dumps(o).decode())

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()

    async def _request(self, method: str, path: str, *, params: dict | None = None, json: Any = None,
                       raw: bool = False, headers: dict[str, str] | None = None):
        assert self._http is not None
        try:
            async with self._http.request(method, self.base + path, params=params, json=json,
                                          headers=headers) as resp:
                body = await resp.read()
                if resp.status >= 400:
                    raise self._error(resp.status, body, path)
                if raw:
                    return body, resp.headers
                if resp.status == 204 or not body:
                    return None
                return orjson.loads(body)
        except ServiceError:
            raise
        except (ClientError, asyncio.TimeoutError, OSError, ValueError) as exc:
            raise Unavailable(f"{self.name} at {self.base} is not answering ({path}): {exc!r}",
                              code=f"{self.name}_unavailable") from exc

    def _error(self, status: int, body: bytes, path: str) -> ServiceError:
        return from_answer(status, body, f"{self.name} {path}")


# Where the input the scene sends desktopd is told to the action it is part of (the
# gate's open step), if any: called with ("pointer" | "keyboard", the request).
INPUT_SINK: contextvars.ContextVar[Callable[[str, dict[str, Any]], None] | None] = contextvars.ContextVar(
    "deskbox_input_sink", default=None)


class Desktop(_Service):
    name = "desktopd"

    def __init__(self, base: str, token: str | None, timeout: float = 30.0, *, secret: str | None = None) -> None:
        super().__init__(base, token, timeout)
        if secret:
            self._headers[INTERNAL_HEADER] = secret  # desktopd does not ask the gate about it
        self._frames: dict[int, tuple[str, Frame]] = {}  # display -> (ETag, frame)

    async def tree(self) -> Tree:
        data = await self._request("GET", "/api/v1/tree")
        displays = [
            Display(d["id"], d["name"], Rect(*d["bounds"]), d["scale"], tuple(d["size"]), bool(d.get("primary"))) for d in data["displays"]
        ]
        windows = [
            Window(w["id"], w.get("app_id"), w.get("pid"), w.get("title"),
                   Rect(*w["bounds"]) if w.get("bounds") else None, w.get("display_id"), bool(w.get("focused")))
            for w in data["windows"]
        ]
        return Tree(displays, windows, data.get("focused"))

    async def frame(self, display_id: int) -> Frame:
        """The display's pixels. While the screen has not changed since the last call,
        desktopd answers 304 to the tag of the last frame and the same ``Frame`` object
        comes back (no capture, no 6 MB transfer; callers may key work on its identity)."""
        last = self._frames.get(display_id)
        body, headers = await self._request(
            "GET", "/api/v1/screenshot", params={"display": str(display_id), "format": "rgb"}, raw=True,
            headers={"If-None-Match": last[0]} if last else None)
        tag = headers.get("ETag")
        if last is not None and not body and tag == last[0]:
            return last[1]
        frame = Frame(display_id, int(headers["X-Deskbox-Width"]), int(headers["X-Deskbox-Height"]), body)
        if tag:
            self._frames[display_id] = (tag, frame)
        else:
            self._frames.pop(display_id, None)
        return frame

    async def screenshot(self, params: dict[str, str]) -> tuple[bytes, dict[str, str]]:
        body, headers = await self._request("GET", "/api/v1/screenshot", params=params, raw=True)
        return body, dict(headers)

    async def pointer(self, **request: Any) -> None:
        await self._request("POST", "/api/v1/pointer", json=request)
        self._sent("pointer", request)

    async def keyboard(self, **request: Any) -> None:
        await self._request("POST", "/api/v1/keyboard", json=request)
        self._sent("keyboard", request)

    @staticmethod
    def _sent(kind: str, request: dict[str, Any]) -> None:
        sink = INPUT_SINK.get()
        if sink is not None:
            sink(kind, request)

    async def health(self) -> dict:
        return await self._request("GET", "/api/v1/health")

    async def displays(self) -> list[Display]:
        data = await self._request("GET", "/api/v1/displays")
        return [Display(d["id"], d["name"], Rect(*d["bounds"]), d["scale"], tuple(d["size"]), bool(d.get("primary")))
                for d in data["displays"]]

    async def pointer_position(self) -> tuple[int, float, float] | None:
        """Where desktopd last put the pointer: (display, x, y) in device pixels, or None
        before it has moved it."""
        data = await self._request("GET", "/api/v1/pointer")
        if data is None or data.get("display") is None:
            return None
        return data["display"], data["x"], data["y"]

    async def tell_gate(self, active: bool) -> None:
        """Tell desktopd whether to take the input it is sent directly to the gate."""
        await self._request("POST", "/api/v1/gate", json={"active": active})

    async def focus_window(self, window_id: str) -> None:
        await self._request("POST", f"/api/v1/windows/{window_id}/focus")


class Bridge(_Service):
    name = "bridge"

    async def layouts(self) -> list[dict]:
        data = await self._request("GET", "/layout", params={"interesting": "1"})
        return data["tabs"]

    async def health(self) -> dict:
        return await self._request("GET", "/health")

    async def tabs(self) -> list[dict]:
        """Chromium's page targets, the most recently active first (DevTools orders its
        list so)."""
        return await self._request("GET", "/tabs")

    async def navigate(self, url: str, tab: str | None = None) -> dict:
        return await self._request("POST", "/navigate", json={"url": url, "tab": tab})

    async def element(self, action: str, ref: dict[str, Any], **extra: Any) -> dict:
        """Ask the bridge about one DOM node, or to do something to it that is not input:
        ``scroll_into_view``, ``focus``, ``hit_test`` (is it what is at viewport CSS point
        x, y?)."""
        body = {"action": action, "tab": ref["tab"], "frameId": ref["frameId"],
                "backendDOMNodeId": ref["backendDOMNodeId"], **extra}
        return await self._request("POST", "/element", json=body)


class LiveView(_Service):
    """The live view (deskbox up --view): who has taken control of the desktop."""

    name = "view"

    async def status(self) -> dict:
        return await self._request("GET", "/api/status")
