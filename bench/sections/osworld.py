"""Sections of OSWorld's side: task setup, the accessibility tree, actions, the apps, benchmark runs, the fleet, VS Code."""

from __future__ import annotations

import re

from bench.charts import Bar, Plots
from bench.charts import fmt_ms as _ms
from bench.sections.format import NOISE, _goal, _int, _mb, _s, _table, _x


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


def _noop(d: dict, plots: Plots) -> list[str]:
    out = [f"`deskbox run --agent noop` over OSWorld's own `{d.get('index', 'test_all.json')}` ({d.get('tasks')} "
           f"tasks), {d.get('sessions')} sessions of `{d.get('image')}`, offline: a task whose setup downloads its "
           "files ends as setup_error unless a cache holds them. The agent does nothing, so what the machine spends "
           "is the environment's own work; each second's busy CPU is shared among the tasks running in it. "
           f"{_int(d.get('tasks_per_hour'))} tasks an hour, {d.get('core_s_mean')} core-seconds a task (mean: what "
           f"the run cost over its tasks), {d.get('core_s_per_task')} (median); reset, setup and grading are "
           "medians in seconds.", ""]
    rows = []
    for domain, v in (d.get("domains") or {}).items():
        statuses = ", ".join(f"{k} {n}" for k, n in sorted((v.get("statuses") or {}).items()))
        rows.append([domain, _int(v.get("tasks")), _int(v.get("graded")), _int(v.get("passed")), statuses,
                     str(v.get("core_s_mean")), str(v.get("core_s_per_task")), str(v.get("reset_s")),
                     str(v.get("setup_s")), str(v.get("grading_s"))])
    out += _table(["domain", "tasks", "graded", "passed", "statuses", "core-s a task (mean)", "median", "reset",
                   "setup", "grading"], ["l", "r", "r", "r", "l", "r", "r", "r", "r", "r"], rows)
    if d.get("baseline"):
        b = d["baseline"]
        out += ["", f"Beside it, the same tasks on the baseline image `{b.get('image')}` just before: "
                    f"{b.get('core_s_mean')} core-seconds a task against {d.get('core_s_mean')} "
                    f"({d.get('core_s_mean_ratio')}x; the medians {b.get('core_s_per_task')} and "
                    f"{d.get('core_s_per_task')}), {_int(b.get('tasks_per_hour'))} tasks an hour against "
                    f"{_int(d.get('tasks_per_hour'))}.", ""]
        out += _table(["domain", "core-s a task, baseline", "core-s a task", "reset, baseline", "reset"],
                      ["l", "r", "r", "r", "r"],
                      [[domain, str((b.get("domains") or {}).get(domain, {}).get("core_s_mean")),
                        str(v.get("core_s_mean")), str((b.get("domains") or {}).get(domain, {}).get("reset_s")),
                        str(v.get("reset_s"))] for domain, v in (d.get("domains") or {}).items()])
    unlisted = d.get("unlisted_passes") or []
    out += ["", "Passed and not listed in docs/osworld.md: " + (", ".join(f"`{t}`" for t in unlisted) or "none")
            + "."]
    return out + [""]


def _run(d: dict, plots: Plots) -> list[str]:
    args = d.get("args") or {}
    out = [f"The noop agent over {args.get('tasks', '?')} task configs written in the bench, in containers of "
           f"`{args.get('image', 'deskbox')}`; medians per task in seconds (the baseline's reset holds its setup; "
           "its lib_run_single waits are left out). deskbox run records each task's trace and brings it home, as it "
           "does by default; its no-trace row is the one to read against the baseline, which records none.", ""]

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
           f"staggered: {args.get('stagger', 0)}. A level holds with every task solved, no infrastructure failure, "
           "and p95s of the environment's share of a step (action and observation) <= 1.5 s, observation <= 1 s, "
           "action <= 0.5 s and reset <= 3 s (older levels: the observation and action bounds alone). Times in "
           "seconds. Pacing: paced is `deskbox run`'s default (admission slots, CPU weights, the wait for the "
           "apps), unpaced the baseline (`--admit 0 --ready-timeout 0`). `python -c` and containers: the warm "
           "interpreter and the hardening (the defaults), or their baselines.", ""]
    out += _table(["sessions", "pacing", "python -c", "containers", "tasks/hour", "env share p50/p95",
                   "observe p50/p95", "action p50/p95", "reset p50/p95", "slot wait p50/p95", "CPU busy",
                   "memory peak", "held", "ran out"],
                  ["r", "l", "l", "l", "r", "r", "r", "r", "r", "r", "r", "r", "l", "l"],
                  [[str(r["sessions"]), r.get("pacing", "unpaced"), r.get("python", "cold"),
                    r.get("containers", "unhardened"), _int(r.get("tasks_per_hour")),
                    f"{r.get('env_p50_s', '-')} / {r.get('env_p95_s', '-')}",
                    f"{r.get('observe_p50_s')} / {r.get('observe_p95_s')}",
                    f"{r.get('action_p50_s')} / {r.get('action_p95_s')}",
                    f"{r.get('reset_p50_s')} / {r.get('reset_p95_s')}",
                    f"{r.get('queued_p50_s', '-')} / {r.get('queued_p95_s', '-')}",
                    f"{(r.get('cpu_busy_share') or 0) * 100:.0f} %", _mb(r.get("memory_peak_mb")),
                    "yes" if r.get("held") else "**no**", r.get("ran_out") or "-"] for r in d.get("levels") or []])
    main_rows = [r for r in d.get("levels") or [] if r.get("python", "warm") == "warm"
                 and r.get("containers", "hardened") == "hardened" and r.get("pacing", "paced") == "paced"]
    last = main_rows[-1] if main_rows else None
    if last and last.get("observe_by_app"):
        out += ["", f"- Observations at {last['sessions']} sessions, by the app observed (p50 / p95 s): "
                    + ", ".join(f"{app} {v['p50_s']} / {v['p95_s']}" for app, v in last["observe_by_app"].items())
                    + "."]
    idle = d.get("idle")
    if idle:
        apps = ", ".join(idle.get("apps") or []) or "nothing"
        out += ["", f"- One idle session ({apps} open) over {idle['seconds']:.0f} s: {idle['cpu_s']} CPU s "
                    f"({idle['cpu_share_of_a_core']} of a core), {idle['memory_mb']:.0f} MB."]
        if idle.get("cpu_s_by_program"):
            out.append("  By program (CPU s): " + ", ".join(
                f"{name} {v}" for name, v in list(idle["cpu_s_by_program"].items())[:8]) + ".")
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
