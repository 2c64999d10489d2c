"""deskbox's one exception family: what every service answers with, what its internal
callers raise on another service's error answer, and what the public client
(``deskbox.Client``) raises.

    DeskboxError (500 internal)
    +-- InvalidRequestError (400 invalid_request): could not be parsed or validated
    |   +-- NotFoundError (404 not_found)
    |   +-- ExpiredError (410 expired): a token or snapshot that was valid and is no more
    |   +-- UnsupportedMediaTypeError (415 unsupported_media_type)
    +-- UnauthorizedError (401 unauthorized)
    +-- DeniedError (403 action_denied): the session's policy forbids this action
    +-- ActionFailedError (409 action_failed): valid, but could not be applied now
    |   +-- ConfirmationRequiredError (409 confirmation_required): repeat it with ``confirm_token``
    |   +-- ConfirmationInvalidError (409 confirmation_invalid): that token does not confirm this
    |   +-- InputBusyError (409 input_busy): the input is another request's for too long
    +-- TooLargeError (422 too_large): valid, but beyond a documented limit
    +-- BudgetExceededError (429 budget_exceeded): the session's policy allows no more of these
    +-- ClientGoneError (499 client_gone): the caller went away; nobody reads the answer
    +-- NotServedError (501 not_implemented): a route kept for a compatible API, not served yet
    +-- UnavailableError (503 unavailable): a component the request needs is down
    |   +-- ConnectError (no status): the service did not answer at all, or not with JSON
    +-- DeadlineExceededError (504 deadline_exceeded; no status: the caller's own time bound)

Each class has a stable ``code`` and HTTP ``status``; an instance may carry another
code, and the status its answer came with (``status`` is None when no answer came).
The JSON body is always
``{"error": {"code", "message", "recoverable", "suggested_next_tool", "context"}}``:
the last three (as OS Screen Observer's v2 errors have them) tell an agent whether
another call can get past it, which tool to call next, and what it was about (null
when there is nothing to say). Third-party exceptions (Wayland, X11,
sway IPC) are translated into these where they enter; an answer is turned back into
one by :func:`from_answer`, the one decoder every caller uses.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "DeskboxError",
    "InvalidRequestError",
    "NotFoundError",
    "ExpiredError",
    "UnsupportedMediaTypeError",
    "UnauthorizedError",
    "DeniedError",
    "ActionFailedError",
    "ConfirmationRequiredError",
    "ConfirmationInvalidError",
    "InputBusyError",
    "TooLargeError",
    "BudgetExceededError",
    "ClientGoneError",
    "NotServedError",
    "UnavailableError",
    "ConnectError",
    "DeadlineExceededError",
    "error_body",
    "from_answer",
]

_CLASS_STATUS: Any = object()  # (an instance's status is its class's unless it is given)


class DeskboxError(Exception):
    """A failure, with what a service's error body says as attributes."""

    status: int | None = 500
    code = "internal"
    recoverable = False

    def __init__(self, message: str, *, code: str | None = None, details: object = None,
                 suggested_next_tool: str | None = None, context: dict | None = None,
                 recoverable: bool | None = None, status: int | None = _CLASS_STATUS) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if recoverable is not None:
            self.recoverable = recoverable
        if status is not _CLASS_STATUS:
            self.status = status
        self.details = details
        self.suggested_next_tool = suggested_next_tool
        self.context = context

    def __str__(self) -> str:
        return f"{self.status or '-'} {self.code}: {self.message}"

    @property
    def http_status(self) -> int:
        """The status a service answers it with: the one it came with, else its class's
        (a ConnectError raised on, which came with none, is a 503)."""
        return self.status or type(self).status or 500

    def to_json(self) -> dict:
        """The body a service answers with (its status beside it is ``status``)."""
        body: dict = {"code": self.code, "message": self.message, "recoverable": self.recoverable,
                      "suggested_next_tool": self.suggested_next_tool, "context": self.context}
        if self.details is not None:
            body["details"] = self.details
        return {"error": body}


class InvalidRequestError(DeskboxError):
    status = 400
    code = "invalid_request"
    recoverable = True  # the same call, mended


class NotFoundError(InvalidRequestError):
    status = 404
    code = "not_found"


class UnsupportedMediaTypeError(InvalidRequestError):
    status = 415
    code = "unsupported_media_type"


class ExpiredError(InvalidRequestError):
    status = 410
    code = "expired"


class UnauthorizedError(DeskboxError):
    status = 401
    code = "unauthorized"


class ActionFailedError(DeskboxError):
    recoverable = True
    status = 409
    code = "action_failed"


class TooLargeError(DeskboxError):
    status = 422
    code = "too_large"


class UnavailableError(DeskboxError):
    recoverable = True
    status = 503
    code = "unavailable"


class ConnectError(UnavailableError):
    """The service did not answer (refused, reset, gone), or not with JSON."""


class DeadlineExceededError(DeskboxError):
    recoverable = True
    status = 504
    code = "deadline_exceeded"


class InputBusyError(ActionFailedError):
    """The input is another request's for longer than a caller should wait."""

    code = "input_busy"


class ClientGoneError(DeskboxError):
    """The client went away before its answer: the work was stopped. Nobody reads this
    answer; its status (nginx's 499) is for logs and metrics."""

    recoverable = True
    status = 499
    code = "client_gone"


class NotServedError(DeskboxError):
    status = 501
    code = "not_implemented"


# The guard rails' answers (deskbox.policy): what the session's policy refuses.


class DeniedError(DeskboxError):
    status = 403
    code = "action_denied"


class BudgetExceededError(DeskboxError):
    # Not recoverable by default: the session's budget is spent. A rate budget (actions
    # per minute) is, by waiting: its raiser says so.
    status = 429
    code = "budget_exceeded"


class ConfirmationRequiredError(ActionFailedError):
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


class ConfirmationInvalidError(ActionFailedError):
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


_BY_STATUS: dict[int, type[DeskboxError]] = {
    400: InvalidRequestError, 401: UnauthorizedError, 403: DeniedError, 404: NotFoundError, 409: ActionFailedError,
    410: ExpiredError, 415: UnsupportedMediaTypeError, 422: TooLargeError, 429: BudgetExceededError,
    501: NotServedError, 503: UnavailableError, 504: DeadlineExceededError,
}


def from_answer(status: int, data: bytes, what: str, *, relayed: bool = False) -> DeskboxError:
    """A service's error answer as the family's class of its status, with its code,
    message, hints and status; other 4xx are invalid requests, other 5xx internal.
    ``what`` names the call (``desktopd /api/v1/tree``).

    ``relayed``: a service raising another's error to its own caller. The message then
    names the call, and the other's failure (5xx) is unavailability here, as a component
    the request needs failed; the status is the class's, what this service answers."""
    cls = _BY_STATUS.get(status) or (InvalidRequestError if status < 500 else
                                     UnavailableError if relayed else DeskboxError)
    kept = {} if relayed else {"status": status}
    err = error_body(data)
    if err is None:  # not one of ours (a proxy in between, a service from before the error shape)
        return cls(f"{what}: {status} {data[:200].decode(errors='replace')}", code="http_error",
                   recoverable=status < 500, **kept)
    context = err.get("context")
    recoverable = err.get("recoverable")
    return cls(f"{what}: {err.get('message', '')}" if relayed else str(err.get("message", "")),
               code=str(err.get("code") or "error"),
               recoverable=recoverable if isinstance(recoverable, bool) else None,
               suggested_next_tool=err.get("suggested_next_tool"),
               context=context if isinstance(context, dict) else None, details=err.get("details"), **kept)
