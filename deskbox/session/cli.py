"""``deskbox up``: its arguments and what it prints. It starts one desktop session and
supervises it (``lifecycle.Session``). The rest of the ``deskbox`` command is
deskbox.cli's."""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys

from ..common.errors import InvalidRequestError
from ..common.logging import configure_logging
from ..common.options import (
    BUDGET_FLAGS,
    OCR_MODES,
    VLM_KEY_ENV,
    ocr_mode_from_env,
)
from ..common.paths import SWAY_CONFIG
from ..common.settings import env, env_flag, env_int
from .layout import beyond_loopback
from .lifecycle import Session, SessionError
from .options import OSWORLD_CDP_PORT, OSWORLD_USER, SESSION_USER, UpOptions
from .outputs import OutputSpec, parse_output

__all__ = ["main", "add_up_parser", "build_parser", "run_up", "announce"]

DEFAULT_SWAY_CONFIG = SWAY_CONFIG


def _output_arg(text: str) -> OutputSpec:
    try:
        return parse_output(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_up_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> argparse.ArgumentParser:
    """``deskbox up``'s arguments, as a subcommand of ``sub``."""
    up = sub.add_parser(
        "up",
        help="start a session (headless Sway, Chromium, desktopd, scene) and supervise it",
        description=(
            "Start one headless Wayland desktop session and supervise it in the foreground: "
            "Sway as an unprivileged user with a private D-Bus session bus and AT-SPI bus, Chromium "
            "on the start URLs, desktopd and the scene aggregator. A child that "
            "dies is restarted with backoff; SIGINT or SIGTERM stops everything."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    up.add_argument(
        "--output", action="append", type=_output_arg, metavar="WxH[@S]",
        help="a display: W x H device pixels (what its screenshots measure) at scale S (1 or 2). "
             "Repeat for more displays, placed left to right. Default: one 1920x1080 display",
    )
    up.add_argument("--url", action="append", metavar="URL",
                    help="a page Chromium opens at start (repeat for more tabs). Default: about:blank")
    up.add_argument("--no-browser", action="store_true", help="do not start Chromium")
    up.add_argument("--xwayland", action=argparse.BooleanOptionalAction,
                    default={"1": True, "0": False}.get(env("DESKBOX_XWAYLAND")),
                    help="run X11 apps (GIMP, VLC) through Sway's Xwayland where the machine has it; about "
                         "65 MB (default: on with --osworld and in the apps image, off otherwise; "
                         "DESKBOX_XWAYLAND=1 or 0 says so too)")
    up.add_argument("--host", default=env("DESKBOX_HOST"),
                    help="address the HTTP services listen on; beyond loopback (0.0.0.0, an interface) with no "
                         "DESKBOX_TOKEN, the session makes a token and prints it")
    up.add_argument("--no-token", action="store_true", default=env_flag("DESKBOX_NO_TOKEN"),
                    help="serve beyond loopback without a token instead of making one: anyone who reaches the "
                         "ports drives the session and runs commands in it (web pages still cannot)")
    up.add_argument("--desktopd-port", type=int, default=env_int("DESKBOX_DESKTOPD_PORT"),
                    help="desktopd's port")
    up.add_argument("--bridge-port", type=int, default=env_int("DESKBOX_BRIDGE_PORT"),
                    help="the CDP bridge's port (chromium_with_api.py, which launches and relaunches Chromium)")
    up.add_argument("--scene-port", type=int, default=env_int("DESKBOX_SCENE_PORT"),
                    help="the scene aggregator's port")
    up.add_argument("--ocr", nargs="?", const="all", choices=OCR_MODES, default=ocr_mode_from_env(),
                    help="fill the scene's ocr list with Tesseract: 'all' of the screen (--ocr alone) or 'fill' "
                         "where native apps expose nothing (a canvas, a video). Default: off (it costs CPU on "
                         "every change), or DESKBOX_OCR (1, all, fill)")
    up.add_argument("--cdp-port", type=int,
                    default=env_int("DESKBOX_CDP_PORT"),
                    help=f"Chromium's DevTools port, always on loopback. Default: 9222; {OSWORLD_CDP_PORT} with "
                         "--osworld, whose Chrome tasks publish 9222 themselves")
    up.add_argument("--osworld", action="store_true", default=env_flag("DESKBOX_OSWORLD_SERVER"),
                    help="also serve OSWorld's in-VM API (screenshot, accessibility, execute, files, setup ...). "
                         "It runs commands: it runs as the session user and asks for DESKBOX_TOKEN when set")
    up.add_argument("--osworld-port", type=int, default=env_int("DESKBOX_OSWORLD_PORT"),
                    help="the OSWorld-compatible server's port")
    up.add_argument("--observer", action="store_true", default=env_flag("DESKBOX_OBSERVER"),
                    help="also serve OS Screen Observer's REST API (windows by index, structure, find_element, "
                         "element actions, observe, wait_for, snapshots, assert_state), mapped onto the scene "
                         "aggregator's toolset")
    up.add_argument("--observer-port", type=int, default=env_int("DESKBOX_OBSERVER_PORT"),
                    help="the OS Screen Observer-compatible API's port (its own default)")
    up.add_argument("--mock", metavar="SCENARIO", default=None,
                    help="no desktop: serve the scene's API from a scripted scenario (a YAML file, or an "
                         "example: login, settings) for testing agent code in milliseconds; with --observer, "
                         "OS Screen Observer's API on it too")
    up.add_argument("--view", action="store_true", default=env_flag("DESKBOX_VIEW"),
                    help="serve the live view: the desktop in a browser (wayvnc and noVNC), view only until the "
                         "viewer clicks \"take control\"; asks for DESKBOX_TOKEN when set")
    up.add_argument("--view-port", type=int, default=env_int("DESKBOX_VIEW_PORT"),
                    help="the live view's port (8006, the port OSWorld's providers publish for VNC)")
    up.add_argument("--vlc-port", type=int, default=env_int("DESKBOX_VLC_PORT"),
                    help="with --osworld, where VLC's HTTP interface listens when VLC runs (OSWorld's "
                         "graders read it; password \"password\")")
    up.add_argument("--osworld-browser-name", default=env("DESKBOX_OSWORLD_BROWSER_NAME"),
                    help="the application name Chromium has in the OSWorld accessibility tree")
    up.add_argument("--osworld-warm-python", action=argparse.BooleanOptionalAction,
                    default=env_flag("DESKBOX_OSWORLD_WARM_PYTHON"),
                    help="with --osworld, /execute forks each `python -c` from a warm interpreter with the "
                         "pyautogui shim imported (default), instead of starting one afresh")
    up.add_argument("--osworld-browser-at-reset", action=argparse.BooleanOptionalAction,
                    default=env_flag("DESKBOX_OSWORLD_BROWSER_AT_RESET"),
                    help="with --osworld, a reset to the start snapshot starts the browser again, instead of "
                         "leaving it closed (default) as OSWorld's VM starts a task: the task's google-chrome starts "
                         "it")
    up.add_argument("--timezone", default=env("DESKBOX_TIMEZONE") or None, metavar="ZONE",
                    help="the session's time zone at start and after every reset (Europe/Berlin; with --osworld the "
                         "default), where the session owns its zone: in deskbox's images. A session on a machine's "
                         "own user has the machine's")
    up.add_argument("--user", default=env("DESKBOX_USER"),
                    help=f"when started as root: the user that runs the session, created if missing. Default: "
                         f"{SESSION_USER!r} (a system user), or {OSWORLD_USER!r} with home /home/{OSWORLD_USER} "
                         "with --osworld, as OSWorld's VM has; another name NAME gets /home/NAME")
    up.add_argument("--home", default=env("DESKBOX_HOME"), metavar="PATH",
                    help="use PATH as the session user's home and keep it. Default: a fresh home made from a "
                         "template (the XDG folders, Desktop, Documents ...) and removed at exit: in the "
                         "runtime folder, or /home/NAME for the OSWorld user")
    up.add_argument("--sudo", action="store_true", default=env_flag("DESKBOX_SUDO"),
                    help="as root on a bare machine: let the session user sudo with the password "
                         "'password' (as OSWorld's tasks do, `echo password | sudo -S ...`) while the session "
                         "runs. That is root for anything running in the session: use it on a machine that "
                         "is there for the session")
    up.add_argument("--ttl", type=float, default=float(env("DESKBOX_TTL") or 0) or None, metavar="SECONDS",
                    help="end the session after SECONDS (POST /api/v1/session/extend pushes it back)")
    up.add_argument("--contexts-dir", default=env("DESKBOX_CONTEXTS_DIR"), metavar="DIR",
                    help="the folder of persistent browser contexts (POST /api/v1/session/context)")
    up.add_argument("--context", default=env("DESKBOX_CONTEXT"), metavar="ID",
                    help="start the browser on persistent context ID (needs --contexts-dir)")
    up.add_argument("--context-persist", action=argparse.BooleanOptionalAction,
                    default=env("DESKBOX_CONTEXT_PERSIST") == "1",
                    help="save the browser's profile back into --context when the session ends")
    up.add_argument("--runtime-dir", default=None,
                    help="the session's private XDG_RUNTIME_DIR (default: a fresh folder in /tmp, removed at exit)")
    up.add_argument("--sway-config", default=str(DEFAULT_SWAY_CONFIG),
                    help="the base Sway configuration; output lines are appended to it")
    up.add_argument("--state-file", default=None,
                    help="write the session's endpoints, sockets and pids to this JSON file once it is up")
    up.add_argument("--chromium", default=env("DESKBOX_CHROMIUM"),
                    help="the Chromium executable")
    up.add_argument("--trace", default=env("DESKBOX_TRACE"), metavar="DIR",
                    help="record a trace from the start, in a folder under DIR (POST /api/v1/trace/start "
                         "records more later); traces started later go there too")
    up.add_argument("--policy", default=env("DESKBOX_POLICY"), metavar="FILE",
                    help="guard rails: budgets, redaction, allowed actions, confirmation, audit log (JSON or "
                         "YAML; see docs/guardrails.md)")
    budgets = {"max_actions": "actions", "max_screenshots": "screenshots",
               "max_vlm_tokens": "tokens of the vision model (--vlm-url)",
               "max_session_seconds": "seconds of the session", "actions_per_minute": "actions in any minute"}
    for flag in BUDGET_FLAGS:
        up.add_argument(f"--{flag.replace('_', '-')}", type=int, default=None, metavar="N",
                        help=f"a budget: at most N {budgets[flag]} (over the policy file's)")
    up.add_argument("--vlm-url", default=None, metavar="URL",
                    help="a vision model that describes windows on request (GET /api/v1/description?vlm=1, the "
                         "Observer API's /api/description, MCP's describe): an OpenAI-compatible "
                         "chat-completions endpoint, http://host:port/v1 or .../chat/completions; its key, if it "
                         f"needs one, in {VLM_KEY_ENV}. A window's screenshot and sketch are sent there when asked; "
                         "without it nothing is sent anywhere")
    up.add_argument("--vlm-model", default=None, metavar="NAME", help="the model --vlm-url is to run")
    up.add_argument("--log-level", default=env("DESKBOX_LOG_LEVEL"))
    return up


def build_parser() -> argparse.ArgumentParser:
    """``deskbox up`` alone (``python -m deskbox.session.cli up ...``); the whole command:
    deskbox.cli."""
    parser = argparse.ArgumentParser(prog="deskbox", description="A desktop for AI agents, driven over HTTP.")
    add_up_parser(parser.add_subparsers(dest="command", required=True))
    return parser


def _token_beyond_loopback(args: UpOptions) -> None:
    """A session that listens beyond loopback has a token: DESKBOX_TOKEN's, or one made
    here and printed (once, on stderr: the container's log), unless --no-token."""
    if env("DESKBOX_TOKEN") or args.no_token or not beyond_loopback(args.host):
        return
    token = secrets.token_urlsafe(24)
    os.environ["DESKBOX_TOKEN"] = token  # (read by the session, given to its services)
    print(f"deskbox: listening on {args.host} with no DESKBOX_TOKEN, so this session has one of its own; "
          f"send it as Authorization: Bearer {token}\n"
          f"deskbox: (set DESKBOX_TOKEN to choose it, or --no-token / DESKBOX_NO_TOKEN=1 to serve without one)",
          file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    configure_logging("deskbox", args.log_level)
    sys.exit(run_up(args))


def run_up(parsed: argparse.Namespace) -> int:
    """``deskbox up`` with its parsed arguments; the exit status."""
    args = UpOptions.from_namespace(parsed)
    _token_beyond_loopback(args)
    if args.mock:
        # No desktop at all: the scenario answers the scene's API (and, with --observer,
        # OS Screen Observer's) on the same ports a session would use.
        from ..mock.__main__ import serve

        try:
            asyncio.run(serve(args.mock, f"{args.host}:{args.scene_port}",
                              f"{args.host}:{args.observer_port}" if args.observer else None,
                              env("DESKBOX_TOKEN")))
        except InvalidRequestError as exc:
            print(f"deskbox: {exc.message}", file=sys.stderr)
            return 2
        return 0
    if args.context and not args.contexts_dir:
        print("deskbox: --context needs --contexts-dir", file=sys.stderr)
        return 2
    from ..scene.vlm import config_problem

    problem = config_problem(args.vlm_url, args.vlm_model)
    if problem is not None:
        print(f"deskbox: {problem}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(Session(args).run(announce))
    except SessionError as exc:
        print(f"deskbox: {exc}", file=sys.stderr)
        return 1


def announce(state: dict) -> None:
    lines = [
        "deskbox is up",
        f"  desktopd   {state['desktopd']}   (GET /api/v1/health, /api/v1/screenshot, POST /api/v1/pointer ...)",
        f"  scene      {state['scene']}   (GET /api/v1/scene, POST /api/v1/act, /api/v1/session/reset ...)",
    ]
    if state["osworld"]:
        lines.append(f"  osworld    {state['osworld']}   (OSWorld's API: /screenshot, /accessibility, /execute ...)")
    if state.get("view"):
        lines.append(f"  view       {state['view']}/   (the desktop live in a browser)")
    if state.get("observer"):
        lines.append(f"  observer   {state['observer']}   (OS Screen Observer's API: /api/windows, /api/find_element ...)")
    if state["cdp"]:
        lines.append(f"  bridge     {state['bridge']}   (GET /layout, /tabs, /health)")
        lines.append(f"  chromium   CDP {state['cdp']}")
    for i, o in enumerate(state["outputs"]):
        lines.append(f"  display {i}  {o}")
    lines += [f"  user       {state['user']['name']}   (home {state['home']})",
              f"  runtime    {state['runtime_dir']}   (WAYLAND_DISPLAY=wayland-1, logs in logs/)",
              f"  d-bus      {state['dbus_session_bus_address']}   (AT-SPI on, for native apps)",
              "Ctrl+C stops the session."]
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
