"""Files and folders: ``/list_directory``, ``/file``, ``/setup/upload``,
``/desktop_path``, and the background image (``/wallpaper``,
``/setup/change_wallpaper``).

Where OSWorld's server defines a reply its clients read (``404 {"error": "File not
found"}`` ...) it is given; what it would answer with a 500 for the client's own mistake
(a path the session user may not read or write, a folder where a file was expected)
is a 403, 404 or 400 here, with the same ``{"error": ...}`` shape."""

from __future__ import annotations

import asyncio
import errno
import os
import re
import shutil
import tempfile
import urllib.parse
from pathlib import Path
from typing import Any

from aiohttp import web

from ..common.errors import InvalidRequestError
from ..common.web import BODY_ERRORS, json_ok, read_body, validate
from . import commands
from .base import CONTROL, WORK, form, home, local_path, session_env
from .models import FileForm, PathRequest, UploadForm

__all__ = ["list_directory", "get_file", "upload", "desktop_path", "wallpaper", "change_wallpaper",
           "MAX_UPLOAD_BYTES"]

# Task files (documents, spreadsheets, short videos) are well under this.
MAX_UPLOAD_BYTES = 1024 * 1024 * 1024
MAX_LIST_ENTRIES = 20_000


# Paths are looked at with os.path's checks, which answer False for a path the session
# user cannot look at (Path's raise PermissionError there).


def _error(message: str, status: int) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _os_error(what: str, exc: OSError) -> web.Response:
    """An OSError the client's path caused, as a 4xx (507 when the disk is full)."""
    if isinstance(exc, PermissionError):
        return _error(f"{what}: permission denied: {exc.filename or exc}", 403)
    if exc.errno == errno.ENOSPC:
        return _error(f"{what}: no space left on the device", 507)
    if isinstance(exc, FileNotFoundError):
        return _error(f"{what}: {exc.filename or exc}: no such file or folder", 404)
    return _error(f"{what}: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), 400)


def _tree(path: Path, budget: list[int]) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "directory", "name": path.name, "children": []}
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError as exc:
        return {"error": str(exc)}
    for entry in entries:
        budget[0] -= 1
        if budget[0] < 0:
            break
        # Symlinked folders are listed as files: a link loop must not recurse forever.
        if entry.is_dir(follow_symlinks=False):
            node["children"].append(_tree(Path(entry.path), budget))
        else:
            node["children"].append({"type": "file", "name": entry.name})
    return node


async def list_directory(request: web.Request) -> web.Response:
    req = await read_body(request, PathRequest)
    path = local_path(req.path)
    if not os.path.isdir(path):
        return _error("The provided path is not a directory", 400)
    if not os.access(path, os.R_OK | os.X_OK):
        return _error(f"Permission denied: {path}", 403)
    tree = await asyncio.to_thread(_tree, path, [MAX_LIST_ENTRIES])
    return json_ok({"directory_tree": tree})


async def get_file(request: web.Request) -> web.StreamResponse:
    f = await form(request, FileForm)
    path = local_path(f.file_path)
    if not os.path.isfile(path):
        return _error("File not found", 404)
    if not os.access(path, os.R_OK):
        return _error(f"Failed to serve file: permission denied: {path}", 403)
    return web.FileResponse(path, headers={"Content-Disposition": f'attachment; filename="{path.name}"',
                                           "Content-Type": "application/octet-stream"})


async def _read_upload(request: web.Request, fields: dict[str, str]) -> tuple[Path | None, int]:
    """The parts of an upload: ``file_data`` streamed to a temporary file (returned with
    its size), the other fields into ``fields``."""
    reader = await request.multipart()
    tmp: Path | None = None
    size = 0
    try:
        while (part := await reader.next()) is not None:
            if part.name == "file_data":
                fd, name = tempfile.mkstemp(prefix="upload-", dir=request.app[WORK])
                tmp = Path(name)
                with os.fdopen(fd, "wb") as out:
                    while chunk := await part.read_chunk(1024 * 1024):
                        size += len(chunk)
                        if size > MAX_UPLOAD_BYTES:
                            raise InvalidRequestError(f"file_data is over {MAX_UPLOAD_BYTES} bytes", code="too_large")
                        out.write(chunk)
            elif part.name:
                fields[part.name] = (await part.read(decode=True)).decode("utf-8", "replace")
    except BaseException:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise
    return tmp, size


async def upload(request: web.Request) -> web.Response:
    """Multipart ``file_path`` + ``file_data`` (in either order): the data is streamed
    to a temporary file beside the work folder, then moved into place."""
    if not request.content_type.startswith("multipart/"):
        raise InvalidRequestError("send multipart/form-data with file_path and file_data", code="validation_error")
    fields: dict[str, str] = {}
    tmp: Path | None = None
    size = 0
    try:
        try:
            tmp, size = await _read_upload(request, fields)
        except BODY_ERRORS as exc:  # (no boundary, a part with no headers ...)
            raise InvalidRequestError(f"the multipart body cannot be read: {exc}", code="validation_error") from exc
        if tmp is None or "file_path" not in fields:
            return _error("file_path and file_data are required", 400)
        dest = local_path(validate(UploadForm, fields).file_path)
        if os.path.isdir(dest):
            return _error(f"Failed to upload file: {dest} is a folder", 400)
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            await asyncio.to_thread(shutil.move, str(tmp), str(dest))
            tmp = None
        except OSError as exc:
            return _os_error("Failed to upload file", exc)
        return web.Response(text=f"File Uploaded: {size} bytes")
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)


async def desktop_path(request: web.Request) -> web.Response:
    path = home() / "Desktop"
    if os.path.isdir(path):
        return json_ok({"desktop_path": str(path)})
    return _error("Unsupported operating system or desktop path not found", 404)


async def _gnome_background() -> Path | None:
    """The file GNOME's background setting names, as OSWorld's server reads it (``gsettings
    get org.gnome.desktop.background picture-uri``); None when it names no file this
    user can read, or cannot be read."""
    try:
        done = await commands.run(["gsettings", "get", "org.gnome.desktop.background", "picture-uri"], timeout=10,
                                  env=session_env())
    except (OSError, commands.CommandTimeout):
        return None
    value = done.stdout.strip()
    if done.returncode != 0 or len(value) < 2 or value[0] != value[-1] or value[0] not in "'\"":
        return None
    uri = re.sub(r"\\(.)", r"\1", value[1:-1])
    if not uri.startswith("file://"):
        return None
    # OSWorld's server writes the path as it is after file://; GNOME's apps write a URI
    # (a space is %20).
    for raw in (uri[len("file://"):], urllib.parse.unquote(uri[len("file://"):])):
        if os.path.isfile(raw) and os.access(raw, os.R_OK):
            return Path(raw)
    return None


async def wallpaper(request: web.Request) -> web.StreamResponse:
    """The background image's bytes (served as image/png whatever it is, as OSWorld's
    server does): the file GNOME's setting names, where OSWorld's server looks (a task
    may set it with gsettings); else the one the session shows."""
    path = await _gnome_background()
    if path is None:
        state = await request.app[CONTROL].call("GET", "/wallpaper")
        if not state.get("path"):
            return web.Response(text="Wallpaper file not found", status=404)
        path = Path(state["path"])
    if not os.path.isfile(path) or not os.access(path, os.R_OK):
        return web.Response(text=f"Unable to serve the wallpaper file {path}", status=404)
    return web.FileResponse(path, headers={"Content-Type": "image/png"})


async def change_wallpaper(request: web.Request) -> web.Response:
    req = await read_body(request, PathRequest)
    path = local_path(req.path)
    if not os.path.isfile(path):
        return web.Response(text=f"File not found: {path}", status=404)
    await request.app[CONTROL].call("POST", "/wallpaper", {"path": str(path)})
    return web.Response(text="Wallpaper changed successfully")
