"""Where deskbox's own files are, the same in a checkout and in an installed wheel:
everything a session needs (the Sway configuration, the pyautogui shims, the Kubernetes
template, the pages) is package data, found beside the code. The source tree (the
Containerfile, scripts/) is only there in a checkout: building an image needs one."""

from __future__ import annotations

from pathlib import Path

__all__ = ["PACKAGE_DIR", "IMPORT_ROOT", "SWAY_CONFIG", "SHIMS_DIR", "source_tree"]

PACKAGE_DIR = Path(__file__).resolve().parents[1]
# The folder that holds the package (the checkout, or site-packages): a child process
# started from it, or with it on PYTHONPATH, imports this same deskbox.
IMPORT_ROOT = PACKAGE_DIR.parent
SWAY_CONFIG = PACKAGE_DIR / "session" / "sway" / "config"
# Modules a program inside the session imports in place of the X11-only originals
# (``import pyautogui`` drives desktopd); first on the session's PYTHONPATH.
SHIMS_DIR = PACKAGE_DIR / "shims"


def source_tree() -> Path | None:
    """The checkout deskbox runs from, or None when it was installed from a wheel."""
    return IMPORT_ROOT if (IMPORT_ROOT / "pyproject.toml").is_file() and (IMPORT_ROOT / "Containerfile").is_file() \
        else None
