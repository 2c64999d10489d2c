"""One section of docs/measurements.md per bench: each renderer takes that bench's
results (its ``<name>.json``) and answers Markdown lines, with plots where it draws
them (bench.charts). The page around them is bench.measurements'."""

from __future__ import annotations

import re
import statistics
from typing import Callable

from bench.charts import Bar, Plots
from bench.charts import fmt_ms as _ms

# bench/reset.py: figures within 10 % of each other are noise on these machines.
NOISE = 0.10


# -- numbers ---------------------------------------------------------------------------

def _s(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.2f} s"


def _int(v: float | int | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _mb(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f} MB"


def _load(v) -> str:
    """Load averages as the benches store them: a string, a list, or a pair of lists."""
    if v is None:
        return "not recorded"
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)) and v and isinstance(v[0], (list, tuple)):
        return " / ".join(f"{p[0]:.2f}" for p in v)
    if isinstance(v, (list, tuple)) and v:
        return f"{v[0]:.2f}"
    return str(v)


# -- one section per bench -------------------------------------------------------------

def _table(head: list[str], align: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|",
            *["| " + " | ".join(r) + " |" for r in rows]]


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


def _osworld(d: dict, plots: Plots) -> list[str]:
    labels = {"open_file_txt": "`/setup/open_file` of a .txt on the Desktop until its window is focused",
              "chrome_setup_after_reset": "a Chrome task's setup (google-chrome with a debugging port, socat, two "
                                          "tabs, activate_window) right after a reset",
              "chrome_setup_fresh_session": "**baseline**: the same setup in a session just started"}
    out = ["A 1920x1080 OSWorld-mode session, through OSWorld's own `SetupController` (desktop-env, unmodified).", ""]
    rows = [[labels.get(k, k), _s(v.get("median_ms")), _s(v.get("p95_ms")), _int(v.get("n"))]
            for k, v in d.items() if isinstance(v, dict) and "median_ms" in v]
    out += _table(["", "median", "p95", "n"], ["l", "r", "r", "r"], rows)
    after, fresh = d.get("chrome_setup_after_reset", {}), d.get("chrome_setup_fresh_session", {})
    if after.get("median_ms") and fresh.get("median_ms"):
        ratio = after["median_ms"] / fresh["median_ms"]
        noise = "within" if abs(ratio - 1) <= NOISE else "beyond"
        out += ["", f"After a reset the setup takes {ratio:.2f} times as long as in a new session ({noise} the "
                f"{NOISE * 100:.0f} % these machines' noise spans)."]
    out += ["", plots.bars("osworld-latency", "OSWorld task setup",
                           [Bar(re.sub(r"[`*]", "", labels.get(k, k)), v["median_ms"], v.get("p95_ms"))
                            for k, v in d.items() if isinstance(v, dict) and "median_ms" in v]), ""]
    return out


def _apps(d: dict, plots: Plots) -> list[str]:
    rows = d.get("scene") or []
    out = ["A bare `deskbox up` at 1920x1080, Chromium on a generated 1,000-element page; then LibreOffice Calc "
           "beside it on a sheet of 10,000 filled cells.", ""]
    out += _table(["row", "n", "median ms", "p95 ms", "x baseline"], ["l", "r", "r", "r", "r"],
                  [[r.get("row", "?"), _int(r.get("n")), _ms(r.get("median_ms")), _ms(r.get("p95_ms")),
                    "1x" if r.get("x_baseline") is None else f"{r['x_baseline']:.1f}x"] for r in rows])
    out.append("")
    calc = next((r for r in rows if "cells_in_scene" in r), None)
    if calc:
        out.append(f"- Cells of the sheet in the Scene: {calc['cells_in_scene']:,}.")
    with_calc = [r for r in rows if "Calc" in r.get("row", "") and not r.get("comparison")]
    goal = _goal(d, "goal_ms")
    if with_calc and goal:
        met = [r for r in with_calc if r["median_ms"] <= goal and r["p95_ms"] <= goal]
        out.append(f"- Goal: median and p95 within {goal:.0f} ms with Calc beside the browser: met by "
                   f"{len(met)} of {len(with_calc)} rows.")
    for r in (r for r in rows if "Calc" in r.get("row", "")):
        if r.get("stages_ms"):
            out.append(f"- {r['row']}: agent-turn stages (medians, ms): "
                       + ", ".join(f"{k} {_ms(v)}" for k, v in r["stages_ms"].items()) + ".")
    images, memory = d.get("images"), d.get("memory")
    if images:
        out.append("- Image sizes (`podman image inspect`): "
                   + ", ".join(f"{k} {v / 1e9:.2f} GB" if v else f"{k} not built" for k, v in images.items()) + ".")
    else:
        out.append("- Image sizes: not measured in this run (`python -m bench.apps` without `--no-container`, "
                   "after `make image` and `make image-apps`).")
    if memory:
        out.append(f"- The apps image in OSWorld mode, cgroup memory: idle {_mb(memory.get('idle_mb'))}, with a "
                   f"Writer document open {_mb(memory.get('writer_open_mb'))}.")
    else:
        out.append("- The apps session's memory: not measured in this run (as above, with `deskbox-apps` built).")
    out.append("")
    if rows:
        out += [plots.bars("apps-latency", "Agent-turn Scene with LibreOffice Calc beside Chromium",
                           [Bar(r.get("row", "?"), r.get("median_ms"), r.get("p95_ms"), r.get("min_ms"),
                                r.get("max_ms")) for r in rows]), ""]
    return out


def _accessibility(d: dict, plots: Plots) -> list[str]:
    rows = d.get("rows") or []
    out = [f"{d.get('setup', '?')}. The reader's rows and the baseline's alternate in one process running as the "
           "session user; each read is followed by the XML.", ""]
    out += _table(["row", "n", "median ms", "p95 ms", "nodes", "x baseline"], ["l", "r", "r", "r", "r", "r"],
                  [[r.get("row", "?"), _int(r.get("n")), _ms(r.get("median_ms")), _ms(r.get("p95_ms")),
                    _int(r.get("nodes")), "" if r.get("x_baseline") is None else f"{r['x_baseline']:.2f}x"]
                   for r in rows])
    out.append("")
    goal = _goal(d, "goal_ms")
    for r in rows:
        if goal and r.get("row", "").startswith("GET /accessibility"):
            met = "met" if r["median_ms"] <= goal else "missed"
            out.append(f"- Goal, a median within {goal:.0f} ms: {met} by `{r['row']}` ({_ms(r['median_ms'])} ms).")
    for page, p in (d.get("parity") or {}).items():
        out.append(f"- The last reads' XML, {page}: {p['elements_new']:,} elements from the reader, "
                   f"{p['elements_old']:,} from the walk; {p['only_in_old'] + p['only_in_new']} elements and "
                   f"{p['attributes_differing']} attributes or texts differ.")
    out += ["", plots.bars("accessibility-latency", "OSWorld /accessibility: the scene's reader and the libatspi walk",
                           [Bar(r.get("row", "?"), r.get("median_ms"), r.get("p95_ms"), r.get("min_ms"),
                                r.get("max_ms")) for r in rows]), ""]
    return out


def _full_read(d: dict, plots: Plots) -> list[str]:
    rows = d.get("rows") or []
    rounds = (d.get("meta") or {}).get("rounds", "?")
    out = [f"{d.get('setup', '?')}. One process as the session user holds two readers: the one OSWorld's server "
           "runs (it gives LibreOffice's last read again while nothing it listed sent an AT-SPI event, and takes "
           "its closed menus otherwise) and the same reader reading everything (the baseline); before each of "
           f"{rounds} rounds per row one thing is done to Calc, then both read, in alternating order. **CPU**: the "
           "reader's process and LibreOffice's, per read. **Trees differ**: nodes that differ between the two "
           "readers' trees once Calc holds still (0: the keeping read missed nothing).", ""]
    out += _table(["row", "n", "median ms", "p95 ms", "CPU ms", "nodes taken", "x baseline", "trees differ"],
                  ["l", "r", "r", "r", "r", "r", "r", "r"],
                  [[r.get("row", "?"), _int(r.get("n")), _ms(r.get("median_ms")), _ms(r.get("p95_ms")),
                    _ms(r.get("cpu_median_ms")),
                    "" if r.get("baseline") else (f"kept {r.get('kept')}x" if r.get("kept") else _int(r.get("taken_median"))),
                    "" if r.get("x_baseline") is None else f"{r['x_baseline']:.2f}x",
                    "?" if r.get("differences") is None else str(r["differences"])] for r in rows])
    return out + [""]


def _execute(d: dict, plots: Plots) -> list[str]:
    meta = d.get("meta") or {}
    out = ["`/execute` of `python -c \"import pyautogui; ...; pyautogui.moveTo(x, y)\"`, as OSWorld's "
           "PythonController sends an agent's action, in two OSWorld-mode sessions side by side driven in "
           f"alternation, {meta.get('rounds', '?')} actions each per machine state (busy: one process spinning per "
           f"core). Baseline: {meta.get('baseline', '?')}. The times include pyautogui's own 0.1 s pause after the "
           "move. CPU: the OSWorld server, its warm interpreter and the commands, per action.", ""]
    out += _table(["row", "n", "median ms", "p95 ms", "CPU ms/action", "x baseline (median / p95)"],
                  ["l", "r", "r", "r", "r", "r"],
                  [[r.get("row", "?"), _int(r.get("n")), _ms(r.get("median_ms")), _ms(r.get("p95_ms")),
                    _ms(r.get("cpu_ms_per_action")),
                    "" if r.get("baseline") else f"{r['x_baseline']:.2f}x / {r['x_baseline_p95']:.2f}x"]
                   for r in d.get("rows") or []])
    return out + [""]


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


def _run(d: dict, plots: Plots) -> list[str]:
    args = d.get("args") or {}
    out = [f"The noop agent over {args.get('tasks', '?')} task configs written in the bench, in containers of "
           f"`{args.get('image', 'deskbox')}`; medians per task in seconds (the baseline's reset holds its setup; "
           "its lib_run_single waits are left out).", ""]

    def sec(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    out += _table(["row", "tasks/hour", "reset", "setup", "agent", "grading", "overhead", "task"],
                  ["l", "r", "r", "r", "r", "r", "r", "r"],
                  [[r["name"], _int(r.get("tasks_per_hour")), sec(r.get("reset_median_s")),
                    sec(r.get("setup_median_s")), sec(r.get("agent_median_s")), sec(r.get("grading_median_s")),
                    sec(r.get("overhead_median_s")), sec(r.get("total_median_s"))] for r in d.get("rows") or []])
    return out + [""]


def _fleet(d: dict, plots: Plots) -> list[str]:
    args = d.get("args") or {}
    out = [f"Containers of `{args.get('image', 'deskbox-apps')}` at OSWorld's pace: per session "
           f"{args.get('tasks_per_session', 1)} task(s) of {args.get('steps', 15)} steps, each the screenshot and the "
           f"accessibility tree, one pyautogui move and {args.get('think_s', 5)} s of think time; first tasks "
           f"staggered: {args.get('stagger', 0)}. A level holds with observation p95 <= 1 s, action p95 <= 0.5 s "
           "and no infrastructure failure. Times in seconds. `python -c`: OSWorld's actions forked from the "
           "session's warm interpreter (the default), or cold, started afresh (the baseline).", ""]
    out += _table(["sessions", "python -c", "tasks/hour", "observe p50/p95", "action p50/p95", "reset p50/p95", "CPU s/step",
                   "CPU busy", "memory peak", "held", "ran out"], ["r", "l", "r", "r", "r", "r", "r", "r", "r", "l", "l"],
                  [[str(r["sessions"]), r.get("python", "cold"), _int(r.get("tasks_per_hour")),
                    f"{r.get('observe_p50_s')} / {r.get('observe_p95_s')}",
                    f"{r.get('action_p50_s')} / {r.get('action_p95_s')}",
                    f"{r.get('reset_p50_s')} / {r.get('reset_p95_s')}", str(r.get("cpu_s_per_step")),
                    f"{(r.get('cpu_busy_share') or 0) * 100:.0f} %", _mb(r.get("memory_peak_mb")),
                    "yes" if r.get("held") else "**no**", r.get("ran_out") or "-"] for r in d.get("levels") or []])
    warm = [r for r in d.get("levels") or [] if r.get("python", "warm") == "warm"]
    last = warm[-1] if warm else None
    if last and last.get("observe_by_app"):
        out += ["", f"- Observations at {last['sessions']} sessions, by the app observed (p50 / p95 s): "
                    + ", ".join(f"{app} {v['p50_s']} / {v['p95_s']}" for app, v in last["observe_by_app"].items())
                    + "."]
    idle = d.get("idle")
    if idle:
        out += ["", f"- One idle session over {idle['seconds']:.0f} s: {idle['cpu_s']} CPU s "
                    f"({idle['cpu_share_of_a_core']} of a core), {idle['memory_mb']:.0f} MB."]
    return out + [""]


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


def _vscode(d: dict, plots: Plots) -> list[str]:
    out = [f"{d.get('iterations', '?')} opens of the same text file through `/setup/launch` in an OSWorld-mode "
           "session, until its window is focused; session memory is the PSS of all its processes with the file "
           f"open (idle: {_mb(d.get('idle_session_pss_mb'))}). Baseline: {d.get('baseline', '?')}.", ""]
    rows = d.get("rows") or []
    base = next((r["open"]["median_ms"] for r in rows if r["name"] == d.get("baseline")), None)
    out += _table(["row", "open median", "open p95", "vs baseline", "session PSS"], ["l", "r", "r", "r", "r"],
                  [[r["name"], _s(r["open"]["median_ms"]), _s(r["open"]["p95_ms"]),
                    _x(r["open"]["median_ms"] / base) if base else "-", _mb(r.get("session_pss_mb"))] for r in rows])
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


def _x(v: float | None) -> str:
    return "-" if v is None else (f"{v:.3f}x" if v < 0.1 else f"{v:.2f}x")


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
    out += ["", plots.bars("soak-latency", f"Soak, {d.get('minutes', 0):g} minutes: latency per endpoint",
                           [Bar(re.sub(r"`", "", SOAK_LABELS.get(k, k)), v.get("p50_ms"), v.get("p95_ms"))
                            for k, v in eps.items()]), ""]
    return out


def _goal(d: dict, key: str) -> float | None:
    meta = d.get("meta")
    return meta.get(key) if isinstance(meta, dict) else None
