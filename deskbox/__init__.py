"""deskbox services: desktopd, the CDP bridge and the scene aggregator, plus the session supervisor.

``from deskbox import Client, AsyncClient, DeskboxError`` is the client of a running
session: ``Client`` called plainly, ``AsyncClient`` with ``await``, the same methods in
both (``deskbox.client``), answering pydantic models of the services' JSON
(``deskbox.answers``). They are imported on first use, so that the services and the
``deskbox`` command do not load them. ``SyncClient`` is ``Client``'s former name, kept
for one release."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import (
        ActionFailedError,
        AsyncClient,
        BudgetExceededError,
        ConnectError,
        DeadlineExceededError,
        DeniedError,
        DeskboxError,
        ExpiredError,
        InvalidRequestError,
        NotFoundError,
        TooLargeError,
        UnauthorizedError,
        UnavailableError,
    )
    from .client_sync import Client

__all__ = [
    "Client",
    "AsyncClient",
    "DeskboxError",
    "InvalidRequestError",
    "NotFoundError",
    "ExpiredError",
    "UnauthorizedError",
    "ActionFailedError",
    "DeniedError",
    "BudgetExceededError",
    "TooLargeError",
    "UnavailableError",
    "ConnectError",
    "DeadlineExceededError",
]


def __getattr__(name: str) -> Any:
    if name == "Client":
        from .client_sync import Client

        return Client
    if name == "SyncClient":
        warnings.warn("deskbox.SyncClient is now deskbox.Client (AsyncClient is the asyncio one); the old name "
                      "goes in the next release", DeprecationWarning, stacklevel=2)
        from .client_sync import Client

        return Client
    if name in __all__:
        from . import client

        return getattr(client, name)
    raise AttributeError(f"module 'deskbox' has no attribute {name!r}")
