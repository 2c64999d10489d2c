"""Key names, keysyms and the US base layout: pure logic shared by every input backend.

Agents name keys the way pyautogui and xdotool users do ("enter", "ctrl+shift+t",
"Page_Up", "a"). Everything resolves to X keysyms, the one vocabulary XKB, X11 and our
keymap generator share; a backend then finds (or makes) a key that produces it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "Key",
    "UnknownKey",
    "BASE_LAYOUT",
    "MODIFIER_KEYSYMS",
    "keysym_for_char",
    "char_for_keysym",
    "parse_key",
    "parse_combo",
    "keysym_name",
]


class UnknownKey(ValueError):
    """A key name that maps to no keysym."""


# Keysyms by their X name, for the keys agents press by name.
_NAMED: dict[str, int] = {
    "BackSpace": 0xFF08, "Tab": 0xFF09, "Return": 0xFF0D, "Pause": 0xFF13,
    "Scroll_Lock": 0xFF14, "Sys_Req": 0xFF15, "Escape": 0xFF1B, "Delete": 0xFFFF,
    "Home": 0xFF50, "Left": 0xFF51, "Up": 0xFF52, "Right": 0xFF53, "Down": 0xFF54,
    "Page_Up": 0xFF55, "Page_Down": 0xFF56, "End": 0xFF57, "Print": 0xFF61,
    "Insert": 0xFF63, "Menu": 0xFF67, "Num_Lock": 0xFF7F, "KP_Enter": 0xFF8D,
    "Shift_L": 0xFFE1, "Shift_R": 0xFFE2, "Control_L": 0xFFE3, "Control_R": 0xFFE4,
    "Caps_Lock": 0xFFE5, "Meta_L": 0xFFE7, "Meta_R": 0xFFE8, "Alt_L": 0xFFE9,
    "Alt_R": 0xFFEA, "Super_L": 0xFFEB, "Super_R": 0xFFEC, "space": 0x0020,
    "KP_Multiply": 0xFFAA,
}
_NAMED.update({f"F{n}": 0xFFBE + n - 1 for n in range(1, 25)})

# What people type -> X keysym name. Lower-case keys; lookups are case-insensitive.
_ALIASES: dict[str, str] = {
    "enter": "Return", "return": "Return", "ret": "Return", "kp_enter": "KP_Enter",
    "tab": "Tab", "esc": "Escape", "escape": "Escape",
    "backspace": "BackSpace", "bksp": "BackSpace",
    "delete": "Delete", "del": "Delete", "insert": "Insert", "ins": "Insert",
    "home": "Home", "end": "End",
    "pageup": "Page_Up", "page_up": "Page_Up", "pgup": "Page_Up", "prior": "Page_Up",
    "pagedown": "Page_Down", "page_down": "Page_Down", "pgdn": "Page_Down", "next": "Page_Down",
    "up": "Up", "down": "Down", "left": "Left", "right": "Right",
    "arrowup": "Up", "arrowdown": "Down", "arrowleft": "Left", "arrowright": "Right",
    "space": "space", "spacebar": "space",
    "shift": "Shift_L", "shiftleft": "Shift_L", "shiftright": "Shift_R",
    "shift_l": "Shift_L", "shift_r": "Shift_R",
    "ctrl": "Control_L", "control": "Control_L", "ctrlleft": "Control_L", "ctrlright": "Control_R",
    "ctrl_l": "Control_L", "ctrl_r": "Control_R", "control_l": "Control_L", "control_r": "Control_R",
    "alt": "Alt_L", "altleft": "Alt_L", "altright": "Alt_R", "alt_l": "Alt_L", "alt_r": "Alt_R",
    "option": "Alt_L", "meta": "Meta_L", "meta_l": "Meta_L", "meta_r": "Meta_R",
    "super": "Super_L", "win": "Super_L", "winleft": "Super_L", "winright": "Super_R",
    "cmd": "Super_L", "command": "Super_L", "super_l": "Super_L", "super_r": "Super_R",
    "capslock": "Caps_Lock", "caps_lock": "Caps_Lock", "numlock": "Num_Lock", "num_lock": "Num_Lock",
    "scrolllock": "Scroll_Lock", "scroll_lock": "Scroll_Lock",
    "printscreen": "Print", "print": "Print", "prtsc": "Print", "prntscrn": "Print", "prtscr": "Print",
    "pause": "Pause", "menu": "Menu", "apps": "Menu",
}
_ALIASES.update({f"f{n}": f"F{n}" for n in range(1, 25)})
_LOWER_NAMED = {name.lower(): name for name in _NAMED}

MODIFIER_KEYSYMS: dict[int, str] = {
    0xFFE1: "shift", 0xFFE2: "shift",
    0xFFE3: "ctrl", 0xFFE4: "ctrl",
    0xFFE9: "alt", 0xFFEA: "alt", 0xFFE7: "alt", 0xFFE8: "alt",
    0xFFEB: "super", 0xFFEC: "super",
}

# Punctuation names xdotool users write.
_PUNCT_NAMES = {
    "exclam": "!", "at": "@", "numbersign": "#", "dollar": "$", "percent": "%",
    "asciicircum": "^", "ampersand": "&", "asterisk": "*", "parenleft": "(",
    "parenright": ")", "minus": "-", "underscore": "_", "equal": "=", "plus": "+",
    "bracketleft": "[", "bracketright": "]", "braceleft": "{", "braceright": "}",
    "semicolon": ";", "colon": ":", "apostrophe": "'", "quotedbl": '"', "grave": "`",
    "asciitilde": "~", "backslash": "\\", "bar": "|", "comma": ",", "period": ".",
    "less": "<", "greater": ">", "slash": "/", "question": "?",
}


def keysym_for_char(ch: str) -> int:
    """The X keysym that produces ``ch``: Latin-1 codepoints are their own keysym,
    everything else is 0x01000000 + codepoint (the Unicode keysym range)."""
    cp = ord(ch)
    if ch == "\n" or ch == "\r":
        return _NAMED["Return"]
    if ch == "\t":
        return _NAMED["Tab"]
    if ch == "\b":
        return _NAMED["BackSpace"]
    if 0x20 <= cp <= 0x7E or 0xA0 <= cp <= 0xFF:
        return cp
    if cp < 0x20 or 0x7F <= cp < 0xA0:
        raise UnknownKey(f"control character U+{cp:04X} cannot be typed")
    return 0x01000000 + cp


def char_for_keysym(keysym: int) -> str | None:
    if 0x20 <= keysym <= 0x7E or 0xA0 <= keysym <= 0xFF:
        return chr(keysym)
    if 0x01000100 <= keysym <= 0x0110FFFF:
        return chr(keysym - 0x01000000)
    return None


def keysym_name(keysym: int) -> str:
    """A name XKB's keymap parser accepts for ``keysym``: the X name of a named key,
    ``U<hex>`` for a character (XKB maps U0061 back to the Latin-1 keysym 0x61)."""
    for name, value in _NAMED.items():
        if value == keysym and name != "space":
            return name
    ch = char_for_keysym(keysym)
    if ch is not None:
        return f"U{ord(ch):04X}"
    return f"0x{keysym:08x}"


@dataclass(frozen=True, slots=True)
class Key:
    keysym: int
    name: str

    @property
    def modifier(self) -> str | None:
        return MODIFIER_KEYSYMS.get(self.keysym)


def parse_key(name: str) -> Key:
    """One key by name: an alias ("enter"), an X keysym name ("Page_Up"), a single
    character ("a", "<", "é") or a Unicode escape ("U+2713")."""
    if not isinstance(name, str) or name == "":
        raise UnknownKey("empty key name")
    if len(name) == 1:
        return Key(keysym_for_char(name), name)
    lowered = name.lower()
    if lowered in _ALIASES:
        canonical = _ALIASES[lowered]
        return Key(_NAMED[canonical], canonical)
    if lowered in _LOWER_NAMED:
        canonical = _LOWER_NAMED[lowered]
        return Key(_NAMED[canonical], canonical)
    if lowered in _PUNCT_NAMES:
        ch = _PUNCT_NAMES[lowered]
        return Key(keysym_for_char(ch), ch)
    if lowered.startswith("u+") and len(name) > 2:
        try:
            ch = chr(int(name[2:], 16))
        except (ValueError, OverflowError) as exc:
            raise UnknownKey(f"bad Unicode key {name!r}") from exc
        return Key(keysym_for_char(ch), ch)
    raise UnknownKey(f"unknown key name {name!r}")


def parse_combo(combo: str) -> list[Key]:
    """"ctrl+shift+t" -> [ctrl, shift, t]. A lone "+" is the plus key; "ctrl++" is
    ctrl and plus. Pressed in order, released in reverse."""
    if not isinstance(combo, str) or combo.strip() == "":
        raise UnknownKey("empty key combination")
    combo = combo.strip()
    if combo == "+":
        return [parse_key("+")]
    parts: list[str] = []
    for token in combo.split("+"):
        if token == "" and parts and parts[-1] != "+":
            parts.append("+")
        elif token != "":
            parts.append(token.strip())
    if not parts:
        raise UnknownKey(f"empty key combination {combo!r}")
    return [parse_key(p) for p in parts]


# The US layout as evdev keycodes: (code, unshifted keysym, shifted keysym or None).
# Backends place these first, so shortcuts such as ctrl+a reach a key whose code and
# keysym match what applications expect from a real keyboard.
def _row(start: int, unshifted: str, shifted: str) -> list[tuple[int, int, int | None]]:
    return [(start + i, ord(a), ord(b)) for i, (a, b) in enumerate(zip(unshifted, shifted))]


BASE_LAYOUT: list[tuple[int, int, int | None]] = [
    (1, _NAMED["Escape"], None),
    *_row(2, "1234567890-=", "!@#$%^&*()_+"),
    (14, _NAMED["BackSpace"], None),
    (15, _NAMED["Tab"], None),
    *_row(16, "qwertyuiop[]", "QWERTYUIOP{}"),
    (28, _NAMED["Return"], None),
    (29, _NAMED["Control_L"], None),
    *_row(30, "asdfghjkl;'`", 'ASDFGHJKL:"~'),
    (42, _NAMED["Shift_L"], None),
    *_row(43, "\\zxcvbnm,./", "|ZXCVBNM<>?"),
    (54, _NAMED["Shift_R"], None),
    (55, _NAMED["KP_Multiply"], None),
    (56, _NAMED["Alt_L"], None),
    (57, _NAMED["space"], None),
    (58, _NAMED["Caps_Lock"], None),
    *[(59 + i, _NAMED[f"F{i + 1}"], None) for i in range(10)],
    (69, _NAMED["Num_Lock"], None),
    (70, _NAMED["Scroll_Lock"], None),
    (87, _NAMED["F11"], None),
    (88, _NAMED["F12"], None),
    (96, _NAMED["KP_Enter"], None),
    (97, _NAMED["Control_R"], None),
    (99, _NAMED["Print"], None),
    (100, _NAMED["Alt_R"], None),
    (102, _NAMED["Home"], None),
    (103, _NAMED["Up"], None),
    (104, _NAMED["Page_Up"], None),
    (105, _NAMED["Left"], None),
    (106, _NAMED["Right"], None),
    (107, _NAMED["End"], None),
    (108, _NAMED["Down"], None),
    (109, _NAMED["Page_Down"], None),
    (110, _NAMED["Insert"], None),
    (111, _NAMED["Delete"], None),
    (119, _NAMED["Pause"], None),
    (125, _NAMED["Super_L"], None),
    (126, _NAMED["Super_R"], None),
    (127, _NAMED["Menu"], None),
    *[(183 + i, _NAMED[f"F{13 + i}"], None) for i in range(12)],
]
