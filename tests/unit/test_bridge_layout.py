"""Joining AX nodes to snapshot boxes and keeping AX trees: pure logic, on small
hand-made CDP replies."""

import orjson

from deskbox.bridge.axtree import decode_nodes, partial_result, preorder
from deskbox.bridge.kept import Kept
from deskbox.bridge.layout import DocumentBoxes, box_json, index_snapshot
from deskbox.bridge.pagecalls import Measured, _read_changes
from deskbox.bridge.serialize import _node_json
from deskbox.bridge.warmpatch import _measured_docs

STRINGS = ["http://a/", "F0", "F1", "http://a/child", "IFRAME", "BUTTON", "5px", "3px"]


def snapshot():
    # Document 0: a button (backend 11) and an iframe (backend 12, 5 px border, 3 px
    # padding) holding document 1, scrolled by 10 px, with a button (backend 21).
    return {
        "strings": STRINGS,
        "documents": [
            {"documentURL": 0, "frameId": 1, "scrollOffsetX": 0, "scrollOffsetY": 100,
             "nodes": {"backendNodeId": [10, 11, 12], "nodeName": [5, 5, 4], "parentIndex": [-1, 0, 0],
                       "contentDocumentIndex": {"index": [2], "value": [1]}},
             "layout": {"nodeIndex": [1, 2], "bounds": [[20, 20, 160, 40], [40, 120, 416, 216]],
                        "styles": [[6, 6, 7, 7], [6, 6, 7, 7]]}},
            {"documentURL": 3, "frameId": 2, "scrollOffsetX": 0, "scrollOffsetY": 10,
             "nodes": {"backendNodeId": [20, 21], "nodeName": [5, 5], "parentIndex": [-1, 0]},
             "layout": {"nodeIndex": [1, 1], "bounds": [[30, 50, 110, 16], [30, 66, 60, 16]],
                        "styles": [[], []]}},
        ],
    }


def reply(*nodes: dict) -> bytes:
    return orjson.dumps({"nodes": list(nodes)})


def test_iframe_documents_are_placed_at_their_owner_content_box_minus_their_scroll():
    top, child = index_snapshot(snapshot())
    assert top.boxes[11] == (20, 20, 160, 40)
    assert top.frame_origins[12] == (48, 128) and top.child_documents == {12: 1}
    assert child.offset == (48, 118)
    # Two layout fragments of one node are united.
    assert child.boxes[21] == (78, 168, 110, 32)
    assert child.parent_of() == {21: 20}


def test_boxes_in_both_frames_and_no_box_for_empty_ones():
    bounds, viewport = box_json((20, 120, 10, 10), (0, 100))
    assert bounds == {"x": 20, "y": 120, "width": 10, "height": 10,
                      "borderBox": {"x": 20, "y": 120, "width": 10, "height": 10}}
    assert viewport == {"x": 20, "y": 20, "width": 10, "height": 10}
    node = orjson.loads(_node_json(b'{"nodeId":"1"}', b'"F0"', (20, 120, 10, 10), (0, 100)))
    assert node["frameId"] == "F0" and node["viewportBounds"]["y"] == 20 and node["bounds"]["y"] == 120
    for empty in (None, (5, 5, 0, 10)):
        node = orjson.loads(_node_json(b'{"nodeId":"1"}', b'"F0"', empty, (0, 0)))
        assert node["bounds"] is None and node["viewportBounds"] is None


def test_inline_text_boxes_are_left_out_and_out_of_process_ids_prefixed():
    raw = reply({"nodeId": "1", "role": {"type": "role", "value": "RootWebArea"}, "childIds": ["2"], "frameId": "F"},
                {"nodeId": "2", "parentId": "1", "role": {"type": "internalRole", "value": "StaticText"},
                 "childIds": ["-3", "-4"], "backendDOMNodeId": 7},
                {"nodeId": "-3", "parentId": "2", "role": {"type": "internalRole", "value": "InlineTextBox"}},
                {"nodeId": "-4", "parentId": "2", "role": {"type": "internalRole", "value": "InlineTextBox"}})
    root, text = decode_nodes(raw)
    assert text.child_ids == [] and orjson.loads(text.ax)["childIds"] == [] and text.backend == 7
    assert "frameId" not in orjson.loads(root.ax)  # the bridge sets it on every node
    root, text = decode_nodes(raw, prefix="OOP:")
    assert (root.node_id, root.child_ids, text.parent_id) == ("OOP:1", ["OOP:2"], "OOP:1")
    assert orjson.loads(text.ax)["nodeId"] == "OOP:2"


def test_query_results_of_ignored_nodes_take_the_full_tree_form():
    raw = reply({"nodeId": "5", "ignored": True, "role": {"type": "role", "value": "generic"},
                 "chromeRole": {"type": "internalRole", "value": 88}, "name": {"type": "computedString", "value": ""},
                 "childIds": []})
    (node,) = decode_nodes(raw, normalize_ignored=True)
    ax = orjson.loads(node.ax)
    assert ax["role"] == {"type": "role", "value": "none"} and ax["chromeRole"]["value"] == 0 and "name" not in ax


def test_a_partial_tree_of_an_ignored_node_gives_its_parent_back_its_own_children():
    raw = reply({"nodeId": "5", "ignored": True, "parentId": "3", "childIds": ["6"]},
                {"nodeId": "3", "parentId": "1", "childIds": ["5", "4", "5"]},
                {"nodeId": "1", "childIds": ["3"]})
    inspected, children, ancestors = partial_result(decode_nodes(raw))
    assert inspected is not None and inspected.node_id == "5" and children == []
    assert [a.node_id for a in ancestors] == ["3", "1"]
    assert ancestors[0].child_ids == ["4", "5"] and orjson.loads(ancestors[0].ax)["childIds"] == ["4", "5"]
    # A DOM node without an AX object: only its ancestors count.
    raw = reply({"nodeId": "0", "ignored": True, "backendDOMNodeId": 9},
                {"nodeId": "3", "parentId": "1", "childIds": ["0", "4"]}, {"nodeId": "1", "childIds": ["3"]})
    inspected, _children, ancestors = partial_result(decode_nodes(raw))
    assert inspected is None and ancestors[0].child_ids == ["4"]


def test_trees_are_served_in_preorder_and_missing_children_are_reported():
    records = {r.node_id: r for r in decode_nodes(reply(
        {"nodeId": "1", "childIds": ["2", "3"]}, {"nodeId": "3", "parentId": "1", "childIds": ["4"]},
        {"nodeId": "2", "parentId": "1", "childIds": ["9"]}, {"nodeId": "4", "parentId": "3"}))}
    order, missing = preorder("1", records)
    assert order == ["1", "2", "3", "4"] and missing == ["9"]


def test_boxed_nodes_a_script_cannot_reach_are_owned_by_the_nearest_one_it_can():
    # <li> (31) with a ::marker (32); <input> (33) whose user-agent shadow root (34)
    # holds a div (35) and its text (36); an open shadow root's button (38) is reachable.
    strings = ["http://a/", "LI", "::marker", "INPUT", "#shadow-root", "DIV", "#text", "BUTTON", "user-agent", "open"]
    snap = {"strings": strings, "documents": [{
        "documentURL": 0,
        "nodes": {"backendNodeId": [30, 31, 32, 33, 34, 35, 36, 37, 38],
                  "nodeName": [1, 1, 2, 3, 4, 5, 6, 4, 7], "parentIndex": [-1, 0, 1, 0, 3, 4, 5, 0, 7],
                  "pseudoType": {"index": [2], "value": [2]},
                  "shadowRootType": {"index": [4, 5, 6, 8], "value": [8, 8, 8, 9]}},
        "layout": {"nodeIndex": [1, 2, 3, 5, 6, 8],
                   "bounds": [[40, 10, 200, 20], [22, 10, 7, 20], [40, 40, 100, 20], [42, 42, 96, 16],
                              [42, 42, 30, 16], [40, 80, 60, 20]]}}]}
    (doc,) = index_snapshot(snap)
    assert doc.pseudo_owner == {32: 31}
    assert doc.shadow_owner == {35: 33, 36: 33}


def test_the_take_functions_array_reads_as_changes_and_measured_boxes():
    def s(v):
        return {"type": "string", "value": v}

    def n(v):
        return {"type": "number", "value": v}

    node = {"type": "object", "subtype": "node", "objectId": "x"}
    values = [s("doc1"), {"type": "boolean", "value": False}, s("S"), node, s("C"), node, s("N"), node, node,
              s("G"), n(0), n(120), node, n(10), n(20), n(30), n(40), node, {"type": "number", "unserializableValue": "-0"},
              n(5), n(0), n(0)]
    windows, overflow, subtree, parents, single, measured = _read_changes(values, [11, 12, 13, None, 15, 16])
    assert (windows, overflow, subtree, parents, single) == ("doc1", False, [11], [12], [13])
    assert measured.scroll == (0.0, 120.0)
    assert measured.boxes == {15: (10.0, 20.0, 30.0, 40.0), 16: (0.0, 5.0, 0.0, 0.0)}
    # 'X': the page could not tell what moved.
    assert _read_changes([s("doc1"), {"type": "boolean", "value": True}, s("S"), s("C"), s("N"), s("X")], [])[5] is None


def _kept(doc: DocumentBoxes) -> Kept:
    return Kept(doc="d", made_at=0.0, windows="d", records={}, roots=[("F0", "1")], docs=[doc], oopifs={}, meta={})


def test_measured_boxes_patch_the_kept_ones_unless_a_snapshot_is_needed():
    doc = DocumentBoxes(url="http://a/", frame_id="F0", offset=(0.0, 0.0), scroll=(0.0, 0.0),
                        boxes={1: (0, 0, 100, 20), 2: (0, 20, 100, 20), 3: (2, 22, 50, 16), 4: (0, 40, 100, 20),
                               5: (-18, 40, 7, 20), 6: (0, 80, 300, 150)},
                        frame_origins={6: (5.0, 85.0)}, shadow_owner={3: 2}, pseudo_owner={5: 4})
    kept = _kept(doc)
    # The input (2) moved down 10 px: its inner text (3) goes with it; 1 was hidden.
    (patched,) = _measured_docs(kept, Measured((0.0, 7.0), {2: (0, 30, 100, 20), 1: (0, 0, 0, 0)}), 1.0)
    assert patched.boxes[2] == (0, 30, 100, 20) and patched.boxes[3] == (2, 32, 50, 16)
    assert 1 not in patched.boxes and patched.scroll == (0.0, 7.0) and doc.boxes[2] == (0, 20, 100, 20)
    # A snapshot is needed when the input also changed size, when the list item with the
    # marker moved, when the iframe moved, and with more than one document.
    assert _measured_docs(kept, Measured((0.0, 0.0), {2: (0, 30, 120, 20)}), 1.0) is None
    assert _measured_docs(kept, Measured((0.0, 0.0), {4: (0, 50, 100, 20)}), 1.0) is None
    assert _measured_docs(kept, Measured((0.0, 0.0), {6: (0, 90, 300, 150)}), 1.0) is None
    # The input's own content changed (typed into: it is the root of a changed subtree),
    # or the list item's children changed, or something around the input changed.
    doc.dom_backend, doc.dom_parent = [9, 1, 2, 3, 4, 5, 6], [-1, 0, 0, 2, 0, 4, 0]
    assert _measured_docs(kept, Measured((0.0, 0.0), {}), 1.0, subtree=[2]) is None
    assert _measured_docs(kept, Measured((0.0, 0.0), {}), 1.0, parents=[4]) is None
    assert _measured_docs(kept, Measured((0.0, 0.0), {}), 1.0, subtree=[9]) is None
    assert _measured_docs(kept, Measured((0.0, 0.0), {1: (0, 0, 90, 20)}), 1.0, subtree=[1], parents=[6]) is not None
    # Content the page measured itself (a closed shadow root's) is not shifted again.
    (patched,) = _measured_docs(kept, Measured((0.0, 0.0), {2: (0, 30, 100, 20), 3: (2, 33, 50, 16)}), 1.0)
    assert patched.boxes[3] == (2, 33, 50, 16)
    two = Kept(doc="d", made_at=0.0, windows="d", records={}, roots=[("F0", "1")], docs=[doc, doc], oopifs={}, meta={})
    assert _measured_docs(two, Measured((0.0, 0.0), {}), 1.0) is None
    assert _measured_docs(kept, None, 1.0) is None
