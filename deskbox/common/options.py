"""Options that ``deskbox up`` and a service both take, parsed the same way in both."""

from __future__ import annotations

import os

# The scene's OCR: off; "fill", only where native apps expose nothing (a canvas, a
# video, a window without accessibility); "all", the whole screen.
OCR_MODES = ("off", "fill", "all")


def ocr_mode_from_env() -> str:
    """DESKBOX_OCR as an OCR mode: ``1`` or ``all``, ``fill``; anything else is off."""
    value = os.environ.get("DESKBOX_OCR", "").strip().lower()
    return {"1": "all", "all": "all", "fill": "fill"}.get(value, "off")
