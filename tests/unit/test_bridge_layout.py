"""Joining AX nodes to snapshot boxes and keeping AX trees: pure logic, on small
hand-made CDP replies."""

import orjson

from services.bridge.axtree import decode_nodes, partial_result, preorder
from services.bridge.browser import _node_json
from services.bridge.layout import box_json, index_snapshot

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
