"""Office documents the apps tests open, written as OSWorld's task files are (shared by
tests/test_apps.py and tests/container/apps.py)."""

from __future__ import annotations

import io


def pptx() -> bytes:
    """Three slides, each with a title (``Slide title N``) and a body."""
    from pptx import Presentation

    deck = Presentation()
    for n in (1, 2, 3):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide title {n}"
        slide.placeholders[1].text = f"Body of slide {n}"
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()
