"""The session's guard rails (deskbox.policy) where the gate meets them: before an
action, whether it is allowed, within budget and confirmed; after it, the audit log; and
secrets taken out of every Scene as it is built, of trace records and of screenshots."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import io
import time
from typing import TYPE_CHECKING, Any

from PIL import Image

from ..common.errors import ConfirmationRequiredError
from ..policy import ActionRules, AuditLog, Budgets, Confirmations, Policy, Redactor
from ..policy.config import RedactionConfig
from .scene_json import Scene
from .step import Step

if TYPE_CHECKING:
    from .sources import Desktop

__all__ = ["Guard"]

CROP_MARGIN = 24  # around a target, in the picture a confirmation shows
# Actions that change nothing by themselves: a confirmation rule that names no action
# does not stop the pointer passing over a Delete button.
_HARMLESS = frozenset({"move", "hover", "focus", "scroll_into_view", "scroll"})


class Guard:
    enforcing = True  # desktopd asks the gate about direct input while a policy is in force

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.rules = ActionRules(policy.actions)
        self.budgets = Budgets(policy.budgets)
        self.redactor = Redactor(policy.redaction)
        # What keeps secrets out of records (trace and audit lines): the policy's
        # redaction, or when it has none, the least every record gets: text typed into
        # password fields, and arguments named as secrets.
        self.records = self.redactor if self.redactor.enabled else Redactor(RedactionConfig(enabled=True))
        self.confirmations = Confirmations(policy.confirmation)
        self.audit = AuditLog(policy.audit, self.records)

    # -- before and after an action -------------------------------------------------------

    async def before(self, step: Step, *, looking: bool, desktop: Desktop) -> None:
        """Raise what refuses the step: the action not allowed (403), a budget spent (429),
        a confirmation asked for or not valid (409). Nothing is counted for a refused step."""
        self.rules.check(step.interface, step.action)
        self.budgets.check_session()
        target = step.element
        rule = self.confirmations.rule_for(step.action, target.get("role"), target.get("name")) if (
            not looking and target is not None) else None
        if rule is not None and (rule.action is not None or step.action not in _HARMLESS):
            token = step.args.get("confirm_token")
            if token is None:
                proposal = await self.propose(step.action, target, desktop)
                raise ConfirmationRequiredError(
                    f"{step.action} on {target.get('role')} {target.get('name')!r} needs confirmation: send the same "
                    "action again with confirm_token", context={k: v for k, v in proposal.items() if k != "ok"})
            self.confirmations.redeem(token, step.action, _summary(target))
        if looking:
            self.budgets.charge_screenshot()
        else:
            self.budgets.charge_action()

    async def propose(self, action: str, target: dict[str, Any], desktop: Desktop) -> dict[str, Any]:
        """A confirmation token for ``action`` on ``target`` (an element reference) when a
        rule asks for one, with what would be hit and a picture of it."""
        if self.confirmations.rule_for(action, target.get("role"), target.get("name")) is None:
            return {"ok": True, "needed": False, "confirm_token": None, "expires_at": None, "action": action,
                    "would_target": {**_summary(target), "display_id": target.get("display_id")}}
        token, expires = self.confirmations.issue(action, _summary(target))
        return {"ok": True, "needed": True, "confirm_token": token, "expires_at": expires, "action": action,
                "would_target": {**_summary(target), "display_id": target.get("display_id"),
                                 "screenshot_b64": await self._crop(desktop, target)}}

    def after(self, step: Step, receipt: dict[str, Any] | None, failure: dict[str, Any] | None) -> None:
        if not self.audit.enabled:
            return
        target = step.element or {}
        self.audit.write({
            "interface": step.interface, "action": step.action, "args": step.args,
            "target": {k: target.get(k) for k in ("id", "role", "name", "app", "window_title")} if target else None,
            "point": step.point, "ok": failure is None, "error": (failure or {}).get("code"),
            "duration_ms": round((time.monotonic() - step.started) * 1000),
        })

    def refund(self, step: Step) -> None:
        """The step was refused by desktopd before any input: it costs nothing."""
        self.budgets.refund_action()

    # -- secrets --------------------------------------------------------------------------

    def redact_scene(self, scene: Scene) -> Scene:
        """``scene`` with secret fields' values (and all the text of secret windows and of
        elements named as secrets) replaced, and text patterns replaced everywhere."""
        r = self.redactor
        if not r.enabled:
            return scene
        titles = {w.id: w.title for w in scene.windows}
        whys = [r.why_secret(e.role, e.name, e.states, titles.get(e.window_id)) for e in scene.ax]
        for e, why in zip(scene.ax, whys):
            if why is not None:
                r.remember(e.value)  # (the page repeats a field's value in a text inside it)
        for e, why in zip(scene.ax, whys):
            if why is not None:
                e.value = r.hide(e.value)
            if why == "all":
                e.name = r.hide(e.name) or ""
            e.name = r.text(e.name)
            if e.value:
                e.value = r.text(e.value)
            if e.formula:
                e.formula = r.text(e.formula)
        secret_windows = {w.id: {"display_id": w.display_id, "bounds": w.bounds_list} for w in scene.windows
                          if why_window(r, w.title)}

        def in_secret_window(o) -> bool:
            line = {"window_id": o.window_id, "bbox": list(o.bbox), "display_id": o.display_id}
            return bool(secret_windows) and r.ocr_window(line, secret_windows) is not None

        ocr = [dataclasses.replace(o, text=r.hide(o.text) if in_secret_window(o) else r.text(o.text))
               for o in scene.ocr]
        windows = [dataclasses.replace(w, title=r.text(w.title)) if w.title else w for w in scene.windows]
        apps = [{**a, "windows": [{**w, "title": r.text(w["title"]) if w.get("title") else w.get("title")}
                                  for w in a["windows"]]} for a in scene.apps]
        focused = next((w for w in windows if scene.focused_window is not None and w.id == scene.focused_window.id),
                       None)
        return dataclasses.replace(scene, ocr=ocr, windows=windows, apps=apps, focused_window=focused)

    @property
    def blurs(self) -> bool:
        return self.redactor.enabled and self.policy.redaction.blur_screenshots

    async def blur_jpeg(self, jpeg: bytes, display: int, scene: Scene | None) -> bytes:
        """A trace's screenshot with the secrets' boxes blurred, when the policy says so."""
        if not self.blurs or scene is None:
            return jpeg
        boxes = self.boxes(scene).get(display)
        if not boxes:
            return jpeg
        return await asyncio.to_thread(_blur_encoded, self.redactor, jpeg, boxes, "JPEG")

    def boxes(self, scene: Scene) -> dict[int, list[tuple[int, int, int, int]]]:
        doc = {"apps": scene.apps, "ax": [e.to_json() for e in scene.ax], "ocr": [o.to_json() for o in scene.ocr]}
        return self.redactor.boxes(doc)

    def blur_image(self, image: Image.Image, display: int, scene: Scene | None, scale: float = 1.0) -> Image.Image:
        if not self.blurs or scene is None:
            return image
        boxes = self.boxes(scene).get(display)
        return self.redactor.blur(image, boxes, scale) if boxes else image

    # -- status ---------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return {"ok": True, "configured": True, **self.policy.to_json(), "budget_status": self.budgets.status(),
                "redaction_status": {"enabled": self.redactor.enabled,
                                     "applied_count": self.redactor.applied_count,
                                     "blur_screenshots": self.policy.redaction.blur_screenshots}}

    async def _crop(self, desktop: Desktop, target: dict[str, Any]) -> str | None:
        """The target and a margin around it, as a base64 JPEG: what would be hit."""
        bbox, display = target.get("bbox"), target.get("display_id")
        if not bbox or display is None:
            return None
        x, y, w, h = bbox
        region = f"{max(0, x - CROP_MARGIN)},{max(0, y - CROP_MARGIN)},{w + 2 * CROP_MARGIN},{h + 2 * CROP_MARGIN}"
        try:
            jpeg, _ = await desktop.screenshot({"display": str(display), "format": "jpeg", "quality": "80",
                                                "region": region})
        except Exception:  # the confirmation stands without its picture
            return None
        return base64.b64encode(jpeg).decode()


def _summary(target: dict[str, Any]) -> dict[str, Any]:
    return {k: target.get(k) for k in ("id", "role", "name", "bbox", "window_id")}


def why_window(redactor: Redactor, title: str | None) -> bool:
    return bool(title) and redactor.why_secret(None, None, None, title) == "all"


def _blur_encoded(redactor: Redactor, data: bytes, boxes: list, fmt: str) -> bytes:
    with Image.open(io.BytesIO(data)) as im:
        out = redactor.blur(im.convert("RGB"), boxes)
    buf = io.BytesIO()
    out.save(buf, fmt, quality=80)
    return buf.getvalue()
