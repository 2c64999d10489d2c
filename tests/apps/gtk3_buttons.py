"""A small GTK3 window for the AT-SPI tests: buttons, a toggle, an entry (and with
--combo a combo box).

Run with Debian's python3 (python3-gi, gir1.2-gtk-3.0) inside a deskbox session. It
prints one JSON line to stdout per thing it receives, so a test can tell which widget
got a click or a key:

    {"event": "ready", "title": ..., "pid": ..., "widgets": {name: [x, y, w, h], ...}}
    {"event": "layout", "widgets": ..., ...}        (again after every resize)
    {"event": "click", "widget": "Alpha"}
    {"event": "toggle", "widget": "Delta", "active": true}
    {"event": "text", "widget": "Name", "text": "abc"}
    {"event": "select", "widget": "Size", "value": "Large"}

"Grow" adds a button "Extra N" (which reports its clicks too) and "Rename" renames
itself "Renamed N": changes a reader must notice.

``widgets`` gives each widget's box in GTK's own numbers (translated to the GtkWindow,
layout pixels) and ``surface_size`` the size of the toplevel surface, shadows included:
what AT-SPI extents are compared with.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk  # noqa: E402

BUTTONS = ("Alpha", "Beta", "Gamma")


def emit(**event: object) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--title", default="deskbox GTK3 fixture")
    parser.add_argument("--combo", action="store_true",
                        help="a combo box too (Size: Small, Medium, Large), for the select action's test")
    parser.add_argument("--reversed", action="store_true",
                        help="the three buttons in the other order (a changed layout, for replay's test)")
    parser.add_argument("--headerbar", action="store_true",
                        help="a GtkHeaderBar title bar: client-side decorations, with shadows when floating")
    args = parser.parse_args()

    window = Gtk.Window(title=args.title)
    if args.headerbar:
        bar = Gtk.HeaderBar(title=args.title, show_close_button=True)
        window.set_titlebar(bar)
    window.set_default_size(420, 320)
    window.connect("destroy", Gtk.main_quit)
    grid = Gtk.Grid(row_spacing=12, column_spacing=12, margin=24)
    window.add(grid)

    widgets: dict[str, Gtk.Widget] = {}
    for i, name in enumerate(BUTTONS):
        button = Gtk.Button(label=name)
        button.set_hexpand(True)
        button.connect("clicked", lambda _b, n=name: emit(event="click", widget=n))
        grid.attach(button, len(BUTTONS) - 1 - i if args.reversed else i, 0, 1, 1)
        widgets[name] = button
    toggle = Gtk.ToggleButton(label="Delta")
    toggle.connect("toggled", lambda b: emit(event="toggle", widget="Delta", active=b.get_active()))
    grid.attach(toggle, 0, 1, 1, 1)
    widgets["Delta"] = toggle
    label = Gtk.Label(label="Name")
    grid.attach(label, 1, 1, 1, 1)
    entry = Gtk.Entry()
    entry.get_accessible().set_name("Name")
    entry.connect("changed", lambda e: emit(event="text", widget="Name", text=e.get_text()))
    grid.attach(entry, 2, 1, 1, 1)
    widgets["Name"] = entry

    if args.combo:
        # (Not in ``widgets``: the layout tests compare those boxes with AT-SPI's.)
        size = Gtk.ComboBoxText()
        for option in ("Small", "Medium", "Large"):
            size.append_text(option)
        size.set_active(0)
        size.get_accessible().set_name("Size")
        size.connect("changed", lambda c: emit(event="select", widget="Size", value=c.get_active_text()))
        grid.attach(size, 2, 2, 1, 1)

    extras = Gtk.Box(spacing=12)
    grow = Gtk.Button(label="Grow")
    rename = Gtk.Button(label="Rename")
    grid.attach(grow, 0, 2, 1, 1)
    grid.attach(rename, 1, 2, 1, 1)
    grid.attach(extras, 0, 3, 3, 1)
    widgets["Grow"] = grow
    widgets["Rename"] = rename
    counts = {"grow": 0, "rename": 0}

    def on_grow(_button: Gtk.Button) -> None:
        counts["grow"] += 1
        name = f"Extra {counts['grow']}"
        extra = Gtk.Button(label=name)
        extra.connect("clicked", lambda _b: emit(event="click", widget=name))
        extras.pack_start(extra, False, False, 0)
        extra.show()
        emit(event="click", widget="Grow", added=name)

    def on_rename(button: Gtk.Button) -> None:
        counts["rename"] += 1
        button.set_label(f"Renamed {counts['rename']}")
        emit(event="click", widget="Rename", label=button.get_label())

    grow.connect("clicked", on_grow)
    rename.connect("clicked", on_rename)

    def report(event: str = "layout") -> bool:
        top = window.get_window()
        if top is None:
            return False
        placed = {}
        for name, widget in widgets.items():
            alloc = widget.get_allocation()
            # Allocations are relative to the widget's GdkWindow parent; translate to the
            # toplevel widget, whose origin is the visible window's top-left corner.
            x, y = widget.translate_coordinates(window, 0, 0)
            placed[name] = [x, y, alloc.width, alloc.height]
        emit(event=event, title=args.title, pid=os.getpid(), widgets=placed,
             window_size=list(window.get_size()), surface_size=[top.get_width(), top.get_height()],
             scale=top.get_scale_factor())
        return False

    pending = {"layout": 0}

    def on_configure(*_: object) -> bool:
        # Sway resizes the window when others come and go: report once it settles.
        if pending["layout"]:
            GLib.source_remove(pending["layout"])
        pending["layout"] = GLib.timeout_add(150, lambda: report() or pending.update(layout=0) or False)
        return False

    window.connect("map-event", lambda *_: GLib.timeout_add(300, report, "ready") and False)
    window.connect("configure-event", on_configure)
    window.show_all()
    Gtk.main()


if __name__ == "__main__":
    main()
