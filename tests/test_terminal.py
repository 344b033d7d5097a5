"""Unit tests for pytest_jaxperf.report.terminal: failure text, summary table and tally."""

from __future__ import annotations

import re

import pytest
from _records import RecordedTest, fn, rec

from pytest_jaxperf.causes import SILENT_RECOMPILE
from pytest_jaxperf.compare import COMPILE_TIME, Breach, Gating, Verdict, evaluate
from pytest_jaxperf.config import MarkerLimits, Tolerances
from pytest_jaxperf.report import terminal
from pytest_jaxperf.report.summary import RunSummary
from pytest_jaxperf.report.terminal import TEST_NAME_WIDTH, failure_text, summary_lines

DEFAULTS = Tolerances(compile_rtol=1.0, compile_floor=0.1)
BASELINE = ".jaxperf/baseline.json"
SAVE_HINT = f"  baseline: {BASELINE} (if the change is intended, update it with --jaxperf-save)"

# The fix `causes.summary` adds to a shape change.
SHAPE_FIX = "; fix: pad to a fixed size or a few buckets (jnp.nonzero(..., size=, fill_value=))"


def judge(
    current: RecordedTest,
    base: RecordedTest | None,
    limits: MarkerLimits | None = None,
    differences: tuple[str, ...] = (),
    gate_baseline: bool = True,
) -> Verdict:
    gating = Gating(DEFAULTS, timing_differences=differences, gate_baseline=gate_baseline)
    return evaluate(current, base, limits or MarkerLimits(), gating)


# -- failure_text -----------------------------------------------------------------------------


def test_failure_text_for_a_retrace() -> None:
    current = rec(fn("step", "pkg/sim.py:12", traces=2, reasons=("x: f32[3] -> f32[4]",)))
    outcome = judge(current, rec(fn("step", "pkg/sim.py:12")))
    assert failure_text("tests/test_sim.py::test_step", outcome, BASELINE).splitlines() == [
        "jaxperf: tests/test_sim.py::test_step: 2 metric(s) over the baseline or a limit",
        "  traces of step (defined at pkg/sim.py:12): baseline 1 -> now 2 (+1, +100%)",
        "      cause: x: f32[3] -> f32[4]" + SHAPE_FIX,
        # The same cause breaches the compiles: said once.
        "  compiles of step (defined at pkg/sim.py:12): baseline 1 -> now 2 (+1, +100%)",
        SAVE_HINT,
    ]


def test_failure_text_for_a_silent_recompile() -> None:
    current = rec(fn("step", "pkg/sim.py:12", traces=1, compiles=3))
    outcome = judge(current, rec(fn("step", "pkg/sim.py:12", traces=1, compiles=1)))
    assert failure_text("t::a", outcome, BASELINE).splitlines() == [
        "jaxperf: t::a: 1 metric(s) over the baseline or a limit",
        "  compiles of step (defined at pkg/sim.py:12): baseline 1 -> now 3 (+2, +200%)",
        f"      cause: {SILENT_RECOMPILE}",
        SAVE_HINT,
    ]


def test_failure_text_for_a_new_function() -> None:
    current = rec(fn("step", "pkg/sim.py:12"), fn("<lambda>", "pkg/sim.py:30"))
    outcome = judge(current, rec(fn("step", "pkg/sim.py:12")))
    lines = failure_text("t::a", outcome, BASELINE).splitlines()
    assert lines[1:3] == [
        "  traces of <lambda> (defined at pkg/sim.py:30): baseline 0 -> now 1 (+1)",
        "      cause: new function (not in the baseline)",
    ]
    assert lines[-1] == SAVE_HINT


def test_failure_text_for_compile_time() -> None:
    outcome = judge(
        rec(fn("step", "pkg/sim.py:12", compile_s=2.5)),
        rec(fn("step", "pkg/sim.py:12", compile_s=1.0)),
    )
    lines = failure_text("t::a", outcome, BASELINE).splitlines()
    assert lines[:2] == [
        "jaxperf: t::a: 1 metric(s) over the baseline or a limit",
        "  compile time of all functions: baseline 1.000 s -> now 2.500 s "
        "(+1.500 s, +150%) [cpu seconds, rtol 1, floor 0.1 s]",
    ]
    assert lines[-1] == SAVE_HINT


def test_failure_text_for_a_limit_has_no_save_hint() -> None:
    current = rec(
        fn("step", "pkg/sim.py:12", traces=3, reasons=("n: 1 -> 2", "n: 2 -> 3")),
    )
    outcome = judge(current, None, MarkerLimits(max_traces=1, max_compile_time=0.5))
    text = failure_text("t::a", outcome, BASELINE)
    assert text.splitlines() == [
        "jaxperf: t::a: 1 metric(s) over the baseline or a limit",
        "  traces of all functions: 3 > limit 1",
        "      cause: step: n: 1 -> 2",
        "      cause: step: n: 2 -> 3",
    ]
    assert "--jaxperf-save" not in text


def test_failure_text_for_a_one_function_limit() -> None:
    current = rec(fn("step", "pkg/sim.py:12", compile_s=0.75), fn("other", "pkg/sim.py:40"))
    outcome = judge(current, None, MarkerLimits(max_compile_time={"step": 0.5}))
    assert failure_text("t::a", outcome, BASELINE).splitlines() == [
        "jaxperf: t::a: 1 metric(s) over the baseline or a limit",
        "  compile time of step (defined at pkg/sim.py:12): 0.750 s > limit 0.500 s",
    ]


def test_failure_text_shows_notes_and_leaves_out_ungated_breaches() -> None:
    current = rec(fn("step", "pkg/sim.py:12", traces=3, compile_s=9.0))
    outcome = judge(
        current,
        rec(fn("step", "pkg/sim.py:12", traces=2, compile_s=1.0)),
        MarkerLimits(max_traces=2),
        differences=("jax 0.10.1 -> 0.10.2",),
        gate_baseline=False,
    )
    assert failure_text("t::a", outcome, BASELINE).splitlines() == [
        "jaxperf: t::a: 1 metric(s) over the baseline or a limit",
        "  traces of all functions: 3 > limit 2",
        "  note: compile time not gated: environment differs (jax 0.10.1 -> 0.10.2)",
    ]


# -- summary_lines ----------------------------------------------------------------------------


def test_failure_text_for_a_limit_naming_no_function_is_one_line_per_key() -> None:
    current = rec(fn("sgd_step", "pkg/opt.py:5", traces=5))
    outcome = judge(current, None, MarkerLimits(max_traces={"sgd_stpe": 1}))
    lines = failure_text("t.py::test_train", outcome, BASELINE).splitlines()
    assert lines == [f"jaxperf: t.py::test_train: {outcome.errors[0]}"]
    assert "names 'sgd_stpe'" in lines[0] and "(did you mean 'sgd_step'?)" in lines[0]
    # With a breach too, the error comes first, then the usual header and breach.
    outcome = judge(current, None, MarkerLimits(max_traces={"sgd_stpe": 1}, max_compiles=1))
    lines = failure_text("t.py::test_train", outcome, BASELINE).splitlines()
    assert lines[0].startswith("jaxperf: t.py::test_train: @pytest.mark.jaxperf(max_traces=")
    assert lines[1] == "jaxperf: t.py::test_train: 1 metric(s) over the baseline or a limit"
    assert lines[2] == "  compiles of all functions: 5 > limit 1"


def test_failure_text_lists_a_gone_function() -> None:
    base = rec(fn("step", "pkg/sim.py:12"), fn("norm", "pkg/sim.py:30"))
    outcome = judge(rec(fn("step", "pkg/sim.py:12", traces=2)), base)
    assert failure_text("t.py::test_step", outcome, BASELINE).splitlines()[-2] == (
        "  function gone: norm at pkg/sim.py:30 no longer traced (baseline: traces 1, compiles "
        "1); if the test still calls it, it is no longer jitted and runs op by op"
    )


def test_summary_table_columns_and_statuses() -> None:
    records = {
        "tests/test_m.py::test_regressed": rec(fn("f", "m.py:3", traces=2, compile_s=0.25)),
        "tests/test_m.py::test_limit": rec(fn("g", "m.py:9", traces=12, compile_s=1.5)),
        "tests/test_m.py::test_new": rec(fn("h", "m.py:20")),
        "tests/test_m.py::test_ok": rec(fn("k", "m.py:30")),
    }
    outcomes = {
        "tests/test_m.py::test_regressed": judge(
            records["tests/test_m.py::test_regressed"], rec(fn("f", "m.py:3", compile_s=0.25))
        ),
        "tests/test_m.py::test_limit": judge(
            records["tests/test_m.py::test_limit"], None, MarkerLimits(max_traces=10)
        ),
        "tests/test_m.py::test_new": judge(records["tests/test_m.py::test_new"], None),
        "tests/test_m.py::test_ok": judge(
            records["tests/test_m.py::test_ok"], rec(fn("k", "m.py:30"))
        ),
    }
    lines = summary_lines(records, outcomes)
    # fmt: off
    assert lines == [
        "test                             traces  compiles  compile s (trace/lower/backend)  cpu s  eqns / hlo / xla ops  vs baseline             status",  # noqa: E501
        "tests/test_m.py::test_limit          12        12  1.500 (0.000/0.000/1.500)        1.500             0 / 0 / 0  traces > limit          OVER LIMIT",  # noqa: E501
        "tests/test_m.py::test_new             1         1  0.000 (0.000/0.000/0.000)        0.000             0 / 0 / 0  new                     new",  # noqa: E501
        "tests/test_m.py::test_ok              1         1  0.000 (0.000/0.000/0.000)        0.000             0 / 0 / 0  =                       ok",  # noqa: E501
        "tests/test_m.py::test_regressed       2         2  0.250 (0.000/0.000/0.250)        0.250             0 / 0 / 0  traces +1; compiles +1  REGRESSED",  # noqa: E501
    ]
    # fmt: on


def test_summary_columns_line_up_for_any_widths() -> None:
    long_id = "tests/deeply/nested/test_module_with_a_long_name.py::test_x[param-1]"
    records = {
        long_id: rec(fn("f", "m.py:3", traces=1234, compile_s=12.5)),
        "t::b": rec(fn("f", "m.py:3")),
    }
    outcomes = {long_id: judge(records[long_id], None), "t::b": judge(records["t::b"], None)}
    header, *rows = summary_lines(records, outcomes)
    starts = [header.index(h) for h in ("compile s", "cpu s", "vs baseline", "status")]
    traces_end = header.index("traces") + len("traces")
    compiles_end = header.index("compiles") + len("compiles")
    for row in rows:
        for start in starts:
            assert row[start - 2 : start] == "  "
            assert row[start] != " "
        assert row[traces_end - 1] != " "
        assert row[traces_end] == " "
        assert row[compiles_end - 1] != " "
    # Sorted by node id; a name past TEST_NAME_WIDTH cut from the left (its test is at the end).
    shown = "…" + long_id[-(TEST_NAME_WIDTH - 1) :]
    assert [row.split()[0] for row in rows] == ["t::b", shown]
    assert rows[0].startswith("t::b" + " " * (len(shown) - len("t::b") + 2))
    assert rows[1].startswith(shown + "  ")
    assert all(line == line.rstrip() for line in [header, *rows])


def test_summary_marks_ungated_outcomes_and_unjudged_tests() -> None:
    improved = rec(fn("f", "m.py:3", traces=1))
    not_gated = rec(fn("f", "m.py:3", compile_s=5.0))
    failed = rec(fn("f", "m.py:3"))
    failed.outcome = "failed"
    saving = rec(fn("f", "m.py:3", traces=2))
    records = {
        "t::improved": improved,
        "t::timing": not_gated,
        "t::failed": failed,
        "t::saving": saving,
    }
    outcomes = {
        "t::improved": judge(improved, rec(fn("f", "m.py:3", traces=3))),
        "t::timing": judge(not_gated, rec(fn("f", "m.py:3")), differences=("backend",)),
        "t::saving": judge(saving, rec(fn("f", "m.py:3")), gate_baseline=False),
    }
    cells = {
        row[0]: row[1:] for row in (cells_of(line) for line in summary_lines(records, outcomes))
    }
    header = [
        "traces", "compiles", "compile s (trace/lower/backend)", "cpu s", "eqns / hlo / xla ops",
        "vs baseline", "status",
    ]  # fmt: skip
    assert cells["test"] == header
    assert cells["t::improved"][-2:] == ["improved", "improved"]
    assert cells["t::timing"][-2:] == ["=", "ok (not gated)"]
    assert cells["t::failed"][-2:] == ["-", "failed"]
    # Worded as in the markdown table and the tally ("1 reported only").
    assert cells["t::saving"][-2:] == ["traces +1, compiles +1 (not gated)", "reported only"]


def cells_of(line: str) -> list[str]:
    return re.split(r" {2,}", line.strip())


def test_summary_growth_vs_baseline_ignores_limit_breaches() -> None:
    current = rec(fn("f", "m.py:3", traces=3))
    outcome = judge(current, rec(fn("f", "m.py:3", traces=2)), MarkerLimits(max_traces={"f": 1}))
    row = summary_lines({"t::a": current}, {"t::a": outcome})[1]
    assert "traces > limit; traces +1; compiles +1" in row


def vs_baseline(current: RecordedTest, base: RecordedTest, outcome: Verdict) -> str:
    """The "vs baseline" cell of the test's row, given its baseline entry."""
    line = summary_lines({"t::a": current}, {"t::a": outcome}, {"t::a": base})[1]
    return cells_of(line)[-2]


def test_summary_shows_compile_time_growth_that_an_environment_difference_left_out() -> None:
    base, current = rec(fn("f", "m.py:3", compile_s=0.04)), rec(fn("f", "m.py:3", compile_s=5.08))
    outcome = judge(current, base, differences=("cpu_model a -> b",))
    assert not outcome.breaches  # the verdict itself has only its note
    assert vs_baseline(current, base, outcome) == "compile x127 (not gated)"
    faster = rec(fn("f", "m.py:3", compile_s=0.6))
    assert vs_baseline(current, faster, judge(current, faster, differences=("x",))) == (
        "compile x8.5 (not gated)"
    )
    # Within the default tolerance: no finding to show, as if it had been gated.
    near = rec(fn("f", "m.py:3", compile_s=0.06))
    assert vs_baseline(near, base, judge(near, base, differences=("x",))) == "="


def test_summary_shows_counts_that_were_not_measured_against_the_baseline() -> None:
    """A baseline saved with jit off (0 traces), a run that traced 3 times with the baseline's
    not-measured label: the counts' change is shown, not "=" ."""
    base = rec(fn("f", "m.py:3", traces=0))
    current = rec(fn("f", "m.py:3", traces=3))
    why = {"traces": "jax_disable_jit is on", "compiles": "jax_disable_jit is on"}
    outcome = evaluate(current, base, MarkerLimits(), Gating(DEFAULTS, not_measured=why))
    assert vs_baseline(current, base, outcome) == "traces 0->3, compiles 0->3 (not gated)"


def test_summary_shows_a_compile_time_breach_that_was_not_confirmed() -> None:
    base, current = rec(fn("f", "m.py:3", compile_s=0.2)), rec(fn("f", "m.py:3", compile_s=1.3))
    outcome = Verdict(
        info=["compile time of all functions not confirmed: 1.300 s at first, ... : not failed"]
    )
    assert vs_baseline(current, base, outcome) == "compile x6.5 (not gated)"


def test_summary_vs_baseline_puts_gated_changes_first_and_stays_short() -> None:
    base = rec(*(fn(f"f{i}", f"m.py:{i}", compile_s=0.1) for i in range(3)))
    current = rec(*(fn(f"f{i}", f"m.py:{i}", traces=2, compile_s=10.0) for i in range(3)))
    outcome = judge(current, base, MarkerLimits(max_traces=1), differences=("x",))
    cell = vs_baseline(current, base, outcome)
    assert cell.startswith("traces > limit; traces +3; compiles +3; ")
    assert cell.endswith("more") and len(cell) <= 60
    # The first change alone, cut short where it is wider than the column.
    assert terminal._capped(["x" * 80, "y"]) == "x" * 59 + "…"


def test_summary_reads_the_baseline_only_for_verdicts_that_left_something_out() -> None:
    class Unreadable(dict[str, RecordedTest]):
        def get(self, *_: object) -> None:  # type: ignore[override]
            raise AssertionError("read")

    current = rec(fn("f", "m.py:3", traces=2))
    outcome = judge(current, rec(fn("f", "m.py:3")))
    line = summary_lines({"t::a": current}, {"t::a": outcome}, Unreadable())[1]
    assert cells_of(line)[-2:] == ["traces +1; compiles +1", "REGRESSED"]


# -- tally ------------------------------------------------------------------------------------


def _breach(gated: bool = True) -> Breach:
    return Breach("traces", None, 1, 2, "baseline", (), gated)


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        pytest.param([], "jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated", id="none"),
        pytest.param(
            [
                Verdict("REGRESSED", [_breach()]),
                Verdict("improved", improvements=["traces of f: 2 -> 1"]),
                Verdict("new"),
                Verdict("ok", notes=["compile time not gated: environment differs (x64)"]),
            ],
            "jaxperf: 1 regression, 1 improvement, 1 new, 1 not gated",
            id="singular",
        ),
        pytest.param(
            [
                Verdict("REGRESSED", [_breach()]),
                Verdict("OVER LIMIT", [Breach("traces", None, 1, 2, "limit")]),
                Verdict("improved", improvements=["a"]),
                Verdict("improved", improvements=["b"]),
                Verdict("new"),
                Verdict("new"),
                Verdict("ok", notes=["n"]),
                Verdict("improved", improvements=["c"], notes=["n"]),
                Verdict("ok"),
            ],
            "jaxperf: 2 regressions, 3 improvements, 2 new, 2 not gated",
            id="plural",
        ),
        pytest.param(
            [Verdict("reported only", [_breach(gated=False)]), Verdict("ok")],
            "jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated, 1 reported only",
            id="saving",
        ),
    ],
)
def test_tally(outcomes: list[Verdict], expected: str) -> None:
    assert RunSummary.of({f"t::{i}": o for i, o in enumerate(outcomes)}).tally() == expected


def test_tally_counts_a_test_with_a_compile_time_note_and_a_breach_once_each() -> None:
    outcome = Verdict("REGRESSED", [Breach(COMPILE_TIME, None, 1.0, 3.0, "baseline")], notes=["n"])
    expected = "jaxperf: 1 regression, 0 improvements, 0 new, 1 not gated"
    assert RunSummary.of({"t::a": outcome}).tally() == expected


def test_the_session_summary_orders_its_lines_and_marks_them() -> None:
    base = rec(fn("f", "m.py:1"))
    grew = rec(fn("f", "m.py:1", traces=2))
    verdicts = {
        "t::ok": evaluate(base, base, MarkerLimits(), Gating(Tolerances())),
        "t::grew": evaluate(grew, base, MarkerLimits(), Gating(Tolerances())),
    }
    end = terminal.RunEnd(
        saved="saved 2 tests",
        findings=[("not_run", "NOT RUN [not_run]"), ("no_baseline", "NONE [no_baseline]")],
        strict=frozenset({"not_run"}),
        notes=["a note"],
        write_errors=["--jaxperf-json x not written: denied"],
    )
    records = {"t::ok": base, "t::grew": grew}
    lines = terminal.session_summary(records, verdicts, None, Tolerances(), {}, end)
    assert [line for line, _ in lines[:3]] == summary_lines(records, verdicts, None, Tolerances())
    # The header, then the tests by name: t::grew first.
    assert [markup for _, markup in lines[:3]] == [{}, terminal.markup("REGRESSED"), {}]
    assert lines[3:] == [
        ("jaxperf: 1 regression, 0 improvements, 0 new, 0 not gated", terminal.tally_markup(True)),
        ("saved 2 tests", {}),
        ("NOT RUN [not_run] (failed by --jaxperf-strict)", terminal.markup("REGRESSED")),
        ("NONE [no_baseline]", terminal.markup("reported only")),
        ("pytest-jaxperf: a note", {"yellow": True}),
        ("pytest-jaxperf: --jaxperf-json x not written: denied", {"red": True}),
    ]


def test_recording_notes_name_only_what_happened() -> None:
    assert terminal.recording_notes(0, 0, (), "events") == "\nsources: events"
    text = terminal.recording_notes(2, 3, ["rewarmed: g"], "events")
    assert text.splitlines()[1:] == [
        "recorder: 2 JAX event(s) could not be read; the counts above may be incomplete (a "
        "JAX version this plugin does not know?)",
        "not charged: 3 JAX event(s) on threads started before this test",
        "rewarmed: g",
        "sources: events",
    ]
