"""A kept layout as it is served: ``finish`` places every frame's boxes in the top
document, joins them to the AX nodes and serializes each node once into the bytes a
reply splices together (after a warm patch, only the nodes whose record or box changed),
and Snapshot hands those bytes out. It must not know CDP, sessions, or how the kept tree
was read or patched.
"""

from __future__ import annotations

import orjson

from ..geometry import frame_document_offset
from .axtree import AXRecord, preorder
from .kept import Kept
from .layout import box_json

__all__ = ["Snapshot", "finish", "box_fragment"]


def finish(kept: Kept, metrics: dict, side: dict, prev: Kept | None = None,
           fresh: set[str] | None = None, fragments: dict[str, dict[int, bytes]] | None = None) -> Snapshot:
    """Place every frame, join nodes to boxes and serialize them; keep it all. With
    ``prev`` (the tree this one patches) and ``fresh`` (the re-read node ids), only
    the nodes whose record or box changed are serialized again. The caller keeps
    ``kept`` on its tab."""
    docs = kept.docs
    scroll = docs[0].scroll if docs else (0.0, 0.0)
    frame_tree = side["frame_tree"]["frameTree"]["frame"]
    main_frame = kept.roots[0][0] if kept.roots else frame_tree["id"]
    frames = [{"frameId": main_frame, "url": frame_tree["url"], "parentFrameId": None,
               "outOfProcess": False, "offset": {"x": 0, "y": 0}}]
    boxes: dict[str, dict[int, tuple]] = {}
    for d in docs:
        fid = d.frame_id or main_frame
        boxes.setdefault(fid, {}).update(d.boxes)
        if d.frame_id and d.frame_id != main_frame:
            frames.append({"frameId": d.frame_id, "url": d.url, "parentFrameId": None, "outOfProcess": False,
                           "offset": {"x": d.offset[0], "y": d.offset[1]}})
    owners = {b: o for d in docs for b, o in d.frame_origins.items()}
    trees: list[tuple[str, dict[str, AXRecord] | None, str | None]] = [(fid, kept.records, root)
                                                                         for fid, root in kept.roots]
    for tree in kept.oopifs.values():
        origin = owners.get(tree.owner)
        if origin is None:
            continue
        offset = frame_document_offset(origin, tree.scroll)
        frames.append({"frameId": tree.target_id, "url": tree.url, "parentFrameId": None, "outOfProcess": True,
                       "offset": {"x": offset[0], "y": offset[1]}})
        boxes[tree.target_id] = {b: (x + offset[0], y + offset[1], w, h) for b, (x, y, w, h) in tree.boxes.items()}
        trees.append((tree.target_id, tree.records, tree.root))
    kept.boxes, kept.scroll = boxes, scroll
    kept.present = {fid: {b for b, v in frame_boxes.items() if v[2] > 0 and v[3] > 0}
                    for fid, frame_boxes in boxes.items()}
    kept.meta = _meta(side, metrics, frames, "ax")
    if prev is not None and fresh is not None and prev.scroll == scroll and prev.parts is not None:
        patched = _patch(kept, prev, fresh, trees)
        if patched:
            return Snapshot(kept.meta, kept.parts, kept.ignored)
    parts: list[bytes] = []
    ignored: list[bool] = []
    order: list[str] = []
    frame_of: dict[str, str] = {}
    source = "ax"
    for fid, records, root in trees:
        frame_boxes = boxes.get(fid, {})
        if records is None or root is None:
            source = "mixed" if parts else "dom"
            for node in _dom_fallback(fid, frame_boxes, scroll):
                parts.append(orjson.dumps(node))
                ignored.append(False)
            kept.parts = None  # never patched
            continue
        ids, _missing = preorder(root, records)
        frame_head = b',"frameId":' + orjson.dumps(fid) + b","
        made = (fragments or {}).get(fid)
        if made is None:
            made = {b: box_fragment(box, scroll) for b, box in frame_boxes.items() if box[2] > 0 and box[3] > 0}
        for node_id in ids:
            record = records[node_id]
            fragment = made.get(record.backend, _NO_BOX) if record.backend is not None else _NO_BOX
            parts.append(record.ax[:-1] + frame_head + fragment)
            ignored.append(record.ignored)
            frame_of[node_id] = fid
        order += ids
    if source != "ax":
        kept.meta = _meta(side, metrics, frames, source)
    else:
        kept.parts = parts
    kept.ignored, kept.order, kept.frame_of = ignored, order, frame_of
    kept.index = None
    return Snapshot(kept.meta, parts, ignored)


def _patch(kept: Kept, prev: Kept, fresh: set[str], trees) -> bool:
    """Serialize again only the re-read nodes and those whose box changed, splicing in
    the subtrees whose children changed. False when that is not possible."""
    assert prev.parts is not None
    if set(kept.oopifs) != set(prev.oopifs) or any(kept.oopifs[t] is not prev.oopifs[t] for t in kept.oopifs):
        return False
    records = kept.records
    index = prev.index
    if index is None:
        index = {node_id: i for i, node_id in enumerate(prev.order)}
    reshaped = {n for n in fresh if n not in prev.records or prev.records[n].child_ids != records[n].child_ids}
    outermost: list[str] = []
    for node_id in reshaped:
        parent = records[node_id].parent_id
        while parent is not None and parent not in reshaped:
            parent = records[parent].parent_id if parent in records else None
        if parent is None:
            if node_id not in index:
                return False
            outermost.append(node_id)
    changed: set[str] = {n for n in fresh if n in index}
    by_backend = kept.by_backend
    for fid, frame_boxes in kept.boxes.items():
        old_boxes = prev.boxes.get(fid, {})
        moved = {b for b, v in frame_boxes.items() if old_boxes.get(b) != v}
        moved.update(old_boxes.keys() - frame_boxes.keys())
        if moved and fid in kept.oopifs:
            return False
        for b in moved:
            if b not in by_backend:
                continue
            node_id = by_backend[b]
            if node_id is None:
                return False
            if prev.frame_of.get(node_id) == fid:
                changed.add(node_id)
    parts = list(prev.parts)
    ignored = list(prev.ignored)
    order = prev.order
    frame_of = prev.frame_of
    for node_id in changed:
        fid = frame_of.get(node_id)
        if fid is None or node_id not in records:
            continue  # gone: spliced out below
        i = index[node_id]
        parts[i] = _render(records[node_id], fid, kept)
        ignored[i] = records[node_id].ignored
    if outermost:
        order = list(order)
        frame_of = dict(frame_of)
        # A node already served (and brought up to date above) keeps its bytes when a
        # subtree around it is spliced: only the new nodes are serialized.
        served = list(parts)
        for node_id in sorted(outermost, key=index.__getitem__, reverse=True):
            start = index[node_id]
            old_ids = preorder(node_id, prev.records)[0]
            if order[start:start + len(old_ids)] != old_ids:
                return False
            new_ids = preorder(node_id, records)[0]
            fid = frame_of[node_id]
            for gone in old_ids:
                frame_of.pop(gone, None)
            for n in new_ids:
                frame_of[n] = fid
            end = start + len(old_ids)
            parts[start:end] = [served[index[n]] if n in index else _render(records[n], fid, kept)
                                for n in new_ids]
            ignored[start:end] = [records[n].ignored for n in new_ids]
            order[start:end] = new_ids
        index = None
    kept.parts, kept.ignored, kept.order, kept.frame_of, kept.index = parts, ignored, order, frame_of, index
    return True


def _render(record: AXRecord, fid: str, kept: Kept) -> bytes:
    box = kept.boxes.get(fid, {}).get(record.backend) if record.backend is not None else None
    return _node_json(record.ax, orjson.dumps(fid), box, kept.scroll)


_NO_BOX = b'"bounds":null,"viewportBounds":null}'


def box_fragment(box: tuple, scroll: tuple[float, float]) -> bytes:
    """The end of a served node with this box: its bounds and viewportBounds, and "}"."""
    bounds, viewport = box_json(box, scroll)
    return orjson.dumps({"bounds": bounds, "viewportBounds": viewport})[1:]


def _node_json(ax: bytes, fid_json: bytes, box: tuple | None, scroll: tuple[float, float]) -> bytes:
    """A node as served: its AX JSON with frameId, bounds and viewportBounds added."""
    empty = box is None or not (box[2] > 0 and box[3] > 0)
    return ax[:-1] + b',"frameId":' + fid_json + b"," + (_NO_BOX if empty else box_fragment(box, scroll))


def _meta(side: dict, metrics: dict, frames: list[dict], source: str) -> dict:
    page_metrics, window = side["page_metrics"], side["window"]
    vv, lv, cs = page_metrics["cssVisualViewport"], page_metrics["cssLayoutViewport"], page_metrics["cssContentSize"]
    zoom = vv.get("zoom", 1)
    bounds = (window or {}).get("bounds", {})
    return {
        "viewport": {
            "visualViewport": {"x": vv["pageX"], "y": vv["pageY"], "width": vv["clientWidth"],
                               "height": vv["clientHeight"], "scale": vv.get("scale", 1), "zoom": zoom},
            "layoutViewport": {"x": lv["pageX"], "y": lv["pageY"], "width": lv["clientWidth"],
                               "height": lv["clientHeight"]},
            "contentSize": {"width": cs["width"], "height": cs["height"]},
        },
        "window": {
            "outerWidth": metrics["outerWidth"], "outerHeight": metrics["outerHeight"],
            "innerWidth": metrics["innerWidth"], "innerHeight": metrics["innerHeight"],
            "devicePixelRatio": metrics["devicePixelRatio"], "pageZoom": zoom,
            "browserChromeHeight": round(metrics["outerHeight"] - metrics["innerHeight"] * zoom, 2),
            "scrollX": metrics["scrollX"], "scrollY": metrics["scrollY"],
            "windowBounds": {k: bounds.get(k) for k in ("left", "top", "width", "height")} if bounds else None,
            "windowState": bounds.get("windowState") if bounds else None,
        },
        "visibility": metrics["visibility"],
        "title": metrics["title"],
        "url": metrics["url"],
        "frames": frames,
        "source": source,
    }


def _dom_fallback(frame_id: str, boxes: dict[int, tuple], scroll: tuple[float, float]) -> list[dict]:
    nodes = []
    for backend, box in boxes.items():
        bounds, viewport = box_json(box, scroll) if box[2] > 0 and box[3] > 0 else (None, None)
        nodes.append({"nodeId": f"dom:{backend}", "backendDOMNodeId": backend, "ignored": False,
                      "role": {"type": "internalRole", "value": "generic"}, "frameId": frame_id,
                      "bounds": bounds, "viewportBounds": viewport, "source": "dom"})
    return nodes


class Snapshot:
    """One served layout: its fixed sections and each node's JSON (all nodes, or the
    non-ignored ones), handed out in batches."""

    LAYOUT_KEYS = ("viewport", "window", "frames", "source")
    BATCH = 2000

    def __init__(self, meta: dict, parts: list[bytes], ignored: list[bool]) -> None:
        self.meta = meta
        self._parts = parts
        self._ignored = ignored

    @property
    def title(self) -> str:
        return self.meta["title"]

    @property
    def visible(self) -> bool:
        return self.meta["visibility"] == "visible"

    def chunks(self, interesting: bool) -> list[bytes]:
        """The layout's JSON in pieces that concatenate to one object."""
        parts = self._parts
        if interesting:
            parts = [p for p, ignored in zip(parts, self._ignored) if not ignored]
        head = orjson.dumps({k: self.meta[k] for k in self.LAYOUT_KEYS})
        out = [head[:-1] + b',"nodes":[']
        for start in range(0, len(parts), self.BATCH):
            out.append((b"," if start else b"") + b",".join(parts[start:start + self.BATCH]))
        out.append(b"]}")
        return out
