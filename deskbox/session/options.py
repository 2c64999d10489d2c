"""``deskbox up``'s options, typed: what a session is asked to be, read once from the
command line (and the environment, through its defaults) and never changed after.

    options = UpOptions.from_namespace(parser.parse_args(["up", "--osworld"]))
    options.cdp_port      # 9333: the defaults that depend on --osworld are filled in

The session's parts read these fields, not the argparse namespace: a misspelt option
is an error where it is written (a type checker sees it), not an ``AttributeError``
at the moment a child starts. ``tests/unit/test_session_options.py`` keeps the fields
and the ``up`` parser's options the same set."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import Any

from ..common.options import BUDGET_FLAGS
from .outputs import OutputSpec

__all__ = ["UpOptions", "OSWORLD_CDP_PORT", "OSWORLD_USER", "SESSION_USER"]

# The session's user: a system user of its own, or with --osworld OSWorld's ("user",
# with its home /home/user, as in OSWorld's VM).
SESSION_USER = "deskbox"
OSWORLD_USER = "user"
# With --osworld, Chromium's DevTools port: not 9222, which OSWorld's Chrome tasks take
# themselves (`socat tcp-listen:9222,fork tcp:localhost:1337`), nor 9223, the container's
# DevTools relay (DESKBOX_CDP_EXPOSE).
OSWORLD_CDP_PORT = 9333


@dataclass(frozen=True, slots=True)
class UpOptions:
    # What the session shows
    output: tuple[OutputSpec, ...] = ()
    url: tuple[str, ...] = ()
    no_browser: bool = False
    xwayland: bool | None = None  # None: when an app needs it
    chromium: str = "chromium"
    ocr: str = "off"
    # Where it listens, and who may call it
    host: str = "127.0.0.1"
    no_token: bool = False
    desktopd_port: int = 8080
    bridge_port: int = 8122
    scene_port: int = 8000
    cdp_port: int = 9222
    # The services beside the three
    osworld: bool = False
    osworld_port: int = 5000
    osworld_browser_name: str = "Google Chrome"
    osworld_warm_python: bool = True
    osworld_browser_at_reset: bool = False
    vlc_port: int = 8090
    observer: bool = False
    observer_port: int = 5001
    view: bool = False
    view_port: int = 8006
    mock: str | None = None
    # Its user, home and folders
    user: str = SESSION_USER
    home: str | None = None
    sudo: bool = False
    timezone: str | None = None
    runtime_dir: str | None = None
    state_file: str | None = None
    sway_config: str | None = None
    contexts_dir: str | None = None
    context: str | None = None
    context_persist: bool = True
    ttl: float | None = None
    # Its guard rails, traces and vision model
    trace: str | None = None
    policy: str | None = None
    max_actions: int | None = None
    max_screenshots: int | None = None
    max_vlm_tokens: int | None = None
    max_session_seconds: int | None = None
    actions_per_minute: int | None = None
    vlm_url: str | None = None
    vlm_model: str | None = None
    log_level: str = "info"

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> UpOptions:
        """The parsed ``up`` options (``command`` and other subcommands' keys left
        out), with the defaults that depend on --osworld filled in: Chromium's
        DevTools port and the session's user."""
        given = {f.name: getattr(ns, f.name) for f in dataclasses.fields(cls) if hasattr(ns, f.name)}
        given["output"] = tuple(given.get("output") or ())
        given["url"] = tuple(given.get("url") or ())
        osworld = bool(given.get("osworld"))
        if given.get("cdp_port") is None:
            given["cdp_port"] = OSWORLD_CDP_PORT if osworld else 9222
        if given.get("user") is None:
            given["user"] = OSWORLD_USER if osworld else SESSION_USER
        return cls(**given)

    @property
    def budgets(self) -> dict[str, int]:
        """The budgets given on the command line (over the policy file's), by flag."""
        return {flag: getattr(self, flag) for flag in BUDGET_FLAGS if getattr(self, flag)}

    def replace(self, **changes: Any) -> UpOptions:
        return dataclasses.replace(self, **changes)
