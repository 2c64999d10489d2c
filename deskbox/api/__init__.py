"""What the scene aggregator's routes take: its requests' pydantic models (``scene``, the
toolset's ``toolset``, the computer adapters' common query and Anthropic's computer tool
in ``computer``). They validate each request and make the OpenAPI document; the MCP
server's tools take the same models, so they live a floor below both. What the routes
answer is ``deskbox.answers``."""
