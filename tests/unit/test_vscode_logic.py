"""``code``'s command line and the workbench addresses it opens (deskbox.osworld.vscode):
pure logic, no session."""

from __future__ import annotations

import json
import urllib.parse

from deskbox.osworld.vscode import HOST, parse_args, window_url


def test_paths_switches_and_commands_are_told_apart():
    assert parse_args([]).paths == [] and parse_args([]).command == []
    assert parse_args(["-n", "/home/user/project", "--disable-extensions"]).paths == ["/home/user/project"]
    assert parse_args(["--goto", "main.py:3:1"]).paths == ["main.py"]
    assert parse_args(["--locale", "fr", "a.txt"]).paths == ["a.txt"]  # (a switch's value is not a path)
    got = parse_args(["--install-extension", "x.vsix", "--force"])
    assert got.command == ["--install-extension", "x.vsix", "--force"] and got.paths == []
    assert parse_args(["--list-extensions", "--show-versions"]).command == ["--list-extensions", "--show-versions"]


def test_a_folder_a_workspace_and_a_file_open_as_vs_code_opens_them(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "main.py").write_text("print(1)\n")
    (tmp_path / "w.code-workspace").write_text("{}")
    assert window_url(8123, None) == f"http://{HOST}:8123/"
    query = lambda url: urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)  # noqa: E731
    assert query(window_url(8123, str(tmp_path / "proj"))) == {"folder": [str(tmp_path / "proj")]}
    assert query(window_url(8123, str(tmp_path / "w.code-workspace"))) == {
        "workspace": [str(tmp_path / "w.code-workspace")]}
    opened = query(window_url(8123, str(tmp_path / "proj" / "main.py")))
    assert opened["folder"] == [str(tmp_path / "proj")]
    assert json.loads(opened["payload"][0]) == [["openFile", f"vscode-remote://{HOST}:8123{tmp_path}/proj/main.py"]]
    # (a file not made yet opens too: VS Code creates it on save)
    assert query(window_url(8123, str(tmp_path / "new.txt")))["folder"] == [str(tmp_path)]
