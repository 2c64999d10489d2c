"""Which app opens which kind of file (``xdg-open``, OSWorld's ``/setup/open_file``), as
files of a fresh OSWorld-mode home: ``~/.config/mimeapps.list`` naming, for each type,
the first installed app of a preference list, and a desktop entry for the session's
browser (``deskbox-browser.desktop``, which opens files as tabs through the session's
``google-chrome``) for what no installed app handles.

Videos are the exception to "the first installed app": on OSWorld's VM (Ubuntu 22.04)
their default is GNOME's Videos (``org.gnome.Totem.desktop``), not VLC, and one task
("make VLC the default video player") is graded by the most common answer of
``xdg-mime query default video/...``: with VLC already the default, a do-nothing agent
passed it. The session has no Totem, so ``org.gnome.Totem.desktop`` is an entry named
Videos, as on the VM, that plays the file in the session's browser."""

from __future__ import annotations

from pathlib import Path

__all__ = ["BROWSER_ENTRY", "home_files"]

BROWSER_ENTRY = "deskbox-browser.desktop"
VIDEOS_ENTRY = "org.gnome.Totem.desktop"
APPLICATIONS = Path("/usr/share/applications")

# The video types Ubuntu's Videos declares (and OSWorld's getter asks about).
VIDEO_TYPES = tuple(f"video/{t}" for t in (
    "3gp", "3gpp", "3gpp2", "avi", "divx", "dv", "fli", "flv", "mp2t", "mp4", "mp4v-es", "mpeg", "mpeg-system",
    "msvideo", "ogg", "quicktime", "vnd.divx", "vnd.mpegurl", "vnd.rn-realvideo", "webm", "x-anim", "x-avi",
    "x-flc", "x-fli", "x-flv", "x-m4v", "x-matroska", "x-mpeg", "x-mpeg-system", "x-mpeg2", "x-ms-asf",
    "x-ms-asf-plugin", "x-ms-asx", "x-ms-wm", "x-ms-wmv", "x-ms-wmx", "x-ms-wvx", "x-msvideo", "x-nsv", "x-ogm",
    "x-ogm+ogg", "x-theora", "x-theora+ogg"))

# File type -> desktop entries, most wanted first.
PREFERENCES: dict[str, tuple[str, ...]] = {
    "text/plain": ("org.gnome.gedit.desktop", "org.gnome.TextEditor.desktop"),
    "text/csv": ("libreoffice-calc.desktop", "org.gnome.gedit.desktop"),
    "text/html": (),
    "application/pdf": (),
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ("libreoffice-writer.desktop",),
    "application/msword": ("libreoffice-writer.desktop",),
    "application/vnd.oasis.opendocument.text": ("libreoffice-writer.desktop",),
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ("libreoffice-calc.desktop",),
    "application/vnd.ms-excel": ("libreoffice-calc.desktop",),
    "application/vnd.oasis.opendocument.spreadsheet": ("libreoffice-calc.desktop",),
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ("libreoffice-impress.desktop",),
    "application/vnd.ms-powerpoint": ("libreoffice-impress.desktop",),
    "application/vnd.oasis.opendocument.presentation": ("libreoffice-impress.desktop",),
    "image/png": ("gimp.desktop",),
    "image/jpeg": ("gimp.desktop",),
    "image/gif": ("gimp.desktop",),
    "image/svg+xml": (),
    "audio/mpeg": ("vlc.desktop",),
    "x-scheme-handler/http": (),
    "x-scheme-handler/https": (),
}
# What the session's browser can show, when no app above is installed.
BROWSER_TYPES = frozenset({"text/plain", "text/csv", "text/html", "application/pdf", "image/png", "image/jpeg",
                           "image/gif", "image/svg+xml", "video/mp4", "video/webm", "audio/mpeg",
                           "x-scheme-handler/http", "x-scheme-handler/https"})


def _choice(mime: str, installed: set[str]) -> str | None:
    for entry in PREFERENCES[mime]:
        if entry in installed:
            return entry
    return BROWSER_ENTRY if mime in BROWSER_TYPES else None


def home_files(applications: Path = APPLICATIONS) -> dict[str, str]:
    """Relative path -> text, for ``Home.write_template``."""
    installed = {p.name for p in applications.glob("*.desktop")} if applications.is_dir() else set()
    defaults = {m: c for m in PREFERENCES if (c := _choice(m, installed)) is not None}
    defaults.update({m: VIDEOS_ENTRY for m in VIDEO_TYPES})
    browser = _entry("Google Chrome", "The session's browser", BROWSER_TYPES)
    videos = _entry("Videos", "Plays videos (in the session's browser)", VIDEO_TYPES)
    lines = ["[Default Applications]", *(f"{m}={c}" for m, c in defaults.items()), ""]
    return {f".local/share/applications/{BROWSER_ENTRY}": browser,
            f".local/share/applications/{VIDEOS_ENTRY}": videos, ".config/mimeapps.list": "\n".join(lines)}


def _entry(name: str, comment: str, types: frozenset[str] | tuple[str, ...]) -> str:
    return "\n".join(["[Desktop Entry]", "Type=Application", f"Name={name}", f"Comment={comment}",
                      "Exec=google-chrome %U", "NoDisplay=true", "MimeType=" + ";".join(sorted(types)) + ";", ""])
