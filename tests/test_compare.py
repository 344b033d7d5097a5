"""Unit tests for pytest_jaxperf.compare: records + baseline entry + limits -> Verdict."""

from __future__ import annotations

import pytest
from _records import RecordedTest, fn, rec

from pytest_jaxperf.causes import SILENT_RECOMPILE
from pytest_jaxperf.compare import COMPILE_TIME, Gating, Verdict, evaluate
from pytest_jaxperf.config import MarkerLimits, Tolerances
from pytest_jaxperf.matching import match_functions
from pytest_jaxperf.model import FunctionRecord

NO_LIMITS = MarkerLimits()
DEFAULTS = Tolerances(compile_rtol=1.0, compile_floor=0.1)

# The fix `causes.summary` adds to a shape change.
SHAPE_FIX = "; fix: pad to a fixed size or a few buckets (jnp.nonzero(..., size=, fill_value=))"


def run(
    current: RecordedTest,
    base: RecordedTest | None,
    limits: MarkerLimits = NO_LIMITS,
    differences: tuple[str, ...] = (),
    gate_baseline: bool = True,
) -> Verdict:
    gating = Gating(DEFAULTS, timing_differences=differences, gate_baseline=gate_baseline)
    return evaluate(current, base, limits, gating)


# -- match_functions --------------------------------------------------------------------------


def test_match_exact_key() -> None:
    f = fn("f", "pkg/m.py:3")
    base_f = fn("f", "pkg/m.py:3")
    assert match_functions({f.key: f}, {base_f.key: base_f}) == {f.key: base_f}


def test_match_function_whose_definition_line_moved() -> None:
    moved = fn("f", "pkg/m.py:12")
    old = fn("f", "pkg/m.py:3")
    other = fn("g", "pkg/m.py:20")
    matched = match_functions({moved.key: moved}, {old.key: old, other.key: other})
    assert matched == {moved.key: old}
    assert matched[moved.key] is old


def test_same_named_functions_in_different_files_are_kept_apart() -> None:
    a_now, b_now = fn("f", "pkg/a.py:7"), fn("f", "pkg/b.py:3")
    a_then, b_then = fn("f", "pkg/a.py:5"), fn("f", "pkg/b.py:3")
    matched = match_functions(
        {a_now.key: a_now, b_now.key: b_now}, {a_then.key: a_then, b_then.key: b_then}
    )
    assert matched[a_now.key] is a_then
    assert matched[b_now.key] is b_then


def test_a_second_same_named_function_in_another_file_is_not_matched() -> None:
    a_now, b_now = fn("f", "pkg/a.py:5"), fn("f", "pkg/b.py:3")
    a_then = fn("f", "pkg/a.py:5")
    matched = match_functions({a_now.key: a_now, b_now.key: b_now}, {a_then.key: a_then})
    assert matched == {a_now.key: a_then}


def _keys(matched: dict[str, FunctionRecord]) -> dict[str, str]:
    return {key: old.key for key, old in matched.items()}


def _by_key(*functions: FunctionRecord) -> dict[str, FunctionRecord]:
    return {f.key: f for f in functions}


def test_same_named_functions_of_one_file_match_in_order_of_definition() -> None:
    # Ten lines added above both lambdas: the first now sits at the second's old line.
    now = _by_key(fn("<lambda>", "m.py:20"), fn("<lambda>", "m.py:30"), fn("g", "m.py:40"))
    then = _by_key(fn("<lambda>", "m.py:10"), fn("<lambda>", "m.py:20"), fn("g", "m.py:30"))
    assert _keys(match_functions(now, then)) == {
        "<lambda> at m.py:20": "<lambda> at m.py:10",
        "<lambda> at m.py:30": "<lambda> at m.py:20",
        "g at m.py:40": "g at m.py:30",
    }


def test_an_added_same_named_function_is_not_guessed() -> None:
    then = _by_key(fn("<lambda>", "m.py:10"), fn("<lambda>", "m.py:20"))
    # Where lines did not move, the same key still matches; the added one is new.
    now = _by_key(*then.values(), fn("<lambda>", "m.py:30"))
    assert _keys(match_functions(now, then)) == {
        "<lambda> at m.py:10": "<lambda> at m.py:10",
        "<lambda> at m.py:20": "<lambda> at m.py:20",
    }
    # Where they moved, which old one each is cannot be told.
    now = _by_key(fn("<lambda>", "m.py:5"), fn("<lambda>", "m.py:15"), fn("<lambda>", "m.py:25"))
    assert match_functions(now, then) == {}


def test_qualified_names_match_a_baseline_saved_with_plain_names() -> None:
    # Before qualified names, every __call__ was "__call__" and every nested body "body".
    then = _by_key(
        fn("__call__", "m.py:10"), fn("__call__", "m.py:20"),
        fn("body", "m.py:31"), fn("body", "m.py:41"), fn("solve", "m.py:50"),
    )  # fmt: skip
    now = _by_key(
        fn("A.__call__", "m.py:12"), fn("B.__call__", "m.py:22"),
        fn("f.<locals>.body", "m.py:33"), fn("g.<locals>.body", "m.py:43"),
        fn("solve", "m.py:50"),
    )  # fmt: skip
    assert _keys(match_functions(now, then)) == {
        "A.__call__ at m.py:12": "__call__ at m.py:10",
        "B.__call__ at m.py:22": "__call__ at m.py:20",
        "f.<locals>.body at m.py:33": "body at m.py:31",
        "g.<locals>.body at m.py:43": "body at m.py:41",
        "solve at m.py:50": "solve at m.py:50",
    }


def test_qualified_names_tell_same_named_methods_apart() -> None:
    then = _by_key(fn("A.__call__", "m.py:10"), fn("B.__call__", "m.py:20"))
    # Only B's is called now, and an edit moved it: it is still B's.
    now = _by_key(fn("B.__call__", "m.py:25"))
    assert _keys(match_functions(now, then)) == {"B.__call__ at m.py:25": "B.__call__ at m.py:20"}


# -- against the baseline: counts ------------------------------------------------------------


def test_no_baseline_is_new() -> None:
    out = run(rec(fn("f", "m.py:3", traces=5)), None)
    assert out.status == "new"
    assert out.breaches == []
    assert not out.failed


def test_equal_counts_are_ok() -> None:
    out = run(rec(fn("f", "m.py:3", traces=2)), rec(fn("f", "m.py:3", traces=2)))
    assert out.status == "ok"
    assert out.breaches == []
    assert out.improvements == []
    assert not out.failed


def test_trace_increase_fails_naming_the_function_and_its_reasons() -> None:
    grown = fn("f", "m.py:3", traces=2, reasons=("x: f32[3] -> f32[4]",))
    current = rec(grown, fn("g", "m.py:9"))
    out = run(current, rec(fn("f", "m.py:3"), fn("g", "m.py:9")))

    assert out.failed
    assert out.status == "REGRESSED"
    traces = [b for b in out.breaches if b.metric == "traces"]
    assert len(traces) == 1
    (b,) = traces
    assert b.function is grown
    assert (b.reference, b.current) == (1, 2)
    assert b.against == "baseline"
    assert b.gated
    assert b.reasons == ("x: f32[3] -> f32[4]" + SHAPE_FIX,)
    assert {x.function.name for x in out.breaches if x.function} == {"f"}


def test_compile_increase_without_retrace_is_a_silent_recompile() -> None:
    current = rec(fn("f", "m.py:3", traces=1, compiles=2))
    out = run(current, rec(fn("f", "m.py:3", traces=1, compiles=1)))
    assert out.failed
    assert [b.metric for b in out.breaches] == ["compiles"]
    (b,) = out.breaches
    assert (b.reference, b.current) == (1, 2)
    assert SILENT_RECOMPILE in b.reasons


def test_compile_increase_with_matching_retrace_is_not_called_silent() -> None:
    current = rec(fn("f", "m.py:3", traces=2, reasons=("x: f32[3] -> f32[4]",)))
    out = run(current, rec(fn("f", "m.py:3")))
    compiles = [b for b in out.breaches if b.metric == "compiles"]
    assert len(compiles) == 1
    assert SILENT_RECOMPILE not in compiles[0].reasons
    assert compiles[0].reasons == ("x: f32[3] -> f32[4]" + SHAPE_FIX,)


def test_moved_function_still_matches_its_baseline_entry() -> None:
    out = run(rec(fn("f", "m.py:12", traces=2)), rec(fn("f", "m.py:3", traces=2)))
    assert out.status == "ok"
    assert out.breaches == []
    assert out.improvements == []


def test_same_named_functions_in_different_files_are_compared_separately() -> None:
    a = fn("f", "pkg/a.py:5", traces=1)
    b = fn("f", "pkg/b.py:3", traces=3, reasons=("n: 1 -> 2",))
    base = rec(fn("f", "pkg/a.py:5", traces=2), fn("f", "pkg/b.py:3", traces=1))
    out = run(rec(a, b), base)
    traces = [x for x in out.breaches if x.metric == "traces"]
    assert [x.function for x in traces] == [b]
    assert (traces[0].reference, traces[0].current) == (1, 3)
    assert "traces of f at pkg/a.py:5: 2 -> 1" in out.improvements


def test_function_missing_from_the_baseline_fails_as_new_function() -> None:
    new = fn("g", "m.py:20", reasons=("x: f32[3] -> f32[4]",))
    out = run(rec(fn("f", "m.py:3"), new), rec(fn("f", "m.py:3")))
    assert out.failed
    assert out.status == "REGRESSED"
    assert {b.metric for b in out.breaches} == {"traces", "compiles"}
    for b in out.breaches:
        assert b.function is new
        assert b.reference == 0
        assert b.current == 1
        assert b.reasons[0] == "new function (not in the baseline)"
        assert "x: f32[3] -> f32[4]" + SHAPE_FIX in b.reasons


def test_fewer_traces_is_an_improvement() -> None:
    out = run(rec(fn("f", "m.py:3", traces=1)), rec(fn("f", "m.py:3", traces=3)))
    assert out.status == "improved"
    assert not out.failed
    assert out.breaches == []
    assert "traces of f at m.py:3: 3 -> 1" in out.improvements
    assert "compiles of f at m.py:3: 3 -> 1" in out.improvements


def test_function_gone_from_the_run_is_reported_as_gone_not_as_an_improvement() -> None:
    # The likeliest cause is a removed @jax.jit: the code now runs op by op.
    g = fn("g", "m.py:9", traces=2)
    out = run(rec(fn("f", "m.py:3")), rec(fn("f", "m.py:3"), g))
    assert out.status == "function gone"
    assert out.gone == [g]
    assert out.improvements == []  # not "total traces: 3 -> 1", not "no longer compiled"
    assert not out.failed
    assert Verdict.from_json(out.to_json()).gone == [g]


def test_a_gone_function_does_not_hide_an_improvement_of_the_others() -> None:
    base = rec(fn("f", "m.py:3", traces=3), fn("g", "m.py:9", traces=2))
    out = run(rec(fn("f", "m.py:3", traces=1)), base)
    assert [f.key for f in out.gone] == ["g at m.py:9"]
    assert out.improvements == ["traces of f at m.py:3: 3 -> 1", "compiles of f at m.py:3: 3 -> 1"]
    assert out.status == "function gone"


def test_compile_time_saved_by_a_gone_function_is_no_improvement() -> None:
    gone = fn("g", "m.py:9", compile_s=2.0)
    out = run(rec(fn("f", "m.py:3", compile_s=0.2)), rec(fn("f", "m.py:3", compile_s=0.2), gone))
    assert not any("compile time" in i for i in out.improvements)
    # Against the functions still traced, a real speed-up still counts.
    out = run(rec(fn("f", "m.py:3", compile_s=0.2)), rec(fn("f", "m.py:3", compile_s=1.0), gone))
    assert [i for i in out.improvements if "compile time" in i] == [
        "compile time (cpu): 3.000 s -> 0.200 s"
    ]


def test_a_function_in_neither_run_with_no_work_is_not_gone() -> None:
    out = run(rec(fn("f", "m.py:3")), rec(fn("f", "m.py:3"), fn("g", "m.py:9", traces=0)))
    assert out.gone == [] and out.status == "ok"


# -- against the baseline: compile time -------------------------------------------------------


def timed(seconds: float, cache_hits: int = 0) -> RecordedTest:
    return rec(fn("f", "m.py:3", compile_s=seconds, cache_hits=cache_hits))


def test_compile_time_above_rtol_and_floor_fails() -> None:
    out = run(timed(2.5), timed(1.0))
    assert out.failed
    assert out.status == "REGRESSED"
    (b,) = out.breaches
    assert b.metric == COMPILE_TIME
    assert b.function is None
    assert (b.reference, b.current) == (1.0, 2.5)
    assert b.detail == "cpu seconds, rtol 1, floor 0.1 s"


def test_compile_time_at_exactly_base_times_one_plus_rtol_passes() -> None:
    out = run(timed(2.0), timed(1.0))
    assert out.breaches == []
    assert out.status == "ok"


def test_compile_time_above_rtol_but_under_the_floor_passes() -> None:
    # 5x slower, but only 0.08 s more: noise on a shared CPU.
    out = run(timed(0.1), timed(0.02))
    assert out.breaches == []
    assert not out.failed
    assert out.status == "ok"


def test_compile_time_much_lower_is_an_improvement() -> None:
    out = run(timed(0.5), timed(2.0))
    assert out.status == "improved"
    assert out.improvements == ["compile time (cpu): 2.000 s -> 0.500 s"]


def test_environment_differences_disable_the_compile_time_gate() -> None:
    out = run(timed(9.0), timed(1.0), differences=("jax 0.10.1 -> 0.10.2", "cpu_count 2 -> 16"))
    assert out.breaches == []
    assert not out.failed
    assert out.notes == [
        "compile time not gated: environment differs (jax 0.10.1 -> 0.10.2, cpu_count 2 -> 16)"
    ]


@pytest.mark.parametrize(("base_hits", "now_hits"), [(0, 1), (1, 0), (2, 2)])
def test_persistent_cache_hits_disable_the_compile_time_gate(base_hits: int, now_hits: int) -> None:
    out = run(timed(9.0, cache_hits=now_hits), timed(1.0, cache_hits=base_hits))
    assert not any(b.metric == COMPILE_TIME for b in out.breaches)
    assert out.notes == [
        "compile time not gated: persistent compilation cache hits "
        f"(baseline {base_hits}, now {now_hits})"
    ]


def test_count_regressions_are_gated_even_when_timings_are_not() -> None:
    out = run(rec(fn("f", "m.py:3", traces=2)), rec(fn("f", "m.py:3")), differences=("x64",))
    assert out.failed
    assert out.notes


def test_gate_baseline_false_reports_breaches_without_failing() -> None:
    current = rec(fn("f", "m.py:3", traces=2, compile_s=5.0))
    out = run(current, rec(fn("f", "m.py:3", compile_s=1.0)), gate_baseline=False)
    assert {b.metric for b in out.breaches} == {"traces", "compiles", COMPILE_TIME}
    assert all(not b.gated for b in out.breaches)
    assert out.failed is False
    assert out.status == "reported only"


# -- marker limits ----------------------------------------------------------------------------


def test_max_traces_total_fails_without_a_baseline() -> None:
    current = rec(
        fn("f", "m.py:3", traces=2, reasons=("x: f32[3] -> f32[4]",)),
        fn("g", "m.py:9", traces=1),
    )
    out = run(current, None, MarkerLimits(max_traces=2))
    assert out.failed
    assert out.status == "OVER LIMIT"
    (b,) = out.breaches
    assert (b.metric, b.against, b.function) == ("traces", "limit", None)
    assert (b.reference, b.current) == (2, 3)
    assert b.reasons == ("f: x: f32[3] -> f32[4]" + SHAPE_FIX,)


def test_max_traces_one_fails() -> None:
    out = run(rec(fn("f", "m.py:3", traces=2)), None, MarkerLimits(max_traces=1))
    assert out.failed
    assert [(b.metric, b.against) for b in out.breaches] == [("traces", "limit")]


def test_limit_not_exceeded_passes() -> None:
    out = run(rec(fn("f", "m.py:3", traces=2)), None, MarkerLimits(max_traces=2, max_compiles=2))
    assert out.breaches == []
    assert out.status == "new"


@pytest.mark.parametrize("key", ["f", "f at m.py:3"])
def test_max_traces_dict_limits_one_function(key: str) -> None:
    f = fn("f", "m.py:3", traces=2, reasons=("n: 1 -> 2",))
    current = rec(f, fn("g", "m.py:9", traces=5))
    out = run(current, None, MarkerLimits(max_traces={key: 1}))
    assert out.failed
    assert out.status == "OVER LIMIT"
    (b,) = out.breaches
    assert (b.metric, b.against, b.function) == ("traces", "limit", f)
    assert (b.reference, b.current) == (1, 2)
    assert b.reasons == ("n: 1 -> 2",)


def test_dict_limit_for_another_function_does_not_apply() -> None:
    current = rec(fn("f", "m.py:3", traces=1), fn("g", "m.py:9", traces=5))
    out = run(current, None, MarkerLimits(max_traces={"f": 1}))
    assert out.breaches == []
    assert out.status == "new"


@pytest.mark.parametrize("argument", ["max_traces", "max_compiles", "max_compile_time"])
def test_dict_limit_naming_no_traced_function_fails_with_a_close_match(argument: str) -> None:
    # A misspelt name used to limit nothing: sgd_step traced 5 times passed.
    current = rec(fn("sgd_step", "m.py:3", traces=5), fn("loss", "m.py:9"))
    out = run(current, None, MarkerLimits(**{argument: {"sgd_stpe": 1}}))
    assert out.failed
    assert out.status == "BAD LIMIT"
    assert out.breaches == []
    assert out.errors == [
        f"@pytest.mark.jaxperf({argument}=...) names 'sgd_stpe', a function this test did not "
        "trace (did you mean 'sgd_step'?); traced: loss at m.py:9, sgd_step at m.py:3. Use a "
        "traced function's name or its 'name at path:line'"
    ]


def test_dict_limit_naming_a_stale_site_suggests_the_current_key() -> None:
    current = rec(fn("f", "m.py:4", traces=2))
    out = run(current, rec(fn("f", "m.py:3")), MarkerLimits(max_traces={"f at m.py:3": 1}))
    (error,) = out.errors
    assert "names 'f at m.py:3'" in error and "(did you mean 'f at m.py:4'?)" in error
    assert out.status == "BAD LIMIT"


def test_dict_limit_when_nothing_was_traced_says_so() -> None:
    out = run(rec(), None, MarkerLimits(max_compiles={"f": 0}))
    (error,) = out.errors
    assert "(did you mean" not in error and "; traced: none. " in error
    assert out.failed


def test_known_and_unknown_keys_each_get_their_verdict() -> None:
    current = rec(fn("f", "m.py:3", traces=3), fn("g", "m.py:9"))
    out = run(current, None, MarkerLimits(max_traces={"f": 1, "g at m.py:9": 1, "h": 1}))
    assert [(b.metric, b.function and b.function.name) for b in out.breaches] == [("traces", "f")]
    assert len(out.errors) == 1 and "names 'h'" in out.errors[0]
    assert out.status == "BAD LIMIT"
    assert Verdict.from_json(out.to_json()).errors == out.errors


def test_a_metric_not_measured_checks_no_names() -> None:
    out = evaluate(
        rec(), None, MarkerLimits(max_traces={"f": 1}),
        Gating(DEFAULTS, not_measured={"traces": "hook missing"}),
    )  # fmt: skip
    assert out.errors == [] and not out.failed


def test_dict_limit_by_qualified_or_plain_name() -> None:
    current = rec(fn("A.__call__", "m.py:3", traces=2), fn("B.__call__", "m.py:9", traces=1))
    (b,) = run(current, None, MarkerLimits(max_traces={"A.__call__": 1})).breaches
    assert (b.current, b.function) == (2, current.functions["A.__call__ at m.py:3"])
    (b,) = run(current, None, MarkerLimits(max_traces={"__call__": 2})).breaches
    assert (b.current, b.function) == (3, None)  # both methods named __call__


def test_dict_limit_over_same_named_functions_shows_only_their_reasons() -> None:
    current = rec(
        fn("f", "a.py:1", traces=2, reasons=("x: f32[3] -> f32[4]",)),
        fn("f", "b.py:1", traces=1),
        fn("g", "c.py:1", traces=2, reasons=("n: 1 -> 2",)),
    )
    out = run(current, None, MarkerLimits(max_traces={"f": 2}))
    (b,) = out.breaches
    assert b.current == 3
    assert not any("n: 1 -> 2" in r for r in b.reasons)


def test_max_compile_time_fails_without_a_baseline() -> None:
    out = run(timed(0.8), None, MarkerLimits(max_compile_time=0.5))
    assert out.failed
    assert out.status == "OVER LIMIT"
    (b,) = out.breaches
    assert (b.metric, b.against) == (COMPILE_TIME, "limit")
    assert (b.reference, b.current) == (0.5, 0.8)
    assert b.reasons == ()


def test_limits_fail_even_while_saving() -> None:
    current = rec(fn("f", "m.py:3", traces=3))
    out = run(current, rec(fn("f", "m.py:3")), MarkerLimits(max_traces=1), gate_baseline=False)
    assert out.failed
    assert out.status == "OVER LIMIT"
    assert [b.gated for b in out.breaches if b.against == "limit"] == [True]
    assert all(not b.gated for b in out.breaches if b.against == "baseline")


def test_limit_wins_over_regression_in_status() -> None:
    current = rec(fn("f", "m.py:3", traces=3))
    out = run(current, rec(fn("f", "m.py:3")), MarkerLimits(max_compiles=2))
    assert {b.against for b in out.breaches} == {"limit", "baseline"}
    assert out.status == "OVER LIMIT"


# -- per-test tolerances ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "now", "failed"),
    [
        pytest.param(NO_LIMITS, 2.5, True, id="default-rtol-fails"),
        pytest.param(MarkerLimits(compile_rtol=2.0), 2.5, False, id="looser-rtol-passes"),
        pytest.param(MarkerLimits(compile_floor=2.0), 2.5, False, id="higher-floor-passes"),
        pytest.param(NO_LIMITS, 1.5, False, id="default-rtol-passes"),
        pytest.param(MarkerLimits(compile_rtol=0.2), 1.5, True, id="tighter-rtol-fails"),
        pytest.param(
            MarkerLimits(compile_rtol=0.2, compile_floor=0.6), 1.5, False, id="floor-still-wins"
        ),
    ],
)
def test_marker_tolerances_override_the_defaults(
    limits: MarkerLimits, now: float, failed: bool
) -> None:
    out = run(timed(now), timed(1.0), limits)
    assert out.failed is failed
    assert any(b.metric == COMPILE_TIME for b in out.breaches) is failed


def test_breach_detail_shows_the_tolerances_in_force() -> None:
    out = run(timed(1.5), timed(1.0), MarkerLimits(compile_rtol=0.25, compile_floor=0.05))
    (b,) = out.breaches
    assert b.detail == "cpu seconds, rtol 0.25, floor 0.05 s"
