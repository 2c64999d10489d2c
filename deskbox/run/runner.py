"""A benchmark run: every task on a session of the pool, graded, one JSON line each.

Per task, as OSWorld's ``lib_run_single`` does with a ``DesktopEnv``: the session is reset
to its ``start`` snapshot and the config's setup runs; the agent is asked for actions up
to ``max_steps`` times, each done and followed by ``sleep_after_action``; then the
postconfig runs and OSWorld's getters and metrics grade.

What the out folder holds:

- ``results.jsonl``: one line per finished task: ``task`` (``domain/id``), ``status``
  (``done``, ``setup_error``, ``agent_error``, ``grader_error``, ``infra_error``), ``score`` (null unless
  graded), ``steps``, ``actions``, ``timings`` (reset, setup, agent, grading, total),
  ``session``, ``attempts``, ``infra_errors``, ``error``, ``step_timings`` (per
  action: ``action_s`` to carry it out, ``observe_s`` for the observation after it),
  and ``graded`` (per metric: what its getters answered, cut, and its score);
- ``tasks/<domain>/<id>/``: the task's config (``task.json``), the screenshot the agent
  saw before each step and after the last (``step_000.png`` ...), its responses
  (``steps.json``), and the session's
  trace of the agent's steps (``trace/``: each action with the element it hit and
  screenshots before and after it; ``deskbox trace view`` shows it) where the provider
  can copy it out (local and podman sessions; elsewhere its path in the session is
  recorded);
- ``events.jsonl``: sessions started and replaced, tasks started (with the session);
- ``run.json``: what the run is (``deskbox.run.identity``): the agent and its settings,
  the options, the task set's hash, the versions and image it ran on; ``earlier``, what
  each earlier start of the run in this folder wrote.

An infrastructure failure (a session that died or would not reset, a setup step that
failed in a session that then did not answer) is never a score: the task is run again
once, on the same session when it answers, on a fresh one when it does not, and, failing
again, recorded as ``infra_error``. A setup step that fails in a healthy session (a
download that did not answer) is the task's own ``setup_error``: the session is not
replaced, and goes on to the next task. A run stopped at any point resumes with
the same command: tasks with a line in ``results.jsonl`` are skipped, but for
``infra_error`` ones, which run again."""

from __future__ import annotations

import datetime
import inspect
import json
import logging
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable

from ..provider import Environment, ProviderError
from .admission import Admission
from .agents import CurrentEpisode, predict, reset_agent, steps_itself
from .cache import Cache
from .episode import Episode, InfrastructureError, SetupFailed
from .graders import GraderUnavailable
from .layout import OSWorldFolder
from .sessions import Pool
from .tasks import Task

__all__ = ["RunOptions", "Runner", "read_results", "task_folder", "record_folder"]


@dataclass
class RunOptions:
    out: Path
    max_steps: int = 15
    sleep_after_action: float = 0.0
    observation_type: str = "screenshot"
    action_space: str = "pyautogui"
    screen: tuple[int, int] = (1920, 1080)
    retries: int = 1  # runs again on a fresh session after an infrastructure failure
    # Wall-clock bounds: a task from its reset to its score, one predict() of the agent.
    task_timeout_s: float | None = None
    step_timeout_s: float | None = None
    # Statuses run again on the same session (a rate limit, a dropped connection): up to
    # ``error_retries`` times, ``retry_backoff_s`` before the first, doubling each time.
    retry_errors: tuple[str, ...] = ()
    error_retries: int = 2
    retry_backoff_s: float = 10.0
    trace: bool = True  # a deskbox trace of the agent's steps per task, copied into its folder
    # Worker i starts its first task i x stagger_s after the first: N sessions that all
    # reset and start their apps in the same second slow each other's first steps.
    stagger_s: float = 0.0
    # The pacing that makes staggering needless (deskbox.run.admission): each task's
    # reset, setup and wait for its apps hold a slot of ``admission``, with the session's
    # CPU weight at ``heavy_weight`` of its own; after the setup the session is waited
    # for until it is quiet, at most ``ready_timeout_s`` (OSWorld's scripts sleep 60 s).
    admission: Admission | None = None
    heavy_weight: float = 1.0
    ready_timeout_s: float = 0.0
    # Each accessibility tree read holds a slot of this (kind ``read``): so many at once.
    read_admission: Admission | None = None
    progress: bool = field(default_factory=lambda: sys.stderr.isatty())
    # The tasks' downloads, read from here rather than the network (deskbox.run.cache).
    files: Cache | None = None
    # What the run is, for run.json (deskbox.run.identity.describe).
    identity: dict[str, Any] = field(default_factory=dict)
    # The model's folder of OSWorld's results layout (deskbox.run.layout); None: the run
    # writes its own layout alone.
    layout_model: str | None = None
    # A recording of each task, in its folder of OSWorld's layout (recording.mp4).
    record: bool = False


class TaskTimeout(RuntimeError):
    """A bounded part of a task (the agent's predict(), the grading) did not end in time."""


def _bounded(call: Callable[[], Any], limit: float | None, what: str, why: str) -> Any:
    """``call()``, given at most ``limit`` seconds (None: as long as it takes). One that
    does not end in time is left running in its thread (a thread cannot be stopped) and
    :class:`TaskTimeout` is raised, naming ``what`` and ``why``."""
    if limit is None:
        return call()
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the caller, whatever it is
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True, name=f"bounded-{what}")
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        raise TaskTimeout(f"timeout: {what} had not ended after {limit:.0f} s ({why})")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@contextmanager
def _task_logger(task: Task, path: Path):
    """The logger an agent's ``reset(logger)`` gets (OSWorld's run scripts pass their
    ``runtime_logger``): the task's ``runtime.log``, not the run's stderr."""
    logger = logging.getLogger(f"deskbox.run.task.{task.key}")
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield logger
    finally:
        logger.removeHandler(handler)
        handler.close()


def task_folder(out: Path, run_dir: str, domain: str, task_id: str) -> Path:
    """Where a task's own files are (its screenshots, steps.json, runtime.log): ``run_dir``
    is the record's repeat's (``Task.run_dir``; "" for the first)."""
    return Path(out) / run_dir / "tasks" / domain / task_id


def record_folder(out: Path, record: dict) -> Path:
    """:func:`task_folder` of a record in ``results.jsonl``."""
    repeat = int(record.get("repeat") or 0)
    return task_folder(out, f"repeat-{repeat}" if repeat else "", record["domain"], record["id"])


def read_results(out: Path) -> dict[str, dict]:
    """The last line of each task (each repeat of one) in ``results.jsonl``, by its key."""
    found: dict[str, dict] = {}
    path = Path(out) / "results.jsonl"
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                found[record["task"]] = record
    return found


def _takes_env(make: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(make).parameters
    except (TypeError, ValueError):
        return False
    return "env" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _jsonable(action: Any) -> Any:
    try:
        json.dumps(action)
        return action
    except TypeError:
        return repr(action)


class Runner:
    def __init__(self, tasks: list[Task], make_agent: Callable[..., Any], pool: Pool, options: RunOptions) -> None:
        self.tasks = tasks
        # (make_agent(env=...) gives an agent that takes ``env`` the worker's episode; a
        # plain factory, as the benches pass, is called without it)
        self.make_agent = make_agent if _takes_env(make_agent) else (lambda env=None: make_agent())
        self.pool = pool
        self.options = options
        self.out = Path(options.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        done = read_results(self.out)
        self.skipped = [t for t in tasks if done.get(t.key, {}).get("status") not in (None, "infra_error")]
        skip = {t.key for t in self.skipped}
        self._queue = [t for t in tasks if t.key not in skip]
        self._started = time.monotonic()
        self.finished: list[dict] = []
        self._running = 0
        # Workers that stopped early (no session left to run on, or a bug): their
        # errors; the tasks they did not take stay in ``unrun``.
        self.worker_errors: list[str] = []
        self._stopped = False

    # -- bookkeeping ------------------------------------------------------------------------

    def event(self, event: dict) -> None:
        with self._lock, open(self.out / "events.jsonl", "a") as f:
            f.write(json.dumps({"t": round(time.time(), 3), **event}) + "\n")

    def _next(self, holding: bool) -> Task | None:
        """The next task; ``holding``: whether the worker has a session to run it on."""
        with self._lock:
            if not self._queue or self._stopped:
                return None
            self._running += 1
            task = self._queue.pop(0)
            waiting = len(self._queue) + (0 if holding else 1)
        self.pool.want(waiting)  # idle sessions follow the tasks still without one
        return task

    def _put_back(self, task: Task) -> None:
        with self._lock:
            self._queue.insert(0, task)
            self._running = max(0, self._running - 1)

    def _finish(self, record: dict) -> None:
        with self._lock:
            self._running = max(0, self._running - 1)
            if self._stopped and record["status"] == "infra_error":
                # Its session went with the interrupted run, not by a fault: no line, so
                # that the same command runs it again rather than count it done twice.
                self._queue[:0] = [t for t in self.tasks if t.key == record["task"]]
                return
            self.finished.append(record)
            with open(self.out / "results.jsonl", "a") as f:
                f.write(json.dumps(record) + "\n")
            line = self._progress_line(record)
        if self.options.progress:
            sys.stderr.write("\r\033[K" + line + ("\n" if record["status"] != "done" else ""))
        else:
            sys.stderr.write(json.dumps({"event": "task_done", "task": record["task"], "status": record["status"],
                                         "score": record["score"], "progress": line}) + "\n")
        sys.stderr.flush()

    def _progress_line(self, record: dict) -> str:
        done = len(self.finished)
        total = done + len(self._queue) + self._running
        scores = [r["score"] for r in self.finished if r["score"] is not None]
        failed = sum(r["status"] != "done" for r in self.finished)
        elapsed = time.monotonic() - self._started
        eta = elapsed / done * (total - done) if done else 0
        return (f"[{done}/{total}] {record['task']}: {record['status']} {record['score']} · running {self._running} · "
                f"failed {failed} · score {sum(scores):.1f}/{len(scores)} · ETA {eta:.0f}s")

    # -- the run ----------------------------------------------------------------------------

    def run(self, workers: int) -> list[dict]:
        path = self.out / "run.json"
        try:
            before = json.loads(path.read_text()) if path.is_file() else None
        except ValueError:
            before = None
        earlier = [*before.pop("earlier", []), before] if isinstance(before, dict) and self.skipped else []
        path.write_text(json.dumps({
            "max_steps": self.options.max_steps, "observation_type": self.options.observation_type,
            "action_space": self.options.action_space, "sleep_after_action": self.options.sleep_after_action,
            "screen": list(self.options.screen), **self.options.identity,
            "started": time.time(), "tasks": len(self.tasks), "skipped_as_done": len(self.skipped),
            "sessions": workers, "earlier": earlier}, indent=1))
        threads = [threading.Thread(target=self._worker, args=(i * self.options.stagger_s,), name=f"run-worker-{i}",
                                    daemon=True) for i in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self.options.progress:
            sys.stderr.write("\n")
        return self.finished

    def stop(self) -> None:
        """No task starts from now on (the run was interrupted); those running end as
        they do, the rest stay in ``unrun`` for the same command to go on with."""
        with self._lock:
            self._stopped = True

    @property
    def unrun(self) -> list[Task]:
        with self._lock:
            return list(self._queue)

    def _worker(self, delay_s: float = 0.0) -> None:
        if delay_s:
            time.sleep(delay_s)
        env: Environment | None = None
        try:
            agent = self.make_agent(env=CurrentEpisode())
            # A task first, then a session: a worker that finds the queue empty takes none.
            task = self._next(holding=False)
            if task is None:
                return
            try:
                env = self.pool.take()
            except Exception:
                self._put_back(task)
                raise
            while env is not None and task is not None:
                record, env, agent = self._task_retried(task, agent, env)
                self._finish(record)
                task = self._next(holding=True) if env is not None else None
            if env is not None:
                # The queue is empty: this session has run its last task.
                self.pool.retire(env)
                env = None
        except Exception as exc:  # said, and counted: the run ends with an error, not quietly
            message = f"{threading.current_thread().name}: {type(exc).__name__}: {exc}"
            with self._lock:
                self.worker_errors.append(message)
            self.event({"event": "worker_stopped", "error": message[-2000:]})
            sys.stderr.write(f"deskbox run: {message}\n")
        finally:
            if env is not None:
                self.pool.release(env)

    def _task_retried(self, task: Task, agent: Any, env: Environment) -> tuple[dict, Environment | None, Any]:
        """The task, run again while it ends in one of ``retry_errors`` (with a backoff),
        and the agent to go on with: a new one after one that hung."""
        o = self.options
        earlier: list[dict] = []
        while True:
            record, env = self._task(task, agent, env)
            if record.get("timed_out") == "agent":
                # Its predict() still runs in the thread it was left in: the worker goes
                # on with a new agent.
                agent = self.make_agent(env=CurrentEpisode())
            with self._lock:
                stopped = self._stopped
            if env is None or stopped or record["status"] not in o.retry_errors or len(earlier) >= o.error_retries:
                break
            wait = o.retry_backoff_s * 2 ** len(earlier)
            earlier.append({"status": record["status"], "error": record.get("error")})
            self.event({"event": "task_retried", "task": task.key, "status": record["status"],
                        "error": (record.get("error") or "")[-500:], "after_s": wait})
            time.sleep(wait)
        if earlier:
            record["retried"] = earlier
        return record, env, agent

    def _task(self, task: Task, agent: Any, env: Environment) -> tuple[dict, Environment | None]:
        infra: list[str] = []
        attempt = 0
        while True:
            attempt += 1
            self.event({"event": "task_started", "task": task.key, "session": env.name, "attempt": attempt,
                        "pid": getattr(env, "pid", None)})
            try:
                record = self._attempt(task, agent, env)
            except InfrastructureError as exc:
                infra.append(str(exc)[-1000:])
                self.event({"event": "infra_error", "task": task.key, "session": env.name, "error": str(exc)[-1000:]})
                # Replaced only when it is unhealthy: starting another costs a minute
                # on a loaded machine, and a session that answers is as good as new
                # once reset.
                if (unhealthy := env.health()) is not None:
                    try:
                        env = self.pool.replace(env, f"{exc} (then: {unhealthy})")
                    except ProviderError as lost:  # no session to go on with: this worker stops here
                        infra.append(f"no session to run it again on: {lost}"[-1000:])
                        env = None
                if env is None or attempt > self.options.retries:
                    return ({"task": task.key, "domain": task.domain, "id": task.id, "repeat": task.repeat,
                             "instruction": task.instruction,
                             "status": "infra_error", "score": None, "steps": 0, "actions": [], "timings": {},
                             "session": None, "attempts": attempt, "infra_errors": infra,
                             "error": infra[-1]}, env)
                continue
            record.update(attempts=attempt, infra_errors=infra)
            return record, env

    def _attempt(self, task: Task, agent: Any, env: Environment) -> dict:
        o = self.options
        folder = task_folder(self.out, task.run_dir, task.domain, task.id)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "task.json").write_text(json.dumps(task.config, indent=1))
        for old in folder.glob("step_*.png"):
            old.unlink()
        started = time.monotonic()
        episode = Episode(env, task, observation_type=o.observation_type, action_space=o.action_space,
                          sleep_after_action=o.sleep_after_action, screen=o.screen, files=o.files,
                          admission=o.admission, heavy_weight=o.heavy_weight, ready_timeout_s=o.ready_timeout_s,
                          read_admission=o.read_admission)
        # (OSWorld's controller waits 5 s between its retries; a session that does not
        # answer is found by the health check below instead.)
        episode.controller.retry_interval = 1
        if hasattr(agent, "begin_task"):
            agent.begin_task(task)
        if isinstance(getattr(agent, "env", None), CurrentEpisode):
            agent.env.episode = episode
        theirs = None
        if o.layout_model is not None:
            theirs = OSWorldFolder(self.out / task.run_dir, action_space=o.action_space, observation_type=o.observation_type,
                                   model=o.layout_model, domain=task.domain, task_id=task.id)
            theirs.begin()
        with _task_logger(task, folder / "runtime.log") as logger:
            if theirs is not None:
                theirs.place(folder / "runtime.log", "runtime.log")
            reset_agent(agent, logger, episode.vm_ip)
            record = self._episode(task, agent, env, episode, folder, started, theirs)
        if theirs is not None:
            theirs.result(record["score"])
        return record

    def _episode(self, task: Task, agent: Any, env: Environment, episode: Episode, folder: Path,
                 started: float, theirs: OSWorldFolder | None) -> dict:
        o = self.options
        record: dict[str, Any] = {"task": task.key, "domain": task.domain, "id": task.id, "repeat": task.repeat,
                                  "instruction": task.instruction, "session": env.name, "status": "done",
                                  "score": None, "steps": 0, "actions": [], "error": None}
        try:
            obs = episode.reset()
        except SetupFailed as exc:  # the task's own: recorded, the session goes on
            record.update(status="setup_error", error=str(exc)[-2000:], step_timings=[],
                          timings={k: round(v, 3) for k, v in {
                              **episode.timings, "total_s": time.monotonic() - started}.items()})
            return record
        responses: list[Any] = []
        infos: list[Any] = []
        shots = 0

        def shot(observation: dict) -> Path | None:
            nonlocal shots
            path = folder / f"step_{shots:03d}.png"
            shots += 1
            if isinstance(observation.get("screenshot"), bytes):
                path.write_bytes(observation["screenshot"])
                return path
            return None

        shot(obs)
        trace = self._trace_start(env, task)
        recording = o.record and theirs is not None and self._recording(episode, task)
        agent_started = time.monotonic()
        done = False
        itself = steps_itself(agent)
        try:
            for step in range(o.max_steps):
                limit = self._limit(started, o.step_timeout_s)
                response, actions, info = _bounded(partial(predict, agent, task.instruction, obs, step), limit,
                                                   "the agent's predict()", self._why(started, limit))
                record["steps"] += 1
                responses.append(_jsonable(response))
                infos.append(_jsonable(info))
                # An agent that steps itself (OSWorld's computer-use agent) ends the task
                # with an answer that is not a computer call: it says so in its response.
                ends = itself and isinstance(response, dict) and not response.get("state_correct", False)
                for action in actions:
                    if itself:
                        obs, reward, done, info, *_ = agent.step(action)
                        action = action.get("action", action) if isinstance(action, dict) else action
                    else:
                        obs, reward, done, info = episode.step(action)
                    when = datetime.datetime.now()
                    record["actions"].append(_jsonable(action))
                    path = shot(obs)
                    if theirs is not None:
                        theirs.step(step_num=step + 1, when=when, action=_jsonable(action),
                                    response=_jsonable(response), reward=reward, done=done, info=_jsonable(info),
                                    screenshot=path)
                    if ("execute" in info and info["execute"] is None) or obs.get("screenshot") is None:
                        if (problem := env.probe()) is not None:
                            raise InfrastructureError(f"the session stopped answering during the agent's steps: {problem}")
                    if done:
                        break
                if done or ends:
                    break
        except InfrastructureError:
            raise
        except TaskTimeout as exc:
            record.update(status="agent_error", error=str(exc), timed_out="agent")
        except Exception as exc:  # the agent's own failure: recorded, not graded
            record.update(status="agent_error", error=f"{type(exc).__name__}: {exc}"[-2000:])
        agent_s = time.monotonic() - agent_started
        if recording:
            self._end_recording(episode, task, theirs.path / "recording.mp4")  # type: ignore[union-attr]
        record["trace"] = self._trace_stop(env, trace, folder / "trace")
        steps = {"responses": responses, "actions": record["actions"]}
        if any(info is not None for info in infos):
            steps["infos"] = infos
        (folder / "steps.json").write_text(json.dumps(steps, indent=1))
        if (problem := env.probe()) is not None:
            raise InfrastructureError(f"the session is not healthy after the agent's steps: {problem}")
        if record["status"] == "done":
            try:
                limit = self._limit(started, None)
                record["score"] = _bounded(episode.evaluate, limit, "grading", self._why(started, limit))
            except InfrastructureError:
                raise
            except TaskTimeout as exc:
                record.update(status="grader_error", error=str(exc), timed_out="grading")
            except SetupFailed as exc:  # the postconfig's step, in a healthy session
                record.update(status="setup_error", error=str(exc)[-2000:])
            except GraderUnavailable as exc:
                record.update(status="grader_error", error=str(exc))
            except Exception as exc:
                lacking = f" (not in the cache: {', '.join(episode.not_cached)})" if episode.not_cached else ""
                record.update(status="grader_error", error=f"{type(exc).__name__}: {exc}"[-2000:] + lacking)
        if episode.graded:
            record["graded"] = episode.graded
        if episode.ready is not None:
            record["ready"] = episode.ready
        if episode.slot is not None:
            record["slot"] = episode.slot
        record["step_timings"] = episode.step_timings
        record["timings"] = {k: round(v, 3) for k, v in {
            **episode.timings, "agent_s": agent_s, "total_s": time.monotonic() - started}.items()}
        return record

    def _recording(self, episode: Episode, task: Task) -> bool:
        try:
            episode.controller.start_recording()
        except Exception as exc:  # (a recording is a record of the run, not part of the task)
            self.event({"event": "recording_failed", "task": task.key, "error": str(exc)[-500:]})
            return False
        return True

    def _end_recording(self, episode: Episode, task: Task, path: Path) -> None:
        try:
            episode.controller.end_recording(str(path))
        except Exception as exc:
            self.event({"event": "recording_failed", "task": task.key, "error": str(exc)[-500:]})

    def _limit(self, started: float, step_s: float | None) -> float | None:
        """How long the next bounded call may take: what is left of the task's time, or
        ``step_s``, whichever is less (None: unbounded)."""
        limits = [step_s] if step_s else []
        if self.options.task_timeout_s:
            limits.append(max(0.0, self.options.task_timeout_s - (time.monotonic() - started)))
        return min(limits) if limits else None

    def _why(self, started: float, limit: float | None) -> str:
        o = self.options
        if limit is not None and o.task_timeout_s and (o.step_timeout_s is None or limit < o.step_timeout_s):
            return f"the task's --task-timeout of {o.task_timeout_s:g} s ran out"
        return f"--step-timeout is {o.step_timeout_s:g} s" if o.step_timeout_s else ""

    def _trace_start(self, env: Environment, task: Task) -> bool:
        if not self.options.trace:
            return False
        try:
            env.call("POST", "/api/v1/trace/start", {"label": task.key, "shots": True})
        except ProviderError as exc:  # (a trace is a record of the run, not part of the task)
            self.event({"event": "trace_failed", "task": task.key, "error": str(exc)[-500:]})
            return False
        return True

    def _trace_stop(self, env: Environment, started: bool, dest: Path) -> dict | None:
        if not started:
            return None
        try:
            done = env.call("POST", "/api/v1/trace/stop")
        except ProviderError as exc:
            return {"error": str(exc)[-500:]}
        # A file copy where the back end has one (podman cp, a local folder), else over
        # HTTP from the scene (a pod of a cluster, a session of a pool). One fetched over
        # HTTP is then removed from the session, which goes on serving tasks: its disk
        # would otherwise keep every trace of the run (some 3 MB a task with screenshots).
        copied = env.copy_out(done["path"], dest)
        left: bool | None = None
        if not copied:
            copied = env.fetch_trace(done["trace_id"], dest)
            left = not (copied and env.delete_trace(done["trace_id"]))
        return {"trace_id": done.get("trace_id"), "steps": done.get("step_count"),
                "folder": str(dest) if copied else None, "in_session": done["path"] if left is not False else None}

