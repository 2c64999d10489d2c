"""The files OSWorld's task configs download, kept once and read offline.

OSWorld's configs fetch their inputs and the graders' gold files at run time (Google
Drive, Hugging Face): links that are rate-limited, change, and are out of reach offline.
desktop-env keeps what it downloads in an episode's ``cache_dir`` under names of its
own, and downloads only what is not there yet:

- a setup's (or postconfig's) ``download`` file: ``<uuid5(URL namespace, url)>_<basename of its path>``;
- a getter's ``cloud_file`` (the gold files): ``<dest>``;
- ``update_browse_history``'s empty History database: ``history_new.sqlite``, from the
  one URL desktop-env names (``BROWSE_HISTORY_URL``).

A :class:`Cache` is a folder: ``blobs/<sha256>`` holds each file once, by its content,
and ``manifest.json`` maps each URL to its blob (``sha256``, ``size``). ``deskbox tasks
fetch TASKS --cache DIR`` fills it; ``deskbox run --cache DIR`` names what a task set
needs and the cache lacks before the run starts, and lays each task's files into its
episode's ``cache_dir`` under desktop-env's names: the same bytes every run, no network.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .tasks import Task

__all__ = ["Cache", "Want", "wanted", "BROWSE_HISTORY_URL", "download"]

# The History database desktop-env's ``update_browse_history`` step starts from.
BROWSE_HISTORY_URL = ("https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/chrome/"
                      "44ee5668-ecd5-4366-a6ce-c1c9b8d4e938/history_empty.sqlite?download=true")


@dataclass(frozen=True)
class Want:
    """One file a task downloads: from ``url``, into ``name`` in its ``cache_dir``."""

    url: str
    name: str


def _steps(task: Task) -> Iterator[dict[str, Any]]:
    yield from task.config.get("config") or []
    yield from (task.config.get("evaluator") or {}).get("postconfig") or []


def _getters(task: Task) -> Iterator[dict[str, Any]]:
    evaluator = task.config.get("evaluator") or {}
    for key in ("result", "expected"):
        found = evaluator.get(key)
        for one in found if isinstance(found, list) else [found]:
            if isinstance(one, dict):
                yield one


def wanted(task: Task) -> list[Want]:
    """Every file ``task`` downloads through desktop-env, in the order it names them."""
    found: list[Want] = []
    for step in _steps(task):
        parameters = step.get("parameters") or {}
        if step.get("type") == "download":
            for f in parameters.get("files") or []:
                name = f"{uuid.uuid5(uuid.NAMESPACE_URL, f['url'])}_{os.path.basename(f['path'])}"
                found.append(Want(f["url"], name))
        elif step.get("type") == "update_browse_history":
            found.append(Want(BROWSE_HISTORY_URL, "history_new.sqlite"))
    for getter in _getters(task):
        if getter.get("type") != "cloud_file":
            continue
        if getter.get("multi"):
            found += [Want(url, dest) for url, dest in zip(getter["path"], getter["dest"])]
        else:
            found.append(Want(getter["path"], getter["dest"]))
    return list(dict.fromkeys(found))


def download(url: str, dest: Path, timeout: float = 300) -> None:
    """``url`` into ``dest`` (what :meth:`Cache.fetch` uses unless given another)."""
    request = urllib.request.Request(url, headers={"User-Agent": "deskbox-tasks-fetch"})
    with urllib.request.urlopen(request, timeout=timeout) as resp, open(dest, "wb") as out:
        shutil.copyfileobj(resp, out, 1 << 20)


class Cache:
    """A content-addressed folder of downloaded files with a manifest of their URLs."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)
        self.blobs = self.folder / "blobs"
        self.manifest_path = self.folder / "manifest.json"
        self.manifest: dict[str, dict[str, Any]] = (json.loads(self.manifest_path.read_text())
                                                    if self.manifest_path.is_file() else {})

    def has(self, url: str) -> bool:
        entry = self.manifest.get(url)
        return entry is not None and (self.blobs / entry["sha256"]).is_file()

    def missing(self, tasks: Iterable[Task]) -> dict[str, list[str]]:
        """Task key -> the URLs it downloads that the cache does not hold."""
        gaps: dict[str, list[str]] = {}
        for task in tasks:
            urls = [w.url for w in wanted(task) if not self.has(w.url)]
            if urls:
                gaps[task.key] = urls
        return gaps

    def fetch(self, tasks: Iterable[Task], *, get: Callable[[str, Path], None] = download,
              on_file: Callable[[str, str | None], None] = lambda url, error: None) -> dict[str, str]:
        """Download every file of ``tasks`` the cache lacks (each URL once). Returns the
        URLs that failed, with why; the manifest is written after each file, so a fetch
        stopped halfway keeps what it got."""
        self.blobs.mkdir(parents=True, exist_ok=True)
        failed: dict[str, str] = {}
        urls = dict.fromkeys(w.url for task in tasks for w in wanted(task))
        for url in urls:
            if self.has(url):
                continue
            with tempfile.NamedTemporaryFile(dir=self.folder, prefix=".part-", delete=False) as part:
                partial = Path(part.name)
            try:
                get(url, partial)
                digest, size = _digest(partial)
                os.replace(partial, self.blobs / digest)
            except Exception as exc:  # any failure of one file: said, and the others go on
                partial.unlink(missing_ok=True)
                failed[url] = f"{type(exc).__name__}: {exc}"
                on_file(url, failed[url])
                continue
            self.manifest[url] = {"sha256": digest, "size": size}
            self._save()
            on_file(url, None)
        return failed

    def place(self, task: Task, cache_dir: Path | str) -> list[str]:
        """Copy ``task``'s cached files into ``cache_dir`` under desktop-env's names (a
        copy, not a link: nothing a task's grader does to its file reaches the cache).
        Returns the URLs it wanted and the cache lacks, or that name no plain file."""
        lacking: list[str] = []
        for want in wanted(task):
            if not self.has(want.url) or Path(want.name).name != want.name or want.name in ("", ".", ".."):
                # (a name that is not a plain file name would be written outside cache_dir)
                lacking.append(want.url)
                continue
            blob = self.blobs / self.manifest[want.url]["sha256"]
            shutil.copyfile(blob, Path(cache_dir) / want.name)
        return lacking

    def _save(self) -> None:
        tmp = self.manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.manifest, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, self.manifest_path)


def _digest(path: Path) -> tuple[str, int]:
    sha, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            sha.update(chunk)
            size += len(chunk)
    return sha.hexdigest(), size
