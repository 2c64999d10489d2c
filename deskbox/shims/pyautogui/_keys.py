"""pyautogui's key names, and the names desktopd knows them by.

desktopd already takes most pyautogui names ("enter", "pgdn", "winleft"...). What this
module adds: the few names it spells differently, the characters that cannot stand
alone in one of desktopd's "ctrl+a" combinations (" ", "+", newline, tab), and a clear
refusal for the keys no deskbox keymap has (media, browser and IME keys)."""

from __future__ import annotations

from ._errors import UnsupportedKey

__all__ = ["KEYBOARD_KEYS", "KEY_NAMES", "UNSUPPORTED", "desktopd_key", "is_shift_character"]


# pyautogui's documented KEYBOARD_KEYS, in its order.
KEYBOARD_KEYS = [
    "\t", "\n", "\r", " ", "!", '"', "#", "$", "%", "&", "'", "(", ")", "*", "+", ",", "-", ".", "/",
    "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", ":", ";", "<", "=", ">", "?", "@",
    "[", "\\", "]", "^", "_", "`",
    "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t",
    "u", "v", "w", "x", "y", "z", "{", "|", "}", "~",
    "accept", "add", "alt", "altleft", "altright", "apps", "backspace",
    "browserback", "browserfavorites", "browserforward", "browserhome", "browserrefresh", "browsersearch",
    "browserstop", "capslock", "clear", "convert", "ctrl", "ctrlleft", "ctrlright", "decimal", "del", "delete",
    "divide", "down", "end", "enter", "esc", "escape", "execute",
    "f1", "f10", "f11", "f12", "f13", "f14", "f15", "f16", "f17", "f18", "f19", "f2", "f20", "f21", "f22",
    "f23", "f24", "f3", "f4", "f5", "f6", "f7", "f8", "f9",
    "final", "fn", "hanguel", "hangul", "hanja", "help", "home", "insert", "junja", "kana", "kanji",
    "launchapp1", "launchapp2", "launchmail", "launchmediaselect", "left", "modechange", "multiply",
    "nexttrack", "nonconvert", "num0", "num1", "num2", "num3", "num4", "num5", "num6", "num7", "num8", "num9",
    "numlock", "pagedown", "pageup", "pause", "pgdn", "pgup", "playpause", "prevtrack", "print",
    "printscreen", "prntscrn", "prtsc", "prtscr", "return", "right", "scrolllock", "select", "separator",
    "shift", "shiftleft", "shiftright", "sleep", "space", "stop", "subtract", "tab", "up", "volumedown",
    "volumemute", "volumeup", "win", "winleft", "winright", "yen", "command", "option", "optionleft",
    "optionright",
]
KEY_NAMES = KEYBOARD_KEYS

# pyautogui name -> desktopd name, where they differ. Keypad digits and operators are
# typed by the keys that produce the same character: deskbox's keymaps have no keypad
# block apart from "*" and Enter, and an application receives the same text.
_RENAMED = {
    "optionleft": "alt_l", "optionright": "alt_r",
    "add": "plus", "subtract": "minus", "divide": "slash", "decimal": "period",
    "multiply": "KP_Multiply",
    **{f"num{d}": str(d) for d in range(10)},
}

# Characters desktopd's combination parser would read as separators or blanks.
_CHAR_NAMES = {" ": "space", "+": "plus", "\n": "Return", "\r": "Return", "\t": "Tab"}

# Keys of pyautogui's list that no deskbox keymap has: refused, never dropped.
UNSUPPORTED = frozenset({
    "accept", "browserback", "browserfavorites", "browserforward", "browserhome", "browserrefresh",
    "browsersearch", "browserstop", "clear", "convert", "execute", "final", "fn", "hanguel", "hangul",
    "hanja", "help", "junja", "kana", "kanji", "launchapp1", "launchapp2", "launchmail",
    "launchmediaselect", "modechange", "nexttrack", "nonconvert", "playpause", "prevtrack", "select",
    "separator", "sleep", "stop", "volumedown", "volumemute", "volumeup", "yen",
})

_SHIFTED = set('~!@#$%^&*()_+{}|:"<>?ABCDEFGHIJKLMNOPQRSTUVWXYZ')


def desktopd_key(name: object) -> str:
    """The name desktopd presses for pyautogui's key ``name``. Names of more than one
    character are case-insensitive, as in pyautogui; a single character is that
    character (``"A"`` is a capital A)."""
    if not isinstance(name, str) or name == "":
        raise UnsupportedKey(f"a key is a non-empty string, not {name!r}")
    if len(name) == 1:
        return _CHAR_NAMES.get(name, name)
    lowered = name.lower()
    if lowered in UNSUPPORTED:
        raise UnsupportedKey(f"deskbox has no {name!r} key: its keyboards have no media, browser or IME keys")
    if "+" in lowered:
        raise UnsupportedKey(f"{name!r} is not one key; use hotkey() for a combination")
    return _RENAMED.get(lowered, lowered)


def is_shift_character(character: str) -> bool:
    """True for the characters a US keyboard types with Shift held."""
    return character in _SHIFTED
