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

__all__ = ["Answer", "Display", "DisplayList", "Window", "WindowTree", "Element", "OcrText", "FocusedWindow",
           "App", "Scene", "Match", "Matches", "Receipt", "TargetRef", "PointerPosition", "Tab"]

Box = list[float]  # [x, y, width, height], display-local device pixels


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


# -- the CDP bridge -------------------------------------------------------------------------


class Tab(Answer):
    id: str
    url: str = ""
    title: str = ""
    type: str = "page"
