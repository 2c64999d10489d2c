"""What modules share is public; what a module keeps is not reached into: no module of
deskbox imports another's underscore names (a package's own private submodule, as
``from . import _tween``, is its own), and the benches read none of deskbox's."""

from __future__ import annotations

import ast

from deskbox.common.paths import PACKAGE_DIR


def _private_imports() -> list[str]:
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            own_submodule = node.level > 0 and node.module is None
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__") and not own_submodule:
                    found.append(f"{path.relative_to(PACKAGE_DIR)}: from {'.' * node.level}{node.module or ''} "
                                 f"import {alias.name}")
    return found


def test_no_module_imports_another_modules_underscore_names():
    assert _private_imports() == []


def _reached_from_bench() -> list[str]:
    """``module._name`` in bench/, where ``module`` is one of deskbox's it imported."""
    found = []
    for path in sorted((PACKAGE_DIR.parent / "bench").glob("*.py")):
        tree = ast.parse(path.read_text())
        modules = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("deskbox"):
                modules |= {a.asname or a.name for a in node.names}
            elif isinstance(node, ast.Import):
                modules |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("deskbox")}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Name) and node.value.id in modules):
                found.append(f"bench/{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_the_benches_read_no_private_name_of_deskbox():
    assert _reached_from_bench() == []


def test_the_bench_names_the_png_writers_deflate():
    from bench.__main__ import _encoder_settings
    from deskbox.desktopd import encode

    assert _encoder_settings()["png"]["deflate"] == encode.DEFLATE.__name__
