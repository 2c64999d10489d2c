"""The one error ``deskbox up`` stops with: it says what went wrong, and where to look."""

from __future__ import annotations

__all__ = ["SessionError"]


class SessionError(Exception):
    pass
