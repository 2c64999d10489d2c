"""The guard rails against real sessions: secrets redacted from the Scene, its prompt
text, observations, traces, the audit log and (blurred) screenshots; actions denied per
interface; confirmation round trips for risky targets; budgets that answer 429."""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import tempfile
import urllib.parse
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from deskbox.trace.recorder import read_steps
from tests.conftest import open_fixture
from tests.support import Session, http, wait_until

PASSWORD = "hunter2-correct-horse"
CARD = "4111 1111 1111 1111"
PIN = "8642"
POLICY = {
    "redaction": {"enabled": True, "element_name_patterns": [r"(?i)\bPIN\b"],
                  "text_patterns": [r"\b(?:\d{4} ){3}\d{4}\b"], "blur_screenshots": True},
    "actions": {"deny": ["*:drag", "desktopd:scroll"]},
    "confirmation": {"rules": [{"name_regex": "(?i)delete"}], "ttl_seconds": 60},
}


@pytest.fixture(scope="module")
def folder():
    path = Path(tempfile.mkdtemp(prefix="deskbox-guard-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def guarded(folder, pages):
    policy = {**POLICY, "audit": {"path": str(folder / "audit" / "audit.log"), "max_bytes": 200_000}}
    # The scene aggregator may run as the session's user: it reads the policy and writes
    # the audit log.
    os.chmod(folder, 0o755)
    (folder / "audit").mkdir(mode=0o777)
    os.chmod(folder / "audit", 0o777)
    path = folder / "policy.yaml"
    path.write_text(json.dumps(policy))  # (JSON is YAML)
    session = Session(["1280x800"], extra_args=["--policy", str(path), "--trace", str(folder / "traces"),
                                                "--ocr"]).start()
    session.browser_window()
    yield session
    session.stop()


def scene_get(session: Session, path: str, **params) -> dict:
    resp = http("GET", session.scene + path + ("?" + urllib.parse.urlencode(params) if params else ""))
    assert resp.status == 200, resp.body[:400]
    return resp.json()


def element(session: Session, role: str, name: str) -> dict:
    return wait_until(lambda: next((e for e in scene_get(session, "/api/v1/scene", mode="agent-turn")["ax"]
                                    if e["role"] == role and e["name"] == name), None), 15,
                      what=f"{role} {name!r} in the scene")


def test_policy_is_reported(guarded):
    policy = scene_get(guarded, "/api/v1/policy")
    assert policy["configured"] and policy["actions"]["deny"] == ["*:drag", "desktopd:scroll"]
    assert policy["redaction"]["enabled"] and policy["redaction"]["text_patterns"] == 1  # (counted, not shown)
    assert policy["confirmation"]["rules"][0]["name_regex"] == "(?i)delete"
    assert policy["budget_status"]["max_actions"]["limit"] is None


def test_secrets_are_out_of_every_output(guarded, pages, folder):
    open_fixture(guarded, pages, "secrets.html")
    password = element(guarded, "textbox", "Password")
    typed = http("POST", guarded.scene + "/api/v1/act", {"target": password["id"], "action": "type", "text": PASSWORD})
    assert typed.status == 200, typed.body[:300]
    save = element(guarded, "button", "Save")
    assert http("POST", guarded.scene + "/api/v1/act", {"target": save["id"]}).status == 200
    assert pages.wait_for(type="save")["password"] == PASSWORD  # (the page did get it)
    scene = scene_get(guarded, "/api/v1/scene", mode="agent-turn")
    field = next(e for e in scene["ax"] if e["id"] == password["id"])
    assert field["value"] == "[REDACTED]" and "protected" in field["states"]
    pin = [e for e in scene["ax"] if e["role"] == "textbox" and e["name"] == "[REDACTED]"]
    assert pin and all(e["value"] == "[REDACTED]" for e in pin)
    card = [e for e in scene["ax"] if "Card" in e["name"] and "REDACTED" in e["name"]]
    assert card, [e["name"] for e in scene["ax"] if "Card" in e["name"]]
    # What OCR reads on the screen too: the card number is printed large on the page.
    assert any("REDACTED" in o["text"] and "Card" in o["text"] for o in scene["ocr"]), [o["text"] for o in scene["ocr"]]
    outputs = {
        "scene": json.dumps(scene),
        "text": http("GET", guarded.scene + "/api/v1/scene/text").body.decode(),
        "observe": json.dumps(scene_get(guarded, "/api/v1/observe")),
        "find": json.dumps(scene_get(guarded, "/api/v1/find", selector="textbox")),
        "description": json.dumps(scene_get(guarded, "/api/v1/description")),
    }
    for where, text in outputs.items():
        for secret in (PASSWORD, CARD, PIN):
            assert secret not in text, (where, secret)
    # The trace deskbox up --trace records: the typed password is not in it.
    status = scene_get(guarded, "/api/v1/trace/status")
    steps_file = Path(status["dir"]) / "steps.jsonl"
    wait_until(lambda: PASSWORD not in steps_file.read_text() and len(read_steps(Path(status["dir"]))) >= 2, 5,
               what="the steps written")
    typed_step = next(s for s in read_steps(Path(status["dir"])) if s["action"] == "type")
    assert typed_step["args"]["text"] == "[REDACTED]"
    assert "protected" in typed_step["element"]["states"]


def sharpness(image: Image.Image, box) -> int:
    """The largest step between neighbouring pixels inside ``box`` (2 px in from its
    edges): glyphs make steps of 100 and more, a blurred box none above a few dozen."""
    x, y, w, h = box
    grey = np.asarray(image.convert("L").crop((x + 2, y + 2, x + w - 2, y + h - 2)), dtype=np.int16)
    return int(max(np.abs(np.diff(grey, axis=0)).max(), np.abs(np.diff(grey, axis=1)).max()))


def test_screenshots_blur_what_is_redacted_whoever_asks_for_them(guarded, pages):
    """The scene's screenshot, desktopd's own (what OSWorld's /screenshot and any raw
    client get) and a region or a smaller copy of it: the card number is blurred past
    reading in each, the Save button beside it is as sharp as on screen."""
    open_fixture(guarded, pages, "secrets.html")
    scene = scene_get(guarded, "/api/v1/scene", mode="agent-turn")
    box = next(e["bbox"] for e in scene["ax"] if "REDACTED" in e["name"] and "Card" in e["name"])
    save = next(e["bbox"] for e in scene["ax"] if e["role"] == "button" and e["name"] == "Save")
    shots = {
        "scene": http("GET", guarded.scene + "/api/v1/screenshot").body,
        "desktopd": http("GET", guarded.desktopd + "/api/v1/screenshot").body,
        "desktopd jpeg": http("GET", guarded.desktopd + "/api/v1/screenshot?format=jpeg&quality=95").body,
    }
    for where, body in shots.items():
        image = Image.open(io.BytesIO(body)).convert("RGB")
        assert sharpness(image, box) < 40 and sharpness(image, save) > 100, (where, sharpness(image, box))
    # A region around the card (its own pixels, offset), and the whole screen at half size.
    x, y, w, h = box
    region = f"{max(0, x - 20)},{max(0, y - 20)},{w + 40},{h + 40}"
    cut = Image.open(io.BytesIO(http("GET", guarded.desktopd + "/api/v1/screenshot?region=" + region).body))
    assert sharpness(cut, (x - max(0, x - 20), y - max(0, y - 20), w, h)) < 40
    half = Image.open(io.BytesIO(http("GET", guarded.desktopd + "/api/v1/screenshot?scale=0.5").body))
    assert sharpness(half, (x // 2, y // 2, w // 2, h // 2)) < 40


def test_denied_actions_answer_403_before_anything_is_done(guarded, pages):
    open_fixture(guarded, pages, "secrets.html")
    save = element(guarded, "button", "Save")
    resp = http("POST", guarded.scene + "/api/v1/act", {"target": save["id"], "action": "drag",
                                                       "to": {"point": [10, 10]}})
    assert resp.status == 403 and resp.json()["error"]["code"] == "action_denied", resp.body[:300]
    resp = http("POST", guarded.desktopd + "/api/v1/pointer", {"action": "scroll", "x": 100, "y": 100, "dy": 3})
    assert resp.status == 403 and resp.json()["error"]["code"] == "action_denied", resp.body[:300]
    # What is not denied still works, directly on desktopd too.
    resp = http("POST", guarded.desktopd + "/api/v1/pointer", {"action": "move", "x": 100, "y": 100})
    assert resp.status == 200


def test_a_risky_target_needs_a_confirmation_token(guarded, pages):
    open_fixture(guarded, pages, "secrets.html")
    delete = element(guarded, "button", "Delete account")
    first = http("POST", guarded.scene + "/api/v1/act", {"target": delete["id"]})
    assert first.status == 409, first.body[:300]
    error = first.json()["error"]
    assert error["code"] == "confirmation_required" and error["recoverable"]
    context = error["context"]
    assert context["would_target"]["name"] == "Delete account" and context["would_target"]["role"] == "button"
    with Image.open(io.BytesIO(base64.b64decode(context["would_target"]["screenshot_b64"]))) as crop:
        assert crop.format == "JPEG" and crop.width >= delete["bbox"][2]
    pages.settle(0.3)
    assert pages.matching(type="delete") == []  # nothing was done
    token = context["confirm_token"]
    # The token is for that target: another one a rule guards is refused (and the token
    # is not spent on it).
    draft = element(guarded, "button", "Delete draft")
    other = http("POST", guarded.scene + "/api/v1/act", {"target": draft["id"], "confirm_token": token})
    assert other.status == 409 and other.json()["error"]["code"] == "confirmation_invalid", other.body[:300]
    pages.settle(0.3)
    assert pages.matching(type="draft") == []
    done = http("POST", guarded.scene + "/api/v1/act", {"target": delete["id"], "confirm_token": token})
    assert done.status == 200, done.body[:300]
    pages.wait_for(type="delete")
    again = http("POST", guarded.scene + "/api/v1/act", {"target": delete["id"], "confirm_token": token})
    assert again.status == 409 and again.json()["error"]["code"] == "confirmation_invalid"
    # desktopd's own click on it asks too.
    x, y, w, h = delete["bbox"]
    raw = http("POST", guarded.desktopd + "/api/v1/pointer", {"action": "click", "x": x + w / 2, "y": y + h / 2})
    assert raw.status == 409 and raw.json()["error"]["code"] == "confirmation_required"
    confirmed = http("POST", guarded.desktopd + "/api/v1/pointer", {"action": "click", "x": x + w / 2, "y": y + h / 2},
                     headers={"X-Deskbox-Confirm-Token": raw.json()["error"]["context"]["confirm_token"]})
    assert confirmed.status == 200, confirmed.body[:300]
    pages.wait_for(type="delete", timeout=10)


def test_the_audit_log_has_every_action_and_no_secret(guarded, pages, folder):
    # Its own actions (in a random order it may run first): a secret typed, a click, a
    # pointer move sent to desktopd directly, and a click a rule holds back.
    open_fixture(guarded, pages, "secrets.html")
    password = element(guarded, "textbox", "Password")
    typed = http("POST", guarded.scene + "/api/v1/act", {"target": password["id"], "action": "type", "text": PASSWORD})
    assert typed.status == 200, typed.body[:300]
    assert http("POST", guarded.scene + "/api/v1/act", {"target": element(guarded, "button", "Save")["id"]}).status == 200
    x, y, w, h = password["bbox"]
    assert http("POST", guarded.desktopd + "/api/v1/pointer", {"action": "move", "x": x + w / 2, "y": y + h / 2}).status == 200
    held = http("POST", guarded.scene + "/api/v1/act", {"target": element(guarded, "button", "Delete account")["id"]})
    assert held.status == 409, held.body[:300]
    log = folder / "audit" / "audit.log"

    def audited() -> list[dict] | None:
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        return lines if {("act", "type"), ("desktopd", "move")} <= {(r["interface"], r["action"]) for r in lines} else None

    lines = wait_until(audited, 10, what="this test's actions in the audit log")
    assert {(r["interface"], r["action"]) for r in lines} >= {("act", "type"), ("act", "click"),
                                                             ("desktopd", "move")}
    assert any(r["ok"] is False and r["error"] == "confirmation_required" for r in lines)
    text = log.read_text()
    for secret in (PASSWORD, CARD, PIN):
        assert secret not in text
    assert oct(log.stat().st_mode & 0o777) == "0o600"


def test_budgets_answer_429_with_the_budget(pages):
    session = Session(["800x600"], browser=False, extra_args=["--max-actions", "3", "--max-screenshots", "2"]).start()
    try:
        for _ in range(3):
            assert http("POST", session.desktopd + "/api/v1/keyboard", {"action": "key", "keys": "shift"}).status == 200
        over = http("POST", session.desktopd + "/api/v1/keyboard", {"action": "key", "keys": "shift"})
        assert over.status == 429, over.body[:300]
        error = over.json()["error"]
        assert error["code"] == "budget_exceeded" and error["context"]["budget"] == "max_actions"
        # A request desktopd refuses as invalid costs nothing ... and the scene counts the same budget.
        assert http("POST", session.scene + "/api/v1/key_and_observe", {"keys": "shift"}).status == 429
        for _ in range(2):
            assert http("GET", session.desktopd + "/api/v1/screenshot").status == 200
        shot = http("GET", session.desktopd + "/api/v1/screenshot")
        assert shot.status == 429 and shot.json()["error"]["context"]["budget"] == "max_screenshots"
        # The scene's own reads of the screen are not the agent's: it still builds scenes.
        assert http("GET", session.scene + "/api/v1/scene?mode=agent-turn").status == 200
        status = scene_get(session, "/api/v1/policy")["budget_status"]
        assert status["max_actions"]["used"] == 3 and status["max_screenshots"]["used"] == 2
    finally:
        session.stop()
