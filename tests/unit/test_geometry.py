"""Coordinate transforms: pure functions, checked with numbers worked out by hand."""

import struct

from deskbox.geometry import (
    GTK_MENU_INSET,
    Display,
    Rect,
    absolute_motion,
    clip_region,
    content_box_origin,
    device_to_layout,
    device_to_region,
    device_to_root_pixel,
    display_at_layout_point,
    document_to_viewport,
    frame_document_offset,
    frame_relative,
    grow_region,
    layout_extent,
    layout_rect_to_device,
    layout_to_device,
    measured_to_snapshot,
    merge_regions,
    moved_with,
    offset_box,
    popup_origin,
    region_contains,
    region_overlap,
    regions_intersect,
    resize_factor,
    scaled_size,
    side_by_side,
    submenu_flip_shift,
    submenu_origin,
)

LEFT = Display(0, "HEADLESS-1", Rect(0, 0, 1280, 800), 1.0, (1280, 800), True)
RIGHT = Display(1, "HEADLESS-2", Rect(1280, 0, 640, 400), 2.0, (1280, 800))


def test_device_pixels_map_to_layout_through_origin_and_scale():
    assert device_to_layout(LEFT, 100, 50) == (100, 50)
    assert device_to_layout(RIGHT, 100, 50) == (1330, 25)
    assert layout_to_device(RIGHT, 1330, 25) == (100, 50)


def test_window_rect_in_layout_becomes_display_device_pixels():
    assert layout_rect_to_device(RIGHT, Rect(1280, 0, 640, 400)) == Rect(0, 0, 1280, 800)
    assert layout_rect_to_device(LEFT, Rect(10, 20, 30, 40)) == Rect(10, 20, 30, 40)


def test_side_by_side_places_displays_by_layout_width():
    assert side_by_side([(1280, 800, 1), (1280, 800, 2), (800, 600, 1)]) == [(0, 0), (1280, 0), (1920, 0)]


def test_layout_extent_and_point_lookup():
    assert layout_extent([LEFT, RIGHT]) == Rect(0, 0, 1920, 800)
    assert display_at_layout_point([LEFT, RIGHT], 1300, 10) is RIGHT
    assert display_at_layout_point([LEFT, RIGHT], 1300, 500) is None


def test_absolute_motion_keeps_device_pixel_precision_at_scale_2():
    ax, ay, ex, ey = absolute_motion([LEFT, RIGHT], RIGHT, 101, 0)
    assert (ex, ey) == (1920 * 64, 800 * 64)
    # Device pixel 101's centre is layout 1280 + 101.5 / 2 = 1330.75.
    assert ax / 64 == 1330.75 and ay / 64 == 0.25


def test_resize_factor_and_sizes():
    assert resize_factor((1920, 1080), width=1280) == 1280 / 1920
    assert resize_factor((1920, 1080), scale=0.5) == 0.5
    assert resize_factor((1920, 1080)) == 1.0
    assert scaled_size((1920, 1080), 0.5) == (960, 540)
    assert Rect(0, 0, 10, 10).intersect(Rect(5, 5, 10, 10)) == Rect(5, 5, 5, 5)
    assert Rect(0, 0, 10, 10).intersect(Rect(20, 20, 1, 1)) is None


def test_region_and_x_root_pixels():
    assert device_to_region((100, 50, 300, 200), 130, 70) == (30, 20)
    assert device_to_root_pixel(RIGHT, 101, 3) == (1330, 1)


def test_css_boxes_through_an_iframe_and_the_viewport():
    # An iframe at (40, 120) in a document itself offset by (0, 0), 5 px border, 3 px padding.
    origin = content_box_origin((40, 120, 416, 216), (0, 0), (5, 5), (3, 3))
    assert origin == (48, 128)
    offset = frame_document_offset(origin, (0, 10))  # the framed document scrolled by 10
    assert offset == (48, 118)
    box = offset_box((30, 50, 110, 32), offset)
    assert box == (78, 168, 110, 32)
    assert document_to_viewport(box, (0, 100)) == (78, 68, 110, 32)


# -- page and native-app geometry on a display --------------------------------------

from deskbox.geometry import (  # noqa: E402
    css_to_display,
    device_rect,
    native_to_display,
    page_placement,
    visible_part,
)


def test_the_viewport_fills_the_bottom_right_of_the_browser_window():
    # A 1280x800 window whose page viewport is 1280x713 CSS px at dpr 1: the browser's
    # own UI takes the top 87 px (Chromium draws its CSD margins outside the tile).
    p = page_placement(Rect(0, 0, 1280, 800), (1280, 713), 1.0)
    assert p.viewport == Rect(0, 87, 1280, 713)
    assert css_to_display(p, (100, 100, 200, 80)) == Rect(100, 187, 200, 80)


def test_page_zoom_and_output_scale_multiply_through_device_pixel_ratio():
    # Window on a scale-2 display at x=640 device px; page zoom 150% -> dpr 3.
    p = page_placement(Rect(640, 0, 1280, 1600), (1280 / 3, 1426 / 3), 3.0)
    assert p.viewport.x == 640 and round(p.viewport.y, 6) == 174
    box = css_to_display(p, (10, 20, 30, 40))
    assert (round(box.x, 6), round(box.y, 6), box.w, box.h) == (670, 234, 90, 120)


def test_native_extents_are_window_relative_layout_pixels():
    assert native_to_display(Rect(640, 0, 640, 800), 1.0, (10, 20, 30, 40)) == Rect(650, 20, 30, 40)
    assert native_to_display(Rect(1280, 0, 1280, 1600), 2.0, (10, 20, 30, 40)) == Rect(1300, 40, 60, 80)


def test_device_rect_rounds_edges_so_neighbours_stay_adjacent():
    a, b = Rect(0.4, 0, 10.2, 5), Rect(10.6, 0, 10, 5)
    ax, _, aw, _ = device_rect(a)
    bx, _, _, _ = device_rect(b)
    assert ax + aw == bx == 11


def test_visible_part_cuts_to_every_clip():
    assert visible_part(Rect(0, 0, 100, 100), Rect(50, 0, 100, 100), Rect(0, 50, 75, 100)) == Rect(50, 50, 25, 50)
    assert visible_part(Rect(0, 0, 10, 10), Rect(20, 20, 5, 5)) is None


def test_a_client_drawn_margin_is_taken_out_of_native_extents():
    # Chromium's surface keeps 10 px around its 640x800 tile: its Back button at surface
    # (16, 56) is at (6, 46) of the window Sway shows, here at x=640 on a scale-2 display.
    box = native_to_display(Rect(1280, 0, 1280, 1600), 2.0, (16, 56, 34, 34), (10, 10, 640, 800))
    assert box == Rect(1292, 92, 68, 68)
    # A window Sway centres in a larger content rect (a max size below the tile's).
    assert native_to_display(Rect(0, 0, 800, 600), 1.0, (0, 0, 10, 10), (0, 0, 600, 400)) == Rect(100, 100, 10, 10)


def test_chromium_page_content_extents_are_device_pixels_of_the_surface():
    # A link inside `document web` at surface (30, 200) layout px reports (60, 400, 40, 20)
    # on a scale-2 output; the window (margin 10 px) sits at x=1280 of the display.
    from deskbox.geometry import native_document_to_display

    box = native_document_to_display(Rect(1280, 0, 1280, 1600), 2.0, (60, 400, 40, 20), (10, 10, 640, 800))
    assert box == Rect(1280 + 20 * 2, 190 * 2, 40, 20)
    assert native_document_to_display(Rect(0, 0, 640, 800), 1.0, (30, 40, 5, 5)) == \
        native_to_display(Rect(0, 0, 640, 800), 1.0, (30, 40, 5, 5))


# -- provider adapters: declared sizes and Gemini's 0-999 grid ---------------------------

from deskbox.geometry import (  # noqa: E402
    declared_region_to_display,
    declared_to_display,
    display_to_declared,
    fit_within,
    normalized_to_display,
)


def test_declared_screen_pixels_map_to_display_pixels_and_back():
    # 1280x720 declared on a 1920x1080 display: every declared pixel is 1.5 device px.
    assert declared_to_display((1920, 1080), (1280, 720), 640, 360) == (960, 540)
    assert display_to_declared((1920, 1080), (1280, 720), 960, 540) == (640, 360)
    # Each axis on its own: 1280x720 declared on a 1280x800 display stretches y only.
    assert declared_to_display((1280, 800), (1280, 720), 100, 90) == (100, 100)
    assert display_to_declared((1280, 800), (1280, 720), 100, 100) == (100, 90)
    # The last declared pixel stays on the display.
    x, y = declared_to_display((1920, 1080), (1280, 720), 1279, 719)
    assert x < 1920 and y < 1080


def test_a_declared_region_becomes_a_display_rectangle_cut_to_the_display():
    assert declared_region_to_display((1920, 1080), (1280, 720), 100, 50, 300, 150) == Rect(150, 75, 300, 150)
    # Corners in either order; a region past the edge is cut.
    assert declared_region_to_display((1920, 1080), (1280, 720), 300, 150, 100, 50) == Rect(150, 75, 300, 150)
    assert declared_region_to_display((1280, 800), (1280, 800), 1200, 700, 1400, 900) == Rect(1200, 700, 80, 100)


def test_gemini_grid_points_scale_to_the_display():
    assert normalized_to_display((1920, 1080), 500, 500) == (960, 540)
    assert normalized_to_display((1280, 800), 0, 0) == (0, 0)
    x, y = normalized_to_display((1280, 800), 999, 999)
    assert x == 1278.72 and y == 799.2  # still on the display


def test_fit_within_only_shrinks_and_keeps_the_aspect():
    assert fit_within((300, 150), (1280, 720)) == (300, 150)
    assert fit_within((1920, 540), (1280, 720)) == (1280, 360)


def test_a_box_the_page_measured_becomes_the_box_the_snapshot_gives():
    # Measured on a rotated button: the page's float rect, enclosed at 1/64 px.
    assert measured_to_snapshot((6.523033142089844, 121.51130676269531, 67.57893371582031, 33.977386474609375),
                                1.0) == (6.515625, 121.5, 67.59375, 34.0)
    # On the 1/64 grid already: unchanged, to the bit.
    assert measured_to_snapshot((14.96875, 126.09375, 50.6875, 24.8125), 1.0) == (14.96875, 126.09375, 50.6875,
                                                                                  24.8125)
    # At page zoom 150 % the grid is in device pixels: 1/64 device px is 1/96 CSS px.
    x, y, w, h = measured_to_snapshot((10.0, 20.0, 30.0, 40.0), 1.5)
    assert (x, y, w, h) == (10.0, 20.0, 30.0, 40.0)
    x, y, w, h = measured_to_snapshot((10.004, 20.0, 30.0, 40.0), 1.5)
    assert x == 960 / 96 and abs((x + w) - 3841 / 96) < 1e-9  # left down, right (40.004) up


def test_a_box_moves_with_its_owner():
    assert moved_with((12, 34, 50, 16), (10, 30, 100, 20), (40, 10, 100, 20)) == (42, 14, 50, 16)


def test_a_measured_edge_a_float_error_off_the_grid_stays_on_it():
    # The page's rect is single precision divided by the zoom: at 150 % and 125 % an edge
    # on the 1/64 device px grid comes back a hair below or above it.
    f32 = lambda v: struct.unpack("f", struct.pack("f", v))[0]  # noqa: E731
    # At a zoom of 1 nothing is divided: a hair below a line is below it.
    assert measured_to_snapshot((0.0, 254.78125 - 1e-6, 1.0, 1.0), 1.0)[1] == 254.765625
    for dpr in (1.5, 1.25, 1.1, 2.0):
        for units in (1, 63, 640, 12_345, 98_765, 1_234_567):
            edge = f32(units / 64 / dpr)
            x, _, w, _ = measured_to_snapshot((edge, 0.0, f32(64 / 64 / dpr), 1.0), dpr)
            assert round(x * dpr * 64, 6) == units, (dpr, units)
            assert round((x + w) * dpr * 64, 6) == units + 64, (dpr, units)


def test_a_band_of_a_box_goes_to_another_space_of_the_same_box():
    from deskbox.geometry import band_of, band_span

    # A change at display rows 640-760 over a sheet drawn at y 100-700 ...
    band = band_of((0, 100, 800, 600), (790, 640, 20, 120))
    assert band == (0.9, 0.1)
    # ... is, in the app's own box for the sheet (here 26 px higher, half the size),
    # the rows it reports at 344-374.
    assert band_span((0, 74, 400, 300), band) == (344.0, 374.0)
    assert band_of((0, 100, 800, 600), (850, 0, 100, 50)) is None  # beside, above
    assert band_of((0, 100, 0, 0), (0, 100, 10, 10)) is None


def test_a_desktop_box_made_relative_to_its_frame_is_what_window_coordinates_say():
    # Qt 5 under Xwayland: a toolbar button at (503, 224) on the X root, its frame at
    # (500, 200): 3 px in, 24 px down in the frame.
    assert frame_relative((503, 224, 32, 28), (500, 200)) == (3, 24, 32, 28)
    assert frame_relative((0, 0, 10, 10), (0, 0)) == (0, 0, 10, 10)


def test_a_replayed_point_keeps_its_place_in_a_moved_and_zoomed_box():
    from deskbox.geometry import same_spot

    # A click a quarter of the way into a button; the button moved and grew by 1.25.
    assert same_spot((125, 210), (100, 200, 100, 40), (300, 500, 125, 50)) == (331.25, 512.5)
    # A point outside the old box stays on the new box's edge, inside the element.
    assert same_spot((90, 260), (100, 200, 100, 40), (0, 0, 10, 10)) == (0.0, 10.0)


def test_gtk_menus_and_their_submenus_open_where_libreoffice_draws_them():
    # Measured in Writer at 1280x800: the menu bar's Format at (193, 0, 68, 26); its
    # popup's items report (6, 5, 329, 26) and up, relative to the popup's surface; the
    # Text item's highlight is drawn from (193, 26), and its submenu's first item from
    # (521, 26).
    format_menu = (193, 0, 68, 26)
    text_item = offset_box((6, 5, 329, 26), popup_origin(format_menu, GTK_MENU_INSET))
    assert text_item[:2] == (193, 26)
    bold_item = offset_box((6, 5, 316, 26), submenu_origin(text_item))
    assert bold_item[:2] == (521, 26)
    # With no room on the display's right, GTK opens it on the item's left (measured beside
    # the browser: Tools > AutoCorrect (1389, 183, 333, 26), its 232 px items drawn from 1156).
    autocorrect = (1389, 183, 333, 26)
    right = offset_box((6, 5, 232, 26), submenu_origin(autocorrect))
    assert offset_box(right, (submenu_flip_shift(autocorrect, 232), 0))[0] == 1156
    # VCL's own popups (a toolbar's Table drop-down) have no margin.
    assert popup_origin((40, 60, 30, 24)) == (40, 84)


def test_pixel_regions_touching_is_not_meeting_and_merging_leaves_none_overlapping():
    left, right, inside = (0, 0, 10, 10), (10, 0, 10, 10), (2, 2, 3, 3)
    assert not regions_intersect(left, right) and region_overlap(left, right) == 0
    assert regions_intersect(left, inside) and region_overlap(left, (5, 5, 10, 10)) == 25
    assert region_contains(left, inside) and not region_contains(inside, left)
    assert clip_region((-5, -5, 10, 10), (100, 50)) == (0, 0, 5, 5)
    assert clip_region((100, 0, 5, 5), (100, 50)) is None
    assert grow_region(inside, 2) == (0, 0, 7, 7)
    # A chain: a meets b, b meets c, a does not meet c; one box covers the three.
    merged = merge_regions([(0, 0, 10, 10), (30, 0, 10, 10), (8, 0, 24, 4), (0, 40, 5, 5)])
    assert merged == [(0, 0, 40, 10), (0, 40, 5, 5)]
    assert all(not regions_intersect(a, b) for i, a in enumerate(merged) for b in merged[i + 1:])


def test_a_viewport_spans_its_window_within_rounding_or_says_by_how_much_it_does_not():
    from deskbox.geometry import Rect, viewport_width_gap

    assert viewport_width_gap(Rect(0, 0, 1280, 800), 1280, 1.0) is None
    assert viewport_width_gap(Rect(0, 0, 1281, 800), 1025, 1.25) is None  # 1281.25: rounding
    assert viewport_width_gap(Rect(0, 0, 1280, 800), 640, 1.0) == -640
    assert viewport_width_gap(Rect(0, 0, 640, 800), 1280, 1.0) == 640
