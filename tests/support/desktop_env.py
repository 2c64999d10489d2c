"""OSWorld's own client package (``desktop-env``), importable in the test venv: the
runner's loader (``deskbox.run.graders``), which registers what desktop-env imports and
the tests never use (its metrics package's ``__init__``, pydrive, pandas). Everything
else (SetupController, PythonController, the getters) is OSWorld's code, unmodified.
Call ``load()`` before any ``desktop_env`` import that reaches them."""

from __future__ import annotations

from deskbox.run.graders import compare_urls, load

__all__ = ["load", "compare_urls"]
