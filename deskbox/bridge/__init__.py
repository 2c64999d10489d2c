"""The CDP bridge: Chromium's accessibility trees with box models and layout metrics,
over HTTP (default 127.0.0.1:8122). Contract: layout_schema.jsonc."""
