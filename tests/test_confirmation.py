"""Confirm before failing: a compile-time breach fails the test only if the test's programs,
lowered and compiled again, still breach (re-measured figures injected; one end-to-end
run through the real recompiles asserts wording and counts, never a timing verdict)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from _records import fn, rec
from conftest import read_json

from pytest_jaxperf import confirmation
from pytest_jaxperf.compare import COMPILE_TIME, Gating, Verdict, evaluate
from pytest_jaxperf.config import MarkerLimits, Tolerances
from pytest_jaxperf.confirmation import Phases, Remeasured, judge, needed
from pytest_jaxperf.measure import recompile
from pytest_jaxperf.measure.recorder import Kept
from pytest_jaxperf.model import RecordedTest

F = "f at m.py:3"
# The baseline: f traces, lowers and compiles in 0.05 + 0.05 + 0.2 s (CPU as wall).
BASE = rec(fn("f", "m.py:3", trace_s=0.05, lower_s=0.05, compile_s=0.2))
# The run: a collection or a load spike inside the lowering, 0.8 s more.
SLOW = rec(fn("f", "m.py:3", trace_s=0.05, lower_s=0.85, compile_s=0.2))


def _judge(record: RecordedTest, limits: MarkerLimits | None = None) -> Any:
    return lambda r: evaluate(r, BASE, limits or MarkerLimits(), Gating(Tolerances()))


def _again(lower_s: float, compile_s: float, repeats: int = 3) -> Remeasured:
    return Remeasured({F: Phases(lower_s, compile_s, lower_s, compile_s)}, repeats, 1.25)


def test_a_clean_verdict_needs_no_confirmation() -> None:
    assert not needed(_judge(BASE)(BASE))
    # Reported only (saving): nothing fails, nothing to confirm.
    ungated = evaluate(SLOW, BASE, MarkerLimits(), Gating(Tolerances(), gate_baseline=False))
    assert ungated.breaches and not needed(ungated)


def test_a_test_failing_on_its_counts_too_is_not_recompiled() -> None:
    more = rec(fn("f", "m.py:3", traces=2, trace_s=0.05, lower_s=0.85, compile_s=0.2))
    first = _judge(more)(more)
    assert {b.metric for b in first.breaches if b.gated} == {"traces", "compiles", COMPILE_TIME}
    assert not needed(first)
    confirmation.mark_unconfirmed(first)
    (b,) = [b for b in first.breaches if b.metric == COMPILE_TIME]
    assert b.detail.endswith("; not re-measured: the test fails on other metrics too")
    assert [b.detail for b in first.breaches if b.metric != COMPILE_TIME] == ["", ""]


def test_a_breach_that_does_not_confirm_passes_with_one_note() -> None:
    first = _judge(SLOW)(SLOW)
    assert first.failed and needed(first)
    out = judge(first, SLOW, _again(0.05, 0.21), _judge(SLOW))
    assert not out.failed
    assert out.status == "ok"
    (line,) = confirmation.unconfirmed(out)
    assert line == (
        "compile time of all functions not confirmed: 1.100 s at first, fastest of 3 "
        "recompiles (trace as recorded) 0.300 s (baseline 0.300 s): not failed; confirming "
        "took 1.25 s"
    )


def test_a_breach_that_confirms_fails_and_says_so() -> None:
    first = _judge(SLOW)(SLOW)
    out = judge(first, SLOW, _again(0.9, 0.25), _judge(SLOW))
    assert out.failed and out.status == "REGRESSED"
    (b,) = out.breaches
    assert b.metric == COMPILE_TIME
    # Never more than first recorded: the lowering keeps its 0.85 s.
    assert b.current == pytest.approx(0.05 + 0.85 + 0.2)
    assert b.detail == (
        "cpu seconds, rtol 1, floor 0.1 s; confirmed: fastest of 3 recompiles (trace as "
        "recorded) 1.100 s, 1.100 s at first; confirming took 1.25 s"
    )
    assert not confirmation.unconfirmed(out)


def test_a_limit_breach_is_confirmed_the_same_way() -> None:
    limits = MarkerLimits(max_compile_time=0.5)
    first = evaluate(SLOW, None, limits, Gating(Tolerances()))
    assert first.status == "OVER LIMIT" and needed(first)

    def again(r: RecordedTest) -> Verdict:
        return evaluate(r, None, limits, Gating(Tolerances()))

    held = judge(first, SLOW, _again(0.3, 0.2, repeats=2), again)
    assert held.status == "OVER LIMIT"
    assert "confirmed: fastest of 2 recompiles (trace as recorded) 0.550 s" in (
        held.breaches[0].detail
    )
    cleared = judge(first, SLOW, _again(0.05, 0.2, repeats=1), again)
    assert cleared.status == "new" and not cleared.failed
    (line,) = confirmation.unconfirmed(cleared)
    assert "fastest of 1 recompile (trace as recorded) 0.300 s (limit 0.500 s)" in line


def test_a_breach_no_recompile_could_confirm_is_judged_by_the_wider_band() -> None:
    # Every program failed to compile again: nothing confirms the one sample. 1.1 s against
    # 0.3 s is within the band (baseline x 3 (1 + rtol) = 1.8 s, 0.5 s above it): left out.
    first = _judge(SLOW)(SLOW)
    assert first.failed
    nothing = Remeasured({}, 1, 0.4, {F: "could not be compiled again: TypeError: no"})
    out = judge(first, SLOW, nothing, _judge(SLOW))
    assert not out.failed and out.status == "ok"
    assert not [b for b in out.breaches if b.metric == COMPILE_TIME]
    # Left out, and said so: a note with its code the summary counts as "not gated", and
    # the figures.
    assert out.notes == [confirmation.UNCONFIRMABLE_NOTE]
    assert [getattr(n, "code", None) for n in out.notes] == ["unconfirmed"]
    assert out.info == [
        "compile time of all functions not confirmed: 1.100 s (baseline 0.300 s): no program "
        "could be compiled again (trace seconds cannot be re-measured); within the band "
        "unconfirmed breaches fail beyond (baseline x 6 and 0.5 s above it): not failed",
        f"compile time not re-measured for {F} (could not be compiled again: TypeError: no): "
        "first figures kept",
    ]
    assert confirmation.unconfirmed(out) == out.info[:1]


def test_gross_growth_that_nothing_could_confirm_still_fails() -> None:
    # 2.0 s against 0.3 s: beyond baseline x 6 and 0.5 s above it.
    gross = rec(fn("f", "m.py:3", trace_s=1.75, lower_s=0.05, compile_s=0.2))
    first = _judge(gross)(gross)
    out = judge(first, gross, Remeasured({}, 0, 0.0), _judge(gross))
    assert out.failed and out.status == "REGRESSED" and not out.notes
    (b,) = out.breaches
    assert b.detail.endswith(
        "not confirmed: no program could be compiled again (trace seconds cannot be "
        "re-measured); beyond the band unconfirmed breaches fail beyond (baseline x 6 and "
        "0.5 s above it)"
    )
    # A wider tolerance widens the band with it: x 3 (1 + 5) = 18.
    wide = Tolerances(compile_rtol=5.0)
    first = evaluate(gross, BASE, MarkerLimits(), Gating(wide))
    assert first.failed
    out = judge(
        first, gross, Remeasured({}, 0, 0.0),
        lambda r: evaluate(r, BASE, MarkerLimits(), Gating(wide)), wide,
    )  # fmt: skip
    assert not out.failed and out.notes == [confirmation.UNCONFIRMABLE_NOTE]


def test_a_marker_limit_fails_on_its_one_sample_where_nothing_could_confirm_it() -> None:
    # A test that only traced (diffrax's error tests: the trace raises; shape checks):
    # nothing is compiled, nothing kept to compile again. The user's own limit still fails.
    limits = MarkerLimits(max_compile_time=0.01)
    traced = rec(fn("f", "m.py:3", trace_s=0.44, lower_s=0.0, compile_s=0.0, compiles=0))
    first = evaluate(traced, None, limits, Gating(Tolerances()))
    assert first.status == "OVER LIMIT" and needed(first)

    def again(r: RecordedTest) -> Verdict:
        return evaluate(r, None, limits, Gating(Tolerances()))

    out = judge(first, traced, Remeasured({}, 0, 0.0), again, new=True)
    assert out.status == "OVER LIMIT" and out.failed and not out.notes
    (b,) = out.breaches
    assert b.against == "limit" and b.detail == (
        "not confirmed: no program could be compiled again (trace seconds cannot be "
        "re-measured); a marker limit fails on its one sample"
    )
    assert not confirmation.unconfirmed(out)


def test_a_function_past_the_bound_is_confirmed_on_its_kept_programs() -> None:
    # 66 programs, 64 kept: those took 0.8 s of the 0.85 s lowering when first compiled and
    # 0.04 s again; the other two keep their 0.05 s. Confirmed lower: 0.05 + 0.04.
    first = _judge(SLOW)(SLOW)
    kept = Phases(0.8, 0.15, 0.8, 0.15)
    again = Remeasured({F: Phases(0.04, 0.15, 0.04, 0.15)}, 3, 1.0, {}, {F: kept})
    record = confirmation.confirmed_record(SLOW, again)
    (f,) = record.functions.values()
    assert (f.lower_s, f.compile_s) == (pytest.approx(0.09), pytest.approx(0.2))
    assert f.lower_cpu_s == pytest.approx(0.09)
    out = judge(first, SLOW, again, _judge(SLOW))
    assert not out.failed


def test_fastest_takes_each_phase_and_clock_on_its_own() -> None:
    got = confirmation.fastest([Phases(0.3, 0.1, 0.2, 0.4), Phases(0.2, 0.5, 0.6, None)])
    assert got == Phases(lower_s=0.2, compile_s=0.1, lower_cpu_s=0.2, compile_cpu_s=None)


def test_remeasure_stops_once_the_breach_no_longer_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    samples = iter([Phases(0.9, 0.3, 0.9, 0.3), Phases(0.05, 0.2, 0.05, 0.2)] + [Phases()] * 5)
    calls: list[list[Any]] = []

    def once(rootdir: Path, jaxprs: list[Any], recorder: Any) -> Phases:
        calls.append(jaxprs)
        return next(samples)

    monkeypatch.setattr(recompile, "_once", once)
    kept = Kept(["jaxpr1", "jaxpr2"], 0.8, 0.2, 0.8, 0.2)
    fake = type("R", (), {"last_programs": ({F: kept}, {})})()
    first = _judge(SLOW)(SLOW)

    def holds(m: Remeasured) -> bool:
        return needed(judge(first, SLOW, m, _judge(SLOW)))

    ticks = iter(range(100))
    got = recompile.remeasure(Path("."), 3, holds, recorder=fake, clock=lambda: next(ticks))
    assert got.repeats == 2 and len(calls) == 2
    assert got.functions[F] == Phases(0.05, 0.2, 0.05, 0.2)
    assert got.first[F] == Phases(0.8, 0.2, 0.8, 0.2)
    assert got.seconds == 2
    # Taken: the next test does not confirm with this one's programs.
    assert fake.last_programs == ({}, {})


def test_remeasure_starts_no_repeat_past_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recompile, "_once", lambda *a: Phases(0.9, 0.3, 0.9, 0.3))
    fake = type("R", (), {"last_programs": ({F: Kept(["jaxpr"])}, {})})()
    ticks = iter([0.0, 6.0, 12.0, 18.0])
    got = recompile.remeasure(Path("."), 3, recorder=fake, budget_s=10.0,
                              clock=lambda: next(ticks))  # fmt: skip
    assert (got.repeats, got.seconds) == (2, 12.0)


def test_remeasure_with_nothing_kept_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recompile, "_once", lambda *a: pytest.fail("nothing to recompile"))
    fake = type("R", (), {"last_programs": ({}, {F: "the test lowered more than 64 programs"})})()
    got = recompile.remeasure(Path("."), 3, recorder=fake)
    assert (got.repeats, dict(got.functions)) == (0, {})
    assert got.left_out == {F: "the test lowered more than 64 programs"}


# -- end to end -----------------------------------------------------------------------------

TWO_TESTS = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def f(x):
    return jnp.sin(x) * 2 + 1

@pytest.mark.jaxperf(max_compile_time=0)
def test_over():
    f(jnp.ones(3))

@pytest.mark.jaxperf
def test_clean():
    f(jnp.ones(4))
"""


@pytest.mark.jax_internals
def test_a_breach_is_confirmed_by_real_recompiles(jp: pytest.Pytester) -> None:
    # A limit of 0 s: any compile breaches it, before and after confirming.
    jp.makepyfile(test_confirm=TWO_TESTS)
    result = jp.runpytest("--jaxperf", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*compile time of all functions: * s > limit 0.000 s [[]confirmed: fastest of 3 "
            "recompiles (trace as recorded) * s, * s at first; confirming took * s]",
        ]
    )
    # The clean test confirmed nothing: no recompile, no note.
    assert "not confirmed" not in result.stdout.str()


TRACE_RAISES = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def solve(x):
    if x.shape[0] > 2:  # as diffrax's error tests: the trace raises, nothing is compiled
        raise ValueError("too long")
    return x + 1

@pytest.mark.jaxperf(max_compile_time=0)
def test_only_traces():
    with pytest.raises(ValueError):
        solve(jnp.ones(3))
"""


@pytest.mark.jax_internals
def test_a_marker_limit_on_a_test_that_only_traced_fails_and_compare_agrees(
    jp: pytest.Pytester,
) -> None:
    # A limit of 0 s: the one trace breaches it, and no program exists to compile again.
    # The user's own number fails on its one sample; `jaxperf compare` says the same.
    jp.makepyfile(test_traced=TRACE_RAISES)
    result = jp.runpytest("--jaxperf", "--jaxperf-json=run.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*compile time of all functions: * s > limit 0.000 s [[]not confirmed: no program "
            "could be compiled again (trace seconds cannot be re-measured); a marker limit "
            "fails on its one sample]",
            "jaxperf: 1 regression, 0 improvements, 0 new, 0 not gated",
        ]
    )
    (entry,) = read_json(jp.path / "run.json")["tests"].values()
    assert (entry["traces"], entry["compiles"], entry["outcome"]) == (1, 0, "regressed")
    # What the confirmation measured (nothing) is in the run file.
    assert entry["confirmation"] == {
        "repeats": 0, "seconds": 0.0, "functions": {}, "first": {}, "left_out": {}
    }  # fmt: skip
    jp.path.joinpath("empty.json").write_text('{"schema": "pytest-jaxperf/4", "tests": {}}')
    compared = jp.run(sys.executable, "-m", "pytest_jaxperf", "compare", "empty.json", "run.json")
    assert compared.ret == 1
    compared.stdout.fnmatch_lines(["jaxperf: 1 regression, 0 improvements, 0 new, 0 not gated"])


ONE_FUNCTION = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def f(x):
    return jnp.sin(x) * 2 + 1

@pytest.mark.jaxperf(max_compile_time={"f": 2.5})
def test_over():
    f(jnp.ones(3))
"""


@pytest.fixture
def fake_seconds(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every phase of the inner run takes exactly 1 CPU second (a clock that ticks once per
    read, no collector seconds); the recompiles are injected: `fake_seconds(phases)`."""
    from pytest_jaxperf.measure.gctime import GcClock
    from pytest_jaxperf.measure.recorder import RECORDER

    ticks = iter(range(10**6))
    monkeypatch.setattr(RECORDER, "_cpu_clock", lambda: float(next(ticks)))
    monkeypatch.setattr(RECORDER, "gc", GcClock(wall=lambda: 0.0, cpu=lambda: 0.0))

    def inject(phases: Phases) -> None:
        def fake(rootdir: Path, repeats: int, holds: Any = None, **kw: Any) -> Remeasured:
            programs, _ = RECORDER.last_programs
            return Remeasured({k: phases for k in programs}, repeats, 0.5)

        monkeypatch.setattr(recompile, "remeasure", fake)

    return inject


def test_a_breach_that_does_not_confirm_passes_with_a_summary_line(
    jp: pytest.Pytester, fake_seconds: Any
) -> None:
    fake_seconds(Phases(0.0, 0.0, 0.0, 0.0))
    jp.makepyfile(test_confirm=ONE_FUNCTION)
    result = jp.runpytest("--jaxperf")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["pytest-jaxperf: test_confirm.py::test_over: compile time of f not confirmed: "
         "3.000 s at first, fastest of 3 recompiles (trace as recorded) 1.000 s (limit "
         "2.500 s): not failed; confirming took 0.50 s"]
    )  # fmt: skip


def test_a_breach_that_confirms_fails_end_to_end(jp: pytest.Pytester, fake_seconds: Any) -> None:
    fake_seconds(Phases(1.0, 1.0, 1.0, 1.0))
    jp.makepyfile(test_confirm=ONE_FUNCTION)
    result = jp.runpytest("--jaxperf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*compile time of f (defined at test_confirm.py:5): 3.000 s > limit 2.500 s "
         "[[]confirmed: fastest of 3 recompiles (trace as recorded) 3.000 s, 3.000 s at first; "
         "confirming took 0.50 s]"]
    )  # fmt: skip
    assert "not confirmed" not in result.stdout.str()


def test_remeasure_turns_any_error_into_a_function_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def once(*args: Any) -> Phases:
        raise RuntimeError("boom\nmore")

    monkeypatch.setattr(recompile, "_once", once)
    fake = type("R", (), {"last_programs": ({F: Kept(["jaxpr"])}, {})})()
    got = recompile.remeasure(Path("."), 3, recorder=fake)
    assert dict(got.functions) == {}
    assert got.left_out == {F: "re-measuring failed: RuntimeError: boom"}
