"""The full (cold) read of a tab: what was kept is dropped, the page's change lists are
cleared, and one DOMSnapshot, the AX tree of every same-process frame, the layout and
window metrics and each out-of-process frame's parts are gathered in a handful of
pipelined calls, never one per node, to make a new Kept and serve it. The side reads and
the out-of-process frame reads are the warm patch's too. It must not know how a kept
tree is patched, nor when or why a tab is read.
"""

from __future__ import annotations

import asyncio
import time

from ..cdp import CDPClosed, CDPConnection, CDPError
from ..common.logging import get_logger
from ..common.memory import release_memory
from .axtree import AXRecord, decode_nodes
from .kept import Kept, OopifTree, backend_index
from .layout import index_snapshot
from .pagecalls import BINDING, METRICS_EXPRESSION, capture_snapshot, safe, safe_json, take
from .serialize import Snapshot, box_fragment, finish
from .targets import FrameSession, Tab

__all__ = ["read_full", "read_side", "read_oopif", "oopif_tree"]

log = get_logger("deskbox.bridge")


async def read_full(conn: CDPConnection, tab: Tab, session: str, metrics: dict, frame_keys: tuple,
                    doc: str) -> Snapshot:
    # What was kept goes before the new tree is read: a big page's tree and its
    # serialized nodes should not be held twice.
    tab.kept, tab.cached = None, None
    # The page's change lists are cleared before anything is read (what changes later
    # is listed for the next refresh). The snapshot goes next: the page's process
    # builds it, then the AX tree, while this process indexes the snapshot.
    windows_task = asyncio.ensure_future(take(conn, session, reset=True))
    # A new document has no binding yet: the page's watcher calls it on a change.
    binding_task = asyncio.ensure_future(safe(conn.send("Runtime.addBinding", {"name": BINDING},
                                                        session=session)))
    snapshot_task = asyncio.ensure_future(capture_snapshot(conn, session))
    ax_task = asyncio.ensure_future(safe(conn.send("Accessibility.getFullAXTree", {}, session=session,
                                                   timeout=120, raw=True)))
    side_task = asyncio.ensure_future(read_side(conn, tab.target_id, session))
    oopif_tasks = {fs.target_id: asyncio.ensure_future(read_oopif(conn, fs)) for fs in tab.oopifs.values()}
    try:
        snapshot = await snapshot_task
        docs = index_snapshot(snapshot, device_pixel_ratio=metrics["devicePixelRatio"])
        del snapshot
        main_frame = docs[0].frame_id if docs and docs[0].frame_id else None
        side = await side_task
        main_frame = main_frame or side["frame_tree"]["frameTree"]["frame"]["id"]
        children = [d.frame_id for d in docs[1:] if d.frame_id and d.frame_id != main_frame]
        child_tasks = [asyncio.ensure_future(safe(conn.send("Accessibility.getFullAXTree", {"frameId": fid},
                                                            session=session, timeout=120, raw=True)))
                       for fid in children]
        # While the page's process builds the AX tree, this one has nothing to do but
        # serialize every box the snapshot gave.
        scroll = docs[0].scroll if docs else (0.0, 0.0)
        fragments: dict[str, dict[int, bytes]] = {}
        for d in docs:
            fragments.setdefault(d.frame_id or main_frame, {}).update(
                (b, box_fragment(box, scroll)) for b, box in d.boxes.items() if box[2] > 0 and box[3] > 0)
        records: dict[str, AXRecord] = {}
        roots: list[tuple[str, str | None]] = []
        for fid, task in [(main_frame, ax_task), *zip(children, child_tasks)]:
            raw = await task
            if raw is None:
                roots.append((fid, None))
                continue
            nodes = decode_nodes(raw)
            del raw
            roots.append((fid, nodes[0].node_id if nodes else None))
            records.update((r.node_id, r) for r in nodes)
        windows = await windows_task
        owners = {b: o for d in docs for b, o in d.frame_origins.items()}
        oopifs: dict[str, OopifTree] = {}
        for target_id, task in oopif_tasks.items():
            tree = await oopif_tree(conn, session, tab.oopifs.get(target_id), task, frame_keys)
            if tree is not None and tree.owner in owners:
                oopifs[target_id] = tree
    finally:
        for task in (snapshot_task, ax_task, side_task, windows_task, binding_task, *oopif_tasks.values()):
            if not task.done():
                task.cancel()
    kept = Kept(doc=doc, made_at=time.monotonic(), windows=windows if isinstance(windows, str) else "?",
                records=records, roots=roots, docs=docs, oopifs=oopifs, meta={}, by_backend=backend_index(records))
    snapshot = finish(kept, metrics, side, fragments=fragments)
    tab.kept = kept
    release_memory()  # the reply and the tree this one replaced
    return snapshot


async def read_side(conn: CDPConnection, target_id: str, session: str) -> dict:
    page_metrics, frame_tree, window = await asyncio.gather(
        conn.send("Page.getLayoutMetrics", session=session),
        conn.send("Page.getFrameTree", session=session),
        safe(conn.send("Browser.getWindowForTarget", {"targetId": target_id})),
    )
    return {"page_metrics": page_metrics, "frame_tree": frame_tree, "window": window}


async def read_oopif(conn: CDPConnection, frame: FrameSession):
    return await asyncio.gather(
        capture_snapshot(conn, frame.session_id),
        safe(conn.send("Accessibility.getFullAXTree", {}, session=frame.session_id, timeout=120, raw=True)),
        safe_json(conn, frame.session_id, METRICS_EXPRESSION),
    )


async def oopif_tree(conn: CDPConnection, parent_session: str, frame: FrameSession | None, parts_task,
                     frame_keys: tuple) -> OopifTree | None:
    if frame is None:
        return None
    try:
        owner_task = asyncio.ensure_future(conn.send("DOM.getFrameOwner", {"frameId": frame.target_id},
                                                     session=parent_session))
        snapshot, ax, metrics = await parts_task
        owner = (await owner_task)["backendNodeId"]
    except (CDPError, CDPClosed) as exc:
        log.info("out-of-process frame skipped", frame=frame.target_id, error=str(exc))
        return None
    docs = index_snapshot(snapshot, device_pixel_ratio=(metrics or {}).get("devicePixelRatio") or 1.0)
    scroll = docs[0].scroll if docs else (0.0, 0.0)
    prefix = f"{frame.target_id[:8]}:"
    nodes = decode_nodes(ax, prefix=prefix) if ax is not None else None
    key = (frame.target_id, (metrics or {}).get("changes"), (metrics or {}).get("doc"))
    return OopifTree(target_id=frame.target_id, url=docs[0].url if docs else frame.url, key=key, owner=owner,
                     records={r.node_id: r for r in nodes} if nodes is not None else None,
                     root=nodes[0].node_id if nodes else None,
                     boxes={b: box for d in docs for b, box in d.boxes.items()}, scroll=scroll, docs=docs)
