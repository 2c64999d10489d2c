"""What a build gives: the Scene (displays, windows, apps, elements, OCR lines, how each
source fared) and its JSON, filtered by interactivity, display or window on the way out.
It must not know how a Scene is built or kept fresh (engine.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Literal

from ..common.errors import InvalidRequestError
from ..geometry import Display, Rect, visible_part
from .elements import Element
from .frames import FrameSignature
from .sources import Window

__all__ = ["Mode", "OcrItem", "Scene", "SCENE_VERSION", "apps_of"]

Mode = Literal["idle", "active", "agent-turn"]
SCENE_VERSION = 1


@dataclass(slots=True)
class OcrItem:
    id: str
    text: str
    bbox: tuple[int, int, int, int]
    conf: float
    display_id: int
    window_id: str | None = None  # the window whose opaque part it was read in (--ocr fill)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "bbox": list(self.bbox), "conf": round(self.conf, 3),
                "display_id": self.display_id, "window_id": self.window_id, "source": "ocr"}


@dataclass(slots=True)
class Scene:
    seq: int
    timestamp: float
    mode: Mode
    displays: list[Display]
    windows: list[Window]
    focused_window: Window | None
    apps: list[dict[str, Any]]
    ax: list[Element]
    ocr: list[OcrItem]
    vlm_scene: Any
    vlm_elements: Any
    sources: dict[str, str | None]
    signatures: dict[int, FrameSignature] = field(default_factory=dict)
    build_ms: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)  # ms each source took, for tuning

    def window(self, window_id: str | None) -> Window | None:
        return next((w for w in self.windows if w.id == window_id), None)

    def check_filters(self, display: int | None, window: str | None) -> None:
        """Raise a clear 400 for a display or window this scene does not have."""
        if display is not None and all(d.id != display for d in self.displays):
            raise InvalidRequestError(f"no display {display}; the scene has {[d.id for d in self.displays]}",
                                      code="unknown_display")
        if window is not None and self.window(window) is None:
            raise InvalidRequestError(f"no window {window!r}; GET /api/v1/scene lists windows under apps",
                                      code="unknown_window")

    def to_json(self, *, interactive: bool = False, display: int | None = None,
                window: str | None = None) -> dict[str, Any]:
        ax = [e for e in self.ax if _keep(e, interactive, display, window)]
        ocr = [o for o in self.ocr if display is None or o.display_id == display]
        if window is not None:
            w = self.window(window)
            ocr = [o for o in ocr if w is not None and w.bounds is not None and w.display_id == o.display_id
                   and visible_part(Rect(*o.bbox), w.bounds) is not None]
        focused = self.focused_window
        return {
            "version": SCENE_VERSION,
            "seq": self.seq,
            "timestamp": round(self.timestamp, 3),
            "mode": self.mode,
            "displays": [_display_json(d) for d in self.displays if display is None or d.id == display],
            "focused_window": _focused_json(focused, self.apps) if focused is not None else None,
            "apps": self.apps,
            "ax": [e.to_json() for e in ax],
            "ocr": [o.to_json() for o in ocr],
            "vlm_scene": self.vlm_scene,
            "vlm_elements": self.vlm_elements,
            "sources": self.sources,
            "build_ms": round(self.build_ms, 1),
            "timings_ms": {k: round(v, 1) for k, v in self.timings.items()},
        }


def _keep(e: Element, interactive: bool, display: int | None, window: str | None) -> bool:
    if interactive and not e.interactive:
        return False
    if display is not None and e.display_id != display:
        return False
    if window is not None and e.window_id != window:
        return False
    return True


def _display_json(d: Display) -> dict[str, Any]:
    return {"id": d.id, "name": d.name, "bounds": [0, 0, d.size[0], d.size[1]], "size": list(d.size),
            "layout_bounds": d.layout.as_list(), "scale": d.scale, "primary": d.primary}


def _focused_json(w: Window, apps: list[dict]) -> dict[str, Any]:
    app = next((a["name"] for a in apps if a["pid"] == w.pid), w.app_id)
    return {"id": w.id, "app": app, "pid": w.pid, "title": w.title, "display_id": w.display_id,
            "bounds": w.bounds_list}


def _process_name(pid: int | None) -> str | None:
    """The program's name: its executable's file name. Not ``comm`` (cut at 15
    characters: "gnome-calculato") and not the command line (Chromium rewrites its own)."""
    if not pid:
        return None
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def apps_of(windows: list[Window]) -> list[dict[str, Any]]:
    """The Scene's ``apps``: the windows grouped by process, each named by its program."""
    by_pid: dict[Any, dict[str, Any]] = {}
    for w in windows:
        key = w.pid if w.pid is not None else f"app:{w.app_id}"
        app = by_pid.get(key)
        if app is None:
            app = by_pid[key] = {"name": _process_name(w.pid) or w.app_id, "pid": w.pid, "app_id": w.app_id,
                                 "windows": []}
        app["windows"].append(w.to_json())
    return list(by_pid.values())
