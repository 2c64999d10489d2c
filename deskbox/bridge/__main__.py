"""Run the CDP bridge: launches Chromium and serves its layout over HTTP."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

from aiohttp import web

from ..common.errors import ServiceError
from ..common.logging import configure_logging, get_logger
from ..common.memory import tune_gc, tune_memory
from ..common.net import parse_listen
from .app import BridgeConfig, create_app
from .chromium import ChromiumConfig


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chromium_with_api.py",
        description="Launch Chromium (one tab per URL) and serve its accessibility trees with boxes over HTTP.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("urls", nargs="*", default=["about:blank"], help="pages to open, one tab each")
    parser.add_argument("--listen", default=os.environ.get("BRIDGE_LISTEN", "127.0.0.1:8122"), help="host:port")
    parser.add_argument("--cdp-port", type=int, default=int(os.environ.get("DESKBOX_CDP_PORT", "9222")),
                        help="Chromium's DevTools port (loopback only)")
    parser.add_argument("--chromium", default=os.environ.get("DESKBOX_CHROMIUM", "chromium"), help="executable")
    parser.add_argument("--user-data-dir", default=None, help="Chromium profile (default: a fresh temporary one)")
    parser.add_argument("--attach", action="store_true",
                        help="do not launch Chromium: read the one answering on --cdp-port, and follow it "
                             "when it is restarted (deskbox up runs the session's browser this way)")
    parser.add_argument("--tabs-file", default=None,
                        help="write the open tabs' URLs to this JSON file whenever they change")
    parser.add_argument("--log-level", default=os.environ.get("DESKBOX_LOG_LEVEL", "info"))
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    tune_memory()
    tune_gc()
    configure_logging("bridge", args.log_level)
    host, port = parse_listen(args.listen)
    profile = args.user_data_dir or ("" if args.attach else tempfile.mkdtemp(prefix="deskbox-chromium-"))
    extra = os.environ.get("DESKBOX_CHROMIUM_FLAGS", "").split()
    config = BridgeConfig(
        chromium=ChromiumConfig(executable=args.chromium, cdp_port=args.cdp_port, user_data_dir=profile,
                                urls=args.urls, extra_flags=extra, attach=args.attach,
                                tabs_file=args.tabs_file),
        token=os.environ.get("DESKBOX_TOKEN") or None,
    )
    log = get_logger("deskbox.bridge")
    log.info("starting", url=f"http://{host}:{port}", cdp_port=args.cdp_port)
    try:
        web.run_app(create_app(config), host=host, port=port, print=None, access_log=None)
    except ServiceError as exc:
        print(f"chromium_with_api.py: {exc.message}", file=sys.stderr)
        sys.exit(1)
    finally:
        if args.user_data_dir is None and not args.attach:
            # The profile was ours, made for this run.
            shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
