"""GNOME's settings as OSWorld's tasks read and write them (``gsettings get/set``), with
the values a GNOME session on OSWorld's VM (Ubuntu 22.04) starts with.

GSettings keeps them in dconf. Every program reads the values set for the user from one
file of the home, ``~/.config/dconf/user``; writes go to dconf-service, which rewrites
that file, and which the session's D-Bus bus starts at the first one (the package puts
its service file where every session bus looks). A key the file lacks has its schema's default.
The schemas are Debian's (gsettings-desktop-schemas, gnome-shell-common,
gnome-settings-daemon-common). Where Ubuntu's value differs from Debian's default, an
OSWorld-mode home starts with it in that file (``home_files``, compiled by ``dconf
compile``): each session's settings are its own home's, nothing on the host is changed,
and a reset, which puts the home back, puts them back too.

dconf-service keeps the file's values in memory once it has read them. It runs below the
session's bus, which hosts apps, so a reset ends it with the other apps and the next write
starts one that reads the restored file. Programs that outlive a reset (deskbox's own)
are sent back to the file by their change flags (``flag_changed``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..common.logging import get_logger
from .errors import SessionError

__all__ = ["DATABASE", "FAVORITE_APPS", "start_values", "home_files", "background_commands", "flag_changed"]

log = get_logger("deskbox.session")

# The user's database, relative to the home (dconf's path with XDG_CONFIG_HOME unset).
DATABASE = ".config/dconf/user"
# Ubuntu 22.04's dock (firefox, thunderbird, files, rhythmbox, writer, software, help) with
# this session's apps in its places: OSWorld's VM's browser is Chrome, which its tasks
# name google-chrome.desktop; VLC plays media here; Ubuntu Software and Help are not
# installed. Nothing shows it (Sway has no dock): it is only read and written.
FAVORITE_APPS = ("google-chrome.desktop", "thunderbird.desktop", "org.gnome.Nautilus.desktop", "vlc.desktop",
                 "libreoffice-writer.desktop")
BACKGROUND_SCHEMA = "org.gnome.desktop.background"
BACKGROUND_KEYS = ("picture-uri", "picture-uri-dark")


def _string(text: str) -> str:
    """``text`` as a GVariant string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def start_values(background: Path) -> dict[str, dict[str, str]]:
    """dconf folder -> key -> value (GVariant text): Ubuntu's GNOME where Debian's schemas
    default to something else. The other keys OSWorld's tasks use have the same default in
    both (docs/osworld.md lists them); the background is the picture the session shows
    at start."""
    uri = _string(background.as_uri())
    return {
        "org/gnome/shell": {"favorite-apps": "[" + ", ".join(_string(a) for a in FAVORITE_APPS) + "]"},
        "org/gnome/desktop/interface": {"gtk-theme": _string("Yaru")},
        "org/gnome/desktop/background": dict.fromkeys(BACKGROUND_KEYS, uri),
    }


def home_files(background: Path) -> dict[str, bytes]:
    """Relative path -> bytes, for ``Home.write_template``: the user's database holding
    ``start_values``; nothing without dconf's command line (dconf-cli), and the
    session then has Debian's defaults."""
    dconf = shutil.which("dconf")
    if dconf is None:
        log.warning("dconf is not installed (dconf-cli): GNOME's settings keep Debian's defaults, not Ubuntu's")
        return {}
    lines = []
    for folder, keys in start_values(background).items():
        lines += [f"[{folder}]", *(f"{key}={value}" for key, value in keys.items()), ""]
    with tempfile.TemporaryDirectory(prefix="deskbox-dconf-") as tmp:
        keyfiles = Path(tmp) / "keyfiles"
        keyfiles.mkdir()
        (keyfiles / "ubuntu").write_text("\n".join(lines))
        compiled = Path(tmp) / "user"
        try:
            subprocess.run([dconf, "compile", str(compiled), str(keyfiles)], check=True, capture_output=True,
                           text=True, timeout=30)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            raise SessionError(f"dconf compile failed: {(exc.stderr or '').strip() or exc}") from None
        return {DATABASE: compiled.read_bytes()}


def background_commands(image: Path) -> list[list[str]]:
    """What names ``image`` as GNOME's background (as GNOME's Settings does, for the
    light and the dark style alike)."""
    return [["gsettings", "set", BACKGROUND_SCHEMA, key, _string(image.as_uri())] for key in BACKGROUND_KEYS]


def flag_changed(runtime: Path) -> None:
    """Send every program that has read the user's settings back to the database (put
    back under them by a reset), as dconf-service does after a write: each reader maps a
    one-byte flag file under ``<runtime>/dconf``, and a 1 there, with the file gone,
    says "read again"."""
    folder = runtime / "dconf"
    if not folder.is_dir():
        return
    for flag in folder.iterdir():
        try:
            fd = os.open(flag, os.O_WRONLY)
        except OSError:
            continue
        try:
            flag.unlink()
            os.pwrite(fd, b"\1", 0)
        except OSError as exc:
            log.warning("a dconf change flag was not raised", path=str(flag), error=str(exc))
        finally:
            os.close(fd)
