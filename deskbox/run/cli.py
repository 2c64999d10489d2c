"""``deskbox run TASKS --agent SPEC ...``, ``deskbox run report DIR [OTHER]`` and
``deskbox tasks fetch TASKS --cache DIR``."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path

from ..provider import ProviderError
from ..provider.leftovers import Leftover
from . import graders, stats
from .admission import (
    ADMISSION_DIR,
    HEAVY_WEIGHT,
    SESSIONS_PER_SLOT,
    Admission,
    default_read_slots,
    default_slots,
)
from .agents import OSWORLD_SETTINGS, AgentError, agent_factory, built_in, parse_agent_arg
from .cache import Cache
from .episode import ACTION_SPACES, OBSERVATION_TYPES
from .identity import describe, differences
from .layout import path_part
from .report import write_report
from .runner import Runner, RunOptions, read_results
from .sessions import PROVIDERS, Pool, session_factory
from .stats import summary
from .stub import Script, ScriptError, StubServer
from .stub import environment as stub_environment
from .tasks import TaskError, load_tasks

__all__ = ["main", "build_parser", "tasks_main"]


def _screen(text: str) -> tuple[int, int]:
    w, sep, h = text.lower().partition("x")
    if not sep or not w.isdigit() or not h.isdigit() or not (320 <= int(w) <= 7680 and 240 <= int(h) <= 4320):
        raise argparse.ArgumentTypeError(f"{text!r}: WxH, e.g. 1920x1080")
    return int(w), int(h)


RETRYABLE = ("agent_error", "grader_error", "setup_error")


def _statuses(text: str) -> tuple[str, ...]:
    named = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    wrong = [t for t in named if t not in RETRYABLE]
    if wrong or not named:
        raise argparse.ArgumentTypeError(f"{text!r}: a comma-separated list of {', '.join(RETRYABLE)}")
    return named


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="deskbox run",
        description="Run OSWorld-format tasks with an agent across a pool of deskbox sessions; each task is reset, "
                    "set up, acted on by the agent and graded by OSWorld's own getters and metrics. Results go to "
                    "--out (results.jsonl, a folder per task); the same command resumes a stopped run.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("tasks", nargs="+", metavar="TASKS",
                   help="an index (test_all.json with examples/<domain>/<id>.json beside it), a folder of configs, "
                        "or config files")
    p.add_argument("--agent", required=True,
                   help="MODULE:NAME, a factory or an agent's class with OSWorld's agent interface "
                        "(mm_agents.agent:PromptAgent), noop, script:FILE or replay:DIR")
    agent = p.add_argument_group("the agent's settings", "OSWorld's run.py's, under its names and with its "
                                 "defaults; each offered to a MODULE:NAME agent that declares it")
    agent.add_argument("--model", default=OSWORLD_SETTINGS["model"], help="the model the agent asks")
    agent.add_argument("--temperature", type=float, default=OSWORLD_SETTINGS["temperature"], help="its sampling")
    agent.add_argument("--top_p", "--top-p", dest="top_p", type=float, default=OSWORLD_SETTINGS["top_p"],
                       help="its nucleus sampling")
    agent.add_argument("--max_tokens", "--max-tokens", dest="max_tokens", type=int,
                       default=OSWORLD_SETTINGS["max_tokens"], help="the longest answer it asks for")
    agent.add_argument("--max-trajectory-length", "--max_trajectory_length", dest="max_trajectory_length", type=int,
                       default=OSWORLD_SETTINGS["max_trajectory_length"],
                       help="the agent's prompt history window: how many earlier steps each prompt repeats (not "
                            "the step limit, --max-steps)")
    agent.add_argument("--model-stub", type=Path, default=None, metavar="SCRIPT",
                       help="answer the agent's model calls from a local stand-in of its provider's API (OpenAI chat "
                            "completions and Responses, Anthropic Messages) with SCRIPT's actions: a harness tested "
                            "without a model, a key or the network (deskbox.run.stub)")
    agent.add_argument("--agent-arg", action="append", default=[], metavar="KEY=VALUE",
                       help="a keyword argument for the agent's factory or class, which must declare it; VALUE is "
                            "read as JSON when it parses (42, true, \"text\", [1, 2]), else as text. Repeatable")
    p.add_argument("--sessions", type=int, default=1, help="sessions side by side")
    p.add_argument("--spare", type=int, default=1, help="sessions started ahead to replace broken ones")
    p.add_argument("--provider", choices=PROVIDERS, default="podman", help="where the sessions run")
    p.add_argument("--image", default="deskbox", help="the image (podman, kubernetes)")
    p.add_argument("--pool", metavar="NAMES",
                   help="with --provider kubernetes: claim sessions from a warm pool of running pods instead of "
                        "starting them, found by a headless Service's DNS name (deploy/run/: deskbox) or by "
                        "comma-separated addresses; what a runner inside the cluster uses")
    p.add_argument("--attach", action="append", metavar="OSWORLD_URL,SCENE_URL",
                   help="a running session (--provider attach), once per session")
    p.add_argument("--screen", type=_screen, default=(1920, 1080), metavar="WxH", help="each session's display")
    p.add_argument("--observation-type", choices=OBSERVATION_TYPES, default="screenshot")
    p.add_argument("--action-space", choices=ACTION_SPACES, default="pyautogui")
    p.add_argument("--max-steps", type=int, default=15, help="agent predictions per task")
    p.add_argument("--repeats", type=int, default=1, metavar="K",
                   help="run every task K times: the summary gives the mean with its 95%% interval, pass@k and "
                        "pass^k; a run resumed with a larger K adds the missing repeats")
    p.add_argument("--sleep-after-action", type=float, default=0.0, help="seconds after each action")
    p.add_argument("--task-timeout", type=float, default=None, metavar="SECONDS",
                   help="a task's wall-clock bound, from its reset to its score: one past it ends as agent_error (or "
                        "grader_error, when grading ran out of it), naming the cause, and the run goes on")
    p.add_argument("--retry-errors", type=_statuses, default=(), metavar="STATUS,...",
                   help="run a task that ends in one of these (agent_error, grader_error, setup_error) again on its "
                        "session, up to --error-retries times with a backoff: rate limits and dropped connections "
                        "are the usual passing ones")
    p.add_argument("--error-retries", type=int, default=2, metavar="N", help="with --retry-errors: at most N more runs")
    p.add_argument("--retry-backoff", type=float, default=10.0, metavar="SECONDS",
                   help="with --retry-errors: the wait before the first run again, doubled before each next one")
    p.add_argument("--step-timeout", type=float, default=None, metavar="SECONDS",
                   help="the bound of one predict() of the agent: a hung agent ends its task as agent_error, and its "
                        "worker goes on with a new agent")
    p.add_argument("--admit", type=int, default=None, metavar="N",
                   help="at most N sessions start, reset or start a task's apps at once on this machine, every run "
                        "on it counted; the others wait their turn, so that a burst does not slow every session's "
                        "steps (default: one per core with podman and local sessions; for sessions elsewhere, "
                        "one per 10 of the run's sessions, in this run alone; 0: no limit)")
    p.add_argument("--admit-reads", type=int, default=None, metavar="N",
                   help="at most N accessibility tree reads at once on this machine, every run on it counted (its "
                        "own slots: a read waits behind reads, never behind a setup); the wait is part of the "
                        "observation (default 0, no limit: measured on 2 cores, a limit of 2 or 4 made the "
                        "observations slower, the short reads waiting behind the long ones)")
    p.add_argument("--ready-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="after a task's setup, wait until its session is quiet (the apps it started have started), "
                        "at most SECONDS, before the agent's first observation: OSWorld's scripts sleep 60 s there "
                        "(0: no wait)")
    p.add_argument("--stagger", type=float, default=0.0, metavar="SECONDS",
                   help="start session i's first task i x SECONDS after the first (--admit paces the sessions "
                        "without it)")
    p.add_argument("--domains", nargs="*", default=[], help="only these domains")
    p.add_argument("--tasks", dest="task_ids", nargs="*", default=[], metavar="ID",
                   help="only these tasks (id or domain/id)")
    p.add_argument("--limit", type=int, default=None, help="the first N tasks selected")
    p.add_argument("--out", type=Path, default=Path("results"), help="the run's folder")
    p.add_argument("--cache", type=Path, default=None, metavar="DIR",
                   help="read the files the tasks download from this cache (deskbox tasks fetch fills it), not the "
                        "network: the same bytes every run; what it lacks is named before the run starts")
    p.add_argument("--graders", type=Path, default=None, metavar="PATH",
                   help="take OSWorld's getters and metrics from this checkout of OSWorld's repository, not from "
                        "the desktop-env package (a newer task set names graders the package does not have)")
    p.add_argument("--force", action="store_true",
                   help="go on with a run in --out although the agent, its settings, the options or the tasks "
                        "differ from what its run.json says (results of both end up mixed)")
    p.add_argument("--record", action="store_true",
                   help="record each task's screen (recording.mp4 in its folder of OSWorld's layout, as OSWorld's "
                        "run does): costs the session's CPU while the agent acts")
    p.add_argument("--no-trace", action="store_true",
                   help="keep no deskbox trace of each task (the screenshots the agent saw are kept anyway)")
    return p


def report_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="deskbox run report",
                                description="Write DIR/report.html for a run; with OTHER, its differences from it")
    p.add_argument("dir", type=Path)
    p.add_argument("other", type=Path, nargs="?")
    args = p.parse_args(argv)
    try:
        page = write_report(args.dir, args.other)
    except FileNotFoundError as exc:
        print(f"deskbox run report: {exc}", file=sys.stderr)
        return 2
    print(page)
    if args.other is not None:
        # DIR against OTHER, on stderr (stdout is the page's path alone, for scripts)
        compared = stats.paired(list(read_results(args.other).values()), list(read_results(args.dir).values()))
        print(json.dumps({"compared": compared}), file=sys.stderr)
        interval = " to ".join(str(v) for v in compared["interval95"]) if compared["interval95"] else "n/a"
        print(f"  {args.dir} against {args.other} on {compared['tasks']} tasks both ran: difference "
              f"{compared['difference']} (95% interval {interval}); better on {compared['better']}, worse on "
              f"{compared['worse']}, the same on {compared['same']}", file=sys.stderr)
    return 0


def tasks_main(argv: list[str]) -> int:
    """``deskbox tasks fetch TASKS --cache DIR``."""
    p = argparse.ArgumentParser(
        prog="deskbox tasks", description="The files OSWorld-format tasks download, mirrored for offline runs")
    sub = p.add_subparsers(dest="command", required=True)
    fetch = sub.add_parser("fetch", help="download every file the tasks' setups and graders fetch (download steps, "
                                         "cloud_file gold files, update_browse_history's database) into DIR, "
                                         "kept by content with a manifest of their URLs; what DIR holds is kept")
    fetch.add_argument("tasks", nargs="+", metavar="TASKS", help="as deskbox run takes them")
    fetch.add_argument("--cache", type=Path, required=True, metavar="DIR")
    fetch.add_argument("--domains", nargs="*", default=[])
    fetch.add_argument("--tasks", dest="task_ids", nargs="*", default=[], metavar="ID")
    args = p.parse_args(argv)
    try:
        tasks = load_tasks(args.tasks, domains=args.domains, ids=args.task_ids)
    except TaskError as exc:
        print(f"deskbox tasks: {exc}", file=sys.stderr)
        return 2
    cache = Cache(args.cache)

    def said(url: str, error: str | None) -> None:
        print(f"{'failed' if error else 'fetched'}: {url}" + (f": {error}" if error else ""), file=sys.stderr)

    failed = cache.fetch(tasks, on_file=said)
    missing = cache.missing(tasks)
    print(json.dumps({"tasks": len(tasks), "files": len(cache.manifest), "failed": len(failed),
                      "tasks_missing_files": len(missing)}))
    return 1 if failed else 0


def _cache_for(folder: Path | None, tasks: list) -> Cache | None:
    """The run's cache, its gaps for these tasks said before anything starts."""
    if folder is None:
        return None
    if not (folder / "manifest.json").is_file():
        raise TaskError(f"--cache {folder}: no cache there (deskbox tasks fetch TASKS --cache {folder} makes one)")
    cache = Cache(folder)
    missing = cache.missing(tasks)
    if missing:
        urls = sorted({u for found in missing.values() for u in found})
        print(f"deskbox run: {len(missing)} task(s) download {len(urls)} file(s) the cache lacks; their setup or "
              f"grading will reach for the network: " + "; ".join(
                  f"{key}: {', '.join(found)}" for key, found in sorted(missing.items()))[:4000], file=sys.stderr)
    return cache


def _digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _admission_slots(args: argparse.Namespace) -> int:
    """--admit, or its default: one slot per core of this machine for the sessions it
    runs, and for sessions elsewhere one per SESSIONS_PER_SLOT of the run's (0: no
    admission)."""
    if args.admit is not None:
        return max(0, args.admit)
    if args.provider in ("podman", "local"):
        return default_slots()
    return max(1, -(-args.sessions // SESSIONS_PER_SLOT))


def _read_slots(args: argparse.Namespace) -> int:
    """--admit-reads, or its default (deskbox.run.admission.default_read_slots): for
    sessions elsewhere, none (their reads are on their own nodes)."""
    if args.admit_reads is not None:
        return max(0, args.admit_reads)
    return default_read_slots() if args.provider in ("podman", "local") else 0


def _layout_model(args: argparse.Namespace) -> str:
    """The model folder of OSWorld's layout: --model for an agent of one's own, the
    built-in agent's name (noop, script, replay) for those, which ask no model."""
    return built_in(args.agent) or args.model


def _changed(out: Path, identity: dict) -> list[str]:
    """What differs from the run ``out`` holds, when it holds results to go on from."""
    results, recorded = out / "results.jsonl", out / "run.json"
    if not (results.is_file() and results.stat().st_size and recorded.is_file()):
        return []
    try:
        before = json.loads(recorded.read_text())
    except ValueError:
        return []
    return differences(before, identity) if isinstance(before, dict) else []


def _remove_leftovers(make_session: object) -> list[Leftover]:
    """The containers of runners that died (killed outright: they could not remove them),
    removed; said on stderr."""
    remove = getattr(make_session, "remove_leftovers", None)
    if remove is None:
        return []
    try:
        found = remove()
    except ProviderError as exc:
        print(f"deskbox run: could not look for containers of runners that died: {exc}", file=sys.stderr)
        return []
    if found:
        print(f"deskbox run: removed {len(found)} container(s) of runners that died: "
              + ", ".join(f"{f.name} ({f.why})" for f in found), file=sys.stderr)
    return found


_STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _handled(sig: int) -> bool:
    """Whether ``deskbox run`` handles ``sig``: not a SIGHUP that nohup ignores."""
    return sig != signal.SIGHUP or signal.getsignal(sig) is not signal.SIG_IGN


def _say(text: str) -> None:
    """A line on stderr, which may be a terminal that hung up (SIGHUP): ending goes on."""
    try:
        print(text, file=sys.stderr, flush=True)
    except OSError:
        pass


class _Ending:
    """The run's end, however it came: from ``begin()`` on, a stop signal raises nothing
    where the ending is (no KeyboardInterrupt half-way through a removal). The first sets
    ``hurry``, which makes the pool skip its wait for sessions still starting; any says
    that removing what the run started is not skipped (after a SIGKILL, the next run
    removes it). ``begin()`` comes first in the ending, before anything is said: a second
    Ctrl+C pressed after the first's answer is seen always as the second."""

    def __init__(self) -> None:
        self.hurry = threading.Event()
        self._previous: dict[int, object] = {}

    def begin(self) -> None:
        if not self._previous:
            self._previous = {sig: signal.signal(sig, self._signal) for sig in _STOPPING if _handled(sig)}

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}

    def _signal(self, signum: int, frame: object) -> None:
        if self.hurry.is_set():
            _say("deskbox run: removing what this run started first; that is not skipped (after a SIGKILL, the "
                 "next run removes it)")
        else:
            self.hurry.set()
            _say("deskbox run: interrupted: not waiting for sessions still starting; removing what this run "
                 "started")


def _end(pool: Pool | None, make_session: object, hurry: threading.Event) -> None:
    """However the run ends, nothing it started is left. The pool stops its sessions and
    waits for those still starting (unless ``hurry`` is set: a second Ctrl+C or SIGTERM);
    then whatever this run started that is still there goes: containers by their owner
    label, those whose ``podman run`` was in flight included. The podman commands do not
    get the terminal's Ctrl+C."""
    try:
        if pool is not None:
            pool.close(hurry)
    finally:
        try:
            close = getattr(make_session, "close", None)
            removed = close() if close is not None else []
            if removed:
                _say(f"deskbox run: removed {len(removed)} session(s) still there at its end: {', '.join(removed)}")
        except Exception as exc:  # said: the run's own outcome stands
            _say(f"deskbox run: could not remove every session this run started: {exc}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["report"]:
        return report_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.sessions < 1 or args.max_steps < 1 or args.repeats < 1:
        print("deskbox run: --sessions, --max-steps and --repeats are at least 1", file=sys.stderr)
        return 2
    if args.error_retries < 0 or args.retry_backoff < 0:
        print("deskbox run: --error-retries and --retry-backoff are at least 0", file=sys.stderr)
        return 2
    if any(t is not None and t <= 0 for t in (args.task_timeout, args.step_timeout)):
        print("deskbox run: --task-timeout and --step-timeout are more than 0 seconds", file=sys.stderr)
        return 2
    try:
        if args.graders is not None:
            graders.use(args.graders)
    except graders.GraderUnavailable as exc:
        print(f"deskbox run: --graders: {exc}", file=sys.stderr)
        return 2
    stub: StubServer | None = None
    if args.model_stub is not None:
        try:
            stub = StubServer(Script.read(args.model_stub)).start()
        except ScriptError as exc:
            print(f"deskbox run: --model-stub: {exc}", file=sys.stderr)
            return 2
        # Before the agent is built: SDKs and agents read these when they are made or imported.
        os.environ.update(stub_environment(stub.url))
    try:
        return _run(args, stub)
    finally:
        if stub is not None:
            stub.stop()


def _run(args: argparse.Namespace, stub: "StubServer | None") -> int:
    try:
        tasks = load_tasks(args.tasks, domains=args.domains, ids=args.task_ids, limit=args.limit)
        files = _cache_for(args.cache, tasks)
        settings = {key: getattr(args, key) for key in OSWORLD_SETTINGS}
        agent_args = dict(parse_agent_arg(a) for a in args.agent_arg)
        make_agent = agent_factory(args.agent, action_space=args.action_space,
                                   observation_type=args.observation_type, max_steps=args.max_steps,
                                   settings=settings, args=agent_args)
    except (TaskError, AgentError) as exc:
        print(f"deskbox run: {exc}", file=sys.stderr)
        return 2
    slots = _admission_slots(args)
    read_slots = _read_slots(args)
    identity = describe(agent=args.agent, agent_settings=settings, agent_args=agent_args, tasks=tasks,
                        provider=args.provider, image=args.image, graders=graders.source(),
                        options={"max_steps": args.max_steps, "observation_type": args.observation_type,
                                 "action_space": args.action_space, "sleep_after_action": args.sleep_after_action,
                                 "screen": list(args.screen), "task_timeout_s": args.task_timeout,
                                 "step_timeout_s": args.step_timeout, "repeats": args.repeats,
                                 "ready_timeout_s": args.ready_timeout, "admit": slots, "admit_reads": read_slots,
                                 "model_stub": _digest(args.model_stub) if stub is not None else None})
    # Repeat 0 of every task first, then repeat 1 ...: a run stopped early has whole repeats.
    tasks = [replace(t, repeat=r) for r in range(args.repeats) for t in tasks]
    changed = _changed(args.out, identity)
    if changed and not args.force:
        print(f"deskbox run: {args.out} holds a run that was started otherwise; going on with it now would mix two "
              f"runs' results:\n  " + "\n  ".join(changed) + "\nGive another --out, the same options and tasks, or "
              "--force to go on all the same.", file=sys.stderr)
        return 2
    if changed:
        identity["forced"] = changed
    try:
        path_part(_layout_model(args))
    except ValueError as exc:
        print(f"deskbox run: --model {exc}", file=sys.stderr)
        return 2
    try:
        make_session = session_factory(args.provider, image=args.image, outputs=[f"{args.screen[0]}x{args.screen[1]}"],
                                       attach=args.attach, pool=args.pool)
    except ProviderError as exc:
        print(f"deskbox run: {exc}", file=sys.stderr)
        return 2
    # Sessions this machine runs share its slots with every other run on it; a cluster's
    # are spread over nodes, and their slots bound this run's bursts alone.
    folder = ADMISSION_DIR if args.provider in ("podman", "local") else None
    admission = Admission(slots, folder) if slots else None
    reads = Admission(read_slots, folder, kind="read") if read_slots else None
    options = RunOptions(out=args.out, max_steps=args.max_steps, sleep_after_action=args.sleep_after_action,
                         observation_type=args.observation_type, action_space=args.action_space, screen=args.screen,
                         trace=not args.no_trace, stagger_s=args.stagger, files=files, identity=identity,
                         task_timeout_s=args.task_timeout, step_timeout_s=args.step_timeout,
                         retry_errors=args.retry_errors, error_retries=args.error_retries,
                         retry_backoff_s=args.retry_backoff, layout_model=_layout_model(args), record=args.record,
                         admission=admission, heavy_weight=HEAVY_WEIGHT, ready_timeout_s=args.ready_timeout,
                         read_admission=reads)
    sessions = min(args.sessions, len(tasks))
    runner: Runner | None = None
    pool: Pool | None = None
    ending = _Ending()
    # Ctrl+C, SIGTERM (what Kubernetes sends a Job's pod it deletes) and a terminal that
    # hangs up stop the run the same way: no task starts after it, the sessions are
    # stopped, the same command goes on. SIGINT and SIGTERM are set, not inherited: a
    # shell's background job starts with SIGINT ignored, and the default SIGTERM would
    # leave every session running. An ignored SIGHUP (nohup) stays ignored.
    for sig in _STOPPING:
        if _handled(sig):
            signal.signal(sig, signal.default_int_handler)
    # (attached and pooled sessions are running already: none is started ahead)
    spare = 0 if args.provider == "attach" or args.pool else args.spare
    try:
        leftovers = _remove_leftovers(make_session)
        pool = Pool(make_session, sessions, spare=spare, on_event=lambda e: runner.event(e) if runner else None,
                    admit=admission.slot if admission is not None else None)
        runner = Runner(tasks, make_agent, pool, options)
        if leftovers:
            runner.event({"event": "leftovers_removed", "containers": [
                {"name": f.name, "owner_pid": f.owner_pid, "why": f.why} for f in leftovers]})
        if runner.skipped:
            print(f"deskbox run: {len(runner.skipped)} task(s) already done in {args.out}, skipped", file=sys.stderr)
        runner.run(sessions)
        unrun = runner.unrun
    except ProviderError as exc:
        print(f"deskbox run: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        ending.begin()
        # Before the pool closes (which waits for sessions still starting): its
        # workers would go on taking tasks meanwhile, and the run end complete.
        if runner is not None:
            runner.stop()
        left = f"{len(runner.unrun)} task(s)" if runner is not None else "the tasks"
        _say(f"deskbox run: interrupted; {left} not started: the same command goes on with them. Stopping the "
             "sessions (Ctrl+C again: without waiting for those still starting)")
        return 130
    finally:
        ending.begin()
        try:
            _end(pool, make_session, ending.hurry)
        finally:
            ending.restore()
    records = list(read_results(args.out).values())
    result = summary(records)
    (args.out / "summary.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result["total"]))
    for domain, d in sorted(result["domains"].items()):
        print(f"  {domain}: {d['graded']}/{d['tasks']} graded, mean {d['mean_all']} over every task (an error "
              f"counts 0), {d['mean_graded']} over the graded; infra errors {d['infra_error']}")
    if args.repeats > 1:
        st = result["statistics"]
        interval = " to ".join(str(v) for v in st["interval95"]) if st["interval95"] else "n/a"
        print(f"  {st['tasks']} tasks x {st['repeats']} repeats: mean {st['mean']} (95% interval {interval}); "
              + ", ".join(f"pass@{k} {v}" for k, v in st["pass_at"].items()) + "; "
              + ", ".join(f"pass^{k} {v}" for k, v in st["pass_hat"].items()))
    if runner.worker_errors or unrun:
        print(f"deskbox run: {len(unrun)} task(s) not run: every session was lost "
              f"({'; '.join(runner.worker_errors)[-1500:]}); the same command goes on with them", file=sys.stderr)
        return 1
    return 0
