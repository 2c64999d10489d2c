"""One table of settings: every DESKBOX_ variable the code, the scripts and the image read
is in it, the names they had before are read nowhere else, docs/settings.md is the
table as generated, and an old name still works for a release, with a warning."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from deskbox.common import settings
from deskbox.common.settings import SETTINGS, env, env_flag, env_int, markdown

ROOT = Path(__file__).resolve().parents[2]
OLD = {old: s.name for s in SETTINGS.values() for old in s.old}


def _sources() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "deskbox", "scripts", "Containerfile",
                             "compose.yaml", "deploy", "chromium_with_api.py"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file() and not (ROOT / name).is_symlink()
            and not name.endswith((".png", ".svg"))]


def test_every_deskbox_variable_read_anywhere_is_in_the_table():
    unknown: dict[str, list[str]] = {}
    for path in _sources():
        for name in set(re.findall(r"\bDESKBOX_[A-Z][A-Z0-9_]*[A-Z0-9]\b", path.read_text(errors="replace"))):
            if name not in SETTINGS:
                unknown.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert not unknown, f"variables missing from deskbox/common/settings.py: {unknown}"


def test_a_former_name_is_read_only_through_the_table():
    stray = []
    for path in _sources():
        if path.name == "settings.py":
            continue
        text = path.read_text(errors="replace")
        stray += [f"{path.relative_to(ROOT)}: {old}" for old in OLD if re.search(rf"[\"'$]{{?{old}\b", text)]
    assert not stray, stray


def test_the_settings_page_is_the_table():
    page = (ROOT / "docs" / "settings.md").read_text()
    assert page == markdown(), "docs/settings.md is stale: python -m deskbox.common.settings > docs/settings.md"


def test_a_new_name_wins_an_old_one_works_with_a_warning_and_empty_is_unset(monkeypatch):
    monkeypatch.setattr(settings, "_warned", set())
    monkeypatch.delenv("DESKBOX_DESKTOPD", raising=False)
    monkeypatch.delenv("DESKTOPD_URL", raising=False)
    assert env("DESKBOX_DESKTOPD") == "http://127.0.0.1:8080"
    monkeypatch.setenv("DESKTOPD_URL", "http://10.0.0.2:9000")
    with pytest.warns(FutureWarning, match="DESKTOPD_URL .* set DESKBOX_DESKTOPD"):
        assert env("DESKBOX_DESKTOPD") == "http://10.0.0.2:9000"
    monkeypatch.setenv("DESKBOX_DESKTOPD", "http://10.0.0.3:9000")
    assert env("DESKBOX_DESKTOPD") == "http://10.0.0.3:9000"
    monkeypatch.setenv("DESKBOX_SCENE_PORT", "")
    assert env_int("DESKBOX_SCENE_PORT") == 8000
    monkeypatch.setenv("DESKBOX_VIEW", "1")
    assert env_flag("DESKBOX_VIEW")
    with pytest.raises(KeyError):
        env("DESKBOX_NO_SUCH_SETTING")


def test_a_clients_former_names_work_as_the_services_do(monkeypatch):
    """DESKTOPD_URL, the former name of DESKBOX_DESKTOPD, reaches deskbox.Client and
    deskbox mcp as it reaches the scene; a client not told has None, not the default (it
    then reads the state file)."""
    from deskbox.common.options import client_env

    monkeypatch.setattr(settings, "_warned", set())
    for name in ("DESKBOX_DESKTOPD", "DESKTOPD_URL"):
        monkeypatch.delenv(name, raising=False)
    assert client_env("desktopd") is None
    monkeypatch.setenv("DESKTOPD_URL", "http://10.0.0.9:8080")
    with pytest.warns(FutureWarning, match="DESKTOPD_URL is deprecated"):
        assert client_env("desktopd") == "http://10.0.0.9:8080"
    monkeypatch.setenv("DESKBOX_DESKTOPD", "http://10.0.0.8:8080")
    assert client_env("desktopd") == "http://10.0.0.8:8080"
