"""Every coordinate transform deskbox does lives here, and nowhere else.

The spaces:

- **device pixels, display-local**: what a display's screenshot measures; what agents
  read and send. Origin at the display's top-left corner.
- **layout pixels**: the compositor's global space. A display of W x H device pixels at
  scale S occupies W/S x H/S layout pixels starting at its ``origin``.
- **scaled screenshot pixels**: a screenshot resized by a factor ``f`` (output px =
  device px x f); the factor travels with the image so callers can convert back.
- **region pixels**: a screenshot cropped to a region of the display, origin at the
  region's top-left corner.
- **X root pixels**: an X server's whole-pixel root window space.
- **window-relative layout pixels**: AT-SPI extents of native apps under Wayland, from
  the window's top-left corner (Wayland gives clients no global positions).
- **CSS pixels**, document- or viewport-relative, for the CDP bridge: a node's box in its
  own document, placed in the tab's top document through each enclosing iframe's
  content box, and in the viewport by subtracting the top document's scroll offset.

Nobody else adds offsets or divides by scales: they call these functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from .regions import (
    Region,
    clip_region,
    grow_region,
    merge_regions,
    region_contains,
    region_overlap,
    region_union,
    regions_intersect,
)

__all__ = [
    "Rect",
    "Region",
    "clip_region",
    "region_overlap",
    "regions_intersect",
    "region_contains",
    "region_union",
    "grow_region",
    "merge_regions",
    "Display",
    "device_to_layout",
    "layout_to_device",
    "device_span_to_layout",
    "layout_rect_to_device",
    "display_at_layout_point",
    "layout_extent",
    "absolute_motion",
    "side_by_side",
    "resize_factor",
    "scaled_size",
    "device_to_region",
    "device_to_root_pixel",
    "content_box_origin",
    "frame_document_offset",
    "offset_box",
    "snapshot_to_css",
    "measured_to_snapshot",
    "moved_with",
    "document_to_viewport",
    "viewport_to_document",
    "PagePlacement",
    "page_placement",
    "viewport_width_gap",
    "css_to_display",
    "display_to_css",
    "native_to_display",
    "native_document_to_display",
    "vcl_body_offset",
    "popup_origin",
    "submenu_origin",
    "submenu_flip_shift",
    "GTK_MENU_INSET",
    "native_vcl_box",
    "device_rect",
    "visible_part",
    "rect_center",
    "probe_points",
    "declared_to_display",
    "display_to_declared",
    "declared_region_to_display",
    "normalized_to_display",
    "fit_within",
]


@dataclass(frozen=True, slots=True)
class Rect:
    x: float
    y: float
    w: float
    h: float

    def contains(self, x: float, y: float) -> bool:
        return self.x <= x < self.x + self.w and self.y <= y < self.y + self.h

    def intersect(self, other: "Rect") -> "Rect | None":
        x0, y0 = max(self.x, other.x), max(self.y, other.y)
        x1 = min(self.x + self.w, other.x + other.w)
        y1 = min(self.y + self.h, other.y + other.h)
        if x1 <= x0 or y1 <= y0:
            return None
        return Rect(x0, y0, x1 - x0, y1 - y0)

    def as_list(self) -> list[int]:
        return [round(self.x), round(self.y), round(self.w), round(self.h)]


@dataclass(frozen=True, slots=True)
class Display:
    """One output: ``id`` is its index in the session, ``layout`` its place in the
    compositor's space, ``size`` its pixel size (device pixels) and ``scale`` the
    compositor scale (device px per layout px)."""

    id: int
    name: str
    layout: Rect
    scale: float
    size: tuple[int, int]
    primary: bool = False


def device_to_layout(display: Display, x: float, y: float) -> tuple[float, float]:
    """Display-local device pixels -> compositor layout pixels."""
    return display.layout.x + x / display.scale, display.layout.y + y / display.scale


def layout_to_device(display: Display, lx: float, ly: float) -> tuple[float, float]:
    """Compositor layout pixels -> display-local device pixels of ``display``."""
    return (lx - display.layout.x) * display.scale, (ly - display.layout.y) * display.scale


def device_span_to_layout(dx: float, dy: float, scale: float) -> tuple[float, float]:
    """A distance or size in device pixels (a window's, a scroll's) in layout pixels,
    on a display of ``scale`` (0 or none counts as 1)."""
    scale = scale or 1.0
    return dx / scale, dy / scale


def layout_rect_to_device(display: Display, rect: Rect) -> Rect:
    """A layout-space rectangle (a window's rect from the compositor) in the display's
    device pixels. The result may extend past the display when the window does."""
    x, y = layout_to_device(display, rect.x, rect.y)
    return Rect(x, y, rect.w * display.scale, rect.h * display.scale)


def device_rect_to_layout(display: Display, rect: Rect) -> Rect:
    """A display-local device-pixel box in the compositor's layout space (what a client
    of one desktop-wide coordinate space, such as OS Screen Observer's, calls absolute)."""
    x, y = device_to_layout(display, rect.x, rect.y)
    return Rect(x, y, rect.w / display.scale, rect.h / display.scale)


def display_at_layout_point(displays: Iterable[Display], lx: float, ly: float) -> Display | None:
    for display in displays:
        if display.layout.contains(lx, ly):
            return display
    return None


def layout_extent(displays: Iterable[Display]) -> Rect:
    """The bounding box of all displays in layout space."""
    ds = list(displays)
    if not ds:
        return Rect(0, 0, 0, 0)
    x0 = min(d.layout.x for d in ds)
    y0 = min(d.layout.y for d in ds)
    x1 = max(d.layout.x + d.layout.w for d in ds)
    y1 = max(d.layout.y + d.layout.h for d in ds)
    return Rect(x0, y0, x1 - x0, y1 - y0)


# Absolute pointer devices (wlr virtual pointer, uinput tablets) take integer positions
# within an integer extent that the compositor stretches over the whole layout. Using a
# finer grid than layout pixels keeps device-pixel precision on scale-2 displays.
ABSOLUTE_SUBDIVISION = 64


def absolute_motion(displays: Iterable[Display], display: Display, x: float, y: float) -> tuple[int, int, int, int]:
    """Device pixel (x, y) on ``display`` -> (ax, ay, x_extent, y_extent) for an
    absolute pointer that spans the layout's bounding box. Targets the centre of the
    device pixel so rounding never lands on a neighbour."""
    extent = layout_extent(displays)
    lx, ly = device_to_layout(display, x + 0.5, y + 0.5)
    k = ABSOLUTE_SUBDIVISION
    ax = int((lx - extent.x) * k)
    ay = int((ly - extent.y) * k)
    return ax, ay, int(extent.w * k), int(extent.h * k)


def side_by_side(specs: Iterable[tuple[int, int, float]]) -> list[tuple[int, int]]:
    """Layout origins for displays given as (device width, device height, scale),
    placed left to right in the order given (as `deskbox up --output WxH@S` lists them)."""
    origins = []
    x = 0.0
    for w, _h, scale in specs:
        origins.append((int(round(x)), 0))
        x += w / scale
    return origins


def resize_factor(size: tuple[int, int], *, width: int | None = None, scale: float | None = None) -> float:
    """The factor (output px / device px) a screenshot request asks for."""
    if width is not None:
        return width / size[0]
    if scale is not None:
        return scale
    return 1.0


def scaled_size(size: tuple[int, int], factor: float) -> tuple[int, int]:
    return max(1, round(size[0] * factor)), max(1, round(size[1] * factor))


def device_to_region(region: tuple[int, int, int, int], x: float, y: float) -> tuple[float, float]:
    """Display device pixels -> pixels of a screenshot cropped to ``region`` (x, y, w, h)."""
    return x - region[0], y - region[1]


def device_to_root_pixel(display: Display, x: float, y: float) -> tuple[int, int]:
    """Display device pixels -> the X root pixel the point falls in."""
    lx, ly = device_to_layout(display, x, y)
    return math.floor(lx), math.floor(ly)


# -- CSS pixels (CDP bridge) -----------------------------------------------------------

Point = tuple[float, float]
Box = tuple[float, float, float, float]


def content_box_origin(border_box: Box, offset: Point, border: Point, padding: Point) -> Point:
    """Where an element's content box starts in the top document: its border box (in its
    own document) moved by that document's ``offset``, then inside border and padding.
    For an iframe this is where the framed document's origin lies, before its scroll."""
    return (border_box[0] + offset[0] + border[0] + padding[0], border_box[1] + offset[1] + border[1] + padding[1])


def frame_document_offset(content_origin: Point, frame_scroll: Point) -> Point:
    """A framed document's offset in the top document: the owner's content-box origin
    less the framed document's own scroll."""
    return content_origin[0] - frame_scroll[0], content_origin[1] - frame_scroll[1]


def snapshot_to_css(box: Box, device_pixel_ratio: float) -> Box:
    """A ``DOMSnapshot`` layout box -> CSS px. Measured: snapshot bounds and scroll
    offsets are device pixels (CSS px x devicePixelRatio): a button at CSS x 40 comes
    as 80 on a scale-2 display and as 60 at page zoom 150 %."""
    if device_pixel_ratio == 1:
        return box
    s = device_pixel_ratio
    return box[0] / s, box[1] / s, box[2] / s, box[3] / s


LAYOUT_UNIT = 64  # Blink lays out in 1/64 px


def measured_to_snapshot(box: Box, device_pixel_ratio: float) -> Box:
    """A box the page measured (``getBoundingClientRect``, CSS px, document-relative) ->
    the box ``DOMSnapshot`` gives the same node, in CSS px. Measured on these machines:
    the snapshot's box is the page's float rect enclosed at 1/64 device px (left and top
    rounded down, right and bottom up), so the two agree to the bit for untransformed
    elements and text, and a rotated button's 6.523 -> 74.102 comes as 6.516 -> 74.109."""
    s = device_pixel_ratio or 1.0
    snap = s != 1.0
    x0, y0 = _to_grid(box[0] * s, math.floor, snap), _to_grid(box[1] * s, math.floor, snap)
    x1, y1 = _to_grid((box[0] + box[2]) * s, math.ceil, snap), _to_grid((box[1] + box[3]) * s, math.ceil, snap)
    return snapshot_to_css((x0, y0, x1 - x0, y1 - y0), s)


def _to_grid(device_px: float, direction, snap: bool) -> float:
    """A device-pixel edge the page measured -> Blink's 1/64 px grid. At a zoom of 1 the
    page's rect is Blink's own float rect, and a rotated box's edge a hair below a grid
    line is enclosed by the line below (measured). At another zoom it is single precision
    divided by the zoom: at 150 % an edge on the grid comes back as 639.99998/64, which
    rounding down would move a whole unit; so there (``snap``) a value within float
    error of a grid line is taken as that line, and only one clearly between two is
    rounded. (A rotated box's edge can then be 1/64 px off; the box check corrects it.)"""
    units = device_px * LAYOUT_UNIT
    nearest = round(units)
    if snap and abs(units - nearest) <= 1e-3 + abs(units) * 2.4e-7:  # float32 has 24 bits
        return nearest / LAYOUT_UNIT
    return direction(units) / LAYOUT_UNIT


def moved_with(box: Box, owner_before: Box, owner_after: Box) -> Box:
    """A box that moves with its owner (an input's inner text with the input) after the
    owner moved from ``owner_before`` to ``owner_after`` without changing size."""
    return (box[0] + owner_after[0] - owner_before[0], box[1] + owner_after[1] - owner_before[1], box[2], box[3])


def same_spot(point: Point, before: Box, after: Box) -> Point:
    """``point`` at the same place relative to a box that moved from ``before`` to
    ``after`` and may have grown (a zoomed page): a replayed click lands where it landed
    in the element (kept inside it)."""
    fx = (point[0] - before[0]) / before[2] if before[2] else 0.5
    fy = (point[1] - before[1]) / before[3] if before[3] else 0.5
    return (after[0] + min(max(fx, 0.0), 1.0) * after[2], after[1] + min(max(fy, 0.0), 1.0) * after[3])


def offset_box(box: Box, offset: Point) -> Box:
    """A box in its own document -> the same box in the top document."""
    return box[0] + offset[0], box[1] + offset[1], box[2], box[3]


def frame_relative(box: Box, frame_origin: Point) -> Box:
    """An AT-SPI box in DESKTOP coordinates -> relative to its top-level frame, given the
    frame's own DESKTOP position: what WINDOW coordinates would say. For Qt 5, whose
    WINDOW coordinates are garbage under Xwayland while its DESKTOP ones (the X root
    window's) follow the window (measured with VLC 3)."""
    return box[0] - frame_origin[0], box[1] - frame_origin[1], box[2], box[3]


def document_to_viewport(box: Box, scroll: Point) -> Box:
    """A top-document box -> viewport-relative, given the top document's scroll offset."""
    return box[0] - scroll[0], box[1] - scroll[1], box[2], box[3]


def viewport_to_document(point: Point, scroll: Point) -> Point:
    """A viewport-relative CSS point -> the top document's frame."""
    return point[0] + scroll[0], point[1] + scroll[1]


# -- Page and native-app geometry on a display (scene aggregator) -----------------------


@dataclass(frozen=True, slots=True)
class PagePlacement:
    """Where a tab's viewport sits on its display: ``viewport`` in display-local device
    pixels, and ``css_scale`` device pixels per CSS pixel (the page's devicePixelRatio,
    which already includes the page zoom and the output scale)."""

    viewport: Rect
    css_scale: float


def page_placement(window: Rect, inner_css: tuple[float, float], device_pixel_ratio: float) -> PagePlacement:
    """The viewport of a browser window whose display-local device-pixel bounds are
    ``window``: the viewport (``innerWidth`` x ``innerHeight`` CSS px) fills the window's
    bottom-right corner; the browser's own UI is above it. Anchoring at the bottom edge,
    rather than adding a top chrome height, keeps Chromium's client-side decoration
    margins (counted in its outer size but not drawn inside the tile) out of the sum."""
    w = inner_css[0] * device_pixel_ratio
    h = inner_css[1] * device_pixel_ratio
    return PagePlacement(Rect(window.x + window.w - w, window.y + window.h - h, w, h), device_pixel_ratio)


def viewport_width_gap(window: Rect, inner_css_width: float, device_pixel_ratio: float) -> float | None:
    """How far a page's viewport (``innerWidth`` CSS px) is from spanning its browser
    window's width, in device px; None within rounding (a fractional scale rounds
    ``innerWidth`` to whole CSS px). The viewport spans the window's width when the page
    is laid out for it (see ``page_placement``)."""
    gap = inner_css_width * device_pixel_ratio - window.w
    return None if abs(gap) <= max(2.0, device_pixel_ratio) else gap


def css_to_display(placement: PagePlacement, box: Box) -> Rect:
    """A viewport-relative CSS box -> display-local device pixels."""
    s = placement.css_scale
    return Rect(placement.viewport.x + box[0] * s, placement.viewport.y + box[1] * s, box[2] * s, box[3] * s)


def display_to_css(placement: PagePlacement, x: float, y: float) -> Point:
    """A display-local device-pixel point -> viewport-relative CSS px of the page."""
    return (x - placement.viewport.x) / placement.css_scale, (y - placement.viewport.y) / placement.css_scale


def native_to_display(window: Rect, scale: float, extents: Box, surface_window: Box | None = None) -> Rect:
    """A native app's AT-SPI extents (layout px, relative to its top-level surface) ->
    display-local device px. ``window`` is the window's content rect from Sway's tree in
    display-local device px; ``surface_window`` is where that visible window lies in the
    surface (layout px: a client-drawn shadow or margin puts it at an offset; None when
    the surface is the window). Sway centres a window smaller than its content rect."""
    cw, ch = window.w / scale, window.h / scale
    vx, vy, vw, vh = surface_window if surface_window is not None else (0.0, 0.0, cw, ch)
    ox = max(0.0, (cw - vw) / 2) - vx
    oy = max(0.0, (ch - vh) / 2) - vy
    return Rect(window.x + (ox + extents[0]) * scale, window.y + (oy + extents[1]) * scale,
                extents[2] * scale, extents[3] * scale)


def device_rect(rect: Rect) -> tuple[int, int, int, int]:
    """Whole device pixels covering ``rect``'s edges rounded to the nearest pixel, so
    abutting boxes stay abutting."""
    x0, y0 = round(rect.x), round(rect.y)
    return x0, y0, round(rect.x + rect.w) - x0, round(rect.y + rect.h) - y0


def visible_part(rect: Rect, *clips: Rect) -> Rect | None:
    """``rect`` cut to every clip (display, viewport, window); None when nothing is left."""
    out: Rect | None = rect
    for clip in clips:
        if out is None:
            return None
        out = out.intersect(clip)
    return out


def rect_center(rect: Rect) -> Point:
    return rect.x + rect.w / 2, rect.y + rect.h / 2


def probe_points(rect: Rect, inset: float = 2.0) -> list[Point]:
    """Points to try on a visible box, best first: its centre, then a 3x3 grid's other
    points (a quarter in from each edge), then near its corners; all at least ``inset``
    px inside so a click does not land on the border of a neighbour."""
    cx, cy = rect_center(rect)
    xs = (rect.x + rect.w / 4, cx, rect.x + rect.w * 3 / 4)
    ys = (rect.y + rect.h / 4, cy, rect.y + rect.h * 3 / 4)
    pts = [(cx, cy)] + [(x, y) for y in ys for x in xs if (x, y) != (cx, cy)]
    ix, iy = min(inset, rect.w / 2), min(inset, rect.h / 2)
    pts += [(rect.x + ix, rect.y + iy), (rect.x + rect.w - ix, rect.y + iy),
            (rect.x + ix, rect.y + rect.h - iy), (rect.x + rect.w - ix, rect.y + rect.h - iy)]
    return pts


def native_document_to_display(window: Rect, scale: float, extents: Box,
                               surface_window: Box | None = None) -> Rect:
    """Chromium's page content on AT-SPI (inside ``document web``) -> display-local
    device px. Measured (deskbox.atspi): those extents are surface-relative like
    its toolbar's but in *device* pixels (already times the output scale), so they are
    brought back to layout px before ``native_to_display``."""
    layout = (extents[0] / scale, extents[1] / scale, extents[2] / scale, extents[3] / scale)
    return native_to_display(window, scale, layout, surface_window)


def vcl_body_offset(app: str, role: str, box: Box | None, parent_box: Box | None) -> Point | None:
    """LibreOffice's gtk3 plugin draws a window's body itself (VCL) inside a GTK box
    below GTK's menu bar, and VCL's widgets (toolbars, the document, the sheet, the
    sidebar) report AT-SPI boxes relative to that box: 26 px too high (measured,
    LibreOffice 7.4). Its ``root pane`` then says it is at (0, 0) inside a parent that
    is not; the parent's position is the offset its VCL descendants need, or None when
    the node is not such a root pane. The GTK widgets LibreOffice embeds among them
    (``toolkit:gtk`` in their attributes: the Name Box, the formula bar, dialogs)
    report boxes relative to the window, as does everything inside them, whatever draws
    it (Calc's Input line): no offset there (``native_vcl_box``)."""
    if (app == "soffice" and role == "root pane" and box is not None and parent_box is not None
            and (box[0], box[1]) == (0, 0) and (parent_box[0], parent_box[1]) != (0, 0)):
        return parent_box[0], parent_box[1]
    return None


def band_of(box: Box, region: Box) -> tuple[float, float] | None:
    """The horizontal band of ``box`` that ``region`` (same space) crosses, as (top,
    height) fractions of the box's height; None when they do not overlap. A band carries
    a change from one space to another whose boxes differ only by an affine map (a
    sheet's display box and the app's own box for it): ``band_span`` maps it back."""
    x, y, w, h = box
    rx, ry, rw, rh = region
    if h <= 0 or min(x + w, rx + rw) <= max(x, rx) or min(y + h, ry + rh) <= max(y, ry):
        return None
    top, bottom = max(y, ry), min(y + h, ry + rh)
    return (top - y) / h, (bottom - top) / h


def band_span(box: Box, band: tuple[float, float]) -> tuple[float, float]:
    """A band of ``box`` (``band_of``) as (top, bottom) in the box's own space."""
    _, y, _, h = box
    top, height = band
    return y + top * h, y + (top + height) * h


# A GTK 3 menu's popup surface keeps a margin around what it draws (room for its
# shadow): its first item lies this far inside the surface, in layout px (measured with
# LibreOffice's gtk3 plugin, Adwaita, Sway: the item's highlight starts exactly at the
# anchor's bottom-left while its box says (6, 5) further).
GTK_MENU_INSET: Point = (6, 5)


def popup_origin(anchor: Box, inset: Point = (0, 0)) -> Point:
    """Where a popup (a menu of the menu bar, a toolbar's drop-down) opens, in the
    coordinates of the box that dropped it: what it draws starts at that box's
    bottom-left, its surface ``inset`` (GTK_MENU_INSET for a GTK menu, none for VCL's
    own popups) further up and left. What the popup holds reports boxes relative to the
    popup's surface: ``offset_box(box, popup_origin(anchor))`` puts them in the
    window's coordinates."""
    return anchor[0] - inset[0], anchor[1] + anchor[3] - inset[1]


def submenu_origin(item: Box, inset: Point = GTK_MENU_INSET) -> Point:
    """Where the popup of a GTK 3 submenu opens, in the coordinates of ``item`` (the menu
    item that opened it, already placed): to the item's right, its first item level with
    ``item`` (measured with LibreOffice's Format > Text). GTK opens it on the item's
    left instead when the display has no room on the right: the reader does not know
    the display, so the scene moves it then (``scene.placing.flip_submenus``)."""
    return item[0] + item[2] - inset[0] - 1, item[1] - inset[1]


def submenu_flip_shift(item: Box, width: float) -> float:
    """How far a submenu placed by ``submenu_origin`` moves along x when GTK opens it on
    ``item``'s left instead (no room on the display's right): its items, ``width``
    wide, then end 1 px left of the item (measured with LibreOffice's Tools >
    AutoCorrect beside the browser at 1920x1080: items drawn from 1156 to 1388, the item
    from 1389)."""
    return -(width + item[2])


def native_vcl_box(box: Box, offset: Point | None, toolkit: str) -> tuple[Box, Point | None]:
    """A node's AT-SPI box below a LibreOffice root pane (``vcl_body_offset``) put
    right, and the offset its children need: none below a GTK widget."""
    if offset is None or toolkit == "gtk":
        return box, None
    return (box[0] + offset[0], box[1] + offset[1], box[2], box[3]), offset


# -- Provider adapters: a declared screen size and normalized grids --------------------
#
# A computer-use model sees the display at a *declared* size (Anthropic's
# display_width_px x display_height_px, or any size a harness picks) and answers in the
# pixels of that picture; Gemini answers on a 0-999 grid whatever the picture's size.
# Both map linearly onto the display's device pixels, each axis on its own (a declared
# 1280x720 on a 1280x800 display stretches only y). No offset, so the same functions
# convert distances (scroll amounts) as well as points.


def declared_to_display(display: tuple[int, int], declared: tuple[int, int], x: float, y: float) -> Point:
    """A point (or distance) in pixels of a screenshot shown at ``declared`` size ->
    device pixels of a display of ``display`` size."""
    return x * display[0] / declared[0], y * display[1] / declared[1]


def display_to_declared(display: tuple[int, int], declared: tuple[int, int], x: float, y: float) -> Point:
    """Device pixels of the display -> pixels of its screenshot at ``declared`` size."""
    return x * declared[0] / display[0], y * declared[1] / display[1]


def declared_region_to_display(display: tuple[int, int], declared: tuple[int, int],
                               x0: float, y0: float, x1: float, y1: float) -> Rect:
    """A region given by two corners in declared pixels (top-left, bottom-right, in
    either order) -> the display's device-pixel rectangle, cut to the display."""
    ax, ay = declared_to_display(display, declared, min(x0, x1), min(y0, y1))
    bx, by = declared_to_display(display, declared, max(x0, x1), max(y0, y1))
    ax, ay = max(0.0, ax), max(0.0, ay)
    bx, by = min(float(display[0]), bx), min(float(display[1]), by)
    return Rect(ax, ay, max(0.0, bx - ax), max(0.0, by - ay))


def normalized_to_display(display: tuple[int, int], x: float, y: float, grid: int = 1000) -> Point:
    """A point (or distance) on a ``grid`` x ``grid`` normalized space (Gemini's 0-999:
    ``grid`` 1000) -> device pixels of a display of ``display`` size."""
    return x * display[0] / grid, y * display[1] / grid


def fit_within(size: tuple[int, int], bound: tuple[int, int]) -> tuple[int, int]:
    """``size`` scaled down (never up), aspect kept, so that it fits in ``bound``."""
    factor = min(1.0, bound[0] / size[0], bound[1] / size[1])
    return max(1, round(size[0] * factor)), max(1, round(size[1] * factor))

# Layout px a client may draw around its window inside its surface (Adwaita's shadows
# are about 26 px a side; Chromium keeps 10 px).
SURFACE_MARGIN_MAX = 80


def surface_window(frame: Box | None, spans: Sequence[Box], content_size: tuple[float, float]) -> Box:
    """Where the window Sway shows lies inside an app's top-level surface: ``(x, y, w,
    h)`` in the frame's AT-SPI extents' terms (layout pixels, surface-relative).

    ``frame`` is the top-level frame's extents, ``spans`` the boxes of its near-full-size
    descendants (any order; the frame's own box may be among them), ``content_size`` the
    width and height of the window's content rect in Sway's tree (``window_rect``). A
    client-side shadow or margin (Chromium's 10 px, a floating GTK3 header-bar window's
    26/23 px) puts the window at an offset: found as the box of a descendant spanning
    the window's full width (its x; the topmost such gives y) or full height (its y; the
    leftmost gives x). Without such a box the frame itself is the window (GTK4,
    server-side decorations)."""
    if frame is None:
        return 0.0, 0.0, float(content_size[0]), float(content_size[1])
    fx, fy, fw, fh = frame
    cw, ch = content_size
    if abs(fw - cw) <= 1 and abs(fh - ch) <= 1:
        return float(fx), float(fy), float(fw), float(fh)
    inner = [s for s in spans if s != frame]
    full_w = [s for s in inner if abs(s[2] - cw) <= 1]
    full_h = [s for s in inner if abs(s[3] - ch) <= 1]
    if not full_w and not full_h:
        # A window narrower or shorter than its tile (clipped or centred by Sway): the
        # spans cannot match the tile's size. A box inset equally on all sides of the
        # frame is the window (Chromium's root view); otherwise the frame is.
        for s in inner:
            dx, dy = s[0] - fx, s[1] - fy
            if 0 < dx <= SURFACE_MARGIN_MAX and dx == dy and fx + fw - (s[0] + s[2]) == dx and fy + fh - (s[1] + s[3]) == dy:
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
