"""bench.noop's pure parts: the documented list of tasks a do-nothing agent passes, read
from docs/osworld.md's table, and the machine's CPU shared among the tasks running."""

from bench.noop import cost_by_task, listed_passes
from tests.support import ROOT


def test_the_list_is_read_from_its_table_and_nowhere_else():
    text = "\n".join([
        "## Tasks a do-nothing agent passes", "", "| task | why |", "|---|---|",
        "| `vlc/8d9fd4e2-abc` | Sway shows a lone window whole |", "",
        "## Another table", "| `os/not-this-one` | no |",
    ])
    assert listed_passes(text) == {"vlc/8d9fd4e2-abc": "Sway shows a lone window whole"}


def test_every_task_docs_osworld_md_lists_has_a_reason():
    listed = listed_passes((ROOT / "docs" / "osworld.md").read_text())
    assert all(reason and not reason.startswith("`") for reason in listed.values()), listed


def test_cpu_of_a_second_is_shared_among_the_tasks_running_in_it_by_how_long_each_ran():
    samples = [(0.0, 0.0), (1.0, 1.0), (2.0, 3.0), (3.0, 3.5), (4.0, 5.5)]
    spans = {"a": (0.0, 2.0), "b": (1.0, 3.0), "short": (3.25, 3.75), "longer": (3.0, 4.0)}
    cost = cost_by_task(samples, spans)
    assert cost == {"a": 1.0 + 1.0, "b": 1.0 + 0.5, "short": 2.0 / 3, "longer": 2.0 * 2 / 3}
    # A task shorter than a sample, whose span holds no sample's middle, has its cost too.
    assert set(cost_by_task([(0.0, 0.0), (1.0, 1.0)], {"quick": (0.6, 0.9)})) == {"quick"}
