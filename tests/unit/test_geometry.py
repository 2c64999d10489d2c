"""Coordinate transforms: pure functions, checked with numbers worked out by hand."""

from services.geometry import (
    Display,
    Rect,
    absolute_motion,
    content_box_origin,
    device_to_layout,
    device_to_region,
    device_to_root_pixel,
    display_at_layout_point,
    document_to_viewport,
    frame_document_offset,
    layout_extent,
    layout_rect_to_device,
    layout_to_device,
    offset_box,
    resize_factor,
    scaled_size,
    side_by_side,
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
