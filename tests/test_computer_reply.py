"""The computer-use adapters answer for an action that was carried out, whatever the
browser does: Gemini's reply names the front tab's URL, and with the browser closed (an
OSWorld-mode session after its reset, as OSWorld's VM starts a task) the click still
lands and the reply says no URL, rather than an error a harness would act on again;
``open_web_browser`` starts the browser then."""

from __future__ import annotations

import pytest

from tests.support import http, osworld_session

pytestmark = pytest.mark.desktop


def test_a_gemini_action_with_the_browser_closed_lands_and_answers_without_a_url():
    session = osworld_session(["1280x800"], "--user", "deskbox-reply")
    try:
        reset = http("POST", session.scene + "/api/v1/session/reset", {}).json()
        assert reset["browser"] is False and reset["healthy"], reset
        answer = http("POST", session.scene + "/api/v1/computer/gemini",
                      {"name": "click_at", "args": {"x": 500, "y": 250}})
        assert answer.status == 200, answer.body[:500]
        reply = answer.json()
        assert (reply["name"], reply["response"]) == ("click_at", {"url": None}), reply
        assert reply["parts"][0]["inline_data"]["mime_type"] == "image/png"
        # 500/1000 and 250/1000 of 1280x800 (Gemini's grid), where the click went.
        assert http("GET", session.desktopd + "/api/v1/pointer").json() == {"display": 0, "x": 640, "y": 200}
        # open_web_browser starts the browser the reset left closed, and focuses its window.
        opened = http("POST", session.scene + "/api/v1/computer/gemini", {"name": "open_web_browser", "args": {}})
        assert opened.status == 200, opened.body[:500]
        windows = http("GET", session.desktopd + "/api/v1/tree").json()["windows"]
        assert any(w["focused"] and w["app_id"] in ("chromium", "chrome", "google-chrome") for w in windows), windows
    finally:
        session.stop()
