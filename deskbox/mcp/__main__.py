"""``python -m deskbox.mcp ARGS``: the same as ``deskbox mcp ARGS``."""

import sys

from ..session.cli import main

main(["mcp", *sys.argv[1:]])
