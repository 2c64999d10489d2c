"""Set-of-Mark drawing: every mark gets a label, labels never pile on each other, stay in
the image, sit by their box, and neighbours differ in colour. (That Tesseract reads every
label back is in tests/test_ocr.py.)"""

from __future__ import annotations

from itertools import combinations

from PIL import Image

from deskbox.geometry import grow_region, region_union
from deskbox.scene import marks
from deskbox.scene.marks import PALETTE, draw_marks, font_size_for, layout_marks


def overlap(a, b) -> bool:
    return min(a[0] + a[2], b[0] + b[2]) > max(a[0], b[0]) and min(a[1] + a[3], b[1] + b[3]) > max(a[1], b[1])


def inside(r, size) -> bool:
    return r[0] >= 0 and r[1] >= 0 and r[0] + r[2] <= size[0] and r[1] + r[3] <= size[1]


def grid(size, cell_w, cell_h, box_w, box_h, x0=0, y0=0) -> list[tuple[str, tuple[int, int, int, int]]]:
    out = []
    for y in range(y0, size[1] - box_h + 1, cell_h):
        for x in range(x0, size[0] - box_w + 1, cell_w):
            out.append((f"a0-{len(out)}", (x, y, box_w, box_h)))
    return out


def assert_apart_and_inside(laid, size):
    for m in laid:
        assert inside(m.label_box, size), m
    for a, b in combinations(laid, 2):
        assert not overlap(a.label_box, b.label_box), (a.label, a.label_box, b.label, b.label_box)


def test_labels_on_a_crowded_grid_never_overlap_and_stay_in_the_image():
    size = (1280, 800)
    # 340 boxes of 60 x 18 px, 6 px apart: each label is wider than its box.
    crowd = grid(size, 66, 21, 60, 18, y0=90)[:340]
    laid = layout_marks(size, crowd)
    assert [m.label for m in laid] == [label for label, _ in crowd]
    assert [m.box for m in laid] == [box for _, box in crowd]
    assert_apart_and_inside(laid, size)


def test_labels_of_boxes_packed_edge_to_edge_never_overlap():
    size = (1920, 1080)
    crowd = grid(size, 100, 40, 100, 40)
    laid = layout_marks(size, crowd)
    assert len(laid) == len(crowd) == 19 * 27
    assert_apart_and_inside(laid, size)


def test_a_label_sits_just_above_the_top_left_corner_of_its_box_when_that_is_free():
    (m,) = layout_marks((1280, 800), [("a0-12", (300, 200, 120, 40))])
    x, y, w, h = m.label_box
    assert (x, y + h) == (300, 200)


def test_a_box_at_the_top_of_the_image_gets_its_label_inside_the_image_by_the_box():
    size = (1280, 800)
    (m,) = layout_marks(size, [("a0-1", (10, 0, 200, 30))])
    assert inside(m.label_box, size)
    assert overlap(m.label_box, (10, 0, 200, 30))


def test_boxes_reaching_off_the_image_get_labels_on_the_visible_part():
    size = (800, 600)
    laid = layout_marks(size, [("a0-1", (-50, -20, 120, 60)), ("a0-2", (700, 550, 300, 300)),
                               ("a0-3", (-500, 100, 400, 40))])
    for m in laid:
        assert inside(m.label_box, size)
    # A box entirely off the image still gets its label, at the nearest edge.
    assert laid[2].label_box[0] == 0


def test_no_label_is_dropped_even_when_they_cannot_all_fit():
    size = (200, 100)
    crowd = [(f"a0-{i}", (i % 10 * 20, i // 10 * 10, 20, 10)) for i in range(100)]
    laid = layout_marks(size, crowd)
    assert len(laid) == 100
    for m in laid:
        assert inside(m.label_box, size)


def test_a_label_that_was_moved_away_from_its_box_gets_a_leader_line():
    assert marks._leader((100, 100, 50, 20), (300, 300, 40, 20)) is not None
    assert marks._leader((100, 100, 50, 20), (100, 80, 40, 20)) is None


def test_neighbouring_marks_have_different_colours():
    size = (1280, 800)
    laid = layout_marks(size, grid(size, 130, 46, 110, 30, x0=30, y0=40))
    height = laid[0].label_box[3]
    for a, b in combinations(laid, 2):
        near_a = grow_region(region_union(a.box, a.label_box), height)
        if overlap(near_a, region_union(b.box, b.label_box)):
            assert a.colour != b.colour, (a.label, b.label)
    assert len({m.colour for m in laid}) == len(PALETTE)


def test_every_label_colour_contrasts_strongly_with_its_text():
    def luminance(c):
        def ch(v):
            v /= 255
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        return 0.2126 * ch(c[0]) + 0.7152 * ch(c[1]) + 0.0722 * ch(c[2])

    for colour in PALETTE:
        text = marks._text_colour(colour)
        hi, lo = sorted((luminance(colour), luminance(text)), reverse=True)
        assert (hi + 0.05) / (lo + 0.05) >= 7, colour  # WCAG AAA


def test_label_size_follows_the_image_with_a_legible_floor():
    assert font_size_for((1024, 768)) == 16
    assert font_size_for((1280, 800)) == 16
    assert font_size_for((1920, 1080)) == 18
    assert font_size_for((2560, 1600)) == 27


def test_draw_marks_paints_outlines_and_labels_on_a_copy():
    image = Image.new("RGB", (640, 480), (255, 255, 255))
    given = [("a0-1", (100, 100, 200, 60)), ("a0-2", (100, 200, 200, 60))]
    out = draw_marks(image, given)
    assert out is not image and out.size == image.size
    assert image.getextrema() == ((255, 255), (255, 255), (255, 255))  # the original is untouched
    laid = layout_marks(image.size, given)
    for m in laid:
        x, y, w, h = m.label_box
        assert out.getpixel((x + 1, y + 1)) == m.colour  # label background
        assert out.getpixel((x, y)) == m.outline  # its border
        bx, by, bw, bh = m.box
        assert out.getpixel((bx + bw - 1, by + bh // 2)) == m.outline  # the box's right edge
        # The label's text is drawn in its text colour.
        crop = out.crop((x, y, x + w, y + h))
        assert m.text_colour in {c for _, c in crop.getcolors(w * h)}


def test_draw_marks_accepts_other_image_modes_and_no_marks():
    rgba = Image.new("RGBA", (300, 200), (10, 20, 30, 255))
    assert draw_marks(rgba, []).mode == "RGB"
    assert draw_marks(rgba, [("a0-1", (10, 40, 50, 20))]).size == (300, 200)


def test_without_dejavu_the_default_font_is_used(monkeypatch):
    monkeypatch.setattr(marks, "FONT_PATH", "/nonexistent/DejaVuSans-Bold.ttf")
    marks._font.cache_clear()
    try:
        out = draw_marks(Image.new("RGB", (400, 300), "white"), [("a0-7", (50, 80, 100, 40))])
        assert out.getpixel((60, 70)) != (255, 255, 255)
    finally:
        marks._font.cache_clear()
