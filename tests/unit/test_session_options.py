"""``deskbox up``'s typed options and its parser are the same set of options, and the
defaults that depend on --osworld are filled in once."""

from __future__ import annotations

import dataclasses

import pytest

from deskbox.session.cli import build_parser
from deskbox.session.options import OSWORLD_CDP_PORT, OSWORLD_USER, SESSION_USER, UpOptions
from deskbox.session.outputs import OutputSpec


def _up_dests() -> set[str]:
    parser = build_parser()
    up = next(a for a in parser._subparsers._group_actions if a.dest == "command").choices["up"]  # noqa: SLF001
    return {a.dest for a in up._actions if a.dest != "help"}  # noqa: SLF001


def test_every_up_option_is_a_typed_field_and_every_field_an_option():
    fields = {f.name for f in dataclasses.fields(UpOptions)}
    assert fields == _up_dests()


def test_the_defaults_that_depend_on_osworld(monkeypatch):
    for name in ("DESKBOX_CDP_PORT", "DESKBOX_USER", "DESKBOX_OSWORLD_SERVER"):
        monkeypatch.delenv(name, raising=False)
    plain = UpOptions.from_namespace(build_parser().parse_args(["up"]))
    assert plain.cdp_port == 9222 and plain.user == SESSION_USER and plain.output == () and plain.url == ()
    osworld = UpOptions.from_namespace(build_parser().parse_args(
        ["up", "--osworld", "--output", "800x600", "--url", "about:blank", "--max-actions", "5"]))
    assert osworld.cdp_port == OSWORLD_CDP_PORT and osworld.user == OSWORLD_USER
    assert osworld.output == (OutputSpec(800, 600, 1.0),) and osworld.url == ("about:blank",)
    assert osworld.budgets == {"max_actions": 5}
    given = UpOptions.from_namespace(build_parser().parse_args(["up", "--osworld", "--cdp-port", "9555"]))
    assert given.cdp_port == 9555


def test_options_do_not_change_once_read():
    options = UpOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.host = "0.0.0.0"  # type: ignore[misc]
    assert options.replace(host="0.0.0.0").host == "0.0.0.0" and options.host == "127.0.0.1"
