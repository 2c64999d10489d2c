"""A tab's layout as the bridge keeps it between requests (Kept), with the tree and boxes
of each out-of-process frame (OopifTree), the one index over its records
(``backend_index``) and Cold, raised when a kept layout cannot be patched and is fetched
whole instead. Plain data: it must not know CDP, sessions, or how a layout is read,
patched or served.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .axtree import AXRecord
from .layout import DocumentBoxes

__all__ = ["Cold", "OopifTree", "Kept", "backend_index"]


class Cold(Exception):
    """The kept tree cannot be patched: fetch the tab whole."""


@dataclass(eq=False)
class OopifTree:
    """An out-of-process frame's tree and boxes (in its own document's coordinates)."""

    target_id: str
    url: str
    key: tuple
    owner: int
    records: dict[str, AXRecord] | None
    root: str | None
    boxes: dict[int, tuple]
    scroll: tuple[float, float]
    docs: list[DocumentBoxes]


@dataclass(eq=False)
class Kept:
    """A tab's layout kept between requests: what a warm refresh patches."""

    doc: str  # the page's document identity (its watcher's)
    made_at: float
    windows: str
    records: dict[str, AXRecord]  # every same-process frame's nodes (their ids are unique)
    roots: list[tuple[str, str | None]]  # (frame id, AX root id or None for the DOM fallback)
    docs: list[DocumentBoxes]
    oopifs: dict[str, OopifTree]
    meta: dict
    # As served: node ids in order, each node's JSON and ignored flag (parts is None when
    # a frame fell back to DOM nodes), each node's frame, and an index built on demand.
    order: list[str] = field(default_factory=list)
    parts: list[bytes] | None = None
    ignored: list[bool] = field(default_factory=list)
    frame_of: dict[str, str] = field(default_factory=dict)
    index: dict[str, int] | None = None
    boxes: dict[str, dict[int, tuple]] = field(default_factory=dict)  # frame id -> backend -> box
    scroll: tuple[float, float] = (0.0, 0.0)
    present: dict[str, set[int]] = field(default_factory=dict)  # frame id -> backends with a non-empty box
    by_backend: dict[int, str] = field(default_factory=dict)  # same-process frames: backend -> AX node id
    # The boxes were patched from what the page measured (not a DOMSnapshot): a snapshot
    # in the background checks them soon after.
    measured: bool = False
    # Nodes the page measured since the last snapshot that its DOM does not list: where
    # they are in the document is known only once a snapshot lists them.
    unlisted: frozenset[int] = frozenset()

    @property
    def fallback(self) -> bool:
        return any(root is None for _, root in self.roots) or any(o.records is None for o in self.oopifs.values())


def backend_index(records: dict[str, AXRecord]) -> dict[int, str]:
    """backend DOM node id -> its AX node; a DOM node with several AX nodes maps to
    None (its box changes make the whole tree serialize again)."""
    out: dict[int, str] = {}
    for node_id, record in records.items():
        backend = record.backend
        if backend is not None:
            out[backend] = None if backend in out else node_id  # type: ignore[assignment]
    return out
