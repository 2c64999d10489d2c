"""Agents for ``deskbox run``: OSWorld's agent interface, so existing agents plug in
unchanged, and three built in for tests and baselines.

The interface (OSWorld's ``PromptAgent`` and the agents beside it): ``reset()`` before
each task, then ``predict(instruction, obs) -> (response, actions)``, where ``obs`` is
what :meth:`deskbox.run.episode.Episode.observe` gives and ``actions`` a list of
pyautogui strings or computer_13 dicts, or ``WAIT``/``DONE``/``FAIL``.

``--agent`` names one:

- ``MODULE:NAME``: ``NAME``, a factory or an agent's class (OSWorld's
  ``mm_agents.agent:PromptAgent``), is called once per session worker with the keyword
  arguments it declares among ``action_space``, ``observation_type``, ``max_steps`` and
  OSWorld's ``run.py`` settings (``model``, ``temperature``, ``top_p``, ``max_tokens``,
  ``max_trajectory_length``: ``--model`` ..., with ``run.py``'s defaults), then those
  ``--agent-arg KEY=VALUE`` gives, which it must declare;
- ``noop``: does nothing and says ``DONE`` (every task but an infeasible one scores 0);
- ``script:FILE``: a JSON object mapping a task's id (or ``domain/id``) to its list of
  actions, said in order, then ``DONE`` (the benches' and tests' scripted agent);
- ``replay:DIR``: the actions a run in ``DIR`` recorded for each task, said again.

A built-in agent learns which task it is on from ``begin_task(task)``, which the runner
calls before ``reset()`` when an agent has it.

The shapes OSWorld's own run scripts accept: ``reset(logger)`` (the task's
``runtime.log``) where ``reset`` takes an argument, with ``vm_ip=`` where it names it;
``predict(instruction, obs, step_idx=N)`` where ``predict`` names ``step_idx``; an answer
of ``(response, actions, info, ...)``: the first two are used, ``info`` is kept. An
agent that takes ``env`` (OSWorld's OpenAI computer-use agent) is given the task's
episode (through :class:`CurrentEpisode`) and carries out its own actions with its
``step``, as OSWorld's ``run_single_example_openaicua`` has it (:func:`steps_itself`).

An ``--agent-arg`` for a parameter whose default is an enum member is read as that enum's
member (``provider=anthropic`` for the Anthropic agent's ``APIProvider``). OSWorld's
``mm_agents.agent`` imports the SDKs of every provider its PromptAgent knows (dashscope,
google-generativeai, groq); those not installed get stand-ins that raise, naming the
package, if a model needs them (deskbox[agents] installs what OpenAI's and Anthropic's
agents use)."""

from __future__ import annotations

import enum
import importlib
import importlib.util
import inspect
import json
import logging
import sys
import types
from pathlib import Path
from typing import Any, Callable, Protocol

from .graders import importable
from .tasks import Task

__all__ = ["Agent", "NoopAgent", "ScriptAgent", "agent_factory", "AgentError", "OSWORLD_SETTINGS",
           "parse_agent_arg", "reset_agent", "predict", "built_in", "CurrentEpisode", "steps_itself"]


class AgentError(ValueError):
    """An ``--agent`` that cannot be made."""


# OSWorld's run.py's settings for its agents, under its names and with its defaults: an
# agent deskbox run builds gets what run.py would give it. ``max_trajectory_length`` is
# the agent's prompt history window (how many earlier steps each prompt repeats), not the
# run's step limit.
OSWORLD_SETTINGS: dict[str, Any] = {"model": "gpt-4o", "temperature": 1.0, "top_p": 0.9, "max_tokens": 1500,
                                    "max_trajectory_length": 3}


def parse_agent_arg(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` -> (KEY, VALUE read as JSON when it parses, else the text)."""
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise AgentError(f"--agent-arg {text!r}: KEY=VALUE, KEY a Python name")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


class Agent(Protocol):
    def reset(self, *args: Any, **kwargs: Any) -> None: ...

    def predict(self, instruction: str, obs: dict[str, Any]) -> tuple[Any, list[Any]]: ...


class NoopAgent:
    """Does nothing, then says DONE."""

    def reset(self, *args: Any, **kwargs: Any) -> None:
        pass

    def predict(self, instruction: str, obs: dict[str, Any]) -> tuple[str, list[Any]]:
        return "nothing to do", ["DONE"]


class ScriptAgent:
    """Says a fixed list of actions per task, one per step, then DONE."""

    def __init__(self, scripts: dict[str, list[Any]]) -> None:
        self.scripts = scripts
        self._left: list[Any] = []

    def begin_task(self, task: Task) -> None:
        self._left = list(self.scripts.get(task.name, self.scripts.get(task.id, [])))

    def reset(self, *args: Any, **kwargs: Any) -> None:
        pass

    def predict(self, instruction: str, obs: dict[str, Any]) -> tuple[str, list[Any]]:
        if not self._left:
            return "done", ["DONE"]
        action = self._left.pop(0)
        return f"scripted: {action if isinstance(action, str) else json.dumps(action)}", [action]


def _recorded(folder: Path) -> dict[str, list[Any]]:
    results = folder / "results.jsonl"
    if not results.is_file():
        raise AgentError(f"replay: {results} does not exist (give the --out folder of an earlier run)")
    scripts: dict[str, list[Any]] = {}
    for line in results.read_text().splitlines():
        record = json.loads(line)
        if record.get("status") == "done":
            scripts[record["task"]] = [a for a in record.get("actions", []) if a not in ("DONE",)]
    return scripts


def _accepted(factory: Callable[..., Any], offered: dict[str, Any]) -> dict[str, Any]:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return {}
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return offered
    return {k: v for k, v in offered.items() if k in params}


def _declares(function: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


class CurrentEpisode:
    """What an agent that takes ``env`` is given: the episode of the task its worker runs
    now (OSWorld's agents call its ``step`` and ``_get_obs``), set by the runner."""

    def __init__(self) -> None:
        self.episode: Any = None

    def __getattr__(self, name: str) -> Any:
        episode = self.__dict__.get("episode")
        if episode is None:
            raise AttributeError(f"{name}: no task is running")
        return getattr(episode, name)


def steps_itself(agent: Any) -> bool:
    """The agent carries out its actions with its own ``step`` on the env it was given
    (OSWorld's OpenAI computer-use agent), rather than handing them to the runner."""
    return isinstance(getattr(agent, "env", None), CurrentEpisode) and callable(getattr(agent, "step", None))


# Provider SDKs OSWorld's mm_agents.agent imports at its top for models a run may not use.
_PROVIDER_SDKS = {
    "dashscope": "pip install dashscope (PromptAgent's qwen models)",
    "google.generativeai": "pip install google-generativeai (PromptAgent's gemini models)",
    "google.api_core.exceptions": "pip install google-generativeai (PromptAgent's gemini models)",
    "groq": "pip install groq (PromptAgent's llama3 models)",
}


def _unavailable(name: str, advice: str) -> Any:
    def call(*_args: Any, **_kwargs: Any) -> Any:
        raise AgentError(f"{name} is not installed: {advice}")
    return call


def _stand_in(name: str, advice: str) -> types.ModuleType:
    """A module whose names raise AgentError when called; an exceptions module's are
    exception classes (they are named in ``except`` clauses)."""
    module = types.ModuleType(name)

    def attribute(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if name.endswith(".exceptions"):
            return type(attr, (Exception,), {})
        return _unavailable(f"{name}.{attr}", advice)

    module.__getattr__ = attribute  # type: ignore[method-assign]
    return module


def _stand_in_sdks() -> None:
    """Stand-ins for the provider SDKs of :data:`_PROVIDER_SDKS` that are not installed."""
    for name, advice in _PROVIDER_SDKS.items():
        if importable(name):
            continue
        parts = name.split(".")
        for i in range(1, len(parts)):  # the packages above it, where missing
            parent = ".".join(parts[:i])
            if not importable(parent):
                package = types.ModuleType(parent)
                package.__path__ = []
                sys.modules[parent] = package
        sys.modules[name] = module = _stand_in(name, advice)
        if len(parts) > 1:
            setattr(importlib.import_module(".".join(parts[:-1])), parts[-1], module)


def _as_declared(factory: Callable[..., Any], key: str, value: Any) -> Any:
    """``value`` as the enum member the parameter's default is of, when it is one."""
    try:
        default = inspect.signature(factory).parameters[key].default
    except (TypeError, ValueError, KeyError):
        return value
    if isinstance(default, enum.Enum) and isinstance(value, str):
        kind = type(default)
        for member in kind:
            if value in (member.name, member.value) or value.lower() == str(member.value).lower():
                return member
        raise AgentError(f"--agent-arg {key}={value}: one of {', '.join(str(m.value) for m in kind)}")
    return value


def built_in(spec: str) -> str | None:
    """The built-in agent ``spec`` names (``noop``, ``script``, ``replay``), or None for a
    MODULE:NAME agent."""
    kind = spec.partition(":")[0]
    return kind if spec == "noop" or kind in ("script", "replay") else None


def agent_factory(spec: str, *, action_space: str, observation_type: str, max_steps: int,
                  settings: dict[str, Any] | None = None, args: dict[str, Any] | None = None) -> Callable[[], Any]:
    """A callable making one agent per session worker, from ``--agent``: ``settings``
    (over :data:`OSWORLD_SETTINGS`) offered where declared, ``args`` (``--agent-arg``)
    given, each declared or refused. It takes ``env``, the worker's
    :class:`CurrentEpisode`, which an agent that declares ``env`` is given."""
    args = args or {}
    if args and (builtin := built_in(spec)):
        raise AgentError(f"--agent-arg is for MODULE:NAME agents, not {builtin}")
    if spec == "noop":
        return lambda env=None: NoopAgent()
    kind, _, arg = spec.partition(":")
    if kind == "script":
        try:
            scripts = json.loads(Path(arg).read_text())
        except (OSError, ValueError) as exc:
            raise AgentError(f"script: {arg}: {exc}") from exc
        if not isinstance(scripts, dict):
            raise AgentError(f"script: {arg} maps task ids to lists of actions")
        return lambda env=None: ScriptAgent(scripts)
    if kind == "replay":
        scripts = _recorded(Path(arg))
        return lambda env=None: ScriptAgent(scripts)
    if not arg:
        raise AgentError(f"--agent {spec!r}: noop, script:FILE, replay:DIR or MODULE:FACTORY")
    if kind == "mm_agents" or kind.startswith("mm_agents."):
        _stand_in_sdks()
    try:
        factory = getattr(importlib.import_module(kind), arg)
    except (ImportError, AttributeError) as exc:
        raise AgentError(f"--agent {spec!r}: {exc}") from exc
    if not callable(factory):
        raise AgentError(f"--agent {spec!r}: {arg} is not a class or a function")
    offered = {"action_space": action_space, "observation_type": observation_type, "max_steps": max_steps,
               **OSWORLD_SETTINGS, **(settings or {})}
    kwargs = _accepted(factory, offered)
    refused = [key for key in args if not _declares(factory, key)]
    if refused:
        try:
            takes = ", ".join(inspect.signature(factory).parameters)
        except (TypeError, ValueError):
            takes = "?"
        raise AgentError(f"--agent-arg {', '.join(refused)}: {spec} does not take it (it takes: {takes})")
    kwargs.update({key: _as_declared(factory, key, value) for key, value in args.items()})
    try:
        takes_env = "env" in inspect.signature(factory).parameters and "env" not in kwargs
    except (TypeError, ValueError):
        takes_env = False

    def make(env: CurrentEpisode | None = None) -> Any:
        return factory(**kwargs, **({"env": env} if takes_env else {}))
    return make


def reset_agent(agent: Any, logger: logging.Logger, vm_ip: str) -> None:
    """``agent.reset`` as OSWorld's run scripts call it: with the task's logger where it
    takes an argument (some require one), ``vm_ip=`` where it names it."""
    try:
        params = list(inspect.signature(agent.reset).parameters.values())
    except (TypeError, ValueError):
        agent.reset()
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    call_args = [logger] if positional and positional[0].name != "vm_ip" else []
    kwargs = {"vm_ip": vm_ip} if any(p.name == "vm_ip" for p in params) else {}
    agent.reset(*call_args, **kwargs)


def predict(agent: Any, instruction: str, obs: dict[str, Any], step: int) -> tuple[Any, list[Any], Any]:
    """``agent.predict`` as OSWorld's run scripts call it (``step_idx=`` where it names
    it): (response, actions, info or None), from an answer of two values or more."""
    kwargs = {}
    try:
        if "step_idx" in inspect.signature(agent.predict).parameters:
            kwargs["step_idx"] = step
    except (TypeError, ValueError):
        pass
    answer = agent.predict(instruction, obs, **kwargs)
    if not isinstance(answer, (tuple, list)) or len(answer) < 2:
        raise TypeError(f"predict() answered {type(answer).__name__}, not (response, actions, ...)")
    actions = answer[1]
    if actions is not None and not isinstance(actions, list):
        actions = list(actions) if isinstance(actions, tuple) else [actions]
    return answer[0], actions or [], answer[2] if len(answer) > 2 else None
