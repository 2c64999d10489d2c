"""``deskbox run report DIR [OTHER]``: one HTML page for a run, or for two runs their
differences task by task. The page is written into DIR (``report.html``) and links the
screenshots where they lie, so the folder can be copied or served as it is; it loads
nothing else (its style, script and charts are inline).

What it shows: scores by domain (a table and a chart), where the run's time went (by
domain: reset, setup, the agent, the environment's actions and observations, grading),
filters by domain and status, and each task with its instruction, its timeline, each of
the agent's steps with its response beside its actions, the screenshot each action was
aimed at with the action drawn on it (the point clicked, the text typed), and its
grading. Where each part is read from in the run's folder:

- ``results.jsonl``: the task's status, score, actions, timings and step timings;
- ``tasks/<domain>/<id>/``: the screenshots (``step_NNN.png``, the screen before action
  N+1) and ``steps.json`` (the agent's responses, one per step, and its ``infos``);
- OSWorld's layout beside it (``traj.jsonl``): which step each action came from, and
  when each ended, from which each step's agent time is known;
- ``run.json``: the pause after each action (``sleep_after_action``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

from ..geometry import display_to_declared
from . import stats
from .report_page import (
    SCRIPT,
    SPLIT_KINDS,
    STYLE,
    ActionMarks,
    Segment,
    e,
    png_size,
    read_action,
    score_chart,
    seconds,
    time_chart,
    time_split,
    timeline,
)
from .runner import read_results, record_folder
from .stats import summary
from .tasks import Task

__all__ = ["write_report"]

STATUSES = ("done", "setup_error", "agent_error", "grader_error", "infra_error")


def _domains(records: list[dict]) -> str:
    s = summary(records)
    rows = "".join(
        f"<tr><td>{e(d)}</td><td>{v['tasks']}</td><td>{v['graded']}</td><td>{e(v['mean_all'])}</td>"
        f"<td>{e(v['mean_graded'])}</td>"
        f"<td>{v['infra_error']}</td><td>{v['setup_error']}</td><td>{v['agent_error']}</td>"
        f"<td>{v['grader_error']}</td></tr>"
        for d, v in sorted(s["domains"].items()))
    t = s["total"]
    return ("<table><tr><th>domain</th><th>tasks</th><th>graded</th><th>mean, every task (an error is 0)</th>"
            "<th>mean, graded tasks</th><th>infra errors</th>"
            "<th>setup errors</th><th>agent errors</th><th>grader errors</th></tr>" + rows +
            f"<tr><th>all</th><th>{t['tasks']}</th><th>{t['graded']}</th><th>{e(t['mean_all'])}</th>"
            f"<th>{e(t['mean_graded'])}</th>"
            "<th></th><th></th><th></th><th></th></tr></table>" + score_chart(s["domains"]))


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


class _Trajectories:
    """Each task's ``traj.jsonl`` in OSWorld's layout, found by the task's folder: the
    layout is ``{action_space}/{observation_type}/{model}/{domain}/{id}/`` beside the
    ``tasks/`` folder the task's is in, the model's folder whatever the run named it. Each
    run's (each repeat's) layout is read once."""

    def __init__(self, run: dict) -> None:
        self.base = Path(str(run.get("action_space") or "pyautogui"), str(run.get("observation_type") or "screenshot"))
        self.found: dict[Path, dict[tuple[str, str], list[dict]]] = {}

    def of(self, folder: Path) -> list[dict] | None:
        root = folder.parents[2]  # (folder is root/tasks/<domain>/<id>)
        if root not in self.found:
            self.found[root] = {}
            for path in (root / self.base).glob("**/traj.jsonl"):
                try:
                    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
                except (OSError, ValueError):
                    continue
                self.found[root][(path.parent.parent.name, path.parent.name)] = [x for x in lines if isinstance(x, dict)]
        return self.found[root].get((folder.parent.name, folder.name))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=1, default=repr)


def _steps(record: dict, responses: list, traj: list[dict] | None) -> list[tuple[int | None, list[int]]]:
    """The agent's steps: each its response's index (None: not known) and the indices
    of the actions it gave. ``traj.jsonl`` says which step each action came from; without
    it, a step per action when there are as many responses as actions."""
    actions = record.get("actions") or []
    if traj is not None and len(traj) == len(actions) and all(isinstance(t.get("step_num"), int) for t in traj):
        return [(i, [a for a, t in enumerate(traj) if t["step_num"] == i + 1]) for i in range(len(responses))]
    if len(responses) == len(actions):
        return [(i, [i]) for i in range(len(actions))]
    return [(None, [a]) for a in range(len(actions))]


def _caption(marks: ActionMarks) -> str:
    parts = [f"{m.kind} at ({m.x:g}, {m.y:g})" for m in marks.points]
    parts += [f'<span class="typed">types <q>{e(t)}</q></span>' for t in marks.typed]
    parts += [f'<span class="keys">presses {e(k)}</span>' for k in marks.keys]
    return " · ".join(parts)


def _shot(path: Path, page_dir: Path, alt: str, marks: ActionMarks | None = None, caption: str = "") -> str:
    if not path.is_file():
        return f'<p class="note">(no screenshot: {e(path.name)})</p>'
    link = e(os.path.relpath(path, page_dir))
    size = png_size(path)
    # The marks sit over the image at their share of its natural size: the agent's
    # coordinates are the screenshot's pixels, whatever width the image is shown at.
    def dot(m: Any) -> str:
        # (geometry's screen -> picture transform, the picture taken as 100 x 100: percentages)
        left, top = display_to_declared(size, (100, 100), m.x, m.y)
        return (f'<span class="mark {e(m.kind.replace(" ", "-"))}" data-x="{m.x:g}" data-y="{m.y:g}" '
                f'style="left:{left:.4f}%;top:{top:.4f}%" title="{e(m.kind)} at ({m.x:g}, {m.y:g})"></span>')

    dots = "".join(dot(m) for m in marks.points) if size and marks else ""
    return (f'<figure class="shot"><div class="frame"><a href="{link}"><img src="{link}" loading="lazy" '
            f'alt="{e(alt)}"></a>{dots}</div><figcaption>{caption}</figcaption></figure>')


_COLUMNS = (("agent", "the agent"), ("action", "acting"), ("pause", "pause"), ("observe", "observing"))


def _timeline(record: dict, traj: list[dict] | None, pause: float) -> tuple[str, dict[str, float]]:
    """A task's timeline as a bar (each part as wide as its share of the task's time)
    and a table, a row per phase and per action; and its time summed for the chart."""
    stamps = [t.get("action_timestamp") for t in traj] if traj else None
    segments = timeline(record, stamps=stamps, pause=pause)
    total = sum(s.seconds for s in segments)
    bar = "".join(f'<span class="{s.kind}" data-kind="{s.kind}" data-seconds="{s.seconds:.4f}" '
                  f'style="width:{s.seconds / (total or 1) * 100:.4f}%" title="{e(s.label)}: {seconds(s.seconds)} s">'
                  "</span>" for s in segments)
    columns = [c for c in _COLUMNS if pause or c[0] != "pause"]

    def cell(s: Segment) -> str:
        return f'<td data-kind="{s.kind}" data-seconds="{s.seconds:.4f}">{seconds(s.seconds)}</td>'

    order: list[Segment | int] = []
    by_step: dict[int, dict[str, Segment]] = {}
    for s in segments:
        if s.step is None:
            order.append(s)
        else:
            if s.step not in by_step:
                order.append(s.step)
            by_step.setdefault(s.step, {})[s.kind] = s
    rows = []
    for item in order:
        if isinstance(item, Segment):
            rows.append(f'<tr><td><span class="swatch {item.kind}"></span>{e(item.label)}</td>'
                        + "<td></td>" * len(columns) + cell(item) + "</tr>")
        else:
            parts = by_step[item]
            rows.append(f"<tr><td>action {item}</td>"
                        + "".join(cell(parts[kind]) if kind in parts else "<td></td>" for kind, _ in columns)
                        + f"<td>{seconds(sum(p.seconds for p in parts.values()))}</td></tr>")
    head = "".join(f'<th><span class="swatch {kind}"></span>{name}</th>' for kind, name in columns)
    table = (f'<table class="phases"><tr><th>part</th>{head}<th>seconds</th></tr>{"".join(rows)}'
             f'<tr><th>total</th>{"<th></th>" * len(columns)}<th>{seconds(total)}</th></tr></table>')
    return f'<div class="timeline">{bar}</div>{table}', time_split(segments)


def _steps_html(folder: Path, page_dir: Path, r: dict, traj: list[dict] | None) -> str:
    """The agent's steps in order: each with its response, then each of its actions with
    the screenshot it was aimed at (the action drawn on it); then the screen at the end."""
    steps_file = _json(folder / "steps.json")
    steps_file = steps_file if isinstance(steps_file, dict) else {}
    responses, infos = steps_file.get("responses") or [], steps_file.get("infos") or []
    actions = r.get("actions") or []
    timings = [t for t in r.get("step_timings") or [] if isinstance(t, dict)]
    items = []
    steps = _steps(r, responses, traj)
    if any(said is None for said, _ in steps) and responses:
        items.append('<li class="step"><div class="response"><b>the agent said (not matched to its actions):</b>'
                     + "".join(f"<pre>{e(_text(x))}</pre>" for x in responses) + "</div></li>")
    for n, (said, acts) in enumerate(steps, start=1):
        parts = []
        if said is not None:
            info = infos[said] if said < len(infos) else None
            parts.append(f'<div class="response"><b>step {n}, the agent said:</b><pre>{e(_text(responses[said]))}</pre>'
                         + (f"<p>its info:</p><pre>{e(_text(info))}</pre>" if info is not None else "") + "</div>")
        for a in acts:
            marks = read_action(actions[a])
            took = timings[a] if a < len(timings) else {}
            spent = " · ".join(f"{what} {seconds(took[key])} s" for key, what in
                               (("action_s", "action"), ("observe_s", "observation")) if key in took)
            parts.append(f'<div class="act" data-action="{a + 1}">'
                         + _shot(folder / f"step_{a:03d}.png", page_dir, f"{r['task']}: the screen before action {a + 1}",
                                 marks, f"before action {a + 1}")
                         + f"<div><code>{e(_text(actions[a]))}</code><p>{_caption(marks)}</p>"
                         f'<p class="note">{spent}</p></div></div>')
        if not acts:
            parts.append('<p class="note">(no action)</p>')
        items.append(f'<li class="step">{"".join(parts)}</li>')
    last = _shot(folder / f"step_{len(actions):03d}.png", page_dir, f"{r['task']}: the screen after the last action",
                 caption="after the last action") if actions else ""
    return f"<ol class='steps'>{''.join(items)}</ol>{last}"


def _grading(r: dict, config: dict | None) -> str:
    """The grader's inputs: per metric what its getters answered (``graded`` in the record,
    cut) and its score, and the task's evaluator config (the run keeps each task's config
    as ``task.json`` in its folder)."""
    actions = r.get("actions") or []
    rows = "".join(
        f"<tr><td><code>{e(g.get('metric'))}</code></td><td><pre>{e(g.get('result'))}</pre></td>"
        f"<td><pre>{e(g.get('expected', ''))}</pre></td><td>{e(g.get('score'))}</td></tr>"
        for g in r.get("graded") or [] if isinstance(g, dict))
    read = ("<table class='graded'><tr><th>metric</th><th>what the session gave</th><th>expected</th>"
            f"<th>score</th></tr>{rows}</table>") if rows else ""
    evaluator = (f"<pre class='evaluator'>{e(json.dumps(config.get('evaluator'), indent=1))}</pre>"
                 if config else "<p class='note'>The task's config is not in its folder (a run made before "
                                "deskbox kept it there).</p>")
    return (f"<p>status <span class='{e(r['status'])}'>{e(r['status'])}</span>, score {e(r['score'])}"
            + (f", last action <code>{e(_text(actions[-1]))}</code>" if actions else "") + "</p>" + read + evaluator)


def _task(folder: Path, page_dir: Path, r: dict, traj: list[dict] | None, pause: float,
          config: dict | None) -> tuple[str, dict[str, float]]:
    """A task's part of the page, closed until it is opened; and its time summed by kind."""
    line, split = _timeline(r, traj, pause)
    total = (r.get("timings") or {}).get("total_s")
    body = (f'<details class="task" id="{e(r["task"])}" data-domain="{e(r["domain"])}" data-status="{e(r["status"])}">'
            f'<summary><b>{e(r["task"])}</b> · <span class="{e(r["status"])}">{e(r["status"])}</span> · '
            f'score {e(r["score"])} · {e(r.get("steps"))} steps'
            + (f" · {seconds(total)} s" if total is not None else "") + "</summary>"
            f"<p class='instruction'>{e(r.get('instruction'))}</p>"
            f"<p>session {e(r.get('session'))}, attempts {e(r.get('attempts'))}</p>"
            + (f"<pre>{e(r['error'])}</pre>" if r.get("error") else "")
            + (f"<p>infrastructure retries:</p><pre>{e(chr(10).join(r['infra_errors']))}</pre>"
               if r.get("infra_errors") else "")
            + (f"<p>trace: {e(r['trace'].get('steps'))} steps, <code>deskbox trace view "
               f"{e(r['trace']['folder'])}</code></p>" if (r.get("trace") or {}).get("folder") else "")
            + f"<h4>Timeline</h4>{line}<h4>Steps</h4>{_steps_html(folder, page_dir, r, traj)}"
            f"<h4>Grading</h4>{_grading(r, config)}</details>")
    return body, split


def _filters(records: list[dict]) -> str:
    def options(values: list[str], counts: dict[str, int]) -> str:
        return "".join(f'<option value="{e(v)}">{e(v)} ({counts.get(v, 0)})</option>' for v in values)

    domains = sorted({r["domain"] for r in records})
    by_domain = {d: sum(r["domain"] == d for r in records) for d in domains}
    by_status = {s: sum(r["status"] == s for r in records) for s in STATUSES}
    return ('<div class="filters"><label>domain <select id="filter-domain"><option value="">any</option>'
            + options(domains, by_domain) + '</select></label><label>status <select id="filter-status">'
            '<option value="">any</option>' + options(list(STATUSES), by_status)
            + '</select></label><span id="filter-count"></span></div>')


def _compare(a: dict[str, dict], b: dict[str, dict], names: tuple[str, str]) -> str:
    rows = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key, {}), b.get(key, {})
        sx, sy = x.get("score"), y.get("score")
        if sx == sy and x.get("status") == y.get("status"):
            continue
        cls = ("better" if (sy or 0) > (sx or 0) else "worse") if sx is not None and sy is not None else ""
        rows.append(f"<tr class='{cls}'><td>{e(key)}</td><td>{e(x.get('status'))} {e(sx)}</td>"
                    f"<td>{e(y.get('status'))} {e(sy)}</td></tr>")
    if not rows:
        return "<p>The two runs scored every task alike.</p>"
    return (f"<table><tr><th>task</th><th>{e(names[0])}</th><th>{e(names[1])}</th></tr>" + "".join(rows)
            + "</table>")


def _paired(theirs: list[dict], ours: list[dict]) -> str:
    """What ``deskbox run report`` prints of the two runs (:func:`deskbox.run.stats.paired`)."""
    p = stats.paired(theirs, ours)
    interval = " to ".join(e(v) for v in p["interval95"]) if p["interval95"] else "n/a"
    return (f"<p class='paired'>On the {p['tasks']} tasks both ran: mean {e(p.get('mean_second'))} against "
            f"{e(p.get('mean_first'))}, a difference of {e(p['difference'])} (95 % interval {interval}); better on "
            f"{p['better']}, worse on {p['worse']}, the same on {p['same']}; only in this run {p['only_second']}, "
            f"only in the other {p['only_first']}.</p>")


def write_report(out: Path, other: Path | None = None, *, tasks: Iterable[Task] | None = None) -> Path:
    """Writes ``out/report.html`` (comparing with ``other`` when given) and returns it.
    ``tasks``, the run's task configs, adds each task's evaluator config to its grading."""
    out = Path(out)
    records = sorted(read_results(out).values(), key=lambda r: r["task"])
    if not records:
        raise FileNotFoundError(f"{out}: no results.jsonl with tasks in it")
    run = _json(out / "run.json")
    run = run if isinstance(run, dict) else {}
    pause = float(run.get("sleep_after_action") or 0.0)
    configs = {t.name: t.config for t in tasks or ()}
    trajectories = _Trajectories(run)

    bodies = []
    by_domain: dict[str, dict[str, float]] = {}
    for r in records:
        folder = record_folder(out, r)
        config = configs.get(f"{r['domain']}/{r['id']}") or _json(folder / "task.json")
        body, split = _task(folder, out, r, trajectories.of(folder), pause, config if isinstance(config, dict) else None)
        bodies.append(body)
        into = by_domain.setdefault(r["domain"], dict.fromkeys(SPLIT_KINDS, 0.0))
        for kind, spent in split.items():
            into[kind] += spent
    everything = {kind: sum(d[kind] for d in by_domain.values()) for kind in SPLIT_KINDS}

    parts = [f"<h1>deskbox run: {e(out.name)}</h1>", "<h2>Scores by domain</h2>", _domains(records),
             "<h2>Where the time went</h2>",
             "<p class='note'>Summed over the tasks: the agent's time is its own (its predictions); the "
             "environment's, its actions carried out, the pauses after them and the observations.</p>",
             time_chart(sorted(by_domain.items()) + [("all", everything)])]
    if other is not None:
        theirs = read_results(Path(other))
        parts += [f"<h2>Differences from {e(Path(other).name)}</h2>", _paired(list(theirs.values()), records),
                  _compare(theirs, read_results(out), (Path(other).name, out.name))]
    parts += ["<h2>Tasks</h2>", _filters(records), *bodies]
    page = out / "report.html"
    page.write_text("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
                    f"<title>deskbox run {e(out.name)}</title><style>{STYLE}</style></head><body>"
                    + "".join(parts) + f"<script>{SCRIPT}</script></body></html>")
    return page
