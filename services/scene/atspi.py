"""Native apps over AT-SPI: a reader that lists what GTK apps and Chromium's own UI
expose to assistive technology, and performs their actions.

``AtspiReader`` speaks AT-SPI's D-Bus interfaces directly (dbus-fast, asyncio) and
keeps every call of a round in flight at once; libatspi is used only for its tables
of role and state names. The scene service runs it in a worker process
(``services.scene.atspi_worker``, driven by ``services.scene.native``).

Where it must run
    As the session user. GTK3 apps and Chromium answer AT-SPI on a peer-to-peer
    socket of their own that admits only their own uid: a reader running as root
    sees them as ``defunct`` (measured). GTK4 apps answer on the accessibility bus.
    It needs the session's ``DBUS_SESSION_BUS_ADDRESS`` (``deskbox up`` gives it to
    every child) and asks that bus for the accessibility bus.

What a snapshot keeps
    Nodes that are on screen (state ``showing`` or ``visible``: GTK 4.8 sets only
    ``visible`` below the frame) with a box, and that are named, focusable, or of a
    role an agent acts on or reads. Unnamed layout containers (panel, filler,
    section, scroll pane ...), labels repeating their parent's name and the inside of
    a control that has its own click action (its label, icon) are left out,
    but ``depth`` stays the node's depth in the AT-SPI tree, so the nearest preceding
    node with a smaller depth is its kept ancestor. Subtrees that are neither showing
    nor visible are not walked at all: that is most of Chromium's tree (hidden
    buttons, notifications) and the walk's main saving. With ``prune_documents`` the
    ``document web`` subtrees of Chromium-family apps are skipped (page content comes
    from CDP) while tabs, address bar and toolbar stay; Chromium's hidden omnibox
    popup frames (unnamed frames holding only a document) then have nothing to show
    and are left out.

    GTK 4.8 quirks are repaired in ``name``: a widget without a name is named after
    its type (``GtkMenuButton``, ``AdwGizmo``): the reader uses its label child's
    text or else its description (tooltip), or ``""``; a button's label is doubled
    (``"7 7"``): the reader keeps one.

Coordinates (measured with Sway 1.7, headless, outputs at scale 1 and 2; GTK 3.24.38,
GTK 4.8.3 / libadwaita (gnome-calculator 43), Chromium 156; no Xwayland)
    ``extents`` are AT-SPI's WINDOW coordinates, untouched: **layout (logical)
    pixels** relative to the app's **top-level surface**. On Wayland an app does not
    know where its window is, so DESKTOP coordinates are the same numbers (or
    garbage, for Chromium's popups). They are not device pixels: at output scale 2 a
    GTK button 34 px high in ``extents`` is 68 px high in the screenshot. Off-screen
    GTK3 children report ``(-2147483648, -2147483648, 1, 1)``: ``extents`` is None.

    The surface is not always the window that Sway places. Sway places the window's
    *visible part* (its xdg window geometry) at the content rect of its tree node
    (``rect`` + ``window_rect``); shadows drawn by the client lie outside. Measured:

    - GTK 4 (gnome-calculator), tiled and floating: the frame's extents are exactly
      the visible window (``(0, 0, w, h)`` with Sway's content size); no inset.
    - GTK 3 with server-side decorations (a plain GtkWindow: Sway offers them), tiled
      and floating: frame ``(0, 0, w, h)`` = Sway's content size; no inset.
    - GTK 3 with a GtkHeaderBar (client-side decorations), floating: the surface has
      Adwaita's shadow around the window: frame 472x419 for a 420x367 window, the
      window starting at (26, 23) (26 left and right, 23 top, 29 bottom). Tiled, GTK
      drops the shadow (no inset).
    - Chromium, tiled or floating: its surface keeps a 10 px margin on every side:
      frame 660x820 for a 640x800 tile; the root view (an unnamed panel) is at
      (10, 10, 640, 800); toolbar buttons are offset by those 10 px.
    - A window narrower than its tile (min size above the tile's) is clipped at the
      tile's left/top edge; one smaller than its tile (a max size below it) is
      centred in the tile by Sway.
    - Chromium's page content (inside ``document web``) reports extents in *device*
      pixels (scaled by the output scale) while its toolbar reports layout pixels:
      another reason to take pages from CDP.

    ``visible_window(frame_node, content_size)`` finds the visible window inside the
    frame's extents (from the frame's near-full-size descendants, kept in
    ``NativeNode.spans``). The map to display-local device pixels, for a node of a
    window whose Sway node has ``rect`` R and ``window_rect`` W on an output with
    layout rect O and scale S, with ``(vx, vy, vw, vh) = visible_window(frame, (W.w, W.h))``::

        cx = R.x + W.x + max(0, (W.w - vw) / 2)      # Sway centres a smaller window
        cy = R.y + W.y + max(0, (W.h - vh) / 2)
        device_x = (cx - O.x + extents.x - vx) * S
        device_y = (cy - O.y + extents.y - vy) * S
        device_w = extents.w * S,  device_h = extents.h * S

    Clicking the centre of a box mapped that way landed on the node in every case
    above (fixture buttons report the click; calculator digits appear in its display).
    GTK 4.8 reports a button's box a few pixels inside the drawn button (4 px left and
    right, 2 px top and bottom on the calculator's keypad): the same centre.

Walk cost
    A GTK 4 app (and a GTK 3 app, once some client has turned AT-SPI events on) keeps
    a cache: every object's name, role, states, parent and child count come in one
    ``Cache.GetItems`` call. The selection (``_Selection``, pure) then says what else
    it needs (boxes of the nodes it keeps, values, actions, the children of a parent
    whose count disagrees with the cache) and those calls go out together: two rounds
    in all. A browser (its cache would hold every page node too), LibreOffice (its cache
    holds every cell and menu item it ever made) and an app without a cache are read one
    tree level per round, each level's calls at once, except that
    everything the app's last walk read is asked again at once in a first round (the
    levels then fetch only what changed); an object's role, interfaces and actions are
    asked once, and of an object hidden last time only its state is asked until it
    shows. Apps that offer a peer-to-peer socket
    (atk-bridge: Chromium, GTK 3) are asked there rather than through the bus daemon
    (twice as fast a call). A control with its own click action is not walked into. An
    app's walk has ``APP_TIMEOUT_S``; an app that does not answer is left out.
    Measured on this 2-core machine with Chromium on a 1,000-element page beside
    gnome-calculator and the GTK 3 fixture, on a quiet machine: 25-40 ms a snapshot
    (median 30; 217 objects visited, 60 kept), where libatspi's one-call-at-a-time
    walk of the same apps took 100-280 ms. ``snapshot(pids=...)`` walks only the apps whose windows
    changed; ``python -m services.scene.atspi --repeat N`` prints a session's figures.
    A Calc sheet's visible cells are read by row and column (``_sheet_cells``), and
    kept from the previous snapshot when the caller says the sheet's pixels held still.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Collection

from ..geometry import SURFACE_MARGIN_MAX, native_vcl_box, surface_window, vcl_body_offset

__all__ = [
    "NativeNode",
    "AtspiReader",
    "AtspiError",
    "NoSuchAction",
    "visible_window",
]


class AtspiError(Exception):
    """Base of this module's errors (D-Bus errors are translated to it)."""


class NoSuchAction(AtspiError):
    """The node lives but has no action of that name (``actions`` lists what it has)."""

    def __init__(self, key: str, action: str, actions: tuple[str, ...]) -> None:
        super().__init__(f"{key} has no action {action!r}; it has {list(actions)}")
        self.key, self.action, self.actions = key, action, actions


@dataclass(frozen=True)
class NativeNode:
    """One node of a native app's accessibility tree.

    ``extents`` is ``(x, y, w, h)`` as AT-SPI's WINDOW coordinates report it: layout
    pixels relative to the app's top-level surface (see the module docstring for the
    map to display pixels); None when the node has no box. ``depth`` is its depth in
    the AT-SPI tree (frame = 1). ``spans`` is set on frames only: the boxes of the
    frame and of its near-full-size descendants, which ``visible_window`` reads."""

    key: str
    pid: int
    app: str
    role: str
    name: str
    value: str | None
    states: tuple[str, ...]
    actions: tuple[str, ...]
    extents: tuple[int, int, int, int] | None
    frame: str
    depth: int
    spans: tuple[tuple[int, int, int, int], ...] = field(default=(), repr=False)
    formula: str | None = None  # a spreadsheet cell's formula, where the app shows it


# Roles of top-level windows (children of an application).
_FRAME_ROLES = frozenset({"frame", "window", "dialog", "alert", "file chooser", "color chooser", "font chooser"})
# Layout containers: kept only when named or focusable.
_CONTAINER_ROLES = frozenset({
    "panel", "filler", "section", "redundant object", "unknown", "invalid", "layered pane", "glass pane",
    "root pane", "viewport", "scroll pane", "split pane", "grouping", "html container", "form", "landmark",
    "internal frame", "option pane", "block quote", "article", "description list",
})
# Text-like roles: useless without a name (their text is their name).
_TEXT_ROLES = frozenset({"label", "static", "paragraph", "heading", "caption", "icon", "image", "notification",
                         "separator", "accelerator label", "text"})
# Roles whose text contents are their value (password text is never read).
_TEXT_VALUE_ROLES = frozenset({"entry", "text", "terminal", "editbar", "spin button", "combo box",
                               "document text", "autocomplete"})
_VALUE_ROLES = frozenset({"slider", "spin button", "progress bar", "scroll bar", "level bar", "dial"})
_BROWSER_TOOLKITS = ("chromium", "gecko")
# Calc's formula bar and its Input line (LibreOffice's English names).
_CALC_FORMULA_BAR, _CALC_INPUT_LINE = "Formula Tool Bar", "Input line"
_MENU_ROLES = frozenset({"menu", "menu item", "check menu item", "radio menu item", "tearoff menu item"})
# A control that does its own action is a leaf for an agent: what lies inside (its
# label, icon, hidden notifications) is not walked. One without an action (GTK4's menu
# button wrapping the real button) is walked.
_LEAF_ROLES = frozenset({"push button", "toggle button", "check box", "radio button", "menu item",
                         "check menu item", "radio menu item", "entry", "password text"})
# A GTK4 widget without an accessible name is named after its type: "GtkMenuButton".
_GTK_TYPE_NAME = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$")
_OFFSCREEN = -(2**31)
# How deep below a frame the reader looks for the visible window's box (Chromium's
# root view is three levels down).
_SPAN_DEPTH = 3
_SPAN_SLACK = SURFACE_MARGIN_MAX  # layout px a span may be smaller than its frame
_MAX_VALUE_CHARS = 4096
# Asked in this order when an action name is missing: what "click" means per toolkit.
_CLICK_ALIASES = ("click", "press", "activate", "toggle", "jump", "open", "doDefault")

# A hung app must not stall every snapshot: one whose walk takes longer is left out of
# the snapshot (the scene gives the whole worker 3 s). LibreOffice's walk takes 0.5 s
# on a quiet machine and went over 1 s with several documents open on a busy one.
APP_TIMEOUT_S = 2.0
MAX_IN_FLIGHT = 256
# Passes of the selection per app (each asks what the last one could not decide: two
# for an app with a cache; one per tree level for one without).
_MAX_ROUNDS = 64


def visible_window(frame: NativeNode, content_size: tuple[float, float]) -> tuple[float, float, float, float]:
    """Where the window Sway shows lies inside ``frame``'s surface (see
    ``services.geometry.surface_window``), from the frame node's extents and spans."""
    return surface_window(frame.extents, frame.spans, content_size)


class _AppUnresponsive(Exception):
    pass


# AT-SPI's D-Bus names.
_A11Y = "org.a11y.atspi."
_ACCESSIBLE = _A11Y + "Accessible"
_PROPERTIES = "org.freedesktop.DBus.Properties"
_ROOT = "/org/a11y/atspi/accessible/root"
_CACHE_PATH = "/org/a11y/atspi/cache"
_REGISTRY = "org.a11y.atspi.Registry"
_DESKTOP_COORDS, _WINDOW_COORDS = 0, 1  # ATSPI_COORD_TYPE_SCREEN, _WINDOW
# The state bits this module reads (AT-SPI's StateType numbers).
_DEFUNCT, _EDITABLE, _FOCUSABLE, _FOCUSED, _SELECTED, _SHOWING, _VISIBLE, _MANAGES_DESCENDANTS = (
    6, 7, 11, 12, 23, 25, 30, 31)
# At most this many cells of a sheet are read (a 1920x1080 Calc shows about 1,000).
MAX_SHEET_CELLS = 2500
MAX_CACHED_CELLS = 20_000  # per sheet (see AtspiReader._cells)
# Above this many children an object's children are not walked (a spreadsheet's table
# reports every cell of the sheet); nor are those of one that manages its descendants.
_MAX_CHILDREN = 2000


@dataclass(slots=True)
class _Obj:
    """One accessible object as the app's cache (or its own calls) reported it."""

    path: str
    parent: str
    index: int
    child_count: int
    interfaces: frozenset[str]
    name: str
    role: int
    description: str
    states: int  # AT-SPI's 64-bit state set

    def has(self, state: int) -> bool:
        return bool(self.states >> state & 1)

    @property
    def on_screen(self) -> bool:
        return (self.has(_SHOWING) or self.has(_VISIBLE)) and not self.has(_DEFUNCT)


class _Names:
    """AT-SPI's role and state names, as libatspi spells them (``push button``,
    ``focusable``): read once from libatspi's own tables, so that names stay what
    pyatspi users know whatever an app answers to GetRoleName (GTK 4 says ``button``)."""

    def __init__(self) -> None:
        try:
            import gi

            gi.require_version("Atspi", "2.0")
            import pyatspi
            from gi.repository import Atspi
        except (ImportError, ValueError) as exc:
            raise AtspiError(f"libatspi's tables are not available ({exc}); install python3-pyatspi") from exc
        self.roles = {int(r): Atspi.role_get_name(Atspi.Role(r)) or "" for r in range(int(Atspi.Role.LAST_DEFINED))}
        self.states = {i: pyatspi.stateToString(Atspi.StateType(i)) for i in range(int(Atspi.StateType.LAST_DEFINED))}

    def role(self, number: int) -> str:
        return self.roles.get(number, "unknown")

    def state_names(self, states: int) -> tuple[str, ...]:
        return tuple(self.states[i] for i in sorted(self.states) if states >> i & 1)


@dataclass
class _App:
    bus: str
    pid: int
    name: str
    gtk4: bool
    browser: bool
    cache: bool = True  # whether to ask it for Cache.GetItems
    # Qt 5.15 crashes on Properties.GetAll of its accessibles (measured with VLC 3: a
    # general protection fault in QtCore, the app gone): its properties are asked one
    # by one.
    get_all: bool = True
    # Qt 5 answers GetExtents in WINDOW coordinates with garbage (measured with VLC 3
    # under Xwayland: a toolbar button at (3, 3, 32, 1076)); its DESKTOP coordinates are
    # right (the X root window's, which follow the window). They are asked, and made
    # relative to the frame's own.
    desktop_coords: bool = False


class _Tree:
    """One app's objects, children in order. Children come from the app's cache
    (``Cache.GetItems``: every object in one call) unless a parent said otherwise:
    a parent whose ``child_count`` disagrees with the cache (GTK 3 leaves a button
    packed into a box after start-up out of it, measured) has its children asked of
    it (``children_of``), and those are the truth."""

    def __init__(self, objects: dict[str, _Obj]) -> None:
        self.objects = objects
        self.asked: dict[str, list[str]] = {}
        self.gone: set[str] = set()  # objects that vanished while they were read
        by_parent: dict[str, list[_Obj]] = {}
        for obj in objects.values():
            by_parent.setdefault(obj.parent, []).append(obj)
        self._cached = {p: [o.path for o in sorted(kids, key=lambda o: o.index)] for p, kids in by_parent.items()}

    def children(self, obj: _Obj) -> tuple[list[str], bool]:
        """Paths of ``obj``'s children, and whether they are to be trusted (False: ask
        the app; the list is then the cache's guess)."""
        asked = self.asked.get(obj.path)
        if asked is not None:
            return asked, True
        cached = self._cached.get(obj.path, [])
        return cached, len(cached) == obj.child_count


@dataclass
class _Needs:
    """What a pass of the selection could not decide without asking the app."""

    children: set[str] = field(default_factory=set)
    objects: set[str] = field(default_factory=set)
    extents: set[str] = field(default_factory=set)
    actions: set[str] = field(default_factory=set)
    values: set[str] = field(default_factory=set)
    toolkits: set[str] = field(default_factory=set)
    sheets: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.children or self.objects or self.extents or self.actions or self.values or self.toolkits
                    or self.sheets)


@dataclass(frozen=True, slots=True)
class _Cell:
    """A spreadsheet cell on screen, as ``_fetch`` read it."""

    row: int
    col: int
    text: str
    extents: tuple[int, int, int, int]  # as the app reports them (WINDOW coordinates)


_UNKNOWN = object()


class _Selection:
    """Which of an app's objects become nodes: the rules in the module docstring,
    over what has been read so far. A pass that meets something unread records it in
    ``needs`` and goes on as if it were absent (so one pass collects nearly everything
    the next round of calls must fetch); the reader repeats passes until nothing is
    missing. Pure: no D-Bus here."""

    def __init__(self, app: _App, tree: _Tree, names: _Names, prune_documents: bool,
                 extents: dict[str, tuple[int, int, int, int] | None], actions: dict[str, tuple[str, ...]],
                 values: dict[str, str | None], toolkits: dict[str, str] | None = None,
                 sheets: dict[str, list[_Cell]] | None = None) -> None:
        self.app, self.tree, self.names = app, tree, names
        self.prune_documents = prune_documents
        self.extents, self.actions, self.values = extents, actions, values
        self.toolkits = toolkits if toolkits is not None else {}
        self.sheets = sheets if sheets is not None else {}
        self.needs = _Needs()
        self.visited = 0
        self._origin = (0, 0)  # the frame's DESKTOP position, for an app with desktop_coords

    def run(self) -> list[NativeNode]:
        root = self.tree.objects.get(_ROOT)
        if root is None:
            self.needs.objects.add(_ROOT)
            return []
        out: list[NativeNode] = []
        for frame in self._kids(root):
            out += self._frame(frame)
        return out

    def _kids(self, obj: _Obj) -> list[_Obj]:
        if obj.child_count > _MAX_CHILDREN:
            return []
        if obj.has(_MANAGES_DESCENDANTS) and not (self.app.name == "soffice"
                                                  and self.names.role(obj.role) == "document text"):
            # (Writer's document says it manages its descendants, yet lists only the
            # paragraphs on screen, as children: a few dozen at most, measured.)
            return []
        paths, trusted = self.tree.children(obj)
        if not trusted:
            self.needs.children.add(obj.path)
        kids = []
        for path in paths:
            kid = self.tree.objects.get(path)
            if path in self.tree.gone:
                continue
            if kid is None:
                self.needs.objects.add(path)
            else:
                kids.append(kid)
        return kids

    def _extents(self, obj: _Obj) -> tuple[int, int, int, int] | None:
        if "Component" not in obj.interfaces:
            return None
        found = self.extents.get(obj.path, _UNKNOWN)
        if found is _UNKNOWN:
            self.needs.extents.add(obj.path)
            return None
        if found is not None and self.app.desktop_coords:
            x, y, w, h = found  # type: ignore[misc]
            return x - self._origin[0], y - self._origin[1], w, h
        return found  # type: ignore[return-value]

    def _sheet(self, table: _Obj, depth: int, frame_title: str, offset: tuple[int, int] | None) -> list[NativeNode]:
        """A Calc sheet's visible cells (the sheet's table reports every cell of the
        sheet, a billion or so, created on demand: they are asked by row and column, see
        ``_fetch``). Named as Calc names them (``B3``), their text (what the cell shows)
        as the value. ``_calc_cells`` then keeps those that hold something and the
        active one."""
        cells = self.sheets.get(table.path)
        if cells is None:
            self.needs.sheets.add(table.path)
            return []
        dx, dy = offset or (0, 0)
        states = ("editable", "enabled", "focusable", "selectable", "sensitive", "showing", "visible")
        return [NativeNode(
            key=f"{self.app.bus}{table.path}#{c.row},{c.col}", pid=self.app.pid, app=self.app.name, role="table cell",
            name=cell_name(c.row, c.col), value=c.text, states=states, actions=(),
            extents=(c.extents[0] + dx, c.extents[1] + dy, c.extents[2], c.extents[3]),
            frame=frame_title, depth=depth) for c in cells]

    def _toolkit(self, obj: _Obj) -> str | None:
        """The ``toolkit`` of the object's attributes ("" when none), None until read."""
        found = self.toolkits.get(obj.path)
        if found is None:
            self.needs.toolkits.add(obj.path)
        return found

    def _actions(self, obj: _Obj) -> tuple[str, ...]:
        if "Action" not in obj.interfaces:
            return ()
        found = self.actions.get(obj.path)
        if found is None:
            self.needs.actions.add(obj.path)
            return ()
        return found

    def _value(self, obj: _Obj, role: str) -> str | None:
        wanted = (_reads_text(obj, role) and role != "password text") or ("Value" in obj.interfaces
                                                                         and role in _VALUE_ROLES)
        if not wanted:
            return None
        found = self.values.get(obj.path, _UNKNOWN)
        if found is _UNKNOWN:
            self.needs.values.add(obj.path)
            return None
        return found  # type: ignore[return-value]

    def _frame(self, frame: _Obj) -> list[NativeNode]:
        self.visited += 1
        if not frame.on_screen:
            return []
        title = frame.name
        self._origin = (0, 0)
        extents = self._extents(frame)
        if extents is not None and self.app.desktop_coords:
            self._origin = extents[:2]
            extents = (0, 0, extents[2], extents[3])
        spans: list[tuple[int, int, int, int]] = [extents] if extents else []
        body: list[NativeNode] = []
        for child in self._kids(frame):
            body += self._visit(child, 2, title, title, extents, spans, extents, None)
        if not title and not body:
            return []  # an unnamed frame with nothing on it: Chromium's hidden popups
        if self.app.name == "soffice":
            body = _calc_cells(body)
        node = self._node(frame, self.names.role(frame.role), title, None, extents, title, 1, tuple(spans))
        return [node, *body]

    def _visit(self, obj: _Obj, depth: int, frame_title: str, parent_name: str,
               frame_extents: tuple[int, int, int, int] | None,
               spans: list[tuple[int, int, int, int]], parent_box: tuple[int, int, int, int] | None,
               offset: tuple[int, int] | None, popup: tuple[int, int] | None = None,
               parent_role: str = "") -> list[NativeNode]:
        """One node and what it holds. ``offset``: LibreOffice's VCL body offset
        (geometry.vcl_body_offset); ``popup``: where the popup of the menu being walked
        lies in the window: its items' boxes are relative to that popup (GTK 3 and 2,
        Wayland and X11: a popup is a surface of its own), which opens below the menu
        bar's menu (measured with LibreOffice's menu bar; a submenu's popup, to the
        right of its item, is not placed)."""
        self.visited += 1
        if not obj.on_screen and not (self.app.name == "soffice" and obj.name == _CALC_INPUT_LINE):
            # (Calc's formula bar says it is defunct, and nothing else, while its
            # paragraph, which holds the active cell's content, lives: measured.)
            return []
        role = self.names.role(obj.role)
        if role == "document web" and self.app.browser and self.prune_documents:
            return []
        if role == "menu bar" and self.app.name == "soffice" and offset is not None:
            return []  # VCL's own menu bar, never drawn: GTK's stands in for it (measured)
        if role in _MENU_ROLES and not self.app.gtk4 and not obj.has(_SHOWING):
            # The items of a closed menu are visible but not showing (GTK 3, VCL): their
            # boxes are off screen. LibreOffice's menu bar holds some 650 of them, whose
            # boxes cost 60% of its walk (measured). Not GTK 4's: it sets only visible.
            return []
        gtk4 = self.app.gtk4
        # GTK 4.8 names its panels and fillers after their types or not at all (measured).
        name = "" if gtk4 and role in ("panel", "filler") else obj.name
        container = role in _CONTAINER_ROLES
        kids = self._kids(obj) if gtk4 and _GTK_TYPE_NAME.match(name) else None
        if gtk4:
            name = self._gtk4_name(obj, name, kids or [])
        elif not name and role in _LEAF_ROLES and obj.description:
            # A button that shows only an icon, named by its tooltip (VLC's controls).
            name = obj.description.split("\n", 1)[0].strip()
        # Near the frame, containers' boxes tell where the visible window is (GTK4's
        # frame is the visible window: measured, so it is not asked there).
        want_span = container and not gtk4 and depth - 1 <= _SPAN_DEPTH and frame_extents is not None
        keep = bool(name) or obj.has(_FOCUSABLE) or not (container or role in _TEXT_ROLES)
        if keep and role in ("label", "static") and name == parent_name:
            keep = False  # a button's own label, repeated as a child
        out: list[NativeNode] = []
        extents = self._extents(obj) if keep or want_span else None
        offset = vcl_body_offset(self.app.name, role, extents, parent_box) or offset
        pending_toolkit = False
        if offset is not None and extents is not None:
            toolkit = self._toolkit(obj)
            pending_toolkit = toolkit is None
            extents, offset = native_vcl_box(extents, offset, toolkit or "")  # type: ignore[assignment]
        if popup is not None and extents is not None:
            extents = (extents[0] + popup[0], extents[1] + popup[1], extents[2], extents[3])
        if want_span and extents is not None and frame_extents is not None:
            fw, fh = frame_extents[2], frame_extents[3]
            if extents[2] >= fw - _SPAN_SLACK or extents[3] >= fh - _SPAN_SLACK:
                spans.append(extents)
        # While its box is being asked for, a node's value and actions are asked for
        # too (it will most likely be kept), and its children are walked in case.
        pending = obj.path in self.needs.extents or pending_toolkit
        if keep and (pending or (extents is not None and extents[2] > 0 and extents[3] > 0)):
            node = self._node(obj, role, name, self._value(obj, role), extents, frame_title, depth)
            if not pending:
                out.append(node)
                if role in _LEAF_ROLES and node.actions and _action_index(node.actions, "click") is not None:
                    return out
        if (role == "table" and obj.has(_MANAGES_DESCENDANTS) and "Table" in obj.interfaces
                and self.app.name == "soffice" and not pending and extents is not None):
            out += self._sheet(obj, depth + 1, frame_title, offset)
            return out
        if role == "menu" and self.app.name == "soffice" and not obj.has(_SELECTED):
            return out  # a closed menu (an open one is selected, measured): its items are not shown
        child_parent = name if keep else parent_name
        if (role == "menu" and parent_role == "menu bar" and extents is not None and not gtk4
                and not self.app.browser and not self.app.desktop_coords):
            popup = (extents[0], extents[1] + extents[3])
        for kid in kids if kids is not None else self._kids(obj):
            out += self._visit(kid, depth + 1, frame_title, child_parent, frame_extents, spans, extents, offset,
                               popup, role)
        return out

    def _gtk4_name(self, obj: _Obj, name: str, kids: list[_Obj]) -> str:
        if _GTK_TYPE_NAME.match(name):
            # What the widget shows first (a button's label), its tooltip otherwise.
            for kid in kids:
                if self.names.role(kid.role) == "label" and kid.name and not _GTK_TYPE_NAME.match(kid.name):
                    return kid.name
            return obj.description
        mid = len(name) // 2
        if len(name) % 2 == 1 and name[mid] == " " and name[:mid] == name[mid + 1:]:
            return name[:mid]
        return name

    def _node(self, obj: _Obj, role: str, name: str, value: str | None,
              extents: tuple[int, int, int, int] | None, frame: str, depth: int,
              spans: tuple[tuple[int, int, int, int], ...] = ()) -> NativeNode:
        return NativeNode(
            key=f"{self.app.bus}{obj.path}", pid=self.app.pid, app=self.app.name, role=role, name=name,
            value=value, states=self.names.state_names(obj.states), actions=self._actions(obj),
            extents=extents, frame=frame, depth=depth, spans=spans,
        )


def _reads_text(obj: _Obj, role: str) -> bool:
    """Whether a node's value is its text: an entry's, an editable node's, or an
    unnamed paragraph's (Writer's and Impress's paragraphs, Calc's formula bar)."""
    return "Text" in obj.interfaces and (role in _TEXT_VALUE_ROLES or obj.has(_EDITABLE)
                                         or (role in ("paragraph", "heading") and not obj.name))


def _calc_cells(nodes: list[NativeNode]) -> list[NativeNode]:
    """A Calc window's nodes with its sheet's empty cells left out, except the active
    cell, which is ``focused`` when the sheet is and has its formula.

    The active cell is the one the Name Box names (each cell's own state would cost a
    call a cell), and its formula is what the formula bar's Input line shows (a cell's
    ``Formula`` attribute arrives cut at its first colon: ``=SUM(B1:B3)`` as
    ``SUM(B1\\``). With a range selected, the Name Box names the range and no cell is
    marked."""
    bar, name_box, formula, focused = 0, None, None, False
    for node in nodes:
        if bar and node.depth <= bar:
            bar = 0
        if node.role == "tool bar" and node.name == _CALC_FORMULA_BAR:
            bar = node.depth
        elif bar and node.role == "text" and name_box is None:
            name_box = (node.value or "").replace("$", "")
        elif bar and node.role == "paragraph" and formula is None:
            formula = node.value or ""
        elif node.role == "table" and "focused" in node.states:
            focused = True
    out = []
    for node in nodes:
        if node.role == "table cell":
            if node.name == name_box:
                node = dataclasses.replace(node, states=tuple(sorted({*node.states, "focused"})) if focused
                                           else node.states,
                                           formula=formula if formula and formula.startswith("=") else None)
            elif not node.value:
                continue
        out.append(node)
    return out


def _obj_from_item(item: list[Any]) -> _Obj:
    (bus, path), _app, (parent_bus, parent), index, count, ifaces, name, role, description, states = item
    # An app's root names the registry's root (another bus, the same path) as its parent.
    return _Obj(path=path, parent=parent if parent_bus == bus else "", index=index, child_count=count,
                interfaces=frozenset(i.removeprefix(_A11Y) for i in ifaces), name=name, role=role,
                description=description, states=states[0] | states[1] << 32)


class AtspiReader:
    """Reads every application on the session's accessibility bus, over D-Bus
    directly (dbus-fast, asyncio), with every call of a round in flight at once.

    ``await reader.open()`` first; one snapshot or action at a time."""

    def __init__(self, *, bus_address: str | None = None, app_timeout: float = APP_TIMEOUT_S) -> None:
        self._session_address = bus_address or os.environ.get("DBUS_SESSION_BUS_ADDRESS")
        if not self._session_address:
            raise AtspiError("DBUS_SESSION_BUS_ADDRESS is not set: AT-SPI needs the session's D-Bus bus")
        self._timeout = app_timeout
        self._names = _Names()
        self._bus: Any = None
        # Apps that offer a peer-to-peer socket (atk-bridge: Chromium, GTK 3) are asked
        # there: a call through the bus daemon costs twice as long (113 against 54 us
        # a call, pipelined, measured with Chromium). Bus name -> connection.
        self._direct: dict[str, Any] = {}
        self._apps: dict[str, _App] = {}
        # What an object never changes while it lives (its actions; role and interfaces
        # when they do not come from a cache) is asked once.
        self._actions: dict[str, tuple[str, ...]] = {}
        self._static: dict[str, tuple[int, frozenset[str]]] = {}  # key -> role, interfaces
        self._toolkits: dict[str, str] = {}  # key -> the toolkit its attributes name
        self._hidden: set[str] = set()  # keys of objects neither showing nor visible last time
        # What the last walk of each app read level by level: asked at once next time.
        self._shapes: dict[str, _Needs] = {}
        self._known: dict[str, int] = {}  # key -> pid, as of the latest snapshot
        # A sheet's cells, by (row, column): the object LibreOffice made for each when
        # it was first asked. LibreOffice makes a new object at every GetAccessibleAt and
        # atk-bridge keeps every one it has handed out, for as long as the app lives:
        # asking again each turn would cost a call a cell and grow the app by some
        # 1,300 objects a turn on a full-screen sheet. An object keeps reading its
        # cell's current content (measured, LibreOffice 7.4). Sheet key -> cells.
        self._cells: dict[str, dict[tuple[int, int], str]] = {}
        # What each sheet's visible cells read, and the sheet's box then (see snapshot).
        self._sheet_read: dict[str, tuple[tuple[int, int, int, int] | None, list[_Cell]]] = {}
        self._still: frozenset[str] = frozenset()
        self._sheets_kept = 0
        # Calls in flight at once. dbus-fast writes a burst of calls without waiting for
        # the socket to drain and fails with EAGAIN when its buffer fills (seen with
        # LibreOffice: some 1,400 objects); a few hundred in flight lose nothing of
        # the pipelining.
        self._in_flight = asyncio.Semaphore(MAX_IN_FLIGHT)
        self.last_walk: dict[str, float | int] = {}

    async def open(self) -> None:
        from dbus_fast.aio import MessageBus

        try:
            session = await MessageBus(bus_address=self._session_address).connect()
            try:
                reply = await self._call_on(session, "org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress")
            finally:
                session.disconnect()
            self._bus = await MessageBus(bus_address=reply[0]).connect()
        except (OSError, _DBusError) as exc:
            raise AtspiError(f"cannot reach the accessibility bus: {exc}") from exc

    async def close(self) -> None:
        for conn in self._direct.values():
            conn.disconnect()
        self._direct.clear()
        if self._bus is not None:
            self._bus.disconnect()
            self._bus = None

    # -- public -----------------------------------------------------------------------

    async def snapshot(self, *, prune_documents: bool = True, pids: Collection[int] | None = None,
                       still: Collection[str] = ()) -> list[NativeNode]:
        """Every application's on-screen nodes, in tree order (see the module docstring
        for what is kept); with ``pids``, only those processes' apps. An app that does
        not answer within the call timeout is left out of this snapshot. ``last_walk``
        holds the figures of the latest walk: seconds, objects visited, nodes kept, and
        milliseconds per app; all apps are read at the same time.

        ``still`` names sheets (their table's key) whose pixels have not changed since
        the previous snapshot: their cells are taken from the previous read when the
        sheet's box is the same (what a sheet's cells show is drawn in its box; the
        caller watches the pixels)."""
        self._still, self._sheets_kept = frozenset(still), 0
        started = time.perf_counter()
        try:
            refs = await self._within(self._call(_REGISTRY, _ROOT, _ACCESSIBLE, "GetChildren"), "the registry")
        except (_DBusError, _AppUnresponsive) as exc:
            raise AtspiError(f"the accessibility registry did not list the apps: {exc}") from exc
        buses = [bus for bus, _ in refs[0]]
        apps = await asyncio.gather(*(self._within(self._app(bus), bus) for bus in buses), return_exceptions=True)
        self._apps = {a.bus: a for a in apps if isinstance(a, _App)}
        chosen = [a for a in apps if isinstance(a, _App) and (pids is None or a.pid in pids)]
        walks = await asyncio.gather(*(self._within(self._walk(a, prune_documents), a.name) for a in chosen),
                                     return_exceptions=True)
        out: list[NativeNode] = []
        stats: dict[str, float | int] = {"visited": 0, "kept": 0}
        walked: set[int] = set()
        for app, walk in zip(chosen, walks):
            if isinstance(walk, BaseException):
                if not isinstance(walk, (_AppUnresponsive, _DBusError)):
                    raise walk
                continue
            nodes, visited, ms = walk
            walked.add(app.pid)
            out += nodes
            stats["visited"] += visited
            stats["kept"] += len(nodes)
            stats[f"app:{app.name or '?'}:{app.pid}:ms"] = ms
        known = {n.key: n.pid for n in out}
        if pids is not None:
            # Keys of the apps not walked this time stay actionable.
            known = {**{k: p for k, p in self._known.items() if p not in walked}, **known}
        self._known = known
        live_buses = set(self._apps)
        for bus in [b for b in self._direct if b not in live_buses]:
            self._drop_direct(bus)
        self._shapes = {b: v for b, v in self._shapes.items() if b in live_buses}
        self._actions = {k: v for k, v in self._actions.items() if k.split("/", 1)[0] in live_buses}
        self._static = {k: v for k, v in self._static.items() if k.split("/", 1)[0] in live_buses}
        self._toolkits = {k: v for k, v in self._toolkits.items() if k.split("/", 1)[0] in live_buses}
        self._hidden = {k for k in self._hidden if k.split("/", 1)[0] in live_buses}
        self._cells = {k: v for k, v in self._cells.items() if k.split("/", 1)[0] in live_buses}
        self._sheet_read = {k: v for k, v in self._sheet_read.items() if k.split("/", 1)[0] in live_buses}
        stats["seconds"] = time.perf_counter() - started
        stats["sheets_kept"] = self._sheets_kept
        self.last_walk = stats
        return out

    async def act(self, key: str, action: str) -> bool:
        """Do the named action (``click``, ``press``, ``activate`` ...) on the node with
        this key. ``click`` also means a node's ``press``, ``activate``, ``toggle``,
        ``jump``, ``open`` or ``doDefault`` when it has no ``click``; ``focus`` is the
        Component interface's GrabFocus. False when the node is gone; NoSuchAction when
        it lives but has no such action."""
        if key not in self._known:
            await self.snapshot()
            if key not in self._known:
                return False
        try:
            return await self._within(self._act(key, action), key)
        except (_DBusError, _AppUnresponsive):
            self._known.pop(key, None)
            return False

    async def _act(self, key: str, action: str) -> bool:
        bus, _, rest = key.partition("/")
        path = "/" + rest
        state = await self._call(bus, path, _ACCESSIBLE, "GetState")
        lo, hi = state[0]
        if (lo | hi << 32) >> _DEFUNCT & 1:
            self._known.pop(key, None)
            return False
        if action == "focus":
            return bool((await self._call(bus, path, _A11Y + "Component", "GrabFocus"))[0])
        names = self._actions.get(key)
        if names is None:
            names = self._actions[key] = await self._action_names(bus, path)
        index = _action_index(names, action)
        if index is None:
            raise NoSuchAction(key, action, names)
        return bool((await self._call(bus, path, _A11Y + "Action", "DoAction", "i", [index]))[0])

    # -- internals ----------------------------------------------------------------------

    async def _app(self, bus: str) -> _App:
        app = self._apps.get(bus)
        if app is not None:
            return app
        pid = (await self._call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                "GetConnectionUnixProcessID", "s", [bus]))[0]
        name, toolkit, version = await asyncio.gather(
            self._prop(bus, _ROOT, _ACCESSIBLE, "Name"),
            self._prop(bus, _ROOT, _A11Y + "Application", "ToolkitName"),
            self._prop(bus, _ROOT, _A11Y + "Application", "Version"),
        )
        toolkit = (toolkit or "").lower()
        browser = toolkit in _BROWSER_TOOLKITS
        await self._connect_direct(bus)
        # A browser's cache, once some client turns AT-SPI events on, holds every page
        # node too (1,382 objects and 27 ms for a 1,000-element page, measured) while
        # only its own UI is wanted here: it is walked level by level, pages pruned.
        # LibreOffice's holds every object it ever made (the cells of a sheet, the
        # items of every menu: 1,888 objects, 160-270 ms a call, measured) and works
        # out each one's states when asked: it is walked level by level too, closed
        # menus left unopened (110-240 ms).
        return _App(bus=bus, pid=pid, name=name or "", gtk4=toolkit == "gtk" and (version or "").startswith("4."),
                    browser=browser, cache=not browser and name != "soffice", get_all=toolkit != "qt",
                    desktop_coords=toolkit == "qt")

    async def _walk(self, app: _App, prune_documents: bool) -> tuple[list[NativeNode], int, float]:
        t0 = time.perf_counter()
        items: list[Any] = []
        if app.cache:
            try:
                items = (await self._call(app.bus, _CACHE_PATH, _A11Y + "Cache", "GetItems"))[0]
            except _DBusError:
                # GTK 3's atk-bridge offers its cache only once some client has turned
                # AT-SPI events on, and an app that has just started may not have it yet
                # (measured): this time its tree is read level by level. Asked again
                # next time: a failed call costs a fraction of a millisecond.
                pass
        tree = _Tree({o.path: o for o in map(_obj_from_item, items)})
        extents: dict[str, tuple[int, int, int, int] | None] = {}
        values: dict[str, str | None] = {}
        toolkits = {"/" + k.partition("/")[2]: v for k, v in self._toolkits.items() if k.startswith(app.bus + "/")}
        sheets: dict[str, list[_Cell]] = {}
        actions = {"/" + k.partition("/")[2]: v for k, v in self._actions.items() if k.startswith(app.bus + "/")}
        shape = self._shapes.get(app.bus) if not items else None
        if shape is not None:
            # Read level by level, a tree as deep as Chromium's UI (eleven levels) costs
            # eleven rounds. What the last walk read is most likely what this one needs:
            # it is asked at once, and the passes below fetch only what changed.
            await self._fetch(app, tree, _Needs(children=set(shape.children), objects=set(shape.objects),
                                                extents=set(shape.extents)), extents, actions, values, toolkits, sheets)
        for _ in range(_MAX_ROUNDS):
            selection = _Selection(app, tree, self._names, prune_documents, extents, actions, values, toolkits,
                                   sheets)
            nodes = selection.run()
            needs = selection.needs
            if not needs:
                if not items:
                    self._shapes[app.bus] = _Needs(children=set(tree.asked), objects=set(tree.objects),
                                                   extents={p for p, box in extents.items() if box is not None})
                return nodes, selection.visited, round((time.perf_counter() - t0) * 1000, 2)
            await self._fetch(app, tree, needs, extents, actions, values, toolkits, sheets)
        raise _AppUnresponsive(f"{app.name}: its tree kept changing while it was read")

    async def _fetch(self, app: _App, tree: _Tree, needs: _Needs, extents: dict, actions: dict, values: dict,
                     toolkits: dict, sheets: dict) -> None:
        """One round: everything ``needs`` names, asked at once."""
        bus = app.bus

        async def children(path: str) -> None:
            refs = (await self._call(bus, path, _ACCESSIBLE, "GetChildren"))[0]
            tree.asked[path] = [p for _, p in refs]
            # (Objects this round asks for anyway are not asked twice.)
            await asyncio.gather(*(obj(kid) for kid in tree.asked[path]
                                   if kid not in tree.objects and kid not in needs.objects))

        async def props_of(path: str) -> list[Any]:
            """Properties.GetAll's reply for the Accessible interface (asked one by one
            of an app that cannot answer GetAll)."""
            if app.get_all:
                return await self._call(bus, path, _PROPERTIES, "GetAll", "s", [_ACCESSIBLE])
            names = ("Name", "Description", "ChildCount", "Parent")
            replies = await asyncio.gather(*(self._call(bus, path, _PROPERTIES, "Get", "ss", [_ACCESSIBLE, n])
                                             for n in names))
            return [{n: r[0] for n, r in zip(names, replies)}]

        async def obj(path: str) -> None:
            key = bus + path
            static = self._static.get(key)
            props: Any = None
            if static is None:
                props, state, role, ifaces = await asyncio.gather(
                    props_of(path),
                    self._call(bus, path, _ACCESSIBLE, "GetState"),
                    self._call(bus, path, _ACCESSIBLE, "GetRole"),
                    self._call(bus, path, _ACCESSIBLE, "GetInterfaces"),
                )
                static = self._static[key] = (role[0], frozenset(i.removeprefix(_A11Y) for i in ifaces[0]))
            elif key in self._hidden:
                # Hidden last time (most of a browser's UI: 98 of its 139 objects): its
                # state alone says whether it still is, and then nothing else is read.
                state = await self._call(bus, path, _ACCESSIBLE, "GetState")
            else:
                props, state = await asyncio.gather(
                    props_of(path),
                    self._call(bus, path, _ACCESSIBLE, "GetState"),
                )
            lo, hi = state[0]
            states = lo | hi << 32
            shown = bool((states >> _SHOWING | states >> _VISIBLE) & 1)
            # (Calc's Input line says it is defunct, and nothing else: its name tells.)
            calc_line = app.name == "soffice" and states == 1 << _DEFUNCT
            if props is None and (shown or calc_line):
                props = await props_of(path)
            if shown:
                self._hidden.discard(key)
            else:
                self._hidden.add(key)
            p = {k: v.value for k, v in props[0].items()} if props is not None else {}
            parent_bus, parent = p.get("Parent", ("", ""))
            tree.objects[path] = _Obj(
                path=path, parent=parent if parent_bus == bus else "", index=-1, child_count=p.get("ChildCount", 0),
                interfaces=static[1], name=p.get("Name", ""), role=static[0], description=p.get("Description", ""),
                states=states)

        coords = _DESKTOP_COORDS if app.desktop_coords else _WINDOW_COORDS

        async def box(path: str) -> None:
            x, y, w, h = (await self._call(bus, path, _A11Y + "Component", "GetExtents", "u", [coords]))[0]
            extents[path] = None if x == _OFFSCREEN or y == _OFFSCREEN else (x, y, w, h)

        async def acts(path: str) -> None:
            names = await self._action_names(bus, path)
            actions[path] = self._actions[bus + path] = names

        async def value(path: str) -> None:
            o = tree.objects[path]
            role = self._names.role(o.role)
            if _reads_text(o, role):
                text = (await self._call(bus, path, _A11Y + "Text", "GetText", "ii", [0, -1]))[0]
                values[path] = text[:_MAX_VALUE_CHARS]
            else:
                number = await self._prop(bus, path, _A11Y + "Value", "CurrentValue")
                values[path] = None if number is None else f"{number:g}"

        async def toolkit(path: str) -> None:
            attributes = (await self._call(bus, path, _ACCESSIBLE, "GetAttributes"))[0]
            toolkits[path] = self._toolkits[bus + path] = attributes.get("toolkit", "")

        async def sheet(path: str) -> None:
            box = extents.get(path)
            last = self._sheet_read.get(bus + path)
            if bus + path in self._still and last is not None and last[0] == box:
                sheets[path] = last[1]
                self._sheets_kept += 1
                return
            sheets[path] = await self._sheet_cells(bus, path, box)
            self._sheet_read[bus + path] = (box, sheets[path])

        jobs = [*map(children, needs.children), *map(obj, needs.objects), *map(box, needs.extents),
                *map(acts, needs.actions), *map(value, needs.values), *map(toolkit, needs.toolkits),
                *map(sheet, needs.sheets)]
        results = await asyncio.gather(*jobs, return_exceptions=True)
        for result in results:
            if isinstance(result, _AppUnresponsive):
                raise result
        # An object that vanished mid-read (an error for it) is simply absent next pass;
        # its box and value are recorded as missing so the pass does not ask again.
        for path in needs.extents:
            extents.setdefault(path, None)
        for path in needs.values:
            values.setdefault(path, None)
        for path in needs.actions:
            actions.setdefault(path, ())
        for path in needs.toolkits:
            toolkits.setdefault(path, "")
        for path in needs.sheets:
            sheets.setdefault(path, [])
        for path in needs.children:
            tree.asked.setdefault(path, [])
        for path in needs.objects:
            if path not in tree.objects:
                tree.gone.add(path)
        for path in needs.children:
            tree.gone.update(p for p in tree.asked[path] if p not in tree.objects)

    async def _sheet_cells(self, bus: str, path: str, box: tuple[int, int, int, int] | None) -> list[_Cell]:
        """The cells of a sheet's visible part. The visible part is bounded by the cells
        under its top-left and bottom-right corners; each row's height and column's
        width come from the first column's and row's cells, and a cell's object is made
        once (``_cells``), so a cell costs one call a turn (its text) rather than five."""
        if box is None:
            return []
        x, y, w, h = box
        table = _A11Y + "Table"

        async def cell_at_point(px: int, py: int) -> tuple[int, int] | None:
            ref = (await self._call(bus, path, _A11Y + "Component", "GetAccessibleAtPoint", "iiu",
                                    [px, py, _WINDOW_COORDS]))[0]
            if not ref or not ref[1] or ref[1] == "/org/a11y/atspi/null":
                return None
            index = (await self._call(bus, ref[1], _ACCESSIBLE, "GetIndexInParent"))[0]
            row, col = await asyncio.gather(self._call(bus, path, table, "GetRowAtIndex", "i", [index]),
                                            self._call(bus, path, table, "GetColumnAtIndex", "i", [index]))
            return row[0], col[0]

        first, last = await asyncio.gather(cell_at_point(x + 1, y + 1), cell_at_point(x + w - 2, y + h - 2))
        if first is None or last is None or last[0] < first[0] or last[1] < first[1]:
            return []
        rows = range(first[0], last[0] + 1)
        cols = range(first[1], last[1] + 1)
        while len(rows) * len(cols) > MAX_SHEET_CELLS and len(rows) > 1:
            rows = rows[:-1]

        known = self._cells.setdefault(bus + path, {})
        if len(known) > MAX_CACHED_CELLS:
            known.clear()

        async def read(ref: str, box: bool) -> tuple[str, Any]:
            if box:
                return "", (await self._call(bus, ref, _A11Y + "Component", "GetExtents", "u", [_WINDOW_COORDS]))[0]
            return (await self._call(bus, ref, _A11Y + "Text", "GetText", "ii", [0, -1]))[0], None

        async def cell(row: int, col: int, *, box: bool = False) -> tuple[str, Any]:
            ref = known.get((row, col))
            if ref is not None:
                try:
                    return await read(ref, box)
                except _DBusError:
                    pass  # gone (rows deleted, the sheet rebuilt): asked for afresh
            ref = known[row, col] = (await self._call(bus, path, table, "GetAccessibleAt", "ii", [row, col]))[0][1]
            return await read(ref, box)

        # Geometry: the first visible row gives the columns, the first visible column the rows.
        col_boxes, row_boxes = await asyncio.gather(
            asyncio.gather(*(cell(rows[0], c, box=True) for c in cols)),
            asyncio.gather(*(cell(r, cols[0], box=True) for r in rows)))
        texts = await asyncio.gather(*(cell(r, c) for r in rows for c in cols))
        out = []
        for i, (text, _) in enumerate(texts):
            r, c = divmod(i, len(cols))
            if col_boxes[c][1] is None or row_boxes[r][1] is None:
                continue
            cx, _, cw, _ = col_boxes[c][1]
            _, ry, _, rh = row_boxes[r][1]
            out.append(_Cell(row=rows[r], col=cols[c], text=text[:_MAX_VALUE_CHARS], extents=(cx, ry, cw, rh)))
        return out

    async def _action_names(self, bus: str, path: str) -> tuple[str, ...]:
        # Unlocalized names, one call each (GetActions gives localized ones, or none
        # at all from Chromium: measured).
        count = await self._prop(bus, path, _A11Y + "Action", "NActions")
        replies = await asyncio.gather(*(self._call(bus, path, _A11Y + "Action", "GetName", "i", [i])
                                         for i in range(count or 0)))
        return tuple(r[0] for r in replies)

    async def _prop(self, bus: str, path: str, interface: str, name: str) -> Any:
        try:
            return (await self._call(bus, path, _PROPERTIES, "Get", "ss", [interface, name]))[0].value
        except _DBusError:
            return None

    async def _call(self, bus: str, path: str, interface: str, member: str, signature: str = "",
                    body: list[Any] | None = None) -> list[Any]:
        if self._bus is None:
            raise AtspiError("the reader is not open")
        direct = self._direct.get(bus)
        async with self._in_flight:
            if direct is None:
                return await self._call_on(self._bus, bus, path, interface, member, signature, body)
            return await self._direct_call(direct, bus, path, interface, member, signature, body)

    async def _direct_call(self, direct: Any, bus: str, path: str, interface: str, member: str, signature: str,
                           body: list[Any] | None) -> list[Any]:
        try:
            return await self._call_on(direct, bus, path, interface, member, signature, body)
        except _DBusError:
            raise
        except Exception as exc:  # the app's socket went away with the app
            self._drop_direct(bus)
            raise _DBusError(f"{bus}: its connection closed ({exc!r})") from exc

    async def _connect_direct(self, bus: str) -> None:
        from dbus_fast.aio import MessageBus

        try:
            address = (await self._call(bus, _ROOT, _A11Y + "Application", "GetApplicationBusAddress"))[0]
        except _DBusError:
            return  # GTK 4 answers on the bus only
        if not address:
            return
        try:
            self._direct[bus] = await asyncio.wait_for(MessageBus(bus_address=address).connect(), self._timeout)
        except Exception:  # refused, gone, or too slow: the bus will do
            pass

    def _drop_direct(self, bus: str) -> None:
        conn = self._direct.pop(bus, None)
        if conn is not None:
            conn.disconnect()

    async def _within(self, awaitable: Any, what: str) -> Any:
        """``awaitable``, or _AppUnresponsive after the timeout. Applied to a whole app's
        walk (not to each call: a timer per call costs more than the call)."""
        try:
            return await asyncio.wait_for(awaitable, self._timeout)
        except asyncio.TimeoutError:
            raise _AppUnresponsive(f"{what} did not answer within {self._timeout:g} s") from None

    @staticmethod
    async def _call_on(conn: Any, bus: str, path: str, interface: str, member: str, signature: str = "",
                       body: list[Any] | None = None) -> list[Any]:
        from dbus_fast import Message, MessageType

        reply = await conn.call(Message(destination=bus, path=path, interface=interface, member=member,
                                        signature=signature, body=body or []))
        if reply.message_type == MessageType.ERROR:
            raise _DBusError(f"{reply.error_name}: {reply.body[0] if reply.body else ''}")
        return reply.body


class _DBusError(Exception):
    """An app answered a call with an error (most often: the object is gone)."""


async def _none() -> None:
    return None


def cell_name(row: int, col: int) -> str:
    """A spreadsheet's name of the cell at 0-based ``row`` and ``col``: ``A1``, ``AB12``."""
    letters = ""
    col += 1
    while col:
        col, rest = divmod(col - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return f"{letters}{row + 1}"


def _action_index(names: tuple[str, ...], action: str) -> int | None:
    if action in names:
        return names.index(action)
    if action == "click":
        for alias in _CLICK_ALIASES:
            if alias in names:
                return names.index(alias)
    return None


def main(argv: list[str] | None = None) -> None:
    """``python -m services.scene.atspi``: print what AT-SPI sees in this session (as
    JSON lines, one per node), the walk's figures last. Run it as the session user
    with the session's DBUS_SESSION_BUS_ADDRESS."""
    import argparse
    import json
    import sys

    parser = argparse.ArgumentParser(prog="python -m services.scene.atspi", description=main.__doc__)
    parser.add_argument("--documents", action="store_true", help="also walk Chromium's page content")
    parser.add_argument("--repeat", type=int, default=1, help="walk this many times (timings)")
    args = parser.parse_args(argv)

    async def run() -> None:
        reader = AtspiReader()
        await reader.open()
        try:
            nodes: list[NativeNode] = []
            for _ in range(args.repeat):
                nodes = await reader.snapshot(prune_documents=not args.documents)
                sys.stderr.write(json.dumps(reader.last_walk) + "\n")
            for node in nodes:
                sys.stdout.write(json.dumps(dict(node.__dict__), ensure_ascii=False) + "\n")
        finally:
            await reader.close()

    asyncio.run(run())


if __name__ == "__main__":
    main()
