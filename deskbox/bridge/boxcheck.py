"""The box check: boxes a warm patch took from what the page measured are checked
against a DOMSnapshot soon after, and what differed is counted and logged. It owns when
a check runs and the counts; the check itself is a layout read with ``verify`` (the
Browser's, handed in), whose snapshot is compared here. It must not know how a layout
is read, patched or served.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from ..common.logging import get_logger
from .layout import DocumentBoxes
from .targets import Tab, Targets

__all__ = ["BoxCheck"]

log = get_logger("deskbox.bridge")

# Boxes measured in the page are checked against a DOMSnapshot this long after.
VERIFY_DELAY = 0.3


class BoxCheck:
    """When the boxes of each tab are checked, and what the checks found."""

    def __init__(self, targets: Targets, layout: Callable[..., Awaitable[object]]) -> None:
        self._targets = targets
        self._layout = layout
        # Box checks (a snapshot after answers with boxes from the page) run, and how many
        # of them found a box the page had not reported right: the tests read both.
        self.checks: dict[str, int] = {"run": 0, "differed": 0}

    def soon(self, tab: Tab) -> None:
        """Boxes the page measured are checked against a DOMSnapshot VERIFY_DELAY after
        the first answer that used them (in case something moved that the page's rules
        did not catch: text pushed by a float, say); what differs is patched in and
        logged. One check is pending at a time, and it checks whatever is kept when it
        runs, so a page that keeps changing is still checked that often."""
        if tab.check is not None:
            return

        def start() -> None:
            tab.check = None
            if (tab.kept is None or not tab.kept.measured or tab.target is None
                    or self._targets.tabs.get(tab.target_id) is not tab):
                return  # read whole or from a snapshot since, or closed
            asyncio.ensure_future(self._run(tab))

        tab.check = asyncio.get_running_loop().call_later(VERIFY_DELAY, start)

    async def _run(self, tab: Tab) -> None:
        try:
            assert tab.target is not None
            await self._layout(tab.target, background=True, verify=True)
        except Exception as exc:  # the next read tries again
            log.debug("box check failed", tab=tab.target_id, error=str(exc))

    def compare(self, tab_id: str, before: list[DocumentBoxes], after: list[DocumentBoxes]) -> None:
        """Count a check of the kept boxes (``before``) against a snapshot's, and log
        how many differed."""
        self.checks["run"] += 1
        drift = _drift(before, after)
        if drift:
            self.checks["differed"] += 1
            log.info("boxes measured in the page differed from the snapshot", tab=tab_id, nodes=drift)


def _drift(before: list[DocumentBoxes], after: list[DocumentBoxes]) -> int:
    """How many present boxes of nodes still in the document differ between two
    readings of the same documents (a removed node's last box is never served)."""
    count = 0
    for a, b in zip(before, after):
        alive = set(b.dom_backend)
        present_a = {k: v for k, v in a.boxes.items() if v[2] > 0 and v[3] > 0 and k in alive}
        present_b = {k: v for k, v in b.boxes.items() if v[2] > 0 and v[3] > 0}
        count += sum(1 for k in present_a.keys() | present_b.keys() if present_a.get(k) != present_b.get(k))
    return count
