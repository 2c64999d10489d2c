"""Run the CDP bridge: launches Chromium and serves its layout over HTTP."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile

from aiohttp import web

from ..common.errors import DeskboxError
from ..common.logging import configure_logging, get_logger
from ..common.memory import tune_gc, tune_memory
from ..common.net import parse_listen
from ..common.settings import env, env_int
from .app import BridgeConfig, create_app
from .chromium import ChromiumConfig


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chromium_with_api.py",
        description="Launch Chromium (one tab per URL) and serve its accessibility trees with boxes over HTTP.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("urls", nargs="*", default=["about:blank"], help="pages to open, one tab each")
    parser.add_argument("--listen", default=env("DESKBOX_BRIDGE_LISTEN"), help="host:port")
    parser.add_argument("--cdp-port", type=int, default=env_int("DESKBOX_CDP_PORT") or 9222,
                        help="Chromium's DevTools port (loopback only)")
    parser.add_argument("--chromium", default=env("DESKBOX_CHROMIUM"), help="executable")
    parser.add_argument("--user-data-dir", default=None, help="Chromium profile (default: a fresh temporary one)")
    parser.add_argument("--attach", action="store_true",
                        help="do not launch Chromium: read the one answering on --cdp-port, and follow it "
                             "when it is restarted (deskbox up runs the session's browser this way)")
    parser.add_argument("--tabs-file", default=None,
                        help="write the open tabs' URLs to this JSON file whenever they change")
    parser.add_argument("--log-level", default=env("DESKBOX_LOG_LEVEL"))
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    tune_memory()
    tune_gc()
    configure_logging("bridge", args.log_level)
    host, port = parse_listen(args.listen)
    profile = args.user_data_dir or ("" if args.attach else tempfile.mkdtemp(prefix="deskbox-chromium-"))
    extra = (env("DESKBOX_CHROMIUM_FLAGS") or "").split()
    config = BridgeConfig(
        chromium=ChromiumConfig(executable=args.chromium, cdp_port=args.cdp_port, user_data_dir=profile,
                                urls=args.urls, extra_flags=extra, attach=args.attach,
                                tabs_file=args.tabs_file),
        token=env("DESKBOX_TOKEN"),
    )
    log = get_logger("deskbox.bridge")
    log.info("starting", url=f"http://{host}:{port}", cdp_port=args.cdp_port)
    try:
        web.run_app(create_app(config), host=host, port=port, print=None, access_log=None)
    except DeskboxError as exc:
        print(f"chromium_with_api.py: {exc.message}", file=sys.stderr)
        sys.exit(1)
    finally:
        if args.user_data_dir is None and not args.attach:
            # The profile was ours, made for this run.
            shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
