"""Run desktopd: ``python -m deskbox.desktopd --listen 127.0.0.1:8080``."""

from __future__ import annotations

import argparse
import sys

from aiohttp import web

from ..common.errors import DeskboxError
from ..common.logging import configure_logging, get_logger
from ..common.net import parse_listen
from ..common.options import internal_secret_from_env
from ..common.settings import env
from .app import DesktopdConfig, create_app
from .backends import make_backend


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m deskbox.desktopd", description=__doc__)
    parser.add_argument("--listen", default=env("DESKBOX_DESKTOPD_LISTEN"),
                        help="host:port to serve on (default 127.0.0.1:8080)")
    parser.add_argument("--backend", choices=["wayland", "x11"], default=env("DESKBOX_DESKTOPD_BACKEND"),
                        help="wayland: a wlroots compositor at $WAYLAND_DISPLAY; x11: an X server at $DISPLAY")
    parser.add_argument("--input", choices=["auto", "virtual", "uinput"], default=env("DESKBOX_DESKTOPD_INPUT"),
                        help="pointer and keyboard devices: the backend's own (virtual), or kernel uinput devices "
                             "(needs /dev/uinput); auto picks the backend's own")
    parser.add_argument("--gate", default=None,
                        help="the scene aggregator's URL: input sent here directly passes its gate (the session's "
                             "policy, traces); needs DESKBOX_INTERNAL_SECRET")
    parser.add_argument("--gate-required", action="store_true",
                        help="a policy is in force: refuse direct input while the gate cannot be reached")
    parser.add_argument("--log-level", default=env("DESKBOX_LOG_LEVEL"))
    args = parser.parse_args(argv)
    configure_logging("desktopd", args.log_level)
    host, port = parse_listen(args.listen)
    backend = make_backend(args.backend, args.input)
    app = create_app(backend, DesktopdConfig(token=env("DESKBOX_TOKEN"), gate=args.gate,
                                             secret=internal_secret_from_env(), gate_required=args.gate_required))
    log = get_logger("deskbox.desktopd")
    log.info("starting", url=f"http://{host}:{port}", backend=backend.name)
    try:
        web.run_app(app, host=host, port=port, print=None, access_log=None, handle_signals=True)
    except DeskboxError as exc:
        # The backend could not start (no compositor, no uinput ...): say why and exit.
        log.error("cannot start", code=exc.code, error=exc.message)
        print(f"desktopd: {exc.message}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
