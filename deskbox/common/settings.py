"""Every environment variable deskbox reads, in one table: its name (all under
``DESKBOX_``), its default, what it does, who reads it, and the names it had before.
``docs/settings.md`` is generated from this table (``python -m deskbox.common.settings``),
and a test checks that no other name is read anywhere and that the page is current.

A name a setting had before is still read, for one release, with a warning naming the
new one: ``DESKTOPD_URL`` gives ``DESKBOX_DESKTOPD`` its value when that is unset."""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass

__all__ = ["Setting", "SETTINGS", "env", "env_flag", "env_int", "markdown"]


@dataclass(frozen=True)
class Setting:
    name: str
    default: str | None  # what an unset variable means, as text (None: nothing)
    help: str
    read_by: str  # who reads it: "deskbox up", a service, "the image", ...
    old: tuple[str, ...] = ()


_UP, _CLIENT, _PROVIDER, _IMAGE, _SERVICES = "deskbox up", "clients", "providers", "the image", "every service"
_TESTS = "the test suite"

SETTINGS: dict[str, Setting] = {s.name: s for s in [
    # -- deskbox up (each is also a flag: the flag wins) ----------------------------------
    Setting("DESKBOX_HOST", "127.0.0.1", "address the session's HTTP services listen on (--host)", _UP),
    Setting("DESKBOX_DESKTOPD_PORT", "8080", "desktopd's port (--desktopd-port)", _UP, ("DESKTOPD_PORT",)),
    Setting("DESKBOX_BRIDGE_PORT", "8122", "the CDP bridge's port (--bridge-port)", _UP, ("BRIDGE_PORT",)),
    Setting("DESKBOX_SCENE_PORT", "8000", "the scene aggregator's port (--scene-port)", _UP, ("SCENE_PORT",)),
    Setting("DESKBOX_CDP_PORT", None, "Chromium's DevTools port, on loopback (--cdp-port; 9222, or 1337 with "
            "--osworld)", "deskbox up, the bridge, the image"),
    Setting("DESKBOX_OSWORLD_SERVER", "0", "1: serve OSWorld's in-VM API (--osworld)", _UP),
    Setting("DESKBOX_OSWORLD_PORT", "5000", "the OSWorld server's port (--osworld-port)", _UP, ("OSWORLD_PORT",)),
    Setting("DESKBOX_OSWORLD_BROWSER_NAME", "Google Chrome", "Chromium's application name in OSWorld's "
            "accessibility tree (--osworld-browser-name)", _UP, ("OSWORLD_BROWSER_NAME",)),
    Setting("DESKBOX_OSWORLD_WARM_PYTHON", "1", "0: /execute starts every `python -c` afresh, instead of "
            "forking it from a warm interpreter that has the pyautogui shim imported (--no-osworld-warm-python)", _UP),
    Setting("DESKBOX_OSWORLD_BROWSER_AT_RESET", "0", "1: with --osworld, a reset to the start snapshot starts the "
            "browser again, instead of leaving it closed as OSWorld's VM starts a task, for the task's google-chrome "
            "to start (--osworld-browser-at-reset)", _UP),
    Setting("DESKBOX_TIMEZONE", "", "the session's time zone at start and after each reset, where the session owns "
            "its zone (deskbox's images); with --osworld the default is Europe/Berlin, a zone that is not UTC+0 "
            "as OSWorld's VM's is not (--timezone)", _UP),
    Setting("DESKBOX_VLC_PORT", "8090", "VLC's HTTP interface with --osworld (--vlc-port)", _UP, ("VLC_PORT",)),
    Setting("DESKBOX_OBSERVER", "0", "1: serve OS Screen Observer's API (--observer)", _UP),
    Setting("DESKBOX_OBSERVER_PORT", "5001", "the Observer API's port (--observer-port)", _UP),
    Setting("DESKBOX_VIEW", "0", "1: serve the live view (--view)", _UP),
    Setting("DESKBOX_VIEW_PORT", "8006", "the live view's port (--view-port)", _UP),
    Setting("DESKBOX_XWAYLAND", None, "1 or 0: X11 apps through Xwayland (--xwayland; default: on with "
            "--osworld)", "deskbox up, the image"),
    Setting("DESKBOX_OCR", "off", "the scene's OCR: 1 or all (the whole screen), fill (where native apps "
            "expose nothing) (--ocr)", "deskbox up, the scene"),
    Setting("DESKBOX_USER", None, "as root: the session's user (--user)", _UP),
    Setting("DESKBOX_HOME", None, "a home to use and keep (--home)", _UP),
    Setting("DESKBOX_NO_TOKEN", "0", "1: listening beyond loopback with no DESKBOX_TOKEN, serve without a token "
            "instead of making one and printing it (--no-token)", "deskbox up, the image"),
    Setting("DESKBOX_SUDO", "0", "1: the session user may sudo with password 'password' (--sudo)", _UP),
    Setting("DESKBOX_TTL", None, "seconds the session lives (--ttl)", "deskbox up, the image"),
    Setting("DESKBOX_CONTEXTS_DIR", None, "the folder of persistent browser contexts (--contexts-dir)",
            "deskbox up, the image"),
    Setting("DESKBOX_CONTEXT", None, "the browser context to start on (--context)", "deskbox up, the image"),
    Setting("DESKBOX_CONTEXT_PERSIST", "1", "0: do not save the context back at the end (--no-context-persist)",
            "deskbox up, the image"),
    Setting("DESKBOX_CHROMIUM", "chromium", "the Chromium executable (--chromium)", "deskbox up, the bridge"),
    Setting("DESKBOX_CHROMIUM_FLAGS", None, "more Chromium flags, space separated", "deskbox up, the bridge, "
            "the image"),
    Setting("DESKBOX_TRACE", None, "record a trace from the start, under this folder (--trace)", _UP),
    Setting("DESKBOX_TRACES", None, "where traces go (default: the session's runtime folder)", _UP),
    Setting("DESKBOX_POLICY", None, "the guard rails' policy file (--policy)", _UP),
    Setting("DESKBOX_RECORDING_MAX_S", None, "the longest screen recording, in seconds (default: no limit)",
            "the scene, the OSWorld server"),
    Setting("DESKBOX_VSCODE", None, "where scripts/install-vscode put code-server (default: beside the venv)",
            "`code` in a session"),
    # -- every service -------------------------------------------------------------------
    Setting("DESKBOX_TOKEN", None, "the bearer token every service asks of its callers, and that clients send",
            "every service, clients, the image"),
    Setting("DESKBOX_MAX_REQUESTS", "64", "requests each service answers at once (a websocket counts while open); "
            "beyond them: 503 overloaded, with Retry-After", _SERVICES),
    Setting("DESKBOX_ALLOWED_ORIGINS", None, "web origins (https://dash.example.org, space or comma separated; * "
            "for any) whose pages may call the services, beside the services' own pages", _SERVICES),
    Setting("DESKBOX_ALLOWED_HOSTS", None, "names the services answer to in Host, beside addresses, localhost and "
            "the machine's name (.example.org for its subdomains; * for any)", _SERVICES),
    Setting("DESKBOX_LOG_LEVEL", "info", "debug, info, warning or error", _SERVICES),
    Setting("DESKBOX_GC", None, "default: Python's own garbage collector thresholds (the services tune them)",
            _SERVICES),
    Setting("DESKBOX_INTERNAL_SECRET", None, "set by deskbox up: what desktopd and the scene show each other",
            "desktopd, the scene"),
    Setting("DESKBOX_CONTROL", None, "set by deskbox up: the session's control socket", "the scene, the OSWorld "
            "server"),
    Setting("DESKBOX_VLM_KEY", None, "the API key of the vision model (--vlm-url)", "the scene"),
    # -- a service run on its own ------------------------------------------------------------
    Setting("DESKBOX_DESKTOPD_LISTEN", "127.0.0.1:8080", "where desktopd listens", "desktopd",
            ("DESKTOPD_LISTEN",)),
    Setting("DESKBOX_DESKTOPD_BACKEND", "wayland", "desktopd's backend: wayland or x11", "desktopd",
            ("DESKTOPD_BACKEND",)),
    Setting("DESKBOX_DESKTOPD_INPUT", "auto", "desktopd's input: auto, virtual or uinput", "desktopd",
            ("DESKTOPD_INPUT",)),
    Setting("DESKBOX_BRIDGE_LISTEN", "127.0.0.1:8122", "where the CDP bridge listens", "the bridge",
            ("BRIDGE_LISTEN",)),
    Setting("DESKBOX_SCENE_LISTEN", "127.0.0.1:8000", "where the scene aggregator listens", "the scene",
            ("SCENE_LISTEN",)),
    Setting("DESKBOX_OSWORLD_LISTEN", "127.0.0.1:5000", "where the OSWorld server listens", "the OSWorld server",
            ("OSWORLD_LISTEN",)),
    # -- where a session's services are -------------------------------------------------------
    Setting("DESKBOX_DESKTOPD", "http://127.0.0.1:8080", "desktopd's URL", "the scene, the OSWorld server, "
            "clients, pyautogui in a session", ("DESKTOPD_URL",)),
    Setting("DESKBOX_BRIDGE", None, "the CDP bridge's URL (services: none, no browser; clients: "
            "http://127.0.0.1:8122)", "the scene, the OSWorld server, clients", ("BRIDGE_URL",)),
    Setting("DESKBOX_SCENE", "http://127.0.0.1:8000", "the scene aggregator's URL", _CLIENT),
    Setting("DESKBOX_STATE_FILE", None, "the state file deskbox up --state-file wrote: the session's URLs",
            "clients, the image"),
    Setting("DESKBOX_OSWORLD", None, "set by deskbox up: the OSWorld server's URL", "`google-chrome` in a session"),
    Setting("DESKBOX_INTERFACE", None, "what the session's pyautogui says it is in traces (set by the OSWorld "
            "server)", "pyautogui in a session"),
    # -- providers: sessions for a harness ---------------------------------------------------
    Setting("DESKBOX_PROVIDER", "podman", "the back end: podman or kubernetes", _PROVIDER),
    Setting("DESKBOX_IMAGE", "deskbox", "the image sessions run", _PROVIDER),
    Setting("DESKBOX_PORT_BASE", "20000", "the first host port podman sessions publish on", _PROVIDER),
    Setting("DESKBOX_PORT_LOCK", "/tmp/deskbox-port-allocation.lock", "the lock of host port allocation",
            _PROVIDER),
    Setting("DESKBOX_PODMAN_FLAGS", None, "podman run's extra flags (default: what scripts/container-flags "
            "finds)", _PROVIDER),
    Setting("DESKBOX_PODMAN_HARDENING", "1", "0: podman runs sessions without their pids and memory caps, "
            "capability drop and no-new-privileges (to debug one; bench.fleet's baseline)", _PROVIDER),
    Setting("DESKBOX_KUBE_RUNNER", None, "kubectl or podman (kube play) for the Kubernetes back end", _PROVIDER),
    # -- the image ----------------------------------------------------------------------------
    Setting("DESKBOX_OUTPUTS", None, "displays, e.g. \"1920x1080\" or \"1280x800@2 1280x800\"", _IMAGE),
    Setting("DESKBOX_URLS", None, "pages Chromium opens at start, space separated", _IMAGE),
    Setting("DESKBOX_BIND", None, "the address the services listen on in the container", _IMAGE),
    Setting("DESKBOX_CDP_EXPOSE", "0", "1: relay Chromium's DevTools port out of the container", _IMAGE),
    Setting("DESKBOX_CDP_RELAY_PORT", "9223", "the relay's port", _IMAGE),
    Setting("DESKBOX_APPS", None, "build argument: 1 builds the apps image", "building the image"),
    Setting("DESKBOX_DEBIAN_MIRROR", None, "build argument: the Debian mirror", "building the image"),
    Setting("DESKBOX_DEBIAN_SECURITY_MIRROR", None, "build argument: the Debian security mirror",
            "building the image"),
    # -- the test suite (make test, make fuzz, make flakes) ------------------------------------
    Setting("DESKBOX_FUZZ_SEED", None, "the fuzz tests' schemathesis seed (default: taken from the commit; "
            "make flakes gives each run its own)", _TESTS),
    Setting("DESKBOX_FUZZ_EXAMPLES", "8", "examples per operation in the fuzz tests (make fuzz: 100)", _TESTS),
    Setting("DESKBOX_FUZZ_PHASES", "examples,fuzzing", "schemathesis phases the fuzz tests run (make fuzz: "
            "all)", _TESTS),
    Setting("DESKBOX_CHAOS_ROUNDS", "20", "rounds of random kills in the chaos test (make fuzz: 100)", _TESTS),
    Setting("DESKBOX_CHAOS_SEED", "7", "the chaos test's seed", _TESTS),
    Setting("DESKBOX_DOCS_SHOTS", None, "a folder: the inspector test writes the docs' picture there (make "
            "docs-shots)", _TESTS),
]}

_OLD = {old: s.name for s in SETTINGS.values() for old in s.old}
_warned: set[str] = set()


def env(name: str) -> str | None:
    """The value of setting ``name``: its variable, else a name it had before (with a
    warning, once), else its default. An empty variable counts as unset."""
    value = given(name)
    return value if value is not None else SETTINGS[name].default


def given(name: str) -> str | None:
    """The value setting ``name`` was given, under its name or a name it had before (with
    a warning, once); None when it was not (its default is not looked at: for readers to
    whom "not told" means something, as a client choosing between a URL and the state
    file)."""
    setting = SETTINGS[name]
    value = os.environ.get(name)
    if value:
        return value
    for old in setting.old:
        value = os.environ.get(old)
        if value:
            if old not in _warned:
                _warned.add(old)
                # FutureWarning: shown by default, as a setting is the user's, not code's
                warnings.warn(f"{old} is deprecated and will be dropped in the next release: set {name}",
                              FutureWarning, stacklevel=3)
            return value
    return None


def env_flag(name: str) -> bool:
    return env(name) == "1"


def env_int(name: str) -> int | None:
    value = env(name)
    return int(value) if value else None


def markdown() -> str:
    """docs/settings.md."""
    lines = ["# Settings", "",
             "Every environment variable deskbox reads. Generated from `deskbox/common/settings.py` by",
             "`python -m deskbox.common.settings > docs/settings.md`; a test keeps it current. For",
             "`deskbox up`, a flag given on the command line wins over its variable. A name in the last",
             "column is still read, for one release, with a warning.", "",
             "| variable | default | what it does | read by | before |", "|---|---|---|---|---|"]
    for s in SETTINGS.values():
        default = f"`{s.default}`" if s.default is not None else ""
        old = ", ".join(f"`{o}`" for o in s.old)
        lines.append(f"| `{s.name}` | {default} | {s.help.replace('|', '/')} | {s.read_by} | {old} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
