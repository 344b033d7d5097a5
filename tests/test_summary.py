"""Unit tests for report.summary: one grouping of a run's verdicts, one status wording."""

from __future__ import annotations

import re
import typing
from html import escape as html_escape

import pytest
from _records import RecordedTest, fn, rec

from pytest_jaxperf.compare import (
    STATUSES,
    Breach,
    Gating,
    Status,
    Verdict,
    apply_strict,
    evaluate,
)
from pytest_jaxperf.config import MarkerLimits, Tolerances
from pytest_jaxperf.model import RunRecord
from pytest_jaxperf.report.html import render_html
from pytest_jaxperf.report.junit import properties as junit_properties
from pytest_jaxperf.report.markdown import render_markdown
from pytest_jaxperf.report.summary import RunSummary, status_of
from pytest_jaxperf.report.terminal import summary_lines
from pytest_jaxperf.report.wording import gone_line


def _breach(gated: bool = True) -> Breach:
    return Breach("traces", None, 1, 2, "baseline", (), gated)


OUTCOMES = {
    "t::b_regressed": Verdict("REGRESSED", [_breach()]),
    "t::a_regressed": Verdict("REGRESSED", [_breach()], notes=["env differs"]),
    "t::saved": Verdict("reported only", [_breach(gated=False)]),
    "t::faster": Verdict("improved", improvements=["runtime 2 s -> 1 s"]),
    "t::fresh": Verdict("new"),
    "t::quiet": Verdict("ok", notes=["env differs"]),
    "t::other": Verdict("ok", notes=["load"]),
    "t::plain": Verdict("ok"),
    "t::unjitted": Verdict("function gone", gone=[fn("g", "m.py:9"), fn("h", "m.py:20")]),
}


def test_run_summary_groups_every_verdict_once() -> None:
    summary = RunSummary.of(OUTCOMES)
    assert summary.regressed == ("t::a_regressed", "t::b_regressed")
    assert summary.reported == ("t::saved",)
    assert summary.improved == ("t::faster",)
    assert summary.new == ("t::fresh",)
    assert summary.gone == ("t::unjitted",)
    assert summary.functions_gone == 2
    assert summary.not_gated == ("t::a_regressed", "t::other", "t::quiet")
    # Most common note first, each with its tests.
    assert summary.notes == (
        ("env differs", ("t::a_regressed", "t::quiet")),
        ("load", ("t::other",)),
    )
    assert summary.tally() == (
        "jaxperf: 2 regressions, 1 improvement, 1 new, 3 not gated, 1 reported only, "
        "2 functions gone"
    )


@pytest.mark.parametrize(
    ("nodeid", "expected"),
    [
        ("t::b_regressed", "REGRESSED"),
        ("t::saved", "reported only"),
        ("t::faster", "improved"),
        ("t::quiet", "ok (not gated)"),
        ("t::plain", "ok"),
        ("t::unjitted", "function gone"),
    ],
)
def test_terminal_and_markdown_word_a_status_alike(nodeid: str, expected: str) -> None:
    record = rec()
    assert status_of(record, OUTCOMES[nodeid]) == expected
    terminal = summary_lines({nodeid: record}, {nodeid: OUTCOMES[nodeid]})[1]
    assert terminal.rstrip().endswith(expected)
    markdown = render_markdown(RunRecord({}, {nodeid: record}), {nodeid: OUTCOMES[nodeid]})
    assert f"| {expected} |" in markdown


def test_status_words_are_one_literal() -> None:
    assert typing.get_args(Status) == STATUSES


def _judged() -> dict[str, tuple[Status, Verdict]]:
    """One real verdict of each status, from compare.evaluate."""
    f = fn("f", "m.py:3")
    tol = Tolerances()

    def judge(
        now: RecordedTest,
        base: RecordedTest | None,
        limits: MarkerLimits | None = None,
        save: bool = False,
    ) -> Verdict:
        return evaluate(now, base, limits or MarkerLimits(), Gating(tol, gate_baseline=not save))

    bench = {"kind": "benchmark", "jaxpr_eqns": 5}
    verdicts = {
        "t::bad": judge(rec(f), None, MarkerLimits(max_traces={"g": 1})),
        "t::limit": judge(rec(fn("f", "m.py:3", traces=2)), None, MarkerLimits(max_traces=1)),
        "t::regressed": judge(rec(fn("f", "m.py:3", traces=2)), rec(f)),
        "t::reported": judge(rec(fn("f", "m.py:3", traces=2)), rec(f), save=True),
        "t::gone": judge(rec(), rec(f)),
        "t::improved": judge(rec(f), rec(fn("f", "m.py:3", traces=2))),
        "t::ok": judge(rec(f), rec(f)),
        "t::new": judge(rec(f, benchmarks={"b": bench}), None, MarkerLimits(max_jaxpr_eqns=5)),
    }
    strict = evaluate(rec(f), rec(f), MarkerLimits(), Gating(tol, timing_differences=("x",)))
    apply_strict(strict, frozenset({"environment_differs"}))
    verdicts["t::strict"] = strict
    return {k: (o.status, o) for k, o in verdicts.items()}


def test_every_status_reads_the_same_in_every_report() -> None:
    judged = _judged()
    assert sorted(s for s, _ in judged.values()) == sorted(STATUSES)  # each status once
    outcomes = {k: o for k, (_, o) in judged.items()}
    records = {k: rec() for k in judged}
    terminal = {line.split()[0]: line for line in summary_lines(records, outcomes)[1:]}
    markdown = render_markdown(RunRecord({}, records), outcomes)
    html = render_html(RunRecord({}, records), None, outcomes)
    for nodeid, (status, outcome) in judged.items():
        assert terminal[nodeid].endswith(f"  {status}"), terminal[nodeid]
        assert re.search(rf"\| `{nodeid}` \|.*\| {status} \|", markdown), nodeid
        assert re.search(rf"<code>{nodeid}</code>.*<td[^>]*>{status}</td></tr>", html), nodeid
        assert dict(junit_properties(records[nodeid], outcome))["jaxperf_status"] == status
    # Each report's sections say why: the bad limit among the failures, the gone function.
    error = judged["t::bad"][1].errors[0]
    assert error in markdown and html_escape(error) in html
    assert "### Functions gone (1)" in markdown and "<h2>Functions gone (1)</h2>" in html
    gone = judged["t::gone"][1].gone[0]
    assert gone_line(gone) in markdown and html_escape(gone_line(gone)) in html


def test_timing_report_breaches_are_tallied_as_reported_only_not_as_saving() -> None:
    # --jaxperf-timing=report: a runtime breach is shown, never gated; nothing was saved.
    runtime = Breach("runtime", None, 1e-3, 3e-3, "baseline", (), gated=False, benchmark="b")
    summary = RunSummary.of({"t::slow": Verdict("reported only", [runtime])})
    assert summary.reported == ("t::slow",)
    assert summary.tally().endswith(", 0 not gated, 1 reported only")
    assert "saving" not in summary.tally()


def test_status_of_an_uncompared_test_is_its_outcome() -> None:
    record = rec()
    record.outcome = "failed"
    assert status_of(record, None) == "failed"


def test_each_reason_a_metric_was_not_gated_is_one_line_with_its_tests() -> None:
    from pytest_jaxperf.report.summary import not_gated_lines

    notes = (
        ("compile time not gated: environment differs (cpu A -> B)", ("t::a", "t::b")),
        ("runtime of work not gated: environment differs (cpu A -> B)", ("t::a",)),
        ("something else", ("t::c",)),
    )
    assert not_gated_lines(notes) == [
        "jaxperf: compile time of 2 tests not gated: environment differs (cpu A -> B)",
        "jaxperf: runtime of work not gated in 1 test: environment differs (cpu A -> B)",
        "jaxperf: something else (1 test)",
    ]
