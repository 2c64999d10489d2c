"""The report's pure parts (deskbox.run.report_page): what an action draws on its
screenshot, read from pyautogui code or a computer_13 dict; a task's timeline from its
timings; the charts' bars. And the page written from a run's folder made by hand."""

from __future__ import annotations

import json
import re
import struct
import zlib

import lxml.html
import pytest

from deskbox.run.report import write_report
from deskbox.run.report_page import (
    ActionMarks,
    Mark,
    png_size,
    read_action,
    score_chart,
    time_chart,
    time_split,
    timeline,
)


@pytest.mark.parametrize("action, points", [
    ("pyautogui.click(100, 200)", [Mark("click", 100, 200)]),
    ("pyautogui.click(x=10.5, y=20)", [Mark("click", 10.5, 20)]),
    ("pyautogui.click((5, 6))", [Mark("click", 5, 6)]),
    ("pyautogui.doubleClick(1, 2, interval=0.1)", [Mark("double click", 1, 2)]),
    ("pyautogui.moveTo(7, 8)\npyautogui.dragTo(30, 40, duration=0.5)", [Mark("move", 7, 8), Mark("drag to", 30, 40)]),
    ("pyautogui.scroll(-3, x=50, y=60)", [Mark("scroll", 50, 60)]),
    ("pyautogui.scroll(-3, 50, 60)", [Mark("scroll", 50, 60)]),
    ("import pyautogui as pg\npg.rightClick(3, 4)", [Mark("right click", 3, 4)]),
    # Where the pointer already is, or at a point only running the code would know: no mark.
    ("pyautogui.click()", []),
    ("pyautogui.scroll(-3)", []),
    ("x, y = 1, 2\npyautogui.click(x, y)", []),
    ("pyautogui.click(True, 2)", []),
])
def test_the_points_a_pyautogui_action_acts_at_are_read_from_its_calls(action, points):
    assert list(read_action(action).points) == points


def test_typed_text_and_pressed_keys_are_read_in_the_order_the_code_gives_them():
    marks = read_action("pyautogui.click(1, 2); pyautogui.typewrite('hello <b>', interval=0.05)\n"
                        "pyautogui.press('enter'); pyautogui.hotkey('ctrl', 'shift', 't')\n"
                        "pyautogui.write(\"second\")\npyautogui.press(['tab', 'tab'])\npyautogui.typewrite(['a', 'esc'])")
    assert marks == ActionMarks(points=(Mark("click", 1, 2),), typed=("hello <b>", "second"),
                                keys=("enter", "ctrl+shift+t", "tab", "tab", "a", "esc"))


def test_code_that_writes_a_file_or_does_not_parse_draws_nothing():
    assert read_action("open('note.txt', 'w').write('not typed')") == ActionMarks()
    assert read_action("import pathlib; pathlib.Path.home().joinpath('n.txt').write_text('x')") == ActionMarks()
    assert read_action("pyautogui.click(100,") == ActionMarks()
    for special in ("DONE", "FAIL", "WAIT", None, 42):
        assert read_action(special) == ActionMarks()


def test_computer_13_actions_are_read_with_their_parameters_nested_or_beside_the_type():
    assert read_action({"action_type": "CLICK", "parameters": {"button": "left", "x": 10, "y": 20}}) == \
        ActionMarks(points=(Mark("click", 10, 20),))
    assert read_action({"action_type": "DOUBLE_CLICK", "x": 3, "y": 4}) == ActionMarks(points=(Mark("double click", 3, 4),))
    assert read_action({"action_type": "CLICK", "parameters": {"button": "left"}}) == ActionMarks()
    assert read_action({"action_type": "TYPING", "parameters": {"text": "abc"}}) == ActionMarks(typed=("abc",))
    assert read_action({"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "a"]}}) == ActionMarks(keys=("ctrl+a",))
    assert read_action({"action_type": "PRESS", "key": "enter"}) == ActionMarks(keys=("enter",))
    assert read_action({"action_type": "DONE"}) == ActionMarks()
    # pyautogui's action space also takes {"command": code}.
    assert read_action({"command": "pyautogui.click(5, 6)"}) == ActionMarks(points=(Mark("click", 5, 6),))


def _png(width: int, height: int) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + header + struct.pack(">I", zlib.crc32(b"IHDR" + header))


def test_a_pngs_size_is_read_from_its_header(tmp_path):
    (tmp_path / "a.png").write_bytes(_png(1920, 1080))
    (tmp_path / "b.png").write_bytes(b"GIF89a" + bytes(30))
    assert png_size(tmp_path / "a.png") == (1920, 1080)
    assert png_size(tmp_path / "b.png") is None
    assert png_size(tmp_path / "missing.png") is None


RECORD = {"status": "done", "timings": {"reset_s": 0.5, "setup_s": 1.0, "agent_s": 4.0, "grading_s": 0.25,
                                        "total_s": 6.0},
          "step_timings": [{"action_s": 0.1, "observe_s": 0.05}, {"action_s": 0.2, "observe_s": 0.05}]}


def test_each_actions_agent_time_is_known_from_the_layouts_timestamps_and_the_first_is_what_is_left():
    # The second action ended 2.5 s after the first: 0.2 acting, 0.3 pausing and 0.05
    # observing of it, so the agent took 1.95 s before it.
    stamps = ["20261205@120000000000", "20261205@120002500000"]
    segments = timeline(RECORD, stamps=stamps, pause=0.3)
    assert [(s.kind, s.step) for s in segments] == [
        ("reset", None), ("setup", None), ("agent", 1), ("action", 1), ("pause", 1), ("observe", 1),
        ("agent", 2), ("action", 2), ("pause", 2), ("observe", 2), ("grading", None), ("other", None)]
    agents = [s.seconds for s in segments if s.kind == "agent"]
    # The rest of agent_s is the first's: 4 s less both actions' 1.0 s (acting, pausing,
    # observing) and the second's 1.95.
    assert agents == pytest.approx([4.0 - 1.0 - 1.95, 1.95])
    assert sum(s.seconds for s in segments) == pytest.approx(6.0)
    assert time_split(segments) == pytest.approx({"reset": 0.5, "setup": 1.0, "agent": 3.0, "environment": 1.0,
                                                  "grading": 0.25, "other": 0.25})


def test_without_timestamps_the_agents_time_is_one_part_and_a_task_without_steps_has_none():
    segments = timeline(RECORD)
    agents = [s for s in segments if s.kind == "agent"]
    assert len(agents) == 1 and agents[0].seconds == pytest.approx(4.0 - 0.4) and "not recorded" in agents[0].label
    # A setup that failed records no setup_s: what total_s leaves is its.
    setup_failed = {"status": "setup_error", "timings": {"reset_s": 0.2, "total_s": 3.2}, "step_timings": []}
    assert [(s.kind, s.seconds) for s in timeline(setup_failed)] == [("reset", 0.2), ("setup", pytest.approx(3.0))]
    assert timeline({"status": "infra_error", "timings": {}}) == []


def _widths(svg: str, cls: str) -> list[float]:
    return [float(w) for w in re.findall(rf'<rect class="{cls}"[^>]* width="([\d.]+)"', svg)]


def test_the_score_chart_draws_each_domains_mean_as_a_share_of_the_full_bar_and_escapes_its_name():
    svg = score_chart({"os": {"tasks": 4, "graded": 3, "mean_all": 0.25},
                       "<b>": {"tasks": 1, "graded": 0, "mean_all": None}})
    tracks, bars = _widths(svg, "track"), _widths(svg, "bar")
    assert bars == [0.0, tracks[1] * 0.25]  # sorted: "<b>" before "os"
    assert "<b>" not in svg and "&lt;b&gt;" in svg


def test_the_time_chart_scales_every_row_to_the_longest():
    svg = time_chart([("a", {"reset": 1.0, "agent": 3.0}), ("all", {"reset": 2.0, "agent": 6.0})])
    reset_a, reset_all = _widths(svg, "seg reset")
    agent_a, agent_all = _widths(svg, "seg agent")
    assert (reset_all, agent_all) == pytest.approx((reset_a * 2, agent_a * 2))
    assert agent_all == pytest.approx(reset_all * 3)


def test_a_steps_actions_are_listed_under_its_one_response_as_osworlds_layout_groups_them(tmp_path):
    """A run's folder made by hand: three steps of an agent, the first giving two actions,
    the last none (OSWorld's ``traj.jsonl`` numbers each action's step)."""
    actions = ["pyautogui.click(100, 50)", "pyautogui.typewrite('x')", "pyautogui.click(3, 4)"]
    record = {"task": "os/t", "domain": "os", "id": "t", "instruction": "Do <it>.", "status": "agent_error",
              "score": None, "steps": 3, "actions": actions, "error": "ValueError: no",
              "step_timings": [{"action_s": 0.1, "observe_s": 0.1}] * 3,
              "timings": {"reset_s": 0.1, "setup_s": 0.1, "agent_s": 3.0, "total_s": 3.5}}
    (tmp_path / "results.jsonl").write_text(json.dumps(record) + "\n")
    folder = tmp_path / "tasks" / "os" / "t"
    folder.mkdir(parents=True)
    (folder / "steps.json").write_text(json.dumps({"responses": ["plan <A>", "plan B", "nothing"], "actions": actions}))
    for n in range(4):
        (folder / f"step_{n:03d}.png").write_bytes(_png(200, 100))
    layout = tmp_path / "pyautogui" / "screenshot" / "some" / "model" / "os" / "t"
    layout.mkdir(parents=True)
    (layout / "traj.jsonl").write_text("".join(
        json.dumps({"step_num": step, "action_timestamp": f"20261205@1200{n:02d}000000", "action": a}) + "\n"
        for n, (step, a) in enumerate(zip([1, 1, 2], actions))))

    page = lxml.html.fromstring(write_report(tmp_path).read_text())
    steps = page.xpath("//details[@id='os/t']//li[@class='step']")
    assert [s.xpath("string(.//div[@class='response']/pre)") for s in steps] == ["plan <A>", "plan B", "nothing"]
    assert [s.xpath(".//div[@class='act']/@data-action") for s in steps] == [["1", "2"], ["3"], []]
    mark = steps[0].xpath(".//span[contains(@class, 'mark')]")[0]
    assert mark.get("style") == "left:50.0000%;top:50.0000%"  # (100, 50) of a 200x100 screenshot
    # Timestamps a second apart, each action 0.2 s: the agent's 0.8 s before the second
    # and third, and what agent_s leaves before the first.
    agent = [float(x) for x in page.xpath("//details[@id='os/t']//div[@class='timeline']/span[@data-kind='agent']"
                                          "/@data-seconds")]
    assert agent == pytest.approx([3.0 - 0.6 - 1.6, 0.8, 0.8])
    assert page.xpath("string(//details[@id='os/t']//p[@class='instruction'])") == "Do <it>."
