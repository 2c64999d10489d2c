"""OCR with the real tesseract binary: text is read where it is shown, on rendered images
and on a real session's screenshots; a change is read again from its region alone while
the rest is kept; failures keep what was known; and every Set-of-Mark label reads back."""

from __future__ import annotations

import io
import os
import time

import pytest
from PIL import Image, ImageDraw, ImageFont

from deskbox.scene.fill import FillIn, Opaque
from deskbox.scene.frames import changed_regions, signature_of
from deskbox.scene.marks import draw_marks, layout_marks
from deskbox.scene.ocr import OcrChain, OcrError, OcrWord, TesseractProvider, _lines, _parse_tsv
from tests.conftest import open_fixture
from tests.support import css_to_device, wait_until

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

# Text drawn on a plain 1280x800 page: (text, top-left corner, px size).
PAGE = [
    ("Quarterly report", (40, 30), 28),
    ("Save changes", (40, 120), 15),
    ("Cancel", (400, 120), 15),
    ("The quick brown fox jumps over the lazy dog", (40, 300), 16),
    ("Settings", (900, 520), 14),
    ("Sign out", (900, 700), 14),
]


def render(items=PAGE, size=(1280, 800), image: Image.Image | None = None) -> tuple[Image.Image, dict[str, tuple]]:
    """``items`` drawn in dark grey on white (or on ``image``); each text's ink box."""
    image = image.copy() if image is not None else Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(image)
    boxes = {}
    for text, (x, y), px in items:
        font = ImageFont.truetype(FONT, px)
        draw.text((x, y), text, font=font, fill=(30, 30, 30))
        x0, y0, x1, y1 = draw.textbbox((x, y), text, font=font)
        boxes[text] = (x0, y0, x1 - x0, y1 - y0)
    return image, boxes


def erase(image: Image.Image, box, pad: int = 2) -> Image.Image:
    out = image.copy()
    x, y, w, h = box
    ImageDraw.Draw(out).rectangle((x - pad, y - pad, x + w + pad, y + h + pad), fill=(255, 255, 255))
    return out


def line(lines: list[OcrWord], text: str) -> OcrWord:
    found = [ln for ln in lines if ln.text == text]
    assert len(found) == 1, f"{text!r} in {[ln.text for ln in lines]}"
    return found[0]


def near(bbox, expected, tolerance: int = 3) -> bool:
    """Every edge of ``bbox`` within ``tolerance`` px of the same edge of ``expected``."""
    def edges(r):
        return r[0], r[1], r[0] + r[2], r[1] + r[3]
    return all(abs(a - b) <= tolerance for a, b in zip(edges(bbox), edges(expected)))


def overlap(a, b) -> bool:
    return min(a[0] + a[2], b[0] + b[2]) > max(a[0], b[0]) and min(a[1] + a[3], b[1] + b[3]) > max(a[1], b[1])


class CountingTesseract(TesseractProvider):
    """The real provider, counting its tesseract runs and the pixels it sent."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.runs: list[tuple[int, int]] = []

    def _run(self, sheet):
        self.runs.append(sheet.size)
        return super()._run(sheet)


# -- rendered images -------------------------------------------------------------------


def test_tesseract_is_installed_and_the_default_chain_uses_it():
    assert TesseractProvider().available()
    chain = OcrChain.default(enabled=True)
    assert chain.enabled and [p.name for p in chain.providers] == ["tesseract"]
    assert not OcrChain.default(enabled=False).enabled


def test_each_text_is_one_line_with_its_box_in_frame_pixels():
    image, boxes = render()
    lines = TesseractProvider().recognize(image)
    for text, box in boxes.items():
        got = line(lines, text)
        assert near(got.bbox, box), (text, got.bbox, box)
        assert 0.5 < got.conf <= 1
    # Reading order: top to bottom, left to right on a row.
    texts = [ln.text for ln in lines]
    assert texts.index("Save changes") < texts.index("Cancel") < texts.index("Settings")


def test_a_region_is_read_in_full_frame_coordinates():
    image, boxes = render()
    lines = TesseractProvider().recognize(image, (860, 480, 300, 300))
    assert [ln.text for ln in lines] == ["Settings", "Sign out"]
    assert near(line(lines, "Sign out").bbox, boxes["Sign out"])


def test_a_changed_region_is_read_again_and_everything_else_is_kept_as_it_was():
    provider = CountingTesseract()
    chain = OcrChain([provider])
    before, boxes = render()
    first = chain.update(0, before, [(0, 0, 1280, 800)])
    assert {ln.text for ln in first} == set(boxes)
    after, new_boxes = render([("Log out now", (900, 700), 14)], image=erase(before, boxes["Sign out"]))
    changed = changed_regions(signature_of(before), signature_of(after))
    assert changed and sum(w * h for *_, w, h in changed) <= 4 * 64 * 64
    lines = chain.update(0, after, changed)
    assert {ln.text for ln in lines} == set(boxes) - {"Sign out"} | {"Log out now"}
    assert near(line(lines, "Log out now").bbox, new_boxes["Log out now"])
    # Untouched lines are the very objects read before: ids keyed on them stay.
    for text in boxes.keys() - {"Sign out"}:
        assert line(lines, text) is line(first, text)
    # The second run read a small region, not the frame.
    assert len(provider.runs) == 2 and provider.runs[1][0] * provider.runs[1][1] < 200 * 200
    assert chain.update(0, after, []) == lines
    assert len(provider.runs) == 2


def test_several_changed_regions_are_read_in_one_tesseract_run():
    provider = CountingTesseract()
    chain = OcrChain([provider])
    before, boxes = render()
    chain.update(0, before, [(0, 0, 1280, 800)])
    added = [("Alpha", (1000, 40), 15), ("Bravo", (600, 420), 15), ("Charlie", (80, 640), 15)]
    after, new_boxes = render(added, image=before)
    lines = chain.update(0, after, changed_regions(signature_of(before), signature_of(after)))
    assert len(provider.runs) == 2
    for text, box in new_boxes.items():
        assert near(line(lines, text).bbox, box)
    assert {ln.text for ln in lines} == set(boxes) | set(new_boxes)


def test_a_line_with_one_changed_word_is_read_again_whole():
    chain = OcrChain([TesseractProvider()])
    before, boxes = render()
    first = chain.update(0, before, [(0, 0, 1280, 800)])
    assert line(first, "The quick brown fox jumps over the lazy dog")
    # "fox" becomes "cat": only the tiles under that word change.
    font = ImageFont.truetype(FONT, 16)
    x = 40 + ImageDraw.Draw(before).textlength("The quick brown ", font=font)
    fox = ImageDraw.Draw(before).textbbox((x, 300), "fox", font=font)
    after = erase(before, (fox[0], fox[1], fox[2] - fox[0], fox[3] - fox[1]), pad=1)
    ImageDraw.Draw(after).text((x, 300), "cat", font=font, fill=(30, 30, 30))
    changed = changed_regions(signature_of(before), signature_of(after))
    assert all(w <= 128 for _, _, w, _ in changed)
    lines = chain.update(0, after, changed)
    assert line(lines, "The quick brown cat jumps over the lazy dog")
    assert not [ln for ln in lines if "fox" in ln.text or ln.text in ("The quick brown", "jumps over the lazy dog")]


def test_a_failed_read_keeps_the_previous_lines_and_is_tried_again_next_time():
    provider = TesseractProvider()
    chain = OcrChain([provider])
    before, boxes = render()
    first = chain.update(0, before, [(0, 0, 1280, 800)])
    after, _ = render([("Offline mode", (600, 600), 15)], image=before)
    changed = changed_regions(signature_of(before), signature_of(after))
    provider.timeout = 0.0001  # the real binary, killed before it can answer
    assert chain.update(0, after, changed) == first
    provider.timeout = 60
    # Nothing changed since, but the region that failed is read now.
    lines = chain.update(0, after, [])
    assert line(lines, "Offline mode")
    assert len(lines) == len(first) + 1


def test_a_fill_in_part_whose_read_failed_is_read_on_the_next_call_though_nothing_changed_since():
    """``--ocr fill``: a part whose pixels changed, read when OCR failed, is not kept
    with its old text once the change is past."""
    provider = TesseractProvider()
    fill = FillIn(OcrChain([provider]))
    part = Opaque(0, "w1", (100, 100, 900, 500))
    blank = Image.new("RGB", (1280, 800), "white")
    assert fill.update([part], lambda _: blank, {}) == []
    shown, _ = render([("Video frame 42", (300, 300), 28)], image=blank)
    provider.timeout = 0.0001  # the real binary, killed before it can answer
    with pytest.raises(OcrError):
        fill.update([part], lambda _: shown, {0: changed_regions(signature_of(blank), signature_of(shown))})
    provider.timeout = 60
    assert [w.text for _, w in fill.update([part], lambda _: shown, {})] == ["Video frame 42"]


def test_a_failing_provider_hands_over_to_the_next_one():
    broken = TesseractProvider(timeout=0.0001)
    chain = OcrChain([broken, TesseractProvider()])
    image, boxes = render()
    assert {ln.text for ln in chain.update(0, image, [])} == set(boxes)


def test_a_missing_tesseract_is_unavailable_and_the_chain_reads_nothing_without_raising():
    missing = TesseractProvider(binary="/nonexistent/tesseract")
    assert not missing.available()
    assert not TesseractProvider(lang="qqq").available()
    chain = OcrChain([missing])
    assert not chain.enabled
    image, _ = render()
    assert chain.update(0, image, [(0, 0, 1280, 800)]) == []
    assert OcrChain().update(0, image, [(0, 0, 1280, 800)]) == []


def test_a_display_of_another_size_is_read_afresh():
    chain = OcrChain([TesseractProvider()])
    image, boxes = render()
    chain.update(0, image, [])
    small, small_boxes = render([("Resized", (20, 20), 15)], size=(400, 300))
    assert [ln.text for ln in chain.update(0, small, [])] == ["Resized"]
    # Displays are separate.
    assert {ln.text for ln in chain.current(1)} == set()
    chain.forget(0)
    assert chain.current(0) == []


def test_tesseract_leaves_no_file_behind(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("TMPDIR", str(scratch))
    image, boxes = render()
    assert TesseractProvider().recognize(image)
    assert TesseractProvider().recognize_regions(image, [(0, 0, 400, 200), (860, 480, 300, 300)])
    assert os.listdir(work) == [] and os.listdir(scratch) == []


def test_tsv_words_become_lines_split_between_controls():
    # Tesseract's TSV for one text line: "Button 12 | Link 13" and a far "Text 15",
    # then a line of border junk.
    rows = [
        "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext",
        "5\t1\t1\t1\t1\t1\t112\t46\t86\t20\t96.0\tButton",
        "5\t1\t1\t1\t1\t2\t211\t46\t29\t20\t96.8\t12",
        "5\t1\t1\t1\t1\t3\t254\t38\t4\t38\t94.9\t|",
        "5\t1\t1\t1\t1\t4\t266\t40\t50\t20\t94.8\t|Link",
        "5\t1\t1\t1\t1\t5\t326\t40\t24\t20\t90.0\t13]",
        "5\t1\t1\t1\t1\t6\t420\t40\t40\t20\t93.0\tText",
        "5\t1\t1\t1\t1\t7\t470\t40\t24\t20\t12.0\t1k>",
        "5\t1\t2\t1\t1\t1\t10\t100\t4\t30\t80.0\t[",
        "5\t1\t2\t1\t1\t2\t20\t100\t30\t30\t85.0\t—",
        "5\t1\t3\t1\t1\t1\t10\t200\t60\t20\t91.0\t(optional)",
        "4\t1\t3\t1\t1\t0\t10\t200\t60\t20\t-1\t",
    ]
    lines = _lines(_parse_tsv("\n".join(rows)), 0.3)
    assert [(ln.text, ln.bbox) for ln in lines] == [
        ("Button 12", (112, 46, 128, 20)),
        ("Link 13", (266, 40, 84, 20)),
        ("Text", (420, 40, 40, 20)),
        ("(optional)", (10, 200, 60, 20)),
    ]
    assert lines[0].conf == pytest.approx(0.964)


def test_every_set_of_mark_label_reads_back():
    size = (1280, 800)
    marks = []
    for y in range(40, size[1] - 40, 46):
        for x in range(30, size[0] - 100, 130):
            marks.append((f"a0-{len(marks)}", (x, y, 110, 30)))
    image = draw_marks(Image.new("RGB", size, (250, 250, 250)), marks)
    lines = TesseractProvider().recognize(image)
    for m in layout_marks(size, marks):
        assert [ln for ln in lines if m.label in ln.text.split() and overlap(ln.bbox, m.label_box)], m.label


# -- a real session --------------------------------------------------------------------


def screenshot(session) -> Image.Image:
    """The display once it holds still: two screenshots in a row with equal signatures."""
    def take() -> Image.Image:
        resp = session.get("/api/v1/screenshot")
        assert resp.status == 200
        return Image.open(io.BytesIO(resp.body)).convert("RGB")

    previous = take()
    for _ in range(50):
        time.sleep(0.1)
        image = take()
        if signature_of(image) == signature_of(previous):
            return image
        previous = image
    raise AssertionError("the screen kept changing for 5 s")


def device_rect(session, load: dict, element: str) -> tuple[float, float, float, float]:
    r = load["rects"][element]
    window = session.browser_window()
    x0, y0 = css_to_device(window, load, r["x"], r["y"])
    x1, y1 = css_to_device(window, load, r["x"] + r["w"], r["y"] + r["h"])
    return x0, y0, x1 - x0, y1 - y0


def centre_in(bbox, rect) -> bool:
    cx, cy = bbox[0] + bbox[2] / 2, bbox[1] + bbox[3] / 2
    return rect[0] <= cx <= rect[0] + rect[2] and rect[1] <= cy <= rect[1] + rect[3]


@pytest.mark.desktop
def test_text_on_a_real_screenshot_is_read_where_the_page_shows_it(single, pages):
    load = open_fixture(single, pages, "input.html")
    image = screenshot(single)
    lines = OcrChain([TesseractProvider()]).update(0, image, [])
    assert centre_in(line(lines, "Submit").bbox, device_rect(single, load, "submit"))
    # Chromium's own tab strip is read too, above the page.
    title = line(lines, "deskbox input fixture")
    assert title.bbox[1] + title.bbox[3] < device_rect(single, load, "submit")[1]


@pytest.mark.desktop
def test_typed_text_is_read_from_the_changed_region_alone(single, pages):
    load = open_fixture(single, pages, "input.html")
    field = device_rect(single, load, "text")
    provider = CountingTesseract()
    chain = OcrChain([provider])
    before = screenshot(single)
    first = chain.update(0, before, [])
    single.pointer(action="click", x=int(field[0] + 20), y=int(field[1] + field[3] / 2))
    single.keyboard(action="type", text="hello scene")
    pages.wait_for(type="input", value="hello scene")
    # The page has the text before the compositor has its frame (under load, "hello"
    # alone was once on screen), and the blinking caret drawn against "scene" reads as
    # "scene}" below the confidence floor: use a frame whose field, read on its own,
    # shows it all.
    x, y, w, h = (round(v) for v in field)
    frames = []

    def typed_frame() -> bool:
        frames.append(screenshot(single))
        reading = OcrChain([TesseractProvider()]).update(0, frames[-1].crop((x, y, x + w, y + h)), [])
        return "hello scene" in [ln.text for ln in reading]

    wait_until(typed_frame, 10, 0.2, what="the typed text on screen")
    after = frames[-1]
    changed = changed_regions(signature_of(before), signature_of(after))
    assert changed and sum(w * h for *_, w, h in changed) < 0.25 * after.width * after.height
    lines = chain.update(0, after, changed)
    assert centre_in(line(lines, "hello scene").bbox, field)
    assert line(lines, "Submit") is line(first, "Submit")
    assert len(provider.runs) == 2
