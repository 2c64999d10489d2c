"""What a native node is, the objects read from an app, and AT-SPI's names and numbers
(see the package docstring)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..geometry import SURFACE_MARGIN_MAX, surface_window


class AtspiError(Exception):
    """Base of this module's errors (D-Bus errors are translated to it)."""


class DBusError(Exception):
    """An app answered a call with an error (most often: the object is gone)."""


class AppUnresponsive(Exception):
    """An app (or the registry) did not answer within its timeout."""


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
    parent: str = ""  # the key of its nearest ancestor that is a node too ("" for a frame)
    # Set on a popup's window node whose contents could not be placed (a GTK menu that
    # names no button: LibreOffice's Field drop-down): they stay relative to the popup,
    # for the caller to place (``deskbox.scene.placing.place_popups_at_pointer``).
    unplaced: bool = False


# Roles of top-level windows (children of an application).
_FRAME_ROLES = frozenset({"frame", "window", "dialog", "alert", "file chooser", "color chooser", "font chooser"})
# Layout containers: kept only when named or focusable.
CONTAINER_ROLES = frozenset({
    "panel", "filler", "section", "redundant object", "unknown", "invalid", "layered pane", "glass pane",
    "root pane", "viewport", "scroll pane", "split pane", "grouping", "html container", "form", "landmark",
    "internal frame", "option pane", "block quote", "article", "description list",
})
# Text-like roles: useless without a name (their text is their name).
TEXT_ROLES = frozenset({"label", "static", "paragraph", "heading", "caption", "icon", "image", "notification",
                         "separator", "accelerator label", "text"})
# Roles whose text contents are their value (password text is never read).
TEXT_VALUE_ROLES = frozenset({"entry", "text", "terminal", "editbar", "spin button", "combo box",
                               "document text", "autocomplete"})
VALUE_ROLES = frozenset({"slider", "spin button", "progress bar", "scroll bar", "level bar", "dial"})
BROWSER_TOOLKITS = ("chromium", "gecko")
# Calc's formula bar and its Input line (LibreOffice's English names).
CALC_FORMULA_BAR, CALC_INPUT_LINE = "Formula Tool Bar", "Input line"
MENU_ROLES = frozenset({"menu", "menu item", "check menu item", "radio menu item", "tearoff menu item"})
# A control that does its own action is a leaf for an agent: what lies inside (its
# label, icon, hidden notifications) is not walked. One without an action (GTK4's menu
# button wrapping the real button) is walked.
LEAF_ROLES = frozenset({"push button", "toggle button", "check box", "radio button", "menu item",
                         "check menu item", "radio menu item", "entry", "password text"})
# A GTK4 widget without an accessible name is named after its type: "GtkMenuButton".
GTK_TYPE_NAME = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$")
OFFSCREEN = -(2**31)
# How deep below a frame the reader looks for the visible window's box (Chromium's
# root view is three levels down).
SPAN_DEPTH = 3
SPAN_SLACK = SURFACE_MARGIN_MAX  # layout px a span may be smaller than its frame
MAX_VALUE_CHARS = 4096
# Asked in this order when an action name is missing: what "click" means per toolkit.
_CLICK_ALIASES = ("click", "press", "activate", "toggle", "jump", "open", "doDefault")

# A hung app must not stall every snapshot: one whose walk takes longer is left out of
# the snapshot (the scene gives the whole worker 3 s). LibreOffice's walk takes 0.5 s
# on a quiet machine and went over 1 s with several documents open on a busy one.
APP_TIMEOUT_S = 2.0
MAX_IN_FLIGHT = 256
# Passes of the selection per app (each asks what the last one could not decide: two
# for an app with a cache; one per tree level for one without).
MAX_ROUNDS = 64


def visible_window(frame: NativeNode, content_size: tuple[float, float]) -> tuple[float, float, float, float]:
    """Where the window Sway shows lies inside ``frame``'s surface (see
    ``deskbox.geometry.surface_window``), from the frame node's extents and spans."""
    return surface_window(frame.extents, frame.spans, content_size)


# AT-SPI's D-Bus names.
A11Y = "org.a11y.atspi."
ACCESSIBLE = A11Y + "Accessible"
PROPERTIES = "org.freedesktop.DBus.Properties"
ROOT = "/org/a11y/atspi/accessible/root"
CACHE_PATH = "/org/a11y/atspi/cache"
REGISTRY = "org.a11y.atspi.Registry"
DESKTOP_COORDS, WINDOW_COORDS = 0, 1  # ATSPI_COORD_TYPE_SCREEN, _WINDOW
# The state bits this module reads (AT-SPI's StateType numbers).
DEFUNCT, EDITABLE, FOCUSABLE, _FOCUSED, SELECTED, SHOWING, VISIBLE, MANAGES_DESCENDANTS = (
    6, 7, 11, 12, 23, 25, 30, 31)
# At most this many cells of a sheet are read (a 1920x1080 Calc shows about 1,000).
MAX_SHEET_CELLS = 2500
MAX_CACHED_CELLS = 20_000  # per sheet (see AtspiReader._cells)
# Above this many children an object's children are not walked (a spreadsheet's table
# reports every cell of the sheet); nor are those of one that manages its descendants.
MAX_CHILDREN = 2000


@dataclass(slots=True)
class Obj:
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
        return (self.has(SHOWING) or self.has(VISIBLE)) and not self.has(DEFUNCT)


class Names:
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
        # The spelling OSWorld's XML uses (``st:multi_line``): the enum's own names.
        self.state_keys = {i: Atspi.StateType(i).value_name.removeprefix("ATSPI_STATE_").lower()
                           for i in range(int(Atspi.StateType.LAST_DEFINED))}

    def role(self, number: int) -> str:
        return self.roles.get(number, "unknown")

    def state_names(self, states: int) -> tuple[str, ...]:
        return tuple(self.states[i] for i in sorted(self.states) if states >> i & 1)

    def state_keys_of(self, states: int) -> list[str]:
        """The states set in ``states`` as OSWorld spells them (an unknown bit: its number)."""
        out = []
        while states:
            low = states & -states  # the lowest bit set
            i = low.bit_length() - 1
            out.append(self.state_keys.get(i, str(i)))
            states ^= low
        return out


@dataclass
class App:
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
    # Whether what the last walk read may be asked again at once (see the reader). Not
    # of LibreOffice 7.4: its accessibility wrappers keep GTK objects they do not hold,
    # and a call on one whose object is gone (a closed dialog's, a drop-down's) aborts
    # the whole app (seen in atk-bridge, exit 134). Only what is reachable now is asked.
    prefetch: bool = True

    @property
    def text_end(self) -> int:
        """The end offset that asks Text.GetText for all of a text: -1, but GTK 4.8
        answers "" to that (measured with gnome-calculator 43's labels): it is given
        the largest offset, which it clamps."""
        return 2**31 - 1 if self.gtk4 else -1


class Tree:
    """One app's objects, children in order. Children come from the app's cache
    (``Cache.GetItems``: every object in one call) unless a parent said otherwise:
    a parent whose ``child_count`` disagrees with the cache (GTK 3 leaves a button
    packed into a box after start-up out of it, measured) has its children asked of
    it (``children_of``), and those are the truth."""

    def __init__(self, objects: dict[str, Obj]) -> None:
        self.objects = objects
        self.asked: dict[str, list[str]] = {}
        self.gone: set[str] = set()  # objects that vanished while they were read
        by_parent: dict[str, list[Obj]] = {}
        for obj in objects.values():
            by_parent.setdefault(obj.parent, []).append(obj)
        self._cached = {p: [o.path for o in sorted(kids, key=lambda o: o.index)] for p, kids in by_parent.items()}

    def children(self, obj: Obj) -> tuple[list[str], bool]:
        """Paths of ``obj``'s children, and whether they are to be trusted (False: ask
        the app; the list is then the cache's guess)."""
        asked = self.asked.get(obj.path)
        if asked is not None:
            return asked, True
        cached = self._cached.get(obj.path, [])
        return cached, len(cached) == obj.child_count


@dataclass
class Needs:
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

    def size(self) -> int:
        return (len(self.children) + len(self.objects) + len(self.extents) + len(self.actions) + len(self.values)
                + len(self.toolkits) + len(self.sheets))


@dataclass(frozen=True, slots=True)
class Cell:
    """A spreadsheet cell on screen, as ``_fetch`` read it."""

    row: int
    col: int
    text: str
    extents: tuple[int, int, int, int]  # as the app reports them (WINDOW coordinates)


UNKNOWN = object()


def obj_from_item(item: list[Any]) -> Obj:
    (bus, path), _app, (parent_bus, parent), index, count, ifaces, name, role, description, states = item
    # An app's root names the registry's root (another bus, the same path) as its parent.
    return Obj(path=path, parent=parent if parent_bus == bus else "", index=index, child_count=count,
                interfaces=interface_set(ifaces), name=name, role=role,
                description=description, states=states[0] | states[1] << 32)


_INTERFACE_SETS: dict[tuple[str, ...], frozenset[str]] = {}


def interface_set(ifaces: list[str]) -> frozenset[str]:
    """An object's interfaces without AT-SPI's prefix (``Text``), one set per combination
    (an app has a few dozen of them: a cache of 1,500 objects spent 35 ms making sets)."""
    key = tuple(ifaces)
    found = _INTERFACE_SETS.get(key)
    if found is None:
        found = _INTERFACE_SETS[key] = frozenset(i.removeprefix(A11Y) for i in ifaces)
    return found


def cell_name(row: int, col: int) -> str:
    """A spreadsheet's name of the cell at 0-based ``row`` and ``col``: ``A1``, ``AB12``."""
    letters = ""
    col += 1
    while col:
        col, rest = divmod(col - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return f"{letters}{row + 1}"


def action_index(names: tuple[str, ...], action: str) -> int | None:
    if action in names:
        return names.index(action)
    if action == "click":
        for alias in _CLICK_ALIASES:
            if alias in names:
                return names.index(alias)
    return None

