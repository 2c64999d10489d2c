"""Run desktopd: ``python -m deskbox.desktopd --listen 127.0.0.1:8080``."""

from __future__ import annotations

import argparse
import os
import sys

from aiohttp import web

from ..common.errors import ServiceError
from ..common.logging import configure_logging, get_logger
from ..common.net import parse_listen
from .app import DesktopdConfig, create_app
from .backends import make_backend


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m deskbox.desktopd", description=__doc__)
    parser.add_argument("--listen", default=os.environ.get("DESKTOPD_LISTEN", "127.0.0.1:8080"),
                        help="host:port to serve on (default 127.0.0.1:8080)")
    parser.add_argument("--backend", choices=["wayland", "x11"], default=os.environ.get("DESKTOPD_BACKEND", "wayland"),
                        help="wayland: a wlroots compositor at $WAYLAND_DISPLAY; x11: an X server at $DISPLAY")
    parser.add_argument("--input", choices=["auto", "virtual", "uinput"], default=os.environ.get("DESKTOPD_INPUT", "auto"),
                        help="pointer and keyboard devices: the backend's own (virtual), or kernel uinput devices "
                             "(needs /dev/uinput); auto picks the backend's own")
    parser.add_argument("--log-level", default=os.environ.get("DESKBOX_LOG_LEVEL", "info"))
    args = parser.parse_args(argv)
    configure_logging("desktopd", args.log_level)
    host, port = parse_listen(args.listen)
    backend = make_backend(args.backend, args.input)
    app = create_app(backend, DesktopdConfig(token=os.environ.get("DESKBOX_TOKEN") or None))
    log = get_logger("deskbox.desktopd")
    log.info("starting", url=f"http://{host}:{port}", backend=backend.name)
    try:
        web.run_app(app, host=host, port=port, print=None, access_log=None, handle_signals=True)
    except ServiceError as exc:
        # The backend could not start (no compositor, no uinput ...): say why and exit.
        log.error("cannot start", code=exc.code, error=exc.message)
        print(f"desktopd: {exc.message}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
