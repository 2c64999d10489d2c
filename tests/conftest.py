"""Fixtures: real deskbox sessions (headless Sway + Chromium + desktopd) and a page
server whose pages report every event they receive."""

from __future__ import annotations

import pytest

from tests.support import PageServer, Session


@pytest.fixture(scope="session")
def pages() -> PageServer:
    return PageServer().start()


@pytest.fixture(scope="session")
def single():
    """One 1280x800 display at scale 1, Chromium on it."""
    session = Session(["1280x800"]).start()
    session.browser_window()
    yield session
    session.stop()


@pytest.fixture
def input_page(single, pages):
    """The input fixture page, fresh, shown in Chromium on the single-display session;
    returns its load report (element rects, devicePixelRatio, viewport size)."""
    return open_fixture(single, pages, "input.html")


def open_fixture(session: Session, pages: PageServer, page: str) -> dict:
    pages.clear()
    session.open_page(pages.url(page))
    load = pages.wait_for(type="load", page="/" + page.split("?")[0], timeout=20)
    pages.settle(0.2)
    pages.clear()
    return load
