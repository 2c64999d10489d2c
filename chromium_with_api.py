#!/usr/bin/env python3
"""Chromium with an HTTP API: `python chromium_with_api.py [URL ...]`.

Launches Chromium (native Wayland when WAYLAND_DISPLAY is set, X11 otherwise) with one
tab per URL and serves its accessibility trees with boxes on 127.0.0.1:8122. The logic
lives in deskbox/bridge; see layout_schema.jsonc for the response contract.
"""

from deskbox.bridge.__main__ import main

if __name__ == "__main__":
    main()
