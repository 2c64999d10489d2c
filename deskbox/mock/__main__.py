"""Run mock mode: ``python -m deskbox.mock SCENARIO [--listen 127.0.0.1:8000]
[--observer 127.0.0.1:5001]`` (``deskbox up --mock SCENARIO`` runs this). SCENARIO is a
YAML file, or an example's name: login, settings."""

from __future__ import annotations

import argparse
import asyncio
import signal

from aiohttp import web

from ..common.logging import configure_logging, get_logger
from ..common.net import parse_listen
from ..common.settings import env
from ..observer.app import ObserverConfig
from ..observer.app import create_app as create_observer
from .app import create_app
from .scenario import load

log = get_logger("deskbox.mock")


async def serve(scenario_path: str, listen: str, observer: str | None = None, token: str | None = None) -> None:
    """Serve the scenario (and OS Screen Observer's API on it) until SIGINT or SIGTERM."""
    scenario = load(scenario_path)
    host, port = parse_listen(listen)
    runners = []
    scene = web.AppRunner(create_app(scenario, token=token), access_log=None)
    await scene.setup()
    await web.TCPSite(scene, host, port).start()
    runners.append(scene)
    base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"
    lines = [f"deskbox mock: scenario {scenario.name!r} ({scenario.description or 'no description'})",
             f"  scene      {base}   (GET /api/v1/scene, /api/v1/scene/text, POST /api/v1/act, /api/v1/oracle ...)"]
    if observer:
        ohost, oport = parse_listen(observer)
        runner = web.AppRunner(create_observer(ObserverConfig(scene=base, desktopd=base, bridge=None, token=token)),
                               access_log=None)
        await runner.setup()
        await web.TCPSite(runner, ohost, oport).start()
        runners.append(runner)
        lines.append(f"  observer   http://{ohost}:{oport}   (OS Screen Observer's API)")
    print("\n".join(lines + ["Ctrl+C stops it."]), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for runner in reversed(runners):
            await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m deskbox.mock", description=__doc__)
    parser.add_argument("scenario", help="a scenario YAML file, or an example's name (login, settings)")
    parser.add_argument("--listen", default="127.0.0.1:8000", help="host:port of the mock scene (8000)")
    parser.add_argument("--observer", default=None, metavar="HOST:PORT",
                        help="also serve OS Screen Observer's API there (5001 is its own)")
    parser.add_argument("--log-level", default=env("DESKBOX_LOG_LEVEL"))
    args = parser.parse_args(argv)
    configure_logging("mock", args.log_level)
    asyncio.run(serve(args.scenario, args.listen, args.observer, env("DESKBOX_TOKEN")))


if __name__ == "__main__":
    main()
