"""The ``deskbox`` command sits above the parts it starts: each subcommand's arguments
are its own module's, and the session does not import the command, the runner or the
MCP server back."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT

PACKAGE = ROOT / "deskbox"


def _imports(path: Path) -> set[str]:
    """The deskbox modules ``path`` imports, as absolute names."""
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module.removesuffix(".__init__")
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            name = ".".join([*base, node.module] if node.module else base)
            found.add(name)
            found.update(f"{name}.{a.name}" for a in node.names)
    return {n for n in found if n.startswith("deskbox")}


def test_the_session_imports_neither_the_command_nor_the_runner_nor_mcp():
    above = ("deskbox.cli", "deskbox.run", "deskbox.mcp")
    reaching = {str(p.relative_to(ROOT)): sorted(n for n in _imports(p) if any(n == m or n.startswith(m + ".")
                                                                              for m in above))
                for p in (PACKAGE / "session").rglob("*.py")}
    assert {k: v for k, v in reaching.items() if v} == {}


def test_every_subcommand_is_reached_from_the_top():
    out = subprocess.run([sys.executable, "-m", "deskbox.cli", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0 and "{up,mcp,trace,run,tasks}" in out.stdout, out.stdout + out.stderr
    for argv, usage in ((["up", "--help"], "usage: deskbox up"), (["mcp", "--help"], "usage: deskbox mcp"),
                        (["run", "--help"], "usage: deskbox run"), (["tasks", "--help"], "deskbox tasks")):
        out = subprocess.run([sys.executable, "-m", "deskbox.cli", *argv], cwd=ROOT, capture_output=True, text=True)
        assert out.returncode == 0 and usage in out.stdout, (argv, out.stdout[:300], out.stderr[-300:])


def test_python_m_deskbox_mcp_is_deskbox_mcp():
    out = subprocess.run([sys.executable, "-m", "deskbox.mcp", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0 and "usage: deskbox mcp" in out.stdout and "--state-file" in out.stdout
