"""``deskbox mcp`` (and ``python -m deskbox.mcp``): serve a running session's tools to an
MCP host over stdio. A client of the session, reached by its state file or its URLs."""

from __future__ import annotations

import argparse
import asyncio
import sys

from ..common.options import CLIENT_ENV, DEFAULT_URLS, client_env
from ..common.settings import given

__all__ = ["add_mcp_parser", "serve_mcp", "main"]


def add_mcp_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> argparse.ArgumentParser:
    """``deskbox mcp``'s arguments, as a subcommand of ``sub``."""
    mcp = sub.add_parser(
        "mcp",
        help="serve a running session's tools to an MCP host (Claude Desktop, Claude Code ...) over stdio",
        description=(
            "Serve the tools of a running session (observe, screenshot, find, describe, act, pointer, keyboard, "
            "wait_for, assert_state, windows, tabs, navigate, computer) over MCP on stdin/stdout. The session is the one "
            "--state-file names, or the services at --scene, --desktopd and --bridge (deskbox up's ports by "
            "default); a URL given overrides the state file's."
        ),
    )
    mcp.add_argument("--state-file", default=client_env("state_file"),
                     help=f"the file deskbox up --state-file wrote ({CLIENT_ENV['state_file']})")
    for service, name in (("scene", "the scene aggregator"), ("desktopd", "desktopd"), ("bridge", "the CDP bridge")):
        mcp.add_argument(f"--{service}", default=client_env(service), metavar="URL",
                         help=f"{name}'s base URL ({CLIENT_ENV[service]}; default {DEFAULT_URLS[service]})")
    mcp.add_argument("--token", default=client_env("token"),
                     help=f"the session's bearer token; better given as {CLIENT_ENV['token']}, which other users "
                          "cannot read off the command line")
    mcp.add_argument("--log-level", default=given("DESKBOX_LOG_LEVEL") or "warning",
                     help="logs go to stderr (stdout is the MCP channel)")
    return mcp


def serve_mcp(args: argparse.Namespace) -> int:
    from ..client import AsyncClient
    from .server import serve_stdio

    try:
        client = (AsyncClient.from_state_file(args.state_file, args.token, interface="mcp") if args.state_file
                  else AsyncClient(token=args.token, interface="mcp"))
    except (OSError, ValueError, KeyError) as exc:
        print(f"deskbox mcp: cannot read the state file {args.state_file}: {exc!r}", file=sys.stderr)
        return 2
    for service in ("scene", "desktopd", "bridge"):
        if getattr(args, service):
            client.urls[service] = getattr(args, service).rstrip("/")
    asyncio.run(serve_stdio(client))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m deskbox.mcp ARGS``: the same as ``deskbox mcp ARGS``."""
    from ..common.logging import configure_logging

    parser = argparse.ArgumentParser(prog="deskbox")
    add_mcp_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["mcp", *(sys.argv[1:] if argv is None else argv)])
    configure_logging("deskbox", args.log_level)
    return serve_mcp(args)
