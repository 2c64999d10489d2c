"""The actor's pause before a native menu item's click (GTK drops one that comes within
half a second of the press that opened the menu): pure timing logic, with a desktop that
records when it was asked to click."""

from __future__ import annotations

import asyncio
import time

from deskbox.geometry import Rect
from deskbox.scene.act import MENU_GRACE_S, Actor, Target
from deskbox.scene.elements import Element


class Desktop:
    def __init__(self) -> None:
        self.pressed: list[float] = []

    async def pointer(self, **request) -> None:
        self.pressed.append(time.monotonic())


def element(role: str, source: str = "atspi") -> Element:
    return Element(key=(source, role), role=role, name=role, value=None, bbox=Rect(10, 10, 50, 20), display_id=0,
                   window_id="w1", source=source, states=[], actions=["click"], visibility="visible", clip=None)


def gaps(*roles: tuple[str, str]) -> list[float]:
    desktop = Desktop()
    actor = Actor(engine=None, desktop=desktop, bridge=None)  # type: ignore[arg-type]

    async def run() -> None:
        for role, source in roles:
            await actor.pointer("click", Target(element(role, source), (20.0, 20.0)))
    asyncio.run(run())
    return [b - a for a, b in zip(desktop.pressed, desktop.pressed[1:])]


def test_a_native_menu_item_is_clicked_no_sooner_than_the_grace_after_the_press_before():
    assert gaps(("menu", "atspi"), ("menuitem", "atspi"))[0] >= MENU_GRACE_S - 0.01
    assert gaps(("menu", "atspi"), ("menuitemcheckbox", "atspi"))[0] >= MENU_GRACE_S - 0.01


def test_other_elements_and_page_menus_are_clicked_at_once():
    assert gaps(("menu", "atspi"), ("button", "atspi"))[0] < 0.1
    assert gaps(("button", "cdp"), ("menuitem", "cdp"))[0] < 0.1
