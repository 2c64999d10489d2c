"""A session's home: made fresh, saved, put back exactly; names checked; only a home
deskbox made is ever emptied. (Plain folders; no desktop needed.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deskbox.session.default_apps import BROWSER_ENTRY, VIDEO_TYPES, VIDEOS_ENTRY, home_files
from deskbox.session.home import MARKER, Home, HomeError, HomeInUse

UID, GID = os.getuid(), os.getgid()


def tree(path: Path) -> dict[str, str | None]:
    out = {}
    for p in sorted(path.rglob("*")):
        rel = str(p.relative_to(path))
        if rel == MARKER:
            continue
        out[rel] = ("-> " + os.readlink(p)) if p.is_symlink() else (p.read_text() if p.is_file() else None)
    return out


@pytest.fixture
def home(tmp_path) -> Home:
    h = Home(tmp_path / "home", uid=UID, gid=GID, snapshots=tmp_path / "snapshots")
    h.lock()
    h.make_fresh({".config/app/settings.ini": "[a]\nb=1\n"})
    yield h
    h.unlock()


def test_a_fresh_home_has_the_xdg_folders_their_config_and_the_template(home):
    for name in ("Desktop", "Documents", "Downloads", "Music", "Pictures", "Videos", "Public", "Templates"):
        assert (home.path / name).is_dir()
    assert 'XDG_DOWNLOAD_DIR="$HOME/Downloads"' in (home.path / ".config/user-dirs.dirs").read_text()
    assert (home.path / ".config/app/settings.ini").read_text() == "[a]\nb=1\n"
    assert (home.path / MARKER).exists()


def test_restore_brings_back_exactly_what_was_saved(home):
    (home.path / "Desktop" / "a.txt").write_text("one")
    (home.path / "link").symlink_to("Desktop/a.txt")
    home.save("s1", {"urls": ["about:blank"]})
    saved = tree(home.path)

    (home.path / "Desktop" / "a.txt").write_text("changed")
    (home.path / "Desktop" / "new.txt").write_text("new")
    (home.path / "Music").rmdir()
    (home.path / "link").unlink()
    (home.path / "link").mkdir()  # a folder where a link was
    counts = home.restore("s1")
    assert tree(home.path) == saved
    assert counts["removed"] >= 2 and counts["copied"] >= 1
    assert home.info("s1").meta == {"urls": ["about:blank"]}


def test_a_restore_copies_only_what_changed_since_deskbox_wrote_it(home):
    for i in range(20):
        (home.path / "Documents" / f"f{i}.txt").write_text(str(i))
    home.save("s1", {})
    (home.path / "Documents" / "f3.txt").write_text("touched")
    assert home.restore("s1")["copied"] == 1
    assert home.restore("s1")["copied"] == 0  # nothing touched since
    assert (home.path / "Documents" / "f3.txt").read_text() == "3"


def test_a_file_changed_without_changing_size_or_mtime_is_still_put_back(home):
    target = home.path / "Documents" / "same.txt"
    target.write_text("aaaa")
    home.save("s1", {})
    st = target.stat()
    target.write_text("bbbb")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # a program hiding its change
    home.restore("s1")
    assert target.read_text() == "aaaa"


def test_snapshots_list_replace_and_delete(home):
    home.save("a", {})
    home.save("b", {})
    (home.path / "x").write_text("x")
    home.save("a", {})  # replaced
    assert [s.name for s in home.list()] == ["b", "a"]
    home.delete("b")
    assert [s.name for s in home.list()] == ["a"]
    with pytest.raises(KeyError):
        home.delete("b")
    with pytest.raises(KeyError):
        home.restore("never")


@pytest.mark.parametrize("name", ["../x", "a/b", "", ".hidden", "x" * 65, "sp ace", "..", "/abs"])
def test_snapshot_names_that_are_not_plain_folder_names_are_refused(home, name):
    with pytest.raises(HomeError):
        home.save(name, {})
    assert not (home.snapshots.parent / "x").exists()


def test_a_home_deskbox_did_not_make_is_never_emptied(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "precious.txt").write_text("keep")
    h = Home(theirs, uid=UID, gid=GID, snapshots=tmp_path / "s")
    with pytest.raises(HomeError):
        h.make_fresh({})
    h.remove()
    assert (theirs / "precious.txt").read_text() == "keep"


def test_a_second_holder_of_a_home_is_refused(home):
    other = Home(home.path, uid=UID, gid=GID, snapshots=home.snapshots)
    with pytest.raises(HomeInUse):
        other.lock()


def test_remove_leaves_a_new_home_at_the_same_path_alone(tmp_path):
    old = Home(tmp_path / "h", uid=UID, gid=GID, snapshots=tmp_path / "s")
    old.lock()
    old.make_fresh({})
    # Gone and made again by someone else while the old holder still ends.
    os.rename(tmp_path / "h", tmp_path / "gone")
    new = Home(tmp_path / "h", uid=UID, gid=GID, snapshots=tmp_path / "s2")
    new.lock()
    new.make_fresh({})
    old.remove()
    assert (tmp_path / "h" / MARKER).exists()
    old.unlock()
    new.unlock()


def test_default_apps_name_an_installed_app_or_the_sessions_browser(tmp_path):
    apps = tmp_path / "applications"
    apps.mkdir()
    (apps / "libreoffice-calc.desktop").write_text("")
    files = home_files(apps)
    mime = files[".config/mimeapps.list"]
    assert "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet=libreoffice-calc.desktop" in mime
    assert f"text/plain={BROWSER_ENTRY}" in mime
    assert "application/vnd.openxmlformats-officedocument.wordprocessingml.document" not in mime
    assert "Exec=google-chrome %U" in files[f".local/share/applications/{BROWSER_ENTRY}"]


def test_videos_open_in_gnomes_videos_as_on_osworlds_vm_even_with_vlc_installed(tmp_path):
    apps = tmp_path / "applications"
    apps.mkdir()
    (apps / "vlc.desktop").write_text("")
    files = home_files(apps)
    defaults = dict(line.split("=", 1) for line in files[".config/mimeapps.list"].splitlines() if "=" in line)
    assert {defaults[t] for t in VIDEO_TYPES} == {VIDEOS_ENTRY} and "video/mp4" in VIDEO_TYPES
    assert "vlc.desktop" not in {v for k, v in defaults.items() if k.startswith("video/")}
    assert "Name=Videos" in files[f".local/share/applications/{VIDEOS_ENTRY}"]


def test_a_session_that_could_not_take_a_home_never_removes_it(home):
    # Another session holds ``home``; this one failed to lock it and is ending.
    other = Home(home.path, uid=UID, gid=GID, snapshots=home.snapshots)
    with pytest.raises(HomeInUse):
        other.lock()
    other.remove()
    assert (home.path / MARKER).exists() and (home.path / "Desktop").is_dir()


def test_a_save_copies_links_as_links_and_never_what_they_point_at(home, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    (home.path / "Documents" / "secret").symlink_to(outside / "secret.txt")
    (home.path / "elsewhere").symlink_to(outside)
    home.save("s1", {})
    saved = tmp_path / "snapshots" / "s1" / "home"
    assert os.readlink(saved / "Documents" / "secret") == str(outside / "secret.txt")
    assert os.readlink(saved / "elsewhere") == str(outside)
    assert not any(p.is_file() and not p.is_symlink() and "top secret" in p.read_text(errors="replace")
                   for p in saved.rglob("*"))


def test_a_restore_never_writes_through_a_link_planted_where_it_writes(home, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("theirs")
    (home.path / "Desktop" / "a.txt").write_text("ours")
    (home.path / "Documents" / "b.txt").write_text("ours too")
    home.save("s1", {})
    saved = tree(home.path)
    # A task's command replaces a folder and a file the restore will write with links out of the home.
    import shutil

    shutil.rmtree(home.path / "Desktop")
    (home.path / "Desktop").symlink_to(outside)
    (home.path / "Documents" / "b.txt").unlink()
    (home.path / "Documents" / "b.txt").symlink_to(outside / "keep.txt")
    home.restore("s1")
    assert tree(home.path) == saved
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"] and (outside / "keep.txt").read_text() == "theirs"
    assert (home.path / "Desktop").is_dir() and not (home.path / "Desktop").is_symlink()
