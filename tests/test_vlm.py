"""Describing a window with a vision model, against a real session: ``deskbox up
--vlm-url`` at a chat-completions endpoint served by the test (it records what it was
sent and answers as told), the scene's ``/api/v1/description?vlm=1``, OS Screen
Observer's ``/api/description?mode=...``, the model's token budget, the endpoint's
failures, and a scene without a model, which sends nothing anywhere.

One session runs with the model; the scenes without one (or with a budget of their own,
or an endpoint that is not there) run in this process against that session's desktopd
and bridge, each in a thread of its own."""

from __future__ import annotations

import asyncio
import base64
import io
import threading
import urllib.parse
from typing import Any, Callable

import pytest
from aiohttp import web
from PIL import Image

from deskbox import AsyncClient, Client, answers
from deskbox.aggregator.app import SceneConfig
from deskbox.aggregator.app import create_app as create_scene
from deskbox.mcp import tools
from deskbox.observer.app import ObserverConfig
from deskbox.observer.app import create_app as create_observer
from deskbox.policy import Policy
from tests.conftest import open_fixture
from tests.support import Session, free_port, http

pytestmark = pytest.mark.desktop

KEY = "sk-test-4f9c2e"  # what DESKBOX_VLM_KEY holds; it must reach the endpoint and nothing else
MODEL = "test-vision"
SAID = "A to-do page: Add item adds a row; Email is empty."


class Served:
    """An aiohttp app on a loopback port, served by an event loop in a thread of its own
    (so that the synchronous tests and the session can call it)."""

    def __init__(self, make_app: Callable[[], web.Application]) -> None:
        self.port = free_port()
        self._make_app = make_app
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        runner = web.AppRunner(self._make_app(), access_log=None)
        try:
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", self.port).start()
        except BaseException as exc:
            self._failed = exc
            self._ready.set()
            raise
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()

    def __enter__(self) -> "Served":
        self._thread.start()
        assert self._ready.wait(20), "the app did not start within 20 s"
        if self._failed is not None:
            raise self._failed
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(20)


class FakeModel:
    """An OpenAI-compatible chat-completions endpoint: it keeps every request it gets
    (headers and JSON) and answers ``SAID`` with ``tokens`` used, or what it is told to."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reset()

    def reset(self) -> None:
        self.requests.clear()
        self.tokens: int | None = 42
        self.status = 200
        self.body: bytes | None = None  # instead of a chat completion

    def app(self) -> web.Application:
        async def completions(request: web.Request) -> web.Response:
            self.requests.append({"headers": dict(request.headers), "json": await request.json(),
                                  "path": request.path})
            if self.body is not None:
                return web.Response(status=self.status, body=self.body, content_type="application/json")
            answer: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion", "model": MODEL,
                                      "choices": [{"index": 0, "finish_reason": "stop",
                                                   "message": {"role": "assistant", "content": SAID}}]}
            if self.tokens is not None:
                answer["usage"] = {"prompt_tokens": self.tokens - 10, "completion_tokens": 10,
                                   "total_tokens": self.tokens}
            return web.json_response(answer, status=self.status)

        app = web.Application(client_max_size=32 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", completions)
        return app


@pytest.fixture(scope="module")
def served_model():
    fake = FakeModel()
    with Served(fake.app) as served:
        fake.url = served.url
        yield fake


@pytest.fixture
def model(served_model):
    served_model.reset()
    return served_model


@pytest.fixture(scope="module")
def session(served_model):
    s = Session(["1280x800"], extra_env={"DESKBOX_VLM_KEY": KEY}, extra_args=[
        "--observer", "--observer-port", str(free_port()), "--vlm-url", served_model.url + "/v1",
        "--vlm-model", MODEL, "--max-vlm-tokens", "1000000"])
    s.start()
    s.browser_window()
    yield s
    s.stop()


@pytest.fixture
def page(session, pages):
    open_fixture(session, pages, "toolset.html")
    return session


def get(base: str, path: str, status: int = 200, **params: Any) -> dict:
    resp = http("GET", base + path + ("?" + urllib.parse.urlencode(params) if params else ""), timeout=120)
    assert resp.status == status, (path, params, resp.status, resp.body[:600])
    return resp.json()


def focused_window(base: str) -> dict:
    return get(base, "/api/v1/scene")["focused_window"]


def local_scene(session: Session, **config: Any) -> Served:
    """A scene aggregator of the session's desktopd and bridge, in this process."""
    return Served(lambda: create_scene(SceneConfig(desktopd=session.desktopd, bridge=session.bridge, atspi=False,
                                                   watch=False, **config)))


def local_observer(session: Session, scene: str) -> Served:
    return Served(lambda: create_observer(ObserverConfig(scene=scene, desktopd=session.desktopd,
                                                         bridge=session.bridge)))


# -- with a model ------------------------------------------------------------------------


def test_the_scenes_description_with_vlm_adds_the_models_text_and_tokens(page, model):
    plain = get(page.scene, "/api/v1/description")
    assert set(plain) == {"text", "scene_seq"}, "without vlm=1 the answer is as it was"
    assert not model.requests, "nothing is sent to the model unless asked"
    said = get(page.scene, "/api/v1/description", vlm=1)
    assert said["vlm"] == SAID and said["vlm_tokens"] == 42 and said["vlm_model"] == MODEL
    assert "Add item" in said["text"]
    assert len(model.requests) == 1


def test_the_model_is_sent_the_windows_picture_its_sketch_and_title_with_the_key(page, model):
    window = focused_window(page.scene)
    get(page.scene, "/api/v1/description", vlm=1, window=window["id"])
    sent = model.requests[-1]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == f"Bearer {KEY}"
    body = sent["json"]
    assert body["model"] == MODEL
    parts = body["messages"][-1]["content"]
    text = next(p["text"] for p in parts if p["type"] == "text")
    url = next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
    assert url.startswith("data:image/png;base64,")
    picture = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    x, y, w, h = window["bounds"]
    assert picture.format == "PNG" and picture.size == (min(w, 1280 - x), min(h, 800 - y)), (picture.size, window)
    drawn = get(page.scene, "/api/v1/sketch", window=window["id"])["sketch"]
    assert window["title"] in text
    assert drawn.splitlines()[0] in text and drawn.splitlines()[1] in text  # its title line and top edge
    add = next(e for e in get(page.scene, "/api/v1/find", selector='button[name="Add item"]')["matches"])
    assert f"{add['id']} button Add item" in text, text


def test_without_usage_the_tokens_are_estimated(page, model):
    model.tokens = None
    said = get(page.scene, "/api/v1/description", vlm=1)
    # At least the picture: 85 tokens and 170 per 512-pixel tile.
    assert said["vlm"] == SAID and said["vlm_tokens"] > 85 + 170, said["vlm_tokens"]


def test_the_client_answers_the_text_alone_or_with_vlm_the_whole_answer(page, model):
    with Client(page.scene, page.desktopd, page.bridge) as desk:
        plain = desk.description()
        said = desk.description(vlm=True)
    assert isinstance(plain, str) and "Add item" in plain
    assert isinstance(said, answers.Description) and answers.undeclared(said) == []
    assert said.vlm == SAID and said.vlm_tokens == 42 and said.vlm_model == MODEL and said.text
    assert len(model.requests) == 1


async def test_mcps_describe_asks_the_model_with_vlm_true(page, model):
    async with AsyncClient(page.scene, page.desktopd, page.bridge) as desk:
        plain = await tools.call(desk, "describe", {})
        asked = await tools.call(desk, "describe", {"vlm": True})
    assert not plain.is_error and "vision model" not in plain.content[0].text
    assert not asked.is_error, asked.content
    assert asked.content[0].text.endswith(f"The vision model ({MODEL}, 42 tokens) says:\n{SAID}")
    assert asked.structured_content["vlm"] == SAID and len(model.requests) == 1


def test_the_health_says_which_model_and_never_the_key_or_where(session):
    resp = http("GET", session.scene + "/api/v1/health")
    assert resp.json()["vlm"] == {"configured": True, "model": MODEL}
    assert KEY.encode() not in resp.body and str(session.args[session.args.index("--vlm-url") + 1]).encode() \
        not in resp.body


def test_the_key_is_the_scenes_alone_and_never_on_a_command_line(session):
    pids = session.state["pids"]
    for name, pid in pids.items():
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            assert KEY.encode() not in f.read(), name
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read().split(b"\0")
        assert (f"DESKBOX_VLM_KEY={KEY}".encode() in environ) == (name == "scene"), name


def test_the_observers_description_asks_the_model_unless_its_mode_says_not_to(page, model):
    observer = page.state["observer"]
    caps = get(observer, "/api/capabilities")
    assert caps["supports"]["vlm"] is True
    asked = get(observer, "/api/description", mode="vlm", window_index=0)
    assert asked["vlm"] == SAID and asked["mode"] == asked["effective_mode"] == "combined"
    assert "Add item" in asked["accessibility"] and asked["description"] == asked["accessibility"]
    combined = get(observer, "/api/description", window_index=0)
    assert combined["vlm"] == SAID and combined["vlm_tokens"] == 42
    sent = len(model.requests)
    for mode in ("accessibility", "ocr"):
        plain = get(observer, "/api/description", mode=mode, window_index=0)
        assert "vlm" not in plain and "Add item" in plain["accessibility"]
    assert len(model.requests) == sent, "accessibility and ocr do not call the model"
    wrong = get(observer, "/api/description", 400, mode="pixels")
    assert isinstance(wrong["error"], str) and wrong["code"] == "BadRequest"


def test_the_observers_budget_status_reports_the_models_tokens(page, model):
    get(page.scene, "/api/v1/description", vlm=1)
    status = get(page.state["observer"], "/api/budget_status")
    tokens = get(page.scene, "/api/v1/policy")["budget_status"]["max_vlm_tokens"]
    assert status["configured"] and status["vlm_tokens"] == tokens
    assert tokens["limit"] == 1_000_000 and tokens["used"] >= 42 and tokens["remaining"] == 1_000_000 - tokens["used"]


@pytest.mark.parametrize("status, body, said", [
    (500, b'{"error": {"message": "the model is overloaded", "type": "server_error"}}',
     "answered HTTP 500: the model is overloaded"),
    (200, b"<html>not json</html>", "not JSON"),
    (200, b'{"choices": []}', "answered no text"),
])
def test_a_failing_endpoint_answers_503_vlm_unavailable_saying_what_it_said(page, model, status, body, said):
    model.status, model.body = status, body
    error = get(page.scene, "/api/v1/description", 503, vlm=1)["error"]
    assert error["code"] == "vlm_unavailable" and said in error["message"] and MODEL in error["message"], error
    # Combined on the Observer keeps the accessibility description and says what failed;
    # mode=vlm answers the failure, in the shape of its v1 routes.
    observer = page.state["observer"]
    combined = get(observer, "/api/description", window_index=0)
    assert combined["vlm"] is None and combined["vlm_error"]["code"] == "vlm_unavailable"
    assert "Add item" in combined["accessibility"]
    failed = get(observer, "/api/description", 503, mode="vlm", window_index=0)
    assert said in failed["error"] and failed["context"]["deskbox_code"] == "vlm_unavailable"


def test_an_endpoint_that_is_not_listening_answers_503_vlm_unavailable(page):
    nowhere = f"http://127.0.0.1:{free_port()}/v1"
    with local_scene(page, vlm_url=nowhere, vlm_model=MODEL) as scene:
        error = get(scene.url, "/api/v1/description", 503, vlm=1)["error"]
    assert error["code"] == "vlm_unavailable" and "could not be reached" in error["message"], error
    assert nowhere not in error["message"] and error["recoverable"] is True


def test_the_budget_refuses_the_model_once_its_tokens_are_used(page, model):
    model.tokens = 30
    policy = Policy.parse({"budgets": {"max_vlm_tokens": 50}})
    with local_scene(page, vlm_url=model.url + "/v1/chat/completions", vlm_model=MODEL, policy=policy) as scene, \
            local_observer(page, scene.url) as observer:
        for _ in range(2):  # 30 used, then 60: the second call was allowed at 30 of 50
            assert get(scene.url, "/api/v1/description", vlm=1)["vlm_tokens"] == 30
        sent = len(model.requests)
        error = get(scene.url, "/api/v1/description", 429, vlm=1)["error"]
        assert error["code"] == "budget_exceeded" and error["context"] == {
            "budget": "max_vlm_tokens", "limit": 50, "used": 60}
        assert len(model.requests) == sent, "a refused call is not sent"
        assert get(observer.url, "/api/budget_status")["vlm_tokens"] == {"limit": 50, "used": 60, "remaining": 0}
        failed = get(observer.url, "/api/description", 429, mode="vlm", window_index=0)
        assert failed["code"] == "BudgetExceeded" and "max_vlm_tokens" in failed["error"]
        # The accessibility description costs nothing and goes on.
        assert "Add item" in get(observer.url, "/api/description", mode="accessibility")["accessibility"]


# -- without a model ---------------------------------------------------------------------


def test_without_a_model_vlm_is_409_and_the_plain_description_is_unchanged(page, model):
    with local_scene(page) as scene, local_observer(page, scene.url) as observer:
        assert get(scene.url, "/api/v1/health")["vlm"] == {"configured": False, "model": None}
        error = get(scene.url, "/api/v1/description", 409, vlm=1)["error"]
        assert error["code"] == "vlm_not_configured" and "--vlm-url URL --vlm-model NAME" in error["message"]
        assert "DESKBOX_VLM_KEY" in error["message"]
        assert set(get(scene.url, "/api/v1/description")) == {"text", "scene_seq"}
        assert get(observer.url, "/api/capabilities")["supports"]["vlm"] is False
        legacy = get(observer.url, "/api/description", 409, mode="vlm")
        assert isinstance(legacy["error"], str) and "--vlm-url" in legacy["error"], legacy
        assert legacy["code"] == "BadRequest" and legacy["context"]["deskbox_code"] == "vlm_not_configured"
        for mode in (None, "combined", "accessibility"):
            said = get(observer.url, "/api/description", **({"mode": mode} if mode else {}))
            assert "vlm" not in said and "Add item" in said["accessibility"], (mode, said)
        assert get(observer.url, "/api/budget_status")["configured"] is False
    assert not model.requests, "a scene without a model sends nothing anywhere"
