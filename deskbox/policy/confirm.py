"""Confirmations: an action the policy names (deleting, paying, sending) runs only when
asked twice. The first call gets a single-use ``confirm_token`` bound to that action and
that element; the second call, with the token, runs it.

The element may have a new id by the second call (the scene was rebuilt): it is the same
element when its role and name are, and its box's centre moved at most
``bbox_tolerance_px``."""

from __future__ import annotations

import math
import re
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Callable

from ..common.errors import ConfirmationInvalidError, ConfirmationRequiredError
from .config import ConfirmationConfig, ConfirmRule

__all__ = ["Confirmations"]

_CAP = 256  # tokens kept; the oldest go first


@dataclass(slots=True)
class _Pending:
    action: str
    target: dict[str, Any]
    expires: float  # on the injected clock
    used: bool = False


class Confirmations:
    def __init__(self, config: ConfirmationConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self._rules = [(rule, re.compile(rule.name_regex) if rule.name_regex is not None else None)
                       for rule in config.rules]
        self._pending: OrderedDict[str, _Pending] = OrderedDict()

    def rule_for(self, action: str, role: str | None, name: str | None) -> ConfirmRule | None:
        """The first rule that asks to confirm ``action`` on an element of this role and name."""
        for rule, name_re in self._rules:
            if rule.action is not None and not fnmatchcase(action.lower(), rule.action.lower()):
                continue
            if rule.role is not None and (role or "").lower() != rule.role.lower():
                continue
            if name_re is not None and not name_re.search(name or ""):
                continue
            return rule
        return None

    def issue(self, action: str, target: dict[str, Any]) -> tuple[str, float]:
        """A token confirming ``action`` on ``target`` ({id, role, name, bbox, window_id})
        and when it expires (seconds since the epoch)."""
        token = secrets.token_urlsafe(16)
        self._pending[token] = _Pending(action, _summary(target), self._clock() + self.config.ttl_seconds)
        while len(self._pending) > _CAP:
            self._pending.popitem(last=False)
        return token, time.time() + self.config.ttl_seconds

    def redeem(self, token: str, action: str, target: dict[str, Any]) -> None:
        """Use ``token`` for ``action`` on ``target``, or raise ConfirmationInvalidError saying why.
        A token is used up only by the call it confirms: a mistaken call does not burn it."""
        pending = self._pending.get(token)
        if pending is None:
            raise _invalid("unknown", "this confirm_token was never issued, or too long ago", action)
        if pending.used:
            raise _invalid("used", "this confirm_token was already used: each confirms one call", action)
        if self._clock() >= pending.expires:
            del self._pending[token]
            raise _invalid("expired", f"this confirm_token expired ({self.config.ttl_seconds} s)", action)
        if pending.action != action:
            raise _invalid("other_action", f"this confirm_token confirms {pending.action!r}, not {action!r}", action)
        why = self._differs(pending.target, _summary(target))
        if why is not None:
            raise _invalid("other_target", f"this confirm_token confirms another element: {why}", action)
        pending.used = True

    def check(self, action: str, target: dict[str, Any], confirm_token: str | None = None) -> None:
        """The whole gate: nothing when no rule names this action on ``target``; otherwise
        ConfirmationRequiredError with a fresh token, or the token redeemed."""
        rule = self.rule_for(action, target.get("role"), target.get("name"))
        if rule is None:
            return
        if confirm_token is not None:
            self.redeem(confirm_token, action, target)
            return
        token, expires_at = self.issue(action, target)
        raise ConfirmationRequiredError(
            f"{action} on {target.get('role')} {target.get('name')!r} needs confirming: call {action} again with "
            f"confirm_token within {self.config.ttl_seconds} s",
            action=action, token=token, expires_at=round(expires_at, 3),
            context={"rule": rule.model_dump(exclude_none=True), "target": _summary(target)})

    def _differs(self, issued: dict[str, Any], now: dict[str, Any]) -> str | None:
        if (issued["role"] or "").lower() != (now["role"] or "").lower():
            return f"role {now['role']!r}, not {issued['role']!r}"
        if issued["name"] != now["name"]:
            return f"name {now['name']!r}, not {issued['name']!r}"
        if issued["window_id"] and now["window_id"] and issued["window_id"] != now["window_id"]:
            return f"window {now['window_id']!r}, not {issued['window_id']!r}"
        if issued["id"] is not None and issued["id"] == now["id"]:
            return None
        a, b = _centre(issued["bbox"]), _centre(now["bbox"])
        if a is None or b is None:
            return f"id {now['id']!r}, not {issued['id']!r}, and no box to compare"
        moved = math.dist(a, b)
        if moved > self.config.bbox_tolerance_px:
            return f"id {now['id']!r}, not {issued['id']!r}, and its centre is {moved:.0f} px away"
        return None


def _summary(target: dict[str, Any]) -> dict[str, Any]:
    bbox = target.get("bbox")
    return {"id": target.get("id"), "role": target.get("role"), "name": target.get("name"),
            "bbox": list(bbox) if bbox is not None else None, "window_id": target.get("window_id")}


def _centre(bbox: list[float] | None) -> tuple[float, float] | None:
    if not bbox or len(bbox) != 4:
        return None
    x, y, w, h = bbox
    return x + w / 2, y + h / 2


def _invalid(reason: str, message: str, action: str) -> ConfirmationInvalidError:
    return ConfirmationInvalidError(f"{message}; call {action} without confirm_token for a new one",
                                    context={"reason": reason, "action": action}, suggested_next_tool=action)
