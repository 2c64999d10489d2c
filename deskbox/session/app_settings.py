"""Settings files a fresh home gets, so that the apps of the apps image start ready for
work instead of with a first-run dialog in front of the window an agent wants, and, in
OSWorld mode, as OSWorld's VM has them.

- LibreOffice: no Tip of the Day, no "what's new" bar, Impress without its template
  picker (``registrymodifications.xcu``, the file LibreOffice writes its own settings
  to; unknown to an older or newer LibreOffice, an item is ignored).
- VLC: no privacy question at first start (``vlcrc``) and, in OSWorld mode, its HTTP
  interface on (OSWorld's VLC graders read ``/requests/status.xml`` with the password
  ``password``) on ``vlc_port``, bound where the session's services listen.
- Chrome, in OSWorld mode: the GTK theme (``extensions.theme.system_theme`` 1), which
  Chromium takes by default on GNOME and not on Sway (there its default is the classic
  theme, 0). OSWorld's getter of the appearance mode reads a classic theme as "light",
  so a task that sets dark mode scored for an agent that did nothing.

Written whether or not the apps are installed: a file an absent app never reads costs
nothing, and the home stays the same on every machine."""

from __future__ import annotations

import json

__all__ = ["VLC_PASSWORD", "CHROME_GTK_THEME", "home_files", "chrome_files"]

# OSWorld's VM's VLC HTTP password, which its graders send.
VLC_PASSWORD = "password"

_LO_ITEMS = (
    ("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay", "boolean", "false"),
    ("/org.openoffice.Office.Common/Misc", "FirstRun", "boolean", "false"),
    ("/org.openoffice.Setup/Product", "ooSetupLastVersion", "string", "99.0"),
    ("/org.openoffice.Office.Impress/Misc", "StartWithTemplate", "boolean", "false"),
)


def _libreoffice() -> str:
    items = "\n".join(
        f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop></item>'
        for path, name, _type, value in _LO_ITEMS)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
            'xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
            f"{items}\n</oor:items>\n")


def _vlcrc(http: tuple[str, int] | None) -> str:
    lines = ["[qt]", "qt-privacy-ask=0", "", "[core]", "metadata-network-access=0"]
    if http is not None:
        host, port = http
        lines += ["extraintf=http", f"http-host={host}", f"http-port={port}", "", "[lua]",
                  f"http-password={VLC_PASSWORD}"]
    return "\n".join(lines) + "\n"


# Chromium's ``ui::SystemTheme``: 0 classic, 1 GTK, 2 Qt. Measured in the apps image
# (Chromium 156): a new profile under XDG_CURRENT_DESKTOP=ubuntu:GNOME has 1, under sway 0.
CHROME_GTK_THEME = 1


def chrome_files(profile: str) -> dict[str, str]:
    """The start of OSWorld mode's browser profile, ``profile`` relative to the home:
    the one preference in which a new profile on Ubuntu's GNOME differs from one on Sway
    that a getter reads. Chromium adds its own to the file at first start."""
    preferences = {"extensions": {"theme": {"system_theme": CHROME_GTK_THEME}}}
    return {f"{profile}/Default/Preferences": json.dumps(preferences)}


def home_files(*, vlc_http: tuple[str, int] | None = None) -> dict[str, str]:
    """Relative path -> text, for ``Home.write_template``. ``vlc_http``: (host, port)
    of VLC's HTTP interface, or None for none."""
    return {
        ".config/libreoffice/4/user/registrymodifications.xcu": _libreoffice(),
        ".config/vlc/vlcrc": _vlcrc(vlc_http),
    }
