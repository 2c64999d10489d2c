"""The session's Chromium keeps its sandbox (common.chromium.sandbox_refused): started by
deskbox up as root (as the tests start it), the browser runs as the session user with its
sandbox on, and no page shows Chromium's "unsupported command-line flag" bar."""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path

from deskbox.common.chromium import chromium_argv, sandbox_refused
from deskbox.session.processes import descendants, process_table
from tests.support import http, wait_until


def test_the_session_s_browser_runs_its_sandbox_and_shows_no_flag_warning(single, pages):
    assert os.geteuid() == 0 and sandbox_refused() is None  # (the case: deskbox up as root, a kernel that allows it)
    browser = single.chromium_pid()
    assert b"--no-sandbox" not in Path(f"/proc/{browser}/cmdline").read_bytes()
    single.open_page(pages.url("input.html"))
    own = os.readlink(f"/proc/{browser}/ns/pid")

    def sandboxed_renderers() -> list[int]:
        return [p for p in descendants(browser, process_table())
                if b"--type=renderer" in Path(f"/proc/{p}/cmdline").read_bytes()
                and os.readlink(f"/proc/{p}/ns/pid") != own]

    wait_until(sandboxed_renderers, 10, what="a renderer in a pid namespace of its own")
    query = urllib.parse.urlencode({"selector": '[name*="command-line flag"]', "mode": "agent-turn"})
    assert http("GET", single.scene + "/api/v1/find?" + query).json()["count"] == 0


def test_without_the_sandbox_the_flag_warning_is_kept_off_the_pages():
    argv = chromium_argv("chromium", cdp_port=9222, user_data_dir="/tmp/x", wayland=True, sandbox=False)
    assert "--no-sandbox" in argv and "--test-type" in argv
    assert "--no-sandbox" not in chromium_argv("chromium", cdp_port=9222, user_data_dir="/tmp/x", wayland=True,
                                               sandbox=True)
