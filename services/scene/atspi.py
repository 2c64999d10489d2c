"""Native apps over AT-SPI: a reader that lists what GTK apps and Chromium's own UI
expose to assistive technology, and performs their actions.

``AtspiReader`` is synchronous (pyatspi and libatspi block on D-Bus) and not thread
safe: create it in one worker thread and call it only from there (it checks). An
asyncio service runs it in a single-thread executor (``services.scene.native``).

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
    Every node the walk visits costs D-Bus round trips (its state; then role, name,
    children; a box, value and actions when kept): about 0.1 ms each to Chromium and
    GTK3 (peer-to-peer sockets), 0.25 ms to GTK 4.8, whose a11y code answers slowly.
    A control with its own click action is not walked into. Measured on this 2-core
    machine with gnome-calculator and Chromium (a small page) tiled side by side, other
    sessions running (load about 2): one snapshot 117 to 158 ms (median of 20), of which
    gnome-calculator 70 to 100 ms (about 90 nodes visited, 35 kept) and Chromium's UI
    45 ms (about 115 visited, 16 kept; most of them hidden buttons of the omnibox);
    the first snapshot after an app appears about 190 ms. libatspi's cache would make
    it 25 ms, but is wrong (see ``AtspiReader.__init__``). ``snapshot(pids=...)`` walks
    only the apps whose windows changed; ``python -m services.scene.atspi --repeat N``
    prints a session's figures.
"""

from __future__ import annotations

import os
import re
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Collection

__all__ = [
    "NativeNode",
    "AtspiReader",
    "AtspiError",
    "NoSuchAction",
    "WrongThread",
    "visible_window",
]


class AtspiError(Exception):
    """Base of this module's errors (D-Bus and GLib errors are translated to it)."""


class NoSuchAction(AtspiError):
    """The node lives but has no action of that name (``actions`` lists what it has)."""

    def __init__(self, key: str, action: str, actions: tuple[str, ...]) -> None:
        super().__init__(f"{key} has no action {action!r}; it has {list(actions)}")
        self.key, self.action, self.actions = key, action, actions


class WrongThread(AtspiError):
    """pyatspi is not thread safe: a reader is used only by the thread that made it."""


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
_SPAN_SLACK = 80  # layout px a span may be smaller than its frame (shadows are about 26 px a side)
_MAX_VALUE_CHARS = 4096
# Asked in this order when an action name is missing: what "click" means per toolkit.
_CLICK_ALIASES = ("click", "press", "activate", "toggle", "jump", "open", "doDefault")

# libatspi waits 800 ms per call and 15 s for apps that started in the last 15 s; a
# hung app would stall every snapshot that long.
CALL_TIMEOUT_MS = 500
STARTUP_TIMEOUT_MS = 2000


def visible_window(frame: NativeNode, content_size: tuple[float, float]) -> tuple[float, float, float, float]:
    """Where the window Sway shows lies inside ``frame``'s extents: ``(x, y, w, h)``
    in the same frame as ``extents`` (layout pixels, surface-relative).

    ``content_size`` is the width and height of the window's content rect in Sway's
    tree (``window_rect``). A client-side shadow or margin (Chromium's 10 px, a
    floating GTK3 header-bar window's 26/23 px) puts the window at an offset: found as
    the box of a descendant spanning the window's full width (its x; the topmost such
    gives y) or full height (its y; the leftmost gives x). Without such a box the
    frame itself is the window (GTK4, server-side decorations)."""
    if frame.extents is None:
        return 0.0, 0.0, float(content_size[0]), float(content_size[1])
    fx, fy, fw, fh = frame.extents
    cw, ch = content_size
    if abs(fw - cw) <= 1 and abs(fh - ch) <= 1:
        return float(fx), float(fy), float(fw), float(fh)
    inner = [s for s in frame.spans if s != frame.extents]
    full_w = [s for s in inner if abs(s[2] - cw) <= 1]
    full_h = [s for s in inner if abs(s[3] - ch) <= 1]
    if not full_w and not full_h:
        # A window narrower or shorter than its tile (clipped or centred by Sway): the
        # spans cannot match the tile's size. A box inset equally on all sides of the
        # frame is the window (Chromium's root view); otherwise the frame is.
        for s in inner:
            dx, dy = s[0] - fx, s[1] - fy
            if 0 < dx <= _SPAN_SLACK and dx == dy and fx + fw - (s[0] + s[2]) == dx and fy + fh - (s[1] + s[3]) == dy:
                return float(s[0]), float(s[1]), float(s[2]), float(s[3])
        return float(fx), float(fy), float(fw), float(fh)
    top = min(full_w, key=lambda s: s[1]) if full_w else None
    left = min(full_h, key=lambda s: s[0]) if full_h else None
    x = top[0] if top else left[0]  # type: ignore[index]
    y = left[1] if left else top[1]  # type: ignore[index]
    # A window as wide as its tile is as high as it too, unless a full-height box says
    # otherwise; a full-height box wider than the tile is a window Sway clips.
    w = float(cw) if top else float(left[2])  # type: ignore[index]
    return float(x), float(y), w, float(ch)


class _AppUnresponsive(Exception):
    pass


class AtspiReader:
    """Reads every application on the session's accessibility bus.

    Make it in the thread that will use it; ``close()`` it in the same thread."""

    def __init__(self, *, bus_address: str | None = None) -> None:
        if bus_address is not None:
            os.environ["DBUS_SESSION_BUS_ADDRESS"] = bus_address
        if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
            raise AtspiError("DBUS_SESSION_BUS_ADDRESS is not set: AT-SPI needs the session's D-Bus bus")
        self._thread = threading.get_ident()
        try:
            import gi

            gi.require_version("Atspi", "2.0")
            import pyatspi  # initialises libatspi
            from gi.repository import Atspi, GLib
        except (ImportError, ValueError) as exc:
            raise AtspiError(f"pyatspi is not available ({exc}); install python3-pyatspi") from exc
        self._Atspi = Atspi
        self._GLib = GLib
        self._pyatspi = pyatspi
        Atspi.set_timeout(CALL_TIMEOUT_MS, STARTUP_TIMEOUT_MS)
        # libatspi can keep names, states and children of apps in an event-fed cache
        # once a client sets a cache mask (4x faster walks, measured). It is left off:
        # measured, it went stale (GTK3 sends no event for a button packed into a
        # GtkBox; GTK 4.8 none for a button whose label changed, and listed a closed
        # popover's items twice), and with a narrower mask libatspi hung for good in
        # its first call to Chromium. Every snapshot asks the apps; only what an object
        # never changes (its role and actions) is remembered, per key.
        self._roles: dict[str, str] = {}
        self._actions: dict[str, tuple[str, ...]] = {}
        self._objects: dict[str, tuple[Any, int]] = {}  # key -> (accessible, pid)
        self._closed = False
        self.last_walk: dict[str, float | int] = {}

    # -- public -----------------------------------------------------------------------

    def snapshot(self, *, prune_documents: bool = True, pids: Collection[int] | None = None) -> list[NativeNode]:
        """Every application's on-screen nodes, in tree order (see the module docstring
        for what is kept); with ``pids``, only those processes' apps (a caller that
        knows which windows changed walks only those). An app that stops answering
        mid-walk is left out of this snapshot. ``last_walk`` holds the figures of the
        latest walk: total seconds, nodes visited and kept, per app. Everything is read
        from the apps now, except roles and action names (asked once per object)."""
        self._check()
        started = time.perf_counter()
        self._pump()
        walked: set[int] = set()
        objects: dict[str, tuple[Any, int]] = {}
        out: list[NativeNode] = []
        stats: dict[str, float | int] = {"visited": 0, "kept": 0}
        desktop = self._Atspi.get_desktop(0)
        for i in range(self._count(desktop)):
            app = self._child(desktop, i)
            if app is None:
                continue
            t0 = time.perf_counter()
            walk = _AppWalk(self, app, prune_documents, pids)
            try:
                nodes = walk.run()
            except _AppUnresponsive:
                continue
            except self._GLib.Error:
                continue  # gone while we read it
            if walk.skipped:
                continue
            walked.add(walk.pid)
            out += nodes
            objects.update((k, (acc, walk.pid)) for k, acc in walk.objects.items())
            stats["visited"] += walk.visited
            stats["kept"] += len(nodes)
            stats[f"app:{walk.app_name or '?'}:{walk.pid}:ms"] = round((time.perf_counter() - t0) * 1000, 2)
        if pids is not None:
            # Keys of the apps not walked this time stay actionable.
            objects = {**{k: v for k, v in self._objects.items() if v[1] not in walked}, **objects}
        self._objects = objects
        self._actions = {k: v for k, v in self._actions.items() if k in objects}
        if len(self._roles) > 4 * len(objects) + 10000:
            self._roles.clear()  # forget objects long gone
        stats["seconds"] = time.perf_counter() - started
        self.last_walk = stats
        return out

    def act(self, key: str, action: str) -> bool:
        """Do the named action (``click``, ``press``, ``activate`` ...) on the node with
        this key, as of the latest snapshot. ``click`` also means a node's ``press``,
        ``activate``, ``toggle``, ``jump``, ``open`` or ``doDefault`` when it has no
        ``click``; ``focus`` is the Component interface's grab_focus. False when the node
        is gone; NoSuchAction when it lives but has no such action."""
        self._check()
        self._pump()
        found = self._objects.get(key)
        if found is None:
            self.snapshot()
            found = self._objects.get(key)
            if found is None:
                return False
        acc = found[0]
        Atspi = self._Atspi
        try:
            states = acc.get_state_set()
            if states.contains(Atspi.StateType.DEFUNCT):
                self._objects.pop(key, None)
                return False
            if action == "focus":
                return bool(Atspi.Component.grab_focus(acc))
            names = self._action_names(key, acc)
            index = _action_index(names, action)
            if index is None:
                raise NoSuchAction(key, action, names)
            return bool(Atspi.Action.do_action(acc, index))
        except self._GLib.Error:
            self._objects.pop(key, None)
            return False

    def close(self) -> None:
        """Drop every reference and the connection to the accessibility bus."""
        if self._closed:
            return
        self._check()
        self._objects.clear()
        self._actions.clear()
        self._roles.clear()
        self._closed = True
        try:
            self._Atspi.exit()
        except Exception:  # exit on a half-initialised library is harmless to skip
            pass

    # -- internals ----------------------------------------------------------------------

    def _check(self) -> None:
        if threading.get_ident() != self._thread:
            raise WrongThread("an AtspiReader is used only by the thread that made it")
        if self._closed:
            raise AtspiError("this AtspiReader is closed")

    def _pump(self) -> None:
        """Let libatspi handle what arrived since the last call (apps that went away,
        replies it asked for asynchronously): nobody else runs a GLib loop here."""
        ctx = self._GLib.MainContext.default()
        for _ in range(1000):
            if not ctx.iteration(False):
                break

    def _action_names(self, key: str, acc: Any) -> tuple[str, ...]:
        """An object's actions do not change while it lives: asked once per key."""
        names = self._actions.get(key)
        if names is None:
            names = self._actions[key] = _action_names(self._Atspi, acc)
        return names

    def _count(self, acc: Any) -> int:
        try:
            return acc.get_child_count()
        except self._GLib.Error:
            return 0

    def _child(self, acc: Any, i: int) -> Any:
        try:
            return acc.get_child_at_index(i)
        except self._GLib.Error:
            return None

    def state_names(self, states: Any) -> tuple[str, ...]:
        return tuple(self._pyatspi.stateToString(s) for s in states.get_states())


def _action_names(Atspi: Any, acc: Any) -> tuple[str, ...]:
    if "Action" not in acc.get_interfaces():
        return ()
    n = Atspi.Action.get_n_actions(acc)
    with warnings.catch_warnings():
        # The introspection data marks it deprecated; libatspi 2.46 offers no other
        # unlocalized getter through GObject introspection.
        warnings.simplefilter("ignore", DeprecationWarning)
        return tuple(Atspi.Action.get_action_name(acc, i) for i in range(n))


def _action_index(names: tuple[str, ...], action: str) -> int | None:
    if action in names:
        return names.index(action)
    if action == "click":
        for alias in _CLICK_ALIASES:
            if alias in names:
                return names.index(alias)
    return None


def _is_timeout(exc: Exception) -> bool:
    text = str(exc)
    return "NoReply" in text or "Timeout" in text or "timed out" in text.lower()


class _AppWalk:
    """One application's walk: what is kept, and the objects behind the keys."""

    def __init__(self, reader: AtspiReader, app: Any, prune_documents: bool, pids: Collection[int] | None) -> None:
        self.reader = reader
        self.Atspi = reader._Atspi
        self.GLib = reader._GLib
        self.app = app
        self.objects: dict[str, Any] = {}
        self.visited = 0
        self.app_name = ""
        self.pid = 0
        self.prune_documents = prune_documents
        self.pids = pids
        self.skipped = False
        self.gtk4 = False
        self.browser = False

    def run(self) -> list[NativeNode]:
        app = self.app
        try:
            self.pid = app.get_process_id()
            if self.pids is not None and self.pid not in self.pids:
                self.skipped = True
                return []
            self.app_name = app.get_name() or ""
            toolkit = (app.get_toolkit_name() or "").lower()
            version = app.get_toolkit_version() or ""
        except self.GLib.Error as exc:
            if _is_timeout(exc):
                raise _AppUnresponsive() from exc
            return []
        self.gtk4 = toolkit == "gtk" and version.startswith("4.")
        self.browser = toolkit in _BROWSER_TOOLKITS
        self.bus = app.app.bus_name if getattr(app, "app", None) is not None else ""
        out: list[NativeNode] = []
        for i in range(self.reader._count(app)):
            frame = self.reader._child(app, i)
            if frame is None:
                continue
            try:
                out += self._frame(frame)
            except _AppUnresponsive:
                raise
            except self.GLib.Error as exc:
                if _is_timeout(exc):
                    raise _AppUnresponsive() from exc
                continue  # this window went away while we read it
        return out

    def _frame(self, frame: Any) -> list[NativeNode]:
        Atspi = self.Atspi
        states = frame.get_state_set()
        self.visited += 1
        if not (states.contains(Atspi.StateType.SHOWING) or states.contains(Atspi.StateType.VISIBLE)):
            return []
        title = frame.get_name() or ""
        role = frame.get_role_name() or ""
        extents = self._extents(frame)
        spans: list[tuple[int, int, int, int]] = [extents] if extents else []
        body: list[NativeNode] = []
        for child in self._child_list(frame):
            body += self._walk(child, 2, title, title, extents, spans)
        if not title and not body:
            return []  # an unnamed frame with nothing on it: Chromium's hidden popups
        node = self._node(frame, role, title, None, states, extents, title, 1, spans=tuple(spans))
        return [node, *body]

    def _walk(self, acc: Any, depth: int, frame_title: str, parent_name: str,
              frame_extents: tuple[int, int, int, int] | None,
              spans: list[tuple[int, int, int, int]]) -> list[NativeNode]:
        """This node (when kept) and its subtree; a node that vanishes mid-read is
        skipped with its subtree, an app that stops answering ends its walk."""
        self.visited += 1
        try:
            return self._visit(acc, depth, frame_title, parent_name, frame_extents, spans)
        except self.GLib.Error as exc:
            if _is_timeout(exc):
                raise _AppUnresponsive() from exc
            return []

    def _visit(self, acc: Any, depth: int, frame_title: str, parent_name: str,
               frame_extents: tuple[int, int, int, int] | None,
               spans: list[tuple[int, int, int, int]]) -> list[NativeNode]:
        Atspi = self.Atspi
        states = acc.get_state_set()
        if states.contains(Atspi.StateType.DEFUNCT) or not (
                states.contains(Atspi.StateType.SHOWING) or states.contains(Atspi.StateType.VISIBLE)):
            return []
        role = self._role(acc)
        if role == "document web" and self.browser and self.prune_documents:
            return []
        # GTK 4.8 names its panels and fillers after their types or not at all (measured):
        # not worth a round trip on every one of them.
        name = "" if self.gtk4 and role in ("panel", "filler") else acc.get_name() or ""
        focusable = states.contains(Atspi.StateType.FOCUSABLE)
        container = role in _CONTAINER_ROLES
        kids = None
        if self.gtk4 and _GTK_TYPE_NAME.match(name):
            kids = self._child_list(acc)
        if self.gtk4:
            name = self._gtk4_name(acc, name, kids or [])
        # Near the frame, containers' boxes tell where the visible window is (GTK4's
        # frame is the visible window: measured, so it is not asked there).
        want_span = container and not self.gtk4 and depth - 1 <= _SPAN_DEPTH and frame_extents is not None
        keep = bool(name) or focusable or not (container or role in _TEXT_ROLES)
        if keep and role in ("label", "static") and name == parent_name:
            keep = False  # a button's own label, repeated as a child
        out: list[NativeNode] = []
        extents = None
        if keep or want_span:
            extents = self._extents(acc)
        if want_span and extents is not None and frame_extents is not None:
            fw, fh = frame_extents[2], frame_extents[3]
            if extents[2] >= fw - _SPAN_SLACK or extents[3] >= fh - _SPAN_SLACK:
                spans.append(extents)
        if keep and extents is not None and extents[2] > 0 and extents[3] > 0:
            value = self._value(acc, role, states)
            node = self._node(acc, role, name, value, states, extents, frame_title, depth)
            out.append(node)
            if role in _LEAF_ROLES and node.actions and _action_index(node.actions, "click") is not None:
                return out
        child_parent = name if keep else parent_name
        for child in kids if kids is not None else self._child_list(acc):
            out += self._walk(child, depth + 1, frame_title, child_parent, frame_extents, spans)
        return out

    def _child_list(self, acc: Any) -> list[Any]:
        """The children that could be read (one that vanished mid-read is left out)."""
        kids = []
        for i in range(acc.get_child_count()):
            try:
                child = acc.get_child_at_index(i)
            except self.GLib.Error as exc:
                if _is_timeout(exc):
                    raise
                continue
            if child is not None:
                kids.append(child)
        return kids

    def _role(self, acc: Any) -> str:
        """An object's role does not change while it lives: asked once per key."""
        key = f"{self.bus}{acc.path}"
        role = self.reader._roles.get(key)
        if role is None:
            role = self.reader._roles[key] = acc.get_role_name() or ""
        return role

    def _gtk4_name(self, acc: Any, name: str, kids: list[Any]) -> str:
        if _GTK_TYPE_NAME.match(name):
            # What the widget shows first (a button's label), its tooltip otherwise.
            for child in kids:
                if self._role(child) == "label":
                    text = child.get_name() or ""
                    if text and not _GTK_TYPE_NAME.match(text):
                        return text
            return acc.get_description() or ""
        mid = len(name) // 2
        if len(name) % 2 == 1 and name[mid] == " " and name[:mid] == name[mid + 1:]:
            return name[:mid]
        return name

    def _extents(self, acc: Any) -> tuple[int, int, int, int] | None:
        if "Component" not in acc.get_interfaces():
            return None
        r = self.Atspi.Component.get_extents(acc, self.Atspi.CoordType.WINDOW)
        if r.x == _OFFSCREEN or r.y == _OFFSCREEN:
            return None
        return r.x, r.y, r.width, r.height

    def _value(self, acc: Any, role: str, states: Any) -> str | None:
        Atspi = self.Atspi
        ifaces = acc.get_interfaces()
        try:
            if "Text" in ifaces and (role in _TEXT_VALUE_ROLES or states.contains(Atspi.StateType.EDITABLE)):
                if role == "password text":
                    return None
                return Atspi.Text.get_text(acc, 0, -1)[:_MAX_VALUE_CHARS]
            if "Value" in ifaces and role in _VALUE_ROLES:
                return f"{Atspi.Value.get_current_value(acc):g}"
        except self.GLib.Error as exc:
            if _is_timeout(exc):
                raise
        return None

    def _node(self, acc: Any, role: str, name: str, value: str | None, states: Any,
              extents: tuple[int, int, int, int] | None, frame: str, depth: int,
              spans: tuple[tuple[int, int, int, int], ...] = ()) -> NativeNode:
        key = f"{self.bus}{acc.path}"
        self.objects[key] = acc
        try:
            actions = self.reader._action_names(key, acc)
        except self.GLib.Error as exc:
            if _is_timeout(exc):
                raise
            actions = ()
        return NativeNode(
            key=key, pid=self.pid, app=self.app_name, role=role, name=name, value=value,
            states=self.reader.state_names(states), actions=actions, extents=extents, frame=frame, depth=depth,
            spans=spans,
        )


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
    reader = AtspiReader()
    try:
        nodes: list[NativeNode] = []
        for _ in range(args.repeat):
            nodes = reader.snapshot(prune_documents=not args.documents)
        for node in nodes:
            sys.stdout.write(json.dumps({k: v for k, v in node.__dict__.items()}, ensure_ascii=False) + "\n")
        sys.stdout.write(json.dumps({"walk": reader.last_walk}) + "\n")
    finally:
        reader.close()


if __name__ == "__main__":
    main()
