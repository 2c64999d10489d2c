"""The MCP server of a session: the tools of ``tools.py`` on the SDK's low-level
``Server``, served over stdio (``deskbox mcp``) or streamable HTTP (``http.py``)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams

from ..client import AsyncClient
from . import tools

__all__ = ["build_server", "serve_stdio", "INSTRUCTIONS"]

INSTRUCTIONS = (
    "A desktop (windows, a Chromium browser, native apps) you see and drive. Start with observe: it lists "
    "elements with ids such as a0-12; act on those ids (click, type, set_value ...) rather than on "
    "coordinates. Observe again with since=TOKEN to read only what changed. screenshot shows the pixels "
    "(marks: true draws the ids); pointer, keyboard and computer work at screenshot coordinates. wait_for "
    "waits for the page or app to get somewhere; assert_state checks that it did."
)


def _version() -> str:
    try:
        return version("deskbox")
    except PackageNotFoundError:  # (run from a checkout that is not installed)
        return "0"


def build_server(client: AsyncClient) -> Server:
    """An MCP server whose tools call the session through ``client``."""

    async def list_tools(ctx, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=tools.listed())

    async def call_tool(ctx, params: CallToolRequestParams) -> CallToolResult:
        return await tools.call(client, params.name, params.arguments)

    return Server("deskbox", version=_version(), title="deskbox desktop", instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(client: AsyncClient) -> None:
    """Serve MCP on stdin/stdout until the host closes them."""
    server = build_server(client)
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await client.close()
