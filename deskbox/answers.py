"""What ``deskbox.Client`` and ``deskbox.AsyncClient`` answer: pydantic models of the
services' JSON, so that editors complete ``scene.ax[0].bbox`` and type checkers see
it. Every model keeps fields a newer service sends that it does not declare yet
(``extra="allow"``: read them as attributes too) and never rejects an answer for one.

For one release an answer can still be read as the dict it used to be
(``scene["ax"]``, ``receipt.get("point")``, ``"ax" in scene``), with a
``DeprecationWarning`` naming the attribute to use instead. ``model_dump()`` gives the
JSON's dict back (``exclude_unset=True``: only what the service sent)."""

from __future__ import annotations

import warnings
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from typing_extensions import TypedDict  # (pydantic reads typing.TypedDict from Python 3.12 only)

__all__ = ["Answer", "Display", "DisplayList", "Window", "WindowTree", "Element", "OcrText", "FocusedWindow",
           "App", "Scene", "Match", "Matches", "Receipt", "TargetRef", "PointerPosition", "Tab", "InputDone",
           "WindowDone", "DesktopdHealth", "SceneHealth", "BridgeHealth", "Observation", "Observed",
           "ActObserved", "Sketch", "Description", "WaitResult", "CheckResult", "Checked", "SnapshotInfo",
           "SnapshotList", "Snapshot", "Dropped", "SnapshotDiff", "TabDone", "Navigated", "AnthropicReply",
           "OpenAIReply", "GeminiReply", "SavedState", "Child", "SessionClaim", "SessionInfo", "SessionReset",
           "Deleted", "Extended", "Settled", "Released", "undeclared"]

Box = list[int | float]  # [x, y, width, height], display-local device pixels (ints stay ints)


class Answer(BaseModel):
    """A service's JSON answer. Undeclared fields are kept and read as attributes."""

    model_config = ConfigDict(extra="allow", frozen=False, protected_namespaces=())

    # -- the dict it used to be, for one release ----------------------------------------

    def __getitem__(self, key: str) -> Any:
        _deprecated(type(self).__name__, key)
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        _deprecated(type(self).__name__, key)
        return getattr(self, key, default)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self.model_fields_set | set(self.model_extra or {})

    def keys(self) -> list[str]:
        _deprecated(type(self).__name__, "keys()")
        return list(self.model_dump(exclude_unset=True))


def _deprecated(model: str, key: str) -> None:
    warnings.warn(f"deskbox answers are pydantic models: read {model}.{key} as an attribute "
                  f"(answer[{key!r}] works for one more release)", DeprecationWarning, stacklevel=3)


# -- desktopd -------------------------------------------------------------------------------


class Display(Answer):
    id: int
    name: str = ""
    bounds: Box | None = None  # desktopd: its place in the compositor's layout; the scene: [0, 0, w, h]
    size: list[int] | None = None  # device pixels: the screenshot's size
    scale: float = 1.0
    primary: bool = False
    layout_bounds: Box | None = None


class DisplayList(Answer):
    displays: list[Display]


class Window(Answer):
    id: str
    app_id: str | None = None
    pid: int | None = None
    title: str | None = None
    bounds: Box | None = None  # display-local device pixels (None: not on a display)
    layout_bounds: Box | None = None
    display_id: int | None = None
    focused: bool = False
    floating: bool = False
    workspace: str | None = None
    wm_class: list[str] | None = None  # an X11 window's [instance, class]


class WindowTree(Answer):
    displays: list[Display]
    windows: list[Window]
    focused: str | None = None


class PointerPosition(Answer):
    """Where desktopd last put the pointer (all None until it has moved it)."""

    display: int | None = None
    x: float | None = None
    y: float | None = None


class InputDone(Answer):
    """desktopd ``POST /api/v1/pointer`` and ``/api/v1/keyboard``: done, and where the
    pointer is now."""

    ok: bool
    action: str
    pointer: PointerPosition | None = None
    ms: float | None = None  # how long the input took


class WindowDone(Answer):
    """desktopd ``POST /api/v1/windows/{id}/focus|close|move``."""

    ok: bool
    id: str
    action: str
    display: int | None = None  # (move)


class DesktopdHealth(Answer):
    ok: bool
    backend: str | None = None
    displays: int | None = None
    version: str | None = None
    pid: int | None = None
    uptime_s: float | None = None
    error: str | None = None


# -- the scene ------------------------------------------------------------------------------


class Element(Answer):
    id: str
    role: str = ""
    name: str = ""
    value: Any = None
    bbox: Box | None = None
    display_id: int | None = None
    window_id: str | None = None
    source: Literal["cdp", "atspi", "ocr"] | str = "cdp"
    states: list[str] = []
    actions: list[str] | None = None
    visibility: Literal["visible", "partial", "offscreen", "hidden"] | str | None = None
    parent: str | None = None


class OcrText(Answer):
    id: str
    text: str
    bbox: Box
    conf: float | None = None
    display_id: int | None = None
    window_id: str | None = None


class FocusedWindow(Answer):
    id: str
    app: str | None = None
    pid: int | None = None
    title: str | None = None
    display_id: int | None = None
    bounds: Box | None = None


class App(Answer):
    name: str | None = None
    pid: int | None = None
    app_id: str | None = None
    windows: list[Window] = []


class Scene(Answer):
    """``GET /api/v1/scene``: docs/scene.md has every field."""

    version: int | str | None = None
    seq: int
    timestamp: float | None = None
    mode: str | None = None
    displays: list[Display] = []
    focused_window: FocusedWindow | None = None
    apps: list[App] = []
    ax: list[Element] = []
    ocr: list[OcrText] = []
    vlm_scene: Any = None
    vlm_elements: Any = None
    sources: dict[str, str | None] = {}
    build_ms: float | None = None
    timings_ms: dict[str, float] = {}

    def element(self, element_id: str) -> Element | None:
        """The element with this id, if the scene has it."""
        return next((e for e in self.ax if e.id == element_id), None)


class Match(Answer):
    id: str
    kind: str = "element"
    role: str | None = None
    name: str | None = None
    value: Any = None
    bbox: Box | None = None
    states: list[str] | None = None
    actions: list[str] | None = None
    source: str | None = None
    window_id: str | None = None
    display_id: int | None = None
    app: str | None = None
    parent: str | None = None
    visibility: str | None = None


class Matches(Answer):
    """``GET /api/v1/find``."""

    selector: str
    count: int
    ambiguous: bool = False
    truncated: bool = False
    matches: list[Match] = []
    scene_seq: int | None = None


class TargetRef(Answer):
    id: str
    role: str | None = None
    name: str | None = None
    bbox: Box | None = None
    source: str | None = None
    window_id: str | None = None


class Receipt(Answer):
    """``POST /api/v1/act``: what was done, where, and whether the screen changed."""

    ok: bool
    action: str
    target: TargetRef | None = None
    display_id: int | None = None
    point: list[float] | None = None
    scrolled: bool = False
    raised: str | None = None  # the element's window, raised above one that covered it
    changed: bool | None = None
    settled: bool | None = None
    elapsed_ms: int | None = None
    step: int | None = None


class SceneHealth(Answer):
    """The scene's ``GET /health``: its newest scene, the session's restarts, the live
    view's and the vision model's state."""

    ok: bool
    version: str | None = None
    pid: int | None = None
    uptime_s: float | None = None
    last_scene: dict[str, Any] | None = None  # {seq, age_s, sources}
    session: dict[str, Any] | None = None
    view: dict[str, Any] | None = None
    vlm: dict[str, Any] | None = None


class ObservedWindow(Answer):
    app: str | None = None
    title: str | None = None
    bounds: Box | None = None
    display_id: int | None = None
    focused: bool = False


class Observation(Answer):
    """The state an observation token names: windows, elements and OCR text by id."""

    focused_window: str | None = None
    focused_element: str | None = None
    windows: dict[str, ObservedWindow] = {}
    elements: dict[str, Element] = {}
    text: dict[str, OcrText] = {}


# What changed: the compact form's {"added", "removed", "changed", "windows_added" ...,
# "focus"} or a JSON Patch's list of operations (format="json-patch").
Changes = dict[str, Any] | list[dict[str, Any]]


class Observed(Answer):
    """``GET /api/v1/observe``: a token for the state now; with ``since`` what changed
    from that token's state (``changes``), else the whole state (``observation``)."""

    token: str
    base_token: str | None = None
    seq: int
    tree_hash: str
    base_tree_hash: str | None = None
    format: Literal["full", "compact", "json-patch"] | str
    unchanged: bool | None = None
    changes: Changes | None = None
    observation: Observation | None = None
    text: str | None = None  # the scene as prompt text (text=1)


class ActObserved(Observed):
    """``POST /api/v1/act_and_observe`` (and type_, key_): the receipt, then what changed."""

    receipt: Receipt


class SketchMark(Answer):
    mark: str
    id: str
    role: str | None = None
    name: str | None = None
    bbox: Box | None = None


class Sketch(Answer):
    """``GET /api/v1/sketch``: the character grid and the legend of its marks."""

    sketch: str
    legend: list[SketchMark] = []
    cols: int
    rows: int
    area: Box
    display_id: int | None = None
    elements: int
    scene_seq: int | None = None


class Description(Answer):
    """``GET /api/v1/description``; ``vlm*`` with ``vlm=1``."""

    text: str
    scene_seq: int | None = None
    vlm: str | None = None
    vlm_tokens: int | None = None
    vlm_model: str | None = None


class WaitResult(Answer):
    """``POST /api/v1/wait_for``: the condition that held (``matched``), or what was seen
    last when none did in time."""

    matched: bool
    matched_index: int | None = None
    condition: dict[str, Any] | None = None
    observed: Any = None
    last_observed: Any = None
    elapsed_ms: int | None = None
    polls: int | None = None
    scene_seq: int | None = None


class CheckResult(Answer):
    kind: str
    passed: bool
    observed: Any = None
    args: dict[str, Any] = {}


class Checked(Answer):
    """``POST /api/v1/assert_state``."""

    all_passed: bool
    results: list[CheckResult] = []
    scene_seq: int | None = None


class SnapshotInfo(Answer):
    """A snapshot kept by ``POST /api/v1/snapshots``."""

    id: str
    seq: int | None = None
    label: str | None = None
    created: float | None = None
    expires_in_s: float | None = None
    tree_hash: str | None = None
    screenshots: list[Any] = []
    summary: dict[str, int] = {}


class Snapshot(SnapshotInfo):
    """``GET /api/v1/snapshots/{id}``: with its state."""

    observation: Observation | None = None


class SnapshotList(Answer):
    snapshots: list[SnapshotInfo] = []
    cap: int | None = None
    default_ttl_s: float | None = None


class Dropped(Answer):
    dropped: bool


class SnapshotDiff(Answer):
    """``POST /api/v1/snapshots/diff``."""

    a: str
    b: str
    b_seq: int | None = None
    format: str | None = None
    unchanged: bool
    changes: Changes | None = None


# -- the scene: the session API (/api/v1/session/*) ------------------------------------------


class SavedState(Answer):
    """A snapshot of the session (its home and browser profile), a reset's target."""

    name: str
    created: float | None = None
    files: int | None = None
    bytes: int | None = None
    urls: list[str] = []


class Child(Answer):
    """One process ``deskbox up`` runs and restarts (sway, desktopd, chromium ...)."""

    state: str
    pid: int | None = None
    restarts: int = 0
    uptime_s: float | None = None
    last_exit: Any = None


class SessionClaim(Answer):
    holder: str
    since: float | None = None
    expires_in_s: float | None = None


class SessionInfo(Answer):
    """``GET /api/v1/session``: what the session runs, its snapshots, context and lifetime."""

    user: str | None = None
    home: str | None = None
    osworld: bool = False
    outputs: list[str] = []
    start_urls: list[str] = []
    snapshots: list[SavedState] = []
    resetting: bool = False
    resets: int = 0
    started_at: float | None = None
    expires_at: float | None = None  # (None: no --ttl)
    context: dict[str, Any] | None = None
    children: dict[str, Child] = {}
    restarting: list[str] = []
    claim: SessionClaim | None = None
    id_epoch: int | None = None


class SessionReset(Answer):
    """``POST /api/v1/session/reset``: what the reset did, and whether the session came
    back healthy."""

    snapshot: str
    healthy: bool
    reset_ms: float | None = None
    session_reset_ms: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    ended: list[str] = []  # processes the reset ended
    input_released: bool | None = None
    files: dict[str, int] = {}
    browser: bool | None = None
    id_epoch: int | None = None


class Deleted(Answer):
    deleted: str


class Extended(Answer):
    expires_at: float


class Settled(Answer):
    """``POST /api/v1/session/settle``: quiet (``settled``) or the timeout."""

    settled: bool
    waited_s: float | None = None
    share: float | None = None  # of a core, over the last for_s
    cpu_s: float | None = None


class Released(Answer):
    released: bool


# -- the CDP bridge -------------------------------------------------------------------------


class Tab(Answer):
    """A page target, as Chromium's DevTools list has it."""

    id: str
    url: str = ""
    title: str = ""
    type: str = "page"
    description: str | None = None
    devtoolsFrontendUrl: str | None = None
    webSocketDebuggerUrl: str | None = None
    faviconUrl: str | None = None
    parentId: str | None = None


class TabDone(Answer):
    """Bridge ``POST /tabs``: the tab opened (with its ``url``), activated or closed."""

    ok: bool
    action: str
    id: str
    url: str | None = None


class Navigated(Answer):
    ok: bool
    id: str
    url: str
    frameId: str | None = None


class BridgeHealth(Answer):
    status: str
    pid: int | None = None
    chromium_pid: int | None = None
    restarts: int | None = None
    attached: bool | None = None
    cdp_port: int | None = None
    version: str | None = None
    layouts: dict[str, int] = {}
    box_checks: dict[str, int] = {}


# -- the provider-shaped computer actions ---------------------------------------------------
# What each provider's SDK takes back: dicts (typed for editors and type checkers), so they
# go into the next request to the model as they are.


class AnthropicReply(TypedDict):
    """``POST /api/v1/computer/anthropic``: the tool result's parts, and ``tool_result``
    ready to send when the request named its ``tool_use_id``."""

    output: str | None
    error: str | None
    base64_image: str | None
    content: list[dict[str, Any]]
    tool_result: dict[str, Any] | None


class OpenAIReply(TypedDict):
    """``POST /api/v1/computer/openai``: a ``computer_call_output`` item."""

    type: Literal["computer_call_output"]
    call_id: str | None
    output: dict[str, Any]


class GeminiReply(TypedDict):
    """``POST /api/v1/computer/gemini``: a function response with the screenshot."""

    name: str
    id: str | None
    response: dict[str, Any]
    parts: list[dict[str, Any]]


def undeclared(answer: Any, path: str = "") -> list[str]:
    """Where an answer carries a field its model does not declare (``"observation.elements.a0-1.checked"``):
    a service that has grown a field its answer model has not. Empty for an answer
    its model describes whole."""
    found: list[str] = []
    if isinstance(answer, BaseModel):
        found += [f"{path}{name}" for name in answer.model_extra or {}]
        for name in type(answer).model_fields:
            found += undeclared(getattr(answer, name), f"{path}{name}.")
    elif isinstance(answer, dict):
        for key, value in answer.items():
            found += undeclared(value, f"{path}{key}.")
    elif isinstance(answer, list):
        for i, value in enumerate(answer):
            found += undeclared(value, f"{path}{i}.")
    return found
