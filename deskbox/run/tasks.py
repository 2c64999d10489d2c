"""Task configs in OSWorld's format, found where a user keeps them.

``TASKS`` given to ``deskbox run`` is any of:

- OSWorld's layout: an index (``test_all.json``-style, ``{domain: [id, ...]}``) whose
  configs are ``examples/<domain>/<id>.json`` beside it (the index's own folder, or its
  ``examples/`` folder);
- a folder of configs (``<domain>/<id>.json`` below it, or ``<id>.json`` with the domain
  taken from the config's ``snapshot``/``related_apps`` or the folder's name);
- single config files.

A config is OSWorld's: ``id``, ``instruction``, ``config`` (setup steps), ``evaluator``
(``func``, ``result``, ``expected``, ``options``, ``conj``, ``postconfig``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

__all__ = ["Task", "TaskError", "load_tasks"]


# A task's domain and id name its results' folders: refused before they name one
# outside the run's folder.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")


class TaskError(ValueError):
    """Task configs that cannot be read, or a selection that matches nothing."""


@dataclass(frozen=True)
class Task:
    domain: str
    config: dict[str, Any]
    path: str
    # Which run of the task this is, with ``deskbox run --repeats``: 0, 1, ...
    repeat: int = 0

    @property
    def id(self) -> str:
        return str(self.config["id"])

    @property
    def name(self) -> str:
        """The task: ``domain/id``."""
        return f"{self.domain}/{self.id}"

    @property
    def key(self) -> str:
        """Unique within a run: ``domain/id``, and ``#N`` after it for repeat N > 0."""
        return f"{self.name}#{self.repeat}" if self.repeat else self.name

    @property
    def run_dir(self) -> str:
        """Where its files go, under the run's folder: the run's own folder for the first
        repeat (OSWorld's layout unchanged), ``repeat-N`` for repeat N."""
        return f"repeat-{self.repeat}" if self.repeat else ""

    @property
    def instruction(self) -> str:
        return str(self.config.get("instruction", ""))


def _read(path: Path, domain: str) -> Task:
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise TaskError(f"{path}: not a task config: {exc}") from exc
    if not isinstance(config, dict) or "id" not in config or "evaluator" not in config:
        raise TaskError(f"{path}: a task config has at least 'id' and 'evaluator'")
    for what, name in (("domain", domain), ("id", str(config["id"]))):
        if not _NAME.fullmatch(name) or ".." in name:
            raise TaskError(f"{path}: the task's {what} {name!r} cannot name a folder of the results: letters, "
                            "digits, '.', '_' and '-' (no '..' or '/')")
    return Task(domain, config, str(path))


def _from_index(index: Path) -> list[Task]:
    try:
        listing = json.loads(index.read_text())
    except (OSError, ValueError) as exc:
        raise TaskError(f"{index}: not a task index: {exc}") from exc
    if not isinstance(listing, dict) or not all(isinstance(v, list) for v in listing.values()):
        raise TaskError(f"{index}: an index maps each domain to a list of task ids")
    roots = [index.parent / "examples", index.parent]
    tasks = []
    for domain, ids in listing.items():
        for ident in ids:
            found = next((r / domain / f"{ident}.json" for r in roots if (r / domain / f"{ident}.json").is_file()), None)
            if found is None:
                raise TaskError(f"{index}: no config for {domain}/{ident} (looked in {', '.join(map(str, roots))})")
            tasks.append(_read(found, domain))
    return tasks


def _from_folder(folder: Path) -> list[Task]:
    tasks = []
    for path in sorted(folder.rglob("*.json")):
        if path.parent == folder:
            try:
                config = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(config, dict) and all(isinstance(v, list) for v in config.values()) and config:
                continue  # an index beside its configs
            domain = str(config.get("snapshot") or folder.name) if isinstance(config, dict) else folder.name
        else:
            domain = path.parent.name
        tasks.append(_read(path, domain))
    return tasks


def load_tasks(sources: Iterable[str], *, domains: Iterable[str] = (), ids: Iterable[str] = (),
               limit: int | None = None) -> list[Task]:
    """Every task the sources name, in order, each once; ``domains`` and ``ids`` (task
    ids or ``domain/id``) select, ``limit`` keeps the first N."""
    tasks: list[Task] = []
    for source in sources:
        path = Path(source).expanduser()
        if path.is_dir():
            tasks += _from_folder(path)
        elif path.is_file():
            try:
                head = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                raise TaskError(f"{path}: not JSON: {exc}") from exc
            tasks += _from_index(path) if isinstance(head, dict) and "evaluator" not in head else [
                _read(path, str(head.get("snapshot") or path.parent.name))]
        else:
            raise TaskError(f"{source}: no such file or folder")
    seen: set[str] = set()
    unique = [t for t in tasks if not (t.key in seen or seen.add(t.key))]
    want_domains, want_ids = set(domains), set(ids)
    if want_domains:
        unique = [t for t in unique if t.domain in want_domains]
    if want_ids:
        unique = [t for t in unique if t.id in want_ids or t.key in want_ids]
    if limit is not None:
        unique = unique[:limit]
    if not unique:
        raise TaskError("no task matches: check TASKS, --domains and --tasks")
    return unique
