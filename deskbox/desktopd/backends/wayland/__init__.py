"""The Wayland backend: a wlroots compositor (Sway) reached over its Wayland socket for
pixels and input and over sway IPC for outputs and the window tree."""

from __future__ import annotations

import asyncio
from typing import Any, Sequence

from ....common.errors import ActionFailedError, NotFoundError, UnavailableError
from ....common.logging import get_logger
from ....geometry import Display, Rect, display_at_layout_point, layout_rect_to_device
from ..base import Backend, Frame, KeyEvent, Window
from .client import WaylandClient
from .input import VirtualKeyboard, VirtualPointer
from .screencopy import DamageWatcher, Screencopy
from .sway_ipc import GET_OUTPUTS, GET_TREE, SwayIPC

__all__ = ["WaylandBackend"]

log = get_logger("deskbox.wayland")


def displays_from_outputs(outputs: list[dict]) -> list[Display]:
    """Sway's GET_OUTPUTS -> displays numbered left to right, top to bottom."""
    active = [o for o in outputs if o.get("active")]
    active.sort(key=lambda o: (o["rect"]["x"], o["rect"]["y"], o["name"]))
    displays = []
    for index, o in enumerate(active):
        rect = o["rect"]
        mode = o.get("current_mode") or {}
        scale = float(o.get("scale") or 1.0)
        size = (int(mode.get("width") or round(rect["width"] * scale)), int(mode.get("height") or round(rect["height"] * scale)))
        if o.get("transform") in ("90", "270", "flipped-90", "flipped-270"):
            size = (size[1], size[0])
        displays.append(
            Display(
                id=index,
                name=o["name"],
                layout=Rect(rect["x"], rect["y"], rect["width"], rect["height"]),
                scale=scale,
                size=size,
                primary=index == 0,
            )
        )
    return displays


# Chromium turns a keysym into one UTF-16 code unit, so a character beyond the Basic
# Multilingual Plane (most emoji) typed as one keysym arrives truncated (U+1F600 became
# U+F600 here). Typed as its two surrogate halves it arrives whole. GTK apps take the
# full keysym, so only Chromium-family windows get the split.
_BMP_KEYSYM_MAX = 0x0100FFFF
_UTF16_KEY_APPS = ("chrom", "electron", "code", "brave", "vivaldi", "msedge")


def split_astral(events: Sequence[KeyEvent]) -> list[KeyEvent]:
    """Replace each key of a character beyond U+FFFF with its UTF-16 surrogate pair."""
    out: list[KeyEvent] = []
    for e in events:
        if e.keysym <= _BMP_KEYSYM_MAX:
            out.append(e)
            continue
        cp = e.keysym - 0x01000000 - 0x10000
        high, low = 0x01000000 + 0xD800 + (cp >> 10), 0x01000000 + 0xDC00 + (cp & 0x3FF)
        if e.down:
            out += [KeyEvent(high, True), KeyEvent(high, False), KeyEvent(low, True)]
        else:
            out.append(KeyEvent(low, False))
    return out


class WaylandBackend(Backend):
    name = "wayland"

    def __init__(self, display_name: str | None = None, sway_socket: str | None = None) -> None:
        self.client = WaylandClient(display_name)
        self.ipc = SwayIPC(sway_socket)
        self._displays: list[Display] = []
        self.screencopy: Screencopy | None = None
        self.damage: DamageWatcher | None = None
        self.pointer: VirtualPointer | None = None
        self.keyboard: VirtualKeyboard | None = None
        self._events_task: asyncio.Task | None = None

    async def start(self) -> None:
        self.client.connect()
        self.client.attach(asyncio.get_running_loop())
        self.screencopy = Screencopy(self.client)
        self.damage = DamageWatcher(self.client)
        self.pointer = VirtualPointer(self.client)
        self.keyboard = VirtualKeyboard(self.client)
        await self.refresh_displays()
        self._events_task = asyncio.create_task(self._watch_outputs(), name="sway-output-events")

    async def release_input(self) -> None:
        if self.pointer is not None:
            self.pointer.release_all()
        if self.keyboard is not None:
            self.keyboard.release_all()

    async def close(self) -> None:
        if self._events_task is not None:
            self._events_task.cancel()
            try:
                await self._events_task
            except (asyncio.CancelledError, Exception):
                pass
        try:
            if self.pointer is not None:
                self.pointer.release_all()
            if self.keyboard is not None:
                self.keyboard.release_all()
        except Exception:
            pass
        if self.damage is not None:
            await self.damage.close()
        if self.screencopy is not None:
            self.screencopy.close()
        self.client.close()
        await self.ipc.close()

    async def _watch_outputs(self) -> None:
        while True:
            try:
                async for _kind, _payload in self.ipc.subscribe(["output"]):
                    # Let wl_output globals settle, then re-read the layout.
                    await asyncio.sleep(0.1)
                    self.client.roundtrip()
                    await self.refresh_displays()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("output event stream failed", error=str(exc))
                await asyncio.sleep(1.0)

    # -- displays and pixels ----------------------------------------------------------

    def displays(self) -> list[Display]:
        return list(self._displays)

    async def refresh_displays(self) -> list[Display]:
        self._displays = displays_from_outputs(await self.ipc.request(GET_OUTPUTS))
        assert self.damage is not None
        for display in self._displays:
            output = self.client.output_by_name(display.name)
            if output is not None:
                self.damage.watch(output)
        return self.displays()

    def _output(self, display: Display):
        output = self.client.output_by_name(display.name)
        if output is None:
            raise UnavailableError(f"output {display.name} has no Wayland object (yet)", code="display_unavailable")
        return output

    async def capture(self, display: Display, *, cursor: bool) -> Frame:
        assert self.screencopy is not None
        return await self.screencopy.capture(self._output(display), cursor=cursor)

    async def capture_with(self, display: Display, consume):
        assert self.screencopy is not None
        return await self.screencopy.capture(self._output(display), cursor=False, consume=consume)

    def frame_generation(self, display: Display) -> int | None:
        assert self.damage is not None
        return self.damage.stable(display.name)

    # -- input ------------------------------------------------------------------------

    async def pointer_move(self, display: Display, x: float, y: float) -> None:
        assert self.pointer is not None and self.damage is not None
        self.pointer.move(self._displays, display, x, y)
        self.damage.invalidate()

    async def pointer_button(self, button: str, down: bool) -> None:
        assert self.pointer is not None and self.damage is not None
        self.pointer.button(button, down)
        self.damage.invalidate()

    async def pointer_scroll(self, dx: float, dy: float) -> None:
        assert self.pointer is not None and self.damage is not None
        self.pointer.scroll(dx, dy)
        self.damage.invalidate()

    async def keys(self, events: Sequence[KeyEvent]) -> None:
        assert self.keyboard is not None and self.damage is not None
        if any(e.keysym > _BMP_KEYSYM_MAX for e in events) and await self._focused_app_uses_utf16():
            events = split_astral(events)
        await self.keyboard.send(events)
        self.damage.invalidate()

    async def _focused_app_uses_utf16(self) -> bool:
        focused = next((w for w in await self.windows() if w.focused), None)
        app = (focused.app_id or "").lower() if focused else ""
        return any(name in app for name in _UTF16_KEY_APPS)

    def pointer_position(self) -> tuple[int, float, float] | None:
        return self.pointer.position if self.pointer else None

    # -- windows ----------------------------------------------------------------------

    async def windows(self) -> list[Window]:
        tree = await self.ipc.request(GET_TREE)
        displays = self._displays
        found: list[Window] = []

        def walk(node: dict, workspace: str | None) -> None:
            if node.get("type") == "workspace":
                workspace = node.get("name")
            is_view = node.get("pid") is not None or node.get("app_id") is not None or node.get("window") is not None
            if is_view and node.get("type") in ("con", "floating_con"):
                found.append(self._window(node, workspace, displays))
            for child in node.get("nodes", []) + node.get("floating_nodes", []):
                walk(child, workspace)

        walk(tree, None)
        return found

    @staticmethod
    def _window(node: dict, workspace: str | None, displays: list[Display]) -> Window:
        rect = node["rect"]
        # The content rect: sway's rect includes borders and title bar; window_rect is
        # the client area relative to rect.
        wr = node.get("window_rect") or {"x": 0, "y": 0, "width": rect["width"], "height": rect["height"]}
        layout = Rect(rect["x"] + wr["x"], rect["y"] + wr["y"], wr["width"], wr["height"])
        display = display_at_layout_point(displays, layout.x + layout.w / 2, layout.y + layout.h / 2)
        if display is None:
            display = display_at_layout_point(displays, layout.x, layout.y)
        app_id = node.get("app_id")
        props = node.get("window_properties") or {}  # (an Xwayland window's X11 properties)
        if app_id is None and props:
            app_id = props.get("class")
        wm_class = (props.get("instance") or "", props.get("class") or "") if props.get("class") else None
        return Window(
            id=f"w{node['id']}",
            app_id=app_id,
            pid=node.get("pid"),
            title=node.get("name"),
            layout=layout,
            display_id=display.id if display else None,
            bounds=layout_rect_to_device(display, layout) if display else None,
            focused=bool(node.get("focused")),
            floating=node.get("type") == "floating_con",
            workspace=workspace,
            wm_class=wm_class,
        )

    async def _sway_command_on(self, window_id: str, command: str) -> None:
        con_id = window_id[1:] if window_id.startswith("w") else window_id
        if not con_id.isdigit():
            raise NotFoundError(f"no window {window_id!r}; ids look like 'w12' (see GET /api/v1/tree)")
        if not any(w.id == f"w{con_id}" for w in await self.windows()):
            raise NotFoundError(f"no window {window_id!r}; see GET /api/v1/tree")
        replies = await self.ipc.command(f"[con_id={con_id}] {command}")
        failed = [r for r in replies if not r.get("success")]
        if failed:
            raise ActionFailedError(failed[0].get("error") or f"sway refused {command!r}", code="compositor_refused")

    async def focus_window(self, window_id: str) -> None:
        await self._sway_command_on(window_id, "focus")

    async def close_window(self, window_id: str) -> None:
        await self._sway_command_on(window_id, "kill")

    async def move_window(self, window_id: str, display: Display) -> None:
        await self._sway_command_on(window_id, f"move container to output {display.name}")
        await self._sway_command_on(window_id, "focus")

    def health(self) -> dict[str, Any]:
        self.client.pump()
        return {"wayland_connected": self.client.dead is None, "error": self.client.dead}
