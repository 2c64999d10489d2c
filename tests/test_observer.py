"""The OS Screen Observer-compatible API (``deskbox up --observer``) against a real
session: its documented routes and shapes, driven the way its clients drive it (list the
windows, observe, read the tree, click at a bounds' centre, observe again), its v2
element actions, waits and snapshots, traces and replay, the guard rails' status, its
error shapes, and 501 for loading a scenario (a mock session loads it as it starts)."""

from __future__ import annotations

import base64
import io
import urllib.parse

import pytest
from PIL import Image

from tests.support import PageServer, Session, free_port, http, wait_until

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
def session():
    s = Session(["1280x800"], extra_args=["--observer", "--observer-port", str(free_port())])
    s.start()
    s.browser_window()
    yield s
    s.stop()


@pytest.fixture
def page(session, pages: PageServer):
    pages.clear()
    session.open_page(pages.url("toolset.html"))
    pages.wait_for(type="load", page="/toolset.html", timeout=20)
    pages.settle(0.2)
    pages.clear()
    return session


def api(session, method: str, path: str, body=None, status: int = 200, **params):
    url = session.state["observer"] + path + ("?" + urllib.parse.urlencode(params) if params else "")
    resp = http(method, url, body)
    assert resp.status == status, (path, resp.status, resp.body[:500])
    return resp.json()


def centre(bounds: dict) -> tuple[int, int]:
    return bounds["x"] + bounds["width"] // 2, bounds["y"] + bounds["height"] // 2


def test_discovery_routes(session):
    assert session.state["observer"].endswith(str(session.args[session.args.index("--observer-port") + 1]))
    health = api(session, "GET", "/api/healthz")
    assert health["ok"] and health["adapter"] == "deskbox"
    caps = api(session, "GET", "/api/capabilities")
    assert caps["protocol_version"] == 2 and caps["supports"]["accessibility_tree"] and caps["supports"]["replay"]
    monitors = api(session, "GET", "/api/monitors")["monitors"]
    assert monitors == [{"index": 0, "name": monitors[0]["name"], "primary": True, "scale_factor": 1.0,
                         "bounds": {"x": 0, "y": 0, "width": 1280, "height": 800},
                         "logical_bounds": {"x": 0, "y": 0, "width": 1280, "height": 800},
                         "physical_bounds": {"x": 0, "y": 0, "width": 1280, "height": 800}}]


def test_its_documented_workflow_works_unchanged(page, pages):
    # 1. list_windows
    listed = api(page, "GET", "/api/windows")
    assert listed["count"] >= 1 and listed["is_mock"] is False
    browser = listed["windows"][0]
    assert browser["index"] == 0 and browser["focused"] and browser["process"] == "chromium"
    assert set(browser["bounds"]) == {"x", "y", "width", "height"}
    # 2. observe_window: the sketch and the description
    sketch = api(page, "GET", "/api/sketch", window_index=0)
    assert sketch["grid_width"] == 72 and sketch["window"] == browser["title"] and "+" in sketch["sketch"]
    said = api(page, "GET", "/api/description", window_index=0)
    assert said["mode"] == "combined" and "Add item" in said["accessibility"] and said["description"]
    # 3. get_element_tree, and the bounds' centre
    tree = api(page, "GET", "/api/structure", window_index=0)
    assert tree["window"] == browser["title"] and tree["element_count"] > 5 and tree["tree"]["role"] == "window"

    def walk(node):
        yield node
        for kid in node["children"]:
            yield from walk(kid)
    add = next(n for n in walk(tree["tree"]) if n["name"] == "Add item")
    assert add["role"] == "button" and add["enabled"] and add["bounds"]["width"] > 0
    # 4. click_at
    x, y = centre(add["bounds"])
    done = api(page, "POST", "/api/action", {"action": "click_at", "x": x, "y": y})
    assert done == {"success": True, "action": "click_at", "x": x, "y": y}
    pages.wait_for(type="click", target="add")
    # ... type and key
    assert api(page, "POST", "/api/action", {"action": "key", "value": "tab"})["success"]
    # 5. the screenshot, whole and of the window
    shot = api(page, "GET", "/api/screenshot")
    assert Image.open(io.BytesIO(base64.b64decode(shot["data"]))).size == (1280, 800)
    cropped = api(page, "GET", "/api/screenshot", window_index=0)
    size = Image.open(io.BytesIO(base64.b64decode(cropped["data"]))).size
    assert size == (browser["physical_bounds"]["width"], browser["physical_bounds"]["height"])


def test_find_element_and_element_actions_answer_receipts(page, pages):
    found = api(page, "GET", "/api/find_element", selector='button[name="Hide banner"]')
    assert found["ok"] and found["element_id"].startswith("a0-") and not found["ambiguous_matches"]
    assert found["all_matches"][0]["bounds"] == found["bounds"]
    receipt = api(page, "POST", "/api/element/click", {"selector": 'button[name="Hide banner"]'})
    pages.wait_for(type="click", target="hide")
    assert receipt["ok"] and receipt["action"] == "click" and receipt["dry_run"] is False
    assert receipt["target"]["element_id"] == found["element_id"] and receipt["changed"] is True
    assert receipt["before"]["tree_hash"] != receipt["after"]["tree_hash"]
    dry = api(page, "POST", "/api/element/click", {"element_id": found["element_id"], "dry_run": True})
    assert dry["dry_run"] and dry["target"]["element_id"] == found["element_id"]

    size = api(page, "GET", "/api/find_element", selector="combobox[name=Size]")["element_id"]
    api(page, "POST", "/api/element/select", {"element_id": size, "option_name": "Medium"})
    pages.wait_for(type="change", target="size", value="Medium")
    email = api(page, "GET", "/api/find_element", selector="textbox[name=Email]")["element_id"]
    api(page, "POST", "/api/element/set_value", {"element_id": email, "value": "a@b.c"})
    pages.wait_for(type="input", target="email", value="a@b.c")
    api(page, "POST", "/api/element/clear_text", {"element_id": email})
    pages.wait_for(type="input", target="email", value="")
    add = api(page, "GET", "/api/find_element", selector='button[name="Add item"]')["element_id"]
    api(page, "POST", "/api/element/invoke", {"element_id": add})
    pages.wait_for(type="click", target="add")


def test_observe_wait_snapshots_and_asserts(page, pages):
    full = api(page, "GET", "/api/observe", window_index=0)
    assert full["format"] == "full" and full["tree"]["children"] and full["base_token"] is None
    saved = api(page, "POST", "/api/snapshot")
    add = api(page, "GET", "/api/find_element", selector='button[name="Add item"]')["element_id"]
    out = api(page, "POST", "/api/element/click_and_observe", {"element_id": add})
    assert out["observation"]["format"] == "custom"
    matched = api(page, "POST", "/api/wait_for", {"any_of": [
        {"type": "element_appears", "selector": 'text[name="Item 1"]'}], "timeout_ms": 10000})
    assert matched["ok"] and matched["matched_index"] == 0 and matched["polls"] >= 1
    diff = api(page, "GET", "/api/observe", window_index=0, since=full["tree_token"])
    assert diff["format"] == "custom" and diff["unchanged"] is False
    assert "Item 1" in [e["name"] for e in diff["changes"]["added"]]
    timeout = api(page, "POST", "/api/wait_for", {"any_of": [
        {"type": "element_appears", "selector": "button[name=Never]"}], "timeout_ms": 300}, status=408)
    assert timeout["ok"] is False and timeout["error"]["code"] == "Timeout" and timeout["polls"] >= 1
    idle = api(page, "POST", "/api/wait_idle", {"quiet_ms": 300, "timeout_ms": 10000})
    assert idle["ok"]

    kept = api(page, "GET", f"/api/snapshot/{saved['snapshot_id']}")
    assert kept["windows"] and kept["trees"]
    changes = api(page, "POST", "/api/snapshot/diff", {"a": saved["snapshot_id"], "b": "now"})
    assert changes["per_window_changes"] and changes["unchanged"] is False
    asserted = api(page, "POST", "/api/assert_state", {"predicate": [
        {"kind": "element_exists", "selector": 'text[name="Item 1"]'},
        {"kind": "value_equals", "selector": "textbox[name=Email]", "expected": "nope"}]})
    assert asserted["all_passed"] is False and [r["passed"] for r in asserted["results"]] == [True, False]
    assert api(page, "DELETE", f"/api/snapshot/{saved['snapshot_id']}")["dropped"] is True


def test_errors_come_in_the_shapes_its_clients_read(page):
    v2 = api(page, "POST", "/api/element/click", {"element_id": "a0-999999"}, status=404)
    assert v2["ok"] is False and v2["success"] is False
    assert v2["error"]["code"] == "ElementNotFound" and v2["error"]["recoverable"] is True
    assert v2["error"]["context"]["deskbox_code"] == "element_not_found"
    missing = api(page, "GET", "/api/find_element", selector="button[name=Nope]", status=404)
    assert missing["error"]["code"] == "ElementNotFound" and missing["error"]["suggested_next_tool"]
    legacy = api(page, "GET", "/api/structure", window_index=99, status=404)
    assert isinstance(legacy["error"], str) and "99" in legacy["error"]
    action = api(page, "POST", "/api/action", {"action": "click_at", "x": 5}, status=400)
    assert action["success"] is False and isinstance(action["error"], str)
    bad = api(page, "GET", "/api/find_element", selector="button[", status=400)
    assert bad["error"]["code"] == "BadRequest"
    # (schemathesis, seed 2: a window index or uid hover took but the element lookup did not was a 500)
    for body in ({"element_id": "a0-1", "window_index": 277826}, {"element_id": "a0-1", "window_uid": ""}):
        hover = api(page, "POST", "/api/hover", body, status=400)
        assert hover["error"]["code"] == "BadRequest", hover
    later = api(page, "POST", "/api/scenario/load", {"path": "x.yaml"}, status=501)
    assert later["error"]["code"] == "PlatformUnsupported" and "--mock" in later["error"]["message"]
    gone = api(page, "POST", "/api/replay/step", {"replay_id": "nope"}, status=404)
    assert gone["ok"] is False and gone["error"]["context"]["deskbox_code"] == "unknown_replay"
    metrics = http("GET", page.state["observer"] + "/api/metrics")
    assert metrics.status == 200 and "deskbox_http_requests_total" in metrics.body.decode()


class ToolTableClient:
    """OS Screen Observer's documented tool table, as a harness routes a model's function
    calls: each tool name to its REST call, nothing else (port 5001 alone)."""

    def __init__(self, base: str) -> None:
        self.base = base

    def _get(self, path: str, **params) -> dict:
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        resp = http("GET", f"{self.base}{path}{'?' + query if query else ''}")
        assert resp.status == 200, resp.body[:300]
        return resp.json()

    def _post(self, body: dict) -> dict:
        return http("POST", self.base + "/api/action", body).json()

    def call(self, name: str, arguments: dict) -> dict:
        return getattr(self, name)(**arguments)

    def list_windows(self) -> dict:
        return self._get("/api/windows")

    def observe_window(self, window_index=None) -> dict:
        sketch = self._get("/api/sketch", window_index=window_index)
        said = self._get("/api/description", window_index=window_index)
        return {"window": sketch["window"], "sketch": sketch["sketch"], "description": said["description"]}

    def get_element_tree(self, window_index=None) -> dict:
        return self._get("/api/structure", window_index=window_index)

    def get_screen_sketch(self, window_index=None) -> dict:
        return self._get("/api/sketch", window_index=window_index)

    def get_screenshot(self, window_index=None) -> dict:
        return self._get("/api/screenshot", window_index=window_index)

    def click_at(self, x: int, y: int, button: str = "left", double: bool = False) -> dict:
        return self._post({"action": "click_at", "x": x, "y": y, "button": button, "double": double})

    def type_text(self, text: str) -> dict:
        return self._post({"action": "type", "value": text})

    def press_key(self, key: str) -> dict:
        return self._post({"action": "key", "value": key})


def test_a_client_of_its_tool_table_completes_a_task_through_port_5001_alone(page, pages):
    """The task: put agent@example.org in the Email field, then add an item."""
    tools = ToolTableClient(page.state["observer"])
    windows = tools.call("list_windows", {})["windows"]
    index = next(w["index"] for w in windows if w["process"] == "chromium")
    seen = tools.call("observe_window", {"window_index": index})
    assert "textbox 'Email'" in seen["description"]

    def bounds_of(role: str, name: str) -> dict:
        tree = tools.call("get_element_tree", {"window_index": index})["tree"]
        todo = [tree]
        while todo:
            node = todo.pop()
            if node["role"] == role and node["name"] == name:
                return node["bounds"]
            todo += node["children"]
        raise AssertionError(f"no {role} {name!r} in the tree")

    def bounds_of_text(name: str) -> dict | None:
        try:
            return bounds_of("text", name)
        except AssertionError:
            return None

    assert tools.call("click_at", dict(zip("xy", centre(bounds_of("textbox", "Email")))))["success"]
    assert tools.call("press_key", {"key": "ctrl+a"})["success"]
    assert tools.call("type_text", {"text": "agent@example.org"})["success"]
    pages.wait_for(type="input", target="email", value="agent@example.org")
    assert tools.call("click_at", dict(zip("xy", centre(bounds_of("button", "Add item")))))["success"]
    pages.wait_for(type="click", target="add")
    wait_until(lambda: bounds_of_text("Item 1"), 10, what="the new item in the element tree")
    assert "'agent@example.org'" in tools.call("observe_window", {"window_index": index})["description"]
    shot = tools.call("get_screenshot", {"window_index": index})
    assert shot["format"] == "png" and base64.b64decode(shot["data"])[:4] == b"\x89PNG"
    sketch = tools.call("get_screen_sketch", {"window_index": index})
    assert sketch["sketch"].splitlines()[0].startswith("chromium window")


def test_traces_replay_and_the_guard_rails_status(page, pages):
    assert api(page, "GET", "/api/trace/status")["active_trace_id"] is None
    started = api(page, "POST", "/api/trace/start", {"label": "observer"})
    assert started["ok"] and started["trace_id"] and api(page, "GET", "/api/trace/status")["active_trace_id"]
    add = api(page, "GET", "/api/find_element", selector='Button[name="Add item"]')
    api(page, "POST", "/api/element/click", {"element_id": add["element_id"]})
    pages.wait_for(type="click", target="add")
    stopped = api(page, "POST", "/api/trace/stop")
    assert stopped["trace_id"] == started["trace_id"] and stopped["step_count"] == 1
    pages.clear()
    replay = api(page, "POST", "/api/replay/start", {"path": stopped["trace_id"], "mode": "verify"})
    assert replay["total"] == 1 and replay["label"] == "observer"
    step = api(page, "POST", "/api/replay/step", {"replay_id": replay["replay_id"]})
    assert step["finished"] and step["tool"] == "click" and step["divergence"] is None
    assert step["actual_summary"]["ok"] and step["actual_summary"]["resolved_by"] == "element"
    pages.wait_for(type="click", target="add")
    assert api(page, "POST", "/api/replay/status", {"replay_id": replay["replay_id"]})["divergences"] == []
    # Without a policy: nothing configured, nothing to confirm.
    assert api(page, "GET", "/api/budget_status")["configured"] is False
    redaction = api(page, "GET", "/api/redaction_status")
    assert redaction["enabled"] is False and redaction["applied_count"] == 0
    proposed = api(page, "POST", "/api/propose_action", {"action": "click_element",
                                                          "args": {"element_id": add["element_id"]}})
    assert proposed["needed"] is False and proposed["confirm_token"] is None
    assert proposed["would_target"]["element_id"] == add["element_id"]
