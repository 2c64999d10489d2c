"""Writes ``client_sync.py``: the synchronous ``Client``, one plain method for each public
method of ``client.AsyncClient``, with the same signature, overloads and docstring, so
that type checkers and editors see them. ``python -m deskbox.client_gen`` rewrites it
after ``AsyncClient`` changes; a unit test fails while it is stale."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

__all__ = ["generate", "SYNC_PATH"]

HERE = Path(__file__).resolve().parent
SYNC_PATH = HERE / "client_sync.py"
_HAND_WRITTEN = {"close", "from_state_file", "from_env"}  # (SyncBase's)

_HEAD = '''"""The synchronous client of a deskbox session: ``deskbox.Client``. Generated from
``client.AsyncClient`` by ``python -m deskbox.client_gen``; do not edit by hand.

    with Client.from_state_file("/tmp/deskbox.json") as desk:
        desk.act(desk.find('button[name="Submit"]').matches[0].id)

Its calls run on one event loop every ``Client`` of the process shares, in a daemon thread
started at the first; ``close()`` closes its connections."""

from __future__ import annotations

from typing import Any, Literal, overload

{answers}
from .client import AsyncClient, DiffForm, Mode, Service, SyncBase
from .common.options import DEFAULT_URLS

__all__ = ["Client"]


class Client(SyncBase):
    """A session's services by base URL (None for one it does not run) and its bearer
    token, called plainly (``AsyncClient`` with ``await``). Use it as ``with``, or call
    ``close()``."""
'''


def _header(source: str, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The ``def`` line(s) as written, up to the body, without ``async``."""
    lines = source.splitlines()
    body = fn.body[0]
    head = lines[fn.lineno - 1:body.lineno]
    head[-1] = head[-1][:body.col_offset]  # (the body may start on the def's own line: `: ...`)
    if isinstance(fn, ast.AsyncFunctionDef):  # (continuation lines were aligned after "async ")
        head = [head[0].replace("async def ", "def ", 1)] + [line[len("async "):] for line in head[1:]]
    return "\n".join(head).rstrip()


def _wrapped(prefix: str, args: str, suffix: str, indent: int = 8, width: int = 120) -> str:
    """``prefix + args + suffix`` on lines of at most ``width``, continuation lines aligned
    after ``prefix``."""
    lines, line = [], " " * indent + prefix
    pad = " " * len(line)
    for i, arg in enumerate(args.split(", ") if args else []):
        piece = arg + (", " if i < len(args.split(", ")) - 1 else "")
        if len(line + piece.rstrip()) > width and line.strip() != prefix.strip():
            lines.append(line.rstrip())
            line = pad
        line += piece
    return "\n".join([*lines, line + suffix]) + "\n"


def _call(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    a = fn.args
    parts = [p.arg for p in [*a.posonlyargs, *a.args][1:]]
    if a.vararg:
        parts.append(f"*{a.vararg.arg}")
    parts += [f"{k.arg}={k.arg}" for k in a.kwonlyargs]
    if a.kwarg:
        parts.append(f"**{a.kwarg.arg}")
    return ", ".join(parts)


def _is_overload(fn: ast.AST) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "overload" for d in getattr(fn, "decorator_list", ()))


def _answers_import(tree: ast.Module) -> str:
    """The answer models ``client.py`` imports, imported the same way (one per line, as
    ruff's isort writes a long import)."""
    names = next(sorted(a.name for a in n.names) for n in tree.body
                 if isinstance(n, ast.ImportFrom) and n.module == "answers" and n.level == 1)
    return "from .answers import (\n" + "".join(f"    {name},\n" for name in names) + ")"


def generate() -> str:
    source = (HERE / "client.py").read_text()
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "AsyncClient")
    out = [_HEAD.replace("{answers}", _answers_import(tree))]
    for fn in cls.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if fn.name == "__init__":
            out.append("\n" + _header(source, fn) + "\n" + _wrapped("self._start(lambda: AsyncClient(", _call(fn), "))"))
            continue
        if fn.name.startswith("_") or fn.name in _HAND_WRITTEN or not isinstance(fn, ast.AsyncFunctionDef):
            continue
        if _is_overload(fn):
            out.append("\n    @overload\n" + _header(source, fn) + " ...\n")
            continue
        doc = ast.get_docstring(fn, clean=False)
        body = f'        """{doc}"""\n' if doc else ""
        out.append("\n" + _header(source, fn) + "\n" + body
                   + _wrapped(f"return self._run(self._client.{fn.name}(", _call(fn), "))"))
    return "".join(out)


if __name__ == "__main__":
    text = generate()
    if "--check" in sys.argv[1:]:
        sys.exit(0 if SYNC_PATH.read_text() == text else f"{SYNC_PATH} is stale: python -m deskbox.client_gen")
    SYNC_PATH.write_text(text)
