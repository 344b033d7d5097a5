"""Unit tests for pytest_jaxperf.report.markdown: the $GITHUB_STEP_SUMMARY report."""

from __future__ import annotations

from pathlib import Path

import pytest
from _jaxperf_data import IMPROVED, NEW, OK, REGRESSED, baseline_and_run, fn, outcomes_for, rec

from pytest_jaxperf.model import RunRecord
from pytest_jaxperf.report.markdown import render_markdown, shown_path
from pytest_jaxperf.report.summary import RunSummary
from pytest_jaxperf.report.wording import failure_lines


def render(baseline_path: str | None = ".jaxperf/baseline.json", **kwargs: int) -> str:
    base, run = baseline_and_run()
    return render_markdown(run, outcomes_for(base, run), baseline_path, **kwargs)


def section(text: str, title: str) -> str:
    """The body of the '### title...' section, up to the next '### ' heading."""
    start = text.index(f"### {title}")
    end = text.find("\n### ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_tally_and_sections_come_in_order() -> None:
    base, run = baseline_and_run()
    outcomes = outcomes_for(base, run)
    text = render_markdown(run, outcomes, ".jaxperf/baseline.json")
    assert text.startswith("## pytest-jaxperf\n\n")
    assert f"**{RunSummary.of(outcomes).tally()}** (4 recorded tests)" in text
    assert "jaxperf: 1 regression, 1 improvement, 1 new, 0 not gated" in text
    heads = ["### Regressions (1)", "### Improvements (1)", "### New tests (1)"]
    positions = [text.index(h) for h in heads] + [text.index("### All recorded tests (4)")]
    assert positions == sorted(positions)
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_regressions_show_every_breach_line_with_causes_in_a_text_block() -> None:
    base, run = baseline_and_run()
    outcomes = outcomes_for(base, run)
    body = section(render_markdown(run, outcomes, "b.json"), "Regressions")
    assert f"#### `{REGRESSED}`" in body
    expected = failure_lines(outcomes[REGRESSED].breaches)
    assert any(line.startswith("    cause: x: f32[3] -> f32[4]; fix: pad") for line in expected)
    block = body.split("```text\n", 1)[1].split("\n```", 1)[0]
    assert block.splitlines() == expected
    assert "update the baseline with `pytest --jaxperf --jaxperf-save` (baseline: `b.json`)" in body


def test_no_save_hint_without_a_baseline_path() -> None:
    assert "--jaxperf-save" not in render(baseline_path=None)
    assert "baseline `" not in render(baseline_path=None)


def test_improvements_new_tests_and_table() -> None:
    text = render()
    improved = section(text, "Improvements")
    assert f"#### `{IMPROVED}`" in improved
    assert "- traces of solve at pkg/solve.py:40: 3 -> 1" in improved
    assert f"- `{NEW}`" in section(text, "New tests")  # no table escaping outside tables
    table = section(text, "All recorded tests")
    assert "| cpu s | jaxpr equations / StableHLO ops / optimized HLO ops | status |" in table
    rows = [line for line in table.splitlines() if "`" in line]
    assert rows == [
        f"| `{REGRESSED}` | 2 | 2 | 0.120 (0.010 / 0.010 / 0.100) | 0.120 | 0 / 0 / 0 "
        "| REGRESSED |",
        f"| `{IMPROVED}` | 1 | 1 | 0.120 (0.010 / 0.010 / 0.100) | 0.120 | 0 / 0 / 0 | improved |",
        "| `tests/test_sim.py::test_new[a\\|b]` | 1 | 1 | 0.120 (0.010 / 0.010 / 0.100) | 0.120 "
        "| 0 / 0 / 0 | new |",
        f"| `{OK}` | 1 | 1 | 0.070 (0.010 / 0.010 / 0.050) | 0.070 | 0 / 0 / 0 | ok |",
    ]


def test_not_gated_notes_are_grouped_and_escaped() -> None:
    base, run = baseline_and_run()
    run.environment["jax"] = "0.10.3"
    text = render_markdown(run, outcomes_for(base, run))
    notes = section(text, "Not gated")
    # One line for the three tests with a baseline entry, not three.
    assert notes.splitlines()[2] == (
        "- 3 tests: compile time not gated: environment differs (jax 0.10.2 -> 0.10.3)"
    )
    assert "ok (not gated)" in text
    assert "jax 0.10.3 · jaxlib 0.10.2 · cpu" in text


def test_many_different_notes_are_capped() -> None:
    run = RunRecord(tests={f"t::{i:03}": rec(fn("f", "m.py:1")) for i in range(130)})
    outcomes = outcomes_for(None, run)
    for i, outcome in enumerate(outcomes.values()):
        outcome.notes.append(f"runtime of b{i} not gated: machine load")
    notes = section(render_markdown(run, outcomes), "Not gated")
    assert notes.count("\n- `t::") == 100
    assert notes.splitlines()[-1] == "- … and 30 more notes"


def test_markdown_specials_in_causes_and_names_stay_literal() -> None:
    weird = "tests/t.py::test_x[`tick`]"
    base = RunRecord(tests={weird: rec(fn("<lambda>", "m.py:1"))})
    run = RunRecord(
        tests={weird: rec(fn("<lambda>", "m.py:1", traces=2, reasons=("*args: [3] -> [4]",)))}
    )
    text = render_markdown(run, outcomes_for(base, run))
    assert "#### ``tests/t.py::test_x[`tick`]``" in text
    assert "traces of <lambda> (defined at m.py:1): baseline 1 -> now 2 (+1, +100%)" in text
    assert "    cause: *args: [3] -> [4]" in text


def test_long_runs_are_capped() -> None:
    base = RunRecord(tests={f"t.py::test_{i:03}": rec(fn("f", "m.py:1")) for i in range(120)})
    run = RunRecord(
        tests={k: rec(fn("f", "m.py:1", traces=2)) for k in base.tests}
        | {f"t.py::new_{i:03}": rec(fn("g", "m.py:9")) for i in range(150)}
    )
    text = render_markdown(run, outcomes_for(base, run), max_rows=25)
    regressions = section(text, "Regressions (120)")
    assert regressions.count("#### ") == 50
    assert "… 70 more regressions not shown here (see the table)." in regressions
    new = section(text, "New tests (150)")
    assert new.count("\n- `") == 100 and "- … and 50 more" in new
    table = section(text, "All recorded tests (270)")
    assert table.count("| `") == 25
    assert "… 245 more tests not shown" in table
    # Regressions come first in the capped table.
    assert "REGRESSED" in table and "| new |" not in table


def test_an_empty_run() -> None:
    text = render_markdown(RunRecord(), {})
    assert "jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated" in text
    assert "No test was recorded." in text
    assert "### Regressions" not in text


def test_the_baseline_is_shown_relative_to_the_rootdir() -> None:
    root = Path("/home/runner/work/proj/proj")
    assert shown_path(root / ".jaxperf" / "baseline.json", root) == ".jaxperf/baseline.json"
    assert shown_path(Path("/elsewhere/b.json"), root) == "/elsewhere/b.json"


def test_a_runs_markdown_names_the_baseline_as_the_repository_does(jp: pytest.Pytester) -> None:
    """In CI the rootdir is the runner's checkout (/home/runner/work/...): the step summary
    names the committed file, not that."""
    jp.makepyfile(test_m="import pytest\n\n@pytest.mark.jaxperf\ndef test_m():\n    pass\n")
    assert jp.runpytest("--jaxperf", "--jaxperf-markdown=r.md").ret == 0
    text = (jp.path / "r.md").read_text()
    assert "baseline `.jaxperf/baseline.json`" in text
    assert str(jp.path) not in text
