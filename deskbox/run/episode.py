"""One task on one session, shaped like OSWorld's ``DesktopEnv``: ``reset() -> obs``,
``step(action) -> (obs, reward, done, info)``, ``evaluate() -> score``.

It is also what OSWorld's getters are given as their ``env``: they read ``controller``,
``setup_controller``, ``vm_ip``, ``server_port``, ``chromium_port``, ``vlc_port``,
``cache_dir``, ``vm_platform`` and ``current_use_proxy`` from it. Setup, observation,
actions and grading are desktop-env's own controllers, getters and metrics, talking to
the session's OSWorld server; only the VM is replaced, by the session's reset.

Evaluation follows ``DesktopEnv.evaluate``: the postconfig runs first; ``infeasible``
scores 1 only when the last action was ``FAIL``, and any other task scores 0 when it
was; several metrics combine by ``conj`` (``and``: 0 at the first 0, else the mean;
``or``: 1 at the first 1, else the best); a getter's ``FileNotFoundError`` is a 0."""

from __future__ import annotations

import os
import tempfile
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..common.waiting import wait_until
from ..provider import Environment, ProviderError, credentials
from . import graders
from .admission import Admission
from .cache import Cache
from .tasks import Task

__all__ = ["Episode", "InfrastructureError", "SetupFailed", "OBSERVATION_TYPES", "ACTION_SPACES", "SPECIAL_ACTIONS"]

OBSERVATION_TYPES = ("screenshot", "a11y_tree", "screenshot_a11y_tree", "som")
# claude_computer_use: the Anthropic agent's, whose actions carry pyautogui code in their
# "command" and run as pyautogui's do, as OSWorld's DesktopEnv runs them.
ACTION_SPACES = ("pyautogui", "computer_13", "claude_computer_use")
SPECIAL_ACTIONS = ("WAIT", "FAIL", "DONE")

# Getters that ask a running app rather than read a file, and what they ask: VLC's HTTP
# interface, or Chrome's DevTools (through the port the task's socat relays). OSWorld's
# run script sleeps 20 s before it grades, whatever the task; here grading waits for
# what its getters ask to answer, as long as the app runs, and at most that long.
READS_APP = {
    "vlc_playing_info": "vlc",
    "active_tab_info": "chrome", "open_tabs_info": "chrome", "active_tab_html_parse": "chrome",
    "chrome_saved_address": "chrome", "page_info": "chrome",
}
READY_WAIT_S = 20.0
# After its setup, a task's session is waited for until it is quiet (its apps have
# started), at most ``ready_timeout_s``: OSWorld's run scripts sleep 60 s there. Within
# the admission slot for at most SLOT_SETTLE_S of it: a session that does not go quiet
# (a video playing) waits out the rest without holding the others back.
SLOT_SETTLE_S = 15.0
# The process each app runs as in the session (deskbox names the browser ``chrome``, as
# OSWorld's configs end it).
_PROCESS = {"vlc": "vlc", "chrome": "chrome"}


class InfrastructureError(RuntimeError):
    """The environment, not the agent, failed: a session that died or did not reset, or
    a setup step that failed in a session that then did not answer. The task is run
    again, never scored 0."""


class SetupFailed(RuntimeError):
    """A step of the task's own setup (or postconfig) failed in a session that is
    healthy: a download that did not answer, a file the config names that is not there.
    The task's error, not the session's: the session goes on serving tasks."""


def _shown(value: Any, limit: int = 2000) -> str:
    """What a getter answered, for the record: its text, cut to ``limit`` characters (a
    getter may answer a whole file's path or contents)."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _special(action: Any) -> str | None:
    if isinstance(action, str) and action in SPECIAL_ACTIONS:
        return action
    if isinstance(action, dict) and action.get("action_type") in SPECIAL_ACTIONS:
        return str(action["action_type"])
    return None


@dataclass
class Episode:
    """``env`` a running session (``deskbox.provider.Environment``), ``task`` the config."""

    env: Environment
    task: Task
    observation_type: str = "screenshot"
    action_space: str = "pyautogui"
    sleep_after_action: float = 0.0
    cache_dir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="deskbox-run-cache-"))
    screen: tuple[int, int] = (1920, 1080)
    action_history: list[Any] = field(default_factory=list)
    current_use_proxy: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    # Per step: how long the action took to carry out, and the observation after it.
    step_timings: list[dict[str, float]] = field(default_factory=list)
    # What the graders read and compared: per metric, the getters' answers (cut) and its score.
    graded: list[dict[str, Any]] = field(default_factory=list)
    # Where the task's downloads come from instead of the network (deskbox.run.cache).
    files: Cache | None = None
    # The URLs of its downloads that ``files`` lacks (fetched from the network, if at all).
    not_cached: list[str] = field(default_factory=list)
    # The heavy part of reset() (the session's reset, the setup, the wait for its apps)
    # holds a slot of this (deskbox.run.admission), the setup and the wait with the
    # session's CPU weight at ``heavy_weight`` of its own; after the setup it waits until
    # the session is quiet, at most ``ready_timeout_s`` (0: not at all). ``ready``: what
    # that wait answered.
    admission: Admission | None = None
    heavy_weight: float = 1.0
    ready_timeout_s: float = 0.0
    ready: dict[str, Any] | None = None
    # When the admission slot was held (epoch seconds: ``from``, ``to``), with one.
    slot: dict[str, float] | None = None
    # Each accessibility tree read holds a slot of this (its own kind: reads are short and
    # many, and must not queue behind a setup); the wait is the step's ``tree_queued_s``.
    read_admission: Admission | None = None
    _tree_queued_s: float | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.observation_type not in OBSERVATION_TYPES:
            raise ValueError(f"observation type {self.observation_type!r}: one of {', '.join(OBSERVATION_TYPES)}")
        if self.action_space not in ACTION_SPACES:
            raise ValueError(f"action space {self.action_space!r}: one of {', '.join(ACTION_SPACES)}")
        osworld = graders.load()
        if self.env.spec.token:  # OSWorld's controllers send none of their own
            credentials.authorize(self.env.url("osworld"), self.env.spec.token)
        host, port = self.env.host, self.env.ports["osworld"]
        self.vm_ip, self.server_port = host, port
        self.chromium_port = self.env.ports.get("chromium", 9222)
        self.vlc_port = self.env.ports.get("vlc", 8080)
        self.cache_dir = os.path.join(self.cache_dir, self.task.id)
        os.makedirs(self.cache_dir, exist_ok=True)
        self.controller = osworld.PythonController(vm_ip=host, server_port=port)
        self.setup_controller = osworld.SetupController(
            vm_ip=host, server_port=port, chromium_port=self.chromium_port, vlc_port=self.vlc_port,
            cache_dir=self.cache_dir, client_password="password", screen_width=self.screen[0],
            screen_height=self.screen[1])
        self.instruction = self.task.instruction

    # -- what the getters read ------------------------------------------------------------

    @property
    def vm_platform(self) -> str:
        return self.controller.get_vm_platform()

    @property
    def vm_machine(self) -> str:
        """The session's architecture as Python names it (``x86_64``): newer getters
        choose Chrome's or Chromium's paths by it."""
        return self.controller.execute_python_command("import platform; print(platform.machine())")["output"].strip()

    # -- the gymnasium-shaped loop --------------------------------------------------------

    def reset(self) -> dict[str, Any]:
        """The session back to its ``start`` snapshot, then the config's setup; the first
        observation. A reset that fails is an :class:`InfrastructureError`; a setup step
        that fails, :class:`SetupFailed` while the session is healthy."""
        self.action_history.clear()
        if self.files is not None:
            self.not_cached = self.files.place(self.task, self.cache_dir)
        with self._slot() as queued_s:
            self.timings["queued_s"] = queued_s
            started = time.monotonic()
            try:
                self.env.reset()
            except ProviderError as exc:
                raise InfrastructureError(f"reset: {exc}") from exc
            self.timings["reset_s"] = time.monotonic() - started
            # (the reset at the session's own weight: it is short, and the task waits on it)
            with self._weighed_down():
                started = time.monotonic()
                self._setup("setup", self.task.config.get("config", []))
                self.timings["setup_s"] = time.monotonic() - started
                started = time.monotonic()
                self._wait_ready(min(self.ready_timeout_s, SLOT_SETTLE_S))
        if (self.ready is not None and not self.ready.get("settled") and "error" not in self.ready
                and self.ready_timeout_s > SLOT_SETTLE_S):
            self._wait_ready(self.ready_timeout_s - SLOT_SETTLE_S)
        if self.ready is not None:
            self.timings["ready_s"] = time.monotonic() - started
        return self.observe()

    @contextmanager
    def _slot(self) -> Iterator[float]:
        """A slot of the admission (if any) for the block; yields the seconds waited."""
        with self.admission.slot() if self.admission is not None else nullcontext(0.0) as queued_s:
            if self.admission is not None:
                self.slot = {"from": time.time()}
            try:
                yield queued_s
            finally:
                if self.slot is not None:
                    self.slot["to"] = time.time()

    @contextmanager
    def _weighed_down(self) -> Iterator[None]:
        """The session at ``heavy_weight`` of its CPU weight for the block (where its
        back end can weigh it)."""
        weighed = self.heavy_weight != 1.0 and self.env.weigh(self.heavy_weight)
        try:
            yield
        finally:
            if weighed:
                self.env.weigh(1.0)

    def _wait_ready(self, timeout_s: float) -> None:
        """Until the session is quiet, at most ``timeout_s`` (none when 0). A session
        that cannot say (an older image) is not waited for: ``ready`` says why."""
        if timeout_s <= 0:
            return
        try:
            self.ready = self.env.settle(timeout_s=timeout_s)
        except ProviderError as exc:
            self.ready = {"settled": False, "error": str(exc)[-500:]}

    def _setup(self, what: str, steps: list[dict[str, Any]]) -> None:
        """desktop-env's ``SetupController`` through ``steps``. A failure is the task's
        (:class:`SetupFailed`) when the session still answers, the session's
        (:class:`InfrastructureError`) when it does not: the session is asked."""
        try:
            ok = self.setup_controller.setup(steps)
            problem = None if ok is not False else "OSWorld's server did not answer"
        except Exception as exc:  # desktop-env raises a bare Exception naming the step
            problem = str(exc) if type(exc) is Exception else f"{type(exc).__name__}: {exc}"
        if problem is None:
            return
        if self.not_cached:
            problem += f" (not in the cache {self.files.folder}: {', '.join(self.not_cached)})"  # type: ignore[union-attr]
        unhealthy = self.env.health()
        if unhealthy is not None:
            raise InfrastructureError(f"{what}: {problem} (the session: {unhealthy})")
        raise SetupFailed(f"{what}: {problem}")

    def observe(self) -> dict[str, Any]:
        """What ``DesktopEnv`` gives its agents: the screenshot (PNG bytes), the
        accessibility tree's XML when the observation type has one, the terminal (None:
        OSWorld's run scripts do not ask for it) and the instruction."""
        screenshot = self.controller.get_screenshot()
        tree = None
        if self.observation_type != "screenshot":
            reads = self.read_admission
            with reads.slot() if reads is not None else nullcontext(0.0) as queued_s:
                tree = self.controller.get_accessibility_tree()
            self._tree_queued_s = queued_s if reads is not None else None
        return {"screenshot": screenshot, "accessibility_tree": tree, "terminal": None,
                "instruction": self.instruction}

    def _get_obs(self) -> dict[str, Any]:
        """DesktopEnv's name for :meth:`observe` (OSWorld's computer-use agent calls it)."""
        return self.observe()

    def step(self, action: Any, pause: float | None = None) -> tuple[dict[str, Any], float, bool, dict]:
        """One action, as ``DesktopEnv.step`` takes it: ``WAIT``/``DONE``/``FAIL``, a
        pyautogui string (or ``{"command": ...}``), or a computer_13 dict."""
        pause = self.sleep_after_action if pause is None else pause
        self.action_history.append(action)
        special = _special(action)
        done, info = False, {}
        started = time.monotonic()
        if special == "WAIT":
            time.sleep(pause)
        elif special in ("DONE", "FAIL"):
            done, info = True, {special.lower(): True}
        elif self.action_space == "computer_13":
            self.controller.execute_action(action)
        else:
            command = action["command"] if isinstance(action, dict) else action
            # (deskbox's pyautogui types '<' as it is: OSWorld's rewrite of it is not needed.)
            info["execute"] = self.controller.execute_python_command(command)
        acted = time.monotonic()
        if pause:
            time.sleep(pause)
        observing = time.monotonic()
        obs = self.observe()
        timing = {"action_s": round(acted - started, 4), "observe_s": round(time.monotonic() - observing, 4)}
        if self._tree_queued_s is not None:
            timing["tree_queued_s"] = round(self._tree_queued_s, 4)
        self.step_timings.append(timing)
        return obs, 0.0, done, info

    # -- grading --------------------------------------------------------------------------

    def evaluate(self) -> float:
        """The postconfig, then OSWorld's getters and metrics on the session."""
        evaluator = self.task.config["evaluator"]
        started = time.monotonic()
        try:
            postconfig = evaluator.get("postconfig", [])
            if postconfig:
                self._setup("postconfig", postconfig)
            self._wait_for_apps(evaluator)
            return self._score(evaluator)
        finally:
            self.timings["grading_s"] = time.monotonic() - started

    def _wait_for_apps(self, evaluator: dict[str, Any]) -> None:
        """Until every app the getters ask answers, while it runs (at most
        ``READY_WAIT_S``); how long it took is ``timings["apps_ready_s"]``."""
        configs = evaluator.get("result"), evaluator.get("expected")
        getters = [c for group in configs for c in (group if isinstance(group, list) else [group])
                   if isinstance(c, dict)]
        apps = sorted({READS_APP[g["type"]] for g in getters if g.get("type") in READS_APP})
        if not apps:
            return
        started = time.monotonic()
        for app in apps:
            left = READY_WAIT_S - (time.monotonic() - started)
            try:
                wait_until(lambda app=app: self._answers(app) or not self._runs(app), max(0.0, left), 0.25)
            except TimeoutError:
                pass  # graded as it is, as OSWorld grades after its sleep
        self.timings["apps_ready_s"] = time.monotonic() - started

    def _answers(self, app: str) -> bool:
        import requests

        url, auth = ((f"http://{self.vm_ip}:{self.vlc_port}/requests/status.xml", ("", "password")) if app == "vlc"
                     else (f"http://{self.vm_ip}:{self.chromium_port}/json/version", None))
        try:
            return requests.get(url, auth=auth, timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def _runs(self, app: str) -> bool:
        """The app's process is the session user's (asked through OSWorld's server, which
        runs as that user: sessions on one machine each have their own)."""
        import requests

        command = f'pgrep -u "$(id -u)" -x {_PROCESS[app]}'
        try:
            answer = requests.post(f"{self.controller.http_server}/execute", timeout=10,
                                   json={"command": command, "shell": True}).json()
        except (requests.RequestException, ValueError):
            return True  # (not known: the wait goes on to its bound)
        return answer.get("returncode") == 0

    def _score(self, evaluator: dict[str, Any]) -> float:
        last = self.action_history[-1] if self.action_history else None
        failed = _special(last) == "FAIL"
        if evaluator["func"] == "infeasible":
            return 1.0 if failed else 0.0
        if failed:
            return 0.0
        funcs = evaluator["func"]
        if not isinstance(funcs, list):
            return self._one(graders.metric(funcs), evaluator.get("result"), evaluator.get("expected"),
                             evaluator.get("options") or {})
        conj = evaluator.get("conj", "and")
        results_cfg = evaluator.get("result") or [None] * len(funcs)
        expected_cfg = evaluator.get("expected") or [None] * len(funcs)
        options_cfg = evaluator.get("options") or [{}] * len(funcs)
        if not len(funcs) == len(results_cfg) == len(expected_cfg) == len(options_cfg):
            raise ValueError("evaluator: func, result, expected and options must be lists of one length")
        scores = []
        for func, result, expected, options in zip(funcs, results_cfg, expected_cfg, options_cfg):
            score = self._one(graders.metric(func), result, expected, options or {})
            if conj == "and" and float(score) == 0.0:
                return 0.0
            if conj == "or" and float(score) == 1.0:
                return 1.0
            scores.append(float(score))
        return sum(scores) / len(scores) if conj == "and" else max(scores)

    def _one(self, metric: Any, result: dict | None, expected: dict | None, options: dict) -> float:
        read: dict[str, Any] = {"metric": getattr(metric, "__name__", str(metric))}
        self.graded.append(read)
        try:
            actual = graders.getter(result["type"])(self, result) if result else None
        except FileNotFoundError as exc:
            read.update(result=f"(not found: {exc})", score=0.0)
            return 0.0
        read["result"] = _shown(actual)
        if expected:
            wanted = graders.getter(expected["type"])(self, expected)
            read["expected"] = _shown(wanted)
            score = float(metric(actual, wanted, **options))
        else:
            score = float(metric(actual, **options))
        read["score"] = score
        return score
