"""Key names people use resolve to the right X keysyms."""

import pytest

from deskbox.desktopd.keys import UnknownKey, char_for_keysym, keysym_for_char, keysym_name, parse_combo, parse_key


@pytest.mark.parametrize(
    "name, keysym",
    [
        ("enter", 0xFF0D), ("Return", 0xFF0D), ("esc", 0xFF1B), ("pageup", 0xFF55), ("Page_Down", 0xFF56),
        ("ctrl", 0xFFE3), ("Control_R", 0xFFE4), ("super", 0xFFEB), ("win", 0xFFEB), ("f1", 0xFFBE),
        ("F12", 0xFFC9), ("space", 0x20), ("a", 0x61), ("A", 0x41), ("<", 0x3C), ("é", 0xE9),
        ("✓", 0x01002713), ("U+2713", 0x01002713), ("comma", 0x2C), ("arrowleft", 0xFF51),
    ],
)
def test_key_names(name, keysym):
    assert parse_key(name).keysym == keysym


def test_combos_split_on_plus_and_keep_a_literal_plus():
    assert [k.keysym for k in parse_combo("ctrl+shift+t")] == [0xFFE3, 0xFFE1, 0x74]
    assert [k.keysym for k in parse_combo("+")] == [0x2B]
    assert [k.keysym for k in parse_combo("ctrl++")] == [0xFFE3, 0x2B]
    assert parse_combo("shift+a")[0].modifier == "shift"


@pytest.mark.parametrize("bad", ["", "hyper", "ctrl+nokey", "U+zz"])
def test_unknown_keys_raise(bad):
    with pytest.raises(UnknownKey):
        parse_combo(bad)


def test_characters_and_keysyms_round_trip():
    for ch in "aZ~é€中😀":
        assert char_for_keysym(keysym_for_char(ch)) == ch
    assert keysym_for_char("\n") == 0xFF0D and keysym_for_char("\t") == 0xFF09
    with pytest.raises(UnknownKey):
        keysym_for_char("\x07")
    assert keysym_name(0xFF0D) == "Return" and keysym_name(0x61) == "U0061"
    assert keysym_name(0x0101F600) == "U1F600"
