"""The virtual keyboard's keymap: base layout, slots for other characters, LRU reuse."""

import pytest

from deskbox.desktopd.backends.base import KeyEvent
from deskbox.desktopd.backends.wayland import split_astral
from deskbox.desktopd.backends.wayland.keymap import KeymapFull, SlotKeymap
from deskbox.desktopd.keys import keysym_for_char


def test_base_keys_need_no_upload_and_know_their_shift_level():
    km = SlotKeymap()
    assert km.ensure({0x61, 0x41, 0xFF0D}) is False
    a, a_shift = km.lookup(0x61), km.lookup(0x41)
    assert a[0] == a_shift[0] == 30 + 8 and a[1] is False and a_shift[1] is True


def test_new_characters_get_slots_and_change_the_keymap():
    km = SlotKeymap()
    e_acute = keysym_for_char("é")
    assert km.ensure({e_acute}) is True
    code, shift = km.lookup(e_acute)
    assert shift is False and f"<K{code}> = {code};" in km.text() and "U00E9" in km.text()
    assert km.ensure({e_acute}) is False


def test_slots_are_reused_least_recently_used_first_but_never_while_held():
    km = SlotKeymap()
    chars = [0x01004E00 + i for i in range(km.capacity)]
    km.ensure(set(chars))
    held = km.lookup(chars[0])[0]
    km.ensure({0x01005000}, pinned={held})
    assert km.lookup(chars[0]) is not None  # pinned, kept
    assert km.lookup(chars[1]) is None  # least recently used, reassigned


def test_too_many_characters_at_once_is_refused():
    km = SlotKeymap()
    with pytest.raises(KeymapFull):
        km.ensure({0x01004E00 + i for i in range(km.capacity + 1)})


def test_keymap_text_maps_modifiers():
    text = SlotKeymap().text()
    assert "modifier_map Shift { <K50>, <K62> };" in text
    assert "modifier_map Control { <K37>, <K105> };" in text
    assert text.startswith("xkb_keymap {") and 'include "complete"' in text


def test_characters_beyond_the_bmp_become_surrogate_pairs():
    emoji = keysym_for_char("😀")
    events = split_astral([KeyEvent(emoji, True), KeyEvent(emoji, False), KeyEvent(0x61, True)])
    assert [(e.keysym - 0x01000000, e.down) for e in events[:4]] == [
        (0xD83D, True), (0xD83D, False), (0xDE00, True), (0xDE00, False)]
    assert events[4] == KeyEvent(0x61, True)
