"""Sections of the session's own services: desktopd, the bridge, the scene, the container, resets, an idle session, the soak."""

from __future__ import annotations

import re
import statistics
from typing import Callable

from bench.charts import Bar, Plots
from bench.charts import fmt_ms as _ms
from bench.sections.format import _goal, _int, _load, _mb, _s, _table
from bench.stats import spaced


def _desktopd(d: dict, plots: Plots) -> list[str]:
    meta = d.get("meta", {})
    rows = d.get("rows", [])
    out = [f"A {meta.get('output', '?')} display; page: {meta.get('page', '?')}. {meta.get('iterations', '?')} "
           f"samples per row, rows taken round robin; {meta.get('cpus', '?')} CPUs, load average "
           f"{_load(meta.get('loadavg_before'))} before, {_load(meta.get('loadavg_after'))} after. Baseline: "
           "`grim -t png` on the same output in the same run (**x grim**: the row's median over grim's).", ""]
    grim = next((r.get("median_ms") for r in rows if r.get("key") == "grim_png"), None)
    table = []
    for r in rows:
        x = "1.00" if r.get("key") == "grim_png" else (
            "-" if r.get("ratio_to_grim") is None else f"{r['ratio_to_grim']:.2f}")
        size = "-" if r.get("bytes_median") is None else f"{r['bytes_median'] / 1024:,.0f} KB"
        table.append([r.get("row", r.get("key", "?")), _int(r.get("n")), _ms(r.get("median_ms")), _ms(r.get("p95_ms")),
                      x, _ms(r.get("server_median_ms")), size])
    out += _table(["row", "n", "median ms", "p95 ms", "x grim", "in desktopd ms", "size"],
                  ["l", "r", "r", "r", "r", "r", "r"], table)
    rss, start = d.get("rss", {}), d.get("rss_start", {})
    out += ["", f"desktopd's resident memory: {_mb(start.get('rss_mb'))} right after start, {_mb(rss.get('rss_mb'))} "
            f"after every row above (peak {_mb(rss.get('hwm_mb'))}). grim's median here: {_ms(grim)} ms.", ""]
    if rows:
        out += [plots.bars("desktopd-latency", "desktopd: screenshots and clicks",
                           [Bar(r.get("row", "?"), r.get("median_ms"), r.get("p95_ms"), r.get("min_ms"), r.get("max_ms"))
                            for r in rows]), ""]
    encoders = d.get("encoders") or []
    if encoders:
        out += ["Encoders on the same captured frame, in the bench's process (**used** marks what desktopd uses):", ""]
        out += _table(["step", "encoder", "median ms", "p95 ms", "size", "check", "used"],
                      ["l", "l", "r", "r", "r", "l", "l"],
                      [[e.get("section", ""), e.get("encoder", ""), _ms(e.get("median_ms")), _ms(e.get("p95_ms")),
                        "-" if e.get("bytes") is None else f"{e['bytes'] / 1024:,.0f} KB", e.get("check", ""),
                        "used" if e.get("chosen") else ""] for e in encoders])
        out.append("")
    return out


def _timed_rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r.get("median_ms") is not None and "elements" in r]


def _by_size(rows: list[dict], name: Callable[[dict], str]) -> list[tuple[str, list[tuple[float, float, float | None]]]]:
    series: dict[str, list[tuple[float, float, float | None]]] = {}
    for r in _timed_rows(rows):
        series.setdefault(name(r), []).append((float(r["elements"]), r["median_ms"], r.get("p95_ms")))
    return list(series.items())


def _bridge(d: dict, plots: Plots) -> list[str]:
    rows = d.get("rows", [])
    sizes = ", ".join(f"{n:,}" for n in sorted({r["elements"] for r in rows}))
    out = [f"Generated pages of {sizes} elements. Baseline (a): one awaited `DOM.getBoxModel` per AX node, the old bridge's method, on the same "
           f"page in the same run. Load average before / after: {_load(d.get('load'))}. The bridge's resident memory "
           f"after the run: {_mb(d.get('bridge_rss_mb'))}.", ""]
    base = {r["elements"]: r["median_ms"] for r in _timed_rows(rows) if r.get("key") == "a"}
    table = []
    for r in _timed_rows(rows):
        b = base.get(r["elements"])
        x = "" if not b or r.get("key") == "a" else f"{b / r['median_ms']:.{0 if b / r['median_ms'] >= 10 else 1}f}x faster"
        table.append([f"{r['elements']:,}", r.get("row", "?"), _ms(r["median_ms"]), _ms(r.get("p95_ms")), x,
                      _int(r.get("ax_nodes")), r.get("paths") or ""])
    out += _table(["elements", "row", "median ms", "p95 ms", "against (a)", "AX nodes", "made as"],
                  ["r", "l", "r", "r", "r", "r", "l"], table)
    out += ["", "AX nodes: as Chromium sends them for (a) and (b), as the bridge serves them for its rows. "
            "Made as: how the bridge made its answers (`X-Deskbox-Layout`).", ""]
    if rows:
        out += [plots.lines("bridge-layout-vs-page-size", "Bridge /layout time vs page size",
                            _by_size(rows, lambda r: r.get("row", "?")), "DOM elements on the page", "ms"), ""]
        out += [plots.bars("bridge-latency", "Bridge /layout and the baselines",
                           [Bar(f"{r['elements']:,} elements: {r.get('row', '?')}", r["median_ms"], r.get("p95_ms"),
                                r.get("min_ms"), r.get("max_ms")) for r in _timed_rows(rows)]), ""]
    c = d.get("clients")
    if c:
        py = c.get("pychrome")
        out += [f"CDP clients on one page target: {_int(c.get('calls'))} small calls, and the full AX tree of "
                f"{_int(c.get('ax_nodes'))} nodes.", ""]
        table = [["asyncio + websockets (deskbox), AX as records", _ms(c["asyncio_sequential"]["median_ms"]),
                  _ms(c.get("asyncio_pipelined_total_ms")), _ms(c["asyncio_ax_records"]["median_ms"])],
                 ["asyncio + websockets, AX as dicts", "", "", _ms(c["asyncio_ax_dicts"]["median_ms"])]]
        if py:
            table.append(["pychrome (8 threads for the calls in flight)", _ms(py["sequential"]["median_ms"]),
                          _ms(py.get("threads8_total_ms")), _ms(py["ax"]["median_ms"])])
        else:
            table.append(["pychrome", "not installed", "", ""])
        out += _table(["client", "one call at a time, median ms", "all calls in flight, total ms",
                       "getFullAXTree, median ms"], ["l", "r", "r", "r"], table)
        out.append("")
    return out


def _scene(d: dict, plots: Plots) -> list[str]:
    rows = d.get("rows", [])
    out = ["A 1920x1080 session; gnome-calculator open beside the browser, measured once it had gone idle "
           f"({d.get('calculator_idle_after_s', '?')} s after it was listed). Baseline: the bridge's own `/layout` "
           f"of the same page, warm. Load average before / after: {_load(d.get('load'))}.", ""]
    table = [[f"{r['elements']:,}", r.get("row", "?"), _ms(r["median_ms"]), _ms(r.get("p95_ms")),
              "-" if r.get("x_baseline") is None else f"{r['x_baseline']:.2f}", _int(r.get("chars"))]
             for r in _timed_rows(rows)]
    out += _table(["elements", "row", "median ms", "p95 ms", "x baseline", "characters"],
                  ["r", "l", "r", "r", "r", "r"], table)
    out.append("")
    for r in rows:
        if "stages_ms" in r:
            out.append(f"- {r['elements']:,} elements, agent-turn stages (medians, ms; they run concurrently): "
                       + ", ".join(f"{k} {_ms(v)}" for k, v in r["stages_ms"].items()) + ".")
        elif "count" in r:
            out.append(f"- {r['elements']:,} elements: {r['count']:,} elements in the scene ({r.get('from_page', 0):,} "
                       f"from the page, {r.get('native', 0):,} native).")
    for n in sorted({r["elements"] for r in _timed_rows(rows)}):
        chars = {r["row"]: r.get("chars") for r in _timed_rows(rows) if r["elements"] == n}
        layout = next((v for k, v in chars.items() if k.startswith("bridge /layout")), None)
        text = chars.get("scene/text agent-turn")
        if layout and text:
            out.append(f"- {n:,} elements: `/scene/text` is {layout / text:.0f} times smaller than the bridge's "
                       f"`/layout` of the same page ({text:,} against {layout:,} characters).")
    turn = next((r for r in _timed_rows(rows) if r["elements"] == 1000 and r["row"] == "scene agent-turn"), None)
    goal = _goal(d, "agent_turn_1k_goal_ms")
    if turn and goal:
        met = "met" if turn["median_ms"] <= goal else "missed"
        out.append(f"- Goal: an agent-turn scene within {goal:.0f} ms at 1,000 elements: "
                   f"{met} ({_ms(turn['median_ms'])} ms median).")
    out.append("")
    if _timed_rows(rows):
        out += [plots.lines("scene-vs-page-size", "Scene time vs page size",
                            _by_size(rows, lambda r: r.get("row", "?")), "DOM elements on the page", "ms"), ""]
        out += [plots.bars("scene-latency", "Scene aggregator: agent-turn and the cheaper modes",
                           [Bar(f"{r['elements']:,} elements: {r.get('row', '?')}", r["median_ms"], r.get("p95_ms"),
                                r.get("min_ms"), r.get("max_ms")) for r in _timed_rows(rows)]), ""]
    return out


def _container(d: dict, plots: Plots) -> list[str]:
    meta, img, start = d.get("meta", {}), d.get("image", {}), d.get("start", {})
    idle, dense = d.get("idle", {}), d.get("density", {})
    last = idle.get("last") or {}
    cg = last.get("cgroup") or {}
    pss = last.get("pss_by_process_mb") or {}
    out = [f"{meta.get('podman', 'podman')}, {meta.get('cpus', '?')} cores, image `{meta.get('image', '?')}` "
           f"({meta.get('image_id', '?')}); podman flags this machine needs: `{' '.join(meta.get('flags') or []) or 'none'}`. "
           f"Load average before / after: {_load(d.get('load'))}.", ""]
    runs = start.get("runs") or []
    table = [["image size (`podman image inspect`, uncompressed)",
              "-" if img.get("size_gb") is None else f"{img['size_gb']:.2f} GB ({img.get('layers', '?')} layers)"],
             [f"`podman run` to all three services healthy, median of {len(runs)}",
              "-" if start.get("median_healthy_s") is None else f"{start['median_healthy_s']:.1f} s"],
             [f"one idle session after {idle.get('idle_s', '?')} s, cgroup memory",
              f"{_mb(cg.get('usage_mb'))} (anonymous {_mb(cg.get('anon_mb'))}, page cache {_mb(cg.get('page_cache_mb'))})"],
             ["the same, `podman stats`", last.get("podman_stats") or "-"],
             ["the same, PSS of all its processes (the image's code pages included)",
              _mb(sum(pss.values())) if pss else "-"],
             ["the same, CPU", "-" if idle.get("cpu_percent_of_one_core") is None
              else f"{idle['cpu_percent_of_one_core']} % of one core"],
             ["idle sessions held, every one answering a fresh screenshot", _int(dense.get("held"))]]
    out += _table(["measure", "value"], ["l", "r"], table)
    if runs:
        out += ["", "Start runs (s, `podman run` returned / all three health endpoints answered): "
                + ", ".join(f"{r['podman_run_s']:.1f} / {r['healthy_s']:.1f}" for r in runs) + "."]
    if pss:
        out += ["", "PSS by process, MB: " + ", ".join(f"{k} {v}" for k, v in pss.items()) + "."]
    steps = dense.get("steps") or []
    if steps:
        out += ["", "Density: sessions started one by one; after each, every running session is asked for a fresh "
                "screenshot.", ""]
        out += _table(["sessions", "newest start to healthy s", "screenshot median ms", "screenshot max ms",
                       "cgroup memory, all sessions", "host MemAvailable", "load 1 min"],
                      ["r"] * 7,
                      [[str(s["sessions"]), f"{s['healthy_s']:.1f}", _ms(s.get("screenshot_median_ms")),
                        _ms(s.get("screenshot_max_ms")), _mb(s.get("cgroup_usage_mb_total")),
                        _mb(s.get("mem_available_mb")), f"{s.get('load1', 0):.2f}"] for s in steps])
        out += ["", f"Stopped by: {dense.get('stopped_by', '?')}.", "",
                plots.bars("container-density", "Fresh screenshots while idle sessions are added",
                           [Bar(f"{s['sessions']} session{'s' if s['sessions'] != 1 else ''}",
                                s.get("screenshot_median_ms"), s.get("screenshot_max_ms")) for s in steps],
                           legend=("median", "slowest"))]
    out.append("")
    return out


def _reset(d: dict, plots: Plots) -> list[str]:
    meta, bare, cont, dense = d.get("meta", {}), d.get("bare"), d.get("container"), d.get("density")
    out = [f"{meta.get('cpus', '?')} cores, {meta.get('podman', 'podman')}, a 1920x1080 display. Load average "
           f"before / after: {_load(d.get('load'))}. Before every reset Chromium had three tabs and a GTK app was on "
           "screen; the first round of each kind is a warm-up, left out. Baseline: what OSWorld's docker provider "
           "does between tasks, `podman rm -f` and `podman run` until the session answers healthy.", ""]
    base = (cont or {}).get("recreate_ms", {}).get("median")
    rows, bars = [], []
    for label, part in (("reset, bare machine (`deskbox up`), until healthy", bare),
                        ("reset in a container, until healthy", cont)):
        if part and part.get("reset_ms", {}).get("n"):
            r = part["reset_ms"]
            rows.append([label, _s(r["median"]), _s(r["p95"]), str(r["n"]),
                         f"{r['median'] / base:.2f}x" if base else "-"])
            bars.append(Bar(label.replace("`", ""), r["median"], r["p95"], r.get("min"), r.get("max")))
    if base:
        rc = cont["recreate_ms"]
        rows.append(["**baseline: `podman rm -f` + `podman run` until healthy**", _s(rc["median"]), _s(rc["p95"]),
                     str(rc["n"]), "1x"])
        bars.append(Bar("baseline: podman rm -f + podman run until healthy", rc["median"], rc["p95"], rc.get("min"),
                        rc.get("max")))
    out += _table(["between two tasks", "median", "p95", "n", "against the baseline"], ["l", "r", "r", "r", "r"], rows)
    out.append("")
    if meta.get("bare_when"):
        out.append(f"- The bare machine's row is from a later run of the bare rounds alone, {meta['bare_when']} "
                   "(`--skip container --skip density`), merged into these results.")
    for label, part in (("Bare machine", bare), ("Container", cont)):
        if part:
            own = part.get("session_reset_ms") or {}
            out.append(f"- {label}: of a reset, `deskbox up`'s own part (end the apps, put the home back, start the "
                       f"browser) has a median of {_s(own.get('median'))}; the rest is the scene reading the new "
                       f"browser until it is healthy. Every reset answered healthy: "
                       f"{'yes' if part.get('all_healthy') else '**no**'}.")
    if cont:
        idle, after = cont.get("idle_memory") or {}, cont.get("memory_after_resets") or {}
        n = len([r for r in cont.get("rounds", [])])
        out.append(f"- One idle session in a container: {_mb(idle.get('usage_mb'))} of cgroup memory; "
                   f"{_mb(after.get('usage_mb'))} after {n} resets.")
        if cont.get("first_start_s") is not None:
            out.append(f"- The container's first start, `podman run` to healthy: {cont['first_start_s']:.1f} s.")
    out.append("")
    if bars:
        out += [plots.bars("reset-latency", "Between two tasks: reset against recreating the container", bars,
                           unit="ms"), ""]
    steps = (dense or {}).get("steps") or []
    if steps:
        out += [f"Density: every session resets every {dense.get('reset_every_s', '?'):g} s (staggered) while a "
                "client per session asks for a fresh 1920x1080 screenshot about once a second; a level holds while "
                f"their p95 is within {dense.get('limit_ms', 0):.0f} ms and none failed.", ""]
        out += _table(["sessions", "screenshot median ms", "p95 ms", "p95 ms with no reset in flight", "failed",
                       "resets (unhealthy)", "reset median", "cgroup memory, all sessions", "holds"],
                      ["r"] * 8 + ["l"],
                      [[str(s["sessions"]), _ms(s["screenshots"]["median"]), _ms(s["screenshots"]["p95"]),
                        _ms(s["screenshots_no_reset_in_flight"]["p95"]), str(s.get("screenshot_errors", 0)),
                        f"{s.get('resets', 0)} ({s.get('resets_unhealthy', 0)})", _s(s["reset_ms"]["median"]),
                        _mb(s.get("cgroup_total_mb")), "yes" if s.get("held") else "**no**"] for s in steps])
        out += ["", f"Sessions held: {dense.get('held', '?')}. Stopped: {dense.get('stopped_by', '?')}.", "",
                plots.bars("reset-density", "Fresh screenshots while every session resets every "
                           f"{dense.get('reset_every_s', 0):g} s",
                           [Bar(f"{s['sessions']} session{'s' if s['sessions'] != 1 else ''}",
                                s["screenshots"]["median"], s["screenshots"]["p95"], s["screenshots"].get("min"),
                                s["screenshots"].get("max")) for s in steps]), ""]
    return out


def _idle(d: dict, plots: Plots) -> list[str]:
    args = d.get("args") or {}
    out = [f"One local session at 1920x1080, Chromium on a focused text field (its caret blinks), nobody "
           f"subscribed to the scene; {args.get('seconds', 30):.0f} s measured after {args.get('settle_s', 10):.0f} s, "
           f"{args.get('rounds', 1)} round(s) of each code, alternating; CPU of every process of the session, "
           f"medians. Baseline: {args.get('baseline') or 'none in this run'}.", ""]
    rows = []
    for name, runs in (d.get("runs") or {}).items():
        rows.append([name, f"{statistics.median(r['cpu_s'] for r in runs):.2f}",
                     f"{statistics.median(r['cpu_share_of_a_core'] for r in runs):.4f}",
                     _mb(statistics.median(r["memory_mb"] for r in runs))])
    out += _table(["code", "CPU s", "share of a core", "memory (PSS)"], ["l", "r", "r", "r"], rows)
    if d.get("ratio_cpu") is not None:
        out += ["", f"- CPU against the baseline: {d['ratio_cpu']:.2f}x."]
    return out + [""]


SOAK_LABELS = {"screenshot": "screenshot (JPEG, the screen changing)", "scene agent-turn": "scene, agent-turn",
               "bridge /layout": "bridge `/layout`", "act click": "`/act` click", "act type": "`/act` set_value"}


def _soak(d: dict, plots: Plots) -> list[str]:
    eps, rss = d.get("endpoints") or {}, d.get("rss") or {}
    out = [f"One 1920x1080 session on a page that changes every second, {d.get('rate', '?'):g} requests a second in "
           f"turn for {d.get('minutes', 0):g} minutes ({_int(d.get('requests'))} requests). Load average before / "
           f"after: {_load(d.get('load_before'))} / {_load(d.get('load_after'))}.", ""]
    out += _table(["endpoint", "n", "p50 ms", "p95 ms", "errors"], ["l", "r", "r", "r", "r"],
                  [[SOAK_LABELS.get(k, k), _int(v.get("n")), _ms(v.get("p50_ms")), _ms(v.get("p95_ms")),
                    _int(v.get("errors"))] for k, v in eps.items()])
    out.append("")
    out += _table(["service", "resident memory, first tenth", "last tenth", "growth"], ["l", "r", "r", "r"],
                  [[k, f"{v['first_mb']} MB", f"{v['last_mb']} MB", f"{v['growth_pct']} %"] for k, v in rss.items()])
    errors = sum(v.get("errors", 0) for v in eps.values())
    worst = max(rss.items(), key=lambda kv: kv[1]["growth_pct"], default=None)
    goal = _goal(d, "growth_goal_pct")
    if worst:
        out += ["", f"Errors: {errors}. The largest growth: {worst[0]}'s {worst[1]['growth_pct']} %."]
    if worst and goal:
        met = "met" if errors == 0 and worst[1]["growth_pct"] <= goal else "missed"
        out[-1] += f" Goals (no errors, no service growing by more than {goal:.0f} %): {met}."
    elif worst:
        out[-1] += " (These results predate the goals being recorded with them: see `bench/soak.py`.)"
    series = d.get("rss_series") or []
    if series:
        names = list(rss) or [k for k in series[0] if k != "t_s"]
        out += ["", "Resident memory through the run (MB), so that a rise that levels off (warming up) is told "
                "from one that goes on:", ""]
        out += _table(["minute", *names], ["r"] * (len(names) + 1),
                      [[f"{r['t_s'] / 60:.0f}", *("-" if r.get(k) is None else f"{r[k]:g}" for k in names)]
                       for r in spaced(series, 7)])
    out += ["", plots.bars("soak-latency", f"Soak, {d.get('minutes', 0):g} minutes: latency per endpoint",
                           [Bar(re.sub(r"`", "", SOAK_LABELS.get(k, k)), v.get("p50_ms"), v.get("p95_ms"))
                            for k, v in eps.items()]), ""]
    return out


def _sandbox(d: dict, plots: Plots) -> list[str]:
    a = d.get("args") or {}
    out = [f"A bare session at 1920x1080 started as root, {a.get('rounds', '?')} round(s) of each, alternating, "
           f"{a.get('resets', '?')} resets a round. Baseline: `--no-sandbox`, the command line sessions started "
           "as root had before. Medians.", ""]
    rows = [[name, f"{s['start_s']:.2f} s", f"{s['reset_s']:.2f} s", _mb(s["chromium_mb"]),
             "yes" if s["sandboxed"] else "no"] for name, s in (d.get("summary") or {}).items()]
    out += _table(["browser", "start to its window", "reset to its window", "Chromium memory (PSS)",
                   "renderers sandboxed"], ["l", "r", "r", "r", "l"], rows)
    r = d.get("ratios") or {}
    if r:
        out += ["", f"- With the sandbox against the baseline: start {r['start']:.2f}x, reset {r['reset']:.2f}x, "
                    f"memory {r['memory']:.2f}x."]
    return out + [""]
