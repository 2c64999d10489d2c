"""docs/measurements.md and its plots, made from what the benches left in bench/results/.

``python -m bench.measurements [--results DIR] [--out FILE] [--plots DIR]`` (the last
step of ``make bench``) reads each bench's ``<name>.json`` and writes one section per
bench: its figures when the file is there, and when it is not, "not measured in this
run" with the command that measures it. Plots are SVG written here (no plotting
package): median and p95 bars for every timed row, and time against page size where a
bench measured several sizes. Every plot in the plots folder is written again; one
this run did not write is removed, so no plot outlives its figures.

The page's last section, from the marker line on, is hand-recorded (figures from runs
whose results are not here): it is kept as it is, so edit it in docs/measurements.md.

Same files in, same page out: nothing here reads a clock or draws at random; the only
date not in the results is a file's own modification date, said to be one.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bench.charts import Plots
from bench.sections import (
    NOISE,
    _accessibility,
    _apps,
    _bridge,
    _container,
    _desktopd,
    _execute,
    _fleet,
    _full_read,
    _idle,
    _noop,
    _osworld,
    _reset,
    _run,
    _sandbox,
    _scene,
    _soak,
    _table,
    _toolset,
    _trace,
    _view,
    _vscode,
)

__all__ = ["main", "render", "Bench", "BENCHES", "MARKER"]

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
OUT = ROOT / "docs" / "measurements.md"
PLOTS = ROOT / "docs" / "measurements"

MARKER = "<!-- hand-recorded: bench/measurements.py keeps everything below this line as it is -->"
EARLIER_HEADING = "## Earlier measurements (hand-recorded)"

# The goals come from the results (each bench records its own in ``meta``); results
# written before they did are shown without one.

@dataclass(frozen=True)
class Bench:
    """One bench: where its results are, how to run it, and how its section is written."""

    name: str  # bench/results/<name>.json
    title: str
    command: str
    in_make_bench: bool
    render: Callable[[dict, Plots], list[str]]
    earlier: str | None = None  # the heading of its hand-recorded figures, if any


BENCHES = [
    Bench("desktopd", "desktopd: screenshots, clicks, memory, encoders", "python -m bench", True, _desktopd,
          "Earlier: desktopd"),
    Bench("bridge", "CDP bridge: /layout", "python -m bench.bridge", True, _bridge, "Earlier: CDP bridge /layout"),
    Bench("scene", "Scene aggregator: agent-turn latency and prompt size", "python -m bench.scene", True, _scene),
    Bench("container", "Container: image, start, idle memory, density", "python -m bench.container", True,
          _container),
    Bench("reset", "Sessions: reset against recreating the container, memory, density", "python -m bench.reset", True,
          _reset, None),
    Bench("sandbox", "Chromium with its sandbox against --no-sandbox", "python -m bench.sandbox", True, _sandbox,
          None),
    Bench("osworld", "OSWorld task setup", "python -m bench.osworld", True, _osworld, None),
    Bench("accessibility", "OSWorld /accessibility: the scene's AT-SPI reader against the libatspi walk",
          "python -m bench.accessibility", True, _accessibility, None),
    Bench("full_read", "OSWorld /accessibility with Calc: the read that keeps what did not change",
          "python -m bench.full_read", True, _full_read, None),
    Bench("execute", "OSWorld's action: python -c forked warm against started afresh", "python -m bench.execute",
          True, _execute, None),
    Bench("apps", "Apps: LibreOffice Calc beside the browser", "python -m bench.apps", True, _apps,
          "Earlier: apps image and Calc"),
    Bench("toolset", "Observer toolset: observe since a token, act and observe, prompt tokens",
          "python -m bench.toolset", True, _toolset, None),
    Bench("view", "Live view: a change on screen to the viewer's canvas", "python -m bench.view", True, _view, None),
    Bench("trace", "Traces: overhead per action, and replay against the recording", "python -m bench.trace", True,
          _trace, None),
    Bench("run", "Benchmark runs: deskbox run against DesktopEnv", "python -m bench.run", True, _run, None),
    Bench("fleet", "Fleet: sessions at OSWorld's pace", "python -m bench.fleet", True, _fleet, None),
    Bench("vscode", "VS Code against LibreOffice Writer opening the same file", "python -m bench.vscode", True,
          _vscode, None),
    Bench("idle", "An idle session: a blinking caret and nothing else", "python -m bench.idle", True, _idle, None),
    Bench("noop", "A do-nothing agent over OSWorld's task set: its scores, the environment's cost per task",
          "python -m bench.noop --examples DIR", True, _noop, None),
    Bench("soak", "Soak: one session under mixed load", "make soak", False, _soak, "Earlier: soak and chaos"),
]


# -- the page --------------------------------------------------------------------------

def _slug(heading: str) -> str:
    text = re.sub(r"[`*]", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _when(data: dict, path: Path) -> str:
    when = (data.get("meta") or {}).get("when") if isinstance(data.get("meta"), dict) else None
    if when:
        return f"run {when}"
    day = time.strftime("%Y-%m-%d", time.gmtime(path.stat().st_mtime))
    return f"results file written {day} (the results record no date)"


def _kept_tail(out: Path) -> list[str]:
    if out.exists():
        text = out.read_text()
        if MARKER in text:
            rest = text.split(MARKER, 1)[1]
            return [MARKER, *rest.removeprefix("\n").rstrip("\n").splitlines()]
    return [MARKER, "", EARLIER_HEADING, "", "Nothing recorded by hand."]


def render(results: Path, out: Path, plots_dir: Path) -> tuple[str, Plots]:
    """The page's text, with its plots written into ``plots_dir``."""
    plots = Plots(plots_dir, out)
    tail = _kept_tail(out)
    earlier = {line[4:].strip() for line in tail if line.startswith("### ")}
    loaded: dict[str, tuple[dict, Path]] = {}
    for bench in BENCHES:
        path = results / f"{bench.name}.json"
        if path.exists():
            loaded[bench.name] = (json.loads(path.read_text()), path)
    lines = [
        "# Measurements",
        "",
        "<!-- Generated by `python -m bench.measurements` (the last step of `make bench`) from bench/results/*.json. "
        "Edit bench/measurements.py, or the hand-recorded section at the end, not the generated part. -->",
        "",
        "Every figure deskbox reports about itself is on this page, made from the results the benches write "
        "(`make bench`, `make soak`), so that no page quotes a figure that has gone stale: the other pages link "
        "here. A bench with no results in this run says so, with the command that measures it. The benches run on "
        "shared, noisy machines: read a figure against the baseline measured beside it in the same run, and "
        f"treat differences within about {NOISE * 100:.0f} % as noise. Timings are never asserted in tests.",
        "",
    ]
    table = []
    for bench in BENCHES:
        got = loaded.get(bench.name)
        status = _when(*got) if got else "**not measured in this run**"
        cmd = f"`{bench.command}`" + (" (in `make bench`)" if bench.in_make_bench else "")
        table.append([f"[{bench.title}](#{_slug(bench.title)})", cmd, status])
    lines += _table(["bench", "command", "results"], ["l", "l", "l"], table)
    lines.append("")
    for bench in BENCHES:
        lines += [f"## {bench.title}", ""]
        got = loaded.get(bench.name)
        if got:
            data, path = got
            lines += [f"`{bench.command}`, {_when(data, path)}.", ""]
            lines += bench.render(data, plots)
        else:
            lines += [f"**Not measured in this run**: there is no bench/results/{bench.name}.json. "
                      f"`{bench.command}` measures it" + (" (part of `make bench`)." if bench.in_make_bench else "."), ""]
        if bench.earlier and bench.earlier in earlier:
            lines += [f"Figures from earlier runs, recorded by hand: [{bench.earlier}](#{_slug(bench.earlier)}).", ""]
    while lines and lines[-1] == "":
        lines.pop()
    lines += ["", *tail]
    return "\n".join(lines) + "\n", plots


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.measurements", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", type=Path, default=RESULTS, help="where the benches wrote their JSON")
    p.add_argument("--out", type=Path, default=OUT, help="the page to write")
    p.add_argument("--plots", type=Path, default=PLOTS, help="the folder of its SVG plots")
    args = p.parse_args(argv)
    text, plots = render(args.results, args.out, args.plots)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    gone = plots.remove_others()
    print(f"bench.measurements: wrote {args.out} and {len(plots.written)} plots in {args.plots}"
          + (f"; removed {len(gone)} stale plots" if gone else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
