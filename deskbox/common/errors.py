"""The error hierarchy every deskbox service answers with.

    ServiceError (500 internal)
    +-- InvalidRequest (400 invalid_request): could not be parsed or validated
    |   +-- NotFoundError (404 not_found)
    +-- Unauthorized (401 unauthorized)
    +-- ActionFailed (409 action_failed): valid, but could not be applied now
    +-- TooLarge (422 too_large): valid, but beyond a documented limit
    +-- Unavailable (503 unavailable): a component the request needs is down
    +-- DeadlineExceeded (504 deadline_exceeded): valid, but it did not finish in time

Each has a stable ``code`` and HTTP ``status``; the JSON body is always
``{"error": {"code": ..., "message": ...}}``. Third-party exceptions (Wayland, X11,
sway IPC) are translated into these where they enter.
"""

from __future__ import annotations

__all__ = [
    "ServiceError",
    "InvalidRequest",
    "NotFoundError",
    "Unauthorized",
    "ActionFailed",
    "TooLarge",
    "Unavailable",
    "DeadlineExceeded",
]


class ServiceError(Exception):
    status = 500
    code = "internal"

    def __init__(self, message: str, *, code: str | None = None, details: object = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details

    def to_json(self) -> dict:
        body: dict = {"code": self.code, "message": self.message}
        if self.details is not None:
            body["details"] = self.details
        return {"error": body}


class InvalidRequest(ServiceError):
    status = 400
    code = "invalid_request"


class NotFoundError(InvalidRequest):
    status = 404
    code = "not_found"


class Unauthorized(ServiceError):
    status = 401
    code = "unauthorized"


class ActionFailed(ServiceError):
    status = 409
    code = "action_failed"


class TooLarge(ServiceError):
    status = 422
    code = "too_large"


class Unavailable(ServiceError):
    status = 503
    code = "unavailable"


class DeadlineExceeded(ServiceError):
    status = 504
    code = "deadline_exceeded"
