"""The XKB keymap desktopd's virtual keyboard uploads.

The US layout sits on its usual keycodes so that shortcuts and DOM ``code`` values look
like a real keyboard's. Characters no base key produces (é, 中, ✓) get a slot, a
keycode the US layout leaves unused, and the keymap is uploaded again before they are
typed. Slots are reused least recently used first, never while their key is held.

Which keycodes may be slots is a measured choice. Chromium derives a key's DOM ``code``
and, for non-ASCII characters, its virtual key from the keycode, so a slot on a media or
browser key (Back, Refresh, Sleep, volume) could trigger that action; slots therefore
use keypad and international keys only. Keycodes above 255 reached Chromium as spaces
or not at all (tried with evdev 0x300 and up), so slots stay below 256.
"""

from __future__ import annotations

from collections import OrderedDict

from ...keys import BASE_LAYOUT, keysym_name

__all__ = ["SlotKeymap", "MOD_MASKS", "KeymapFull"]

# Real modifier bits in a keymap built from the "complete" types and compat sections.
MOD_MASKS = {"shift": 1 << 0, "lock": 1 << 1, "ctrl": 1 << 2, "alt": 1 << 3, "numlock": 1 << 4, "super": 1 << 6}

_XKB_MIN, _XKB_MAX = 8, 255
# evdev codes: keypad 7..0 and operators (71-83), international keys (85-94), keypad
# slash (98), keypad = and ± (117, 118), keypad comma and the Hangul/Hanja/Yen keys
# (121-124). Left out after measuring: 84 (unassigned), 95 (keypad JP comma) and 101
# (linefeed): Chromium dropped keys on them. xkb keycode = evdev code + 8.
_SLOT_EVDEV = [*range(71, 84), *range(85, 95), 98, 117, 118, *range(121, 125)]
_MODIFIER_MAP = {
    "Shift": ("Shift_L", "Shift_R"),
    "Lock": ("Caps_Lock",),
    "Control": ("Control_L", "Control_R"),
    "Mod1": ("Alt_L", "Alt_R", "Meta_L", "Meta_R"),
    "Mod2": ("Num_Lock",),
    "Mod4": ("Super_L", "Super_R"),
}


class KeymapFull(Exception):
    """More distinct characters at once than there are free keycodes."""


class SlotKeymap:
    def __init__(self) -> None:
        # keysym -> (xkb keycode, needs shift)
        self._base: dict[int, tuple[int, bool]] = {}
        self._base_rows: list[tuple[int, int, int | None]] = []
        for evdev, lower, upper in BASE_LAYOUT:
            code = evdev + 8
            self._base_rows.append((code, lower, upper))
            self._base.setdefault(lower, (code, False))
            if upper is not None:
                self._base.setdefault(upper, (code, True))
        used = {code for code, _, _ in self._base_rows}
        self._free: list[int] = [e + 8 for e in _SLOT_EVDEV if e + 8 not in used]
        self._slots: OrderedDict[int, int] = OrderedDict()  # keysym -> keycode, LRU order
        self.serial = 0

    @property
    def capacity(self) -> int:
        return len(self._free)

    def needs_slot(self, keysym: int) -> bool:
        return keysym not in self._base

    def lookup(self, keysym: int) -> tuple[int, bool] | None:
        if keysym in self._base:
            return self._base[keysym]
        code = self._slots.get(keysym)
        if code is None:
            return None
        self._slots.move_to_end(keysym)
        return code, False

    def ensure(self, keysyms: set[int], pinned: set[int] = frozenset()) -> bool:
        """Give every keysym in ``keysyms`` a key; True when the keymap changed and must
        be uploaded again. ``pinned`` keycodes (held keys) are never reassigned."""
        missing = [k for k in keysyms if k not in self._base and k not in self._slots]
        if not missing:
            for k in keysyms:
                if k in self._slots:
                    self._slots.move_to_end(k)
            return False
        if len([k for k in keysyms if k not in self._base]) > self.capacity - len(pinned):
            raise KeymapFull(f"{len(missing)} new characters at once exceed {self.capacity} free keys")
        in_use = set(self._slots.values())
        spare = [c for c in self._free if c not in in_use]
        for keysym in missing:
            if spare:
                code = spare.pop(0)
            else:
                victim = next(k for k, c in self._slots.items() if k not in keysyms and c not in pinned)
                code = self._slots.pop(victim)
            self._slots[keysym] = code
        self.serial += 1
        return True

    def text(self) -> str:
        codes = sorted({code for code, _, _ in self._base_rows} | set(self._slots.values()))
        lines = ["xkb_keymap {", '  xkb_keycodes "deskbox" {', f"    minimum = {_XKB_MIN};", f"    maximum = {_XKB_MAX};"]
        lines += [f"    <K{code}> = {code};" for code in codes]
        lines += ["  };", '  xkb_types "deskbox" { include "complete" };']
        lines += ['  xkb_compatibility "deskbox" { include "complete" };', '  xkb_symbols "deskbox" {']
        by_name: dict[str, int] = {}
        for code, lower, upper in self._base_rows:
            syms = keysym_name(lower) if upper is None else f"{keysym_name(lower)}, {keysym_name(upper)}"
            lines.append(f"    key <K{code}> {{ [ {syms} ] }};")
            by_name.setdefault(keysym_name(lower), code)
        for keysym, code in self._slots.items():
            lines.append(f"    key <K{code}> {{ [ {keysym_name(keysym)} ] }};")
            by_name.setdefault(keysym_name(keysym), code)
        for mod, names in _MODIFIER_MAP.items():
            keys = [f"<K{by_name[n]}>" for n in names if n in by_name]
            if keys:
                lines.append(f"    modifier_map {mod} {{ {', '.join(keys)} }};")
        lines += ["  };", "};", ""]
        return "\n".join(lines)
