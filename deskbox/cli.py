"""The ``deskbox`` command: each subcommand's arguments are its own module's.

- ``deskbox up``: one session, supervised (deskbox.session.cli);
- ``deskbox run`` and ``deskbox tasks``: benchmark runs and their task files
  (deskbox.run.cli);
- ``deskbox trace view``: a trace in the browser (deskbox.trace.view);
- ``deskbox mcp``: a running session's tools over MCP on stdio (deskbox.mcp.cli).

It sits above the parts it starts: none of them imports it."""

from __future__ import annotations

import argparse
import sys

from .common.logging import configure_logging
from .mcp.cli import add_mcp_parser, serve_mcp
from .session.cli import add_up_parser, run_up

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="deskbox", description="A desktop for AI agents, driven over HTTP.")
    sub = parser.add_subparsers(dest="command", required=True)
    add_up_parser(sub)
    add_mcp_parser(sub)
    trace = sub.add_parser("trace", help="traces a session recorded (deskbox up --trace, /api/v1/trace/start)")
    trace_sub = trace.add_subparsers(dest="trace_command", required=True)
    show = trace_sub.add_parser("view", help="show a trace folder in the browser: its steps, screenshots, elements",
                                add_help=False)
    show.add_argument("rest", nargs=argparse.REMAINDER, help="DIR [--port N] [--host H] [--no-serve]")
    run = sub.add_parser("run", help="run OSWorld-format tasks with an agent across a pool of sessions, graded by "
                                     "OSWorld's metrics; `deskbox run report DIR` makes its HTML page",
                         add_help=False)
    run.add_argument("rest", nargs=argparse.REMAINDER, help="TASKS --agent SPEC [options]; see deskbox run --help")
    tasks = sub.add_parser("tasks", help="`deskbox tasks fetch TASKS --cache DIR`: mirror the files OSWorld-format "
                                         "tasks download, for deskbox run --cache", add_help=False)
    tasks.add_argument("rest", nargs=argparse.REMAINDER, help="fetch TASKS --cache DIR; see deskbox tasks --help")
    return parser


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    # (subcommands that parse their own options and help)
    if argv[:2] == ["trace", "view"]:
        from .trace.view import main as view_main

        view_main(argv[2:])
        return
    if argv[:1] == ["run"]:
        from .run.cli import main as run_main

        sys.exit(run_main(argv[1:]))
    if argv[:1] == ["tasks"]:
        from .run.cli import tasks_main

        sys.exit(tasks_main(argv[1:]))
    args = build_parser().parse_args(argv)
    configure_logging("deskbox", args.log_level)
    if args.command == "up":
        sys.exit(run_up(args))
    if args.command == "mcp":
        sys.exit(serve_mcp(args))


if __name__ == "__main__":
    main()
