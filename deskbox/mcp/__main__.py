"""``python -m deskbox.mcp ARGS``: the same as ``deskbox mcp ARGS``."""

import sys

from .cli import main

sys.exit(main())
