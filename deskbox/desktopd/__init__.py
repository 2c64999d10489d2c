"""desktopd: screenshots, pointer and keyboard input, the window tree and displays of one
desktop session, over HTTP (default 127.0.0.1:8080)."""

from .app import DesktopdConfig, create_app

__all__ = ["create_app", "DesktopdConfig"]
