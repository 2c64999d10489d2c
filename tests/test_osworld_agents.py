"""OSWorld's own agents from desktop-env's mm_agents, unchanged, run by `deskbox run` on a
real session against `--model-stub`: a local stand-in of each one's provider API
(OpenAI chat completions for PromptAgent and UI-TARS, OpenAI Responses for the computer-
use agent, Anthropic Messages for Claude), answering with the same scripted turns in
each API's own format. The task is a page with one text field: a click on it, typing and
Enter submit it to this test's server, and OSWorld's metric grades what arrived, so a
score of 1 says that each agent's actions landed where the script pointed."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support import ROOT, LoopbackHTTP
from tests.test_run import results

pytestmark = pytest.mark.desktop

# The field is a box around the script's click (960, 600 on the screen; the browser's
# bars take the top 40 to 130 pixels) and has no focus until clicked: a click that lands
# elsewhere, an agent's coordinates scaled wrong, types into nothing.
PAGE = b"""<!doctype html><title>Type here</title>
<form action="/typed"><input name="value" aria-label="answer"
 style="position:fixed;left:760px;top:380px;width:400px;height:280px;font-size:48px"></form>
<script>
const say = (what) => fetch('/event?' + new URLSearchParams({what}));
const field = document.querySelector('input');
field.addEventListener('focus', () => say('focus'));
field.addEventListener('input', () => say('value ' + field.value));
document.addEventListener('mousedown', (e) => say(`mousedown ${e.clientX},${e.clientY}`));
requestAnimationFrame(() => requestAnimationFrame(() => fetch('/loaded')));
</script>"""

SCRIPT = {"screen": [1920, 1080], "turns": [{"click": [960, 600]}, {"type": "deskbox"}, {"key": "enter"}, "DONE"]}

UITARS_CONF = {"temperature": 0.0, "top_k": -1, "top_p": 0.9, "max_tokens": 500, "infer_mode": "qwen25vl_normal",
               "prompt_style": "qwen25vl_normal", "input_swap": False, "language": "English",
               "max_pixels": 16384 * 28 * 28, "min_pixels": 100 * 28 * 28, "callusr_tolerance": 3}

# Each agent's command line, as docs/run.md gives it.
AGENTS: dict[str, list[str]] = {
    "prompt": ["--agent", "mm_agents.agent:PromptAgent", "--model", "gpt-4o"],
    "anthropic": ["--agent", "mm_agents.anthropic.main:AnthropicAgent", "--model", "claude-3-7-sonnet-20250219",
                  "--action-space", "claude_computer_use", "--agent-arg", "provider=anthropic"],
    "openai_cua": ["--agent", "mm_agents.openai_cua_agent:OpenAICUAAgent", "--model", "computer-use-preview"],
    "uitars": ["--agent", "mm_agents.uitars15_v1:UITARSAgent", "--model", "ui-tars-1.5-7b",
               "--max-trajectory-length", "50", "--agent-arg", f"runtime_conf={json.dumps(UITARS_CONF)}"],
}


class Form(LoopbackHTTP):
    """The page, and what was typed into it."""

    def __init__(self) -> None:
        self.loaded = threading.Event()
        self.typed: list[str] = []
        self.events: list[str] = []  # what the page saw (for a failure's message)

        def answer(path: str, _headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
            url = urlsplit(path)
            query = parse_qs(url.query)
            if url.path == "/form.html":
                return 200, {"Content-Type": "text/html"}, PAGE
            if url.path == "/loaded":
                self.loaded.set()
            elif url.path == "/event":
                self.events.append(query.get("what", [""])[0])
            elif url.path == "/seen":
                return 200, {}, b"yes" if self.loaded.is_set() else b"no"
            elif url.path == "/typed":
                self.typed.append(query.get("value", [""])[0])
            elif url.path == "/last":
                return 200, {}, (self.typed[-1] if self.typed else "").encode()
            return 200, {}, b""

        super().__init__(answer)

    def reset(self) -> None:
        self.loaded.clear()
        self.typed.clear()
        self.events.clear()


@pytest.fixture(scope="module")
def form():
    f = Form()
    yield f
    f.close()


def task_set(folder: Path, form: Form) -> Path:
    wait = (f"import time, urllib.request\nfor _ in range(600):\n"
            f"    if urllib.request.urlopen('{form.url}/seen').read() == b'yes': break\n    time.sleep(0.1)")
    config = {
        "id": "type-into-the-field", "snapshot": "chrome", "instruction": "Type deskbox into the field and submit it.",
        "config": [{"type": "launch", "parameters": {"command": ["google-chrome", f"{form.url}/form.html"]}},
                   {"type": "execute", "parameters": {"command": ["python", "-c", wait]}}],
        "evaluator": {"func": "exact_match",
                      "result": {"type": "vm_command_line", "shell": True, "command":
                                 f"python -c \"import urllib.request; print(urllib.request.urlopen("
                                 f"'{form.url}/last').read().decode(), end='')\""},
                      "expected": {"type": "rule", "rules": {"expected": "deskbox"}}}}
    (folder / "chrome").mkdir(parents=True)
    (folder / "chrome" / "type-into-the-field.json").write_text(json.dumps(config))
    (folder / "test_all.json").write_text(json.dumps({"chrome": ["type-into-the-field"]}))
    (folder / "script.json").write_text(json.dumps(SCRIPT))
    return folder / "test_all.json"


@pytest.mark.parametrize("agent", list(AGENTS))
def test_osworlds_agent_runs_unchanged_against_the_model_stub_and_its_actions_land(agent, form, tmp_path):
    form.reset()
    index = task_set(tmp_path / "tasks", form)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "deskbox.cli", "run", str(index), *AGENTS[agent],
                           "--model-stub", str(tmp_path / "tasks" / "script.json"), "--observation-type", "screenshot",
                           "--max-steps", "8", "--sessions", "1", "--spare", "0", "--provider", "local",
                           "--task-timeout", "300", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"deskbox run exited {proc.returncode}:\n{proc.stderr[-4000:]}"
    [record] = results(out)
    assert record["status"] == "done", (record, proc.stderr[-3000:])
    assert form.typed == ["deskbox"], (form.typed, form.events, record["actions"])
    assert record["score"] == 1.0, record
    # The script's four turns, then the end: no more predictions than it has.
    assert 3 <= record["steps"] <= 4, record
    steps = json.loads((out / "tasks" / "chrome" / "type-into-the-field" / "steps.json").read_text())
    assert len(steps["responses"]) == record["steps"]
    run = json.loads((out / "run.json").read_text())
    assert run["model_stub"].startswith("sha256:") and run["agent"] == AGENTS[agent][1]
