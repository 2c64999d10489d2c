"""The uinput input backend: its key mapping, and a clear refusal where the kernel has
no uinput (as on the machines deskbox is developed and tested on)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from deskbox.desktopd.backends.uinput import evdev_key_for
from deskbox.desktopd.keys import UnknownKey, keysym_for_char, parse_key
from tests.support import ROOT, free_port


def test_us_layout_characters_map_to_evdev_keys_with_shift():
    assert evdev_key_for(keysym_for_char("a")) == (30, False)
    assert evdev_key_for(keysym_for_char("A")) == (30, True)
    assert evdev_key_for(keysym_for_char("<")) == (51, True)
    assert evdev_key_for(parse_key("enter").keysym) == (28, False)
    assert evdev_key_for(parse_key("f12").keysym) == (88, False)
    with pytest.raises(UnknownKey):
        evdev_key_for(keysym_for_char("é"))


def test_desktopd_with_uinput_input_refuses_clearly_without_dev_uinput():
    assert not os.path.exists("/dev/uinput"), "this machine has uinput: extend this test to drive it"
    result = subprocess.run(
        [sys.executable, "-m", "deskbox.desktopd", "--input", "uinput", "--listen", f"127.0.0.1:{free_port()}"],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 1
    assert "/dev/uinput does not exist" in result.stderr
