"""The scene engine: builds Scenes from desktopd, the CDP bridge, AT-SPI and OCR; keeps
ids stable; watches frames for change; shares work between concurrent requests; pushes
new scenes to subscribers.

Modes: ``idle`` returns the last scene while no display has changed since it was
built; ``active`` re-reads what can have changed (the bridge always, since it
keeps its own trees warm and answers unchanged pages from cache; AT-SPI and OCR only
where frames changed since the last scene); ``agent-turn`` reads every page and every app
in full, except the rows of a sheet no change crossed since AT-SPI last read it.

What a Scene is and how it is written out lives in scene_json.py; which window each
source's elements belong to, and which apps a changed region touches, in placing.py."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from PIL import Image

from ..common.errors import UnavailableError
from ..common.logging import get_logger
from ..geometry import Rect, device_span_to_layout, native_to_display, visible_part
from .elements import Element, native_elements
from .fill import OPAQUE_MIN, Opaque, opaque_boxes
from .frames import FrameSignature, changed_regions, signature
from .id_store import IdStore
from .ids import IdRegistry
from .metrics import SceneMetrics
from .placing import (
    changed_pids,
    flip_submenus,
    misfit_pages,
    page_elements_in_windows,
    place_popups_at_pointer,
    region_of,
    sheet_bands,
    sheets_in,
    windows_for_native,
)
from .scene_json import Mode, OcrItem, Scene, apps_of
from .sources import Bridge, Desktop, Frame, Tree, Window

__all__ = ["SceneEngine"]

log = get_logger("deskbox.scene")

WATCH_IDLE_S = 1.0
WATCH_ACTIVE_S = 0.25
WATCH_ACTIVE_FOR_S = 5.0
SETTLE_POLL_S = 0.08  # how often a settling display is looked at
RESIZE_READS, RESIZE_WAIT_S = 8, 0.05  # a page catching up with its window's new size


@dataclass
class _Build:
    """One build's reads, and what it has found so far: what each stage of
    ``SceneEngine._build`` reads and adds to."""

    mode: Mode
    started: float = field(default_factory=time.perf_counter)
    timings: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str | None] = field(
        default_factory=lambda: {"desktopd": None, "cdp": None, "atspi": None, "ocr": None})
    tree: Tree = None  # type: ignore[assignment]  # (read first)
    frames: list[Frame] = field(default_factory=list)
    sigs: dict[int, FrameSignature] = field(default_factory=dict)
    changed: dict[int, list[tuple[int, int, int, int]]] = field(default_factory=dict)
    native_task: asyncio.Future | None = None
    layouts_task: asyncio.Future | None = None
    ocr_task: asyncio.Future | None = None
    native_pids: frozenset[int] | None = None  # the apps walked again; None: every app
    elements: list[Element] = field(default_factory=list)
    keep_tabs: set[str] = field(default_factory=set)
    cdp_failed: bool = False
    native_failed: bool = False
    opaque: list[Opaque] = field(default_factory=list)
    ocr_items: list[OcrItem] = field(default_factory=list)

    @property
    def any_change(self) -> bool:
        return any(self.changed.values())

    async def timed(self, name: str, awaitable: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await awaitable
        finally:
            self.timings[name] = (time.perf_counter() - t0) * 1000


class SceneEngine:
    def __init__(self, desktop: Desktop, bridge: Bridge | None, atspi: Any = None, ocr: Any = None,
                 ids_file: str | None = None, fill: Any = None) -> None:
        self.desktop = desktop
        self.bridge = bridge
        self.atspi = atspi  # deskbox.atspi.source.NativeSource or None
        self.ocr = ocr  # deskbox.scene.ocr.OcrChain or None: the whole screen read (--ocr all)
        self.fill = fill  # deskbox.scene.fill.FillIn or None: opaque parts of native windows read (--ocr fill)
        self.ids = IdRegistry("a")
        self.text_ids = IdRegistry("t")
        # A restarted scene honours the ids it handed out before (see id_store).
        self.id_store = IdStore(ids_file, [self.ids, self.text_ids])
        self.id_store.load()
        self.last: Scene | None = None
        self.by_id: dict[str, Element] = {}
        self.vlm_scene: Any = None
        self.vlm_elements: Any = None
        self._seq = 0
        self._dirty = True
        self._native_cache: list[Any] | None = None
        self._misfits: dict[str, tuple[float, float]] = {}  # placing.misfit_pages of the last build
        self._ocr_cache: dict[int, list[OcrItem]] = {}
        # Regions that changed on each display since AT-SPI was last read (see _unread_pids).
        self._unread: dict[int, list[tuple[int, int, int, int]]] = {}
        self._watch_sigs: dict[int, FrameSignature] = {}
        self._signed: dict[int, tuple[Frame, FrameSignature]] = {}  # display -> last frame signed
        self._task: asyncio.Task | None = None
        self._task_started = 0.0
        self._task_full = False
        self._subscribers: set[asyncio.Queue] = set()
        self._watched = asyncio.Event()  # set while someone is subscribed: the watcher polls then
        self.last_change = time.monotonic()
        self._open = asyncio.Event()  # cleared while a new epoch is being made
        self._open.set()
        self.epoch = 0
        self.metrics: SceneMetrics | None = None  # the app's, when it serves /metrics
        # The policy's redaction (deskbox.policy): secrets out of every scene as it is built.
        self.redact: Callable[[Scene], Scene] | None = None

    # -- requests ---------------------------------------------------------------------

    async def scene(self, mode: Mode) -> Scene:
        """A scene in ``mode``; concurrent requests share one build where that gives the
        same answer (an agent-turn never takes a build that began before it arrived)."""
        await self._open.wait()
        arrived = time.monotonic()
        if mode == "idle" and self.last is not None and not self._dirty and not await self._frames_changed():
            return self.last
        while True:
            task = self._task
            if task is not None and not task.done():
                if mode != "agent-turn" or (self._task_full and self._task_started >= arrived):
                    return await asyncio.shield(task)
                await asyncio.wait([task])
                continue
            self._task_started = time.monotonic()
            self._task_full = mode == "agent-turn"
            self._task = asyncio.create_task(self._counted_build(mode))
            return await asyncio.shield(self._task)

    @contextlib.asynccontextmanager
    async def new_epoch(self):
        """Around a session reset: no scene is built meanwhile, and afterwards every id
        of before is retired (acting on one answers 409 stale_element, never another
        element) and nothing cached of the old state is reused."""
        self._open.clear()
        try:
            task = self._task
            if task is not None and not task.done():
                await asyncio.wait([task])
            yield
        finally:
            by_key = {(e.display_id, e.key): e for e in (self.last.ax if self.last else [])}

            def describe(full_key: tuple):
                e = by_key.get(full_key)
                return (e.role, e.name) if e else (None, None)

            self.ids.retire_all(describe)
            self.text_ids.retire_all()
            self.id_store.touched()
            self.last = None
            self.by_id = {}
            self._native_cache = None
            self._unread = {}
            self._ocr_cache = {}
            self._watch_sigs = {}
            self._signed = {}
            self._dirty = True
            self.epoch += 1
            self._open.set()

    def mark_dirty(self) -> None:
        """Something may have changed (an action was sent): the next idle scene is built
        afresh."""
        self._dirty = True

    def set_vlm(self, scene: Any, elements: Any) -> None:
        self.vlm_scene, self.vlm_elements = scene, elements
        if self.last is not None:
            self.last.vlm_scene, self.last.vlm_elements = scene, elements

    def subscribe(self) -> asyncio.Queue:
        q: asyncio.Queue = asyncio.Queue(maxsize=2)
        self._subscribers.add(q)
        self._watched.set()
        return q

    def unsubscribe(self, q: asyncio.Queue) -> None:
        self._subscribers.discard(q)
        if not self._subscribers:
            self._watched.clear()

    async def _frames_changed(self) -> bool:
        """Whether a display changed since the last scene (desktopd answers 304 while its
        damage says none did); True when a frame could not be had (a build says why)."""
        try:
            sigs = await self.frame_signatures([d.id for d in (self.last.displays if self.last else [])] or [0])
        except Exception:
            return True
        return self._seen(sigs)

    def _seen(self, sigs: dict[int, FrameSignature]) -> bool:
        """Whether these frames differ from the last seen; if so they are the last seen,
        and the scene is dirty."""
        if not any(self._watch_sigs.get(d) is None or changed_regions(self._watch_sigs[d], sig)
                   for d, sig in sigs.items()):
            return False
        self._watch_sigs, self._dirty, self.last_change = sigs, True, time.monotonic()
        return True

    async def frame_signatures(self, displays: list[int]) -> dict[int, FrameSignature]:
        frames = await asyncio.gather(*[self.desktop.frame(d) for d in displays])
        return {f.display_id: self._sign(f) for f in frames}

    async def settle(self, display_id: int, before: FrameSignature, budget_ms: int) -> tuple[bool, bool]:
        """The one wait-until-settled loop: wait until the display stops changing or the
        budget runs out. Returns (changed since ``before``, settled)."""
        deadline = time.monotonic() + budget_ms / 1000
        last, changed, stable = before, False, 0
        while True:
            await asyncio.sleep(SETTLE_POLL_S)
            now = (await self.frame_signatures([display_id]))[display_id]
            changed = changed or bool(changed_regions(before, now))
            stable = 0 if changed_regions(last, now) else stable + 1
            last = now
            # Settled: unchanged for two polls after a change, or for three when nothing
            # changed (a page may take a moment to react at all).
            if (changed and stable >= 2) or stable >= 3:
                return changed, True
            if time.monotonic() >= deadline:
                return changed, False

    def _sign(self, frame: Frame) -> FrameSignature:
        """A frame's signature; the same Frame object (desktopd said the screen has not
        changed, ``Desktop.frame``) is not signed twice."""
        last = self._signed.get(frame.display_id)
        if last is not None and last[0] is frame:
            return last[1]
        sig = signature(frame.rgb, frame.width, frame.height)
        self._signed[frame.display_id] = (frame, sig)
        return sig

    # -- building ---------------------------------------------------------------------

    async def _counted_build(self, mode: Mode) -> Scene:
        started, ok = time.perf_counter(), False
        try:
            scene = await self._build(mode)
            ok = True
            return scene
        finally:
            if self.metrics is not None:
                self.metrics.built(mode, time.perf_counter() - started, ok)

    async def _build(self, mode: Mode) -> Scene:
        """A fresh scene: ``idle`` builds like ``active`` (it only builds when dirty)."""
        b, prev = _Build(mode), self.last
        await self._read(b)
        self._compare(b, prev)
        self._start_walks(b)
        await self._page_stage(b)
        await self._native_stage(b)
        await self._text_stage(b)
        self._assign_ids(b, prev)
        return self._finish(b, prev)

    async def _read(self, b: _Build) -> None:
        """The window tree and a frame of each display; the bridge's pages, and AT-SPI when
        nothing of it has been read yet (every app: no frame can spare a walk), started
        beside them. AT-SPI read before waits for the frames: they decide which apps are
        walked again (``_start_walks``)."""
        if self.atspi is not None and self._native_cache is None:
            b.native_task = asyncio.ensure_future(b.timed("atspi", self.atspi.snapshot()))
        if self.bridge is not None:
            b.layouts_task = asyncio.ensure_future(b.timed("cdp", self.bridge.layouts()))
        try:
            b.tree = await b.timed("tree", self.desktop.tree())
            b.frames = await b.timed("frames", asyncio.gather(*[self.desktop.frame(d.id) for d in b.tree.displays]))
        except BaseException:
            for task in (b.native_task, b.layouts_task):
                if task is not None:
                    task.cancel()
            raise

    def _compare(self, b: _Build, prev: Scene | None) -> None:
        """Each display's changed regions since the previous scene, and since AT-SPI was
        last read (``_unread``)."""
        b.sigs = {f.display_id: self._sign(f) for f in b.frames}
        b.changed = {f.display_id: changed_regions(prev.signatures.get(f.display_id) if prev else None,
                                                   b.sigs[f.display_id])
                     for f in b.frames}
        for f in b.frames:
            unread = self._unread.setdefault(f.display_id, [])
            unread.extend(b.changed[f.display_id])
            if len(unread) > 256:  # a display that kept changing without a walk: all of it
                unread[:] = [(0, 0, f.width, f.height)]

    def _start_walks(self, b: _Build) -> None:
        """AT-SPI for the apps it must read again, and OCR, started."""
        tree = b.tree
        if b.native_task is None and self.atspi is not None:
            # An agent-turn asks for every app (an app's tree can lag its pixels: Writer
            # lists an inserted chart after it has drawn it; the reader keeps only an app
            # whose AT-SPI events say it did not change); otherwise, those whose
            # windows changed since the previous scene. Of a sheet, only the rows a change
            # crossed since AT-SPI last read it are read again (each cell costs
            # LibreOffice a call).
            full = b.mode == "agent-turn"
            b.native_pids = None if full else (changed_pids(tree, b.changed) if b.any_change else frozenset())
            # Apps whose windows held still since AT-SPI was last read: the reader gives
            # again the last walk of one whose AT-SPI events say it did not change.
            still = frozenset(w.pid for w in tree.windows if w.pid is not None) - changed_pids(tree, self._unread)
            if b.native_pids is None or b.native_pids:
                bands = sheet_bands(sheets_in(self.last.ax if self.last else []), self._unread)
                b.native_task = asyncio.ensure_future(b.timed("atspi", self.atspi.snapshot(
                    b.native_pids, bands, still=still)))
        if self.ocr is not None and self.ocr.enabled:
            b.ocr_task = asyncio.ensure_future(b.timed("ocr", self._ocr(b.frames, b.changed)))

    async def _page_stage(self, b: _Build) -> None:
        """The pages' elements, placed in their windows."""
        if b.layouts_task is None:
            b.sources["cdp"] = "no bridge configured"
            return
        try:
            tabs = await b.layouts_task
            misfits = misfit_pages(tabs, b.tree)
            for _ in range(RESIZE_READS):
                if not misfits or misfits == self._misfits:  # none, or one that lasts (a side panel)
                    break
                # A page not yet laid out for its window's new size: read both again.
                await asyncio.sleep(RESIZE_WAIT_S)
                b.tree, tabs = await asyncio.gather(self.desktop.tree(), self.bridge.layouts())
                misfits = misfit_pages(tabs, b.tree)
            self._misfits = misfits
        except UnavailableError as exc:
            tabs, b.cdp_failed = [], True
            b.sources["cdp"] = exc.message
        t0 = time.perf_counter()
        cdp, b.keep_tabs, tab_errors = page_elements_in_windows(tabs, b.tree)
        b.timings["cdp_elements"] = (time.perf_counter() - t0) * 1000
        if tab_errors:
            b.sources["cdp"] = "; ".join(tab_errors)
        b.elements += cdp

    async def _native_stage(self, b: _Build) -> None:
        """The native apps' elements: the walk's, with the last walk of the apps not
        walked again; the last ones as they were when AT-SPI failed."""
        if b.native_task is not None:
            try:
                fresh = await b.native_task
                # The walk inside the worker, apart from the trip to it and back.
                walk = self.atspi.last_walk
                b.timings["atspi_walk"] = float(walk.get("seconds", 0.0)) * 1000
                for key, ms in walk.items():  # "app:<name>:<pid>:ms", per app walked
                    if key.startswith("app:"):
                        b.timings[f"atspi_walk:{key.split(':')[1]}"] = float(ms)
                if b.native_pids is not None and self._native_cache is not None:
                    alive = {w.pid for w in b.tree.windows}
                    fresh = [n for n in self._native_cache if n.pid not in b.native_pids and n.pid in alive] + fresh
                self._native_cache = fresh
                self._unread = {}
            except Exception as exc:  # AT-SPI is best effort: the scene still has the rest
                b.native_failed = True
                b.sources["atspi"] = f"{type(exc).__name__}: {exc}"
                log.warning("atspi failed", error=str(exc))
        elif self.atspi is None:
            b.sources["atspi"] = "disabled"
        pointer = await self._pointer_for_popups(self._native_cache or [])
        t0 = time.perf_counter()
        # When this walk failed, the last one's elements and opaque parts stand (absence of
        # evidence is not a removal): ``--ocr fill`` goes on reading what it showed.
        native, b.opaque = self._native_elements(self._native_cache or [], b.tree, pointer)
        b.elements += native
        b.timings["native_elements"] = (time.perf_counter() - t0) * 1000

    async def _text_stage(self, b: _Build) -> None:
        """OCR's text: of the whole screen, or of the parts of native windows AT-SPI
        leaves opaque."""
        try:
            if b.ocr_task is not None:
                b.ocr_items = await b.ocr_task
            elif self.fill is not None and self.fill.enabled:
                b.ocr_items = await b.timed("ocr", self._fill_in(b.frames, b.opaque, b.changed))
            else:
                b.sources["ocr"] = "disabled"
        except Exception as exc:
            b.sources["ocr"] = f"{type(exc).__name__}: {exc}"

    def _assign_ids(self, b: _Build, prev: Scene | None) -> None:
        """Each element listed once, with its id: live elements keep theirs; the ones of a
        source that could not be read this time are kept alive (absence of evidence is
        not a removal). (A GTK popup menu is listed twice by AT-SPI: under the widget
        that opened it, and as a window of its app.)"""
        t0 = time.perf_counter()
        once: dict[tuple, Element] = {}
        for e in b.elements:
            once.setdefault((e.display_id, e.key), e)
        b.elements = list(once.values())
        seen = []
        for e in b.elements:
            e.id = self.ids.assign(e.display_id, e.key)
            seen.append((e.display_id, e.key))
        id_of = {e.key: e.id for e in b.elements}
        for e in b.elements:
            e.parent = id_of.get(e.parent_key) if e.parent_key is not None else None

        def keep(full_key: tuple) -> bool:
            key = full_key[1]
            if key[0] == "cdp":
                return b.cdp_failed or key[1] in b.keep_tabs
            return b.native_failed

        prev_by_key = {(e.display_id, e.key): e for e in (prev.ax if prev else [])}

        def describe(full_key: tuple):
            e = prev_by_key.get(full_key)
            return (e.role, e.name) if e else (None, None)

        self.ids.retire_absent(seen, keep=keep, describe=describe)
        self.id_store.reserve()  # before anyone sees these ids
        self.id_store.touched()
        b.timings["ids"] = (time.perf_counter() - t0) * 1000

    def _finish(self, b: _Build, prev: Scene | None) -> Scene:
        """The Scene, redacted, kept as the last and published."""
        tree = b.tree
        self._seq += 1
        scene = Scene(seq=self._seq, timestamp=time.time(), mode=b.mode, displays=tree.displays, windows=tree.windows,
                      focused_window=next((w for w in tree.windows if w.focused), None), apps=apps_of(tree.windows),
                      ax=b.elements, ocr=b.ocr_items, vlm_scene=self.vlm_scene, vlm_elements=self.vlm_elements,
                      sources=b.sources, signatures=b.sigs)
        scene.build_ms = (time.perf_counter() - b.started) * 1000
        scene.timings = b.timings
        if prev is None or b.any_change:
            self.last_change = time.monotonic()
        if self.redact is not None:
            t0 = time.perf_counter()
            scene = self.redact(scene)  # before anyone sees it
            b.timings["redact"] = (time.perf_counter() - t0) * 1000
        self.last = scene
        self.by_id = {e.id: e for e in scene.ax}
        self._watch_sigs = dict(b.sigs)
        self._dirty = False
        self._publish(scene)
        return scene

    async def _pointer_for_popups(self, nodes: list[Any]) -> tuple[int, float, float] | None:
        """Where the pointer is, when a popup waits to be placed below the button under
        it (``placing.place_popups_at_pointer``); None otherwise (no call is made)."""
        if not any(getattr(n, "unplaced", False) for n in nodes):
            return None
        try:
            return await self.desktop.pointer_position()
        except UnavailableError:
            return None

    def _native_elements(self, nodes: list[Any], tree: Tree,
                         pointer: tuple[int, float, float] | None = None) -> tuple[list[Element], list[Opaque]]:
        """The native apps' elements, and the parts of their windows that expose nothing
        (surfaces they draw on, windows without a node): where ``--ocr fill`` reads.
        ``pointer``: where desktopd last put it, for popups placed below the button under it."""
        displays = {d.id: d for d in tree.displays}
        by_window: dict[str, tuple[Window, list[Any]]] = {}
        for window, group in windows_for_native(nodes, tree.windows, displays):
            if window.bounds is None or window.display_id not in displays:
                continue
            by_window.setdefault(window.id, (window, []))[1].extend(group)
        out: list[Element] = []
        opaque: list[Opaque] = []
        for window, group in by_window.values():
            display = displays[window.display_id]
            clip = visible_part(window.bounds, Rect(0, 0, *display.size))
            if clip is None:
                continue
            frame = next((n for n in group if n.depth == 1), None)
            surface = None
            if frame is not None:
                from ..atspi import visible_window

                surface = visible_window(frame, device_span_to_layout(window.bounds.w, window.bounds.h, display.scale))
            if pointer is not None and pointer[0] == display.id:
                group = place_popups_at_pointer(group, window.bounds, display.scale, surface, pointer[1:])
            group = flip_submenus(group, window.bounds, display.scale, surface, display.size[0])
            out += native_elements(group, window=window.bounds, scale=display.scale, clip=clip,
                                   display_id=display.id, window_id=window.id, surface_window=surface)
            if self.fill is not None:
                def place(extents, window=window, display=display, surface=surface, clip=clip):
                    box = native_to_display(window.bounds, display.scale, extents, surface)
                    return visible_part(box, clip) if box is not None else None
                opaque += [Opaque(display.id, window.id, region_of(box)) for box in opaque_boxes(group, place)]
        if self.fill is not None:
            # A window whose app exposes nothing at all is read whole (not a browser's:
            # CDP reads its pages).
            for window in tree.windows:
                if (window.id in by_window or window.bounds is None or window.display_id not in displays
                        or (window.app_id and "chrom" in window.app_id.lower())):
                    continue
                clip = visible_part(window.bounds, Rect(0, 0, *displays[window.display_id].size))
                if clip is not None and clip.w >= OPAQUE_MIN[0] and clip.h >= OPAQUE_MIN[1]:
                    opaque.append(Opaque(window.display_id, window.id, region_of(clip)))
        return out, opaque

    async def _fill_in(self, frames: list[Frame], parts: list[Opaque],
                       changed: dict[int, list[tuple[int, int, int, int]]]) -> list[OcrItem]:
        by_display = {f.display_id: f for f in frames}

        def image_of(display_id: int) -> Image.Image:
            f = by_display[display_id]
            return Image.frombytes("RGB", (f.width, f.height), f.rgb)

        parts = [p for p in parts if p.display_id in by_display]
        read = await asyncio.to_thread(self.fill.update, parts, image_of, changed)
        items, seen = [], []
        for part, w in read:
            key = (w.text, round(w.bbox[0] / 16), round(w.bbox[1] / 16))
            items.append(OcrItem(self.text_ids.assign(part.display_id, key), w.text, tuple(w.bbox), w.conf,
                                 part.display_id, part.window_id))
            seen.append((part.display_id, key))
        self.text_ids.retire_absent(seen)
        return items

    async def _ocr(self, frames: list[Frame], changed: dict[int, list[tuple[int, int, int, int]]]) -> list[OcrItem]:
        assert self.ocr is not None
        items: list[OcrItem] = []
        for frame in frames:
            # Even an agent-turn reads only changed blocks again: the block checksums cover
            # every byte, so unchanged pixels would give the same text (a full read of a
            # 1280x800 page takes tesseract seconds).
            regions = list(changed[frame.display_id])
            if not regions and frame.display_id in self._ocr_cache:
                items += self._ocr_cache[frame.display_id]
                continue
            image = Image.frombytes("RGB", (frame.width, frame.height), frame.rgb)
            words = await asyncio.to_thread(self.ocr.update, frame.display_id, image, regions)
            got = []
            for w in words:
                key = (w.text, round(w.bbox[0] / 16), round(w.bbox[1] / 16))
                got.append(OcrItem(self.text_ids.assign(frame.display_id, key), w.text, tuple(w.bbox), w.conf,
                                   frame.display_id))
            self._ocr_cache[frame.display_id] = got
            items += got
        seen = [(o.display_id, (o.text, round(o.bbox[0] / 16), round(o.bbox[1] / 16))) for o in items]
        self.text_ids.retire_absent(seen)
        return items

    def _publish(self, scene: Scene) -> None:
        for q in list(self._subscribers):
            if q.full():
                try:
                    q.get_nowait()  # a slow subscriber gets the newest scene, not a backlog
                except asyncio.QueueEmpty:
                    pass
            q.put_nowait(scene)

    # -- watching ---------------------------------------------------------------------

    async def watch(self) -> None:
        """While someone is subscribed (the stream), polls the frames (1 Hz, 4 Hz for a
        while after a change) and builds a scene on a change. Else it waits: an idle scene
        looks at the frames itself (a blinking caret made it capture 4 times a second)."""
        while True:
            await self._watched.wait()
            fast = time.monotonic() - self.last_change < WATCH_ACTIVE_FOR_S
            await asyncio.sleep(WATCH_ACTIVE_S if fast else WATCH_IDLE_S)
            try:
                tree_displays = [d.id for d in (self.last.displays if self.last else [])] or [0]
                sigs = await self.frame_signatures(tree_displays)
            except Exception as exc:
                log.debug("watch: frame failed", error=str(exc))
                continue
            if self._seen(sigs) and self._subscribers:
                try:
                    await self.scene("active")
                except Exception as exc:
                    log.warning("watch: scene failed", error=str(exc))
