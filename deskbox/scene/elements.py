"""Elements: the entries of a Scene's ``ax`` list, made from the CDP bridge's nodes and
from AT-SPI's native nodes, in one vocabulary of roles, states and actions.

Pure logic: given a tab's layout (as the bridge serves it) or native nodes, and where
their window is, produce Elements with display-local device-pixel boxes. Geometry goes
through deskbox.geometry; ids are assigned later by the engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Literal

from ..geometry import PagePlacement, Rect, css_to_display, device_rect, native_to_display, visible_part

__all__ = [
    "Element",
    "Visibility",
    "page_elements",
    "native_elements",
    "normalize_atspi_role",
    "INTERACTIVE_ROLES",
]

Visibility = Literal["visible", "partial", "offscreen", "hidden"]

# Roles an agent acts on. Anything focusable or editable counts too.
INTERACTIVE_ROLES = frozenset({
    "button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox", "option",
    "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "switch", "slider", "spinbutton",
    "treeitem", "scrollbar", "menubutton", "togglebutton",
})
_EDITABLE_ROLES = frozenset({"textbox", "searchbox", "combobox", "spinbutton"})

# CDP roles that carry no meaning of their own for an agent (their children do).
_STRUCTURAL_CDP_ROLES = frozenset({"none", "generic", "InlineTextBox", "LineBreak", "Iframe", "IframePresentational",
                                   "presentation", "ignored"})
# Documents: the window header stands for them (they are focusable, but not targets).
_DOCUMENT_CDP_ROLES = frozenset({"RootWebArea", "WebArea"})
_CDP_ROLE_NAMES = {"StaticText": "text", "LabelText": "label", "img": "image", "ListMarker": "listmarker",
                   "DescriptionListTerm": "term", "DescriptionListDetail": "definition", "Canvas": "canvas",
                   "ComboBoxMenuButton": "combobox", "TextFieldWithComboBox": "combobox",
                   "PopUpButton": "combobox", "ToggleButton": "togglebutton", "MenuListPopup": "listbox",
                   "MenuListOption": "option", "Pre": "pre", "Abbr": "abbr", "Video": "video", "Audio": "audio"}
# CDP boolean properties that become states under their own name.
_CDP_STATE_PROPS = ("focusable", "focused", "editable", "disabled", "selected", "required", "invalid",
                    "readonly", "multiline", "multiselectable", "modal", "busy")

# AT-SPI role names -> the shared vocabulary (ARIA-like, as CDP uses).
_ATSPI_ROLES = {
    "push button": "button", "toggle button": "togglebutton", "check box": "checkbox", "radio button": "radio",
    "entry": "textbox", "password text": "textbox", "text": "textbox", "combo box": "combobox",
    "menu item": "menuitem", "check menu item": "menuitemcheckbox", "radio menu item": "menuitemradio",
    "page tab": "tab", "page tab list": "tablist", "label": "label", "link": "link", "list item": "listitem",
    "list": "list", "list box": "listbox", "heading": "heading", "slider": "slider", "spin button": "spinbutton",
    "frame": "window", "window": "window", "dialog": "dialog", "tool bar": "toolbar", "menu bar": "menubar",
    "menu": "menu", "scroll bar": "scrollbar", "image": "image", "icon": "image", "table cell": "cell",
    "tree item": "treeitem", "tree": "tree", "table": "table", "panel": "group", "filler": "group",
    "status bar": "status", "static": "text", "paragraph": "paragraph", "document web": "document",
    "split button": "button", "popup menu": "menu", "tool tip": "tooltip", "notification": "alert",
    "alert": "alert", "progress bar": "progressbar", "separator": "separator", "switch": "switch",
}
_ATSPI_STRUCTURAL = frozenset({"group", "separator", "application", "unknown", "redundant object", "invalid"})
_ATSPI_CLICK_ACTIONS = frozenset({"click", "press", "activate", "toggle", "jump", "open", "select"})


@dataclass(slots=True)
class Element:
    """One element of a scene. ``bbox`` is display-local device pixels (None when the
    element has no box); ``clip`` is the part of the display where it can be seen and
    clicked (its viewport or window, cut to the display); ``ref`` is what the source
    needs to act on it (tab and node ids, or the AT-SPI key). ``parent_key`` is the key
    of its nearest ancestor that is an element too (None for a window's top ones); the
    engine turns it into ``parent``, that element's id."""

    key: tuple
    role: str
    name: str
    value: str | None
    bbox: Rect | None
    display_id: int
    window_id: str | None
    source: Literal["cdp", "atspi"]
    states: list[str]
    actions: list[str]
    visibility: Visibility
    clip: Rect | None
    ref: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    formula: str | None = None  # a spreadsheet cell's, where the app shows it
    parent_key: tuple | None = None
    parent: str | None = None

    @property
    def interactive(self) -> bool:
        return bool(self.actions)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "role": self.role,
            "name": self.name,
            "value": self.value,
            "bbox": list(device_rect(self.bbox)) if self.bbox is not None else None,
            "display_id": self.display_id,
            "window_id": self.window_id,
            "source": self.source,
            "states": self.states,
            "actions": self.actions,
            "visibility": self.visibility,
            "parent": self.parent,
            **({"formula": self.formula} if self.formula is not None else {}),
        }


def _visibility(bbox: Rect | None, clip: Rect | None) -> Visibility:
    if bbox is None or bbox.w <= 0 or bbox.h <= 0:
        return "hidden"
    part = visible_part(bbox, clip) if clip is not None else bbox
    if part is None:
        return "offscreen"
    # Sub-pixel slivers of a box that abuts the viewport edge do not make it partial.
    if part.w >= bbox.w - 0.5 and part.h >= bbox.h - 0.5:
        return "visible"
    return "partial"


def _ax_value(value: Any) -> Any:
    if isinstance(value, dict):
        return value.get("value")
    return None


def _text(value: Any) -> str | None:
    v = _ax_value(value)
    if v is None or v == "":
        return None
    return v if isinstance(v, str) else str(v)


_MASKS = frozenset("\u2022\u25cf*")


def _masked(value: str | None) -> bool:
    return bool(value) and set(value) <= _MASKS


def _cdp_states_actions(role: str, props: dict[str, Any]) -> tuple[list[str], list[str]]:
    states = [p for p in _CDP_STATE_PROPS if props.get(p) is True]
    if props.get("editable") not in (None, False, "", "false") and "editable" not in states:
        states.append("editable")
    checked = props.get("checked")
    if checked in (True, "true"):
        states.append("checked")
    elif checked == "mixed":
        states.append("mixed")
    pressed = props.get("pressed")
    if pressed in (True, "true"):
        states.append("pressed")
    expanded = props.get("expanded")
    if expanded is True:
        states.append("expanded")
    elif expanded is False:
        states.append("collapsed")
    actions: list[str] = []
    if "disabled" not in states:
        editable = role in _EDITABLE_ROLES or "editable" in states
        if role in INTERACTIVE_ROLES or editable or "focusable" in states:
            actions.append("click")
        if editable:
            actions += ["type", "set_value"]
        if "focusable" in states:
            actions.append("focus")
    return states, actions


def page_elements(
    layout: dict[str, Any],
    *,
    tab_id: str,
    placement: PagePlacement,
    window_clip: Rect,
    display_id: int,
    window_id: str | None,
) -> list[Element]:
    """The elements of one tab's layout (the bridge's ``layout`` object, viewport-relative
    boxes in ``viewportBounds``) placed on a display. Ignored and purely structural nodes
    are left out; a text node that only repeats its parent's name is too."""
    nodes = layout.get("nodes") or []
    by_id = {n.get("nodeId"): n for n in nodes}
    clip = visible_part(placement.viewport, window_clip)
    out: list[Element] = []
    kept: dict[Any, tuple] = {}  # AX node id -> its element's key
    for node in nodes:
        if node.get("ignored"):
            continue
        raw_role = _ax_value(node.get("role")) or "none"
        if raw_role in _DOCUMENT_CDP_ROLES:
            continue
        role = _CDP_ROLE_NAMES.get(raw_role, raw_role)
        name = _text(node.get("name")) or ""
        if role == "text":  # the commonest node: decided before anything else is read
            parent = by_id.get(node.get("parentId"))
            if not name.strip() or (parent is not None and (_text(parent.get("name")) or "") == name):
                continue
        props = {p.get("name"): _ax_value(p.get("value")) for p in node.get("properties") or ()}
        if raw_role in _STRUCTURAL_CDP_ROLES and props.get("focusable") is not True:
            continue
        states, actions = _cdp_states_actions(role, props)
        if role == "textbox" and _masked(_text(node.get("value"))):
            states.append("protected")  # a password field: Chromium shows its value as bullets
        if not actions and not name.strip():
            continue  # a nameless container: nothing to read, nothing to act on
        vb = node.get("viewportBounds")
        bbox = None
        if vb is not None and node.get("bounds") is not None:
            bbox = css_to_display(placement, (vb["x"], vb["y"], vb["width"], vb["height"]))
        backend_id = node.get("backendDOMNodeId")
        frame_id = node.get("frameId")
        ident = backend_id if backend_id is not None else node.get("nodeId")
        kept[node.get("nodeId")] = ("cdp", tab_id, frame_id, ident)
        out.append(Element(
            key=("cdp", tab_id, frame_id, ident),
            role=role,
            name=name,
            value=_text(node.get("value")),
            bbox=bbox,
            display_id=display_id,
            window_id=window_id,
            source="cdp",
            states=states,
            actions=actions,
            visibility=_visibility(bbox, clip),
            clip=clip,
            ref={"tab": tab_id, "nodeId": node.get("nodeId"), "backendDOMNodeId": backend_id, "frameId": frame_id,
                 "placement": placement},
        ))
    if out:
        # (A node's childIds are what the tree says; parentId is missing on some nodes
        # an update brought.)
        parent_of = {kid: n.get("nodeId") for n in nodes for kid in n.get("childIds") or ()}
        for e in out:
            e.parent_key = _kept_ancestor(by_id, parent_of, kept, e.ref["nodeId"])
    return out


def _kept_ancestor(by_id: dict[Any, dict], parent_of: dict[Any, Any], kept: dict[Any, tuple],
                   node_id: Any) -> tuple | None:
    """The key of the nearest ancestor of AX node ``node_id`` that became an element."""
    seen = {node_id}
    parent = parent_of.get(node_id, by_id.get(node_id, {}).get("parentId"))
    while parent is not None and parent not in seen:
        if parent in kept:
            return kept[parent]
        seen.add(parent)
        parent = parent_of.get(parent, by_id.get(parent, {}).get("parentId"))
    return None


def _nearest_kept(key: str | None, up: dict[str, str], kept: set[str]) -> tuple | None:
    seen = set()
    while key and key not in seen:
        if key in kept:
            return ("atspi", key)
        seen.add(key)
        key = up.get(key)
    return None


def normalize_atspi_role(role: str) -> str:
    return _ATSPI_ROLES.get(role, role.replace(" ", ""))


def native_elements(
    nodes: Iterable[Any],
    *,
    window: Rect,
    scale: float,
    clip: Rect,
    display_id: int,
    window_id: str | None,
    surface_window: tuple[float, float, float, float] | None = None,
) -> list[Element]:
    """AT-SPI nodes (``deskbox.atspi.NativeNode``) of one window placed on its
    display (``surface_window``: see ``geometry.native_to_display``). The top-level
    frame (the window header stands for it) and nameless containers without an action
    are left out. Each node names its nearest listed ancestor (``parent``): an element's
    is the nearest of those that became an element too."""
    nodes = list(nodes)
    up = {node.key: node.parent for node in nodes}
    out: list[Element] = []
    for node in nodes:
        role = normalize_atspi_role(node.role)
        actions_raw = set(node.actions)
        states = [s for s in node.states if s in ("focusable", "focused", "editable", "checked", "pressed", "selected",
                                                   "expanded", "collapsed", "multi line", "sensitive", "enabled")]
        states = ["multiline" if s == "multi line" else s for s in states if s not in ("sensitive", "enabled")]
        if "enabled" not in node.states and "sensitive" not in node.states:
            states.append("disabled")
        if node.role == "password text":
            states.append("protected")
        editable = "editable" in node.states or role in _EDITABLE_ROLES and "editable" in node.states
        actions: list[str] = []
        if "disabled" not in states:
            if actions_raw & _ATSPI_CLICK_ACTIONS or role in INTERACTIVE_ROLES:
                actions.append("click")
            if editable:
                actions += ["type", "set_value"]
            if "focusable" in node.states:
                actions.append("focus")
        if node.depth <= 1 or (not actions and (role in _ATSPI_STRUCTURAL or not (node.name or "").strip())):
            continue
        bbox = native_to_display(window, scale, node.extents, surface_window) if node.extents else None
        if bbox is not None and (bbox.w <= 0 or bbox.h <= 0):
            bbox = None
        out.append(Element(
            key=("atspi", node.key),
            role=role,
            name=node.name or "",
            value=node.value if node.value not in ("",) else None,
            bbox=bbox,
            display_id=display_id,
            window_id=window_id,
            source="atspi",
            states=states,
            actions=actions,
            visibility=_visibility(bbox, clip),
            clip=clip,
            ref={"atspi": node.key, "pid": node.pid},
            formula=node.formula,
            parent_key=node.parent or None,  # (made the nearest element's below)
        ))
    kept = {e.key[1] for e in out}
    for e in out:
        e.parent_key = _nearest_kept(e.parent_key, up, kept)
    return out
