"""Joining Chromium's accessibility tree to layout boxes: pure functions over CDP replies.

Facts measured on a page scrolled by 100 px (tests/pages/frames.html):
``DOMSnapshot.captureSnapshot`` layout bounds are relative to their own document and do
not move with scrolling; ``DOM.getBoxModel`` quads are relative to the viewport. An
iframe's document has its own coordinates, starting at the iframe's content box (inside
its border and padding). So a node's document-relative box (in the top document) is the
sum of its own bounds and, for each iframe on the way, the iframe's content-box origin
minus the iframe document's scroll offset; its viewport-relative box subtracts the top
document's scroll offset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..geometry import content_box_origin, document_to_viewport, frame_document_offset, offset_box, snapshot_to_css

__all__ = ["SNAPSHOT_STYLES", "DocumentBoxes", "index_snapshot", "box_json"]

# Computed styles requested with the snapshot: what locates an iframe's content box.
SNAPSHOT_STYLES = ["border-left-width", "border-top-width", "padding-left", "padding-top"]


@dataclass
class DocumentBoxes:
    """Layout boxes of one document, by backend DOM node id, in the top document's
    coordinates (already offset for iframes)."""

    url: str
    frame_id: str | None
    offset: tuple[float, float]
    scroll: tuple[float, float]
    boxes: dict[int, tuple[float, float, float, float]] = field(default_factory=dict)
    # backend node id of an <iframe> -> its content-box origin in top-document coordinates
    frame_origins: dict[int, tuple[float, float]] = field(default_factory=dict)
    # backend node id of an <iframe> -> index of the document it holds (same process)
    child_documents: dict[int, int] = field(default_factory=dict)
    # The DOM as the snapshot lists it: backend node id and parent index of each node.
    dom_backend: list[int] = field(default_factory=list)
    dom_parent: list[int] = field(default_factory=list)
    # Nodes with a box that a page script cannot reach: backend id -> the nearest
    # ancestor's that it can, for pseudo-elements (and what is in them) and for the
    # content of user-agent and closed shadow trees.
    pseudo_owner: dict[int, int] = field(default_factory=dict)
    shadow_owner: dict[int, int] = field(default_factory=dict)
    # Made from the DOM lists when first asked (see listed and parent_of).
    _listed: frozenset[int] | None = field(default=None, repr=False, compare=False)
    _parents: dict[int, int] | None = field(default=None, repr=False, compare=False)

    def listed(self) -> frozenset[int]:
        """The backend ids of every node the snapshot listed (made once per snapshot:
        documents patched with boxes from the page share it)."""
        if self._listed is None:
            self._listed = frozenset(self.dom_backend)
        return self._listed

    def parent_of(self) -> dict[int, int]:
        """backend node id -> its parent's backend node id (made once per snapshot, as
        listed is; not to be changed by the caller)."""
        if self._parents is None:
            backend, parent = self.dom_backend, self.dom_parent
            self._parents = {b: backend[p] for b, p in zip(backend, parent) if 0 <= p < len(backend)}
        return self._parents


def _px(value: str) -> float:
    try:
        return float(value.removesuffix("px")) if value else 0.0
    except ValueError:
        return 0.0


def index_snapshot(snapshot: dict[str, Any], base_offset: tuple[float, float] = (0.0, 0.0), *,
                   device_pixel_ratio: float = 1.0) -> list[DocumentBoxes]:
    """Boxes of every document in one ``DOMSnapshot.captureSnapshot`` reply (requested
    with ``computedStyles=SNAPSHOT_STYLES``), in CSS px: the snapshot's own numbers are
    device pixels, so they are divided by the page's ``device_pixel_ratio``. Documents
    are placed through their owner iframes; ``base_offset`` places the snapshot's first
    document (an out-of-process frame's position in its page)."""
    dpr = device_pixel_ratio or 1.0
    strings: list[str] = snapshot.get("strings", [])
    raw_docs: list[dict] = snapshot.get("documents", [])
    docs: list[DocumentBoxes] = []
    for raw in raw_docs:
        frame = raw.get("frameId", -1)
        docs.append(
            DocumentBoxes(
                url=strings[raw["documentURL"]] if raw.get("documentURL", -1) >= 0 else "",
                frame_id=strings[frame] if isinstance(frame, int) and frame >= 0 else None,
                offset=(0.0, 0.0),
                scroll=snapshot_to_css((float(raw.get("scrollOffsetX", 0)), float(raw.get("scrollOffsetY", 0)),
                                        0.0, 0.0), dpr)[:2],
            )
        )
    placed = {0: base_offset} if raw_docs else {}
    # Documents come parents first in practice, but do not rely on it: place in rounds.
    pending = list(range(len(raw_docs)))
    while pending:
        progressed = False
        for di in list(pending):
            if di not in placed:
                continue
            pending.remove(di)
            progressed = True
            _index_document(raw_docs[di], strings, docs[di], placed[di], dpr)
            for owner, child in docs[di].child_documents.items():
                if child < len(docs) and child not in placed:
                    origin = docs[di].frame_origins.get(owner, (0.0, 0.0))
                    placed[child] = frame_document_offset(origin, docs[child].scroll)
        if not progressed:  # documents with no known owner: leave them at the origin
            for di in pending:
                _index_document(raw_docs[di], strings, docs[di], (0.0, 0.0), dpr)
            break
    return docs


def _index_document(raw: dict, strings: list[str], doc: DocumentBoxes, offset: tuple[float, float],
                    dpr: float = 1.0) -> None:
    doc.offset = offset
    nodes = raw.get("nodes", {})
    backend_ids: list[int] = nodes.get("backendNodeId", [])
    doc.dom_backend, doc.dom_parent = backend_ids, nodes.get("parentIndex", [])
    layout = raw.get("layout", {})
    content_docs = nodes.get("contentDocumentIndex", {})
    owner_of = dict(zip(content_docs.get("index", []), content_docs.get("value", [])))
    styles = layout.get("styles", [])
    names = nodes.get("nodeName", [])
    frame_names = {i for i, s in enumerate(strings) if s in ("IFRAME", "FRAME")}
    boxes = doc.boxes
    ox, oy = offset
    for li, (node_index, bounds) in enumerate(zip(layout.get("nodeIndex", []), layout.get("bounds", []))):
        if node_index >= len(backend_ids) or len(bounds) < 4:
            continue
        backend = backend_ids[node_index]
        own = snapshot_to_css(tuple(bounds[:4]), dpr)
        # Several layout objects can belong to one node (text fragments): keep the union.
        box = offset_box(own, offset) if ox or oy else own
        if backend in boxes:
            box = _union(boxes[backend], box)
        boxes[backend] = box
        # Frame owners, including those whose document lives in another process.
        if node_index in owner_of or (node_index < len(names) and names[node_index] in frame_names):
            style = [strings[s] if 0 <= s < len(strings) else "" for s in (styles[li] if li < len(styles) else [])]
            bl, bt, pl, pt = (_px(v) for v in (style + ["", "", "", ""])[:4])
            doc.frame_origins[backend] = content_box_origin(own, offset, (bl, bt), (pl, pt))
            if node_index in owner_of:
                doc.child_documents[backend] = owner_of[node_index]
    doc.pseudo_owner, doc.shadow_owner = _opaque_owners(nodes, strings, boxes)


def _opaque_owners(nodes: dict, strings: list[str], boxes: dict[int, tuple]) -> tuple[dict[int, int], dict[int, int]]:
    """backend id -> reachable owner's backend id, for the boxed nodes of pseudo-elements
    and for those of user-agent or closed shadow trees (nodes come parents first;
    ``shadowRootType`` is set on every node inside a shadow tree)."""
    backend_ids, parents = nodes.get("backendNodeId", []), nodes.get("parentIndex", [])
    shadow = nodes.get("shadowRootType", {})
    pseudo_starts = set(nodes.get("pseudoType", {}).get("index", []))
    shadow_starts = {i for i, v in zip(shadow.get("index", []), shadow.get("value", []))
                     if not (0 <= v < len(strings) and strings[v] == "open")}
    pseudo: dict[int, int] = {}
    hidden: dict[int, int] = {}
    if not pseudo_starts and not shadow_starts:
        return pseudo, hidden
    owner = [-1] * len(backend_ids)  # index of the reachable owner, or -1 for a reachable node
    in_pseudo = bytearray(len(backend_ids))
    for i, p in enumerate(parents[:len(backend_ids)]):
        if not 0 <= p < i:
            continue
        if owner[p] >= 0:
            owner[i], in_pseudo[i] = owner[p], in_pseudo[p]
        elif i in pseudo_starts or i in shadow_starts:
            owner[i], in_pseudo[i] = p, i in pseudo_starts
        else:
            continue
        if backend_ids[i] in boxes:
            (pseudo if in_pseudo[i] else hidden)[backend_ids[i]] = backend_ids[owner[i]]
    return pseudo, hidden


def _union(a: tuple[float, ...], b: tuple[float, ...]) -> tuple[float, float, float, float]:
    x0, y0 = min(a[0], b[0]), min(a[1], b[1])
    x1, y1 = max(a[0] + a[2], b[0] + b[2]), max(a[1] + a[3], b[1] + b[3])
    return (x0, y0, x1 - x0, y1 - y0)


def box_json(box: tuple[float, float, float, float], scroll: tuple[float, float]) -> tuple[dict, dict]:
    """(document-relative ``bounds`` with its ``borderBox``, viewport-relative box)."""
    doc = _rect_json(box)
    return {**doc, "borderBox": dict(doc)}, _rect_json(document_to_viewport(box, scroll))


def _rect_json(box: tuple[float, float, float, float]) -> dict:
    return {"x": box[0], "y": box[1], "width": box[2], "height": box[3]}
