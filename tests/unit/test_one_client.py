"""One HTTP client per service inside deskbox: no module opens an HTTP session of its
own to call a deskbox service, or builds a route's URL by hand, except those named here
with the reason they may."""

from __future__ import annotations

import re

from deskbox.common.paths import PACKAGE_DIR

# Who may open an aiohttp ClientSession, and why.
OPENS_SESSIONS = {
    "common/service_client.py": "the one client core, under the public client and the internal clients of "
                                "desktopd, the bridge and the scene's gate",
    "common/net.py": "requests to URLs a caller chose: no token, no cookies",
    "common/session_api.py": "deskbox up's control socket (a Unix socket, not a service)",
    "scene/vlm.py": "the vision model's API, outside the session",
    "observer/inspector.py": "relays the scene's websocket stream",
    "session/readiness.py": "polls a starting child's health, any answer counting",
    "session/state.py": "Chromium's DevTools /json/list (not a deskbox service)",
    "session/children.py": "Chromium's DevTools, to close the browser as its menu does",
    "bridge/app.py": "Chromium's DevTools /json/list",
    "bridge/chromium.py": "Chromium's DevTools, while it starts",
}
# Who calls over the standard library's urllib, and why not through the client core.
URLLIB = {
    "provider/__init__.py": "its session API is deskbox.Client's; a liveness probe, OSWorld's screenshot and a "
                            "trace streamed to disk as it arrives are not the client's",
    "shims/pyautogui/_desktopd.py": "pyautogui inside the session's `python -c`: the standard library alone, "
                                    "started in milliseconds",
    "osworld/chrome.py": "the google-chrome command inside the session: the standard library alone",
    "osworld/vscode.py": "VS Code's own health page (not a deskbox service)",
    "run/cache.py": "a task's downloads from the internet (not a deskbox service)",
}
# bench/ modules that call over urllib, and why not through deskbox.Client: OSWorld's
# server's routes (its own client is desktop-env's), or what the bench times.
OSWORLD_ROUTES = "OSWorld's server's routes (its own client is desktop-env's)"
BENCH_BY_HAND = {
    "accessibility.py": OSWORLD_ROUTES,
    "apps.py": OSWORLD_ROUTES,
    "container.py": "times desktopd's screenshot and the services' health from `podman run`: the service, bare",
    "execute.py": OSWORLD_ROUTES,
    "osworld.py": OSWORLD_ROUTES,
    "vscode.py": OSWORLD_ROUTES,
}
# bench/ modules that write a service's URL by hand: what a bench times is raw HTTP on
# purpose (it measures the service, not the client); what it does around that goes
# through deskbox.Client.
TIMES_THE_SERVICE = "times the service's own answer, bare"
BENCH_ROUTES_BY_HAND = {
    "apps.py": "times the scene's agent-turn; OSWorld's server's /health",
    "bridge.py": TIMES_THE_SERVICE,
    "container.py": "times desktopd's screenshot",
    "scene.py": TIMES_THE_SERVICE,
    "toolset.py": TIMES_THE_SERVICE,
    "trace.py": TIMES_THE_SERVICE,
    "view.py": TIMES_THE_SERVICE,
}
BENCH_ROUTE_URL = re.compile(r'(\+\s*f?"/(api/v1/|layout|tabs|navigate|health)|\}/(api/v1/|layout|tabs|navigate|health))')
# Who writes a bearer credential: the client core, the callers above that cannot use it,
# those that check one, and two that are not a deskbox service.
BEARER = {
    "common/service_client.py": "the client core",
    "provider/__init__.py": "see URLLIB",
    "shims/pyautogui/_desktopd.py": "see URLLIB",
    "osworld/chrome.py": "see URLLIB",
    "provider/credentials.py": "OSWorld's own controllers (requests), which send none of their own",
    "scene/vlm.py": "the vision model's API key (not a deskbox service)",
    "observer/inspector.py": "relays the scene's websocket stream (the core has no websockets)",
    "common/web.py": "the services' side: checks the header",
    "view/app.py": "the view's side: checks the header",
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


def test_only_the_named_modules_call_over_urllib_or_write_a_bearer_header():
    sources = _sources()
    urllib = {name for name, text in sources.items() if "urllib.request.urlopen(" in text}
    assert urllib == URLLIB.keys(), "a module calls over urllib without the client core"
    bearer = {name for name, text in sources.items() if 'f"Bearer {' in text}
    assert bearer == BEARER.keys(), "a module writes its own credential header"
    bench = PACKAGE_DIR.parent / "bench"
    by_hand = {p.name for p in bench.glob("*.py") if "urllib.request.urlopen(" in p.read_text()}
    assert by_hand - BENCH_BY_HAND.keys() == set(), "a bench module builds its requests by hand: use deskbox.Client"
    assert BENCH_BY_HAND.keys() - by_hand == set(), "the list names a bench module that no longer does"
    routes = {p.name for p in bench.glob("*.py") if BENCH_ROUTE_URL.search(p.read_text())}
    assert routes - BENCH_ROUTES_BY_HAND.keys() == set(), "a bench module writes a deskbox URL by hand: use the client"
    assert BENCH_ROUTES_BY_HAND.keys() - routes == set(), "the list names a bench module that no longer does"


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


def test_a_request_orjson_refuses_is_sent_as_python_writes_it():
    """What a service passes on from its caller (the observer a condition with an integer
    past 64 bits, or a lone surrogate) is sent, not a 500."""
    import json

    from deskbox.common.service_client import _dumps

    value = {"n": 2**70, "s": "\ud800", "f": 0.5}
    assert json.loads(_dumps(value)) == value
    assert _dumps({"a": 1}) == '{"a":1}'  # (orjson's, when it can)


def test_a_service_that_does_not_answer_is_unavailable_to_a_service_and_said_as_it_is_to_a_user():
    """Real sockets: one that refuses, one that accepts and never answers."""
    import asyncio
    import socket

    from deskbox.common.errors import ConnectError, DeadlineExceededError, UnavailableError
    from deskbox.common.service_client import ServiceClient
    from deskbox.desktopd.gate import GateClient

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    refused = socket.socket()
    refused.bind(("127.0.0.1", 0))  # (bound, not listening: connections are refused)
    quiet = f"http://127.0.0.1:{silent.getsockname()[1]}"
    closed = f"http://127.0.0.1:{refused.getsockname()[1]}"

    async def failure(client: ServiceClient) -> Exception:
        try:
            await client.request("GET", "/api/v1/gate", timeout=0.5)
        except Exception as exc:  # noqa: BLE001 - the test looks at what it is
            return exc
        finally:
            await client.close()
        raise AssertionError("it answered")

    try:
        for url in (quiet, closed):
            gate = asyncio.run(failure(GateClient(url, "secret")))
            # desktopd lets direct input through when an optional gate is down: it catches this.
            assert isinstance(gate, UnavailableError) and gate.code == "gate_unavailable", gate
            assert "this session's policy is checked there" in gate.message
        user = asyncio.run(failure(ServiceClient(quiet, None, name="scene", relays=False, public=True)))
        assert isinstance(user, DeadlineExceededError) and user.code == "client_timeout" and user.status is None
        user = asyncio.run(failure(ServiceClient(closed, None, name="scene", relays=False, public=True)))
        assert isinstance(user, ConnectError) and user.code == "unreachable" and user.status is None
    finally:
        silent.close()
        refused.close()
