"""The docs hold together: every relative link and anchor in README.md and docs/ leads
somewhere, the README's Quick start is the two commands, and docs/measurements.md is
made from the benches' results, saying so where a bench has none."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from bench import measurements

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """Lines outside fenced code blocks, with inline code spans blanked out."""
    out, fenced = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((n, re.sub(r"`[^`]*`", "``", line)))
    return out


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text without Markdown, lower case, every
    character but letters, digits, spaces, hyphens and underscores dropped, spaces made
    hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"[`*]", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not m:
            continue
        slug = github_slug(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def link_problems(files: list[Path]) -> list[str]:
    """Every relative link in ``files`` whose file does not exist, or whose ``#anchor``
    names no heading of its Markdown target."""
    problems = []
    for path in files:
        for n, line in _prose_lines(path.read_text()):
            for target in LINK.findall(line):
                if SCHEME.match(target):
                    continue
                file_part, _, anchor = target.partition("#")
                dest = (path.parent / file_part).resolve() if file_part else path
                where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{n}: {target}"
                if not dest.exists():
                    problems.append(f"{where}: no such file")
                elif anchor:
                    if dest.suffix != ".md":
                        problems.append(f"{where}: an anchor into a file that is not Markdown")
                    elif anchor not in anchors(dest.read_text()):
                        problems.append(f"{where}: no heading makes #{anchor}")
    return problems


def test_every_relative_link_and_anchor_in_the_readme_and_docs_resolves():
    files = _doc_files()
    assert len(files) > 5
    assert link_problems(files) == []


def test_the_link_check_reports_a_missing_file_and_a_missing_anchor(tmp_path):
    (tmp_path / "b.md").write_text("# Title\n\n## How /layout stays fast\n")
    page = tmp_path / "a.md"
    page.write_text("[ok](b.md#how-layout-stays-fast) [gone](c.md) [no anchor](b.md#nothing)\n"
                    "`[in code](c.md)`\n```\n[in a block](c.md)\n```\n[outside](https://example.org/x#y)\n")
    problems = link_problems([page])
    assert len(problems) == 2, problems
    assert "c.md: no such file" in problems[0]
    assert "no heading makes #nothing" in problems[1]


def test_anchors_are_made_as_github_makes_them():
    text = "# `deskbox up`\n## Provider adapters (computer use)\n## Earlier: Xwayland's memory\n## Ids\n## Ids\n"
    assert anchors(text) == {"deskbox-up", "provider-adapters-computer-use", "earlier-xwaylands-memory",
                             "ids", "ids-1"}


def test_the_quick_start_is_exactly_make_up_and_make_test():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    commands, fenced, shell = [], False, False
    for line in section.splitlines():
        m = FENCE.match(line)
        if m:
            fenced = not fenced
            shell = fenced and line.strip()[3:].strip() in ("sh", "bash", "shell", "console", "")
            continue
        if fenced and shell and line.split("#", 1)[0].strip():
            commands.append(line.split("#", 1)[0].strip())
    assert commands == ["make up", "make test"]


# -- docs/measurements.md --------------------------------------------------------------

def _scene_result() -> dict:
    rows = []
    for n, f in ((1000, 1.0), (5000, 4.0)):
        for label, ms in (("bridge /layout (baseline)", 40), ("scene agent-turn", 100), ("scene/text agent-turn", 110)):
            rows.append({"elements": n, "row": label, "n": 10, "median_ms": ms * f, "p95_ms": ms * f * 1.3,
                         "min_ms": ms * f * 0.8, "max_ms": ms * f * 1.5, "x_baseline": ms / 40,
                         "chars": 1_000_000 if "layout" in label else 40_000})
        rows.append({"elements": n, "row": "agent-turn stages", "stages_ms": {"tree": 3.0, "cdp": 50.0}})
        rows.append({"elements": n, "row": "ax elements in the scene", "count": 1100, "from_page": 1000, "native": 100})
    return {"rows": rows, "calculator_idle_after_s": 12.0, "load": "1.00 / 1.20"}


def _generate(tmp_path: Path, results: dict[str, dict], page: str | None = None) -> tuple[str, Path]:
    res, out, plots = tmp_path / "results", tmp_path / "docs" / "measurements.md", tmp_path / "docs" / "measurements"
    res.mkdir(exist_ok=True)
    for name, data in results.items():
        (res / f"{name}.json").write_text(json.dumps(data))
    if page is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(page)
    assert measurements.main(["--results", str(res), "--out", str(out), "--plots", str(plots)]) == 0
    return out.read_text(), plots


def test_a_bench_without_results_is_not_measured_and_names_its_command(tmp_path):
    text, plots = _generate(tmp_path, {})
    for bench in measurements.BENCHES:
        section = text.split(f"\n## {bench.title}\n", 1)[1].split("\n## ", 1)[0]
        assert "Not measured in this run" in section
        assert f"`{bench.command}`" in section
    assert not list(plots.glob("*.svg"))


def test_scene_results_give_their_figures_and_a_plot_of_scene_time_against_page_size(tmp_path):
    text, plots = _generate(tmp_path, {"scene": _scene_result()})
    section = text.split("\n## Scene aggregator", 1)[1].split("\n## ", 1)[0]
    assert "Not measured" not in section
    assert "| 5,000 | scene agent-turn | 400 | 520 |" in section
    assert "(measurements/scene-vs-page-size.svg)" in section
    svg = ET.parse(plots / "scene-vs-page-size.svg").getroot()
    assert svg.tag.endswith("svg")
    assert "Scene time vs page size" in ET.tostring(svg, encoding="unicode")
    assert link_problems([tmp_path / "docs" / "measurements.md"]) == []


def test_the_page_keeps_its_hand_recorded_section_drops_stale_plots_and_is_the_same_twice(tmp_path):
    tail = f"{measurements.MARKER}\n\n{measurements.EARLIER_HEADING}\n\n### Earlier: CDP bridge /layout\n\n100 ms, by hand.\n"
    first, plots = _generate(tmp_path, {"scene": _scene_result()}, page="# old\n\n" + tail)
    assert first.endswith(tail)
    assert "[Earlier: CDP bridge /layout](#earlier-cdp-bridge-layout)" in first
    stale = plots / "old-plot.svg"
    stale.write_text("<svg/>")
    before = {p.name: p.read_bytes() for p in plots.glob("*.svg") if p != stale}
    second, _ = _generate(tmp_path, {"scene": _scene_result()})
    assert second == first
    assert not stale.exists()
    assert {p.name: p.read_bytes() for p in plots.glob("*.svg")} == before


def test_the_committed_measurements_page_is_generated_and_keeps_its_hand_recorded_section():
    text = (ROOT / "docs" / "measurements.md").read_text()
    assert "Generated by `python -m bench.measurements`" in text
    assert text.count(measurements.MARKER) == 1
    assert measurements.EARLIER_HEADING in text.split(measurements.MARKER, 1)[1]
