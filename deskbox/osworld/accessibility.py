"""OSWorld's accessibility tree (``GET /accessibility`` -> ``{"AT": "<xml>"}``), built
from the scene's AT-SPI reader's full read (``deskbox.atspi.full``: every node of
every app, in the reader's worker process, with a timeout).

The XML is what OSWorld's in-VM server writes on Ubuntu, so its graders' selectors
and XPaths work unchanged:

- root ``desktop-frame``; one element per AT-SPI node, tag = role name with spaces as
  dashes (``push-button``, ``document-web``; ``unknown`` when empty);
- attribute ``name``; ``st:<state>="true"`` for each state; ``attr:<key>`` for the
  node's object attributes; ``cp:screencoord="(x, y)"`` and ``cp:size="(w, h)"`` for
  nodes both visible and showing; ``val:value|min|max|step``;
  ``act:<action>_desc`` / ``act:<action>_kb``; ``image="true"`` / ``selection="true"``
  for nodes with those interfaces; element text = the node's text;
- the namespace URIs are OSWorld's (``NAMESPACES``).

Where deskbox differs from a VM, on purpose:

- Coordinates are screen coordinates as the screenshot measures them (display-local
  device pixels of the window's display). On Wayland an app only knows positions in
  its own surface, so each top-level frame is placed at its window's content rect from
  desktopd's window tree (matched by pid, then title), through ``deskbox.geometry``.
- Chromium is presented as the browser OSWorld's tasks expect: the application named
  ``Chromium`` takes the configured name (default ``Google Chrome``) and its window
  titles end in `` - Google Chrome``. Its ``entry`` named ``Address and search bar``
  holds the URL as the omnibox shows it, as in real Chrome.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

from ..atspi.source import NativeSource, NativeSourceBusy
from ..atspi.tree import AtspiError
from ..common.logging import get_logger
from ..geometry import (
    SURFACE_MARGIN_MAX,
    Rect,
    native_document_to_display,
    native_to_display,
    native_vcl_box,
    surface_window,
    vcl_body_offset,
)

__all__ = ["NAMESPACES", "Window", "build_xml", "placed_windows", "walk", "terminal_output", "WalkFailed"]

NAMESPACES = {
    "st": "https://accessibility.ubuntu.example.org/ns/state",
    "attr": "https://accessibility.ubuntu.example.org/ns/attributes",
    "cp": "https://accessibility.ubuntu.example.org/ns/component",
    "doc": "https://accessibility.ubuntu.example.org/ns/document",
    "docattr": "https://accessibility.ubuntu.example.org/ns/document/attributes",
    "txt": "https://accessibility.ubuntu.example.org/ns/text",
    "val": "https://accessibility.ubuntu.example.org/ns/value",
    "act": "https://accessibility.ubuntu.example.org/ns/action",
}
for _prefix, _uri in NAMESPACES.items():
    ET.register_namespace(_prefix, _uri)

# An app that does not answer its whole tree within APP_TIMEOUT_S is left out; the
# worker is given WALK_TIMEOUT_S in all.
APP_TIMEOUT_S = 10.0
WALK_TIMEOUT_S = 30.0
_log = get_logger("deskbox.osworld")
CHROMIUM_APP = "Chromium"
# How deep below a frame the boxes that tell where the visible window lies are looked
# for (Chromium's root view is three levels down), and how much smaller than the frame
# such a box may be (deskbox.atspi measured both).
_SPAN_DEPTH = 3
_SPAN_SLACK = SURFACE_MARGIN_MAX
_NCNAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_XML_INVALID = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


class WalkFailed(Exception):
    pass


@dataclass(frozen=True)
class Window:
    """A window from desktopd's tree: content rect in display-local device px."""

    pid: int | None
    title: str
    bounds: Rect
    scale: float


def placed_windows(displays: list[dict[str, Any]], windows: list[dict[str, Any]]) -> list[Window]:
    """desktopd's windows (``/api/v1/tree``) that are on a display, as ``Window``."""
    scales = {d["id"]: d["scale"] for d in displays}
    return [Window(pid=w.get("pid"), title=w.get("title") or "", bounds=Rect(*w["bounds"]),
                   scale=scales.get(w["display_id"], 1.0))
            for w in windows if w.get("bounds") and w.get("display_id") in scales]


async def walk(source: NativeSource, timeout: float = WALK_TIMEOUT_S) -> dict[str, Any]:
    """Every application's whole AT-SPI tree, read by the scene's reader
    (``deskbox.atspi.full``) in its worker process. An app that does not answer
    within ``APP_TIMEOUT_S`` is left out (and logged); a worker that does not answer
    within ``timeout`` is killed, and the next walk starts a new one."""
    try:
        tree = await source.tree(app_timeout=APP_TIMEOUT_S, timeout=timeout)
    except (NativeSourceBusy, AtspiError) as exc:
        raise WalkFailed(f"the AT-SPI walk failed: {exc}") from exc
    if tree.get("left_out"):
        _log.warning("apps left out of the accessibility tree", apps=tree["left_out"])
    return tree


def _clean(text: str) -> str:
    return _XML_INVALID.sub("", text)


def _ns(prefix: str, local: str) -> str | None:
    return f"{{{NAMESPACES[prefix]}}}{local}" if _NCNAME.match(local) else None


def _spans(frame: dict[str, Any]) -> tuple[tuple[int, int, int, int], ...]:
    """The frame's box and its near-full-size descendants' boxes (``surface_window``
    reads them to find a client-drawn margin or shadow)."""
    fe = frame.get("extents")
    if not fe:
        return ()
    out = [tuple(fe)]
    level = list(frame.get("children", ()))
    for _ in range(_SPAN_DEPTH):
        nxt = []
        for node in level:
            e = node.get("extents")
            if e and (e[2] >= fe[2] - _SPAN_SLACK or e[3] >= fe[3] - _SPAN_SLACK):
                out.append(tuple(e))
            nxt += node.get("children", ())
        level = nxt
    return tuple(out)  # type: ignore[return-value]


def _placement(frame: dict[str, Any], window: Window) -> tuple[float, float, float, float]:
    """Where the visible window lies in the frame's surface (layout px)."""
    extents = frame.get("extents")
    content = (window.bounds.w / window.scale, window.bounds.h / window.scale)
    return surface_window(tuple(extents) if extents else None, _spans(frame), content)


def _match_windows(app: dict[str, Any], windows: list[Window]) -> list[Window | None]:
    """One window (or None) per top-level child of ``app``: same pid, same title first."""
    mine = [w for w in windows if w.pid is not None and w.pid == app.get("pid")]
    frames = app.get("children", [])
    out: list[Window | None] = [None] * len(frames)
    free = list(mine)
    for i, frame in enumerate(frames):
        hit = next((w for w in free if w.title == frame.get("name")), None)
        if hit is not None:
            out[i] = hit
            free.remove(hit)
    for i, frame in enumerate(frames):
        shown = "showing" in frame.get("states", ()) and frame.get("extents")
        if out[i] is None and free and shown:
            out[i] = free.pop(0)
    return out


class _Builder:
    def __init__(self, browser_name: str) -> None:
        self.browser_name = browser_name

    def element(self, node: dict[str, Any], *, browser: bool, window: Window | None,
                surface: tuple[float, float, float, float] | None, in_document: bool, app: str = "",
                parent_extents: list[int] | None = None, offset: tuple[float, float] | None = None) -> ET.Element:
        role = node.get("role") or "unknown"
        name = node.get("name") or ""
        if browser and role == "application" and name == CHROMIUM_APP:
            name = self.browser_name
        elif browser and role == "frame" and name.endswith(" - " + CHROMIUM_APP):
            name = name[: -len(CHROMIUM_APP)] + self.browser_name
        attrib: dict[str, str] = {"name": _clean(name)}
        states = node.get("states", ())
        for state in states:
            key = _ns("st", state)
            if key:
                attrib[key] = "true"
        for k, v in node.get("attrs", {}).items():
            key = _ns("attr", k)
            if key:
                attrib[key] = _clean(v)
        extents = node.get("extents")
        offset = vcl_body_offset(app, role, extents, parent_extents) or offset
        box = extents
        if extents:
            box, offset = native_vcl_box(extents, offset, node.get("attrs", {}).get("toolkit", ""))
        if box and "visible" in states and "showing" in states:
            x, y, w, h = self._screen(box, window, surface, in_document)
            attrib[_ns("cp", "screencoord")] = f"({x}, {y})"  # type: ignore[index]
            attrib[_ns("cp", "size")] = f"({w}, {h})"  # type: ignore[index]
        if node.get("image"):
            attrib["image"] = "true"
        if node.get("selection"):
            attrib["selection"] = "true"
        for k, v in (node.get("value") or {}).items():
            attrib[_ns("val", k)] = _clean(v)  # type: ignore[index]
        for action, (desc, kb) in node.get("actions", {}).items():
            local = action.replace(" ", "-")
            for suffix, text in (("_desc", desc), ("_kb", kb)):
                key = _ns("act", local + suffix)
                if key:
                    attrib[key] = _clean(text)
        tag = role.replace(" ", "-")
        el = ET.Element(tag if _NCNAME.match(tag) else "unknown", attrib)
        # Object replacement characters (embedded objects' places) are left out, as
        # OSWorld leaves them out.
        text = (node.get("text") or "").replace("\ufffc", "").replace("\ufffd", "")
        if text:
            el.text = _clean(text)
        in_document = in_document or role == "document web"
        for child in node.get("children", ()):
            el.append(self.element(child, browser=browser, window=window, surface=surface, in_document=in_document,
                                   app=app, parent_extents=extents, offset=offset))
        return el

    @staticmethod
    def _screen(extents: Any, window: Window | None, surface: tuple[float, float, float, float] | None,
                in_document: bool) -> tuple[int, int, int, int]:
        if window is None:
            return int(extents[0]), int(extents[1]), int(extents[2]), int(extents[3])
        box = (float(extents[0]), float(extents[1]), float(extents[2]), float(extents[3]))
        if in_document:
            rect = native_document_to_display(window.bounds, window.scale, box, surface)
        else:
            rect = native_to_display(window.bounds, window.scale, box, surface)
        return round(rect.x), round(rect.y), round(rect.w), round(rect.h)

    def app(self, app: dict[str, Any], windows: list[Window]) -> ET.Element:
        browser = app.get("name") == CHROMIUM_APP
        matched = _match_windows(app, windows)
        shell = dict(app, children=[])
        el = self.element(shell, browser=browser, window=None, surface=None, in_document=False)
        for frame, window in zip(app.get("children", []), matched):
            surface = _placement(frame, window) if window is not None else None
            el.append(self.element(frame, browser=browser, window=window, surface=surface, in_document=False,
                                   app=app.get("name") or ""))
        return el


def build_xml(tree: dict[str, Any], windows: list[Window], browser_name: str = "Google Chrome") -> str:
    """The ``desktop-frame`` document for a walk's output and desktopd's windows."""
    root = ET.Element("desktop-frame")
    builder = _Builder(browser_name)
    for app in tree.get("apps", []):
        root.append(builder.app(app, windows))
    # ElementTree declares the prefixes it used on the root, with OSWorld's names
    # (registered above).
    return ET.tostring(root, encoding="unicode")


def terminal_output(xml_text: str) -> str | None:
    """OSWorld's /terminal: the text of the focused ``terminal`` of an active frame of
    gnome-terminal-server, or None."""
    root = ET.fromstring(xml_text)
    st = "{" + NAMESPACES["st"] + "}"
    found = []
    for app in root.findall("application"):
        if app.get("name") != "gnome-terminal-server":
            continue
        for frame in app.findall("frame"):
            if frame.get(st + "active") != "true":
                continue
            found += [t for t in frame.iter("terminal") if t.get(st + "focused") == "true"]
    if len(found) != 1:
        return None
    return (found[0].text or "").rstrip()
