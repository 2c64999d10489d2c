"""The one HTTP client core of deskbox's services, under the public client and the
internal ones alike: a service's URL, its credential, its time bound, and the one
decoding of its answers.

A ``ServiceClient`` keeps one aiohttp session carrying the session's token (and, for
desktopd, the internal secret), decodes a service's ``{"error": {...}}`` answer into the
``common.errors`` class of its status (``errors.from_answer``), and raises
``ConnectError`` when the service did not answer at all.

Two kinds of caller use it:

- **A service** calling another (the scene aggregator and the OSWorld server call
  desktopd and the bridge, desktopd the scene's gate). A service that does not answer,
  or not in time, is ``ConnectError`` with the code ``<service>_unavailable`` (503 to
  this service's caller). The other's error answer is relayed (``relays = True``): its
  failure is unavailability here, the message names the call; desktopd's gate client
  passes the gate's refusals on as they came (``relays = False``).
- **The public client** (``deskbox.AsyncClient``, one of these per service, ``public``):
  an error keeps the status and message it came with; no answer is ``ConnectError``
  (``unreachable``), no answer in time ``DeadlineExceededError`` (``client_timeout``),
  both without a status.

The answers are the services' JSON as they send it (text, for a text answer); a caller
that wants typed objects builds them on top (the scene's ``sources.Desktop``, the public
client's ``deskbox.answers``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from json import dumps as std_dumps
from json import loads as std_loads
from typing import Any, Self

import orjson
from aiohttp import ClientError, ClientSession, ClientTimeout, TCPConnector

from .errors import ConnectError, DeadlineExceededError, DeskboxError, from_answer
from .web import INTERNAL_HEADER

__all__ = ["ServiceClient", "DesktopdClient", "BridgeClient", "Frame"]


@dataclass(frozen=True, slots=True)
class Frame:
    """One display's pixels as packed RGB rows."""

    display_id: int
    width: int
    height: int
    rgb: bytes


def _dumps(value: Any) -> str:
    """A request's JSON: orjson's, or Python's for what orjson refuses (an integer past 64
    bits, a lone surrogate), which a caller may pass on from its own caller."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return std_dumps(value)


class ServiceClient:
    """One deskbox service at ``base``; ``close()`` after the last call (or ``async
    with``). ``headers`` go with every call (an interface name, a secret)."""

    name = "service"
    # A service's error answer raised on to this caller's own (its failure is
    # unavailability here, the message names the call); False: passed on as it came.
    relays = True
    # The public client's: no answer, or none in time, is said to the user as it is
    # (unreachable, client_timeout, no status), and answers are read as Python's json
    # reads them. A service's own caller says its component is unavailable instead.
    public = False
    # Said after "<name> at <base> is not answering" when it does not.
    unreachable_hint = ""

    def __init__(self, base: str, token: str | None, timeout: float = 30.0, *,
                 headers: dict[str, str] | None = None, name: str | None = None,
                 relays: bool | None = None, public: bool | None = None, keep_alive: bool = True) -> None:
        self.base = base.rstrip("/")
        self.keep_alive = keep_alive
        self.timeout = timeout
        if name is not None:
            self.name = name
        if relays is not None:
            self.relays = relays
        if public is not None:
            self.public = public
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._headers.update(headers or {})
        self._http: ClientSession | None = None

    async def start(self) -> None:
        if self._http is None:
            self._http = ClientSession(timeout=ClientTimeout(total=self.timeout), headers=self._headers,
                                       json_serialize=_dumps,
                                       connector=None if self.keep_alive else TCPConnector(force_close=True))

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def request(self, method: str, path: str, *, params: dict | None = None, json: Any = None,
                      raw: bool = False, headers: dict[str, str] | None = None, timeout: float | None = None) -> Any:
        """The answer's JSON (None for an empty one; a text answer as ``str``), or with
        ``raw`` its bytes and headers; a ``DeskboxError`` for an error answer or none.
        ``timeout``: this call's bound, not the client's."""
        if self._http is None:
            await self.start()
        assert self._http is not None
        what = f"{self.name} {method} {path}" if self.public else f"{self.name} {path}"
        bound = ClientTimeout(total=timeout) if timeout is not None else None
        try:
            async with self._http.request(method, self.base + path, params=params, json=json, headers=headers,
                                          timeout=bound or self._http.timeout) as resp:
                body = await resp.read()
                if resp.status >= 400:
                    raise from_answer(resp.status, body, what, relayed=self.relays)
                if raw:
                    return body, resp.headers
                if resp.status == 204 or not body:
                    return None
                if resp.content_type != "application/json" and self.public:
                    return body.decode()
                # (the public client reads what Python's json reads: integers of any size,
                # a lone surrogate escaped; the services' own answers are orjson's)
                return std_loads(body) if self.public else orjson.loads(body)
        except DeskboxError:
            raise
        except asyncio.TimeoutError as exc:
            if not self.public:
                raise self._unreachable(path, what, exc) from exc
            raise DeadlineExceededError(f"{what}: no answer within {timeout or self.timeout:g} s",
                                        code="client_timeout", recoverable=True, status=None) from exc
        except (ClientError, OSError, ValueError) as exc:
            raise self._unreachable(path, what, exc) from exc

    def _unreachable(self, path: str, what: str, exc: BaseException) -> ConnectError:
        if not self.public:
            return ConnectError(f"{self.name} at {self.base} is not answering ({path}): {exc!r}"
                                f"{self.unreachable_hint}", code=f"{self.name}_unavailable", status=None)
        return ConnectError(f"{what}: {self.name} at {self.base} is not answering: {exc}",
                            code="unreachable", recoverable=True, status=None)


class DesktopdClient(ServiceClient):
    """desktopd, as its routes answer. With ``secret``, the input it is sent does not go
    through the scene's gate (the scene's own calls carry it)."""

    name = "desktopd"

    def __init__(self, base: str, token: str | None, timeout: float = 30.0, *, secret: str | None = None) -> None:
        super().__init__(base, token, timeout)
        if secret:
            self._headers[INTERNAL_HEADER] = secret
        self._frames: dict[int, tuple[str, Frame]] = {}  # display -> (ETag, frame)

    async def health(self) -> dict:
        return await self.request("GET", "/api/v1/health")

    async def window_tree(self) -> dict[str, Any]:
        """``GET /api/v1/tree``: ``displays``, ``windows`` and ``focused``."""
        return await self.request("GET", "/api/v1/tree")

    async def display_list(self) -> list[dict[str, Any]]:
        return (await self.request("GET", "/api/v1/displays"))["displays"]

    async def pointer_at(self) -> dict[str, Any] | None:
        """Where desktopd last put the pointer (``display``, ``x``, ``y``), or None."""
        return await self.request("GET", "/api/v1/pointer")

    async def screenshot(self, params: dict[str, str]) -> tuple[bytes, dict[str, str]]:
        body, headers = await self.request("GET", "/api/v1/screenshot", params=params, raw=True)
        return body, dict(headers)

    async def frame(self, display_id: int) -> Frame:
        """The display's pixels. While the screen has not changed since the last call,
        desktopd answers 304 to the tag of the last frame and the same ``Frame`` object
        comes back (no capture, no 6 MB transfer; callers may key work on its identity)."""
        last = self._frames.get(display_id)
        body, headers = await self.request(
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

    async def pointer(self, **request: Any) -> None:
        await self.request("POST", "/api/v1/pointer", json=request)

    async def keyboard(self, **request: Any) -> None:
        await self.request("POST", "/api/v1/keyboard", json=request)

    async def window(self, window_id: str, action: str) -> dict:
        """``focus``, ``close``, ``maximize`` ... one window (``POST /api/v1/windows/{id}/{action}``)."""
        return await self.request("POST", f"/api/v1/windows/{window_id}/{action}")

    async def focus_window(self, window_id: str) -> dict:
        return await self.window(window_id, "focus")

    async def tell_gate(self, active: bool) -> None:
        """Tell desktopd whether to take the input it is sent directly to the gate."""
        await self.request("POST", "/api/v1/gate", json={"active": active})


class BridgeClient(ServiceClient):
    """The CDP bridge, as its routes answer."""

    name = "bridge"

    async def health(self) -> dict:
        return await self.request("GET", "/health")

    async def layouts(self) -> list[dict]:
        data = await self.request("GET", "/layout", params={"interesting": "1"})
        return data["tabs"]

    async def tabs(self) -> list[dict]:
        """Chromium's page targets, the most recently active first (DevTools orders its
        list so)."""
        return await self.request("GET", "/tabs")

    async def new_tab(self, url: str) -> dict:
        return await self.request("POST", "/tabs", json={"action": "new", "url": url})

    async def navigate(self, url: str, tab: str | None = None) -> dict:
        return await self.request("POST", "/navigate", json={"url": url, "tab": tab})

    async def element(self, action: str, ref: dict[str, Any], **extra: Any) -> dict:
        """Ask the bridge about one DOM node, or to do something to it that is not input:
        ``scroll_into_view``, ``focus``, ``focused`` (is it, or something in it, focused?),
        ``hit_test`` (is it what is at viewport CSS point x, y?)."""
        body = {"action": action, "tab": ref["tab"], "frameId": ref["frameId"],
                "backendDOMNodeId": ref["backendDOMNodeId"], **extra}
        return await self.request("POST", "/element", json=body)
