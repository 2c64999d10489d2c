"""Which of an app's objects become nodes: the rules of the package docstring, over what
has been read so far, with the repairs each toolkit needs (GTK 4's names, LibreOffice's
boxes, menus and sheets). Pure: no D-Bus here."""

from __future__ import annotations

import dataclasses

from ..geometry import (
    GTK_MENU_INSET,
    frame_relative,
    native_vcl_box,
    offset_box,
    popup_origin,
    submenu_origin,
    vcl_body_offset,
)
from .tree import (
    CALC_FORMULA_BAR,
    CALC_INPUT_LINE,
    CONTAINER_ROLES,
    EDITABLE,
    FOCUSABLE,
    GTK_TYPE_NAME,
    LEAF_ROLES,
    MANAGES_DESCENDANTS,
    MAX_CHILDREN,
    MENU_ROLES,
    ROOT,
    SELECTED,
    SHOWING,
    SPAN_DEPTH,
    SPAN_SLACK,
    TEXT_ROLES,
    TEXT_VALUE_ROLES,
    UNKNOWN,
    VALUE_ROLES,
    App,
    Cell,
    Names,
    NativeNode,
    Needs,
    Obj,
    Tree,
    action_index,
    cell_name,
)


class Selection:
    """Which of an app's objects become nodes: the rules in the module docstring,
    over what has been read so far. A pass that meets something unread records it in
    ``needs`` and goes on as if it were absent (so one pass collects nearly everything
    the next round of calls must fetch); the reader repeats passes until nothing is
    missing. Pure: no D-Bus here."""

    def __init__(self, app: App, tree: Tree, names: Names, prune_documents: bool,
                 extents: dict[str, tuple[int, int, int, int] | None], actions: dict[str, tuple[str, ...]],
                 values: dict[str, str | None], toolkits: dict[str, str] | None = None,
                 sheets: dict[str, list[Cell]] | None = None, settled: dict | None = None) -> None:
        self.app, self.tree, self.names = app, tree, names
        # Subtrees an earlier pass of the same walk found whole (nothing missing): their
        # nodes, the spans they added and the objects they visited, by the visit's
        # arguments. An app read level by level takes a pass per level (LibreOffice:
        # 21), and passing again over what is settled cost half the walk's CPU (measured).
        self.settled = settled if settled is not None else {}
        self._pending = 0  # nodes left out of this pass until their box is read
        self.prune_documents = prune_documents
        self.extents, self.actions, self.values = extents, actions, values
        self.toolkits = toolkits if toolkits is not None else {}
        self.sheets = sheets if sheets is not None else {}
        self.needs = Needs()
        self.visited = 0
        self._origin = (0, 0)  # the frame's DESKTOP position, for an app with desktop_coords

    def run(self) -> list[NativeNode]:
        root = self.tree.objects.get(ROOT)
        if root is None:
            self.needs.objects.add(ROOT)
            return []
        frames = [self._frame(frame) for frame in self._kids(root)]
        if self.app.name == "soffice":
            frames = _place_drop_downs(frames)
        return [node for nodes in frames for node in nodes]

    def _kids(self, obj: Obj) -> list[Obj]:
        if obj.child_count > MAX_CHILDREN:
            return []
        if obj.has(MANAGES_DESCENDANTS) and not (self.app.name == "soffice"
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

    def _extents(self, obj: Obj) -> tuple[int, int, int, int] | None:
        if "Component" not in obj.interfaces:
            return None
        found = self.extents.get(obj.path, UNKNOWN)
        if found is UNKNOWN:
            self.needs.extents.add(obj.path)
            return None
        if found is not None and self.app.desktop_coords:
            return frame_relative(found, self._origin)  # type: ignore[arg-type]
        return found  # type: ignore[return-value]

    def _sheet(self, table: Obj, depth: int, frame_title: str, offset: tuple[int, int] | None,
               up: str) -> list[NativeNode]:
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
            frame=frame_title, depth=depth, parent=up) for c in cells]

    def _toolkit(self, obj: Obj) -> str | None:
        """The ``toolkit`` of the object's attributes ("" when none), None until read."""
        found = self.toolkits.get(obj.path)
        if found is None:
            self.needs.toolkits.add(obj.path)
        return found

    def _actions(self, obj: Obj) -> tuple[str, ...]:
        if "Action" not in obj.interfaces:
            return ()
        found = self.actions.get(obj.path)
        if found is None:
            self.needs.actions.add(obj.path)
            return ()
        return found

    def _value(self, obj: Obj, role: str) -> str | None:
        wanted = (reads_text(obj, role) and role != "password text") or ("Value" in obj.interfaces
                                                                         and role in VALUE_ROLES)
        if not wanted:
            return None
        found = self.values.get(obj.path, UNKNOWN)
        if found is UNKNOWN:
            self.needs.values.add(obj.path)
            return None
        return found  # type: ignore[return-value]

    def _frame(self, frame: Obj) -> list[NativeNode]:
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
        up = f"{self.app.bus}{frame.path}"
        for child in self._kids(frame):
            body += self._visit(child, 2, title, title, extents, spans, extents, None, up=up)
        if not title and not body:
            return []  # an unnamed frame with nothing on it: Chromium's hidden popups
        if self.app.name == "soffice" and not self.needs:
            # (A pass with something missing is not the last: what it gives is not kept.)
            body = _calc_cells(body)
        node = self._node(frame, self.names.role(frame.role), title, None, extents, title, 1, tuple(spans))
        return [node, *body]

    def _visit(self, obj: Obj, depth: int, frame_title: str, parent_name: str,
               frame_extents: tuple[int, int, int, int] | None,
               spans: list[tuple[int, int, int, int]], parent_box: tuple[int, int, int, int] | None,
               offset: tuple[int, int] | None, popup: tuple[int, int] | None = None,
               parent_role: str = "", up: str = "") -> list[NativeNode]:
        """One node and what it holds (``up``: the key of the nearest ancestor listed). ``offset``: LibreOffice's VCL body offset
        (geometry.vcl_body_offset); ``popup``: where the popup of the menu being walked
        lies in the window: its items' boxes are relative to that popup (GTK 3 and 2,
        Wayland and X11: a popup is a surface of its own), which opens below the menu
        bar's menu, and a submenu's to the right of its item (measured with
        LibreOffice's menus)."""
        key = (obj.path, depth, frame_title, parent_name, frame_extents, parent_box, offset, popup, parent_role,
               self._origin, up)
        found = self.settled.get(key)
        if found is not None:
            nodes, added, visited = found
            spans += added
            self.visited += visited
            return nodes
        before = (self.needs.size(), self._pending)
        spans_before, visited_before = len(spans), self.visited
        out = self._visit_unsettled(obj, depth, frame_title, parent_name, frame_extents, spans, parent_box, offset,
                                    popup, parent_role, up)
        if (self.needs.size(), self._pending) == before:
            self.settled[key] = (out, spans[spans_before:], self.visited - visited_before)
        return out

    def _visit_unsettled(self, obj: Obj, depth: int, frame_title: str, parent_name: str,
                         frame_extents: tuple[int, int, int, int] | None,
                         spans: list[tuple[int, int, int, int]], parent_box: tuple[int, int, int, int] | None,
                         offset: tuple[int, int] | None, popup: tuple[int, int] | None,
                         parent_role: str, up: str) -> list[NativeNode]:
        self.visited += 1
        if not obj.on_screen and not (self.app.name == "soffice" and obj.name == CALC_INPUT_LINE):
            # (Calc's formula bar says it is defunct, and nothing else, while its
            # paragraph, which holds the active cell's content, lives: measured.)
            return []
        role = self.names.role(obj.role)
        if role == "document web" and self.app.browser and self.prune_documents:
            return []
        if role == "menu bar" and self.app.name == "soffice" and offset is not None:
            return []  # VCL's own menu bar, never drawn: GTK's stands in for it (measured)
        if role in MENU_ROLES and not self.app.gtk4 and not obj.has(SHOWING):
            # The items of a closed menu are visible but not showing (GTK 3, VCL): their
            # boxes are off screen. LibreOffice's menu bar holds some 650 of them, whose
            # boxes cost 60% of its walk (measured). Not GTK 4's: it sets only visible.
            return []
        gtk4 = self.app.gtk4
        # GTK 4.8 names its panels and fillers after their types or not at all (measured).
        name = "" if gtk4 and role in ("panel", "filler") else obj.name
        container = role in CONTAINER_ROLES
        kids = self._kids(obj) if gtk4 and GTK_TYPE_NAME.match(name) else None
        if gtk4:
            name = self._gtk4_name(obj, name, kids or [])
        elif not name and role in LEAF_ROLES and obj.description:
            # A button that shows only an icon, named by its tooltip (VLC's controls).
            name = obj.description.split("\n", 1)[0].strip()
        # Near the frame, containers' boxes tell where the visible window is (GTK4's
        # frame is the visible window: measured, so it is not asked there).
        want_span = container and not gtk4 and depth - 1 <= SPAN_DEPTH and frame_extents is not None
        keep = bool(name) or obj.has(FOCUSABLE) or not (container or role in TEXT_ROLES)
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
            extents = offset_box(extents, popup)  # type: ignore[assignment]
        if want_span and extents is not None and frame_extents is not None:
            fw, fh = frame_extents[2], frame_extents[3]
            if extents[2] >= fw - SPAN_SLACK or extents[3] >= fh - SPAN_SLACK:
                spans.append(extents)
        # While its box is being asked for, a node's value and actions are asked for
        # too (it will most likely be kept), and its children are walked in case.
        pending = obj.path in self.needs.extents or pending_toolkit
        self._pending += pending
        if keep and (pending or (extents is not None and extents[2] > 0 and extents[3] > 0)):
            node = self._node(obj, role, name, self._value(obj, role), extents, frame_title, depth, up=up)
            if not pending:
                out.append(node)
                up = node.key
                if role in LEAF_ROLES and node.actions and action_index(node.actions, "click") is not None:
                    return out
        if (role == "table" and obj.has(MANAGES_DESCENDANTS) and "Table" in obj.interfaces
                and self.app.name == "soffice" and not pending and extents is not None):
            out += self._sheet(obj, depth + 1, frame_title, offset, up)
            return out
        if (role == "menu" and self.app.name == "soffice" and parent_role in ("menu bar", "menu")
                and not obj.has(SELECTED)):
            # A closed menu of the menu bar or a submenu (an open one is selected,
            # measured): its items are not shown. (A toolbar's drop-down menu, alone in
            # its popup, is never selected.)
            return out
        child_parent = name if keep else parent_name
        if (role == "menu" and extents is not None and not gtk4 and not self.app.browser
                and not self.app.desktop_coords):
            # LibreOffice's menus are GTK 3's: their popups' surfaces have a margin.
            inset = GTK_MENU_INSET if self.app.name == "soffice" else (0, 0)
            if parent_role == "menu bar":
                popup = popup_origin(extents, inset)  # type: ignore[assignment]
            elif parent_role == "menu" and self.app.name == "soffice":
                popup = submenu_origin(extents, inset)  # type: ignore[assignment]
        for kid in kids if kids is not None else self._kids(obj):
            out += self._visit(kid, depth + 1, frame_title, child_parent, frame_extents, spans, extents, offset,
                               popup, role, up)
        return out

    def _gtk4_name(self, obj: Obj, name: str, kids: list[Obj]) -> str:
        if GTK_TYPE_NAME.match(name):
            # What the widget shows first (a button's label), its tooltip otherwise.
            for kid in kids:
                if self.names.role(kid.role) == "label" and kid.name and not GTK_TYPE_NAME.match(kid.name):
                    return kid.name
            return obj.description
        mid = len(name) // 2
        if len(name) % 2 == 1 and name[mid] == " " and name[:mid] == name[mid + 1:]:
            return name[:mid]
        return name

    def _node(self, obj: Obj, role: str, name: str, value: str | None,
              extents: tuple[int, int, int, int] | None, frame: str, depth: int,
              spans: tuple[tuple[int, int, int, int], ...] = (), up: str = "") -> NativeNode:
        return NativeNode(
            key=f"{self.app.bus}{obj.path}", pid=self.app.pid, app=self.app.name, role=role, name=name,
            value=value, states=self.names.state_names(obj.states), actions=self._actions(obj),
            extents=extents, frame=frame, depth=depth, spans=spans, parent=up,
        )


def _place_drop_downs(frames: list[list[NativeNode]]) -> list[list[NativeNode]]:
    """LibreOffice's toolbar drop-downs (Table, Symbol ...) are popups of their own, top
    windows in its tree, whose nodes report boxes relative to the popup, which opens
    below the button that dropped it (measured: Table's at the button's bottom-left).
    The button is the one the popup is named after (Table's), or else the one its
    VCL frame hangs from: that frame reports where the popup is in the window's VCL
    coordinates, its left edge at the button's (Symbol's, unnamed); it is put at the
    popup's place. A GTK menu with neither (Field's: no relation, no state of the
    button says it is open, measured) is marked ``unplaced`` for the caller."""
    buttons = [(n.name, n.extents) for nodes in frames if nodes and nodes[0].role == "frame" for n in nodes
               if n.role in ("push button", "toggle button") and n.extents is not None]
    by_name = {name: box for name, box in buttons if name}
    out = []
    for nodes in frames:
        if not nodes or nodes[0].role != "window":
            out.append(nodes)
            continue
        hung = next((n for n in nodes[1:8] if n.role == "frame" and n.extents is not None
                     and (n.extents[0], n.extents[1]) != (0, 0)), None)
        anchor = by_name.get(nodes[0].name)
        if anchor is None and hung is not None:
            below = [box for _, box in buttons if box[0] == hung.extents[0] and box[1] + box[3] > hung.extents[1]]
            anchor = min(below, key=lambda box: box[1] + box[3] - hung.extents[1], default=None)
        if anchor is not None:
            origin = popup_origin(anchor)
            nodes = [dataclasses.replace(n, extents=(*origin, *n.extents[2:]) if n is hung
                                         else offset_box(n.extents, origin)) if n.extents is not None else n
                     for n in nodes]
        elif any(n.role == "menu" for n in nodes[1:3]):
            # A GTK menu whose button nothing here names: left for the caller, who knows
            # where the pointer that opened it is.
            nodes = [dataclasses.replace(nodes[0], unplaced=True), *nodes[1:]]
        out.append(nodes)
    return out


def reads_text(obj: Obj, role: str) -> bool:
    """Whether a node's value is its text: an entry's, an editable node's, or an
    unnamed paragraph's (Writer's and Impress's paragraphs, Calc's formula bar)."""
    return "Text" in obj.interfaces and (role in TEXT_VALUE_ROLES or obj.has(EDITABLE)
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
        if node.role == "tool bar" and node.name == CALC_FORMULA_BAR:
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

