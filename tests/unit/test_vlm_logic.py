"""The vision model's pure parts, without a desktop: where it posts, what is wrong with
its flags, the token estimate when an endpoint does not say, and how its answers and
failures are read (against an endpoint served in this process)."""

from __future__ import annotations

import pytest
from aiohttp import web

from deskbox.common.errors import ActionFailedError, UnavailableError
from deskbox.scene.vlm import VisionModel, chat_completions_url, config_problem, estimate_tokens


@pytest.mark.parametrize("given, posted", [
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1/chat/completions"),
    ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1/chat/completions"),
    ("https://models.example/v1/chat/completions", "https://models.example/v1/chat/completions"),
    ("https://models.example/v1/chat/completions/", "https://models.example/v1/chat/completions"),
    ("http://host:11434", "http://host:11434/chat/completions"),
    ("https://host/openai/v1?api-version=1", "https://host/openai/v1/chat/completions?api-version=1"),
])
def test_a_base_url_gets_chat_completions_appended_and_a_full_one_is_kept(given, posted):
    assert chat_completions_url(given) == posted


@pytest.mark.parametrize("url", ["ftp://host/v1", "host:8000/v1", "http:///v1", "http://host:port/v1", ""])
def test_what_is_not_an_http_url_is_refused(url):
    with pytest.raises(ValueError, match="not an http"):
        chat_completions_url(url)


def test_the_flags_go_together():
    assert config_problem(None, None) is None
    assert config_problem("http://h/v1", "m") is None
    assert "--vlm-model NAME" in config_problem("http://h/v1", None)
    assert "--vlm-url URL" in config_problem(None, "m")
    assert "not an http" in config_problem("h/v1", "m")
    with pytest.raises(ValueError, match="--vlm-model"):
        VisionModel("http://h/v1", None)


def test_the_estimate_counts_text_at_the_scenes_rate_and_the_picture_in_tiles():
    # 1280x800: its shorter side to 768 (1229x768), 3x2 tiles of 512: 85 + 6 x 170.
    assert estimate_tokens(350, (1280, 800), "x" * 35) == 100 + 1105 + 10
    # A small picture is one tile; a huge one is fitted within 2048 first (2048x1024 ->
    # 1536x768: 3x2 tiles).
    assert estimate_tokens(0, (300, 200), "") == 85 + 170
    assert estimate_tokens(0, (8000, 4000), "") == 85 + 6 * 170


async def test_nothing_is_sent_without_a_url():
    model = VisionModel(None, "ignored", "key")
    await model.start()
    assert model.status() == {"configured": False, "model": None} and model._http is None
    with pytest.raises(ActionFailedError) as info:
        await model.describe(b"", (1, 1), sketch="", title=None, app=None)
    assert info.value.status == 409 and info.value.code == "vlm_not_configured"
    await model.close()


class Endpoint:
    """A chat-completions endpoint served in this process (in the test's own event loop)
    that answers ``answer``: (status, JSON or bytes), 307 for a redirect elsewhere."""

    def __init__(self, answer: tuple[int, object]) -> None:
        self.answer = answer
        self.redirected = False
        self.url = ""

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        status, body = self.answer
        if status == 307:
            raise web.HTTPTemporaryRedirect("/elsewhere")
        if isinstance(body, bytes):
            return web.Response(status=status, body=body)
        return web.json_response(body, status=status)

    async def _elsewhere(self, request: web.Request) -> web.Response:
        self.redirected = True
        return web.json_response({})

    async def describe(self) -> tuple[str, int]:
        """One call of a VisionModel at this endpoint."""
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_post("/elsewhere", self._elsewhere)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        model = VisionModel(f"http://127.0.0.1:{port}/v1", "m", "k", timeout_s=5)
        await model.start()
        try:
            return await model.describe(b"png", (512, 512), sketch="+--+", title="t", app="a")
        finally:
            await model.close()
            await runner.cleanup()


async def test_text_parts_are_joined_and_prompt_and_completion_tokens_added():
    endpoint = Endpoint((200, {"choices": [{"message": {"content": [{"type": "text", "text": "A form "},
                                                                    {"type": "text", "text": "with a button."}]}}],
                               "usage": {"prompt_tokens": 300, "completion_tokens": 12}}))
    assert await endpoint.describe() == ("A form with a button.", 312)


@pytest.mark.parametrize("answer, said", [
    ((401, {"error": {"message": "Incorrect API key provided"}}), "answered HTTP 401: Incorrect API key provided"),
    ((502, b"Bad Gateway"), "answered HTTP 502: Bad Gateway"),
    ((200, b"{not json"), "not JSON"),
    ((200, [1, 2]), "not a chat completion"),
    ((200, {"choices": [{"message": {"content": "  "}}]}), "no text"),
    ((307, None), "answered HTTP 307"),
])
async def test_every_failure_of_the_endpoint_is_503_vlm_unavailable(answer, said):
    endpoint = Endpoint(answer)
    with pytest.raises(UnavailableError) as info:
        await endpoint.describe()
    assert info.value.status == 503 and info.value.code == "vlm_unavailable" and said in info.value.message
    assert not endpoint.redirected, "the key is not carried to where a redirect points"
