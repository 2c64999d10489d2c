"""Run the OSWorld-compatible server: ``python -m deskbox.osworld --listen
127.0.0.1:5000 --desktopd http://127.0.0.1:8080 --bridge http://127.0.0.1:8122
--cdp-port 9333``. ``deskbox up --osworld`` starts it as the session user."""

from __future__ import annotations

import argparse
import sys

from aiohttp import web

from ..common.logging import configure_logging, get_logger
from ..common.net import parse_listen
from ..common.settings import env
from .app import OsworldConfig, create_app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m deskbox.osworld", description=__doc__)
    parser.add_argument("--listen", default=env("DESKBOX_OSWORLD_LISTEN"),
                        help="host:port to serve on (default 127.0.0.1:5000)")
    parser.add_argument("--desktopd", default=env("DESKBOX_DESKTOPD"),
                        help="desktopd's base URL")
    parser.add_argument("--bridge", default=env("DESKBOX_BRIDGE"),
                        help="the CDP bridge's base URL (google-chrome opens tabs through it)")
    parser.add_argument("--cdp-port", type=int, default=None,
                        help="Chromium's real DevTools port on loopback (google-chrome's "
                             "--remote-debugging-port is relayed to it)")
    parser.add_argument("--browser-name", default="Google Chrome",
                        help="the name Chromium's application has in /accessibility")
    parser.add_argument("--work-dir", default=None, help="where scripts and recordings are written")
    parser.add_argument("--control", default=env("DESKBOX_CONTROL"),
                        help="deskbox up's control socket (starts the browser for google-chrome, sets the background)")
    parser.add_argument("--cold-python", action="store_true",
                        help="start every `python -c` of /execute afresh (default: fork it from a warm "
                             "interpreter with the pyautogui shim imported)")
    parser.add_argument("--log-level", default=env("DESKBOX_LOG_LEVEL"))
    args = parser.parse_args(argv)
    configure_logging("osworld", args.log_level)
    host, port = parse_listen(args.listen)
    config = OsworldConfig(
        desktopd=args.desktopd.rstrip("/"),
        bridge=args.bridge.rstrip("/") if args.bridge else None,
        cdp_port=args.cdp_port,
        browser_name=args.browser_name,
        token=env("DESKBOX_TOKEN"),
        work_dir=args.work_dir,
        control=args.control,
        recording_max_s=float(env("DESKBOX_RECORDING_MAX_S") or 0) or None,
        warm_python=not args.cold_python,
    )
    log = get_logger("deskbox.osworld")
    try:
        app = create_app(config)
    except PermissionError as exc:
        print(f"osworld: {exc}", file=sys.stderr)
        sys.exit(1)
    log.info("starting", url=f"http://{host}:{port}", desktopd=config.desktopd, bridge=config.bridge)
    web.run_app(app, host=host, port=port, print=None, access_log=None, handle_signals=True)


if __name__ == "__main__":
    main()
