"""The gate a back end's starts go through, so that a harness that ends can take down
everything it started: once it is closed no start begins, and :meth:`Launches.close`
returns when the starts in flight (a ``podman run``, a ``kubectl apply``) have returned,
so nothing is created after the harness has looked for what to remove."""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator

from . import ProviderError

__all__ = ["Launches"]


class Launches:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._in_flight = 0
        self.closed = False

    @contextlib.contextmanager
    def launching(self, what: str) -> Iterator[None]:
        """Around the command that creates ``what``; ProviderError once closed."""
        with self._changed:
            if self.closed:
                raise ProviderError(f"{what} was not started: its harness is ending")
            self._in_flight += 1
        try:
            yield
        finally:
            with self._changed:
                self._in_flight -= 1
                self._changed.notify_all()

    def close(self, wait: float) -> bool:
        """No start begins from now on; True once none is in flight (False when some still
        were after ``wait`` seconds)."""
        with self._changed:
            self.closed = True
            return self._changed.wait_for(lambda: self._in_flight == 0, wait)
