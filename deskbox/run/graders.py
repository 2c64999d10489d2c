"""OSWorld's own controllers, getters and metric functions (the ``desktop-env`` package),
imported so that a metric's heavy dependencies load only when that metric runs.

Why not ``import desktop_env.evaluators.metrics``: its ``__init__`` imports every metric
module, and with them torch and easyocr (``docs.py``) and librosa (``vlc.py``), about
7 GB that only a few graders use. Here the package is registered bare (its real folder as
``__path__``, its ``__init__`` not run), and a metric's module is found by reading that
``__init__``'s imports without running them, then imported alone. A metric whose module
needs a package that is not installed raises :class:`GraderUnavailable` naming it
(``pip install 'deskbox[osworld]'`` installs what the graders import).

``controllers.setup`` imports ``compare_urls`` from the metrics' ``utils`` (for its
``chrome_close_tabs`` step); where the real ``utils`` cannot be imported (it needs
formulas, tldextract, openpyxl ...), a normaliser of deskbox's own stands in for that one
function. The getters import ``pydrive`` (Google Drive steps) and ``pandas`` (one xlsx
getter) at module top: empty stand-ins are registered when those are not installed, and
raise if a task uses them. So are easyocr (``docs.py``), librosa, acoustid and fastdtw
(``vlc.py``), which deskbox[osworld] leaves out: their modules' other metrics run.

OSWorld's task set moves faster than its package on PyPI: tasks of a newer checkout name
getters and metrics desktop-env 1.0.2 does not have. :func:`use` takes the graders from a
checkout of OSWorld's repository instead (``deskbox run --graders PATH``), before anything
of them is imported; :func:`source` says which graders a run used."""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.metadata
import importlib.util
import sys
import threading
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

__all__ = ["GraderUnavailable", "load", "metric", "getter", "compare_urls", "check", "use", "source", "importable"]

_METRICS = "desktop_env.evaluators.metrics"
_lock = threading.Lock()
_loaded: SimpleNamespace | None = None
_metric_modules: dict[str, str] | None = None
_checkout: Path | None = None


class GraderUnavailable(RuntimeError):
    """A grader (metric or getter) that cannot be loaded here, and why."""


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


def importable(name: str) -> bool:
    """Module ``name`` is imported or can be found (a broken parent package: it cannot)."""
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _missing(name: str) -> bool:
    return not importable(name)


def _placeholder(name: str) -> type:
    def unavailable(*_args: object, **_kwargs: object) -> None:
        raise GraderUnavailable(f"{name} is a stand-in: pydrive is not installed; OSWorld's Google Drive "
                                "steps need it (pip install pydrive)")

    return type(name, (), {"__init__": unavailable})


# What a metric module imports at its top for a few of its functions only, and
# deskbox[osworld] leaves out (torch-sized, or audio): with it missing, a stand-in lets
# the module import, so that its other metrics run (docs.py's compare_docx_files,
# vlc.py's settings checks); what uses the stand-in raises GraderUnavailable naming it.
_LEFT_OUT = {
    "easyocr": "docs.py's OCR metrics (with torch, several GB)",
    "librosa": "vlc.py's audio comparisons",
    "acoustid": "vlc.py's audio fingerprints",
    "fastdtw": "vlc.py's audio comparisons",
}


def _stand_in(name: str, used_by: str) -> types.ModuleType:
    def unavailable(what: str) -> Callable[..., Any]:
        def call(*_args: object, **_kwargs: object) -> Any:
            raise GraderUnavailable(f"{what}: {name} is not installed; {used_by} need it (pip install {name})")
        return call

    def attribute(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return unavailable(f"{name}.{attr}")

    return _module(name, __getattr__=attribute)


# What to say when a module of the graders is missing. deskbox[osworld] carries every
# import of OSWorld's metric and getter modules but ``_LEFT_OUT`` (tests/test_wheel.py
# checks so in a venv with the extra alone), so the advice holds.
_EXTRA_ADVICE = "pip install 'deskbox[osworld]' and desktop-env with --no-deps (docs/run.md)"


def use(folder: Path) -> Path:
    """Take OSWorld's controllers, getters and metrics from ``folder``: a checkout of
    OSWorld's repository (holding ``desktop_env/``) or its ``desktop_env`` folder. Called
    before the graders are first loaded; the folder that holds the package is returned.
    The package is registered bare, as the metrics package is: its ``__init__`` (which a
    checkout may fill with imports of its providers) is not run."""
    global _checkout
    folder = Path(folder).expanduser().resolve()
    package = folder if (folder / "evaluators").is_dir() and folder.name == "desktop_env" else folder / "desktop_env"
    for needed in ("evaluators/metrics/__init__.py", "evaluators/getters/__init__.py", "controllers/setup.py"):
        if not (package / needed).is_file():
            raise GraderUnavailable(f"{folder} is not a checkout of OSWorld: {package / needed} is not there "
                                    "(--graders names the repository's folder, or its desktop_env folder)")
    with _lock:
        loaded = sys.modules.get("desktop_env")
        if loaded is not None and list(getattr(loaded, "__path__", [])) != [str(package)]:
            raise GraderUnavailable(f"OSWorld's graders are loaded already from {list(loaded.__path__)}; "
                                    f"{package} must be chosen before they are")
        if loaded is None:
            module = _module("desktop_env")
            module.__path__ = [str(package)]
            module.__file__ = str(package / "__init__.py")
        _checkout = package
    return package.parent


def source() -> dict[str, Any]:
    """Which graders a run uses: desktop-env's version, or the checkout's folder, with a
    hash of its controllers' and evaluators' sources either way (what decides a score)."""
    try:
        package = _metrics_dir().parent.parent
    except GraderUnavailable:
        return {"checkout": None, "sha256": None}
    digest = hashlib.sha256()
    for path in sorted(p for sub in ("controllers", "evaluators") for p in (package / sub).rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return {"checkout": str(package.parent) if _checkout is not None else None,
            "sha256": "sha256:" + digest.hexdigest()}


def _version() -> str:
    if _checkout is not None:
        return f"the checkout in {_checkout.parent}"
    try:
        return f"desktop-env {importlib.metadata.version('desktop-env')}"
    except importlib.metadata.PackageNotFoundError:
        return "desktop-env"


def _newer(what: str) -> GraderUnavailable:
    advice = ("" if _checkout is not None else
              ": the task is newer than the package; --graders PATH takes them from a checkout of OSWorld's repository")
    return GraderUnavailable(f"OSWorld's graders in {_version()} have no {what}{advice}")


def _metrics_dir() -> Path:
    if _checkout is not None:
        return _checkout / "evaluators" / "metrics"
    spec = importlib.util.find_spec("desktop_env")
    if spec is None or not spec.submodule_search_locations:
        raise GraderUnavailable("OSWorld's desktop-env is not installed: pip install --no-deps 'desktop-env==1.0.2' "
                                "beside 'deskbox[osworld]'")
    return Path(next(iter(spec.submodule_search_locations))) / "evaluators" / "metrics"


def _register() -> None:
    folder = _metrics_dir()
    if _METRICS not in sys.modules:
        package = _module(_METRICS)
        package.__path__ = [str(folder)]  # a package: its real submodules stay importable
        package.__file__ = str(folder / "__init__.py")
        try:
            importlib.import_module(_METRICS + ".utils")
        except ImportError:
            sys.modules.pop(_METRICS + ".utils", None)
            package.utils = _module(_METRICS + ".utils", compare_urls=compare_urls)
    if _missing("pydrive"):
        pydrive = _module("pydrive")
        pydrive.__path__ = []
        pydrive.auth = _module("pydrive.auth", GoogleAuth=_placeholder("GoogleAuth"))
        pydrive.drive = _module("pydrive.drive", **{n: _placeholder(n) for n in
                                                    ("GoogleDrive", "GoogleDriveFile", "GoogleDriveFileList")})
    if _missing("pandas"):
        _module("pandas")
    for name, used_by in _LEFT_OUT.items():
        if _missing(name):
            _stand_in(name, used_by)


def load() -> SimpleNamespace:
    """OSWorld's ``SetupController``, ``PythonController`` and getters module."""
    global _loaded
    with _lock:
        if _loaded is None:
            _register()
            setup = importlib.import_module("desktop_env.controllers.setup")
            python = importlib.import_module("desktop_env.controllers.python")
            getters = importlib.import_module("desktop_env.evaluators.getters")
            _loaded = SimpleNamespace(SetupController=setup.SetupController,
                                      PythonController=python.PythonController, getters=getters)
        return _loaded


def _which_module() -> dict[str, str]:
    """Metric name -> the module of ``desktop_env.evaluators.metrics`` that defines it,
    read from the package's ``__init__`` without running it."""
    global _metric_modules
    if _metric_modules is None:
        tree = ast.parse((_metrics_dir() / "__init__.py").read_text())
        found: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                for alias in node.names:
                    found[alias.asname or alias.name] = node.module
        _metric_modules = found
    return _metric_modules


def metric(name: str) -> Callable[..., Any]:
    """OSWorld's metric function ``name``, its module imported now (and only it)."""
    load()
    module = _which_module().get(name)
    if module is None:
        raise _newer(f"metric {name!r}")
    try:
        found = importlib.import_module(f"{_METRICS}.{module}")
    except ImportError as exc:
        raise GraderUnavailable(f"the metric {name!r} needs {exc.name or exc} (its module {module}.py imports it), "
                                f"which deskbox[osworld] installs: {_EXTRA_ADVICE}") from exc
    return getattr(found, name)


def _imports(path: Path) -> set[str]:
    """The top-level names of every absolute import in ``path``, those inside functions
    (imported when the function runs) included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def check() -> dict[str, str | None]:
    """Every module of OSWorld's metrics and getters, loaded the way a run loads them:
    ``metrics/<name>`` or ``getters/<name>`` -> None when it imports and every module it
    imports (at its top or inside a function) is installed, else what is missing. The
    modules ``_LEFT_OUT`` stands in for count as installed: their metrics say so when
    they run."""
    load()
    results: dict[str, str | None] = {}
    folder = _metrics_dir().parent
    for kind in ("metrics", "getters"):
        for path in sorted((folder / kind).glob("*.py")):
            if path.name == "__init__.py":
                continue
            key = f"{kind}/{path.stem}"
            try:
                importlib.import_module(f"desktop_env.evaluators.{kind}.{path.stem}")
            except Exception as exc:  # the module's own failure, whatever it is, is the answer
                results[key] = f"{type(exc).__name__}: {exc}"
                continue
            missing = sorted(n for n in _imports(path) if n != "desktop_env" and not importable(n))
            results[key] = f"imports {', '.join(missing)}, not installed" if missing else None
    return results


def getter(kind: str) -> Callable[..., Any]:
    """OSWorld's getter ``get_<kind>``."""
    getters = load().getters
    found = getattr(getters, f"get_{kind}", None)
    if found is None:
        raise _newer(f"getter get_{kind}")
    return found
