"""The X11 backend's window tree: which windows are top-levels (EWMH's _NET_CLIENT_LIST,
or the root's viewable named children when no window manager runs), which of them has the
keyboard focus, each one described as a base.Window, and asking for one to be focused or
closed (through the window manager, else the client, else the X server). It owns the atom
cache, property reads and the client messages sent with them. It is handed the X
connection and root window and is only ever called on the backend's X thread; it must
not know that thread, the event queue, the pointer or keyboard, or how displays are read:
the displays windows are placed on are passed in.
"""

from __future__ import annotations

from typing import Any, Callable

from Xlib import X, Xatom
from Xlib import display as xdisplay
from Xlib import error as xerror
from Xlib.protocol import event as xevent

from ...common.errors import ActionFailedError, NotFoundError
from ...geometry import Display, Rect, display_at_layout_point, layout_rect_to_device
from .base import Window

__all__ = ["X11Windows"]

# The _NET_WM source indication for requests from a pager or tool (not an application).
_SOURCE_PAGER = 2


def _window_id(window_id: str) -> int:
    if window_id.startswith("x"):
        try:
            return int(window_id[1:], 16)
        except ValueError:
            pass
    raise NotFoundError(f"no window {window_id!r}; ids look like 'x400001' (see GET /api/v1/tree)")


class X11Windows:
    """Top-level windows, their focus and their closing, read and asked through EWMH."""

    def __init__(self) -> None:
        self._x: xdisplay.Display | None = None
        self._root: Any = None
        self._atoms: dict[str, int] = {}

    def attach(self, x: xdisplay.Display, root: Any) -> None:
        self._x = x
        self._root = root

    def atom(self, name: str) -> int:
        if name not in self._atoms:
            assert self._x is not None
            self._atoms[name] = self._x.intern_atom(name)
        return self._atoms[name]

    def _checked(self, request: Callable[..., Any], *args: Any, **kw: Any) -> None:
        """Send a request that has no reply and raise its error, if any, now."""
        assert self._x is not None
        catch = xerror.CatchError()
        request(*args, onerror=catch, **kw)
        self._x.sync()
        err = catch.get_error()
        if err is not None:
            raise err

    def _prop(self, win: Any, name: str, kind: int = X.AnyPropertyType) -> Any:
        prop = win.get_full_property(self.atom(name), kind)
        return None if prop is None else prop.value

    def _text(self, win: Any, name: str) -> str | None:
        prop = win.get_full_property(self.atom(name), X.AnyPropertyType)
        if prop is None or prop.format != 8:
            return None
        # STRING is Latin-1 by definition; Chromium and GTK also write WM_NAME as UTF8_STRING.
        encoding = "latin-1" if prop.property_type == Xatom.STRING else "utf-8"
        return bytes(prop.value).decode(encoding, errors="replace")

    def _window_manager(self) -> set[int] | None:
        """The atoms a running EWMH window manager supports, or None without one."""
        check = self._prop(self._root, "_NET_SUPPORTING_WM_CHECK", Xatom.WINDOW)
        if not check:
            return None
        try:
            # A crashed manager leaves the property behind; its check window is gone then.
            self._x.create_resource_object("window", check[0]).get_geometry()
        except (xerror.BadWindow, xerror.BadDrawable):
            return None
        return set(self._prop(self._root, "_NET_SUPPORTED", Xatom.ATOM) or [])

    def toplevel_ids(self) -> list[int]:
        if self._window_manager() is not None:
            clients = self._prop(self._root, "_NET_CLIENT_LIST", Xatom.WINDOW)
            if clients is not None:
                return list(clients)
        ids = []
        for child in self._root.query_tree().children:
            try:
                attrs = child.get_attributes()
                # Override-redirect windows (menus, tooltips) are nobody's top-level.
                if attrs.map_state != X.IsViewable or attrs.override_redirect:
                    continue
                if self._text(child, "_NET_WM_NAME") is None and self._text(child, "WM_NAME") is None:
                    continue
            except (xerror.BadWindow, xerror.BadDrawable):
                continue
            ids.append(child.id)
        return ids

    def focused_id(self, ids: list[int]) -> int | None:
        """The top-level among ``ids`` that has the keyboard focus."""
        assert self._x is not None
        active = self._prop(self._root, "_NET_ACTIVE_WINDOW", Xatom.WINDOW)
        if active and active[0] in ids:
            return active[0]
        focus = self._x.get_input_focus().focus
        wid = getattr(focus, "id", focus)
        if wid == X.PointerRoot:
            # Keys go to whatever is under the pointer.
            child = self._root.query_pointer().child
            wid = getattr(child, "id", child)
        if wid in (X.NONE, X.PointerRoot):
            return None
        wanted = set(ids)
        # The focus may sit on a child of the top-level (or the top-level inside a frame).
        while wid and wid != self._root.id:
            if wid in wanted:
                return wid
            try:
                wid = self._x.create_resource_object("window", wid).query_tree().parent.id
            except (xerror.BadWindow, xerror.BadDrawable):
                return None
        return None

    def list_windows(self, displays: list[Display]) -> list[Window]:
        assert self._x is not None
        ids = self.toplevel_ids()
        focused = self.focused_id(ids)
        found = []
        for wid in ids:
            try:
                found.append(self._describe(wid, focused, displays))
            except (xerror.BadWindow, xerror.BadDrawable):
                continue  # closed while we looked
        return found

    def _describe(self, wid: int, focused: int | None, displays: list[Display]) -> Window:
        assert self._x is not None
        win = self._x.create_resource_object("window", wid)
        geometry = win.get_geometry()
        # The client window's own origin in root coordinates: inside any WM frame and
        # border, so the rect is the client area the application draws.
        origin = self._root.translate_coords(win, 0, 0)
        layout = Rect(origin.x, origin.y, geometry.width, geometry.height)
        display = display_at_layout_point(displays, layout.x + layout.w / 2, layout.y + layout.h / 2)
        if display is None:
            display = display_at_layout_point(displays, layout.x, layout.y)
        wm_class = win.get_wm_class()
        pid = self._prop(win, "_NET_WM_PID", Xatom.CARDINAL)
        desktop = self._prop(win, "_NET_WM_DESKTOP", Xatom.CARDINAL)
        return Window(
            id=f"x{wid:x}",
            app_id=wm_class[1] if wm_class else None,
            pid=int(pid[0]) if pid else None,
            title=self._text(win, "_NET_WM_NAME") or self._text(win, "WM_NAME"),
            layout=layout,
            display_id=display.id if display else None,
            bounds=layout_rect_to_device(display, layout) if display else None,
            focused=wid == focused,
            floating=False,
            workspace=str(desktop[0]) if desktop else None,
            extra={"wm_instance": wm_class[0] if wm_class else None},
            wm_class=(wm_class[0], wm_class[1]) if wm_class else None,
        )

    def _known_window(self, window_id: str) -> Any:
        wid = _window_id(window_id)
        if wid not in self.toplevel_ids():
            raise NotFoundError(f"no window {window_id!r}; see GET /api/v1/tree")
        assert self._x is not None
        return self._x.create_resource_object("window", wid)

    def client_message(self, win: Any, type_name: str, data: list[int], *, to_root: bool) -> None:
        msg = xevent.ClientMessage(window=win, client_type=self.atom(type_name), data=(32, (data + [0] * 5)[:5]))
        if to_root:
            mask = X.SubstructureRedirectMask | X.SubstructureNotifyMask
            self._checked(self._root.send_event, msg, event_mask=mask)
        else:
            self._checked(win.send_event, msg, event_mask=0)

    def focus(self, window_id: str) -> None:
        win = self._known_window(window_id)
        supported = self._window_manager()
        try:
            if supported is not None and self.atom("_NET_ACTIVE_WINDOW") in supported:
                self.client_message(win, "_NET_ACTIVE_WINDOW", [_SOURCE_PAGER, X.CurrentTime, 0], to_root=True)
            else:
                self._checked(win.configure, stack_mode=X.Above)
                self._checked(win.set_input_focus, X.RevertToParent, X.CurrentTime)
        except (xerror.BadWindow, xerror.BadDrawable) as exc:
            raise NotFoundError(f"window {window_id!r} is gone", code="not_found") from exc
        except xerror.BadMatch as exc:
            raise ActionFailedError(f"window {window_id!r} cannot take the focus (not viewable)",
                                    code="not_focusable") from exc

    def close(self, window_id: str) -> None:
        assert self._x is not None
        win = self._known_window(window_id)
        supported = self._window_manager()
        try:
            if supported is not None and self.atom("_NET_CLOSE_WINDOW") in supported:
                self.client_message(win, "_NET_CLOSE_WINDOW", [X.CurrentTime, _SOURCE_PAGER], to_root=True)
            elif self.atom("WM_DELETE_WINDOW") in (win.get_wm_protocols() or []):
                self.client_message(win, "WM_PROTOCOLS", [self.atom("WM_DELETE_WINDOW"), X.CurrentTime], to_root=False)
            else:
                # No way to ask: disconnect the client that owns the window, as xkill does.
                self._checked(win.kill_client)
        except (xerror.BadWindow, xerror.BadDrawable) as exc:
            raise NotFoundError(f"window {window_id!r} is gone", code="not_found") from exc
