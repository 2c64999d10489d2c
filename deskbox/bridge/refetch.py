"""Re-reading parts of a kept AX tree: the nodes under each changed element (level by
level with getPartialAXTree, queryAXTree for what the levels cannot reach), each changed
parent with its children and each single changed node, and merging what was re-read
into the kept records. Raises Cold when too much changed or a changed part cannot be
read. It must not know boxes, DOMSnapshots, or how the patched tree is served.
"""

from __future__ import annotations

import asyncio

from ..cdp import CDPConnection
from .axtree import AXRecord, decode_nodes, partial_result, preorder, subtree_ids
from .kept import Cold, Kept, backend_index
from .pagecalls import safe

__all__ = ["refetch", "merge"]

WARM_SHARE = 0.3  # re-reading more than this share of a tree in parts: fetch it whole instead
WARM_MIN = 500  # (but a small tree is always patched)


async def refetch(conn: CDPConnection, session: str, kept: Kept, subtree: list[int],
                  single: list[int], sent=None, parents: list[int] = ()) -> tuple[dict[str, AXRecord], set[str]]:
    """Fresh records for the nodes under each ``subtree`` element (and its ancestors),
    for each of ``parents`` with its children, and for each ``single`` element; and
    the ids whose whole subtree is fresh.

    A subtree is read level by level with getPartialAXTree (a node, its children
    through ignored ones, its ancestors), which answers at once; queryAXTree reads a
    subtree in one call but waits for the page's next rendering update (150 ms and
    more here), so it only reads what the levels could not reach."""
    total = len(kept.records) or 1
    budget = 0
    roots = list(dict.fromkeys(subtree))
    for backend in roots:
        node_id = kept.by_backend.get(backend)
        if node_id is not None:
            budget += sum(1 for _ in subtree_ids(node_id, kept.records))
    if budget > max(WARM_SHARE * total, WARM_MIN):
        raise Cold("too much changed")
    fresh: dict[str, AXRecord] = {}
    whole: dict[str, int] = {}  # re-read subtree root -> its element's backend id
    frame_roots = {root for _, root in kept.roots}
    singles = list(dict.fromkeys(single))
    # A parent whose list of children changed: the node with its children (and
    # ancestors), read like a subtree's first level.
    expand: list[int] = list(dict.fromkeys(parents))  # nodes whose children are to be read
    kids: list[int] = []  # ignored nodes: read their DOM children's AX nodes
    query: list[int] = []  # subtrees the levels could not finish
    rounds = 0

    def partial(backend: int, relatives: bool):
        return asyncio.ensure_future(safe(conn.send(
            "Accessibility.getPartialAXTree", {"backendNodeId": backend, "fetchRelatives": relatives},
            session=session, raw=True)))

    while roots or singles or expand or kids or query:
        rounds += 1
        calls = {
            "roots": [partial(b, True) for b in roots],
            "expand": [partial(b, True) for b in expand],
            "kids": [asyncio.ensure_future(safe(conn.send("DOM.describeNode", {"backendNodeId": b, "depth": 1},
                                                          session=session))) for b in kids],
            "query": [asyncio.ensure_future(safe(conn.send("Accessibility.queryAXTree", {"backendNodeId": b},
                                                           session=session, raw=True))) for b in query],
            "single": [partial(b, False) for b in singles],
        }
        if sent is not None:
            sent()
            sent = None
        got = {k: await asyncio.gather(*v) for k, v in calls.items()}
        root_replies, expand_replies, query_replies = got["roots"], got["expand"], got["query"]
        single_replies = got["single"]
        next_expand = [c["backendNodeId"] for d in got["kids"] if d
                       for c in d.get("node", {}).get("children", []) if "backendNodeId" in c]
        escalate: list[int] = []
        for backend, reply in zip(roots, root_replies):
            if reply is None:
                continue  # the element left the document: its old parent was touched too
            inspected, children, ancestors = partial_result(decode_nodes(reply))
            top = ancestors[-1] if ancestors else inspected
            if top is None or top.node_id not in frame_roots:
                raise Cold("an element outside the kept frames")
            if inspected is None:
                # No AX node of its own: its nodes hang under the nearest ancestor's.
                if not ancestors or ancestors[0].node_id in frame_roots or ancestors[0].backend is None:
                    raise Cold("a change right under a frame's root")
                escalate.append(ancestors[0].backend)
                continue
            for record in (*ancestors, inspected, *children):
                fresh[record.node_id] = record
            whole[inspected.node_id] = backend
        for reply in expand_replies:
            if reply is not None:
                inspected, children, ancestors = partial_result(decode_nodes(reply))
                for record in (*ancestors, *([inspected] if inspected is not None else []), *children):
                    fresh[record.node_id] = record
        for reply in query_replies:
            for record in decode_nodes(reply, normalize_ignored=True) if reply is not None else []:
                fresh[record.node_id] = record
        for reply in single_replies:
            for record in decode_nodes(reply) if reply is not None else []:
                if record.node_id != "0":
                    fresh[record.node_id] = record
        # What is still to read under each re-read root: the children of an unignored
        # node come with it; an ignored one's come through its DOM children.
        expand, kids, query = next_expand, [], []
        for root_id, root_backend in whole.items():
            _ids, missing = preorder(root_id, fresh)
            if not missing:
                continue
            parents = {p for p in (_parent_of(m, fresh) for m in missing) if p is not None}
            if rounds < 12 and parents and all(fresh[p].backend is not None for p in parents):
                expand += [fresh[p].backend for p in parents if not fresh[p].ignored]
                kids += [fresh[p].backend for p in parents if fresh[p].ignored]
            elif root_backend not in query and rounds < 14:
                query.append(root_backend)
            else:
                raise Cold("a changed subtree could not be read")
        expand, kids = list(dict.fromkeys(expand)), list(dict.fromkeys(kids))
        roots, singles = [b for b in dict.fromkeys(escalate) if kept.by_backend.get(b) not in whole], []
    # Everything under a re-read subtree is fresh (or gone).
    expanded: set[str] = set()
    for node_id in whole:
        expanded.update(subtree_ids(node_id, fresh))
    return fresh, expanded


def _parent_of(node_id: str, records: dict[str, AXRecord]) -> str | None:
    """The record whose childIds name ``node_id`` (a missing node's parent)."""
    for parent_id, record in records.items():
        if node_id in record.child_ids:
            return parent_id
    return None


def merge(kept: Kept, fresh: dict[str, AXRecord]) -> tuple[dict[str, AXRecord], dict[int, str]]:
    """The kept records with fresh ones in place, and the AX node of each DOM node; every
    node reachable from a frame root must be known, or the tree is fetched whole. Only
    the subtrees whose children changed are walked."""
    if not fresh:
        return kept.records, kept.by_backend
    old = kept.records
    merged = dict(old)
    merged.update(fresh)
    reshaped = [n for n, r in fresh.items() if n in old and old[n].child_ids != r.child_ids]
    before: set[str] = set()
    after: set[str] = set()
    for node_id in reshaped:
        ids, missing = preorder(node_id, merged)
        if missing:
            raise Cold(f"{len(missing)} nodes appeared that were not read")
        after.update(ids)
        before.update(preorder(node_id, old)[0])
    # Fresh nodes that are in no kept place and no reshaped subtree are not in the tree.
    for node_id in fresh:
        if node_id not in old and node_id not in after:
            del merged[node_id]
    for node_id in before - after:
        merged.pop(node_id, None)
    if not reshaped and all(old[n].backend == r.backend for n, r in fresh.items() if n in old):
        return merged, kept.by_backend
    return merged, backend_index(merged)
