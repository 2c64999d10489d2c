"""The error hierarchy every deskbox service answers with.

    ServiceError (500 internal)
    +-- InvalidRequest (400 invalid_request): could not be parsed or validated
    |   +-- NotFoundError (404 not_found)
    |   +-- Expired (410 expired): a token or snapshot that was valid and is no more
    +-- Unauthorized (401 unauthorized)
    +-- ActionDenied (403 action_denied): the session's policy forbids this action
    +-- ActionFailed (409 action_failed): valid, but could not be applied now
    |   +-- ConfirmationRequired (409 confirmation_required): repeat it with ``confirm_token``
    |   +-- ConfirmationInvalid (409 confirmation_invalid): that token does not confirm this
    +-- TooLarge (422 too_large): valid, but beyond a documented limit
    +-- BudgetExceeded (429 budget_exceeded): the session's policy allows no more of these
    +-- Unavailable (503 unavailable): a component the request needs is down
    +-- DeadlineExceeded (504 deadline_exceeded): valid, but it did not finish in time
    +-- NotServed (501 not_implemented): a route kept for a compatible API, not served yet

Each has a stable ``code`` and HTTP ``status``; the JSON body is always
``{"error": {"code", "message", "recoverable", "suggested_next_tool", "context"}}``:
the last three (as OS Screen Observer's v2 errors have them) tell an agent whether
another call can get past it, which tool to call next, and what it was about (null
when there is nothing to say). Third-party exceptions (Wayland, X11,
sway IPC) are translated into these where they enter.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "ServiceError",
    "InvalidRequest",
    "NotFoundError",
    "Expired",
    "Unauthorized",
    "ActionFailed",
    "TooLarge",
    "Unavailable",
    "DeadlineExceeded",
    "ClientGone",
    "Busy",
    "NotServed",
    "ActionDenied",
    "BudgetExceeded",
    "ConfirmationRequired",
    "ConfirmationInvalid",
    "error_body",
    "from_answer",
]


class ServiceError(Exception):
    status = 500
    code = "internal"
    recoverable = False

    def __init__(self, message: str, *, code: str | None = None, details: object = None,
                 suggested_next_tool: str | None = None, context: dict | None = None,
                 recoverable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if recoverable is not None:
            self.recoverable = recoverable
        self.details = details
        self.suggested_next_tool = suggested_next_tool
        self.context = context

    def to_json(self) -> dict:
        body: dict = {"code": self.code, "message": self.message, "recoverable": self.recoverable,
                      "suggested_next_tool": self.suggested_next_tool, "context": self.context}
        if self.details is not None:
            body["details"] = self.details
        return {"error": body}


class InvalidRequest(ServiceError):
    status = 400
    code = "invalid_request"
    recoverable = True  # the same call, mended


class NotFoundError(InvalidRequest):
    status = 404
    code = "not_found"


class UnsupportedMediaType(InvalidRequest):
    status = 415
    code = "unsupported_media_type"


class Expired(InvalidRequest):
    status = 410
    code = "expired"


class Unauthorized(ServiceError):
    status = 401
    code = "unauthorized"


class ActionFailed(ServiceError):
    recoverable = True
    status = 409
    code = "action_failed"


class TooLarge(ServiceError):
    status = 422
    code = "too_large"


class Unavailable(ServiceError):
    recoverable = True
    status = 503
    code = "unavailable"


class DeadlineExceeded(ServiceError):
    recoverable = True
    status = 504
    code = "deadline_exceeded"


class Busy(ActionFailed):
    """The input is another request's for longer than a caller should wait."""

    code = "input_busy"


class ClientGone(ServiceError):
    """The client went away before its answer: the work was stopped. Nobody reads this
    answer; its status (nginx's 499) is for logs and metrics."""

    recoverable = True
    status = 499
    code = "client_gone"


class NotServed(ServiceError):
    status = 501
    code = "not_implemented"


# The guard rails' answers (deskbox.policy): what the session's policy refuses.


class ActionDenied(ServiceError):
    status = 403
    code = "action_denied"


class BudgetExceeded(ServiceError):
    # Not recoverable by default: the session's budget is spent. A rate budget (actions
    # per minute) is, by waiting: its raiser says so.
    status = 429
    code = "budget_exceeded"


class ConfirmationRequired(ActionFailed):
    """The action needs a second, confirmed call: the same action with ``confirm_token``
    (in ``context``, with when it expires). ``suggested_next_tool`` is that action."""

    status = 409
    code = "confirmation_required"
    recoverable = True

    def __init__(self, message: str, *, action: str | None = None, token: str | None = None,
                 expires_at: float | None = None, context: dict | None = None,
                 suggested_next_tool: str | None = None, **kwargs: Any) -> None:
        context = dict(context or {})
        if token is not None:
            context.update(confirm_token=token, expires_at=expires_at)
        super().__init__(message, context=context or None, suggested_next_tool=suggested_next_tool or action,
                         **kwargs)


class ConfirmationInvalid(ActionFailed):
    # Recoverable: the action without a token asks for a fresh one.
    status = 409
    code = "confirmation_invalid"


def error_body(data: bytes) -> dict[str, Any] | None:
    """The ``error`` object of a service's error answer (``{"error": {...}}``); None when
    the body is not one (a proxy's page, a service from before the shape)."""
    try:
        err = json.loads(data)["error"]
    except (ValueError, TypeError, KeyError):
        return None
    return err if isinstance(err, dict) else None


def _by_status() -> dict[int, type[ServiceError]]:
    return {400: InvalidRequest, 401: Unauthorized, 403: ActionDenied, 404: NotFoundError, 409: ActionFailed,
            410: Expired, 422: TooLarge, 429: BudgetExceeded, 501: NotServed, 503: Unavailable,
            504: DeadlineExceeded}


def from_answer(status: int, data: bytes, what: str) -> ServiceError:
    """Another service's error answer, as this service raises it to its own caller: the
    class of its status, with its code, message and hints. Other 4xx are invalid
    requests; the other service's internal error (5xx) is unavailability here, as a
    component the request needs failed. ``what`` names the call (``desktopd /api/v1/tree``)."""
    cls = _by_status().get(status) or (InvalidRequest if status < 500 else Unavailable)
    err = error_body(data)
    if err is None:
        return cls(f"{what}: {status} {data[:200].decode(errors='replace')}", code="http_error")
    context = err.get("context")
    return cls(f"{what}: {err.get('message', '')}", code=str(err.get("code") or "error"),
               recoverable=err.get("recoverable") if isinstance(err.get("recoverable"), bool) else None,
               suggested_next_tool=err.get("suggested_next_tool"),
               context=context if isinstance(context, dict) else None, details=err.get("details"))
