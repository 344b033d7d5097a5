"""The jaxpr equations of each top-level jit trace (`trace_eqns`): the size gate of a test
that only traces (eval_shape, make_jaxpr), end to end and on hand-built records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _records import fn, rec
from conftest import read_json

from pytest_jaxperf import model
from pytest_jaxperf.compare import Gating, evaluate
from pytest_jaxperf.config import MarkerLimits, Tolerances
from pytest_jaxperf.report.wording import breach_lines, program_size
from pytest_jaxperf.storage.store import BaselineError, load, save

# `step` is N jnp.sin applications unrolled by a Python loop: N equations, traced and never
# lowered. Compile time grows with N too: left out, to see the size's own gate.
TRACE_ONLY_TEST = """
import jax
import jax.numpy as jnp
import pytest

N = {n}

def step(x):
    for _ in range(N):
        x = jnp.sin(x)
    return x

X = jax.ShapeDtypeStruct((3,), jnp.float32)

@pytest.mark.jaxperf(compile_rtol=1000{marker})
def test_eval_shape():
    jax.eval_shape(jax.jit(step), X)

@pytest.mark.jaxperf(compile_rtol=1000{marker})
def test_make_jaxpr():
    jax.make_jaxpr(step)(X)
"""
NODES = ("test_mod.py::test_eval_shape", "test_mod.py::test_make_jaxpr")
STEP = "step at test_mod.py:7"


def _module(jp: pytest.Pytester, n: int, marker: str = "") -> None:
    jp.makepyfile(test_mod=TRACE_ONLY_TEST.format(n=n, marker=marker))


def _before_short_summary(result: pytest.RunResult) -> str:
    """The inner run's output up to pytest's short summary, which under CI=true repeats each
    failure's text whole (pytest truncates it elsewhere)."""
    return result.stdout.str().split("short test summary info")[0]


def _step(path: Path, node: str) -> dict[str, Any]:
    return read_json(path)["tests"][node]["functions"][STEP]  # type: ignore[no-any-return]


@pytest.mark.jax_internals
def test_a_test_that_only_traces_fails_when_its_trace_grows(jp: pytest.Pytester) -> None:
    _module(jp, 10)
    assert jp.runpytest("--jaxperf", "--jaxperf-save").ret == 0
    baseline = jp.path / ".jaxperf" / "baseline.json"
    for node in NODES:
        step = _step(baseline, node)
        # One top-level trace of ten equations; nothing lowered.
        assert (step["traces"], step["lowerings"], step["trace_eqns"]) == (1, 0, 10)
        assert read_json(baseline)["tests"][node]["trace_eqns"] == 10
    result = jp.runpytest("--jaxperf")
    assert result.ret == 0, result.stdout.str()
    assert "jaxperf: 0 regressions" in result.stdout.str()

    _module(jp, 300)
    result = jp.runpytest("--jaxperf", "--jaxperf-json=out.json")
    assert result.ret == 1
    out = _before_short_summary(result)
    for node in NODES:
        assert _step(jp.path / "out.json", node)["trace_eqns"] == 300
    line = (
        "traced jaxpr equations of step (defined at test_mod.py:7): baseline 10 -> now 300 "
        "(+290, x30) [static_rtol 0.1]"
    )
    assert out.count(line) == 2, out
    assert "jaxpr equations of all functions" not in out  # the function's line says it
    assert "jaxperf: 2 regressions" in out


@pytest.mark.jax_internals
def test_max_jaxpr_eqns_limits_what_a_test_only_traced(jp: pytest.Pytester) -> None:
    _module(jp, 30, ", max_jaxpr_eqns=20")
    result = jp.runpytest("--jaxperf")
    assert result.ret == 1
    out = _before_short_summary(result)
    assert out.count("traced jaxpr equations of all functions: 30 > limit 20") == 2, out
    _module(jp, 10, ", max_jaxpr_eqns=20")
    assert jp.runpytest("--jaxperf").ret == 0


# -- the rule, on hand-built records -----------------------------------------------------------


def _traced(eqns: int | None, traces: int = 1, lowered: int | None = None) -> Any:
    """A test whose one function traced (top-level) `traces` times, `eqns` equations in all;
    lowered too where `lowered` gives its lowerings' equations."""
    f = fn("step", "pkg/m.py:3", traces, compiles=0 if lowered is None else traces)
    f.trace_eqns = eqns
    f.jaxpr_eqns = 0 if lowered is None else lowered
    return rec(f)


def _judge(now: Any, before: Any, limits: MarkerLimits | None = None) -> Any:
    return evaluate(now, before, limits or MarkerLimits(), Gating(Tolerances()))


def test_traced_growth_fails_a_function_that_did_not_lower() -> None:
    out = _judge(_traced(300), _traced(10))
    (breach,) = out.breaches
    assert (breach.metric, breach.reference, breach.current) == ("traced jaxpr equations", 10, 300)
    assert breach_lines(breach)[0] == (
        "traced jaxpr equations of step (defined at pkg/m.py:3): baseline 10 -> now 300 "
        "(+290, x30) [static_rtol 0.1]"
    )
    assert not _judge(_traced(11), _traced(10)).breaches  # within static_rtol
    assert _judge(_traced(8), _traced(10)).improvements == [
        "traced jaxpr equations of step at pkg/m.py:3: 10 -> 8"
    ]


def test_traced_size_is_compared_per_trace_where_their_number_changed() -> None:
    out = _judge(_traced(20, traces=2), _traced(10))
    assert [b.metric for b in out.breaches] == ["traces"]  # the same program twice
    (size,) = [b for b in _judge(_traced(60, traces=2), _traced(10)).breaches if b.function
               and b.metric == "traced jaxpr equations"]  # fmt: skip
    assert (size.reference, size.current) == (10, 30)
    assert size.detail == "static_rtol 0.1, per trace: 1 -> 2 traces"


def test_a_function_that_lowered_is_gated_on_its_lowerings_alone() -> None:
    out = _judge(_traced(300, lowered=300), _traced(10, lowered=10))
    assert [b.metric for b in out.breaches] == ["jaxpr equations"]  # one line, not two


def test_a_baseline_without_traced_sizes_says_so_and_passes() -> None:
    out = _judge(_traced(300), _traced(None))
    assert not out.failed
    assert out.notes == [
        "traced jaxpr equations not gated: the baseline has none (saved before "
        "pytest-jaxperf/5; re-save it with --jaxperf-save)"
    ]
    # Where the function lowered, its lowerings gate it: nothing to say.
    assert not _judge(_traced(300, lowered=10), _traced(None, lowered=10)).notes


def test_max_jaxpr_eqns_falls_back_to_the_traced_equations() -> None:
    limits = MarkerLimits(max_jaxpr_eqns=20)
    (breach,) = _judge(_traced(30), None, limits).breaches
    assert (breach.metric, breach.current, breach.against) == (
        "traced jaxpr equations",
        30,
        "limit",
    )
    assert not _judge(_traced(30, lowered=15), None, limits).breaches  # its lowering's count
    out = _judge(_traced(None), None, limits)
    assert not out.breaches
    assert out.notes == [
        "traced jaxpr equations not measured for this test: max_jaxpr_eqns not applied to its "
        "functions"
    ]


def test_the_size_column_shows_the_traced_equations_of_a_test_that_did_not_lower() -> None:
    assert program_size(_traced(1234)) == "1,234 traced"
    assert program_size(_traced(1234, lowered=12)) == "12 / 0 / 0"


# -- the file ----------------------------------------------------------------------------------


def test_traced_sizes_round_trip_measured_or_not(tmp_path: Path) -> None:
    report = model.RunRecord(tests={"t.py::a": _traced(10), "t.py::b": _traced(None)})
    path = tmp_path / "b.json"
    save(path, report)
    data = read_json(path)
    assert data["schema"] == model.SCHEMA
    assert data["tests"]["t.py::a"]["functions"]["step at pkg/m.py:3"]["trace_eqns"] == 10
    assert data["tests"]["t.py::b"]["trace_eqns"] is None
    assert load(path) == report


def test_a_file_of_the_fourth_schema_reads_traced_sizes_as_not_measured(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    data = model.run_to_json(model.RunRecord(tests={"t.py::a": _traced(10, lowered=10)}))
    data["schema"] = "pytest-jaxperf/4"
    test = data["tests"]["t.py::a"]
    for counts in (test, test["eager"], *test["functions"].values()):
        del counts["trace_eqns"]
    path.write_text(json.dumps(data), encoding="utf-8")
    loaded = load(path)
    assert loaded is not None
    old = loaded.tests["t.py::a"]
    step = old.functions["step at pkg/m.py:3"]
    assert (old.trace_eqns, old.eager.trace_eqns, step.trace_eqns) == (None, None, None)
    assert old.jaxpr_eqns == 10  # the rest as written
    data["schema"] = "pytest-jaxperf/5"  # from /5 on it is required
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(BaselineError, match="missing field 'trace_eqns'"):
        load(path)


RAISES = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def solve(x):
    if x.shape[0] > 2:  # as diffrax's error tests: this trace raises
        raise ValueError("too long")
    return jnp.sin(x)

@pytest.mark.jaxperf
def test_raise():
    solve(jnp.ones(2))
    with pytest.raises(ValueError):
        solve(jnp.ones(3))
"""


@pytest.mark.jax_internals
def test_a_trace_that_raised_adds_no_equation_and_no_false_note(jp: pytest.Pytester) -> None:
    # The raised trace made no program: the function's traced equations are the completed
    # trace's alone (not "not measured"), and a rerun gates them without a note blaming the
    # baseline (diffrax's and equinox's re-runs said "the baseline has none" of a baseline
    # this version had just saved).
    jp.makepyfile(test_raise=RAISES)
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=1)
    saved = read_json(jp.path / ".jaxperf" / "baseline.json")["tests"]["test_raise.py::test_raise"]
    (solve,) = saved["functions"].values()
    assert (solve["traces"], solve["trace_eqns"]) == (2, 1)
    result = jp.runpytest("--jaxperf")
    result.assert_outcomes(passed=1)
    assert "traced jaxpr equations not gated" not in result.stdout.str()
    result.stdout.fnmatch_lines(["jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated"])


def test_sizes_neither_side_measured_are_not_blamed_on_the_baseline() -> None:
    def only_traced() -> Any:
        f = fn("f", "m.py:1", compiles=0)
        f.lowerings, f.jaxpr_eqns, f.trace_eqns = 0, None, None
        return rec(f)

    verdict = evaluate(only_traced(), only_traced(), MarkerLimits(), Gating(Tolerances()))
    assert [str(n) for n in verdict.notes if "traced" in n] == [
        "traced jaxpr equations not gated: this run has none (the traced program was not read)"
    ]
