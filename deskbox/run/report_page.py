"""The parts of ``report.html`` that are pure functions of a run's data: what an action
draws on the screenshot it was aimed at (read from its pyautogui code or computer_13
dict), a task's timeline, the charts (inline SVG), and the page's style and script. The
page takes nothing from elsewhere (no CDN, no chart library): it works offline and
wherever the run's folder is copied."""

from __future__ import annotations

import ast
import datetime
import html
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Mark", "ActionMarks", "read_action", "png_size", "Segment", "timeline", "time_split", "SPLIT_KINDS", "score_chart",
           "time_chart", "e", "seconds", "STYLE", "SCRIPT", "STAMP"]


def e(value: object) -> str:
    """``value`` as HTML text (or an attribute's value): a run's records are untrusted."""
    return html.escape("" if value is None else str(value))


def seconds(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


# -- what an action draws -----------------------------------------------------------------


@dataclass(frozen=True)
class Mark:
    """A point an action acts at, in the coordinates the agent gave (the screenshot's
    pixels, as OSWorld's agents are prompted)."""

    kind: str  # "click", "double click", "move", "drag to", "scroll" ...
    x: float
    y: float


@dataclass(frozen=True)
class ActionMarks:
    points: tuple[Mark, ...] = ()
    typed: tuple[str, ...] = ()  # text typed as it is
    keys: tuple[str, ...] = ()  # keys pressed, a chord as "ctrl+c"


# pyautogui's pointer functions: what each is called here, and where its x is among the
# positional arguments (scroll's first is the amount).
_POINTER = {"click": ("click", 0), "leftClick": ("click", 0), "doubleClick": ("double click", 0),
            "tripleClick": ("triple click", 0), "rightClick": ("right click", 0),
            "middleClick": ("middle click", 0), "moveTo": ("move", 0), "dragTo": ("drag to", 0),
            "mouseDown": ("mouse down", 0), "mouseUp": ("mouse up", 0), "scroll": ("scroll", 1),
            "hscroll": ("scroll", 1), "vscroll": ("scroll", 1)}
_COMPUTER_13 = {"CLICK": "click", "DOUBLE_CLICK": "double click", "RIGHT_CLICK": "right click", "MOVE_TO": "move",
                "DRAG_TO": "drag to"}


def read_action(action: Any) -> ActionMarks:
    """What ``action`` does that can be drawn on its screenshot: the points it clicks
    (moves, drags, scrolls) at, the text it types and the keys it presses. ``action``
    is a pyautogui code string (each call of ``pyautogui``, or of the name it is
    imported as, with literal arguments), ``{"command": code}``, or a computer_13 dict;
    anything else (``DONE``, code that does not parse) draws nothing."""
    if isinstance(action, dict) and isinstance(action.get("command"), str):
        return _from_code(action["command"])
    if isinstance(action, dict) and "action_type" in action:
        return _from_computer_13(action)
    if isinstance(action, str):
        return _from_code(action)
    return ActionMarks()


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _from_code(code: str) -> ActionMarks:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return ActionMarks()
    names = {"pyautogui"} | {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                             for alias in node.names if alias.name == "pyautogui"}
    calls = sorted((node for node in ast.walk(tree) if isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in names), key=lambda n: (n.lineno, n.col_offset))
    points: list[Mark] = []
    typed: list[str] = []
    keys: list[str] = []
    for call in calls:
        name = call.func.attr  # type: ignore[attr-defined]
        args = [_literal(a) for a in call.args]
        kwargs = {k.arg: _literal(k.value) for k in call.keywords if k.arg}
        if name in _POINTER:
            kind, at = _POINTER[name]
            x, y = (args[at:at + 2] + [None, None])[:2]
            if isinstance(x, (tuple, list)) and len(x) == 2:  # click((x, y))
                x, y = x
            x, y = kwargs.get("x", x), kwargs.get("y", y)
            if _number(x) and _number(y):
                points.append(Mark(kind, float(x), float(y)))
        elif name in ("typewrite", "write"):
            text = args[0] if args else kwargs.get("message")
            if isinstance(text, str):
                typed.append(text)
            elif isinstance(text, (list, tuple)):  # typewrite(['a', 'enter']): keys, one after another
                keys += [str(k) for k in text]
        elif name in ("press", "keyDown", "keyUp"):
            key = args[0] if args else kwargs.get("keys", kwargs.get("key"))
            keys += [str(k) for k in key] if isinstance(key, (list, tuple)) else [str(key)] if key else []
        elif name == "hotkey" and args:
            keys.append("+".join(str(k) for k in args))
    return ActionMarks(tuple(points), tuple(typed), tuple(keys))


def _from_computer_13(action: dict) -> ActionMarks:
    kind = str(action.get("action_type"))
    # (as desktop-env's controller reads it: under "parameters", or beside action_type)
    params = action.get("parameters")
    if not isinstance(params, dict):
        params = {k: v for k, v in action.items() if k != "action_type"}
    if kind in _COMPUTER_13 and _number(params.get("x")) and _number(params.get("y")):
        return ActionMarks(points=(Mark(_COMPUTER_13[kind], float(params["x"]), float(params["y"])),))
    if kind == "TYPING" and isinstance(params.get("text"), str):
        return ActionMarks(typed=(params["text"],))
    if kind in ("PRESS", "KEY_DOWN", "KEY_UP") and params.get("key"):
        return ActionMarks(keys=(str(params["key"]),))
    if kind == "HOTKEY" and isinstance(params.get("keys"), list):
        return ActionMarks(keys=("+".join(str(k) for k in params["keys"]),))
    return ActionMarks()


def png_size(path: Path) -> tuple[int, int] | None:
    """A PNG's width and height from its header, None for a file that is not one."""
    try:
        with open(path, "rb") as f:
            head = f.read(24)
    except OSError:
        return None
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", head[16:24])
    return (width, height) if width and height else None


# -- where a task's time went -------------------------------------------------------------

# OSWorld's layout's action_timestamp (deskbox.run.layout.TIMESTAMP).
STAMP = "%Y%m%d@%H%M%S%f"


@dataclass(frozen=True)
class Segment:
    kind: str  # reset, setup, agent, action, pause, observe, grading, other
    label: str
    seconds: float
    step: int | None = None  # the action's number (from 1), for the parts of one


def _gaps(stamps: list[Any], steps: list[dict], pause: float) -> list[float | None]:
    """The agent's time before each action but the first: the time between two actions'
    ends (OSWorld's layout stamps each after its observation) that neither the action,
    the pause nor the observation took. The first action's is not known this way."""
    try:
        times = [datetime.datetime.strptime(s, STAMP) for s in stamps]
    except (TypeError, ValueError):
        return [None] * len(steps)
    gaps: list[float | None] = [None]
    for before, now, step in zip(times, times[1:], steps[1:]):
        between = (now - before).total_seconds() - step["action_s"] - pause - step["observe_s"]
        gaps.append(max(0.0, between))
    return gaps


def timeline(record: dict, *, stamps: list[Any] | None = None, pause: float = 0.0) -> list[Segment]:
    """A task's time in order: reset, setup, each action's agent, action, pause and
    observation, grading, and what is left of ``total_s`` (the runner's own: the trace
    copied out, the files written). ``stamps`` are the actions' timestamps from OSWorld's
    layout (``traj.jsonl``), from which the agent's time before each action is known;
    the runner records the agent's time as one sum (``agent_s``), so without them, and
    for the first action, the agent's part is what that sum leaves."""
    timings = record.get("timings") or {}
    steps = [s for s in record.get("step_timings") or [] if isinstance(s, dict)]
    gaps = _gaps(stamps, steps, pause) if stamps and len(stamps) == len(steps) else [None] * len(steps)
    out = [Segment(k, label, float(timings[key])) for k, key, label in
           (("reset", "reset_s", "reset"), ("setup", "setup_s", "setup")) if timings.get(key) is not None]
    if timings.get("agent_s") is not None:
        environment = sum(s["action_s"] + pause + s["observe_s"] for s in steps)
        rest = max(0.0, float(timings["agent_s"]) - environment - sum(g for g in gaps if g is not None))
        if any(g is not None for g in gaps):
            label = "the agent: step 1" + ("" if record.get("status") == "done" else " and its last, unfinished step")
        else:
            label = "the agent, all its steps (each step's time is not recorded)"
        out.append(Segment("agent", label, rest, 1 if steps and any(g is not None for g in gaps) else None))
        for n, (step, gap) in enumerate(zip(steps, gaps), start=1):
            if gap is not None:
                out.append(Segment("agent", f"the agent before action {n}", gap, n))
            out.append(Segment("action", f"action {n}", float(step["action_s"]), n))
            if pause:
                out.append(Segment("pause", f"the pause after action {n}", pause, n))
            out.append(Segment("observe", f"the observation after action {n}", float(step["observe_s"]), n))
    if timings.get("grading_s") is not None:
        ready = timings.get("apps_ready_s")
        label = "grading" + (f" (of it {seconds(ready)} s waiting for the apps it reads)" if ready else "")
        out.append(Segment("grading", label, float(timings["grading_s"])))
    if timings.get("total_s") is not None:
        left = float(timings["total_s"]) - sum(s.seconds for s in out)
        if left > 0.0005 and record.get("status") == "setup_error" and timings.get("setup_s") is None:
            # (a setup that failed has no setup_s: its time is in what total_s leaves)
            out.append(Segment("setup", "the setup, until it failed (and the runner's own)", left))
        elif left > 0.0005:
            out.append(Segment("other", "the runner's own (the episode started, the trace copied out, files written)",
                               left))
    return out


# What the chart of the run's time sums each segment as.
_SPLIT = {"reset": "reset", "setup": "setup", "agent": "agent", "action": "environment", "pause": "environment",
          "observe": "environment", "grading": "grading", "other": "other"}
SPLIT_KINDS = ("reset", "setup", "agent", "environment", "grading", "other")


def time_split(segments: list[Segment]) -> dict[str, float]:
    """A timeline summed as the run's chart shows it: the environment's time is its
    actions, pauses and observations."""
    split = dict.fromkeys(SPLIT_KINDS, 0.0)
    for s in segments:
        split[_SPLIT[s.kind]] += s.seconds
    return split


# -- charts -------------------------------------------------------------------------------

_ROW, _LABEL, _WIDTH = 24, 150, 420


def score_chart(domains: dict[str, dict]) -> str:
    """A bar per domain (``summary()``'s): its mean over every task, an error counting 0."""
    rows = []
    for i, (name, d) in enumerate(sorted(domains.items())):
        y, mean = i * _ROW, d.get("mean_all") or 0.0
        rows.append(f'<g class="row" data-domain="{e(name)}"><text x="0" y="{y + 16}">{e(name)}</text>'
                    f'<rect class="track" x="{_LABEL}" y="{y + 4}" width="{_WIDTH}" height="16"/>'
                    f'<rect class="bar" x="{_LABEL}" y="{y + 4}" width="{mean * _WIDTH:.1f}" height="16">'
                    f'<title>{e(name)}: {e(d.get("mean_all"))} over {d["tasks"]} tasks</title></rect>'
                    f'<text x="{_LABEL + _WIDTH + 6}" y="{y + 16}">{e(d.get("mean_all"))} '
                    f'({d["graded"]}/{d["tasks"]} graded)</text></g>')
    height = max(1, len(rows)) * _ROW
    return (f'<svg class="chart scores" role="img" aria-label="mean score by domain" width="{_LABEL + _WIDTH + 160}" '
            f'height="{height}" viewBox="0 0 {_LABEL + _WIDTH + 160} {height}">' + "".join(rows) + "</svg>")


def time_chart(rows: list[tuple[str, dict[str, float]]]) -> str:
    """A stacked bar per row (a domain, and all): its tasks' time summed by kind, the
    longest row as wide as the chart; a legend below."""
    longest = max((sum(split.values()) for _, split in rows), default=0.0) or 1.0
    body = []
    for i, (name, split) in enumerate(rows):
        y, x = i * _ROW, float(_LABEL)
        bars = []
        for kind in SPLIT_KINDS:
            width = split.get(kind, 0.0) / longest * _WIDTH
            bars.append(f'<rect class="seg {kind}" data-kind="{kind}" data-seconds="{split.get(kind, 0.0):.3f}" '
                        f'x="{x:.1f}" y="{y + 4}" width="{width:.1f}" height="16">'
                        f'<title>{e(name)}, {kind}: {seconds(split.get(kind, 0.0))} s</title></rect>')
            x += width
        body.append(f'<g class="row" data-row="{e(name)}"><text x="0" y="{y + 16}">{e(name)}</text>{"".join(bars)}'
                    f'<text x="{x + 6:.1f}" y="{y + 16}">{seconds(sum(split.values()))} s</text></g>')
    y = len(rows) * _ROW + 8
    legend = "".join(f'<rect class="{kind}" x="{_LABEL + i * 105}" y="{y}" width="12" height="12"/>'
                     f'<text x="{_LABEL + i * 105 + 16}" y="{y + 11}">{kind}</text>' for i, kind in enumerate(SPLIT_KINDS))
    height = y + 20
    return (f'<svg class="chart time" role="img" aria-label="where the time went, by domain" '
            f'width="{_LABEL + _WIDTH + 160}" height="{height}" viewBox="0 0 {_LABEL + _WIDTH + 160} {height}">'
            + "".join(body) + legend + "</svg>")


# -- the page's style and script ----------------------------------------------------------

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.done { color: #176317; } .infra_error, .setup_error, .grader_error, .agent_error { color: #a3141e; }
details.task { margin: 0.4em 0; border: 1px solid #ddd; padding: 0.3em 0.6em; }
summary { cursor: pointer; }
code, pre { background: #f6f6f6; } pre { padding: 0.4em; white-space: pre-wrap; overflow-wrap: anywhere; }
.better { background: #e4f6e4; } .worse { background: #fbe4e4; }
.filters { position: sticky; top: 0; background: #fff; padding: 0.4em 0; border-bottom: 1px solid #ddd; }
.filters label { margin-right: 1em; }
svg.chart text { font-size: 12px; fill: #222; } svg.chart .track { fill: #eee; } svg.chart .bar { fill: #4a7ebb; }
.reset { fill: #8da0cb; background: #8da0cb; } .setup { fill: #66c2a5; background: #66c2a5; }
.agent { fill: #fc8d62; background: #fc8d62; } .environment, .action { fill: #e78ac3; background: #e78ac3; }
.pause { background: #ffd92f; } .observe { background: #a6d854; }
.grading { fill: #e5c494; background: #e5c494; } .other { fill: #b3b3b3; background: #b3b3b3; }
.timeline { display: flex; width: 100%; max-width: 60em; height: 1.2em; border: 1px solid #aaa; margin: 0.3em 0; }
.timeline span { display: block; height: 100%; min-width: 0; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; margin-right: 0.4em; }
table.phases td[data-seconds], table.phases th:last-child, table.phases td:last-child { text-align: right;
  font-variant-numeric: tabular-nums; }
table.phases { font-size: 12px; }
ol.steps { padding-left: 1.5em; }
li.step { margin: 0.6em 0; }
.response pre { max-height: 16em; overflow: auto; border-left: 3px solid #fc8d62; }
.act { display: flex; gap: 1em; align-items: flex-start; margin: 0.4em 0; }
figure.shot { margin: 0; width: 480px; flex: none; }
/* The marks are placed in the frame's box, which is the image's alone (no border, no caption). */
figure.shot .frame { position: relative; line-height: 0; }
figure.shot img { width: 100%; outline: 1px solid #aaa; }
.mark { position: absolute; width: 18px; height: 18px; margin: -9px 0 0 -9px; border: 3px solid #e0115f;
        border-radius: 50%; box-sizing: border-box; box-shadow: 0 0 0 2px #fff; pointer-events: none; }
.mark.drag-to, .mark.move { border-style: dashed; }
.typed, .keys { font-weight: 600; } .typed q { background: #fff3c4; white-space: pre-wrap; }
.note { color: #666; font-style: italic; }
"""

# Filters: a task is shown when it is of the domain and the status chosen ("" is any).
SCRIPT = """
(() => {
  const tasks = Array.from(document.querySelectorAll('details.task'));
  const domain = document.getElementById('filter-domain'), status = document.getElementById('filter-status');
  const count = document.getElementById('filter-count');
  function apply() {
    let shown = 0;
    for (const t of tasks) {
      const ok = (!domain.value || t.dataset.domain === domain.value) && (!status.value || t.dataset.status === status.value);
      t.hidden = !ok;
      shown += ok ? 1 : 0;
    }
    count.textContent = shown + ' of ' + tasks.length + ' tasks shown';
  }
  domain.addEventListener('change', apply);
  status.addEventListener('change', apply);
  apply();
})();
"""
