"""The desktop's background image. Which image it is lives in the home
(``~/.config/deskbox/wallpaper`` names it), as a desktop's settings do, so a reset or a
snapshot brings the background back with the rest of the home; Sway shows it
(``output * bg``, drawn by swaybg)."""

from __future__ import annotations

from pathlib import Path
from typing import Awaitable, Callable

__all__ = ["SETTING", "current", "remember", "sway_command", "DEFAULT_COLOR", "write_default", "Background"]

SETTING = Path(".config/deskbox/wallpaper")
# Sway's own background when none is configured.
DEFAULT_COLOR = "#000000"


def current(home: Path) -> Path | None:
    """The image the home names, if it names one."""
    try:
        text = (home / SETTING).read_text().strip()
    except OSError:
        return None
    return Path(text) if text else None


def remember(home: Path, image: Path) -> Path:
    """Name ``image`` as the home's background; returns the setting file."""
    setting = home / SETTING
    setting.parent.mkdir(parents=True, exist_ok=True)
    setting.write_text(f"{image}\n")
    return setting


def sway_command(image: Path | None) -> list[str]:
    """``swaymsg`` arguments that show ``image`` (or the plain default) on every output."""
    if image is None:
        return ["output", "*", "bg", DEFAULT_COLOR, "solid_color"]
    return ["output", "*", "bg", str(image), "fill"]


def write_default(path: Path, size: tuple[int, int]) -> Path:
    """The picture of the plain default background (what ``/wallpaper`` answers before a
    task sets one: OSWorld's VM always has one)."""
    from PIL import Image

    Image.new("RGB", size, DEFAULT_COLOR).save(path, "PNG", optimize=True)
    return path


class Background:
    """What Sway shows behind the windows: the image the home names, put there by
    ``run`` (a swaymsg run as the session user, which answers its exit code or None)."""

    def __init__(self, home: Path, run: Callable[..., Awaitable[int | None]]) -> None:
        self.home = home
        self.run = run
        self.shown = False  # whether an image of the home's is shown (not Sway's own plain one)

    def forget(self) -> None:
        """A new Sway shows none yet."""
        self.shown = False

    async def apply(self) -> bool:
        """Show the background the home names; False when Sway refused it."""
        image = current(self.home)
        if image is None and not self.shown:
            return True
        code = await self.run(["swaymsg", *sway_command(image)], timeout=5)
        self.shown = image is not None and code == 0
        return code == 0
