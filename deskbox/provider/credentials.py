"""A session's token on OSWorld's controllers' requests to that session, and on no other.

desktop-env's controllers, setup steps and getters call the session's OSWorld server
with ``requests`` and have no way to add a header, so a session that asks for a bearer
token (on a cluster every pod can reach every other: its sessions should) refused them
all. :func:`authorize` registers a token for one origin (scheme, host and port): every
``requests`` call of this process to exactly that origin carries ``Authorization:
Bearer <token>`` unless it sets its own; nothing else does. A task's downloads from other
hosts never see it, and a redirect from the session to another origin loses it
(``requests`` drops the header across hosts, and it is not added back there)."""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

__all__ = ["authorize", "forget", "token_for"]

_lock = threading.Lock()
_tokens: dict[tuple[str, str, int], str] = {}
_installed = False


def _origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or (443 if scheme == "https" else 80)


def token_for(url: str) -> str | None:
    with _lock:
        return _tokens.get(_origin(url))


def authorize(url: str, token: str) -> None:
    """Send ``token`` with every ``requests`` call to ``url``'s origin."""
    _install()
    with _lock:
        _tokens[_origin(url)] = token


def forget(url: str) -> None:
    with _lock:
        _tokens.pop(_origin(url), None)


def _install() -> None:
    global _installed
    import requests

    with _lock:
        if _installed:
            return
        _installed = True
    send = requests.Session.send

    def send_with_token(self, request, **kwargs):  # every request, redirects included, passes here
        token = token_for(request.url or "")
        if token is not None and "Authorization" not in request.headers:
            request.headers["Authorization"] = f"Bearer {token}"
        return send(self, request, **kwargs)

    requests.Session.send = send_with_token  # type: ignore[method-assign]
