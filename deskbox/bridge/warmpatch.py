"""The warm patch: a kept layout brought up to date with what the page listed as changed
since it was read. The changed parts of the AX tree are re-read (refetch.py); boxes come
from what the page measured when it can tell, else from a new DOMSnapshot; elements that
gained or lost a box with no DOM change of their own are re-read too; changed out-of-
process frames are read whole. Raises Cold when the change is too big to patch. It must
not know when or why a tab is read, nor how the kept tree was first read or is served.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from ..cdp import CDPConnection
from ..common.logging import get_logger
from ..geometry import measured_to_snapshot, moved_with
from .axtree import AXRecord
from .fullread import oopif_tree, read_oopif, read_side
from .kept import Cold, Kept
from .layout import DocumentBoxes, index_snapshot
from .pagecalls import Measured, capture_snapshot, safe, take
from .refetch import merge, refetch
from .serialize import Snapshot, finish
from .targets import Tab

if TYPE_CHECKING:
    from .boxcheck import BoxCheck

__all__ = ["read_warm"]

log = get_logger("deskbox.bridge")

UNMEASURED_MAX = 20  # new nodes the page could not measure, each described to tell what it is


async def read_warm(conn: CDPConnection, tab: Tab, session: str, kept: Kept, metrics: dict,
                    frame_keys: tuple, check: BoxCheck, verify: bool = False) -> Snapshot:
    """Patch the kept tree with what changed; raises Cold when it cannot. Boxes come
    from what the page measured when it could tell, else (and with ``verify``) from a
    new DOMSnapshot."""
    if set(tab.oopifs) != set(kept.oopifs):
        raise Cold("out-of-process frames came or went")
    started = time.perf_counter()
    taken = await take(conn, session, reset=False)
    took = {"take": time.perf_counter() - started}
    if taken is None or taken == "full":
        raise Cold("the document changed as a whole")
    windows, overflow, subtree, parents, single, measured = taken
    if overflow or windows != kept.windows:
        raise Cold("more changed than the page listed")
    if metrics["url"] != kept.meta.get("url"):
        # A same-document navigation (a fragment, pushState) shows on the root node.
        root = kept.records.get(kept.roots[0][1] or "")
        if root is not None and root.backend is not None:
            single = [*single, root.backend]
    measured_docs = None if verify else _measured_docs(kept, measured, metrics["devicePixelRatio"], subtree, parents)
    tasks: dict[str, asyncio.Future] = {}

    async def snapshot_docs() -> list[DocumentBoxes]:
        if "snapshot" not in tasks:
            tasks["snapshot"] = asyncio.ensure_future(capture_snapshot(conn, session))
        snapshot = await tasks["snapshot"]
        took["snapshot"] = time.perf_counter() - started
        docs = index_snapshot(snapshot, device_pixel_ratio=metrics["devicePixelRatio"])
        del snapshot
        if ([d.frame_id for d in docs] != [d.frame_id for d in kept.docs]
                or [d.url for d in docs[1:]] != [d.url for d in kept.docs[1:]]):
            raise Cold("frames changed")
        if verify and kept.measured:
            check.compare(tab.target_id, kept.docs, docs)
        return docs

    async def page_cannot_tell(records: dict[str, AXRecord]) -> bool:
        # New nodes the page could not measure: the inner parts Chromium makes for an
        # input, which a snapshot does not box either, or a pseudo-element, which it does.
        unmeasured = _unmeasured(kept, measured, records) if measured is not None else []
        return bool(unmeasured) and (len(unmeasured) > UNMEASURED_MAX
                                     or await _any_pseudo(conn, session, unmeasured))

    def read_boxes() -> None:
        # Sent right after the AX reads: the page's process answers those first and
        # then builds the snapshot while this process decodes them.
        if measured_docs is None:
            tasks["snapshot"] = asyncio.ensure_future(capture_snapshot(conn, session))
        tasks["side"] = asyncio.ensure_future(read_side(conn, tab.target_id, session))

    keys = dict((k[0], k) for k in frame_keys)
    oopif_tasks = {t: asyncio.ensure_future(read_oopif(conn, tab.oopifs[t]))
                   for t, tree in kept.oopifs.items() if keys.get(t) != tree.key}
    try:
        fresh, whole = await refetch(conn, session, kept, subtree, single, read_boxes, parents=parents)
        took["ax"] = time.perf_counter() - started
        if not tasks:
            read_boxes()
        if measured_docs is not None and await page_cannot_tell(fresh):
            measured_docs = None
        docs = measured_docs if measured_docs is not None else await snapshot_docs()
        records, by_backend = merge(kept, fresh)
        # Elements that gained or lost a box with no DOM change of their own (a CSS rule
        # that shows a menu): re-read the AX subtree around them too. One that the page
        # reported before but no snapshot has listed yet (added hidden, then shown by a
        # style alone) cannot be placed in the document without a snapshot.
        for _ in range(3):
            around, unplaced = _presence_changes(kept, docs, by_backend, whole)
            if measured_docs is not None and not kept.unlisted.isdisjoint(unplaced):
                measured_docs = None
                docs = await snapshot_docs()
                continue
            if not around:
                break
            more, more_whole = await refetch(conn, session, kept, around, [])
            fresh.update(more)
            whole |= more_whole
            records, by_backend = merge(kept, fresh)
            if measured_docs is None or not await page_cannot_tell(more):
                break
            # A shown element's new marker or ::before: boxes from a snapshot, which
            # may show more that gained or lost a box (those not re-read just now).
            measured_docs = None
            docs = await snapshot_docs()
        side = await tasks["side"]
        oopifs = dict(kept.oopifs)
        for target_id, task in oopif_tasks.items():
            tree = await oopif_tree(conn, session, tab.oopifs.get(target_id), task, frame_keys)
            if tree is None:
                raise Cold("an out-of-process frame could not be read")
            oopifs[target_id] = tree
    finally:
        for task in (*tasks.values(), *oopif_tasks.values()):
            if not task.done():
                task.cancel()
    unlisted = (kept.unlisted | _not_listed(docs[0], measured.boxes)) if measured_docs is not None else frozenset()
    new = Kept(doc=kept.doc, made_at=kept.made_at, windows=kept.windows, records=records, roots=kept.roots,
               docs=docs, oopifs=oopifs, meta={}, by_backend=by_backend, measured=measured_docs is not None,
               unlisted=unlisted)
    took["merged"] = time.perf_counter() - started
    snapshot = finish(new, metrics, side, prev=kept, fresh=set(fresh) & set(records))
    tab.kept = new
    took["served"] = time.perf_counter() - started
    log.debug("warm refresh", tab=tab.target_id, subtrees=len(subtree), parents=len(parents), nodes=len(single),
              fresh=len(fresh), boxes="page" if new.measured else "snapshot",
              moved=len(measured.boxes) if measured is not None else None,
              **{k: round(v * 1000, 1) for k, v in took.items()})
    return snapshot


def _presence_changes(kept: Kept, docs: list[DocumentBoxes], by_backend: dict[int, str | None],
                      whole: set[str]) -> tuple[list[int], list[int]]:
    """Elements around DOM nodes that gained or lost a box, outside the subtrees already
    re-read: the nearest one with an AX node, by the documents' DOM; and the nodes that
    gained or lost one that neither has an AX node nor is in that DOM (gone, or new
    since the DOM was listed)."""
    main_frame = kept.roots[0][0] if kept.roots else None
    changed: set[int] = set()
    now: dict[str, set[int]] = {}
    for d in docs:
        fid = d.frame_id or main_frame
        now.setdefault(fid, set()).update(b for b, v in d.boxes.items() if v[2] > 0 and v[3] > 0)
    for fid, present in now.items():
        changed |= present.symmetric_difference(kept.present.get(fid, set()))
    if not changed:
        return [], []
    parents: dict[int, int] = {}
    for d in docs:
        parents.update(d.parent_of())
    out: list[int] = []
    unplaced: list[int] = []
    for backend in changed:
        b: int | None = backend
        while b is not None and b not in by_backend:
            b = parents.get(b)
        if b is None:
            unplaced.append(backend)  # gone from the document (its parent's change lists it), or new
        elif by_backend[b] not in whole:
            out.append(b)
    return list(dict.fromkeys(out)), unplaced


def _measured_docs(kept: Kept, measured: Measured | None, dpr: float, subtree: list[int] = (),
                   parents: list[int] = ()) -> list[DocumentBoxes] | None:
    """The kept document's boxes with those the page measured put in, or None when a
    DOMSnapshot is needed: the page could not tell, there are same-process frames, an
    iframe moved, an element with boxed pseudo-elements moved (they do not simply move
    with it: Chromium places a list item's marker 40 px further right when the item is
    first in its list), or one with boxed user-agent shadow content (an input's text)
    changed size, or an element with either kind changed (``subtree``: it or an ancestor;
    ``parents``: its children), since what the page cannot reach may have changed with
    it: a ::after's text, what was typed into an input. That content moves with its
    element when only the element moved."""
    if measured is None or len(kept.docs) != 1 or kept.fallback:
        return None
    old = kept.docs[0]
    moved = measured.boxes
    if any(b in old.frame_origins for b in moved):
        return None
    if old.pseudo_owner and not moved.keys().isdisjoint(old.pseudo_owner.values()):
        return None
    owners = {*old.pseudo_owner.values(), *old.shadow_owner.values()}
    if owners and (not owners.isdisjoint(parents) or _any_within(owners, set(subtree), old)):
        return None
    boxes = dict(old.boxes)
    for backend, box in moved.items():
        if box[2] > 0 or box[3] > 0:
            boxes[backend] = measured_to_snapshot(box, dpr)
        else:
            boxes.pop(backend, None)
    for node, owner in old.shadow_owner.items():
        if owner not in moved or node not in boxes or node in moved:
            continue  # (the page measured it itself: the content of a closed shadow root)
        before, after = old.boxes.get(owner), boxes.get(owner)
        if before is None or after is None or before[2:] != after[2:]:
            return None
        boxes[node] = moved_with(boxes[node], before, after)
    return [replace(old, boxes=boxes, scroll=measured.scroll)]


def _any_within(nodes: set[int], roots: set[int], doc: DocumentBoxes) -> bool:
    """Whether one of ``nodes`` is one of ``roots`` or inside one, by the document's DOM."""
    if not roots:
        return False
    if not nodes.isdisjoint(roots):
        return True
    parent = doc.parent_of()
    for node in nodes:
        seen = 0
        b = parent.get(node)
        while b is not None and seen < 4096:
            if b in roots:
                return True
            b, seen = parent.get(b), seen + 1
    return False


def _not_listed(doc: DocumentBoxes, boxes: dict[int, tuple]) -> frozenset[int]:
    """Those of ``boxes`` that the document's DOM (as its snapshot listed it) lacks."""
    listed = doc.listed()
    return frozenset(b for b in boxes if b not in listed)


def _unmeasured(kept: Kept, measured: Measured, fresh: dict[str, AXRecord]) -> list[int]:
    """Re-read AX nodes' DOM nodes that are new to the kept document and that the page
    did not measure: a pseudo-element, or the inner element Chromium makes for an input
    when it is first needed (inside the input's user-agent shadow tree, whose content
    DOMSnapshot gives no box)."""
    old = kept.docs[0]
    known: set[int] | None = None
    out: list[int] = []
    for record in fresh.values():
        b = record.backend
        if b is None or b in measured.boxes or b in old.boxes:
            continue
        if known is None:
            known = old.listed()
        if b not in known:
            out.append(b)
    return out


async def _any_pseudo(conn: CDPConnection, session: str, backends: list[int]) -> bool:
    """Whether one of these nodes is a pseudo-element (or cannot be described)."""
    described = await asyncio.gather(*[safe(conn.send("DOM.describeNode", {"backendNodeId": b}, session=session))
                                       for b in backends])
    return any(d is None or "pseudoType" in d.get("node", {}) for d in described)
