"""``deskbox run report DIR [OTHER]``: one HTML page for a run (scores by domain, and
each task with its instruction, actions, screenshots and grader's word), or for two runs
their differences task by task. The page is written into DIR (``report.html``) and
links the screenshots where they lie, so the folder can be copied or served as it is."""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

from .runner import read_results, summary

__all__ = ["write_report"]

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.done { color: #176317; } .infra_error, .setup_error, .grader_error, .agent_error { color: #a3141e; }
details { margin: 0.4em 0; border: 1px solid #ddd; padding: 0.3em 0.6em; }
summary { cursor: pointer; }
.shots { display: flex; flex-wrap: wrap; gap: 0.5em; }
.shots figure { margin: 0; } .shots img { width: 320px; border: 1px solid #aaa; }
code, pre { background: #f6f6f6; } pre { padding: 0.4em; white-space: pre-wrap; }
.better { background: #e4f6e4; } .worse { background: #fbe4e4; }
"""


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _domains(records: list[dict]) -> str:
    s = summary(records)
    rows = "".join(
        f"<tr><td>{_e(d)}</td><td>{v['tasks']}</td><td>{v['graded']}</td><td>{_e(v['mean_all'])}</td>"
        f"<td>{_e(v['mean_graded'])}</td>"
        f"<td>{v['infra_error']}</td><td>{v['setup_error']}</td><td>{v['agent_error']}</td>"
        f"<td>{v['grader_error']}</td></tr>"
        for d, v in sorted(s["domains"].items()))
    t = s["total"]
    return ("<table><tr><th>domain</th><th>tasks</th><th>graded</th><th>mean, every task (an error is 0)</th>"
            "<th>mean, graded tasks</th><th>infra errors</th>"
            "<th>setup errors</th><th>agent errors</th><th>grader errors</th></tr>" + rows +
            f"<tr><th>all</th><th>{t['tasks']}</th><th>{t['graded']}</th><th>{_e(t['mean_all'])}</th>"
            f"<th>{_e(t['mean_graded'])}</th>"
            "<th></th><th></th><th></th><th></th></tr></table>")


def _task(out: Path, page_dir: Path, r: dict) -> str:
    folder = out / "tasks" / r["domain"] / r["id"]
    shots = sorted(folder.glob("step_*.png")) if folder.is_dir() else []
    figures = "".join(
        f'<figure><a href="{_e(os.path.relpath(p, page_dir))}"><img src="{_e(os.path.relpath(p, page_dir))}" '
        f'alt="{_e(r["task"])}: {"before the first action" if i == 0 else f"after action {i}"}"></a>'
        f"<figcaption>{'before' if i == 0 else f'after action {i}'}</figcaption></figure>"
        for i, p in enumerate(shots))
    actions = "".join(f"<li><code>{_e(a if isinstance(a, str) else json.dumps(a))}</code></li>" for a in r["actions"])
    return (f'<details id="{_e(r["task"])}"><summary><b>{_e(r["task"])}</b> · '
            f'<span class="{_e(r["status"])}">{_e(r["status"])}</span> · score {_e(r["score"])} · '
            f'{r["steps"]} steps</summary>'
            f"<p>{_e(r['instruction'])}</p>"
            f"<p>session {_e(r.get('session'))}, attempts {_e(r.get('attempts'))}, timings "
            f"<code>{_e(json.dumps(r.get('timings', {})))}</code></p>"
            + (f"<pre>{_e(r['error'])}</pre>" if r.get("error") else "")
            + (f"<p>infrastructure retries:</p><pre>{_e(chr(10).join(r['infra_errors']))}</pre>"
               if r.get("infra_errors") else "")
            + (f"<p>trace: {_e(r['trace'].get('steps'))} steps, <code>deskbox trace view "
               f"{_e(r['trace']['folder'])}</code></p>" if (r.get("trace") or {}).get("folder") else "")
            + f"<ol>{actions}</ol><div class='shots'>{figures}</div></details>")


def _compare(a: dict[str, dict], b: dict[str, dict], names: tuple[str, str]) -> str:
    rows = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key, {}), b.get(key, {})
        sx, sy = x.get("score"), y.get("score")
        if sx == sy and x.get("status") == y.get("status"):
            continue
        cls = ("better" if (sy or 0) > (sx or 0) else "worse") if sx is not None and sy is not None else ""
        rows.append(f"<tr class='{cls}'><td>{_e(key)}</td><td>{_e(x.get('status'))} {_e(sx)}</td>"
                    f"<td>{_e(y.get('status'))} {_e(sy)}</td></tr>")
    if not rows:
        return "<p>The two runs scored every task alike.</p>"
    return (f"<table><tr><th>task</th><th>{_e(names[0])}</th><th>{_e(names[1])}</th></tr>" + "".join(rows)
            + "</table>")


def write_report(out: Path, other: Path | None = None) -> Path:
    """Writes ``out/report.html`` (comparing with ``other`` when given) and returns it."""
    out = Path(out)
    records = list(read_results(out).values())
    if not records:
        raise FileNotFoundError(f"{out}: no results.jsonl with tasks in it")
    parts = [f"<h1>deskbox run: {_e(out.name)}</h1>", "<h2>Scores by domain</h2>", _domains(records)]
    if other is not None:
        theirs = read_results(Path(other))
        parts += [f"<h2>Differences from {_e(Path(other).name)}</h2>",
                  _compare(theirs, read_results(out), (Path(other).name, out.name))]
    parts.append("<h2>Tasks</h2>")
    parts += [_task(out, out, r) for r in sorted(records, key=lambda r: r["task"])]
    page = out / "report.html"
    page.write_text("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
                    f"<title>deskbox run {_e(out.name)}</title><style>{_STYLE}</style></head><body>"
                    + "".join(parts) + "</body></html>")
    return page
