"""Run the OS Screen Observer-compatible API: ``python -m deskbox.observer --listen
127.0.0.1:5001 --scene http://127.0.0.1:8000 --desktopd http://127.0.0.1:8080 --bridge
http://127.0.0.1:8122``. ``deskbox up --observer`` starts it; ``DESKBOX_TOKEN`` is asked
of its callers and sent to the services."""

from __future__ import annotations

import argparse

from aiohttp import web

from ..common.logging import configure_logging, get_logger
from ..common.net import parse_listen
from ..common.options import DEFAULT_URLS
from ..common.settings import env
from .app import ObserverConfig, create_app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m deskbox.observer", description=__doc__)
    parser.add_argument("--listen", default="127.0.0.1:5001", help="host:port to serve on (default 127.0.0.1:5001)")
    parser.add_argument("--scene", default=DEFAULT_URLS["scene"], help="the scene aggregator's base URL")
    parser.add_argument("--desktopd", default=DEFAULT_URLS["desktopd"], help="desktopd's base URL")
    parser.add_argument("--bridge", default=None, help="the CDP bridge's base URL (none: no browser)")
    parser.add_argument("--log-level", default=env("DESKBOX_LOG_LEVEL"))
    args = parser.parse_args(argv)
    configure_logging("observer", args.log_level)
    host, port = parse_listen(args.listen)
    config = ObserverConfig(scene=args.scene.rstrip("/"), desktopd=args.desktopd.rstrip("/"),
                            bridge=args.bridge.rstrip("/") if args.bridge else None,
                            token=env("DESKBOX_TOKEN"))
    get_logger("deskbox.observer").info("listening", host=host, port=port)
    web.run_app(create_app(config), host=host, port=port, print=None, access_log=None)


if __name__ == "__main__":
    main()
