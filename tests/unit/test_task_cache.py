"""The task files' cache: which files a config downloads and under which names
desktop-env looks for them, kept once by content, laid out per task. (Downloads are a
function given to the cache here; tests/test_run.py fetches over HTTP and runs offline.)"""

import json
import uuid
from pathlib import Path

from deskbox.run.cache import BROWSE_HISTORY_URL, Cache, Want, wanted
from deskbox.run.tasks import Task


def task(setup: list[dict], evaluator: dict, key: str = "calc/t1") -> Task:
    domain, _, task_id = key.partition("/")
    return Task(domain, {"id": task_id, "config": setup, "evaluator": evaluator}, f"{task_id}.json")


SHEET = "https://files.example/in/prices.xlsx"
GOLD = "https://files.example/gold/prices.xlsx"
BOOK = task(
    [{"type": "download", "parameters": {"files": [{"url": SHEET, "path": "/home/user/prices.xlsx"}]}},
     {"type": "update_browse_history", "parameters": {"history": []}}],
    {"func": "compare_table", "postconfig": [{"type": "download", "parameters": {"files": [
        {"url": SHEET, "path": "/tmp/again.xlsx"}]}}],
     "result": {"type": "vm_file", "path": "/home/user/prices.xlsx", "dest": "prices.xlsx"},
     "expected": {"type": "cloud_file", "path": GOLD, "dest": "gold.xlsx"}})


def test_every_download_is_wanted_under_the_name_desktop_env_looks_for():
    assert wanted(BOOK) == [
        Want(SHEET, f"{uuid.uuid5(uuid.NAMESPACE_URL, SHEET)}_prices.xlsx"),
        Want(BROWSE_HISTORY_URL, "history_new.sqlite"),
        Want(SHEET, f"{uuid.uuid5(uuid.NAMESPACE_URL, SHEET)}_again.xlsx"),
        Want(GOLD, "gold.xlsx"),
    ]
    multi = task([], {"func": ["a", "b"], "expected": [
        {"type": "cloud_file", "multi": True, "path": ["https://x/1", "https://x/2"], "dest": ["1.txt", "2.txt"]},
        {"type": "rule", "rules": {}}]})
    assert wanted(multi) == [Want("https://x/1", "1.txt"), Want("https://x/2", "2.txt")]


def test_a_fetch_keeps_each_url_once_by_content_and_lays_it_out_per_task(tmp_path):
    bodies = {SHEET: b"sheet", GOLD: b"gold", BROWSE_HISTORY_URL: b"sheet"}  # two URLs, one content
    got: list[str] = []

    def get(url: str, dest: Path) -> None:
        got.append(url)
        dest.write_bytes(bodies[url])

    cache = Cache(tmp_path / "cache")
    assert cache.missing([BOOK]) == {"calc/t1": [SHEET, BROWSE_HISTORY_URL, SHEET, GOLD]}
    assert cache.fetch([BOOK], get=get) == {}
    assert got == [SHEET, BROWSE_HISTORY_URL, GOLD]
    assert len(list((tmp_path / "cache" / "blobs").iterdir())) == 2
    assert cache.missing([BOOK]) == {}
    # Read again from its folder: the manifest says what is where.
    again = Cache(tmp_path / "cache")
    manifest = json.loads((tmp_path / "cache" / "manifest.json").read_text())
    assert manifest[GOLD]["size"] == 4 and again.has(GOLD)
    assert again.fetch([BOOK], get=get) == {} and len(got) == 3  # nothing fetched twice
    episode = tmp_path / "episode"
    episode.mkdir()
    assert again.place(BOOK, episode) == []
    assert (episode / "gold.xlsx").read_bytes() == b"gold"
    assert (episode / f"{uuid.uuid5(uuid.NAMESPACE_URL, SHEET)}_prices.xlsx").read_bytes() == b"sheet"
    # A copy: what a grader does to its file does not reach the cache.
    (episode / "gold.xlsx").write_bytes(b"changed")
    assert Cache(tmp_path / "cache").place(BOOK, episode) == [] and (episode / "gold.xlsx").read_bytes() == b"gold"


def test_a_file_that_will_not_download_is_named_and_the_others_are_kept(tmp_path):
    def get(url: str, dest: Path) -> None:
        if url == GOLD:
            raise OSError("the link expired")
        dest.write_bytes(b"x")

    cache = Cache(tmp_path)
    failed = cache.fetch([BOOK], get=get)
    assert failed == {GOLD: "OSError: the link expired"}
    assert cache.missing([BOOK]) == {"calc/t1": [GOLD]}
    assert not list(tmp_path.glob(".part-*"))
    episode = tmp_path / "episode"
    episode.mkdir()
    assert cache.place(BOOK, episode) == [GOLD]


def test_a_file_name_that_leads_out_of_the_episodes_folder_is_not_laid_out(tmp_path):
    escaping = task([], {"func": "compare_text_file",
                         "expected": {"type": "cloud_file", "path": GOLD, "dest": "../outside.txt"}})
    cache = Cache(tmp_path / "cache")
    assert cache.fetch([escaping], get=lambda url, dest: dest.write_bytes(b"x")) == {}
    episode = tmp_path / "episode"
    episode.mkdir()
    assert cache.place(escaping, episode) == [GOLD]
    assert not (tmp_path / "outside.txt").exists()
