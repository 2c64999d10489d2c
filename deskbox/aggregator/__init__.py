"""The scene aggregator, the session's front door (:8000): one aiohttp app
(``create_app``) that composes the scene engine and its routes (``deskbox.scene``), the
observer toolset (``deskbox.toolset``), the provider-shaped computer adapters
(``deskbox.computer``) and MCP at /mcp (``deskbox.mcp``). ``python -m deskbox.aggregator``
runs it."""
