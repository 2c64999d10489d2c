"""The policy's redaction applied to a Scene as the engine builds it (pure logic)."""

from __future__ import annotations

from deskbox.geometry import Rect
from deskbox.policy import Policy
from deskbox.scene.elements import Element
from deskbox.scene.guard import Guard
from deskbox.scene.scene_json import OcrItem, Scene, apps_of
from deskbox.scene.sources import Window

POLICY = Policy.parse({"redaction": {"enabled": True, "element_name_patterns": [r"(?i)\bPIN\b"],
                                     "window_title_patterns": ["Vault"], "text_patterns": [r"\b\d{4}-\d{4}\b"]}})


def element(ident: str, role: str, name: str, value: str | None, window: str, states=()) -> Element:
    return Element(key=("cdp", ident), role=role, name=name, value=value, bbox=Rect(10, 10, 100, 20), display_id=0,
                   window_id=window, source="cdp", states=list(states), actions=["click"], visibility="visible",
                   clip=None, id=ident)


def scene() -> Scene:
    windows = [Window("w1", "chromium", None, "Shop 1234-5678", Rect(0, 0, 800, 600), 0, True),
               Window("w2", "vault", None, "Vault", Rect(800, 0, 400, 600), 0, False)]
    ax = [element("a0-1", "textbox", "Password", "hunter2secret", "w1", ["protected"]),
          element("a0-2", "textbox", "Card PIN", "8642", "w1"),
          element("a0-3", "StaticText", "hunter2secret and 8642", None, "w1"),
          element("a0-4", "button", "Pay 1234-5678", None, "w1"),
          element("a0-5", "label", "Master password hint", None, "w2")]
    ocr = [OcrItem("t0-1", "order 1234-5678 ok", (10, 300, 200, 20), 0.9, 0),
           OcrItem("t0-2", "vault text", (900, 100, 100, 20), 0.9, 0)]  # read on the whole screen: no window
    return Scene(seq=1, timestamp=0.0, mode="active", displays=[], windows=windows, focused_window=windows[0],
                 apps=apps_of(windows), ax=ax, ocr=ocr, vlm_scene=None, vlm_elements=None, sources={})


def test_secrets_leave_every_text_of_the_scene():
    out = Guard(POLICY).redact_scene(scene())
    by_id = {e.id: e for e in out.ax}
    assert by_id["a0-1"].value == "[REDACTED]" and by_id["a0-1"].name == "Password"  # a field: its value
    assert by_id["a0-2"].value == "[REDACTED]" and by_id["a0-2"].name == "[REDACTED]"  # named as a secret: both
    assert by_id["a0-3"].name == "[REDACTED] and [REDACTED]"  # what was read from them, wherever it shows
    assert by_id["a0-4"].name == "Pay [REDACTED]"  # a text pattern
    assert by_id["a0-5"].name == "[REDACTED]"  # everything of a secret window
    assert [o.text for o in out.ocr] == ["order [REDACTED] ok", "[REDACTED]"]  # (the second lies in the vault)
    assert out.windows[0].title == "Shop [REDACTED]" and out.focused_window.title == "Shop [REDACTED]"
    assert out.apps[0]["windows"][0]["title"] == "Shop [REDACTED]"
    assert out.windows[1].title == "Vault"  # (titles stay: windows must still be told apart)


def test_without_redaction_the_scene_is_untouched():
    original = scene()
    out = Guard(Policy()).redact_scene(original)
    assert out is original and out.ax[0].value == "hunter2secret"
