"""One HTTP client per service inside deskbox: no module opens an HTTP session of its
own to call a deskbox service, or builds a route's URL by hand, except those named here
with the reason they may."""

from __future__ import annotations

import re

from deskbox.common.paths import PACKAGE_DIR

# Who may open an aiohttp ClientSession, and why.
OPENS_SESSIONS = {
    "client.py": "the public Python client",
    "common/service_client.py": "the internal clients of desktopd and the bridge",
    "common/net.py": "requests to URLs a caller chose: no token, no cookies",
    "common/session_api.py": "deskbox up's control socket (a Unix socket, not a service)",
    "desktopd/gate.py": "desktopd asking the scene's gate; its refusals pass through with their own status",
    "scene/vlm.py": "the vision model's API, outside the session",
    "observer/inspector.py": "relays the scene's websocket stream",
    "session/readiness.py": "polls a starting child's health, any answer counting",
    "session/state.py": "Chromium's DevTools /json/list (not a deskbox service)",
    "session/children.py": "Chromium's DevTools, to close the browser as its menu does",
    "bridge/app.py": "Chromium's DevTools /json/list",
    "bridge/chromium.py": "Chromium's DevTools, while it starts",
}
# A route of a deskbox service written into a URL by hand (base + "/api/v1/...").
ROUTE_URL = re.compile(r'(\+\s*f?"/api/v1/|\}/api/v1/)')
BUILDS_ROUTE_URLS = {
    "session/children.py": "each service's health URL, for its readiness",
    "observer/inspector.py": "the scene's stream URL, relayed",
    "observer/app.py": "its own route table (the inspector's routes under its prefix)",
}


def _sources() -> dict[str, str]:
    return {str(p.relative_to(PACKAGE_DIR)): p.read_text() for p in sorted(PACKAGE_DIR.rglob("*.py"))
            if "__pycache__" not in p.parts}


def test_only_the_named_modules_open_http_sessions():
    opening = {name for name, text in _sources().items() if "ClientSession(" in text}
    assert opening - OPENS_SESSIONS.keys() == set(), "a module calls a service without its client"
    assert OPENS_SESSIONS.keys() - opening == set(), "the list names a module that no longer opens one"


def test_no_route_url_is_built_by_hand_outside_the_clients():
    building = {name for name, text in _sources().items() if ROUTE_URL.search(text)}
    assert building - BUILDS_ROUTE_URLS.keys() == set(), "a module writes a service's URL without its client"
    assert BUILDS_ROUTE_URLS.keys() - building == set(), "the list names a module that no longer does"


def test_the_osworld_server_and_the_scene_call_desktopd_through_the_one_client():
    from deskbox.common.service_client import BridgeClient, DesktopdClient
    from deskbox.osworld import base
    from deskbox.scene import sources

    assert issubclass(sources.Desktop, DesktopdClient) and sources.Bridge is BridgeClient
    assert not hasattr(base, "HTTP"), "the OSWorld server's own session to desktopd is back"
    literal = re.compile(r'f?"/(api/v1/|tabs\b|layout\b|navigate\b)')
    calls = {name for name, text in _sources().items() if name.startswith("osworld/") and literal.search(text)}
    assert calls == set(), "the OSWorld server writes a route of desktopd or the bridge itself"


def test_the_scene_reads_a_tree_in_its_own_types():
    """The typed view is built from desktopd's JSON as it answers."""
    import asyncio

    from deskbox.scene.sources import Desktop

    class Answering(Desktop):
        async def window_tree(self):
            return {"displays": [{"id": 0, "name": "HEADLESS-1", "bounds": [0, 0, 800, 600], "scale": 1.0,
                                  "size": [800, 600], "primary": True}],
                    "windows": [{"id": "7", "app_id": "foot", "pid": 3, "title": "t", "bounds": [1, 2, 30, 40],
                                 "display_id": 0, "focused": True}],
                    "focused": "7"}

    tree = asyncio.run(Answering("http://127.0.0.1:1", None).tree())
    assert tree.focused == "7" and tree.displays[0].size == (800, 600)
    assert tree.windows[0].bounds_list == [1, 2, 30, 40] and tree.windows[0].app_id == "foot"
