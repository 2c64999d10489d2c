"""The Python client of a deskbox session: one method per HTTP call of the scene
aggregator, desktopd and the CDP bridge, answering pydantic models of their JSON
(``deskbox.answers``: ``Scene``, ``Receipt``, ``WindowTree`` ...; ``computer()`` answers the
provider's own dict, which its SDK takes back).
``AsyncClient`` is the asyncio one; ``deskbox.Client`` (``client_sync``) has the same
methods, called plainly:

    async with AsyncClient.from_state_file("/tmp/deskbox.json") as desk:
        print(await desk.text())
        await desk.act("a0-12")

    with Client.from_state_file("/tmp/deskbox.json") as desk:
        desk.act(desk.find('button[name="Submit"]').matches[0].id)

Every failure is a ``DeskboxError`` carrying the service's error body, of the one family
the services raise too (``deskbox.common.errors``)::

    DeskboxError (5xx, or no status: internal)
    +-- InvalidRequestError (400 and other 4xx): could not be parsed or validated
    |   +-- NotFoundError (404): no such element, tab, snapshot, route
    |   +-- ExpiredError (410): a token or snapshot that was valid and is no more
    +-- UnauthorizedError (401): no token, or the wrong one
    +-- DeniedError (403): the session's policy does not allow that action
    +-- ActionFailedError (409): valid, but it could not be applied now (stale, occluded ...)
    +-- TooLargeError (422): beyond a documented limit
    +-- BudgetExceededError (429): a budget of the session's policy is spent
    +-- UnavailableError (503): a component the request needs is down
    |   +-- ConnectError (no status): the service did not answer at all
    +-- DeadlineExceededError (504, or no status for the client's own timeout)
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path
from typing import Any, Callable, Coroutine, Literal, Self, TypeVar, overload
from urllib.parse import quote

from .answers import (
    ActObserved,
    AnthropicReply,
    BridgeHealth,
    Checked,
    Deleted,
    Description,
    DesktopdHealth,
    DisplayList,
    Dropped,
    Extended,
    GeminiReply,
    InputDone,
    Matches,
    Navigated,
    Observed,
    OpenAIReply,
    PointerPosition,
    Receipt,
    Released,
    SavedState,
    Scene,
    SceneHealth,
    SessionClaim,
    SessionInfo,
    SessionReset,
    Settled,
    Sketch,
    Snapshot,
    SnapshotDiff,
    SnapshotInfo,
    SnapshotList,
    Tab,
    TabDone,
    WaitResult,
    Window,
    WindowDone,
    WindowTree,
)
from .common.errors import (
    ActionFailedError,
    BudgetExceededError,
    ConnectError,
    DeadlineExceededError,
    DeniedError,
    DeskboxError,
    ExpiredError,
    InvalidRequestError,
    NotFoundError,
    TooLargeError,
    UnauthorizedError,
    UnavailableError,
)
from .common.options import DEFAULT_URLS, VLM_TIMEOUT_S, client_env
from .common.service_client import ServiceClient
from .common.session_api import FORWARDED_SLOW, SCENE_RESET_S, SettleRequest
from .common.web import INTERFACE_HEADER

__all__ = [
    "AsyncClient",
    "SyncBase",
    "DeskboxError",
    "InvalidRequestError",
    "NotFoundError",
    "ExpiredError",
    "UnauthorizedError",
    "ActionFailedError",
    "DeniedError",
    "BudgetExceededError",
    "TooLargeError",
    "UnavailableError",
    "ConnectError",
    "DeadlineExceededError",
]

Service = Literal["scene", "desktopd", "bridge"]
Mode = Literal["idle", "active", "agent-turn"]
DiffForm = Literal["compact", "json-patch"]
T = TypeVar("T")


def _query(**params: Any) -> dict[str, str]:
    """Query parameters as the services parse them: None left out, flags as 1/0."""
    return {k: ("1" if v else "0") if isinstance(v, bool) else str(v) for k, v in params.items() if v is not None}


def _body(**fields: Any) -> dict[str, Any]:
    """A JSON body without the fields left at None, so the service's defaults apply."""
    return {k: v for k, v in fields.items() if v is not None}


class AsyncClient:
    """A session's services by base URL (None for one it does not run) and its bearer
    token. Use it as ``async with``, or call ``close()``. ``deskbox.Client`` has the same
    methods for code without an event loop."""

    def __init__(self, scene: str | None = DEFAULT_URLS["scene"], desktopd: str | None = DEFAULT_URLS["desktopd"],
                 bridge: str | None = DEFAULT_URLS["bridge"], token: str | None = None, *,
                 timeout: float = 60.0, interface: str | None = None, keep_alive: bool = True) -> None:
        self.urls: dict[str, str | None] = {"scene": scene, "desktopd": desktopd, "bridge": bridge}
        self.urls = {k: v.rstrip("/") if v else None for k, v in self.urls.items()}
        self.timeout = timeout
        # What the session's traces, audit log and allow/deny rules call this client.
        headers = {INTERFACE_HEADER: interface} if interface else {}
        # One core per service (deskbox.common.service_client), its errors passed on as
        # they came. keep_alive=False: a connection of its own for every call, for a caller
        # whose calls are minutes apart and whose session may restart between them (a POST
        # is not sent again on a kept connection the service has closed meanwhile).
        self._services = {name: ServiceClient(url, token, timeout, headers=headers, name=name, relays=False,
                                              public=True, keep_alive=keep_alive)
                          for name, url in self.urls.items() if url}

    @classmethod
    def from_state_file(cls, path: str | Path, token: str | None = None, **kwargs: Any) -> Self:
        """The session ``deskbox up --state-file PATH`` wrote; the token (never in the
        file) is ``token`` or ``DESKBOX_TOKEN``."""
        state = json.loads(Path(path).read_text())
        return cls(state["scene"], state["desktopd"], state.get("bridge"), token or client_env("token"), **kwargs)

    @classmethod
    def from_env(cls, **kwargs: Any) -> Self:
        """``DESKBOX_STATE_FILE``, else ``DESKBOX_SCENE`` / ``DESKBOX_DESKTOPD`` /
        ``DESKBOX_BRIDGE`` (deskbox up's ports by default); ``DESKBOX_TOKEN``."""
        state_file = client_env("state_file")
        if state_file:
            return cls.from_state_file(state_file, **kwargs)
        return cls(client_env("scene") or DEFAULT_URLS["scene"], client_env("desktopd") or DEFAULT_URLS["desktopd"],
                   client_env("bridge") or DEFAULT_URLS["bridge"], client_env("token"), **kwargs)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        for service in self._services.values():
            await service.close()

    async def request(self, service: Service, method: str, path: str, *, query: dict[str, Any] | None = None,
                      body: Any = None, raw: bool = False, timeout: float | None = None) -> Any:
        """One call of a service: ``query`` as its parameters (None left out, flags as
        1/0), ``body`` as JSON. Answers the JSON, text as ``str``, or with ``raw``
        ``(bytes, headers)``. The methods below are this with names and arguments."""
        core = self._services.get(service)
        if core is None:
            raise UnavailableError(f"this client has no {service} URL (the session runs without it?)",
                                   code=f"no_{service}", recoverable=False, status=None)
        return await core.request(method, path, params=_query(**query) if query else None, json=body, raw=raw,
                                  timeout=timeout)

    # -- the scene: observing ------------------------------------------------------------

    async def scene(self, mode: Mode = "active", *, interactive: bool = False, display: int | None = None,
                    window: str | None = None) -> Scene:
        """``GET /api/v1/scene``: the Scene JSON."""
        return Scene.model_validate(await self.request("scene", "GET", "/api/v1/scene", query=dict(
            mode=mode, interactive=interactive, display=display, window=window)))

    async def text(self, mode: Mode = "active", *, interactive: bool = False, display: int | None = None,
                   window: str | None = None, max_chars: int | None = None, max_tokens: int | None = None,
                   offscreen: bool | None = None) -> str:
        """``GET /api/v1/scene/text``: the scene as prompt text, element ids in brackets."""
        return await self.request("scene", "GET", "/api/v1/scene/text", query=dict(
            mode=mode, interactive=interactive, display=display, window=window, max_chars=max_chars,
            max_tokens=max_tokens, offscreen=offscreen))

    async def find(self, selector: str, *, mode: str | None = None, limit: int | None = None) -> Matches:
        """``GET /api/v1/find``: what a selector (``button[name="Submit"]``) matches."""
        return Matches.model_validate(await self.request("scene", "GET", "/api/v1/find", query=dict(
            selector=selector, mode=mode, limit=limit)))

    async def observe(self, since: str | None = None, *, mode: str | None = None, interactive: bool | None = None,
                      display: int | None = None, window: str | None = None, format: DiffForm | None = None,
                      text: bool | None = None, observation: bool | None = None) -> Observed:
        """``GET /api/v1/observe``: the state and a token; with ``since`` only what changed."""
        return Observed.model_validate(await self.request("scene", "GET", "/api/v1/observe", query=dict(
            since=since, mode=mode, interactive=interactive, display=display, window=window, format=format,
            text=text, observation=observation)))

    async def sketch(self, *, window: str | None = None, display: int | None = None, cols: int | None = None,
                     rows: int | None = None, mode: str | None = None) -> Sketch:
        """``GET /api/v1/sketch``: a window or display as labelled boxes on a character grid."""
        return Sketch.model_validate(await self.request("scene", "GET", "/api/v1/sketch", query=dict(
            window=window, display=display, cols=cols, rows=rows, mode=mode)))

    @overload
    async def description(self, *, window: str | None = None, limit: int | None = None, mode: str | None = None,
                          vlm: Literal[False] = False) -> str: ...

    @overload
    async def description(self, *, window: str | None = None, limit: int | None = None, mode: str | None = None,
                          vlm: Literal[True]) -> Description: ...

    async def description(self, *, window: str | None = None, limit: int | None = None, mode: str | None = None,
                          vlm: bool = False) -> str | Description:
        """``GET /api/v1/description``: a window in prose (the focused one by default). With
        ``vlm`` the session's vision model describes it too, and the whole answer comes
        back, a ``Description`` (409 ``vlm_not_configured`` when the session has no model)."""
        answer = await self.request("scene", "GET", "/api/v1/description", query=dict(
            window=window, limit=limit, mode=mode, vlm=vlm or None),
            timeout=self.timeout + VLM_TIMEOUT_S if vlm else None)
        return Description.model_validate(answer) if vlm else answer["text"]

    async def wait_for(self, any_of: list[dict[str, Any]], *, timeout_ms: int | None = None,
                       poll_ms: int | None = None) -> WaitResult:
        """``POST /api/v1/wait_for``: until one condition holds (``matched``) or the timeout."""
        wait_s = (timeout_ms if timeout_ms is not None else 10_000) / 1000
        return WaitResult.model_validate(await self.request("scene", "POST", "/api/v1/wait_for",
                                                            body=_body(any_of=any_of, timeout_ms=timeout_ms,
                                                                       poll_ms=poll_ms),
                                                            timeout=self.timeout + wait_s))

    async def assert_state(self, predicates: list[dict[str, Any]], *, mode: str | None = None) -> Checked:
        """``POST /api/v1/assert_state``: each predicate passed or not, and what was seen."""
        return Checked.model_validate(await self.request("scene", "POST", "/api/v1/assert_state",
                                                         body=_body(predicates=predicates, mode=mode)))

    async def screenshot(self, display: int = 0, *, marks: bool = False, format: Literal["png", "jpeg"] = "png",
                         all_elements: bool = False) -> bytes:
        """``GET /api/v1/screenshot``: one display's pixels; ``marks`` draws element ids
        on it (every element with a box with ``all_elements``, else the interactive ones)."""
        data, _ = await self.request("scene", "GET", "/api/v1/screenshot", query=dict(
            display=display, marks=marks, format=format, all=all_elements or None), raw=True)
        return data

    # -- the scene: acting on elements ----------------------------------------------------

    async def act(self, target: str, action: str = "click", *, text: str | None = None,
                  option: str | None = None, option_index: int | None = None, keys: str | list[str] | None = None,
                  to: dict[str, Any] | None = None, settle_ms: int | None = None) -> Receipt:
        """``POST /api/v1/act``: ``action`` on element ``target`` (click, type ``text``,
        select ``option``/``option_index``, key ``keys``, drag ``to`` ``{"target"}`` or
        ``{"point": [x, y]}``, invoke, clear_text ...); answers the receipt."""
        return Receipt.model_validate(await self.request("scene", "POST", "/api/v1/act", body=_body(
            target=target, action=action, text=text, option=option, option_index=option_index, keys=keys, to=to,
            settle_ms=settle_ms)))

    async def act_and_observe(self, target: str, action: str = "click", *, text: str | None = None,
                              option: str | None = None, option_index: int | None = None,
                              keys: str | list[str] | None = None, to: dict[str, Any] | None = None,
                              settle_ms: int | None = None, since: str | None = None,
                              format: DiffForm | None = None) -> ActObserved:
        """``POST /api/v1/act_and_observe``: ``act``, then what changed (since ``since``,
        else since just before the action)."""
        return ActObserved.model_validate(await self.request("scene", "POST", "/api/v1/act_and_observe", body=_body(
            target=target, action=action, text=text, option=option, option_index=option_index, keys=keys, to=to,
            settle_ms=settle_ms, since=since, format=format)))

    async def type_and_observe(self, text: str, *, settle_ms: int | None = None, since: str | None = None,
                               format: DiffForm | None = None) -> ActObserved:
        """``POST /api/v1/type_and_observe``: type where the focus is, then what changed."""
        return ActObserved.model_validate(await self.request("scene", "POST", "/api/v1/type_and_observe", body=_body(
            text=text, settle_ms=settle_ms, since=since, format=format)))

    async def key_and_observe(self, keys: str | list[str], *, settle_ms: int | None = None,
                              since: str | None = None, format: DiffForm | None = None) -> ActObserved:
        """``POST /api/v1/key_and_observe``: press keys (``"ctrl+s"``), then what changed."""
        return ActObserved.model_validate(await self.request("scene", "POST", "/api/v1/key_and_observe", body=_body(
            keys=keys, settle_ms=settle_ms, since=since, format=format)))

    # -- the scene: snapshots of the observed state ----------------------------------------

    async def snapshot_save(self, *, label: str | None = None, ttl_s: float | None = None,
                            screenshot: bool | None = None, mode: str | None = None,
                            interactive: bool | None = None, display: int | None = None,
                            window: str | None = None) -> SnapshotInfo:
        """``POST /api/v1/snapshots``: keep the state now under an id (``s1`` ...)."""
        return SnapshotInfo.model_validate(await self.request("scene", "POST", "/api/v1/snapshots", body=_body(
            label=label, ttl_s=ttl_s, screenshot=screenshot, mode=mode, interactive=interactive, display=display,
            window=window)))

    async def snapshots(self) -> SnapshotList:
        """``GET /api/v1/snapshots``: the snapshots kept."""
        return SnapshotList.model_validate(await self.request("scene", "GET", "/api/v1/snapshots"))

    async def snapshot(self, snapshot_id: str) -> Snapshot:
        """``GET /api/v1/snapshots/{id}``: one snapshot with its observation."""
        return Snapshot.model_validate(await self.request("scene", "GET", f"/api/v1/snapshots/{snapshot_id}"))

    async def snapshot_delete(self, snapshot_id: str) -> Dropped:
        """``DELETE /api/v1/snapshots/{id}``."""
        return Dropped.model_validate(await self.request("scene", "DELETE", f"/api/v1/snapshots/{snapshot_id}"))

    async def snapshot_diff(self, a: str, b: str = "now", *, format: DiffForm | None = None) -> SnapshotDiff:
        """``POST /api/v1/snapshots/diff``: what changed from snapshot ``a`` to ``b`` (or now)."""
        return SnapshotDiff.model_validate(await self.request("scene", "POST", "/api/v1/snapshots/diff",
                                                              body=_body(a=a, b=b, format=format)))

    # -- the scene: the session (snapshots of its state, resets, lifetime, claims) ---------

    async def session(self) -> SessionInfo:
        """``GET /api/v1/session``: what the session runs, its snapshots, context and lifetime."""
        return SessionInfo.model_validate(await self.request("scene", "GET", "/api/v1/session"))

    async def session_reset(self, snapshot: str | None = None) -> SessionReset:
        """``POST /api/v1/session/reset``: back to a snapshot (default ``start``: as right
        after start), answered once the session is healthy again (``healthy``). Every
        element id handed out before is retired."""
        return SessionReset.model_validate(await self.request(
            "scene", "POST", "/api/v1/session/reset", body=_body(snapshot=snapshot),
            timeout=max(self.timeout, SCENE_RESET_S + 10)))

    async def session_snapshot(self, name: str) -> SavedState:
        """``POST /api/v1/session/snapshot``: keep the home folder and browser profile as
        they are now under ``name``, a later ``session_reset(name)``'s target."""
        return SavedState.model_validate(await self.request(
            "scene", "POST", "/api/v1/session/snapshot", body={"name": name},
            timeout=max(self.timeout, FORWARDED_SLOW.seconds + 10)))

    async def session_snapshot_delete(self, name: str) -> Deleted:
        """``DELETE /api/v1/session/snapshot/{name}``."""
        return Deleted.model_validate(await self.request("scene", "DELETE",
                                                         f"/api/v1/session/snapshot/{quote(name, safe='')}"))

    async def session_extend(self, seconds: float) -> Extended:
        """``POST /api/v1/session/extend``: the lifetime (``--ttl``) longer by ``seconds``."""
        return Extended.model_validate(await self.request("scene", "POST", "/api/v1/session/extend",
                                                          body={"seconds": seconds}))

    async def session_settle(self, *, quiet_share: float | None = None, for_s: float | None = None,
                             timeout_s: float | None = None) -> Settled:
        """``POST /api/v1/session/settle``: until the session's processes used less than
        ``quiet_share`` of a core over ``for_s`` seconds (what a task's setup started has
        started and drawn), or ``timeout_s`` passed (``settled`` false)."""
        wait_s = timeout_s if timeout_s is not None else SettleRequest.model_fields["timeout_s"].default
        return Settled.model_validate(await self.request(
            "scene", "POST", "/api/v1/session/settle",
            body=_body(quiet_share=quiet_share, for_s=for_s, timeout_s=timeout_s), timeout=self.timeout + wait_s))

    async def session_claim(self, holder: str, ttl_s: float | None = None) -> SessionClaim:
        """``POST /api/v1/session/claim``: the session is ``holder``'s for ``ttl_s``
        seconds (or its claim renewed); ``ActionFailedError`` ``claimed`` while another's runs."""
        return SessionClaim.model_validate(await self.request("scene", "POST", "/api/v1/session/claim",
                                                              body=_body(holder=holder, ttl_s=ttl_s)))

    async def session_release(self, holder: str) -> Released:
        """``DELETE /api/v1/session/claim/{holder}``: let go of the claim (``released``
        false when it had run out already)."""
        return Released.model_validate(await self.request("scene", "DELETE",
                                                          f"/api/v1/session/claim/{quote(holder, safe='')}"))

    # -- the scene: provider-shaped computer actions ---------------------------------------

    @overload
    async def computer(self, provider: Literal["anthropic"], action: dict[str, Any],
                       **query: Any) -> AnthropicReply: ...

    @overload
    async def computer(self, provider: Literal["openai"], action: dict[str, Any], **query: Any) -> OpenAIReply: ...

    @overload
    async def computer(self, provider: Literal["gemini"], action: dict[str, Any], **query: Any) -> GeminiReply: ...

    async def computer(self, provider: Literal["anthropic", "openai", "gemini"], action: dict[str, Any],
                       **query: Any) -> AnthropicReply | OpenAIReply | GeminiReply:
        """``POST /api/v1/computer/{provider}``: the model's own action payload in, the
        reply its SDK takes back out (a dict, typed per provider); ``query`` is the
        adapter's (display, display_width, display_height, settle_ms, and the provider's
        own)."""
        return await self.request("scene", "POST", f"/api/v1/computer/{provider}", query=dict(**query),
                                   body=action)

    # -- desktopd: input at coordinates, windows, displays ---------------------------------

    async def pointer(self, action: Literal["move", "click", "down", "up", "drag", "scroll"], x: float | None = None,
                      y: float | None = None, *, display: int | None = None, button: str | None = None,
                      count: int | None = None, path: list[tuple[float, float]] | None = None,
                      dx: float | None = None, dy: float | None = None, modifiers: list[str] | None = None,
                      duration_ms: int | None = None) -> InputDone:
        """desktopd ``POST /api/v1/pointer``: at display-local device pixels (the screenshot's)."""
        return InputDone.model_validate(await self.request("desktopd", "POST", "/api/v1/pointer", body=_body(
            action=action, x=x, y=y, display=display, button=button, count=count, path=path, dx=dx, dy=dy,
            modifiers=modifiers, duration_ms=duration_ms)))

    async def pointer_position(self) -> PointerPosition:
        """desktopd ``GET /api/v1/pointer``: where desktopd last put the pointer."""
        return PointerPosition.model_validate(await self.request("desktopd", "GET", "/api/v1/pointer"))

    async def keyboard(self, action: Literal["type", "key", "down", "up"], *, text: str | None = None,
                       keys: str | list[str] | None = None, key: str | None = None,
                       interval_ms: int | None = None) -> InputDone:
        """desktopd ``POST /api/v1/keyboard``: type text, press combinations, hold keys."""
        return InputDone.model_validate(await self.request("desktopd", "POST", "/api/v1/keyboard", body=_body(
            action=action, text=text, keys=keys, key=key, interval_ms=interval_ms)))

    async def tree(self) -> WindowTree:
        """desktopd ``GET /api/v1/tree``: displays and windows (display-local bounds)."""
        return WindowTree.model_validate(await self.request("desktopd", "GET", "/api/v1/tree"))

    async def windows(self) -> list[Window]:
        """The windows of ``tree()``."""
        return (await self.tree()).windows

    async def focus_window(self, window_id: str) -> WindowDone:
        """desktopd ``POST /api/v1/windows/{id}/focus``."""
        return WindowDone.model_validate(await self.request("desktopd", "POST", f"/api/v1/windows/{window_id}/focus"))

    async def close_window(self, window_id: str) -> WindowDone:
        """desktopd ``POST /api/v1/windows/{id}/close``: asks the window to close."""
        return WindowDone.model_validate(await self.request("desktopd", "POST", f"/api/v1/windows/{window_id}/close"))

    async def move_window(self, window_id: str, display: int) -> WindowDone:
        """desktopd ``POST /api/v1/windows/{id}/move``: to another display."""
        return WindowDone.model_validate(await self.request("desktopd", "POST",
                                                            f"/api/v1/windows/{window_id}/move",
                                                            body={"display": display}))

    async def displays(self) -> DisplayList:
        """desktopd ``GET /api/v1/displays``."""
        return DisplayList.model_validate(await self.request("desktopd", "GET", "/api/v1/displays"))

    # -- the CDP bridge: tabs ------------------------------------------------------------

    async def tabs(self) -> list[Tab]:
        """Bridge ``GET /tabs``: the browser's page targets (``id``, ``title``, ``url`` ...)."""
        return [Tab.model_validate(t) for t in await self.request("bridge", "GET", "/tabs")]

    async def new_tab(self, url: str = "about:blank") -> TabDone:
        """Bridge ``POST /tabs``: a new tab showing ``url`` (its ``id``)."""
        return TabDone.model_validate(await self.request("bridge", "POST", "/tabs",
                                                         body={"action": "new", "url": url}))

    async def activate_tab(self, tab_id: str) -> TabDone:
        """Bridge ``POST /tabs``: bring a tab to the front."""
        return TabDone.model_validate(await self.request("bridge", "POST", "/tabs",
                                                         body={"action": "activate", "id": tab_id}))

    async def close_tab(self, tab_id: str) -> TabDone:
        """Bridge ``POST /tabs``: close a tab."""
        return TabDone.model_validate(await self.request("bridge", "POST", "/tabs",
                                                         body={"action": "close", "id": tab_id}))

    async def navigate(self, url: str, *, tab: str | None = None) -> Navigated:
        """Bridge ``POST /navigate``: a tab (default: the first) to ``url``."""
        return Navigated.model_validate(await self.request("bridge", "POST", "/navigate",
                                                           body=_body(url=url, tab=tab)))

    # -- any service ------------------------------------------------------------------------

    @overload
    async def health(self, service: Literal["scene"] = "scene") -> SceneHealth: ...

    @overload
    async def health(self, service: Literal["desktopd"]) -> DesktopdHealth: ...

    @overload
    async def health(self, service: Literal["bridge"]) -> BridgeHealth: ...

    async def health(self, service: Service = "scene") -> SceneHealth | DesktopdHealth | BridgeHealth:
        """``GET /health`` of a service: whether it is up, and what it says of itself."""
        model = {"scene": SceneHealth, "desktopd": DesktopdHealth, "bridge": BridgeHealth}[service]
        return model.model_validate(await self.request(service, "GET", "/health"))


class SyncBase:
    """What the synchronous ``Client`` (``deskbox.client_sync``, its methods generated from
    ``AsyncClient``'s) adds: an ``AsyncClient`` whose calls run on one event loop that
    every ``Client`` of the process shares, in a thread started at the first (a runner
    with 30 sessions has one such thread, not 30). ``close()`` closes the client's
    connections; the loop's thread is a daemon."""

    @classmethod
    def from_state_file(cls, path: str | Path, token: str | None = None, **kwargs: Any) -> Self:
        """The session ``deskbox up --state-file PATH`` wrote; the token (never in the
        file) is ``token`` or ``DESKBOX_TOKEN``."""
        sync = cls.__new__(cls)
        sync._start(lambda: AsyncClient.from_state_file(path, token, **kwargs))
        return sync

    @classmethod
    def from_env(cls, **kwargs: Any) -> Self:
        """``DESKBOX_STATE_FILE``, else ``DESKBOX_SCENE`` / ``DESKBOX_DESKTOPD`` /
        ``DESKBOX_BRIDGE`` (deskbox up's ports by default); ``DESKBOX_TOKEN``."""
        sync = cls.__new__(cls)
        sync._start(lambda: AsyncClient.from_env(**kwargs))
        return sync

    def _start(self, make: Callable[[], AsyncClient]) -> None:
        self._make = make
        self._pid = os.getpid()
        self._loop = _shared_loop()
        self._async = make()
        self._closed = False

    @property
    def _client(self) -> AsyncClient:
        """The asyncio client the calls run on; in a forked child a new one on the child's
        loop (the parent's loop has no thread there, and its connections are the parent's)."""
        if self._pid != os.getpid():
            self._pid, self._loop, self._async = os.getpid(), _shared_loop(), self._make()
        return self._async

    @property
    def urls(self) -> dict[str, str | None]:
        return self._client.urls

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            raise UnavailableError("this deskbox Client is closed", code="client_closed", recoverable=False,
                                   status=None)
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if not self._closed:
            if self._pid == os.getpid():
                asyncio.run_coroutine_threadsafe(self._async.close(), self._loop).result()
            self._closed = True


_LOOP_LOCK = threading.Lock()
_LOOP: tuple[int, asyncio.AbstractEventLoop, threading.Thread] | None = None


def _after_fork() -> None:
    global _LOOP_LOCK
    _LOOP_LOCK = threading.Lock()  # (another thread may have held it at the fork)


os.register_at_fork(after_in_child=_after_fork)


def _shared_loop() -> asyncio.AbstractEventLoop:
    """The event loop the process's synchronous clients share, started on first use (and
    again in a forked child, where the parent's thread does not run)."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP[0] != os.getpid() or not _LOOP[2].is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="deskbox-client", daemon=True)
            thread.start()
            _LOOP = (os.getpid(), loop, thread)
        return _LOOP[1]
