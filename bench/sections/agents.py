"""Sections of what agents and people use beside the scene: the toolset, the live view, traces."""

from __future__ import annotations

from bench.charts import Bar, Plots
from bench.charts import fmt_ms as _ms
from bench.sections.format import _int, _load, _table, _x


def _view(d: dict, plots: Plots) -> list[str]:
    rows = d.get("rows") or []
    out = ["From a click's request (it flips the page's colour) to the new colour: polled in desktopd's screenshot "
           "(the baseline) and watched in the live view's canvas on every animation frame of a headless viewer; "
           f"{(d.get('meta') or {}).get('iterations', '?')} rounds at 1280x800, the same flips.", ""]
    out += _table(["row", "n", "median ms", "p95 ms", "x baseline"], ["l", "r", "r", "r", "r"],
                  [[r.get("row", "?"), _int(r.get("n")), _ms(r.get("median_ms")), _ms(r.get("p95_ms")),
                    "1x" if r.get("x_baseline") is None else f"{r['x_baseline']:.2f}x"] for r in rows])
    return out + [""]


def _trace(d: dict, plots: Plots) -> list[str]:
    meta, replay = d.get("meta") or {}, d.get("replay") or {}
    rows = d.get("rows") or []
    out = [f"One {meta.get('output', '1280x800')} session, Chromium on a form; {meta.get('iterations', '?')} rounds "
           "per row after an untimed one, the rows alternated; the baseline is the same action with no trace.", ""]
    out += _table(["row", "n", "median ms", "p95 ms", "x baseline"], ["l", "r", "r", "r", "r"],
                  [[r.get("row", "?"), _int(r.get("n")), _ms(r.get("median_ms")), _ms(r.get("p95_ms")),
                    "1x" if r.get("x_baseline") is None else f"{r['x_baseline']:.2f}x"] for r in rows])
    if d.get("bytes_per_step") is not None:
        out += ["", f"- A traced step with screenshots adds {d['bytes_per_step']:,} bytes to its folder (median)."]
    if replay:
        ratio = replay.get("ratio")
        out.append(f"- Replay of a {replay.get('steps')}-step demonstration: {replay.get('replay_ms'):,} ms against "
                   f"{replay.get('recorded_ms'):,} ms recorded ({'?' if ratio is None else f'{ratio:.2f}'}x), "
                   f"{replay.get('divergences')} divergences, all steps ok: {replay.get('all_ok')}.")
    return out + [""]


def _toolset(d: dict, plots: Plots) -> list[str]:
    meta, tokens, act = d.get("meta") or {}, d.get("tokens") or {}, d.get("act")
    base = meta.get("baselines") or {}
    out = [f"One {meta.get('output', '1920x1080')} session, Chromium on generated pages; {meta.get('iterations', '?')} "
           "timed rounds per row after an untimed one, the rows alternated. Load average before / after: "
           f"{_load(d.get('load'))}.", "",
           "**observe**: each round a click in a row of the page (it relabels the row's button), then a full "
           f"observe (the baseline: {base.get('observe', '?')}) and `?since=` the token taken before the click, "
           "their order swapped every round; both `mode=agent-turn`, so both build a fresh Scene.", ""]
    rows, bars = [], []
    for r in d.get("observe") or []:
        n = f"{r['elements']:,}"
        for key, label, x, xb in (("full", "full observe (baseline)", "1x", "1x"),
                                  ("since", "observe?since=TOKEN", r.get("x_median"), r.get("x_bytes"))):
            s = r[key]
            rows.append([n, label, _int(s.get("n")), _ms(s.get("median_ms")), _ms(s.get("p95_ms")),
                         _int(s.get("bytes_median")), x if isinstance(x, str) else _x(x),
                         xb if isinstance(xb, str) else _x(xb)])
            bars.append(Bar(f"{n} elements: {label}", s.get("median_ms"), s.get("p95_ms"), s.get("min_ms"),
                            s.get("max_ms")))
    out += _table(["elements", "row", "n", "median ms", "p95 ms", "bytes", "x median", "x bytes"],
                  ["r", "l", "r", "r", "r", "r", "r", "r"], rows)
    out += ["", "- Diffs: " + "; ".join(f"{r['elements']:,} elements, a median of {r.get('diff_entries_median')} "
                                        f"entries, {r.get('empty_diffs')} empty, the relabelled button in "
                                        f"{r.get('relabel_in_diff')} of {r['since'].get('n')}"
                                        for r in d.get("observe") or []) + ".", ""]
    if act:
        out += [f"**act and observe**, {act['elements']:,} elements: from sending the action to having the settled "
                f"change; the baseline: {base.get('act', '?')}.", ""]
        a, b = act["act_and_observe"], act["naive"]
        out += _table(["row", "n", "median ms", "p95 ms", "x median", "x p95", "change seen"],
                      ["l", "r", "r", "r", "r", "r", "r"],
                      [[f"act + {meta.get('naive_sleep_s', 2):g} s sleep + scene agent-turn (baseline)",
                        _int(b.get("n")), _ms(b.get("median_ms")), _ms(b.get("p95_ms")), "1x", "1x",
                        f"{b.get('change_seen')} of {b.get('n')}"],
                       ["`act_and_observe`", _int(a.get("n")), _ms(a.get("median_ms")), _ms(a.get("p95_ms")),
                        _x(act.get("x_median")), _x(act.get("x_p95")), f"{a.get('change_seen')} of {a.get('n')}"]])
        out.append("")
        bars += [Bar(f"act + {meta.get('naive_sleep_s', 2):g} s sleep + scene (baseline)", b.get("median_ms"),
                     b.get("p95_ms"), b.get("min_ms"), b.get("max_ms")),
                 Bar("act_and_observe", a.get("median_ms"), a.get("p95_ms"), a.get("min_ms"), a.get("max_ms"))]
    pages = tokens.get("pages") or []
    if pages:
        mcp, fallback = tokens.get("playwright_mcp"), tokens.get("fallback")
        source = (f"`{mcp['command']}`, its `browser_snapshot` tool over MCP's stdio transport (the YAML part of "
                  "its answer)" if mcp else f"**not Playwright MCP**: {(fallback or {}).get('instead')}")
        out += [f"**prompt tokens**: {base.get('tokens', 'deskbox')} (the whole desktop, Chromium's own UI too, a box "
                f"on every line) against {source}, on the same freshly loaded page. Tokens: "
                f"{tokens.get('tokenizer', '?')}.", ""]
        if fallback:
            out += [f"Playwright MCP did not run: {fallback.get('why')}", ""]
        names = {"plain": "Playwright MCP snapshot", "boxes": "Playwright MCP snapshot, `--snapshot-boxes`",
                 "aria_snapshot": "Playwright `aria_snapshot()` (fallback)"}
        rows = []
        for r in pages:
            rows.append([f"{r['elements']:,}", "deskbox `scene/text`", _int(r["deskbox"]["chars"]),
                         _int(r["deskbox"]["tokens"]), "1x"])
            rows += [[f"{r['elements']:,}", name, _int(r[k]["chars"]), _int(r[k]["tokens"]), _x(r[k].get("x_tokens"))]
                     for k, name in names.items() if k in r]
        out += _table(["elements", "text", "characters", "tokens", "x deskbox (tokens)"], ["r", "l", "r", "r", "r"],
                      rows)
        out.append("")
        if tokens.get("notes"):
            out += ["- Tabs: " + "; ".join(tokens["notes"]) + ".", ""]
    if bars:
        out += [plots.bars("toolset-latency", "Observer toolset: observe since, act and observe", bars), ""]
    return out
