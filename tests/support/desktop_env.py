"""OSWorld's own client package (``desktop-env``), importable in the test venv.

Why stubs: desktop-env is installed with ``pip --no-deps`` (its requirements pull torch,
easyocr, librosa, pandas, Google's Drive SDK ... for graders these tests never call).
``controllers.setup`` and the getters import three things they do not need here:

- ``desktop_env.evaluators.metrics``: its ``__init__`` imports every metric (and with
  them torch/easyocr); it is registered as an empty package whose ``__path__`` is the
  real folder, so a real submodule could still be imported by name;
- ``desktop_env.evaluators.metrics.utils``: ``controllers.setup`` takes
  ``compare_urls`` from it (for ``chrome_close_tabs``); the real module needs
  tldextract, xmltodict, openpyxl ..., so a small normaliser stands in (below);
- ``pydrive`` (Google Drive steps and getter) and ``pandas`` (an xlsx getter): empty
  stand-ins, registered only when the real package is not installed.

Everything else (SetupController, PythonController, the getters) is OSWorld's code,
unmodified. Call ``load()`` before any ``desktop_env`` import that reaches them."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit, urlunsplit

__all__ = ["load", "compare_urls"]


def compare_urls(url1: str | None, url2: str | None, full: bool = True) -> bool:
    """Two URLs name the same page: scheme assumed ``http`` when missing, host case and
    a leading ``www.`` ignored, an empty path equal to ``/``; without ``full`` the
    query and fragment do not count."""
    if url1 is None or url2 is None:
        return url1 == url2

    def norm(url: str) -> str:
        if "://" not in url:
            url = "http://" + url
        parts = urlsplit(url)
        host = parts.netloc.lower().removeprefix("www.")
        path = parts.path.rstrip("/")
        query, fragment = (parts.query, parts.fragment) if full else ("", "")
        return urlunsplit((parts.scheme.lower(), host, path, query, fragment))

    return norm(url1) == norm(url2)


def _module(name: str, **attrs: object) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


def _missing(name: str) -> bool:
    return name not in sys.modules and importlib.util.find_spec(name) is None


def _placeholder(name: str) -> type:
    def unavailable(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError(f"{name} is a stand-in: pydrive is not installed in this environment")

    return type(name, (), {"__init__": unavailable})


def _register_stubs() -> None:
    spec = importlib.util.find_spec("desktop_env")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("desktop-env is not installed (scripts/install-deps installs it with --no-deps)")
    metrics_dir = Path(next(iter(spec.submodule_search_locations))) / "evaluators" / "metrics"
    if "desktop_env.evaluators.metrics" not in sys.modules:
        metrics = _module("desktop_env.evaluators.metrics")
        metrics.__path__ = [str(metrics_dir)]  # a package: real submodules stay importable
        metrics.utils = _module("desktop_env.evaluators.metrics.utils", compare_urls=compare_urls)
    if _missing("pydrive"):
        pydrive = _module("pydrive")
        pydrive.__path__ = []
        pydrive.auth = _module("pydrive.auth", GoogleAuth=_placeholder("GoogleAuth"))
        pydrive.drive = _module("pydrive.drive", **{n: _placeholder(n) for n in
                                                    ("GoogleDrive", "GoogleDriveFile", "GoogleDriveFileList")})
    if _missing("pandas"):
        _module("pandas")


def load() -> SimpleNamespace:
    """OSWorld's ``SetupController``, ``PythonController`` and getters module."""
    _register_stubs()
    setup = importlib.import_module("desktop_env.controllers.setup")
    python = importlib.import_module("desktop_env.controllers.python")
    getters = importlib.import_module("desktop_env.evaluators.getters")
    return SimpleNamespace(SetupController=setup.SetupController, PythonController=python.PythonController,
                           getters=getters)
