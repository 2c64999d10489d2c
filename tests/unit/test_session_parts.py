"""The session's parts stand alone: only ``lifecycle.py`` (the session) and ``cli.py`` (the
command that makes one) know ``lifecycle.Session``. Every other module under
deskbox/session is handed what it needs, imports nothing of lifecycle and takes no
session, so each can be read and tested without one (tests/unit/test_state_alone.py)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from deskbox.common.paths import PACKAGE_DIR

SESSION_DIR = PACKAGE_DIR / "session"
WHOLE = {"lifecycle.py", "cli.py"}


def _parts() -> list[Path]:
    return [p for p in sorted(SESSION_DIR.rglob("*.py")) if p.name not in WHOLE and "__pycache__" not in p.parts]


def _imports_lifecycle(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[-1] == "lifecycle" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[-1] == "lifecycle":
                return True
            if any(a.name == "lifecycle" for a in node.names):
                return True
    return False


def _takes_a_session(tree: ast.AST) -> list[str]:
    """Functions of a part with a parameter named ``session`` or annotated ``Session``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                note = ast.unparse(arg.annotation) if arg.annotation else ""
                if arg.arg == "session" or note.strip("'\"").split(".")[-1] == "Session":
                    found.append(f"{node.name}({arg.arg})")
    return found


def test_the_check_sees_an_import_of_lifecycle_and_a_session_parameter():
    bad = ast.parse("from .lifecycle import Session\ndef f(session: 'Session') -> None: ...\n")
    assert _imports_lifecycle(bad)
    assert _takes_a_session(bad) == ["f(session)"]
    assert _imports_lifecycle(ast.parse("from . import lifecycle\n"))
    assert not _imports_lifecycle(ast.parse("from .layout import Layout\n"))


def test_no_part_of_the_session_imports_lifecycle_or_takes_the_session():
    parts = _parts()
    assert len(parts) >= 15, "the session's parts were not found"
    importing = [p.name for p in parts if _imports_lifecycle(ast.parse(p.read_text()))]
    assert importing == [], "these parts import lifecycle: give them what they need instead"
    taking = {p.name: t for p in parts if (t := _takes_a_session(ast.parse(p.read_text())))}
    assert taking == {}, "these parts take the whole session"


def test_the_session_is_one_class_that_holds_its_parts_not_mixins():
    from deskbox.session.lifecycle import Session

    assert Session.__bases__ == (object,)
    assert "SessionState" in inspect.getsource(Session) and "SessionChildren" in inspect.getsource(Session)
