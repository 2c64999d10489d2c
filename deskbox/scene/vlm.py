"""A vision model that describes a window for an agent, when the session is given one:
an OpenAI-compatible chat-completions endpoint (``--vlm-url URL --vlm-model NAME``; its
key, if it wants one, in ``DESKBOX_VLM_KEY``). Without ``--vlm-url`` nothing is sent
anywhere: ``VisionModel`` then opens no HTTP session and refuses every call with 409
``vlm_not_configured``.

One request per description: a user message with the window's title and ASCII sketch
(text) and its screenshot (a PNG as a data URL), after a system message asking for a
short description an agent can act on. The answer is the model's text and the tokens
the call used. Whatever goes wrong upstream (refused, no answer within
``VLM_TIMEOUT_S``, a status that is not 2xx, a body that is not a chat completion, no
text in it) is 503 ``vlm_unavailable`` saying what the endpoint said."""

from __future__ import annotations

import asyncio
import base64
import json
import math
from typing import Any
from urllib.parse import urlsplit

from aiohttp import ClientError, ClientSession, ClientTimeout, web

from ..common.errors import ActionFailedError, UnavailableError
from ..common.logging import get_logger
from ..common.options import VLM_KEY_ENV, VLM_TIMEOUT_S
from .text import CHARS_PER_TOKEN

__all__ = ["VisionModel", "VLM", "chat_completions_url", "config_problem", "estimate_tokens"]

log = get_logger("deskbox.scene.vlm")

MAX_ANSWER_TOKENS = 512  # a description is a paragraph: this bounds what one call can cost
_MAX_BODY = 4 * 1024 * 1024  # of the endpoint's answer read; a chat completion is far smaller
_SAID = 300  # characters of an endpoint's error quoted back

PROMPT = (
    "You describe one window of a computer desktop to an AI agent that operates it through element ids "
    "and cannot see the screen. From the screenshot and the sketch of its elements (labelled boxes on a "
    "character grid; an id such as a0-12 comes before each element's role and name), say concisely: what "
    "the window is, what it shows now (its content and state: a dialog, an error, progress, what is "
    "selected or filled in), and what can be done there, naming controls as the sketch labels them, with "
    "their ids. Do not describe the sketch itself. A short paragraph or a few lines, no preamble."
)


def chat_completions_url(url: str) -> str:
    """The endpoint to post to: ``url`` itself when it ends in ``/chat/completions``, else
    that appended to it (a base such as ``http://host:8000/v1``). ValueError for what is
    not an http(s) URL with a host."""
    parts = urlsplit(url.strip())
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # (not a number, or beyond 65535)
        port_ok = False
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ValueError(f"--vlm-url {url!r} is not an http(s) URL with a host (e.g. http://127.0.0.1:8000/v1)")
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions"
    return parts._replace(path=path).geturl()


def config_problem(url: str | None, model: str | None) -> str | None:
    """What is wrong with ``--vlm-url`` and ``--vlm-model`` together, said at startup; None when nothing."""
    if url is None:
        return "--vlm-model needs --vlm-url URL: the endpoint that runs it" if model else None
    if not model:
        return "--vlm-url needs --vlm-model NAME: the model the endpoint is to run"
    try:
        chat_completions_url(url)
    except ValueError as exc:
        return str(exc)
    return None


def estimate_tokens(text_chars: int, image_size: tuple[int, int], answer: str) -> int:
    """What a call cost when the endpoint does not say (no ``usage`` in its answer): the
    text sent and received at the scene's own rough rate (``CHARS_PER_TOKEN``), and the
    picture as OpenAI's models count one at high detail: fitted within 2048 x 2048, its
    shorter side brought down to 768, then 170 tokens for each 512-pixel tile and 85 more.
    Other models count pictures otherwise; an estimate still lets a budget hold."""
    w, h = image_size
    if w <= 0 or h <= 0:
        picture = 0
    else:
        fit = min(1.0, 2048 / max(w, h))
        w, h = w * fit, h * fit
        fit = min(1.0, 768 / min(w, h))
        w, h = w * fit, h * fit
        picture = 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)
    return math.ceil(text_chars / CHARS_PER_TOKEN) + picture + math.ceil(len(answer) / CHARS_PER_TOKEN)


class VisionModel:
    """The session's vision model, or none (``url`` None). ``start`` and ``close`` open and
    close its HTTP session (only when it has one); ``describe`` is one call."""

    def __init__(self, url: str | None, model: str | None, key: str | None = None, *,
                 timeout_s: float = VLM_TIMEOUT_S) -> None:
        if url is not None and not model:
            raise ValueError("--vlm-url needs --vlm-model NAME: the model the endpoint is to run")
        self.endpoint = chat_completions_url(url) if url is not None else None
        self.model = model if url is not None else None
        self._key = key
        self.timeout_s = timeout_s
        self._http: ClientSession | None = None
        # Said in errors and logs: where it is, never its path's query or credentials.
        parts = urlsplit(self.endpoint or "")
        self.where = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}" if url else None

    @property
    def configured(self) -> bool:
        return self.endpoint is not None

    def status(self) -> dict[str, Any]:
        """For the scene's health: whether there is a model, and its name (not where it is)."""
        return {"configured": self.configured, "model": self.model}

    async def start(self) -> None:
        if self.configured and self._http is None:
            headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
            self._http = ClientSession(headers=headers, timeout=ClientTimeout(total=self.timeout_s))
            log.info("vision model", model=self.model, at=self.where, key=bool(self._key))

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    def require(self) -> None:
        """Raise 409 ``vlm_not_configured`` when the session has no model."""
        if not self.configured:
            raise ActionFailedError(
                "no vision model is configured for this session: start it with --vlm-url URL --vlm-model NAME "
                f"(an OpenAI-compatible chat-completions endpoint; its key, if it needs one, in {VLM_KEY_ENV}). "
                "Without vlm=1 the description is the accessibility tree's alone",
                code="vlm_not_configured", recoverable=False,
                context={"flags": ["--vlm-url", "--vlm-model"], "key_env": VLM_KEY_ENV})

    async def describe(self, png: bytes, size: tuple[int, int], *, sketch: str, title: str | None,
                       app: str | None) -> tuple[str, int]:
        """Ask the model about one window: ``png`` its picture (``size`` pixels), ``sketch``
        its elements on a character grid. Answers (the model's text, the tokens used)."""
        self.require()
        if self._http is None:
            raise UnavailableError("the vision model's HTTP session is not open (the scene is starting or stopping)",
                                   code="vlm_unavailable")
        text = (f"The window: {app or 'an app'} {title or ''!r}, {size[0]}x{size[1]} pixels (the screenshot "
                f"below).\nIts elements:\n{sketch}")
        body = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": PROMPT},
                {"role": "user", "content": [
                    {"type": "text", "text": text},
                    {"type": "image_url",
                     "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()}},
                ]},
            ],
            "max_tokens": MAX_ANSWER_TOKENS,
        }
        answer = await self._post(body)
        said = _text_of(answer)
        if not said:
            raise self._unavailable("answered no text (no choices, or an empty message)")
        tokens = _tokens_used(answer.get("usage"))
        if tokens is None:
            tokens = estimate_tokens(len(PROMPT) + len(text), size, said)
        return said, tokens

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        assert self._http is not None and self.endpoint is not None
        try:
            # (No redirects: the key is for this endpoint, and a chat completion is never one.)
            async with self._http.post(self.endpoint, json=body, allow_redirects=False) as resp:
                status, data = resp.status, bytearray()
                async for chunk in resp.content.iter_chunked(64 * 1024):
                    data += chunk
                    if len(data) > _MAX_BODY:
                        raise self._unavailable(f"answered more than {_MAX_BODY} bytes", upstream_status=status)
        except asyncio.TimeoutError:
            raise self._unavailable(f"did not answer within {self.timeout_s:g} s") from None
        except (ClientError, OSError) as exc:
            raise self._unavailable(f"could not be reached: {exc}") from None
        if not 200 <= status < 300:
            raise self._unavailable(f"answered HTTP {status}: {_error_of(data)}", upstream_status=status)
        try:
            answer = json.loads(data)
        except ValueError:
            raise self._unavailable(f"answered HTTP {status} with a body that is not JSON: "
                                    f"{data[:_SAID].decode(errors='replace')!r}", upstream_status=status) from None
        if not isinstance(answer, dict):
            raise self._unavailable("answered JSON that is not a chat completion", upstream_status=status)
        return answer

    def _unavailable(self, what: str, *, upstream_status: int | None = None) -> UnavailableError:
        return UnavailableError(f"the vision model {self.model!r} at {self.where} {what}", code="vlm_unavailable",
                                context={"model": self.model, "upstream_status": upstream_status})


def _text_of(answer: dict[str, Any]) -> str:
    """The first choice's message text (a string, or text parts), stripped; "" when none."""
    choices = answer.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ""
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        content = "".join(p.get("text") or "" for p in content if isinstance(p, dict))
    return content.strip() if isinstance(content, str) else ""


def _tokens_used(usage: Any) -> int | None:
    """``usage.total_tokens``, else its prompt and completion tokens added; None when it says neither."""
    if not isinstance(usage, dict):
        return None
    total = usage.get("total_tokens")
    if isinstance(total, int) and not isinstance(total, bool) and total >= 0:
        return total
    parts = [usage.get("prompt_tokens"), usage.get("completion_tokens")]
    if all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts):
        return sum(parts)
    return None


def _error_of(data: bytes) -> str:
    """What an endpoint's error body says: OpenAI's ``{"error": {"message"}}``, else its text."""
    try:
        error = json.loads(data).get("error")
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str) and message:
            return message[:_SAID]
    except (ValueError, AttributeError):
        pass
    return data[:_SAID].decode(errors="replace").strip() or "(an empty body)"


VLM = web.AppKey("vlm", VisionModel)
