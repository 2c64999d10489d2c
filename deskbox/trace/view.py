"""The trace viewer: a trace folder as one self-contained web page, ``index.html``,
written into the folder beside what it shows.

    python -m deskbox.trace.view DIR [--host H] [--port N] [--no-serve]

The page lists the steps and, for the one selected, draws the action over its before
and after screenshots (the ring of a click, the path of a drag, the text typed), beside
the element it went to, its arguments and its receipt or error. Its CSS, script and
step data are inline and the screenshots are linked by their paths in the folder, so the
page works opened from disk (file://) as well as served (``serve``).

Element names and typed text come from the pages an agent visited: the page only ever
puts them in as text, and its Content-Security-Policy lets no script run but its own."""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime as dt
import hashlib
import json
import os
import re
import sys
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, unquote

from aiohttp import web
from PIL import Image

from ..common.callers import callers_middleware
from ..common.errors import InvalidRequestError, NotFoundError
from ..common.logging import configure_logging
from ..common.web import error_middleware
from .recorder import read_steps

__all__ = ["load", "page", "render", "create_app", "serve", "main"]

TEMPLATE = Path(__file__).with_name("page.html")
INDEX = "index.html"
DATA_SLOT = "__TRACE_DATA__"
HASH_SLOT = "__SCRIPT_HASH__"
_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)  # the page's own (only untyped) script
# Inlined JSON must not close its <script> element nor open a comment: every <, > and &
# becomes a \u escape, which JSON.parse reads back as the same character.
_JSON_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}


# -- reading the folder ------------------------------------------------------------------

def _json(text: str | bytes) -> Any:
    # (NaN and Infinity, which Python's json reads, are not JSON: JSON.parse would fail.)
    return json.loads(text, parse_constant=lambda _: None)


def _read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from ``path``; None when it is missing, cut short or not an object."""
    try:
        data = _json(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _within(root: Path, relative: str) -> Path | None:
    """The file ``relative`` names inside ``root``; None when there is none, or when the
    name climbs out of the folder (by ``..``, or by a link to elsewhere)."""
    parts = PurePosixPath(relative).parts
    if not relative or relative.startswith("/") or "\\" in relative or ".." in parts:
        return None
    base = root.resolve()
    path = (base / relative).resolve()
    return path if path.is_relative_to(base) and path.is_file() else None


def _file_in(root: Path, relative: Any) -> str | None:
    """``relative`` as a URL path for the page, when it names a file inside the folder;
    None otherwise, so the page shows "no screenshot" rather than a broken image."""
    if not isinstance(relative, str) or _within(root, relative) is None:
        return None
    return quote(PurePosixPath(relative).as_posix())


def _parse_time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _started_at(steps: list[dict[str, Any]]) -> str | None:
    """When a trace without trace.json began: its first step's time, less that step's
    offset from the start."""
    for s in steps:
        when, offset = _parse_time(s.get("time")), _number(s.get("t"))
        if when is not None:
            return (when - dt.timedelta(seconds=offset or 0)).isoformat(timespec="milliseconds")
    return None


def _duration(started: Any, stopped: Any, steps: list[dict[str, Any]]) -> float | None:
    """Seconds from start to stop; for a trace not stopped (or without trace.json), up to
    the end of its last step."""
    begin, end = _parse_time(started), _parse_time(stopped)
    if begin is not None and end is not None:
        try:
            return round((end - begin).total_seconds(), 3)
        except TypeError:  # one with a time zone, one without
            pass
    ends = [(_number(s.get("t")) or 0) + (_number(s.get("duration_ms")) or 0) / 1000
            for s in steps if _number(s.get("t")) is not None]
    return round(max(ends), 3) if ends else None


def _displays(root: Path, meta: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Display id -> [width, height] in device pixels: the coordinate space of points and
    boxes. From trace.json; for displays it does not list, the size of a screenshot."""
    sizes: dict[str, list[int]] = {}
    for d in meta.get("displays") or []:
        size = d.get("size") if isinstance(d, dict) else None
        if isinstance(size, list) and len(size) == 2 and all(_number(v) for v in size):
            sizes[str(d.get("id", 0))] = [int(size[0]), int(size[1])]
    for s in steps:
        key = str(s.get("display_id", 0))
        shot = next((unquote(p) for p in s["shots"].values() if p), None)
        if key in sizes or shot is None:
            continue
        try:
            with Image.open(root / PurePosixPath(shot)) as im:  # (reads the header only)
                sizes[key] = list(im.size)
        except OSError:
            pass
    return sizes


def _step(root: Path, raw: dict[str, Any], index: int) -> dict[str, Any]:
    """A step as the page takes it: numbered, with only screenshots that are there."""
    number = raw.get("step")
    if not isinstance(number, int) or isinstance(number, bool):
        number = index + 1
    shots = raw.get("shots")
    if not isinstance(shots, dict):  # not said: the recorder's names, if the files are there
        shots = {w: f"shots/{number:05d}-{w}.jpg" for w in ("before", "after")}
    return {**raw, "step": number,
            "shots": {w: _file_in(root, shots.get(w)) for w in ("before", "after")}}


def load(trace_dir: Path) -> dict[str, Any]:
    """What the page shows of a trace folder: ``{"trace": {...}, "steps": [...]}``.
    Tolerates a missing or cut trace.json (then derives what it can from the steps), a
    cut last step line and missing screenshots."""
    root = Path(trace_dir)
    meta = _read_json(root / "trace.json")
    steps = [_step(root, s, i) for i, s in enumerate(read_steps(root))]
    known = meta or {}
    started = known.get("started_at") or _started_at(steps)
    recorded = known.get("step_count")
    trace = {
        "trace_id": str(known.get("trace_id") or root.resolve().name),
        "label": known.get("label") if isinstance(known.get("label"), str) else None,
        "started_at": started,
        "stopped_at": known.get("stopped_at"),
        "duration_s": _duration(started, known.get("stopped_at"), steps),
        "step_count": recorded if isinstance(recorded, int) else len(steps),
        "displays": _displays(root, known, steps),
        "video": _file_in(root, known.get("video") or "video.mp4"),
        "has_meta": meta is not None,
    }
    return {"trace": trace, "steps": steps}


# -- the page ----------------------------------------------------------------------------

def _script_hash(template: str) -> str:
    """The CSP source that allows the page's own script and nothing else."""
    match = _SCRIPT.search(template)
    assert match, "page.html has its script"
    digest = hashlib.sha256(match.group(1).encode()).digest()
    return "sha256-" + base64.b64encode(digest).decode()


def _inline_json(data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False, default=str, allow_nan=False)
    return text.translate(_JSON_ESCAPES)


def page(trace_dir: Path) -> str:
    """The viewer page of a trace folder, as HTML."""
    template = TEMPLATE.read_text(encoding="utf-8")
    return (template.replace(HASH_SLOT, _script_hash(template), 1)
            .replace(DATA_SLOT, _inline_json(load(trace_dir)), 1))


def render(trace_dir: Path) -> Path:
    """Writes the viewer page into the trace folder; returns its path."""
    out = Path(trace_dir) / INDEX
    tmp = out.with_name(INDEX + ".tmp")
    tmp.write_text(page(trace_dir), encoding="utf-8")
    os.replace(tmp, out)  # (a reader never sees half a page)
    return out


# -- serving -----------------------------------------------------------------------------

TRACE_DIR = web.AppKey("trace_dir", Path)


def _inside(root: Path, relative: str) -> Path:
    """The file a request names inside the trace folder; nothing outside it."""
    if ".." in PurePosixPath(relative).parts:
        raise InvalidRequestError(f"{relative!r} is not a path inside the trace", code="outside_trace")
    path = _within(root, relative)
    if path is None:
        raise NotFoundError(f"the trace has no file {relative!r}")
    return path


async def _index(request: web.Request) -> web.Response:
    # Made afresh on every load, so reloading the page of a trace still being recorded
    # shows its new steps.
    html = await asyncio.to_thread(page, request.app[TRACE_DIR])
    return web.Response(text=html, content_type="text/html", headers={"Cache-Control": "no-store"})


async def _file(request: web.Request) -> web.StreamResponse:
    path = _inside(request.app[TRACE_DIR], request.match_info["path"])
    return web.FileResponse(path, headers={"X-Content-Type-Options": "nosniff"})


def create_app(trace_dir: Path) -> web.Application:
    """An app serving the trace folder: its page at / (and /index.html), its files by path."""
    app = web.Application(middlewares=[error_middleware, callers_middleware()])
    app[TRACE_DIR] = Path(trace_dir).resolve()
    app.router.add_get("/", _index)
    app.router.add_get("/" + INDEX, _index)
    app.router.add_get("/{path:.+}", _file)
    return app


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


async def serve(trace_dir: Path, host: str = "127.0.0.1", port: int = 0) -> tuple[web.AppRunner, str]:
    """Renders the page, then serves the folder on ``host:port`` (0: a free port). Returns
    the started runner (``await runner.cleanup()`` stops it) and the page's URL."""
    render(trace_dir)
    runner = web.AppRunner(create_app(trace_dir), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1]
    return runner, _url(host, bound)


async def _serve_until_stopped(trace_dir: Path, host: str, port: int) -> None:
    runner, url = await serve(trace_dir, host, port)
    print(url, flush=True)
    try:
        await asyncio.Event().wait()  # until Ctrl-C cancels it
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m deskbox.trace.view", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", type=Path, help="the trace folder (with trace.json and steps.jsonl)")
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to serve on (default: a free one)")
    parser.add_argument("--no-serve", action="store_true", help="only write DIR/index.html and print its URL")
    parser.add_argument("--log-level", default="warning", help="of the request log, on stderr (default warning)")
    args = parser.parse_args(argv)
    if not args.dir.is_dir():
        parser.error(f"{args.dir} is not a folder")
    if args.no_serve:
        print(render(args.dir).resolve().as_uri(), flush=True)
        return
    configure_logging("trace-view", args.log_level)  # (stdout is for the URL alone)
    try:
        asyncio.run(_serve_until_stopped(args.dir, args.host, args.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main(sys.argv[1:])
