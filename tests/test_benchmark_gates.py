"""Unit tests for the benchmark gates of pytest_jaxperf.compare.evaluate (program metrics,
steady-state runtime, marker limits), and fixture.growth_exponent / fixture.break_even."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from _jaxperf_data import with_runtime

from pytest_jaxperf.compare import RUNTIME, RUNTIME_ALPHA, Gating, Verdict, evaluate
from pytest_jaxperf.config import MarkerLimits, Tolerances
from pytest_jaxperf.measure.fixture import (
    BenchmarkResult,
    ScalingResult,
    break_even,
    growth_exponent,
)
from pytest_jaxperf.measure.timing import summarize
from pytest_jaxperf.model import (
    STATIC_METRICS,
    BenchmarkEntry,
    Entry,
    ProgramMetrics,
    RecordedTest,
    entry_from_json,
    entry_to_json,
)

TOL = Tolerances(compile_rtol=1.0, compile_floor=0.1, runtime_rtol=0.5, static_rtol=0.1)
NO_LIMITS = MarkerLimits()

BASE_METRICS = {
    "jaxpr_eqns": 100,
    "hlo_ops": 50,
    "flops": 1000.0,
    "transcendentals": 10.0,
    "bytes_accessed": 4000.0,
    "argument_bytes": 2000,
    "output_bytes": 1000,
    "temp_bytes": 500,
    "peak_bytes": 3000,
}


def steady(median: float, n: int = 21, spread: float = 0.01) -> list[float]:
    """n per-call times tightly around `median` (distinct values, no ties; n odd: the middle
    one is exactly `median`)."""
    return [median * (1 + spread * (i - n // 2) / n) for i in range(n)]


def bench(samples: list[float] | None = None, label: str = "mm", **metrics: Any) -> BenchmarkEntry:
    """A benchmark entry exactly as fixture.BenchmarkResult.entry() makes it."""
    values = {**BASE_METRICS, **metrics}
    result = BenchmarkResult(
        label,
        output=None,
        first_call_s=0.5,
        trace_s=0.01,
        lower_s=0.02,
        compile_s=0.3,
        runtime=summarize(samples if samples is not None else steady(1e-3), 10),
        metrics=ProgramMetrics(**values),
    )
    return result.entry()


def rec(**benchmarks: Entry) -> RecordedTest:
    return RecordedTest(benchmarks=benchmarks)


def run(
    current: RecordedTest,
    base: RecordedTest | None,
    limits: MarkerLimits = NO_LIMITS,
    tolerances: Tolerances = TOL,
    timing_differences: tuple[str, ...] = (),
    static_differences: tuple[str, ...] = (),
    timing_mode: str = "gate",
    gate_baseline: bool = True,
) -> Verdict:
    gating = Gating(
        tolerances,
        timing_differences=timing_differences,
        static_differences=static_differences,
        timing_mode=timing_mode,  # type: ignore[arg-type]
        gate_baseline=gate_baseline,
    )
    return evaluate(current, base, limits, gating)


def median_of(record: RecordedTest) -> float:
    ((_, entry),) = record.benchmark_entries()
    assert entry.runtime is not None
    return entry.runtime.median_s


def p_value(detail: str) -> float:
    match = re.search(r"p=([0-9.e+-]+)", detail)
    assert match, detail
    return float(match.group(1))


def test_entry_format_is_the_fixtures() -> None:
    entry = entry_to_json(bench())
    assert entry["kind"] == "benchmark"
    assert entry["jaxpr_eqns"] == 100 and entry["flops"] == 1000.0
    assert entry["runtime"]["median_s"] == pytest.approx(1e-3)
    assert isinstance(entry["runtime"]["samples_s"], list)
    assert len(entry["runtime"]["samples_s"]) == 21


# -- program metrics against the baseline -----------------------------------------------------


def test_unchanged_benchmark_passes() -> None:
    out = run(rec(mm=bench()), rec(mm=bench()))
    assert (out.status, out.breaches, out.improvements, out.notes) == ("ok", [], [], [])


def test_static_metric_above_rtol_fails() -> None:
    out = run(rec(mm=bench(jaxpr_eqns=111)), rec(mm=bench()))
    assert out.failed and out.status == "REGRESSED"
    (b,) = out.breaches
    assert (b.metric, b.benchmark, b.reference, b.current) == ("jaxpr_eqns", "mm", 100, 111)
    assert b.against == "baseline" and b.gated and b.function is None
    assert "static_rtol 0.1" in b.detail


def test_static_metric_at_rtol_passes() -> None:
    out = run(rec(mm=bench(jaxpr_eqns=110, flops=1100.0)), rec(mm=bench()))
    assert not out.failed and out.breaches == []
    assert out.status == "ok"


@pytest.mark.parametrize("metric", STATIC_METRICS)
def test_every_static_metric_is_gated(metric: str) -> None:
    grown: dict[str, Any] = {metric: type(BASE_METRICS[metric])(BASE_METRICS[metric] * 2)}
    out = run(rec(mm=bench(**grown)), rec(mm=bench()))
    assert [(b.metric, b.benchmark, b.gated) for b in out.breaches] == [(metric, "mm", True)]


def test_static_metric_shrinking_is_an_improvement() -> None:
    out = run(rec(mm=bench(jaxpr_eqns=80)), rec(mm=bench()))
    assert not out.breaches
    assert out.status == "improved"
    assert out.improvements == ["jaxpr_eqns of mm: 100 -> 80"]


def test_static_differences_means_not_gated_with_note() -> None:
    current = rec(mm=bench(jaxpr_eqns=500), other=bench(label="other", hlo_ops=500))
    base = rec(mm=bench(), other=bench(label="other"))
    out = run(current, base, static_differences=("jax 0.10.2 != 0.9.0",))
    assert not out.breaches and not out.failed
    assert out.notes == ["program metrics not gated: environment differs (jax 0.10.2 != 0.9.0)"]


def test_static_breach_while_saving_is_reported_not_gated() -> None:
    out = run(rec(mm=bench(hlo_ops=100)), rec(mm=bench()), gate_baseline=False)
    (b,) = out.breaches
    assert b.metric == "hlo_ops" and not b.gated and not out.failed


def test_new_benchmark_label_is_not_compared() -> None:
    out = run(rec(mm=bench(jaxpr_eqns=10_000)), rec(other=bench(label="other")))
    assert not out.breaches and out.status == "ok"


def test_entry_without_kind_still_gated() -> None:
    # Older files may lack "kind": the default is a benchmark.
    written = entry_to_json(bench())
    del written["kind"]
    old = entry_from_json(written, "mm")
    assert isinstance(old, BenchmarkEntry)
    out = run(rec(mm=bench(jaxpr_eqns=200)), rec(mm=old))
    assert [b.metric for b in out.breaches] == ["jaxpr_eqns"]


# -- runtime against the baseline -------------------------------------------------------------


def test_runtime_twice_as_slow_and_clear_fails_with_p_value() -> None:
    out = run(rec(mm=bench(steady(2e-3))), rec(mm=bench(steady(1e-3))))
    assert out.failed and out.status == "REGRESSED"
    (b,) = out.breaches
    assert (b.metric, b.benchmark, b.against, b.gated) == (RUNTIME, "mm", "baseline", True)
    assert b.reference == pytest.approx(1e-3) and b.current == pytest.approx(2e-3)
    assert "Mann-Whitney" in b.detail and "runtime_rtol 0.5" in b.detail
    assert p_value(b.detail) < 0.01 == RUNTIME_ALPHA


def test_runtime_slower_but_noisy_passes_with_note() -> None:
    before = [1e-3] * 5 + [10e-3] * 4  # median 1 ms
    now = [2.5e-3] * 5 + [2.1e-3] * 4  # median 2.5 ms, but below the baseline's slow mode
    current, base = rec(mm=bench(now)), rec(mm=bench(before))
    assert median_of(current) == 2.5e-3
    assert median_of(base) == 1e-3
    out = run(current, base)
    assert not out.failed and not out.breaches
    (note,) = out.notes
    assert note.startswith("runtime of mm +150% but not statistically clear")
    assert p_value(note) >= RUNTIME_ALPHA


def test_runtime_slower_median_with_fast_rounds_left_is_load() -> None:
    before = [1e-3] * 20
    now = [0.9e-3] * 5 + [3e-3] * 15  # median 3x, yet some rounds as fast as ever
    out = run(rec(mm=bench(now)), rec(mm=bench(before)))
    assert not out.failed and not out.breaches
    (note,) = out.notes
    assert (
        note
        == "runtime of mm median +200% but its fastest round only -10%: machine load, not gated"
    )


def test_runtime_too_few_rounds_does_not_fail() -> None:
    # 4 rounds each, fully separated: below the 5 a rank test needs
    out = run(rec(mm=bench(steady(2e-3, n=4))), rec(mm=bench(steady(1e-3, n=4))))
    assert not out.failed and not out.breaches
    (note,) = out.notes
    assert "not statistically clear" in note and "too few rounds for a test" in note


def test_runtime_five_rounds_each_are_enough() -> None:
    # 5 vs 5 fully separated: exact one-sided p = 1 / C(10, 5) = 1/252 < 0.01
    out = run(rec(mm=bench(steady(2e-3, n=5))), rec(mm=bench(steady(1e-3, n=5))))
    (b,) = out.breaches
    assert b.metric == RUNTIME and b.gated
    assert p_value(b.detail) == pytest.approx(1 / 252, rel=0.01)


def test_runtime_without_samples_does_not_fail() -> None:
    now, old = (with_runtime(bench(steady(m)), samples_s=()) for m in (2e-3, 1e-3))
    out = run(rec(mm=now), rec(mm=old))
    assert not out.breaches and "too few rounds" in out.notes[0]


def test_runtime_within_rtol_passes_silently() -> None:
    out = run(rec(mm=bench(steady(1.4e-3))), rec(mm=bench(steady(1e-3))))
    assert (out.breaches, out.notes, out.improvements) == ([], [], [])


def test_runtime_report_mode_reports_but_does_not_gate() -> None:
    out = run(rec(mm=bench(steady(2e-3))), rec(mm=bench(steady(1e-3))), timing_mode="report")
    (b,) = out.breaches
    assert b.metric == RUNTIME and b.benchmark == "mm" and not b.gated
    assert not out.failed


def test_runtime_off_mode_says_nothing_about_runtime() -> None:
    for differences in ((), ("machine differs",)):
        for now in (steady(2e-3), steady(0.2e-3)):
            out = run(
                rec(mm=bench(now)),
                rec(mm=bench(steady(1e-3))),
                timing_mode="off",
                timing_differences=differences,
            )
            assert (out.breaches, out.improvements) == ([], [])
            assert not [n for n in out.notes if "runtime" in n], out.notes


def test_runtime_off_mode_still_gates_program_metrics() -> None:
    out = run(rec(mm=bench(steady(2e-3), flops=5000.0)), rec(mm=bench()), timing_mode="off")
    assert [b.metric for b in out.breaches] == ["flops"] and out.failed


def test_runtime_environment_differs_is_noted_not_gated() -> None:
    out = run(
        rec(mm=bench(steady(2e-3))),
        rec(mm=bench(steady(1e-3))),
        timing_differences=("cpu: A != B",),
    )
    assert not out.breaches and not out.failed
    runtime_notes = [n for n in out.notes if n.startswith("runtime of mm")]
    assert len(runtime_notes) == 1
    assert "not gated: environment differs (cpu: A != B)" in runtime_notes[0]


def test_runtime_clearly_faster_is_an_improvement() -> None:
    out = run(rec(mm=bench(steady(0.5e-3))), rec(mm=bench(steady(1e-3))))
    assert not out.breaches
    assert out.status == "improved"
    assert len(out.improvements) == 1 and out.improvements[0].startswith("runtime of mm: ")


def test_runtime_faster_but_not_clear_is_no_improvement() -> None:
    out = run(rec(mm=bench(steady(0.5e-3, n=3))), rec(mm=bench(steady(1e-3, n=3))))
    assert out.improvements == [] and out.status == "ok"


# -- marker limits ----------------------------------------------------------------------------


def test_max_jaxpr_eqns_int_limits_every_benchmark() -> None:
    current = rec(a=bench(label="a", jaxpr_eqns=30), b=bench(label="b", jaxpr_eqns=20))
    out = run(current, None, MarkerLimits(max_jaxpr_eqns=20))
    assert out.status == "OVER LIMIT" and out.failed
    (b,) = out.breaches
    assert (b.metric, b.benchmark, b.reference, b.current, b.against) == (
        "jaxpr_eqns",
        "a",
        20,
        30,
        "limit",
    )


def test_max_jaxpr_eqns_dict_limits_one_label() -> None:
    current = rec(a=bench(label="a", jaxpr_eqns=30), b=bench(label="b", jaxpr_eqns=300))
    out = run(current, None, MarkerLimits(max_jaxpr_eqns={"a": 25}))
    assert [(b.benchmark, b.current) for b in out.breaches] == [("a", 30)]
    out = run(current, None, MarkerLimits(max_jaxpr_eqns={"a": 30}))
    assert out.breaches == [] and out.status == "new"


@pytest.mark.parametrize("argument", ["max_jaxpr_eqns", "max_hlo_ops"])
def test_dict_limit_naming_no_benchmark_fails_with_a_close_match(argument: str) -> None:
    current = rec(step=bench(label="step", jaxpr_eqns=30), eval=bench(label="eval"))
    out = run(current, None, MarkerLimits(**{argument: {"stpe": 10**6}}))
    assert out.failed and out.status == "BAD LIMIT"
    assert out.errors == [
        f"@pytest.mark.jaxperf({argument}=...) names 'stpe', a function or benchmark this test "
        "did not trace or run (did you mean 'step'?); traced and benchmarks: eval, step. Use a "
        "traced function's name or its 'name at path:line' or a benchmark label"
    ]


def test_max_hlo_ops_limit_also_with_baseline() -> None:
    current = rec(mm=bench(hlo_ops=50))
    out = run(current, rec(mm=bench()), MarkerLimits(max_hlo_ops=49))
    assert [(b.metric, b.against) for b in out.breaches] == [("hlo_ops", "limit")]
    assert out.status == "OVER LIMIT"


def test_limits_ignore_missing_metric() -> None:
    entry = dataclasses.replace(bench(), metrics=None)
    out = run(rec(mm=entry), None, MarkerLimits(max_jaxpr_eqns=1))
    assert out.breaches == []


# -- per-test tolerances ----------------------------------------------------------------------


def test_marker_runtime_rtol_loosens_the_default() -> None:
    current, base = rec(mm=bench(steady(2e-3))), rec(mm=bench(steady(1e-3)))
    assert run(current, base).failed
    out = run(current, base, MarkerLimits(runtime_rtol=1.5))
    assert (out.breaches, out.notes) == ([], [])


def test_marker_runtime_rtol_tightens_the_default() -> None:
    current, base = rec(mm=bench(steady(1.3e-3))), rec(mm=bench(steady(1e-3)))
    loose = Tolerances(runtime_rtol=3.0)
    assert not run(current, base, tolerances=loose).breaches
    out = run(current, base, MarkerLimits(runtime_rtol=0.2), tolerances=loose)
    (b,) = out.breaches
    assert b.metric == RUNTIME and b.gated and "runtime_rtol 0.2" in b.detail


def test_marker_static_rtol_overrides_the_default() -> None:
    current, base = rec(mm=bench(jaxpr_eqns=130)), rec(mm=bench())
    assert run(current, base).failed
    assert not run(current, base, MarkerLimits(static_rtol=0.5)).breaches
    tight = run(rec(mm=bench(jaxpr_eqns=101)), base, MarkerLimits(static_rtol=0.0))
    (b,) = tight.breaches
    assert b.metric == "jaxpr_eqns" and "static_rtol 0" in b.detail


# -- scaling entries are not benchmarks -------------------------------------------------------


def scaling_entry(exponent: float) -> Entry:
    result = ScalingResult("scaling:f", "jaxpr_eqns", [10, 100], [30.0, 300.0], exponent, 2.0)
    return result.entry()


def test_scaling_entries_are_ignored_by_the_gates() -> None:
    # A steeper scaling entry beside a benchmark that breaches: only the benchmark is gated
    # (a scaling entry fails its own test through max_exponent, in the fixture).
    current = rec(**{"scaling:f": scaling_entry(1.0), "mm": bench(steady(9e-3), jaxpr_eqns=1000)})
    base = rec(**{"scaling:f": scaling_entry(0.0), "mm": bench(steady(1e-3))})
    out = run(current, base, MarkerLimits(max_jaxpr_eqns=1))
    assert sorted({(b.metric, b.benchmark) for b in out.breaches}) == [
        ("jaxpr_eqns", "mm"),
        (RUNTIME, "mm"),
    ]
    assert [label for label, _ in current.benchmark_entries()] == ["mm"]


# -- growth_exponent --------------------------------------------------------------------------

SIZES = [10, 20, 40, 80, 160]


def test_growth_exponent_constant_is_zero() -> None:
    assert growth_exponent(SIZES, [7.0] * len(SIZES)) == 0.0
    assert growth_exponent(SIZES, [1.0] * len(SIZES)) == 0.0


@pytest.mark.parametrize("power", [0, 1, 2])
def test_growth_exponent_of_power_laws(power: int) -> None:
    values = [3.0 * n**power for n in SIZES]
    assert growth_exponent(SIZES, values) == pytest.approx(power, abs=1e-12)


def test_growth_exponent_builtin_sum_counts() -> None:
    # builtin sum: 3N equations -> exponent 1; jnp.sum: 1 equation -> 0
    assert growth_exponent([10, 100, 1000], [30, 300, 3000]) == pytest.approx(1.0, abs=1e-12)
    assert growth_exponent([10, 100, 1000], [1, 1, 1]) == 0.0


def test_growth_exponent_zero_counts_as_tiny() -> None:
    # log(1e-12) -> log(1) over one decade: slope 12
    assert growth_exponent([1, 10], [0.0, 1.0]) == pytest.approx(12.0, rel=1e-12)
    assert growth_exponent([1, 10], [0.0, 0.0]) == 0.0


# -- break_even -------------------------------------------------------------------------------


def test_break_even_exact() -> None:
    # first call 1.0 s, then 0.25 s per call jitted vs 0.5 s eager: the 0.75 s overhead is
    # paid back by 0.25 s per call after 3 calls.
    assert break_even(1.0, 0.25, 0.5) == 3.0
    assert break_even(2.0, 0.0, 0.5) == 4.0
    first, jit_s, eager_s = 0.5, 0.125, 0.25
    n = break_even(first, jit_s, eager_s)
    assert n == 3.0
    assert first + (n - 1) * jit_s == n * eager_s  # after n calls both cost the same


def test_break_even_no_overhead_is_zero() -> None:
    assert break_even(0.25, 0.25, 0.5) == 0.0
    assert break_even(0.125, 0.25, 0.5) == 0.0  # a first call faster than steady state


def test_break_even_none_when_jit_is_not_faster() -> None:
    assert break_even(1.0, 0.5, 0.5) is None
    assert break_even(1.0, 0.5, 0.25) is None
