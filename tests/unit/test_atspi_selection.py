"""The AT-SPI reader's selection: which objects become nodes, and what it asks the app
for, over trees written here (no D-Bus)."""

from deskbox.atspi.selection import Selection, _calc_cells
from deskbox.atspi.tree import ROOT, App, Names, NativeNode, Obj, Tree

NAMES = Names()
ROLE = {name: number for number, name in NAMES.roles.items()}
STATE = {name: number for number, name in NAMES.states.items()}
SHOWN = 1 << STATE["showing"] | 1 << STATE["visible"]


def obj(path, parent, index, role, name="", kids=0, ifaces=("Component",), states=SHOWN, description=""):
    return Obj(path=path, parent=parent, index=index, child_count=kids, interfaces=frozenset(ifaces),
                name=name, role=ROLE[role], description=description, states=states)


def gtk_app(**kw):
    return App(bus=":1.5", pid=42, name="app", gtk4=kw.get("gtk4", False), browser=kw.get("browser", False))


def window(*children, frame_kids=None):
    """root > frame "Win" > panel > children (and theirs); ``frame_kids``: how many
    children the panel says it has, when that is not how many are listed."""
    return [
        obj(ROOT, "", -1, "application", "app", kids=1, ifaces=()),
        obj("/f", ROOT, 0, "frame", "Win", kids=1),
        obj("/p", "/f", 0, "panel", kids=frame_kids if frame_kids is not None else
            sum(c.parent == "/p" for c in children)),
        *children,
    ]


def select(objects, app=None, extents=None, actions=None, values=None, prune=True):
    extents = {} if extents is None else extents
    sel = Selection(app or gtk_app(), Tree({o.path: o for o in objects}), NAMES, prune,
                     extents, actions or {}, values or {})
    return sel.run(), sel.needs


def boxes(objects):
    return {o.path: (0, 0, 10, 10) for o in objects}


def test_a_first_pass_asks_for_the_boxes_and_actions_it_needs_then_a_second_decides():
    objects = window(obj("/b", "/p", 0, "push button", "OK", ifaces=("Component", "Action")))
    nodes, needs = select(objects)
    assert "/b" in needs.extents and "/b" in needs.actions and "/f" in needs.extents
    nodes, needs = select(objects, extents=boxes(objects), actions={"/b": ("click",)})
    assert not needs
    assert [(n.role, n.name, n.actions) for n in nodes] == [("frame", "Win", ()), ("push button", "OK", ("click",))]
    assert nodes[1].key == ":1.5/b" and nodes[1].pid == 42 and nodes[1].depth == 3


def test_a_parent_whose_child_count_disagrees_with_the_cache_is_asked_for_its_children():
    objects = window(obj("/a", "/p", 0, "push button", "A"), frame_kids=2)
    _, needs = select(objects, extents=boxes(objects))
    assert needs.children == {"/p"}


def test_children_the_app_named_but_the_cache_lacks_are_fetched_then_walked():
    objects = window(obj("/a", "/p", 0, "push button", "A"), frame_kids=2)
    tree = Tree({o.path: o for o in objects})
    tree.asked["/p"] = ["/a", "/new"]
    sel = Selection(gtk_app(), tree, NAMES, True, boxes(objects), {}, {})
    sel.run()
    assert sel.needs.objects == {"/new"} and not sel.needs.children
    tree.objects["/new"] = obj("/new", "/p", -1, "push button", "New")
    sel = Selection(gtk_app(), tree, NAMES, True, {**boxes(objects), "/new": (0, 0, 5, 5)}, {}, {})
    assert [n.name for n in sel.run()] == ["Win", "A", "New"] and not sel.needs


def test_a_button_with_a_click_action_is_not_walked_into_and_a_repeated_label_is_dropped():
    objects = window(
        obj("/b", "/p", 0, "push button", "Save", kids=1, ifaces=("Component", "Action")),
        obj("/bl", "/b", 0, "label", "Save"),
        obj("/t", "/p", 1, "toggle button", "Bold", kids=1, ifaces=("Component",)),
        obj("/tl", "/t", 0, "label", "Bold"),
    )
    nodes, needs = select(objects, extents=boxes(objects), actions={"/b": ("click",)})
    assert not needs
    assert [n.name for n in nodes] == ["Win", "Save", "Bold"]


def test_hidden_subtrees_and_chromium_pages_are_not_walked():
    hidden = obj("/h", "/p", 0, "push button", "Hidden", kids=1, states=0)
    objects = window(hidden, obj("/hb", "/h", 0, "push button", "Inner"),
                     obj("/d", "/p", 1, "document web", "Page", kids=1), obj("/link", "/d", 0, "link", "Home"))
    nodes, needs = select(objects, app=gtk_app(browser=True), extents=boxes(objects))
    assert [n.name for n in nodes] == ["Win"] and not needs
    nodes, _ = select(objects, app=gtk_app(browser=True), extents=boxes(objects), prune=False)
    assert [n.name for n in nodes] == ["Win", "Page", "Home"]


def test_gtk4_type_names_become_the_label_or_tooltip_and_doubled_labels_are_halved():
    objects = window(
        obj("/m", "/p", 0, "push button", "GtkMenuButton", kids=1),
        obj("/ml", "/m", 0, "label", "Mode"),
        obj("/pi", "/p", 1, "push button", "GtkButton", description="Pi [Ctrl+P]"),
        obj("/7", "/p", 2, "push button", "7 7"),
    )
    nodes, _ = select(objects, app=gtk_app(gtk4=True), extents=boxes(objects))
    assert [n.name for n in nodes[1:]] == ["Mode", "Pi [Ctrl+P]", "7"]


def test_offscreen_or_empty_boxes_keep_a_node_out_and_values_are_asked_for_entries():
    objects = window(obj("/e", "/p", 0, "entry", "Name", ifaces=("Component", "Text")),
                     obj("/z", "/p", 1, "push button", "Zero"))
    ext = {**boxes(objects), "/z": (0, 0, 0, 0)}
    nodes, needs = select(objects, extents=ext)
    assert needs.values == {"/e"}
    nodes, needs = select(objects, extents=ext, values={"/e": "abc"})
    assert [(n.name, n.value) for n in nodes] == [("Win", None), ("Name", "abc")] and not needs


def test_frame_spans_collect_near_full_size_containers_for_visible_window():
    objects = window(obj("/b", "/p", 0, "push button", "OK"))
    ext = {"/f": (0, 0, 660, 820), "/p": (10, 10, 640, 800), "/b": (20, 20, 30, 30)}
    nodes, _ = select(objects, extents=ext)
    assert nodes[0].spans == ((0, 0, 660, 820), (10, 10, 640, 800))


def test_the_state_bits_read_are_libatspis():
    from deskbox.atspi import tree

    assert {NAMES.states[n] for n in (tree.DEFUNCT, tree.EDITABLE, tree.FOCUSABLE, tree._FOCUSED, tree.SELECTED,
                                      tree.SHOWING, tree.VISIBLE, tree.MANAGES_DESCENDANTS)} == {
        "defunct", "editable", "focusable", "focused", "selected", "showing", "visible", "manages descendants"}


def test_writers_document_is_walked_for_its_paragraphs_though_it_manages_its_descendants():
    manages = SHOWN | 1 << STATE["manages descendants"] | 1 << STATE["focusable"]
    para = SHOWN | 1 << STATE["focusable"] | 1 << STATE["editable"]
    objects = [
        obj(ROOT, "", -1, "application", "soffice", kids=1, ifaces=()),
        obj("/f", ROOT, 0, "frame", "notes.docx - LibreOffice Writer", kids=1),
        obj("/d", "/f", 0, "document text", "notes", kids=2, states=manages),
        obj("/p1", "/d", 0, "paragraph", kids=0, ifaces=("Component", "Text"), states=para),
        obj("/h1", "/d", 1, "heading", kids=0, ifaces=("Component", "Text"), states=para),
    ]
    soffice = App(bus=":1.9", pid=7, name="soffice", gtk4=False, browser=False)
    values = {"/p1": "First paragraph.", "/h1": "Quarterly notes"}
    nodes, needs = select(objects, app=soffice, extents=boxes(objects), values=values)
    assert [(n.role, n.value) for n in nodes[2:]] == [("paragraph", "First paragraph."),
                                                       ("heading", "Quarterly notes")] and not needs
    # Another app's document that manages its descendants is not walked into.
    nodes, _ = select(objects, app=gtk_app(), extents=boxes(objects), values=values)
    assert [n.role for n in nodes] == ["frame", "document text"]


def test_a_collapsed_control_is_listed_and_a_table_managing_its_cells_is_not_walked():
    collapsed = SHOWN | 1 << STATE["collapsed"]
    objects = window(obj("/c", "/p", 0, "combo box", "Size", states=collapsed),
                     obj("/t", "/p", 1, "table", "Sheet", kids=1, states=SHOWN | 1 << STATE["manages descendants"]),
                     obj("/cell", "/t", 0, "table cell", "A1"))
    nodes, needs = select(objects, extents=boxes(objects))
    assert [n.name for n in nodes] == ["Win", "Size", "Sheet"] and not needs


def libreoffice_window():
    """As LibreOffice 7.4's gtk3 plugin reports it: GTK's menu bar box at the top, and
    below it (at y 26) a GTK box holding VCL's root pane, whose own widgets report
    boxes relative to that box; one GTK widget (``toolkit:gtk``) embedded among them."""
    objects = [
        obj(ROOT, "", -1, "application", "soffice", kids=1, ifaces=()),
        obj("/f", ROOT, 0, "frame", "doc - LibreOffice Writer", kids=1),
        obj("/p", "/f", 0, "panel", kids=1),
        obj("/body", "/p", 0, "panel", kids=1),
        obj("/rp", "/body", 0, "root pane", "doc - LibreOffice Writer", kids=2),
        obj("/bold", "/rp", 0, "toggle button", "Bold", ifaces=("Component", "Action")),
        obj("/namebox", "/rp", 1, "entry", "Name Box"),
    ]
    extents = {"/f": (0, 0, 800, 600), "/p": (0, 0, 800, 600), "/body": (0, 26, 800, 574),
               "/rp": (0, 0, 800, 574), "/bold": (664, 41, 33, 35), "/namebox": (10, 60, 100, 24)}
    return objects, extents


def test_libreoffices_own_widgets_are_moved_below_gtks_menu_bar_and_its_gtk_widgets_are_not():
    objects, extents = libreoffice_window()
    app = App(bus=":1.9", pid=7, name="soffice", gtk4=False, browser=False)
    nodes, needs = select(objects, app=app, extents=extents, actions={"/bold": ("click",)})
    assert needs.toolkits == {"/rp", "/bold", "/namebox"}
    sel = Selection(app, Tree({o.path: o for o in objects}), NAMES, True, extents, {"/bold": ("click",)}, {},
                     {"/rp": "", "/bold": "", "/namebox": "gtk"})
    boxes_by_name = {n.name: n.extents for n in sel.run()}
    assert not sel.needs
    assert boxes_by_name["Bold"] == (664, 67, 33, 35)
    assert boxes_by_name["Name Box"] == (10, 60, 100, 24)


def test_another_apps_root_pane_at_the_origin_is_left_where_it_says():
    objects, extents = libreoffice_window()
    app = App(bus=":1.9", pid=7, name="gedit", gtk4=False, browser=False)
    nodes, needs = select(objects, app=app, extents=extents, actions={"/bold": ("click",)})
    assert not needs.toolkits
    assert {n.name: n.extents for n in nodes}["Bold"] == (664, 41, 33, 35)


def test_a_subtree_of_a_gtk_widget_among_libreoffices_own_keeps_its_boxes_whatever_draws_it():
    """Calc's formula bar: a GTK scroll pane holding VCL's Input line and its paragraph,
    all three reporting boxes relative to the window (measured)."""
    objects, extents = libreoffice_window()
    objects[4] = obj("/rp", "/body", 0, "root pane", "doc - LibreOffice Writer", kids=3)
    objects += [obj("/scroll", "/rp", 2, "scroll pane", kids=1, states=SHOWN | 1 << STATE["focusable"]),
                obj("/line", "/scroll", 0, "panel", "Input line", kids=1),
                obj("/para", "/line", 0, "paragraph", ifaces=("Component", "Text"),
                    states=SHOWN | 1 << STATE["focusable"])]
    extents.update({"/scroll": (287, 111, 1552, 25), "/line": (294, 114, 1538, 19), "/para": (294, 114, 105, 19)})
    app = App(bus=":1.9", pid=7, name="soffice", gtk4=False, browser=False)
    sel = Selection(app, Tree({o.path: o for o in objects}), NAMES, True, extents, {"/bold": ("click",)},
                     {"/para": "=SUM(B1:B3)"}, {"/rp": "", "/bold": "", "/namebox": "gtk", "/scroll": "gtk"})
    found = {n.role: n.extents for n in sel.run()}
    assert not sel.needs
    assert found["paragraph"] == (294, 114, 105, 19) and found["toggle button"] == (664, 67, 33, 35)


def _calc_node(role, name="", value=None, depth=3, states=("enabled", "showing")):
    return NativeNode(key=f":1.9/{role}/{name}", pid=7, app="soffice", role=role, name=name, value=value,
                      states=states, actions=(), extents=(0, 0, 10, 10), frame="b.xlsx - LibreOffice Calc",
                      depth=depth)


def calc_window(name_box, formula, table_states=("focused",)):
    return [
        _calc_node("tool bar", "Formula Tool Bar", depth=3),
        _calc_node("text", value=name_box, depth=6),
        _calc_node("panel", "Input line", depth=6),
        _calc_node("paragraph", value=formula, depth=7),
        _calc_node("push button", "Sum", depth=4),
        _calc_node("table", "Sheet Data", depth=3, states=table_states),
        _calc_node("table cell", "A1", "6006", depth=4),
        _calc_node("table cell", "B1", "", depth=4),
        _calc_node("table cell", "C1", "7", depth=4),
        _calc_node("table cell", "C2", "", depth=4),
    ]


def test_calcs_active_cell_is_the_one_the_name_box_names_with_the_formula_bars_formula():
    nodes = _calc_cells(calc_window("$A$1", "=SUM(B1:B3)"))
    cells = {n.name: n for n in nodes if n.role == "table cell"}
    assert set(cells) == {"A1", "C1"}  # empty cells are left out
    assert "focused" in cells["A1"].states and cells["A1"].formula == "=SUM(B1:B3)"
    assert "focused" not in cells["C1"].states and cells["C1"].formula is None
    assert [n.role for n in nodes if n.role != "table cell"] == ["tool bar", "text", "panel", "paragraph",
                                                                 "push button", "table"]


def test_an_empty_active_cell_is_kept_and_plain_content_is_no_formula():
    cells = {n.name: n for n in _calc_cells(calc_window("C2", "hello")) if n.role == "table cell"}
    assert set(cells) == {"A1", "C1", "C2"} and "focused" in cells["C2"].states and cells["C2"].formula is None


def test_no_cell_is_marked_for_a_range_or_while_the_sheet_is_not_focused():
    cells = [n for n in _calc_cells(calc_window("A1:C3", "=1")) if n.role == "table cell"]
    assert [n.name for n in cells] == ["A1", "C1"] and not any("focused" in n.states for n in cells)
    cells = {n.name: n for n in _calc_cells(calc_window("A1", "=1", table_states=())) if n.role == "table cell"}
    assert "focused" not in cells["A1"].states and cells["A1"].formula == "=1"


def test_a_closed_menus_items_are_not_read_and_an_open_ones_are():
    visible_only = 1 << STATE["visible"]
    item = obj("/i", "/m", 0, "menu item", "Open...", ifaces=("Component", "Action"), states=visible_only)
    objects = window(obj("/bar", "/p", 0, "menu bar", kids=1), obj("/m", "/bar", 0, "menu", "File", kids=1), item)
    nodes, needs = select(objects, extents=boxes(objects), actions={"/i": ("click",)})
    assert [n.name for n in nodes if n.name] == ["Win", "File"] and not needs  # visible, not showing: closed
    # LibreOffice: a menu of the menu bar that is not selected is not walked into at all.
    soffice = App(bus=":1.9", pid=7, name="soffice", gtk4=False, browser=False)
    objects[-1] = obj("/i", "/m", 0, "menu item", "Open...", ifaces=("Component", "Action"))

    def names(menu_states, parent="/bar"):
        objects[-2] = obj("/m", parent, 0, "menu", "File", kids=1, states=menu_states)
        sel = Selection(soffice, Tree({o.path: o for o in objects}), NAMES, True, boxes(objects),
                         {"/i": ("click",)}, {}, {o.path: "" for o in objects})
        return [n.name for n in sel.run()]
    assert "Open..." not in names(SHOWN)
    assert "Open..." in names(SHOWN | 1 << STATE["selected"])
    # A toolbar's drop-down menu, alone in its popup, is never selected: it is walked.
    objects[3] = obj("/bar", "/p", 0, "panel", kids=1)
    assert "Open..." in names(SHOWN)


def test_an_open_menus_items_are_placed_in_its_popup_below_the_menu_bar():
    """A popup is a surface of its own: its items report boxes relative to it, and it
    opens below its menu in the menu bar (LibreOffice's GTK menu bar, measured)."""
    open_menu = SHOWN | 1 << STATE["selected"]
    objects = window(obj("/bar", "/p", 0, "menu bar", kids=1),
                     obj("/m", "/bar", 0, "menu", "Format", kids=1, states=open_menu),
                     obj("/i", "/m", 0, "menu item", "Character...", ifaces=("Component", "Action")))
    extents = {"/f": (0, 0, 960, 1080), "/p": (0, 0, 960, 1080), "/bar": (0, 0, 936, 26),
               "/m": (193, 0, 68, 26), "/i": (6, 137, 329, 26)}
    nodes, needs = select(objects, extents=extents, actions={"/i": ("click",)})
    assert not needs
    assert {n.name: n.extents for n in nodes}["Character..."] == (199, 163, 329, 26)


def test_a_libreoffice_drop_down_is_placed_below_the_toolbar_button_named_as_it():
    from deskbox.atspi.selection import _place_drop_downs

    def node(role, name, extents, depth):
        return NativeNode(key=f":1.9/{name}", pid=7, app="soffice", role=role, name=name, value=None, states=(),
                          actions=(), extents=extents, frame="", depth=depth)
    main = [node("frame", "t.docx - LibreOffice Writer", (0, 0, 1280, 800), 1),
            node("push button", "Table", (613, 28, 44, 35), 5)]
    table = [node("window", "Table", (0, 0, 163, 296), 1), node("push button", "More Options...", (6, 256, 151, 34), 11)]
    unnamed = [node("window", "", (0, 0, 100, 100), 1), node("menu item", "More Fields...", (6, 9, 156, 26), 3)]
    placed = _place_drop_downs([main, table, unnamed])
    assert placed[0] == main and placed[2] == unnamed
    assert [n.extents for n in placed[1]] == [(613, 63, 163, 296), (619, 319, 151, 34)]  # drawn there (measured)


def test_an_unnamed_libreoffice_drop_down_is_placed_below_the_button_its_frame_hangs_from():
    from deskbox.atspi.selection import _place_drop_downs

    def node(role, name, extents, depth):
        return NativeNode(key=f":1.9/{role}{name}", pid=7, app="soffice", role=role, name=name, value=None,
                          states=(), actions=(), extents=extents, frame="", depth=depth)
    # Symbol's, as LibreOffice 7.4 reports it (measured): its VCL frame says where the
    # popup is in the window's VCL coordinates, its left edge at the button's.
    main = [node("frame", "t.docx - LibreOffice Writer", (0, 0, 1280, 800), 1),
            node("push button", "Symbol", (841, 28, 44, 35), 7),
            node("push button", "Bold", (841, 69, 44, 35), 7),  # the Formatting bar's, below
            node("push button", "Table", (613, 28, 44, 35), 7)]
    symbol = [node("window", "", (0, 0, 229, 169), 1), node("frame", "", (841, 36, 229, 169), 4),
              node("push button", "More Characters…", (5, 130, 219, 34), 11)]
    placed = _place_drop_downs([main, symbol])
    assert [n.extents for n in placed[1]] == [(841, 63, 229, 169), (841, 63, 229, 169), (846, 193, 219, 34)]
    # A named one's frame is put at the popup's place too, not moved twice.
    table = [node("window", "Table", (0, 0, 163, 296), 1), node("frame", "Table", (613, 36, 163, 296), 4)]
    assert [n.extents for n in _place_drop_downs([main, table])[1]] == [(613, 63, 163, 296)] * 2


def test_subtrees_settled_in_an_earlier_pass_give_the_same_nodes_without_being_walked_again():
    # Read level by level, an app takes a pass per level; a subtree that had all it
    # needed is taken from the earlier pass, spans included.
    objects = window(
        obj("/left", "/p", 0, "panel", "Left", kids=2),
        obj("/a", "/left", 0, "push button", "A"),
        obj("/b", "/left", 1, "push button", "B"),
        obj("/right", "/p", 1, "panel", "Right", kids=1),
        obj("/c", "/right", 0, "push button", "C"),
    )
    tree = Tree({o.path: o for o in objects})
    first_boxes = {p: box for p, box in boxes(objects).items() if p != "/c"}
    settled: dict = {}
    first = Selection(gtk_app(), tree, NAMES, True, first_boxes, {}, {}, settled=settled)
    first.run()
    assert first.needs.extents == {"/c"}
    assert any(key[0] == "/left" for key in settled) and not any(key[0] == "/right" for key in settled)
    walked = []

    class Watched(Selection):
        def _visit_unsettled(self, obj, *args):
            walked.append(obj.path)
            return super()._visit_unsettled(obj, *args)

    again = Watched(gtk_app(), tree, NAMES, True, boxes(objects), {}, {}, settled=settled)
    fresh = Selection(gtk_app(), Tree({o.path: o for o in objects}), NAMES, True, boxes(objects), {}, {})
    nodes = fresh.run()
    assert again.run() == nodes and not again.needs
    assert again.visited == fresh.visited
    assert "/c" in walked and not {"/left", "/a", "/b"} & set(walked)
    assert [n.name for n in nodes] == ["Win", "Left", "A", "B", "Right", "C"]
