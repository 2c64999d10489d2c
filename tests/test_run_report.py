"""``deskbox run report`` in a real browser: a run of three tasks in two domains (one
that clicks and types, one infeasible, one whose setup fails) on a local session, its
report opened in Chromium, filtered by domain and status, a task opened to its
screenshots with the click drawn where the agent aimed, its timeline and the charts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

from deskbox.run.report import write_report
from deskbox.run.tasks import load_tasks
from tests.support import ROOT, free_port, wait_until
from tests.test_run import TASKS, finish, results

pytestmark = pytest.mark.desktop

NOTE, INFEASIBLE, BROKEN = "os/write-a-note", "chrome/open-a-page-that-does-not-exist", "os/download-that-does-not-answer"
# What the scripted agent does in the note's task: a click, text typed (with markup in
# it, which the page must show as text), then the file written.
NOTE_ACTIONS = ["pyautogui.click(40, 40)", "pyautogui.typewrite('hello <b>')",
                "import pathlib; pathlib.Path.home().joinpath('note.txt').write_text('deskbox ran me')"]
HOSTILE = "Open input.xlsx <img src=x onerror=\"document.title='pwned'\"> & check it."


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, Path, dict[str, dict]]:
    """The run's folder, its task index and its records by task."""
    root = tmp_path_factory.mktemp("report")
    tasks = root / "tasks"
    for domain in ("os", "chrome"):
        (tasks / domain).mkdir(parents=True)
    for key in (NOTE, INFEASIBLE):
        shutil.copy(TASKS / f"{key}.json", tasks / f"{key}.json")
    dead = f"http://127.0.0.1:{free_port()}/input.xlsx"  # nothing listens there: a setup_error
    (tasks / f"{BROKEN}.json").write_text(json.dumps({
        "id": "download-that-does-not-answer", "snapshot": "os", "instruction": HOSTILE,
        "config": [{"type": "download", "parameters": {"files": [{"url": dead, "path": "/tmp/input.xlsx"}]}}],
        "evaluator": {"func": "compare_answer", "result": {"type": "vm_command_line", "command": "true", "shell": True},
                      "expected": {"type": "rule", "rules": {"expected": "x"}}}}))
    index = tasks / "test_all.json"
    index.write_text(json.dumps({"os": ["write-a-note", "download-that-does-not-answer"],
                                 "chrome": ["open-a-page-that-does-not-exist"]}))
    script = root / "script.json"
    script.write_text(json.dumps({NOTE: NOTE_ACTIONS, INFEASIBLE: ["FAIL"]}))
    out = root / "out"
    finish(subprocess.Popen([sys.executable, "-m", "deskbox.cli", "run", str(index), "--agent",
                             f"script:{script}", "--sessions", "1", "--spare", "0", "--provider", "local",
                             "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    records = {r["task"]: r for r in results(out)}
    assert {k: (r["status"], r["score"]) for k, r in records.items()} == {
        NOTE: ("done", 1.0), INFEASIBLE: ("done", 1.0), BROKEN: ("setup_error", None)}, records
    return out, index, records


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def page(run, browser):
    """The report (given the task configs) open in a page; what it asked for other
    than files is in ``page.elsewhere``, the script's errors in ``page.errors``."""
    out, index, _ = run
    path = write_report(out, tasks=load_tasks([str(index)]))
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.elsewhere, page.errors = [], []
    page.on("request", lambda r: None if r.url.startswith("file://") else page.elsewhere.append(r.url))
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.goto(path.as_uri())
    yield page
    page.close()


def shown(page: Page) -> list[str]:
    """The tasks the page shows (laid out, not only not hidden)."""
    return sorted(page.eval_on_selector_all("details.task", "ts => ts.filter(t => t.getClientRects().length)"
                                                            ".map(t => t.id)"))


def open_task(page: Page, key: str):
    task = page.locator(f"details[id='{key}']")
    task.locator("summary").click()
    assert task.evaluate("t => t.open"), key
    return task


def test_the_filters_show_the_tasks_of_the_domain_and_the_status_chosen(page):
    every = sorted([NOTE, INFEASIBLE, BROKEN])
    assert shown(page) == every
    assert page.locator("#filter-count").inner_text() == "3 of 3 tasks shown"
    page.select_option("#filter-domain", "os")
    assert shown(page) == sorted([NOTE, BROKEN])
    page.select_option("#filter-status", "setup_error")
    assert shown(page) == [BROKEN]
    page.select_option("#filter-domain", "chrome")
    assert shown(page) == []
    assert page.locator("#filter-count").inner_text() == "0 of 3 tasks shown"
    page.select_option("#filter-status", "")
    assert shown(page) == [INFEASIBLE]
    page.select_option("#filter-domain", "")
    assert shown(page) == every
    # Each choice says how many tasks it has.
    assert page.locator("#filter-status option[value='setup_error']").inner_text() == "setup_error (1)"
    assert page.locator("#filter-domain option[value='os']").inner_text() == "os (2)"


def test_an_opened_task_shows_each_screenshot_with_the_click_drawn_where_the_agent_aimed(page, run):
    record = run[2][NOTE]
    assert record["actions"] == [*NOTE_ACTIONS, "DONE"]
    task = open_task(page, NOTE)
    images = task.locator("figure.shot img")
    # The screen before each action, and after the last.
    assert images.count() == len(record["actions"]) + 1
    for i in range(images.count()):
        images.nth(i).scroll_into_view_if_needed()
        wait_until(partial(images.nth(i).evaluate, "e => e.complete && e.naturalWidth > 0"), 10,
                   what=f"screenshot {i} to load")

    click = task.locator(".act[data-action='1']")
    image, marks = click.locator("img"), click.locator(".mark")
    assert marks.count() == 1
    natural = image.evaluate("e => [e.naturalWidth, e.naturalHeight]")
    box, mark = image.bounding_box(), marks.bounding_box()
    expected = (box["x"] + 40 * box["width"] / natural[0], box["y"] + 40 * box["height"] / natural[1])
    centre = (mark["x"] + mark["width"] / 2, mark["y"] + mark["height"] / 2)
    assert abs(centre[0] - expected[0]) <= 1 and abs(centre[1] - expected[1]) <= 1, \
        f"the click's mark is centred at {centre}, (40, 40) of a {natural} screenshot shown at {box} is {expected}"
    assert "click at (40, 40)" in click.inner_text()

    # The typed text is a caption, shown as text (its markup is not the page's).
    typed = task.locator(".act[data-action='2']")
    assert typed.locator(".mark").count() == 0
    assert typed.locator(".typed q").text_content() == "hello <b>"
    assert typed.locator(".typed b").count() == 0
    # The agent's response is beside the actions of its step.
    steps = task.locator("li.step")
    assert steps.count() == len(record["actions"])
    assert steps.nth(0).locator(".response pre").inner_text() == "scripted: pyautogui.click(40, 40)"
    assert steps.nth(0).locator(".act").get_attribute("data-action") == "1"
    assert steps.nth(3).locator(".response pre").inner_text() == "done"
    # The grader's inputs: what its getter read from the session, and the config.
    graded = task.locator("table.graded tr").nth(1).locator("td")
    assert graded.nth(0).inner_text() == "compare_answer"
    assert graded.nth(1).inner_text().strip() == record["graded"][0]["result"].strip()
    assert "deskbox ran me" in graded.nth(1).inner_text() and graded.nth(3).inner_text() == "1.0"
    evaluator = json.loads(task.locator("pre.evaluator").inner_text())
    assert evaluator["func"] == "compare_answer" and evaluator["result"]["command"] == "cat ~/note.txt"


def test_the_timeline_holds_the_records_numbers_each_part_as_wide_as_its_share(page, run):
    record = run[2][NOTE]
    task = open_task(page, NOTE)
    bar = task.locator(".timeline")

    def parts(kind: str) -> list[float]:
        return [float(x) for x in bar.locator(f"span[data-kind='{kind}']").evaluate_all(
            "ss => ss.map(s => s.dataset.seconds)")]

    timings, steps = record["timings"], record["step_timings"]
    assert parts("reset") == [pytest.approx(timings["reset_s"], abs=1e-4)]
    assert parts("setup") == [pytest.approx(timings["setup_s"], abs=1e-4)]
    assert parts("grading") == [pytest.approx(timings["grading_s"], abs=1e-4)]
    assert parts("action") == pytest.approx([s["action_s"] for s in steps], abs=1e-4)
    assert parts("observe") == pytest.approx([s["observe_s"] for s in steps], abs=1e-4)
    # OSWorld's layout's timestamps give the agent's time before each action; together
    # with the environment's they make up agent_s.
    agent = parts("agent")
    assert len(agent) == len(record["actions"])
    assert sum(agent) + sum(parts("action")) + sum(parts("observe")) == pytest.approx(timings["agent_s"], abs=2e-3)
    every = bar.locator("span").evaluate_all("ss => ss.map(s => Number(s.dataset.seconds))")
    assert sum(every) == pytest.approx(timings["total_s"], abs=2e-3)
    # Drawn to scale: the reset's part of the bar is its share of the task's time.
    width = bar.evaluate("b => b.clientWidth")
    reset = bar.locator("span[data-kind='reset']").evaluate("s => s.getBoundingClientRect().width")
    assert reset / width == pytest.approx(timings["reset_s"] / timings["total_s"], abs=0.01)
    # The table beside it has the same numbers, its total the record's.
    assert task.locator("table.phases tr:last-child th:last-child").inner_text() == f"{timings['total_s']:.3f}"
    assert task.locator("table.phases td[data-kind='action']").count() == len(steps)


def test_the_charts_draw_each_domains_score_and_where_the_runs_time_went(page, run):
    records = run[2]
    bars = {g.get_attribute("data-domain"): g.locator("rect.bar").bounding_box()["width"]
            for g in page.locator("svg.chart.scores g.row").all()}
    # chrome: its one task scored 1; os: one task 1, the other a setup error (0 of the mean).
    assert set(bars) == {"chrome", "os"} and bars["chrome"] > 100
    assert bars["os"] == pytest.approx(bars["chrome"] / 2, abs=1)
    time = page.locator("svg.chart.time")
    assert [g.get_attribute("data-row") for g in time.locator("g.row").all()] == ["chrome", "os", "all"]
    resets = float(time.locator("g[data-row='all'] rect[data-kind='reset']").get_attribute("data-seconds"))
    assert resets == pytest.approx(sum(r["timings"]["reset_s"] for r in records.values()), abs=2e-3)
    graded = float(time.locator("g[data-row='os'] rect[data-kind='grading']").get_attribute("data-seconds"))
    assert graded == pytest.approx(records[NOTE]["timings"]["grading_s"], abs=2e-3)


def test_the_page_loads_nothing_but_the_runs_files_and_shows_a_tasks_text_as_text(page):
    task = open_task(page, BROKEN)
    assert task.locator(".instruction").inner_text() == HOSTILE
    assert task.locator(".instruction img").count() == 0
    assert page.title() != "pwned"
    assert "setup: " in task.locator("pre").first.inner_text()
    # No steps ran: no screenshot of an action, and a timeline of the reset and the setup.
    assert task.locator(".act").count() == 0
    assert task.locator(".timeline span").evaluate_all("ss => ss.map(s => s.dataset.kind)")[:2] == ["reset", "setup"]
    open_task(page, INFEASIBLE)
    page.wait_for_load_state("load")
    assert page.elsewhere == [] and page.errors == []


def test_given_another_run_the_command_lists_the_tasks_that_did_better_and_says_the_grader_inputs_are_unknown(
        run, browser, tmp_path):
    out, _, records = run
    other = tmp_path / "earlier"
    other.mkdir()
    earlier = dict(records[NOTE], score=0.0)
    (other / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [earlier, records[INFEASIBLE]]))
    path = subprocess.run([sys.executable, "-m", "deskbox.cli", "run", "report", str(out), str(other)],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip().splitlines()[0]
    page = browser.new_page()
    page.goto(Path(path).as_uri())
    better = page.locator("tr.better")
    assert better.count() == 1 and better.locator("td").first.inner_text() == NOTE
    # Only in this run: neither better nor worse.
    assert page.locator("tr.worse").count() == 0
    assert "better on 1, worse on 0, the same on 1; only in this run 1" in page.locator("p.paired").inner_text()
    # From the command line too: the run keeps each task's config in its folder.
    task = open_task(page, NOTE)
    assert json.loads(task.locator("pre.evaluator").inner_text())["func"] == "compare_answer"
    page.close()
