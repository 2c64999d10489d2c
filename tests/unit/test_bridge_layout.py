"""Joining AX nodes to snapshot boxes: pure logic, on small hand-made CDP replies."""

from services.bridge.browser import _join
from services.bridge.layout import box_json, index_snapshot

STRINGS = ["http://a/", "F0", "F1", "http://a/child", "IFRAME", "BUTTON", "5px", "3px"]


def snapshot():
    # Document 0: a button (backend 11) and an iframe (backend 12, 5 px border, 3 px
    # padding) holding document 1, scrolled by 10 px, with a button (backend 21).
    return {
        "strings": STRINGS,
        "documents": [
            {"documentURL": 0, "frameId": 1, "scrollOffsetX": 0, "scrollOffsetY": 100,
             "nodes": {"backendNodeId": [10, 11, 12], "nodeName": [5, 5, 4],
                       "contentDocumentIndex": {"index": [2], "value": [1]}},
             "layout": {"nodeIndex": [1, 2], "bounds": [[20, 20, 160, 40], [40, 120, 416, 216]],
                        "styles": [[6, 6, 7, 7], [6, 6, 7, 7]]}},
            {"documentURL": 3, "frameId": 2, "scrollOffsetX": 0, "scrollOffsetY": 10,
             "nodes": {"backendNodeId": [20, 21], "nodeName": [5, 5]},
             "layout": {"nodeIndex": [1, 1], "bounds": [[30, 50, 110, 16], [30, 66, 60, 16]],
                        "styles": [[], []]}},
        ],
    }


def test_iframe_documents_are_placed_at_their_owner_content_box_minus_their_scroll():
    top, child = index_snapshot(snapshot())
    assert top.boxes[11] == (20, 20, 160, 40)
    assert top.frame_origins[12] == (48, 128) and top.child_documents == {12: 1}
    assert child.offset == (48, 118)
    # Two layout fragments of one node are united.
    assert child.boxes[21] == (78, 168, 110, 32)


def test_boxes_in_both_frames_and_no_box_for_empty_ones():
    bounds, viewport = box_json((20, 120, 10, 10), (0, 100))
    assert bounds == {"x": 20, "y": 120, "width": 10, "height": 10,
                      "borderBox": {"x": 20, "y": 120, "width": 10, "height": 10}}
    assert viewport == {"x": 20, "y": 20, "width": 10, "height": 10}
    docs = index_snapshot(snapshot())
    boxes = {("F0", 11): (20, 20, 160, 40), ("F0", 13): (5, 5, 0, 10)}
    nodes, source = _join([("F0", [{"nodeId": "1", "backendDOMNodeId": 11}, {"nodeId": "2", "backendDOMNodeId": 13},
                                   {"nodeId": "3"}], "")], boxes, (0, 100), docs, "F0")
    assert source == "ax"
    assert nodes[0]["viewportBounds"]["y"] == -80
    assert nodes[1]["bounds"] is None and nodes[2]["bounds"] is None


def test_frames_without_an_ax_tree_fall_back_to_dom_nodes_and_prefixes_keep_ids_unique():
    docs = index_snapshot(snapshot())
    boxes = {("F0", 11): (20, 20, 160, 40)}
    trees = [("F0", [{"nodeId": "1", "backendDOMNodeId": 11, "childIds": []}], ""),
             ("F1", None, ""),
             ("OOP", [{"nodeId": "1", "parentId": "0", "childIds": ["2"]}], "OOP:")]
    nodes, source = _join(trees, boxes, (0, 0), docs, "F0")
    assert source == "mixed"
    dom = [n for n in nodes if n.get("source") == "dom"]
    assert {n["backendDOMNodeId"] for n in dom} == {21}
    oop = nodes[-1]
    assert oop["nodeId"] == "OOP:1" and oop["parentId"] == "OOP:0" and oop["childIds"] == ["OOP:2"]
