"""Provider adapters: a computer-use model's own action payload in, real input on the
desktop, and the reply its SDK takes back (screenshot at the declared size included).

    POST /api/v1/computer/anthropic   the computer tool's tool_use ``input``
    POST /api/v1/computer/openai      a computer_call's ``action`` (or the whole item)
    POST /api/v1/computer/gemini      a computer use function call

One module per provider (its payload models, one handler per action in one table);
``base`` holds the declared screen, screenshots, settling and key names they share."""

from __future__ import annotations

from ...common.openapi import Route
from . import anthropic, gemini, openai
from .base import COMPUTER, Computer

__all__ = ["COMPUTER", "Computer", "ROUTES"]

ROUTES = [
    Route("POST", "/api/v1/computer/anthropic", anthropic.handle,
          "Anthropic computer tool (computer_20250124/computer_20251124): the tool_use input in; out "
          "{output, error, base64_image, content (the tool_result's content blocks), tool_result (with "
          "?tool_use_id=)}. Coordinates in pixels of the declared size (display_width x display_height)",
          body=anthropic.AnthropicAction, query=anthropic.AnthropicQuery, stops_when_client_leaves=True),
    Route("POST", "/api/v1/computer/openai", openai.handle,
          "OpenAI computer use: a computer_call's action (or the whole computer_call item) in; out the "
          "computer_call_output item {type, call_id, output: {type: computer_screenshot, image_url: data URL}}",
          body=openai.OpenAIAction, query=openai.OpenAIQuery, stops_when_client_leaves=True),
    Route("POST", "/api/v1/computer/gemini", gemini.handle,
          "Gemini computer use: the function call {name, args, id} in (0-999 coordinates); out the "
          "FunctionResponse {name, id, response: {url}, parts: [{inline_data: {mime_type, data}}]}",
          body=gemini.GeminiCall, query=gemini.GeminiQuery, stops_when_client_leaves=True),
]
