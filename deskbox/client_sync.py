"""The synchronous client of a deskbox session: ``deskbox.Client``. Generated from
``client.AsyncClient`` by ``python -m deskbox.client_gen``; do not edit by hand.

    with Client.from_state_file("/tmp/deskbox.json") as desk:
        desk.act(desk.find('button[name="Submit"]').matches[0].id)

Its calls run on one event loop every ``Client`` of the process shares, in a daemon thread
started at the first; ``close()`` closes its connections."""

from __future__ import annotations

from typing import Any, Literal, overload

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
from .client import AsyncClient, DiffForm, Mode, Service, SyncBase
from .common.options import DEFAULT_URLS

__all__ = ["Client"]


class Client(SyncBase):
    """A session's services by base URL (None for one it does not run) and its bearer
    token, called plainly (``AsyncClient`` with ``await``). Use it as ``with``, or call
    ``close()``."""

    def __init__(self, scene: str | None = DEFAULT_URLS["scene"], desktopd: str | None = DEFAULT_URLS["desktopd"],
                 bridge: str | None = DEFAULT_URLS["bridge"], token: str | None = None, *,
                 timeout: float = 60.0, interface: str | None = None, keep_alive: bool = True) -> None:
        self._start(lambda: AsyncClient(scene, desktopd, bridge, token, timeout=timeout, interface=interface,
                                        keep_alive=keep_alive))

    def request(self, service: Service, method: str, path: str, *, query: dict[str, Any] | None = None,
                body: Any = None, raw: bool = False, timeout: float | None = None) -> Any:
        """One call of a service: ``query`` as its parameters (None left out, flags as
        1/0), ``body`` as JSON. Answers the JSON, text as ``str``, or with ``raw``
        ``(bytes, headers)``. The methods below are this with names and arguments."""
        return self._run(self._client.request(service, method, path, query=query, body=body, raw=raw, timeout=timeout))

    def scene(self, mode: Mode = "active", *, interactive: bool = False, display: int | None = None,
              window: str | None = None) -> Scene:
        """``GET /api/v1/scene``: the Scene JSON."""
        return self._run(self._client.scene(mode, interactive=interactive, display=display, window=window))

    def text(self, mode: Mode = "active", *, interactive: bool = False, display: int | None = None,
             window: str | None = None, max_chars: int | None = None, max_tokens: int | None = None,
             offscreen: bool | None = None) -> str:
        """``GET /api/v1/scene/text``: the scene as prompt text, element ids in brackets."""
        return self._run(self._client.text(mode, interactive=interactive, display=display, window=window,
                                           max_chars=max_chars, max_tokens=max_tokens, offscreen=offscreen))

    def find(self, selector: str, *, mode: str | None = None, limit: int | None = None) -> Matches:
        """``GET /api/v1/find``: what a selector (``button[name="Submit"]``) matches."""
        return self._run(self._client.find(selector, mode=mode, limit=limit))

    def observe(self, since: str | None = None, *, mode: str | None = None, interactive: bool | None = None,
                display: int | None = None, window: str | None = None, format: DiffForm | None = None,
                text: bool | None = None, observation: bool | None = None) -> Observed:
        """``GET /api/v1/observe``: the state and a token; with ``since`` only what changed."""
        return self._run(self._client.observe(since, mode=mode, interactive=interactive, display=display, window=window,
                                              format=format, text=text, observation=observation))

    def sketch(self, *, window: str | None = None, display: int | None = None, cols: int | None = None,
               rows: int | None = None, mode: str | None = None) -> Sketch:
        """``GET /api/v1/sketch``: a window or display as labelled boxes on a character grid."""
        return self._run(self._client.sketch(window=window, display=display, cols=cols, rows=rows, mode=mode))

    @overload
    def description(self, *, window: str | None = None, limit: int | None = None, mode: str | None = None,
                    vlm: Literal[False] = False) -> str: ...

    @overload
    def description(self, *, window: str | None = None, limit: int | None = None, mode: str | None = None,
                    vlm: Literal[True]) -> Description: ...

    def description(self, *, window: str | None = None, limit: int | None = None, mode: str | None = None,
                    vlm: bool = False) -> str | Description:
        """``GET /api/v1/description``: a window in prose (the focused one by default). With
        ``vlm`` the session's vision model describes it too, and the whole answer comes
        back, a ``Description`` (409 ``vlm_not_configured`` when the session has no model)."""
        return self._run(self._client.description(window=window, limit=limit, mode=mode, vlm=vlm))

    def wait_for(self, any_of: list[dict[str, Any]], *, timeout_ms: int | None = None,
                 poll_ms: int | None = None) -> WaitResult:
        """``POST /api/v1/wait_for``: until one condition holds (``matched``) or the timeout."""
        return self._run(self._client.wait_for(any_of, timeout_ms=timeout_ms, poll_ms=poll_ms))

    def assert_state(self, predicates: list[dict[str, Any]], *, mode: str | None = None) -> Checked:
        """``POST /api/v1/assert_state``: each predicate passed or not, and what was seen."""
        return self._run(self._client.assert_state(predicates, mode=mode))

    def screenshot(self, display: int = 0, *, marks: bool = False, format: Literal["png", "jpeg"] = "png",
                   all_elements: bool = False) -> bytes:
        """``GET /api/v1/screenshot``: one display's pixels; ``marks`` draws element ids
        on it (every element with a box with ``all_elements``, else the interactive ones)."""
        return self._run(self._client.screenshot(display, marks=marks, format=format, all_elements=all_elements))

    def act(self, target: str, action: str = "click", *, text: str | None = None,
            option: str | None = None, option_index: int | None = None, keys: str | list[str] | None = None,
            to: dict[str, Any] | None = None, settle_ms: int | None = None) -> Receipt:
        """``POST /api/v1/act``: ``action`` on element ``target`` (click, type ``text``,
        select ``option``/``option_index``, key ``keys``, drag ``to`` ``{"target"}`` or
        ``{"point": [x, y]}``, invoke, clear_text ...); answers the receipt."""
        return self._run(self._client.act(target, action, text=text, option=option, option_index=option_index,
                                          keys=keys, to=to, settle_ms=settle_ms))

    def act_and_observe(self, target: str, action: str = "click", *, text: str | None = None,
                        option: str | None = None, option_index: int | None = None,
                        keys: str | list[str] | None = None, to: dict[str, Any] | None = None,
                        settle_ms: int | None = None, since: str | None = None,
                        format: DiffForm | None = None) -> ActObserved:
        """``POST /api/v1/act_and_observe``: ``act``, then what changed (since ``since``,
        else since just before the action)."""
        return self._run(self._client.act_and_observe(target, action, text=text, option=option,
                                                      option_index=option_index, keys=keys, to=to, settle_ms=settle_ms,
                                                      since=since, format=format))

    def type_and_observe(self, text: str, *, settle_ms: int | None = None, since: str | None = None,
                         format: DiffForm | None = None) -> ActObserved:
        """``POST /api/v1/type_and_observe``: type where the focus is, then what changed."""
        return self._run(self._client.type_and_observe(text, settle_ms=settle_ms, since=since, format=format))

    def key_and_observe(self, keys: str | list[str], *, settle_ms: int | None = None,
                        since: str | None = None, format: DiffForm | None = None) -> ActObserved:
        """``POST /api/v1/key_and_observe``: press keys (``"ctrl+s"``), then what changed."""
        return self._run(self._client.key_and_observe(keys, settle_ms=settle_ms, since=since, format=format))

    def snapshot_save(self, *, label: str | None = None, ttl_s: float | None = None,
                      screenshot: bool | None = None, mode: str | None = None,
                      interactive: bool | None = None, display: int | None = None,
                      window: str | None = None) -> SnapshotInfo:
        """``POST /api/v1/snapshots``: keep the state now under an id (``s1`` ...)."""
        return self._run(self._client.snapshot_save(label=label, ttl_s=ttl_s, screenshot=screenshot, mode=mode,
                                                    interactive=interactive, display=display, window=window))

    def snapshots(self) -> SnapshotList:
        """``GET /api/v1/snapshots``: the snapshots kept."""
        return self._run(self._client.snapshots())

    def snapshot(self, snapshot_id: str) -> Snapshot:
        """``GET /api/v1/snapshots/{id}``: one snapshot with its observation."""
        return self._run(self._client.snapshot(snapshot_id))

    def snapshot_delete(self, snapshot_id: str) -> Dropped:
        """``DELETE /api/v1/snapshots/{id}``."""
        return self._run(self._client.snapshot_delete(snapshot_id))

    def snapshot_diff(self, a: str, b: str = "now", *, format: DiffForm | None = None) -> SnapshotDiff:
        """``POST /api/v1/snapshots/diff``: what changed from snapshot ``a`` to ``b`` (or now)."""
        return self._run(self._client.snapshot_diff(a, b, format=format))

    def session(self) -> SessionInfo:
        """``GET /api/v1/session``: what the session runs, its snapshots, context and lifetime."""
        return self._run(self._client.session())

    def session_reset(self, snapshot: str | None = None) -> SessionReset:
        """``POST /api/v1/session/reset``: back to a snapshot (default ``start``: as right
        after start), answered once the session is healthy again (``healthy``). Every
        element id handed out before is retired."""
        return self._run(self._client.session_reset(snapshot))

    def session_snapshot(self, name: str) -> SavedState:
        """``POST /api/v1/session/snapshot``: keep the home folder and browser profile as
        they are now under ``name``, a later ``session_reset(name)``'s target."""
        return self._run(self._client.session_snapshot(name))

    def session_snapshot_delete(self, name: str) -> Deleted:
        """``DELETE /api/v1/session/snapshot/{name}``."""
        return self._run(self._client.session_snapshot_delete(name))

    def session_extend(self, seconds: float) -> Extended:
        """``POST /api/v1/session/extend``: the lifetime (``--ttl``) longer by ``seconds``."""
        return self._run(self._client.session_extend(seconds))

    def session_settle(self, *, quiet_share: float | None = None, for_s: float | None = None,
                       timeout_s: float | None = None) -> Settled:
        """``POST /api/v1/session/settle``: until the session's processes used less than
        ``quiet_share`` of a core over ``for_s`` seconds (what a task's setup started has
        started and drawn), or ``timeout_s`` passed (``settled`` false)."""
        return self._run(self._client.session_settle(quiet_share=quiet_share, for_s=for_s, timeout_s=timeout_s))

    def session_claim(self, holder: str, ttl_s: float | None = None) -> SessionClaim:
        """``POST /api/v1/session/claim``: the session is ``holder``'s for ``ttl_s``
        seconds (or its claim renewed); ``ActionFailedError`` ``claimed`` while another's runs."""
        return self._run(self._client.session_claim(holder, ttl_s))

    def session_release(self, holder: str) -> Released:
        """``DELETE /api/v1/session/claim/{holder}``: let go of the claim (``released``
        false when it had run out already)."""
        return self._run(self._client.session_release(holder))

    @overload
    def computer(self, provider: Literal["anthropic"], action: dict[str, Any],
                 **query: Any) -> AnthropicReply: ...

    @overload
    def computer(self, provider: Literal["openai"], action: dict[str, Any], **query: Any) -> OpenAIReply: ...

    @overload
    def computer(self, provider: Literal["gemini"], action: dict[str, Any], **query: Any) -> GeminiReply: ...

    def computer(self, provider: Literal["anthropic", "openai", "gemini"], action: dict[str, Any],
                 **query: Any) -> AnthropicReply | OpenAIReply | GeminiReply:
        """``POST /api/v1/computer/{provider}``: the model's own action payload in, the
        reply its SDK takes back out (a dict, typed per provider); ``query`` is the
        adapter's (display, display_width, display_height, settle_ms, and the provider's
        own)."""
        return self._run(self._client.computer(provider, action, **query))

    def pointer(self, action: Literal["move", "click", "down", "up", "drag", "scroll"], x: float | None = None,
                y: float | None = None, *, display: int | None = None, button: str | None = None,
                count: int | None = None, path: list[tuple[float, float]] | None = None,
                dx: float | None = None, dy: float | None = None, modifiers: list[str] | None = None,
                duration_ms: int | None = None) -> InputDone:
        """desktopd ``POST /api/v1/pointer``: at display-local device pixels (the screenshot's)."""
        return self._run(self._client.pointer(action, x, y, display=display, button=button, count=count, path=path,
                                              dx=dx, dy=dy, modifiers=modifiers, duration_ms=duration_ms))

    def pointer_position(self) -> PointerPosition:
        """desktopd ``GET /api/v1/pointer``: where desktopd last put the pointer."""
        return self._run(self._client.pointer_position())

    def keyboard(self, action: Literal["type", "key", "down", "up"], *, text: str | None = None,
                 keys: str | list[str] | None = None, key: str | None = None,
                 interval_ms: int | None = None) -> InputDone:
        """desktopd ``POST /api/v1/keyboard``: type text, press combinations, hold keys."""
        return self._run(self._client.keyboard(action, text=text, keys=keys, key=key, interval_ms=interval_ms))

    def tree(self) -> WindowTree:
        """desktopd ``GET /api/v1/tree``: displays and windows (display-local bounds)."""
        return self._run(self._client.tree())

    def windows(self) -> list[Window]:
        """The windows of ``tree()``."""
        return self._run(self._client.windows())

    def focus_window(self, window_id: str) -> WindowDone:
        """desktopd ``POST /api/v1/windows/{id}/focus``."""
        return self._run(self._client.focus_window(window_id))

    def close_window(self, window_id: str) -> WindowDone:
        """desktopd ``POST /api/v1/windows/{id}/close``: asks the window to close."""
        return self._run(self._client.close_window(window_id))

    def move_window(self, window_id: str, display: int) -> WindowDone:
        """desktopd ``POST /api/v1/windows/{id}/move``: to another display."""
        return self._run(self._client.move_window(window_id, display))

    def displays(self) -> DisplayList:
        """desktopd ``GET /api/v1/displays``."""
        return self._run(self._client.displays())

    def tabs(self) -> list[Tab]:
        """Bridge ``GET /tabs``: the browser's page targets (``id``, ``title``, ``url`` ...)."""
        return self._run(self._client.tabs())

    def new_tab(self, url: str = "about:blank") -> TabDone:
        """Bridge ``POST /tabs``: a new tab showing ``url`` (its ``id``)."""
        return self._run(self._client.new_tab(url))

    def activate_tab(self, tab_id: str) -> TabDone:
        """Bridge ``POST /tabs``: bring a tab to the front."""
        return self._run(self._client.activate_tab(tab_id))

    def close_tab(self, tab_id: str) -> TabDone:
        """Bridge ``POST /tabs``: close a tab."""
        return self._run(self._client.close_tab(tab_id))

    def navigate(self, url: str, *, tab: str | None = None) -> Navigated:
        """Bridge ``POST /navigate``: a tab (default: the first) to ``url``."""
        return self._run(self._client.navigate(url, tab=tab))

    @overload
    def health(self, service: Literal["scene"] = "scene") -> SceneHealth: ...

    @overload
    def health(self, service: Literal["desktopd"]) -> DesktopdHealth: ...

    @overload
    def health(self, service: Literal["bridge"]) -> BridgeHealth: ...

    def health(self, service: Service = "scene") -> SceneHealth | DesktopdHealth | BridgeHealth:
        """``GET /health`` of a service: whether it is up, and what it says of itself."""
        return self._run(self._client.health(service))
