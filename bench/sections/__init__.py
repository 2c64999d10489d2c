"""One section of docs/measurements.md per bench: each renderer takes that bench's
results (its ``<name>.json``) and answers Markdown lines, with plots where it draws
them (bench.charts). The page around them is bench.measurements'."""

from bench.sections.agents import _toolset, _trace, _view
from bench.sections.desktop import _bridge, _container, _desktopd, _idle, _reset, _sandbox, _scene, _soak
from bench.sections.format import NOISE, _table
from bench.sections.osworld import _accessibility, _apps, _execute, _fleet, _full_read, _noop, _osworld, _run, _vscode

__all__ = [
    "NOISE", "_accessibility", "_apps", "_bridge", "_container", "_desktopd", "_execute", "_fleet",
    "_full_read", "_idle", "_noop", "_osworld", "_reset", "_run", "_sandbox", "_scene", "_soak", "_table", "_toolset", "_trace",
    "_view", "_vscode"
]
