"""Run the live view: ``python -m deskbox.view --listen 127.0.0.1:8006 --desktopd
http://127.0.0.1:8080 --runtime-dir DIR``, as the session user (wayvnc reads its Wayland
display). ``deskbox up --view`` starts it; ``DESKBOX_TOKEN`` is asked of viewers."""

from __future__ import annotations

import argparse
import os

from aiohttp import web

from ..common.logging import configure_logging, get_logger
from ..common.net import parse_listen
from ..common.options import DEFAULT_URLS
from ..common.settings import env
from .app import ViewConfig, create_app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m deskbox.view", description=__doc__)
    parser.add_argument("--listen", default="127.0.0.1:8006", help="host:port to serve on (default 127.0.0.1:8006)")
    parser.add_argument("--desktopd", default=DEFAULT_URLS["desktopd"], help="desktopd's base URL")
    parser.add_argument("--runtime-dir", default=os.environ.get("XDG_RUNTIME_DIR", "/tmp"),
                        help="where wayvnc's UNIX sockets are made")
    parser.add_argument("--log-level", default=env("DESKBOX_LOG_LEVEL"))
    args = parser.parse_args(argv)
    configure_logging("view", args.log_level)
    host, port = parse_listen(args.listen)
    config = ViewConfig(desktopd=args.desktopd.rstrip("/"), runtime_dir=args.runtime_dir,
                        token=env("DESKBOX_TOKEN"))
    get_logger("deskbox.view").info("listening", host=host, port=port)
    web.run_app(create_app(config), host=host, port=port, print=None, access_log=None, handle_signals=True)


if __name__ == "__main__":
    main()
