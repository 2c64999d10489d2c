"""docs/osworld.md stays true: every route of OSWorld's server, every setup step type
and every getter type of its task format has a row there, and what the page calls
served is served."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

from deskbox.osworld.app import ROUTES

DOC = Path(__file__).resolve().parents[2] / "docs" / "osworld.md"

# The route table of OSWorld's in-VM server (desktop_env/server/main.py in OSWorld's
# repository, which the desktop-env package does not ship).
OSWORLD_SERVER_ROUTES = [
    ("POST", "/execute"), ("POST", "/setup/execute"),
    ("POST", "/execute_with_verification"), ("POST", "/setup/execute_with_verification"),
    ("POST", "/setup/launch"), ("GET", "/screenshot"), ("GET", "/terminal"), ("GET", "/accessibility"),
    ("POST", "/screen_size"), ("POST", "/window_size"), ("POST", "/desktop_path"), ("POST", "/wallpaper"),
    ("POST", "/list_directory"), ("POST", "/file"), ("POST", "/setup/upload"), ("GET", "/platform"),
    ("GET", "/cursor_position"), ("POST", "/setup/change_wallpaper"), ("POST", "/setup/download_file"),
    ("POST", "/setup/open_file"), ("POST", "/setup/activate_window"), ("POST", "/setup/close_window"),
    ("POST", "/start_recording"), ("POST", "/end_recording"), ("POST", "/run_python"),
    ("POST", "/run_bash_script"),
]


def _package_source(module: str) -> str:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"{module} is not installed (scripts/install-deps installs desktop-env)"
    return Path(spec.origin).read_text()


def _table(heading: str) -> dict[str, str]:
    """Each name in the first column of the table under ``heading`` -> its verdict."""
    text = DOC.read_text()
    section = text.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name] = cells[1]
    return rows


def test_every_route_of_osworlds_server_has_a_row_and_what_is_served_is_served():
    rows = _table("Routes of OSWorld's server")
    served = {(r.method, r.path) for r in ROUTES}
    for method, path in OSWORLD_SERVER_ROUTES:
        verdict = rows.get(f"{method} {path}")
        assert verdict in ("same", "differs", "missing"), f"{method} {path} has no row in {DOC.name}"
        assert (verdict == "missing") == ((method, path) not in served), f"{method} {path}: page says {verdict}"


def test_every_route_osworlds_client_calls_is_on_the_page():
    calls = set()
    for module in ("desktop_env.controllers.python", "desktop_env.controllers.setup"):
        source = _package_source(module).replace('"/setup" + "/', '"/setup/')
        calls |= set(re.findall(r'http_server\s*\+\s*"(/[a-z_/]+)"', source))
        calls |= set(re.findall(r'\{self\.http_server\}(/[a-z_/]+)', source))
    assert calls, "found no calls in desktop-env's controllers"
    documented = {name.split(" ", 1)[1] for name in _table("Routes of OSWorld's server")}
    assert calls <= documented, calls - documented


def test_every_setup_step_type_has_a_row():
    tree = ast.parse(_package_source("desktop_env.controllers.setup"))
    steps = {node.name[1:-len("_setup")] for node in ast.walk(tree)
             if isinstance(node, ast.FunctionDef) and node.name.startswith("_") and node.name.endswith("_setup")}
    assert "download" in steps and "open" in steps
    rows = _table("Setup step types")
    assert steps <= set(rows), steps - set(rows)
    assert all(v in ("same", "differs", "missing") for v in rows.values()), rows


def test_every_getter_type_has_a_row():
    tree = ast.parse(_package_source("desktop_env.evaluators.getters"))
    getters = {alias.name[len("get_"):] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               for alias in node.names if alias.name.startswith("get_")}
    assert "bookmarks" in getters and "vm_file" in getters
    rows = _table("Getter types")
    assert getters <= set(rows), getters - set(rows)
    assert all(v in ("same", "differs", "missing") for v in rows.values()), rows
