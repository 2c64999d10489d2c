"""The session's time zone (deskbox.common.timezone) and the ``timedatectl`` a session
answers with (deskbox.osworld.timedatectl), on links made here in the real zone
database; the status graded by OSWorld's own metric for its "set my time zone to UTC+0"
task."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deskbox.common import timezone as tz
from deskbox.osworld import timedatectl
from deskbox.run import graders


@pytest.fixture
def owned(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """As deskbox's images have it: /etc/localtime -> the session's link -> a zone."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "var").mkdir()
    inner = tmp_path / "var" / "localtime"
    inner.symlink_to(tz.ZONEINFO / "Europe" / "Berlin")
    outer = tmp_path / "etc" / "localtime"
    outer.symlink_to(inner)
    monkeypatch.setattr(tz, "LOCALTIME", outer)
    return outer, inner


def test_the_zone_is_read_through_both_links_and_set_through_the_sessions_own(owned):
    outer, inner = owned
    assert tz.zone_name() == "Europe/Berlin"
    assert tz.session_link() == inner
    tz.point(inner, "Etc/UTC")
    assert tz.zone_name() == "Etc/UTC"
    assert os.readlink(outer) == str(inner)  # the system's link is left as it is
    with pytest.raises(tz.TimezoneError, match="not a time zone"):
        tz.point(inner, "Mars/Olympus_Mons")
    assert tz.zone_name() == "Etc/UTC"
    assert not [p for p in inner.parent.iterdir() if p.name != "localtime"]  # no temporary link left


def test_a_machines_own_localtime_is_not_the_sessions(tmp_path, monkeypatch):
    direct = tmp_path / "localtime"
    direct.symlink_to(tz.ZONEINFO / "Asia" / "Tokyo")
    monkeypatch.setattr(tz, "LOCALTIME", direct)
    assert tz.zone_name() == "Asia/Tokyo"
    assert tz.session_link() is None
    assert tz.known("Asia/Tokyo") and tz.known("UTC") and not tz.known("Asia/Atlantis")


def test_osworlds_metric_reads_the_status_as_ubuntus_and_a_set_zone_changes_it(owned, monkeypatch, capsys):
    is_utc_0 = graders.metric("is_utc_0")
    assert is_utc_0(timedatectl.status()) == 0
    lines = timedatectl.status().splitlines()
    assert [line.split(":")[0].strip() for line in lines] == [
        "Local time", "Universal time", "RTC time", "Time zone", "System clock synchronized", "NTP service",
        "RTC in local TZ"]
    assert lines[3] == "                Time zone: Europe/Berlin (CET, +0100)" or \
        lines[3] == "                Time zone: Europe/Berlin (CEST, +0200)", lines[3]

    # As on Ubuntu, an administrator sets it (sudo); a plain user is refused.
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert timedatectl.main(["set-timezone", "Etc/UTC"]) == 1
    assert "Access denied" in capsys.readouterr().err
    assert tz.zone_name() == "Europe/Berlin"
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert timedatectl.main(["set-timezone", "Africa/Abidjan"]) == 0
    assert is_utc_0(timedatectl.status()) == 1  # UTC+0 by another name counts, as OSWorld's metric has it
    assert "Timezone=Africa/Abidjan\n" in timedatectl.show()
    assert timedatectl.main(["set-timezone", "Nowhere/Else"]) == 1
    assert "Invalid or not installed time zone" in capsys.readouterr().err
    assert timedatectl.main(["set-ntp", "true"]) == 1
    assert timedatectl.main(["list-timezones"]) == 0
    assert "Europe/Berlin\n" in capsys.readouterr().out
