"""An invisible Xcursor theme for the session.

Headless Sway draws the pointer in software, so every screencopy frame would show it,
even with overlay_cursor=0. The session points Sway and its clients at a theme whose
cursors are all transparent; desktopd draws a cursor itself when a screenshot asks for
one (``cursor=1``) at the position it last moved the pointer to.
"""

from __future__ import annotations

import struct
from pathlib import Path

__all__ = ["THEME_NAME", "write_invisible_theme", "xcursor_file"]

THEME_NAME = "deskbox-invisible"

# Names clients ask for (freedesktop cursor spec, CSS names, legacy X names).
CURSOR_NAMES = """
default left_ptr arrow top_left_arrow pointer hand hand1 hand2 pointing_hand text xterm
ibeam vertical-text wait watch progress left_ptr_watch half-busy help question_arrow
whats_this crosshair cross tcross cell plus move fleur all-scroll size_all grab grabbing
openhand closedhand dnd-none dnd-move dnd-copy dnd-link copy alias link no-drop not-allowed
crossed_circle forbidden circle context-menu col-resize sb_h_double_arrow split_h
row-resize sb_v_double_arrow split_v n-resize top_side s-resize bottom_side e-resize
right_side w-resize left_side ne-resize top_right_corner nw-resize top_left_corner
se-resize bottom_right_corner sw-resize bottom_left_corner ew-resize h_double_arrow
size_hor ns-resize v_double_arrow size_ver nesw-resize fd_double_arrow size_bdiag
nwse-resize bd_double_arrow size_fdiag zoom-in zoom-out color-picker pencil X_cursor
dot_box_mask draped_box icon target center_ptr up_arrow down_arrow left_arrow right_arrow
sb_up_arrow sb_down_arrow sb_left_arrow sb_right_arrow
""".split()


def xcursor_file(size: int = 24) -> bytes:
    """One fully transparent image in the Xcursor file format."""
    chunk_type = 0xFFFD0002  # image
    header = struct.pack("<4sIII", b"Xcur", 16, 0x10000, 1)
    toc_pos = 16 + 12
    toc = struct.pack("<III", chunk_type, size, toc_pos)
    image_header = struct.pack("<IIIIIIIII", 36, chunk_type, size, 1, size, size, 0, 0, 0)
    pixels = b"\0\0\0\0" * (size * size)
    return header + toc + image_header + pixels


def write_invisible_theme(base: Path, size: int = 24) -> Path:
    """Write the theme under ``base`` (an XCURSOR_PATH entry); returns its folder."""
    theme = base / THEME_NAME
    cursors = theme / "cursors"
    cursors.mkdir(parents=True, exist_ok=True)
    (theme / "index.theme").write_text(f"[Icon Theme]\nName={THEME_NAME}\n")
    data = xcursor_file(size)
    for name in CURSOR_NAMES:
        (cursors / name).write_bytes(data)
    # Clients that name no theme (Chromium without GTK settings) load "default".
    default = base / "default"
    if not default.exists():
        default.symlink_to(THEME_NAME)
    return theme
