"""Fixtures: real deskbox sessions (headless Sway + Chromium + desktopd) and a page
server whose pages report every event they receive."""

from __future__ import annotations

import pytest

from tests.support import PageServer, Session, fuzz_seed


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
    """The page opened fresh, once its load report was made for the window's present
    width: a page that loaded while Sway resized the window (a test before closed a
    second window or a tiled app) reports a viewport the window no longer has, and
    points placed from it land beside their element. Such a page is loaded again."""
    for _ in range(5):
        pages.clear()
        session.open_page(pages.url(page))
        load = pages.wait_for(type="load", page="/" + page.split("?")[0], timeout=20)
        pages.settle(0.2)
        pages.clear()
        width = session.browser_window()["bounds"][2]
        if "innerWidth" not in load or abs(load["innerWidth"] * load["dpr"] - width) <= max(2, load["dpr"]):
            return load
    raise AssertionError(f"{page} kept a viewport {load['innerWidth']} CSS px wide at {load['dpr']}x "
                         f"in a window {width} px wide")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--order-seed", default=None, metavar="N",
                     help="run the modules in a random order, and each module's tests in a random order, from "
                          "seed N (make flakes gives a new one each run); the seed is printed in the header")


def pytest_report_header(config: pytest.Config) -> list[str]:
    seed = config.getoption("--order-seed")
    lines = [f"fuzz seed: {fuzz_seed()} (DESKBOX_FUZZ_SEED={fuzz_seed()} draws the same cases again)"]
    if seed is not None:
        lines.append(f"test order: shuffled with --order-seed {seed}")
    return lines


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With --order-seed: modules shuffled, and tests within each module (a module's
    tests stay together, so its session is started once, as in a plain run)."""
    seed = config.getoption("--order-seed")
    if seed is None:
        return
    import random

    rng = random.Random(str(seed))
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    order = list(modules)
    rng.shuffle(order)
    items[:] = []
    for name in order:
        tests = modules[name]
        rng.shuffle(tests)
        items.extend(tests)
