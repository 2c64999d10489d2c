"""deskbox.run.agents: how ``--agent`` builds an agent and how the runner calls it, in
the shapes OSWorld's run scripts accept (their agents' own shapes stood in for: the
agents need their providers' client packages)."""

from __future__ import annotations

import logging

import pytest

from deskbox.run.agents import OSWORLD_SETTINGS, AgentError, agent_factory, parse_agent_arg, predict, reset_agent

BASE = {"action_space": "pyautogui", "observation_type": "screenshot", "max_steps": 15}


class Declares:
    def __init__(self, model: str, max_trajectory_length: int, action_space: str, label: str = "none") -> None:
        self.model, self.max_trajectory_length, self.action_space, self.label = (
            model, max_trajectory_length, action_space, label)


def make_declares(**kwargs):  # a factory function taking any keyword: given every setting
    return Declares(kwargs["model"], kwargs["max_trajectory_length"], kwargs["action_space"],
                    kwargs.get("label", "none"))


@pytest.fixture
def module(monkeypatch):
    import sys
    import types

    mod = types.ModuleType("deskbox_test_agents")
    mod.Declares, mod.make_declares = Declares, make_declares
    mod.not_callable = 3
    monkeypatch.setitem(sys.modules, "deskbox_test_agents", mod)
    return mod


def test_a_class_gets_osworld_run_py_settings_it_declares_and_the_history_window_is_not_the_step_limit(module):
    agent = agent_factory("deskbox_test_agents:Declares", **BASE)()
    assert (agent.model, agent.max_trajectory_length, agent.action_space, agent.label) == (
        "gpt-4o", 3, "pyautogui", "none")
    agent = agent_factory("deskbox_test_agents:Declares", **BASE,
                          settings={**OSWORLD_SETTINGS, "model": "m-1", "max_trajectory_length": 5})()
    assert (agent.model, agent.max_trajectory_length) == ("m-1", 5)


def test_agent_args_are_given_when_declared_and_refused_with_what_it_takes_when_not(module):
    agent = agent_factory("deskbox_test_agents:Declares", **BASE, args={"label": "x"})()
    assert agent.label == "x"
    # A factory taking **kwargs takes any.
    assert agent_factory("deskbox_test_agents:make_declares", **BASE, args={"label": "y"})().label == "y"
    with pytest.raises(AgentError, match=r"colour: .*Declares does not take it \(it takes: model, "):
        agent_factory("deskbox_test_agents:Declares", **BASE, args={"colour": "red"})
    with pytest.raises(AgentError, match="for MODULE:NAME agents"):
        agent_factory("noop", **BASE, args={"label": "x"})
    with pytest.raises(AgentError, match="not a class or a function"):
        agent_factory("deskbox_test_agents:not_callable", **BASE)


def test_agent_arg_values_are_json_when_they_parse_else_text():
    assert parse_agent_arg("n=42") == ("n", 42)
    assert parse_agent_arg("flags=[1, true]") == ("flags", [1, True])
    assert parse_agent_arg("url=http://x:1/v1") == ("url", "http://x:1/v1")
    assert parse_agent_arg("empty=") == ("empty", "")
    for bad in ("novalue", "1x=2", "=3"):
        with pytest.raises(AgentError):
            parse_agent_arg(bad)


def test_reset_gets_the_logger_where_it_takes_one_and_vm_ip_where_it_names_it():
    logger = logging.getLogger("deskbox.test.agent")
    seen = []

    class Required:  # uitars_agent's shape: reset(self, runtime_logger)
        def reset(self, runtime_logger):
            seen.append(("required", runtime_logger))

    class Optional:  # PromptAgent's: reset(self, _logger=None)
        def reset(self, _logger=None):
            seen.append(("optional", _logger))

    class WithIp:
        def reset(self, _logger=None, vm_ip=None):
            seen.append(("ip", _logger, vm_ip))

    class Bare:
        def reset(self):
            seen.append(("bare",))

    for agent in (Required(), Optional(), WithIp(), Bare()):
        reset_agent(agent, logger, "10.0.0.5")
    assert seen == [("required", logger), ("optional", logger), ("ip", logger, "10.0.0.5"), ("bare",)]


def test_predict_takes_two_values_or_more_and_gives_step_idx_where_named():
    class Two:
        def predict(self, instruction, obs):
            return "r", ["DONE"]

    class Three:  # opencua's and the CUA run scripts' shape
        def predict(self, instruction, obs, step_idx=None):
            return f"step {step_idx}", ("WAIT",), {"usage": 1}

    class One:
        def predict(self, instruction, obs):
            return "only"

    assert predict(Two(), "do", {}, 0) == ("r", ["DONE"], None)
    assert predict(Three(), "do", {}, 4) == ("step 4", ["WAIT"], {"usage": 1})
    with pytest.raises(TypeError, match="not \\(response, actions"):
        predict(One(), "do", {}, 0)


def test_a_bounded_call_that_does_not_end_in_time_is_a_timeout_naming_what_and_why():
    import threading

    from deskbox.run.runner import TaskTimeout, _bounded

    assert _bounded(lambda: 7, None, "x", "") == 7
    assert _bounded(lambda: 7, 5, "x", "") == 7
    with pytest.raises(ZeroDivisionError):
        _bounded(lambda: 1 / 0, 5, "x", "")
    never = threading.Event()
    with pytest.raises(TaskTimeout, match=r"timeout: the agent's predict\(\) had not ended after 0 s \(why\)"):
        _bounded(never.wait, 0.2, "the agent's predict()", "why")
    never.set()
