"""``deskbox run TASKS --agent SPEC ...`` and ``deskbox run report DIR [OTHER]``."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from ..provider import ProviderError
from .agents import AgentError, agent_factory
from .episode import ACTION_SPACES, OBSERVATION_TYPES
from .report import write_report
from .runner import Runner, RunOptions, read_results, summary
from .sessions import PROVIDERS, Pool, session_factory
from .tasks import TaskError, load_tasks

__all__ = ["main", "build_parser"]


def _screen(text: str) -> tuple[int, int]:
    w, sep, h = text.lower().partition("x")
    if not sep or not w.isdigit() or not h.isdigit() or not (320 <= int(w) <= 7680 and 240 <= int(h) <= 4320):
        raise argparse.ArgumentTypeError(f"{text!r}: WxH, e.g. 1920x1080")
    return int(w), int(h)


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
                   help="MODULE:FACTORY (OSWorld's agent interface), noop, script:FILE or replay:DIR")
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
    p.add_argument("--sleep-after-action", type=float, default=0.0, help="seconds after each action")
    p.add_argument("--stagger", type=float, default=0.0, metavar="SECONDS",
                   help="start session i's first task i x SECONDS after the first, so that N sessions do not all "
                        "reset and start their apps at once")
    p.add_argument("--domains", nargs="*", default=[], help="only these domains")
    p.add_argument("--tasks", dest="task_ids", nargs="*", default=[], metavar="ID",
                   help="only these tasks (id or domain/id)")
    p.add_argument("--limit", type=int, default=None, help="the first N tasks selected")
    p.add_argument("--out", type=Path, default=Path("results"), help="the run's folder")
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
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["report"]:
        return report_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.sessions < 1 or args.max_steps < 1:
        print("deskbox run: --sessions and --max-steps are at least 1", file=sys.stderr)
        return 2
    try:
        tasks = load_tasks(args.tasks, domains=args.domains, ids=args.task_ids, limit=args.limit)
        make_agent = agent_factory(args.agent, action_space=args.action_space,
                                   observation_type=args.observation_type, max_steps=args.max_steps)
        make_session = session_factory(args.provider, image=args.image, outputs=[f"{args.screen[0]}x{args.screen[1]}"],
                                       attach=args.attach, pool=args.pool)
    except (TaskError, AgentError, ProviderError) as exc:
        print(f"deskbox run: {exc}", file=sys.stderr)
        return 2
    options = RunOptions(out=args.out, max_steps=args.max_steps, sleep_after_action=args.sleep_after_action,
                         observation_type=args.observation_type, action_space=args.action_space, screen=args.screen,
                         trace=not args.no_trace, stagger_s=args.stagger)
    sessions = min(args.sessions, len(tasks))
    runner: Runner | None = None
    # Ctrl+C, and SIGTERM (what Kubernetes sends a Job's pod it deletes), stop the run
    # the same way: no task starts after it, the sessions are stopped, the same command
    # goes on. Both are set, not inherited: a shell's background job starts with SIGINT
    # ignored, and the default SIGTERM would leave every session running.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.default_int_handler)
    # (attached and pooled sessions are running already: none is started ahead)
    spare = 0 if args.provider == "attach" or args.pool else args.spare
    with Pool(make_session, sessions, spare=spare,
              on_event=lambda e: runner.event(e) if runner else None) as pool:
        runner = Runner(tasks, make_agent, pool, options)
        if runner.skipped:
            print(f"deskbox run: {len(runner.skipped)} task(s) already done in {args.out}, skipped", file=sys.stderr)
        try:
            runner.run(sessions)
        except ProviderError as exc:
            print(f"deskbox run: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            # Before the pool closes (which waits for sessions still starting): its
            # workers would go on taking tasks meanwhile, and the run end complete.
            runner.stop()
            print(f"deskbox run: interrupted; {len(runner.unrun)} task(s) not started: the same command goes on "
                  "with them", file=sys.stderr)
            return 130
        unrun = runner.unrun
    records = list(read_results(args.out).values())
    result = summary(records)
    (args.out / "summary.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result["total"]))
    for domain, d in sorted(result["domains"].items()):
        print(f"  {domain}: {d['graded']}/{d['tasks']} graded, mean {d['mean']}, infra errors {d['infra_error']}")
    if runner.worker_errors or unrun:
        print(f"deskbox run: {len(unrun)} task(s) not run: every session was lost "
              f"({'; '.join(runner.worker_errors)[-1500:]}); the same command goes on with them", file=sys.stderr)
        return 1
    return 0
