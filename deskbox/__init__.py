"""deskbox services: desktopd, the CDP bridge and the scene aggregator, plus the session supervisor.

``from deskbox import Client, SyncClient, DeskboxError`` is the client of a running session
(``deskbox.client``); it is imported on first use, so that the services and the
``deskbox`` command do not load it."""

from __future__ import annotations

from typing import Any

__all__ = [
    "Client",
    "SyncClient",
    "DeskboxError",
    "InvalidRequestError",
    "NotFoundError",
    "ExpiredError",
    "UnauthorizedError",
    "ActionFailedError",
    "TooLargeError",
    "UnavailableError",
    "ConnectError",
    "DeadlineExceededError",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import client

        return getattr(client, name)
    raise AttributeError(f"module 'deskbox' has no attribute {name!r}")
