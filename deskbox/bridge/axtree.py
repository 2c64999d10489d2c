"""Accessibility trees as the bridge keeps them: one record per AX node holding the
node's JSON exactly as served, plus the few fields the bridge reasons with.

A full tree is several MB of JSON (13k nodes for a 5k-element page). Decoding it into
Python dicts and serializing them again cost more than Chromium took to build it, so
each node stays the bytes Chromium sent (decoded once, for ids and links only) and a
response is those bytes spliced together.

Rules that make a kept tree equal to a fresh ``Accessibility.getFullAXTree``:

- Nodes are served in pre-order from the frame's root, following ``childIds``.
- ``InlineTextBox`` nodes (Chromium's per-line text fragments, no DOM node, never a box
  of their own here) are left out, and their ids are taken out of their parents'
  ``childIds``.
- Out-of-process frames number their nodes independently: their ids get a prefix.
- ``Accessibility.queryAXTree`` gives ignored nodes their real role and name
  ("force_name_and_role" in Chromium); getFullAXTree gives them role ``none`` and no
  name. Nodes from a query are put back into the getFullAXTree form.
- ``Accessibility.getPartialAXTree`` on an ignored node (or one without an AX object)
  puts that node first in its parent's ``childIds``; that first id is taken out again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import orjson

try:
    import msgspec
except ImportError:  # pragma: no cover
    msgspec = None

__all__ = ["AXRecord", "decode_nodes", "preorder", "partial_result", "INLINE_TEXT_BOX"]

INLINE_TEXT_BOX = "InlineTextBox"
_ROLE_NONE = {"type": "role", "value": "none"}
_CHROME_ROLE_NONE = {"type": "internalRole", "value": 0}


@dataclass(slots=True, eq=False)
class AXRecord:
    """One AX node: its served JSON (``ax``, without the bridge's own keys frameId,
    bounds and viewportBounds) and the fields the bridge joins and walks with."""

    node_id: str
    parent_id: str | None
    child_ids: list[str]
    backend: int | None
    ignored: bool
    ax: bytes


if msgspec is not None:
    class _Role(msgspec.Struct, gc=False):
        value: Any = None

    class _Lite(msgspec.Struct, gc=False):
        nodeId: str
        ignored: bool = False
        role: _Role | None = None
        parentId: str | None = None
        childIds: list[str] = []
        backendDOMNodeId: int | None = None
        frameId: str | None = None

    class _RawNodes(msgspec.Struct, gc=False):
        nodes: list[msgspec.Raw]

    class _LiteNodes(msgspec.Struct, gc=False):
        nodes: list[_Lite]

    _raw_decoder = msgspec.json.Decoder(_RawNodes)
    _lite_decoder = msgspec.json.Decoder(_LiteNodes)

    def _decode(raw: bytes) -> tuple[list[Any], list[Any]]:
        """(each node's fields, each node's JSON), in the reply's order: two passes of
        msgspec over the bytes, neither building a dict."""
        return _lite_decoder.decode(raw).nodes, _raw_decoder.decode(raw).nodes
else:  # pragma: no cover
    class _Role:  # type: ignore[no-redef]
        def __init__(self, value: Any) -> None:
            self.value = value

    class _Lite:  # type: ignore[no-redef]
        def __init__(self, n: dict) -> None:
            self.nodeId, self.ignored = n["nodeId"], n.get("ignored", False)
            self.role = _Role(n["role"].get("value")) if n.get("role") else None
            self.parentId, self.childIds = n.get("parentId"), list(n.get("childIds", []))
            self.backendDOMNodeId, self.frameId = n.get("backendDOMNodeId"), n.get("frameId")

    def _decode(raw: bytes) -> tuple[list[Any], list[Any]]:
        nodes = orjson.loads(raw).get("nodes", [])
        return [_Lite(n) for n in nodes], [orjson.dumps(n) for n in nodes]


def _with_child_ids(ax: bytes, old: list[str], new: list[str]) -> bytes:
    # childIds are plain digit strings, so Chromium's JSON for them is what orjson writes;
    # anything unexpected goes through a full decode.
    before = b'"childIds":' + orjson.dumps(old)
    if ax.count(before) == 1:
        return ax.replace(before, b'"childIds":' + orjson.dumps(new))
    node = orjson.loads(ax)
    node["childIds"] = new
    return orjson.dumps(node)


def decode_nodes(raw: bytes, *, prefix: str = "", normalize_ignored: bool = False) -> list[AXRecord]:
    """Records of the nodes in one CDP reply with a ``nodes`` list (getFullAXTree,
    getPartialAXTree, queryAXTree), in the reply's order, InlineTextBoxes left out."""
    lites, raws = _decode(raw)
    inline = {n.nodeId for n in lites if n.role is not None and n.role.value == INLINE_TEXT_BOX}
    records: list[AXRecord] = []
    append = records.append
    for n, r in zip(lites, raws):
        node_id = n.nodeId
        if inline and node_id in inline:
            continue
        child_ids = n.childIds
        parent_id = n.parentId
        ax = bytes(r)
        if inline and child_ids and not inline.isdisjoint(child_ids):
            kept = [c for c in child_ids if c not in inline]
            ax = _with_child_ids(ax, child_ids, kept)
            child_ids = kept
        if prefix or n.frameId is not None or (normalize_ignored and n.ignored):
            node = orjson.loads(ax)
            # The bridge sets frameId on every node itself; Chromium puts one on roots only.
            node.pop("frameId", None)
            if normalize_ignored and n.ignored:
                node.pop("name", None)
                node["role"], node["chromeRole"] = dict(_ROLE_NONE), dict(_CHROME_ROLE_NONE)
            if prefix:
                node_id = node["nodeId"] = prefix + node_id
                if parent_id is not None:
                    parent_id = node["parentId"] = prefix + parent_id
                child_ids = node["childIds"] = [prefix + c for c in child_ids]
            ax = orjson.dumps(node)
        append(AXRecord(node_id, parent_id, child_ids, n.backendDOMNodeId, n.ignored, ax))
    return records


def preorder(root: str, records: dict[str, AXRecord]) -> tuple[list[str], list[str]]:
    """Node ids reachable from ``root`` through childIds, in pre-order, and the child ids
    that have no record (a kept tree that is missing part of itself)."""
    order: list[str] = []
    missing: list[str] = []
    stack = [root]
    seen: set[str] = set()
    while stack:
        node_id = stack.pop()
        if node_id in seen:
            continue
        record = records.get(node_id)
        if record is None:
            missing.append(node_id)
            continue
        seen.add(node_id)
        order.append(node_id)
        stack.extend(reversed(record.child_ids))
    return order, missing


def partial_result(records: list[AXRecord]) -> tuple[AXRecord | None, list[AXRecord], list[AXRecord]]:
    """Split a ``getPartialAXTree(fetchRelatives=true)`` reply into (the inspected node
    if it is part of the tree, its children, its ancestors), with the first ancestor's
    childIds as getFullAXTree gives them."""
    if not records:
        return None, [], []
    inspected, rest = records[0], records[1:]
    no_ax_object = inspected.node_id == "0"
    first_parent = inspected.parent_id if not no_ax_object else (rest[0].node_id if rest else None)
    by_id = {r.node_id: r for r in rest}
    ancestors: list[AXRecord] = []
    parent = first_parent
    while parent is not None and parent in by_id:
        ancestors.append(by_id[parent])
        parent = by_id[parent].parent_id
    ancestor_ids = {a.node_id for a in ancestors}
    children = [r for r in rest if r.node_id not in ancestor_ids]
    if ancestors and (no_ax_object or inspected.ignored):
        first = ancestors[0]
        if first.child_ids and first.child_ids[0] == inspected.node_id:
            kept = first.child_ids[1:]
            ancestors[0] = AXRecord(first.node_id, first.parent_id, kept, first.backend, first.ignored,
                                    _with_child_ids(first.ax, first.child_ids, kept))
    included = not no_ax_object and (not inspected.ignored or not ancestors
                                     or inspected.node_id in ancestors[0].child_ids)
    return (inspected if included else None), children, ancestors


def subtree_ids(root: str, records: dict[str, AXRecord]) -> Iterable[str]:
    """Ids of ``root`` and everything under it in a kept tree."""
    stack = [root]
    while stack:
        node_id = stack.pop()
        record = records.get(node_id)
        if record is None:
            continue
        yield node_id
        stack.extend(record.child_ids)
