"""The MCP server of a session, for MCP hosts (Claude Desktop, Claude Code, IDEs): the
tools (``tools.py``: observe, screenshot, find, act, pointer, keyboard, wait_for,
assert_state, windows, tabs, navigate, computer) over stdio (``deskbox mcp``,
``server.py``) or streamable HTTP at the scene aggregator's ``/mcp`` (``http.py``).
Importing this package loads nothing of the MCP SDK; its modules do."""
