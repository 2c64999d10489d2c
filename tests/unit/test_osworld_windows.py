"""Windows by name as OSWorld's server finds them (wmctrl's rules), with the session's
Chromium answering to Google Chrome."""

from __future__ import annotations

from deskbox.osworld.chrome import parse_args
from deskbox.osworld.windows import chrome_title, find

CHROMIUM = {"id": "w1", "app_id": "chromium", "title": "Example Domain - Chromium"}
CALC = {"id": "w2", "app_id": "libreoffice-calc", "title": "report.xlsx - LibreOffice Calc"}
TERMINAL = {"id": "w3", "app_id": "org.gnome.Terminal", "title": "user@host: ~"}
WINDOWS = [CHROMIUM, CALC, TERMINAL]


def test_a_name_is_any_part_of_a_title_in_any_case():
    assert find(WINDOWS, "report.xlsx") is CALC
    assert find(WINDOWS, "libreoffice calc") is CALC
    assert find(WINDOWS, "nothing like it") is None


def test_strict_is_the_whole_title_case_and_all():
    assert find(WINDOWS, "report.xlsx - LibreOffice Calc", strict=True) is CALC
    assert find(WINDOWS, "report.xlsx - libreoffice calc", strict=True) is None
    assert find(WINDOWS, "report.xlsx", strict=True) is None


def test_by_class_looks_at_the_app_id():
    assert find(WINDOWS, "org.gnome.terminal", by_class=True) is TERMINAL
    assert find(WINDOWS, "report", by_class=True) is None


def test_chromium_answers_to_google_chrome():
    assert find(WINDOWS, "Google Chrome") is CHROMIUM
    assert find(WINDOWS, "Example Domain - Google Chrome", strict=True) is CHROMIUM
    assert find(WINDOWS, "google-chrome", by_class=True) is CHROMIUM
    assert find(WINDOWS, "Chromium") is CHROMIUM
    assert chrome_title("Chromium") == "Google Chrome"
    assert chrome_title("") == "Google Chrome"


def test_google_chrome_takes_local_files_as_file_urls(tmp_path):
    page = tmp_path / "notes.txt"
    page.write_text("x")
    parsed = parse_args(["--remote-debugging-port=1337", str(page), "https://example.org", "--new-window"])
    assert parsed.port == 1337
    assert parsed.urls == [page.as_uri(), "https://example.org"]


def test_by_class_matches_x11s_res_name_dot_res_class_for_xwayland_and_wayland_windows():
    xwayland = {"app_id": "thunderbird", "wm_class": ["Mail", "thunderbird"], "title": "Inbox"}
    wayland_calc = {"app_id": "libreoffice-calc", "wm_class": None, "title": "a.xlsx - LibreOffice Calc"}
    terminal = {"app_id": "org.gnome.Terminal", "wm_class": None, "title": "user@host: ~"}
    windows = [xwayland, wayland_calc, terminal]
    assert find(windows, "Mail.thunderbird", by_class=True) is xwayland
    assert find(windows, "libreoffice.libreoffice-calc", by_class=True) is wayland_calc
    assert find(windows, "gnome-terminal-server.Gnome-terminal", by_class=True) is terminal
    assert find(windows, "Gnome-terminal", by_class=True) is terminal  # (wmctrl -x: a part of it)
    assert find(windows, "org.gnome.Terminal", by_class=True, strict=True) is terminal  # the app id too
    assert find(windows, "Mail.thunderbird", by_class=False) is None  # not a title
