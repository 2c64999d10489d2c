"""The error hierarchy every deskbox service answers with.

    ServiceError (500 internal)
    +-- InvalidRequest (400 invalid_request): could not be parsed or validated
    |   +-- NotFoundError (404 not_found)
    |   +-- Expired (410 expired): a token or snapshot that was valid and is no more
    +-- Unauthorized (401 unauthorized)
    +-- ActionFailed (409 action_failed): valid, but could not be applied now
    +-- TooLarge (422 too_large): valid, but beyond a documented limit
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
    "NotServed",
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


class NotServed(ServiceError):
    status = 501
    code = "not_implemented"
