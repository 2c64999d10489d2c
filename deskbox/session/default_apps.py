"""Which app opens which kind of file (``xdg-open``, OSWorld's ``/setup/open_file``), as
files of a fresh OSWorld-mode home: ``~/.config/mimeapps.list`` naming, for each type,
the first installed app of a preference list, and a desktop entry for the session's
browser (``deskbox-browser.desktop``, which opens files as tabs through the session's
``google-chrome``) for what no installed app handles."""

from __future__ import annotations

from pathlib import Path

__all__ = ["BROWSER_ENTRY", "home_files"]

BROWSER_ENTRY = "deskbox-browser.desktop"
APPLICATIONS = Path("/usr/share/applications")

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
    "video/mp4": ("vlc.desktop",),
    "video/webm": ("vlc.desktop",),
    "video/x-matroska": ("vlc.desktop",),
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
    browser = "\n".join([
        "[Desktop Entry]", "Type=Application", "Name=Google Chrome", "Comment=The session's browser",
        "Exec=google-chrome %U", "NoDisplay=true",
        "MimeType=" + ";".join(sorted(BROWSER_TYPES)) + ";", "",
    ])
    lines = ["[Default Applications]", *(f"{m}={c}" for m, c in defaults.items()), ""]
    return {f".local/share/applications/{BROWSER_ENTRY}": browser, ".config/mimeapps.list": "\n".join(lines)}
