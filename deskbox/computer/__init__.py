"""Provider adapters: a computer-use model's own action payload in, real input on the
desktop, and the reply its SDK takes back (screenshot at the declared size included).

    POST /api/v1/computer/anthropic   the computer tool's tool_use ``input``
    POST /api/v1/computer/openai      a computer_call's ``action`` (or the whole item)
    POST /api/v1/computer/gemini      a computer use function call

One module per provider (its payload models, one handler per action in one table;
Anthropic's models are ``deskbox.api.computer``'s, the MCP server's computer tool takes them too);
``base`` holds the declared screen, screenshots, settling and key names they share."""

from __future__ import annotations

from ..answers import AnthropicReply, GeminiReply, OpenAIReply
from ..api import computer as anthropic_tool
from ..common.openapi import ACTION_S, SLOW_S, TYPING_S, Longest, Route
from . import anthropic, gemini, openai
from .base import COMPUTER, Computer

__all__ = ["COMPUTER", "Computer", "ROUTES"]

# How long each provider's action may take: a hold or a wait its duration, typing a text
# desktopd's input deadline, anything else an action's bound (its turn, the input, the
# settling, the screenshot). A whole OpenAI computer_call may carry up to 100 actions.


def _anthropic_s(body: anthropic_tool.AnthropicAction, query: object) -> float:
    action = body.root
    if isinstance(action, (anthropic_tool.HoldKey, anthropic_tool.Wait)):
        return action.duration + ACTION_S
    return TYPING_S if isinstance(action, anthropic_tool.Type) else ACTION_S


def _openai_s(body: openai.OpenAIAction, query: object) -> float:
    return TYPING_S if isinstance(body.root, openai.Type) else ACTION_S


def _gemini_s(body: gemini.GeminiCall, query: object) -> float:
    return TYPING_S if isinstance(body.root, gemini.TypeTextAt) else ACTION_S


ANTHROPIC = Longest(anthropic_tool.MAX_SECONDS + ACTION_S, _anthropic_s,
                    f"a hold_key's or a wait's duration plus {ACTION_S:g} s; {TYPING_S:g} s to type; "
                    f"{ACTION_S:g} s otherwise")
OPENAI = Longest(SLOW_S, _openai_s, f"{TYPING_S:g} s to type, {ACTION_S:g} s for another action; "
                                    f"{SLOW_S:g} s for a computer_call of several")
GEMINI = Longest(TYPING_S, _gemini_s, f"{TYPING_S:g} s for type_text_at, {ACTION_S:g} s otherwise")

ROUTES = [
    Route("POST", "/api/v1/computer/anthropic", anthropic.handle,
          "Anthropic computer tool (computer_20250124/computer_20251124): the tool_use input in; out "
          "{output, error, base64_image, content (the tool_result's content blocks), tool_result (with "
          "?tool_use_id=)}. Coordinates in pixels of the declared size (display_width x display_height)",
          body=anthropic.AnthropicAction, query=anthropic.AnthropicQuery, stops_when_client_leaves=True,
          longest=ANTHROPIC, answer=AnthropicReply),
    Route("POST", "/api/v1/computer/openai", openai.handle,
          "OpenAI computer use: a computer_call's action (or the whole computer_call item) in; out the "
          "computer_call_output item {type, call_id, output: {type: computer_screenshot, image_url: data URL}}",
          body=openai.OpenAIAction, query=openai.OpenAIQuery, stops_when_client_leaves=True, longest=OPENAI,
          answer=OpenAIReply),
    Route("POST", "/api/v1/computer/gemini", gemini.handle,
          "Gemini computer use: the function call {name, args, id} in (0-999 coordinates); out the "
          "FunctionResponse {name, id, response: {url}, parts: [{inline_data: {mime_type, data}}]}",
          body=gemini.GeminiCall, query=gemini.GeminiQuery, stops_when_client_leaves=True, longest=GEMINI,
          answer=GeminiReply),
]
