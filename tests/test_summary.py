"""Unit tests for pytest_jaxperf.summary: one grouping of a run's verdicts, one status wording."""

from __future__ import annotations

import pytest
from _records import rec

from pytest_jaxperf.compare import Breach, Outcome
from pytest_jaxperf.markdown import render_markdown
from pytest_jaxperf.model import Report
from pytest_jaxperf.report import summary_lines
from pytest_jaxperf.summary import RunSummary, status_of


def _breach(gated: bool = True) -> Breach:
    return Breach("traces", None, 1, 2, "baseline", (), gated)


OUTCOMES = {
    "t::b_regressed": Outcome("regressed", [_breach()]),
    "t::a_regressed": Outcome("regressed", [_breach()], notes=["env differs"]),
    "t::saved": Outcome("regressed", [_breach(gated=False)]),
    "t::faster": Outcome("improved", improvements=["runtime 2 s -> 1 s"]),
    "t::fresh": Outcome("new"),
    "t::quiet": Outcome("ok", notes=["env differs"]),
    "t::other": Outcome("ok", notes=["load"]),
    "t::plain": Outcome("ok"),
}


def test_run_summary_groups_every_verdict_once() -> None:
    summary = RunSummary.of(OUTCOMES)
    assert summary.regressed == ("t::a_regressed", "t::b_regressed")
    assert summary.reported == ("t::saved",)
    assert summary.improved == ("t::faster",)
    assert summary.new == ("t::fresh",)
    assert summary.not_gated == ("t::a_regressed", "t::other", "t::quiet")
    # Most common note first, each with its tests.
    assert summary.notes == (
        ("env differs", ("t::a_regressed", "t::quiet")),
        ("load", ("t::other",)),
    )
    assert summary.tally() == (
        "jaxperf: 2 regressions, 1 improvement, 1 new, 3 not gated, 1 reported only (saving)"
    )


@pytest.mark.parametrize(
    ("nodeid", "expected"),
    [
        ("t::b_regressed", "REGRESSED"),
        ("t::saved", "reported only"),
        ("t::faster", "improved"),
        ("t::quiet", "ok (not gated)"),
        ("t::plain", "ok"),
    ],
)
def test_terminal_and_markdown_word_a_status_alike(nodeid: str, expected: str) -> None:
    record = rec()
    assert status_of(record, OUTCOMES[nodeid]) == expected
    terminal = summary_lines({nodeid: record}, {nodeid: OUTCOMES[nodeid]})[1]
    assert terminal.rstrip().endswith(expected)
    markdown = render_markdown(Report({}, {nodeid: record}), {nodeid: OUTCOMES[nodeid]})
    assert f"| {expected} |" in markdown


def test_status_of_an_uncompared_test_is_its_outcome() -> None:
    record = rec()
    record.outcome = "failed"
    assert status_of(record, None) == "failed"
