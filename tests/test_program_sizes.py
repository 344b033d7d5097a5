"""End to end: the jaxpr equations and StableHLO ops each recorded function lowered, their
gate against the baseline on any CPU, and their marker limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from _records import fn, rec
from conftest import ROLLOUT_TEST, read_json
from jax import lax

from pytest_jaxperf.compare import Gating, evaluate
from pytest_jaxperf.config import DEFAULT_STATIC_RTOL, MarkerLimits, Tolerances
from pytest_jaxperf.measure._jaxhooks import executable_ops
from pytest_jaxperf.measure.program_metrics import count_eqns, hlo_ops
from pytest_jaxperf.model import SIZE_FIELDS
from pytest_jaxperf.report.wording import breach_lines, percent_or_ratio

pytestmark = pytest.mark.jax_internals

NODE = "test_mod.py::test_rollout"



def _module(jp: pytest.Pytester, unroll: object = 1, marker: str = "") -> None:
    # Compile time grows too (about 15x): left out here, to see the sizes' own gate.
    jp.makepyfile(test_mod=ROLLOUT_TEST.format(unroll=unroll, marker="compile_rtol=1000" + marker))


def _step(c: Any, x: Any) -> Any:
    return jnp.tanh(c * x + c), c.sum()


def _expected(unroll: object) -> tuple[int, int]:
    """(jaxpr equations, StableHLO ops) of the same program, lowered ahead of time here."""

    def rollout(c: Any, xs: Any) -> Any:
        return lax.scan(_step, c, xs, unroll=unroll)

    traced = jax.jit(rollout).trace(jnp.ones(4), jnp.ones((50, 4)))
    return count_eqns(traced.jaxpr), hlo_ops(traced.lower())


def _expected_xla(unroll: object) -> int:
    """HLO instructions after XLA's passes of the same program, compiled ahead of time here."""

    def rollout(c: Any, xs: Any) -> Any:
        return lax.scan(_step, c, xs, unroll=unroll)

    compiled = jax.jit(rollout).trace(jnp.ones(4), jnp.ones((50, 4))).lower().compile()
    return executable_ops(compiled.runtime_executable())


def _function(path: Path) -> dict[str, Any]:
    (fn,) = read_json(path)["tests"][NODE]["functions"].values()
    return fn  # type: ignore[no-any-return]


def test_sizes_are_those_of_the_lowered_program_and_unrolling_grows_only_the_hlo(
    jp: pytest.Pytester,
) -> None:
    sizes, xla = {}, {}
    for unroll in (1, True):  # (1 == True: the sizes are keyed by str)
        _module(jp, unroll)
        result = jp.runpytest("--jaxperf", "--jaxperf-json=out.json")
        assert result.ret == 0, result.stdout.str()
        fn = _function(jp.path / "out.json")
        assert (fn["lowerings"], fn["compiles"]) == (1, 1)
        sizes[str(unroll)] = (fn["jaxpr_eqns"], fn["hlo_ops"])
        assert sizes[str(unroll)] == _expected(unroll)
        assert fn["xla_ops"] == _expected_xla(unroll)
        xla[str(unroll)] = fn["xla_ops"]
        test = read_json(jp.path / "out.json")["tests"][NODE]
        assert (test["jaxpr_eqns"], test["hlo_ops"]) == sizes[str(unroll)]  # one function
    # The same one scan equation either way; fifty copies of the body in the module.
    assert sizes["1"][0] == sizes["True"][0]
    assert sizes["True"][1] > 5 * sizes["1"][1]
    assert xla["True"] > 5 * xla["1"]  # what XLA compiles grows with it


def test_an_unrolled_scan_fails_its_test_on_program_size_alone(jp: pytest.Pytester) -> None:
    _module(jp, 1)
    assert jp.runpytest("--jaxperf", "--jaxperf-save").ret == 0
    (before_eqns, before_ops), (_, now_ops) = _expected(1), _expected(True)
    _module(jp, True)
    result = jp.runpytest("--jaxperf")
    assert result.ret == 1
    out = result.stdout.str()
    # "+300%"; past +1000% a ratio ("x17": 30 -> 512 ops on jax 0.12).
    growth = percent_or_ratio(now_ops, before_ops)
    assert (
        f"StableHLO ops of rollout (defined at test_mod.py:9): baseline {before_ops:,} -> now "
        f"{now_ops:,} (+{now_ops - before_ops:,}, {growth}) [static_rtol {DEFAULT_STATIC_RTOL:g}]"
    ) in out
    # And what XLA made of it; nothing else grew: the counts and the jaxpr are the baseline's.
    assert "  optimized HLO ops of rollout (defined at test_mod.py:9): baseline " in out
    assert "2 metric(s) over the baseline or a limit" in out
    assert "jaxpr equations of" not in out
    assert f"{before_eqns} / {now_ops:,}" in out  # the table's "eqns / hlo ops" column


def _edit_environment(path: Path, **changes: object) -> None:
    data = read_json(path)
    data["environment"].update(changes)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.usefixtures("steady_reference")
def test_another_cpu_model_still_gates_the_sizes(jp: pytest.Pytester) -> None:
    _module(jp, 1)
    assert jp.runpytest("--jaxperf", "--jaxperf-save").ret == 0
    _edit_environment(jp.path / ".jaxperf" / "baseline.json", cpu="Some Other CPU 9000")
    _module(jp, True)
    result = jp.runpytest("--jaxperf")
    assert result.ret == 1
    out = result.stdout.str()
    assert "StableHLO ops of rollout (defined at test_mod.py:9): baseline" in out
    # Compile time too, scaled by the two machines' reference compiles (test_cross_machine).
    assert "note: compile time gated across machines" in out


def test_another_jax_version_leaves_the_sizes_out_and_says_so(jp: pytest.Pytester) -> None:
    _module(jp, 1)
    assert jp.runpytest("--jaxperf", "--jaxperf-save").ret == 0
    _edit_environment(jp.path / ".jaxperf" / "baseline.json", jax="0.0.1")
    _module(jp, True)
    result = jp.runpytest("--jaxperf", "--jaxperf-json=out.json", "-rA")
    assert result.ret == 0, result.stdout.str()
    assert "program metrics not gated: environment differs (jax 0.0.1 ->" in result.stdout.str()


def test_a_baseline_without_sizes_gates_the_rest_and_says_so(jp: pytest.Pytester) -> None:
    _module(jp, 1)
    assert jp.runpytest("--jaxperf", "--jaxperf-save", "--jaxperf-json=run.json").ret == 0
    path = jp.path / ".jaxperf" / "baseline.json"
    # As an older pytest-jaxperf wrote it: every field of each entry (the run file's) but sizes.
    data = {**read_json(path), "tests": read_json(jp.path / "run.json")["tests"]}
    data["schema"] = "pytest-jaxperf/3"
    for test in data["tests"].values():
        for counts in (test, test["eager"], *test["functions"].values()):
            for name in SIZE_FIELDS:
                del counts[name]
    path.write_text(json.dumps(data), encoding="utf-8")
    _module(jp, True)
    result = jp.runpytest("--jaxperf", "-rA")
    assert result.ret == 0, result.stdout.str()
    assert (
        "program sizes not gated: the baseline has none (saved before pytest-jaxperf/4; "
        "re-save it with --jaxperf-save)"
    ) in result.stdout.str()
    # Saving again writes them: nothing of the old file is lost.
    assert jp.runpytest("--jaxperf", "--jaxperf-save").ret == 0
    fn = _function(path)
    assert (fn["jaxpr_eqns"], fn["hlo_ops"]) == _expected(True)
    assert read_json(path)["schema"] == "pytest-jaxperf/7"


@pytest.mark.parametrize(
    ("marker", "line"),
    [
        (', max_hlo_ops={"rollout": 100}', "StableHLO ops of rollout (defined at test_mod.py:9):"),
        (", max_hlo_ops=100", "StableHLO ops of all functions:"),
        (', max_jaxpr_eqns={"rollout": 1}', "jaxpr equations of rollout (defined at test_mod"),
    ],
)
def test_marker_limits_on_a_function_or_the_test(
    jp: pytest.Pytester, marker: str, line: str
) -> None:
    _module(jp, True, marker)
    result = jp.runpytest("--jaxperf")
    assert result.ret == 1
    assert line in result.stdout.str()
    assert "> limit" in result.stdout.str()
    _module(jp, 1, marker.replace("100", "100000").replace(": 1}", ": 1000}"))
    assert jp.runpytest("--jaxperf").ret == 0


def test_a_size_limit_naming_no_function_or_benchmark_fails(jp: pytest.Pytester) -> None:
    _module(jp, 1, ', max_hlo_ops={"rollot": 100}')
    result = jp.runpytest("--jaxperf")
    assert result.ret == 1
    assert (
        "@pytest.mark.jaxperf(max_hlo_ops=...) names 'rollot', a function or benchmark this "
        "test did not trace or run (did you mean 'rollout'?)"
    ) in result.stdout.str()


# -- the rule, on hand-built records -----------------------------------------------------------


def _sized(traces: int, eqns: int | None, ops: int | None) -> Any:
    f = fn("rollout", "pkg/sim.py:40", traces)
    f.jaxpr_eqns, f.hlo_ops = eqns, ops
    return rec(f)


def _judge(now: Any, before: Any, **kwargs: Any) -> Any:
    return evaluate(now, before, MarkerLimits(), Gating(Tolerances(), **kwargs))


def test_growth_above_static_rtol_fails_and_within_it_passes() -> None:
    out = _judge(_sized(1, 12, 13_702), _sized(1, 12, 214))
    (breach,) = out.breaches
    assert (breach.metric, breach.reference, breach.current) == ("StableHLO ops", 214, 13_702)
    assert breach_lines(breach)[0] == (
        "StableHLO ops of rollout (defined at pkg/sim.py:40): baseline 214 -> now 13,702 "
        "(+13,488, x64) [static_rtol 0.1]"
    )
    assert out.failed
    assert not _judge(_sized(1, 12, 235), _sized(1, 12, 214)).breaches  # +9.8%
    assert _judge(_sized(1, 12, 236), _sized(1, 12, 214)).failed  # +10.3%
    improved = _judge(_sized(1, 10, 214), _sized(1, 12, 214))
    assert improved.improvements == ["jaxpr equations of rollout at pkg/sim.py:40: 12 -> 10"]


def test_one_more_lowering_of_the_same_program_is_left_to_the_counts() -> None:
    out = _judge(_sized(2, 24, 428), _sized(1, 12, 214))
    assert [b.metric for b in out.breaches] == ["traces", "compiles"]
    # A retrace to a larger program: its size per lowering grew.
    out = _judge(_sized(2, 24, 1_000), _sized(1, 12, 214))
    (size,) = [b for b in out.breaches if b.metric == "StableHLO ops"]
    assert (size.reference, size.current) == (214, 500)
    assert size.detail == "static_rtol 0.1, per lowering: 1 -> 2 lowerings"


def test_sizes_not_measured_or_another_jax_are_not_gated_and_say_why() -> None:
    out = _judge(_sized(1, 12, 13_702), _sized(1, None, None))
    assert not out.breaches
    assert out.notes == [
        "program sizes not gated: the baseline has none (saved before pytest-jaxperf/4; "
        "re-save it with --jaxperf-save)"
    ]
    out = _judge(_sized(1, 12, 13_702), _sized(1, 12, 214), static_differences=["jax 0.9 -> 0.10"])
    assert not out.breaches
    assert out.notes == ["program metrics not gated: environment differs (jax 0.9 -> 0.10)"]
    # The self-check could not read them: not gated, nor limited.
    out = _judge(_sized(1, 12, 13_702), _sized(1, 12, 214), not_measured={"program size": "x"})
    assert not out.breaches and out.notes == ["program size not measured (x): not gated"]
    limited = evaluate(
        _sized(1, 12, 13_702), None, MarkerLimits(max_hlo_ops=10),
        Gating(Tolerances(), not_measured={"program size": "x"}),
    )  # fmt: skip
    assert not limited.breaches


def test_the_test_total_counts_a_new_function() -> None:
    # A second function the baseline never had: per function nothing grew, the test did.
    before = _sized(1, 12, 214)
    now = _sized(1, 12, 214)
    new = fn("extra", "pkg/sim.py:90", 1)
    new.jaxpr_eqns, new.hlo_ops = 30, 600
    now.functions[new.key] = new
    now.recompute_totals()
    out = _judge(now, before)
    sizes = [b for b in out.breaches if b.metric in ("jaxpr equations", "StableHLO ops")]
    assert [(b.metric, b.function, b.reference, b.current) for b in sizes] == [
        ("jaxpr equations", None, 12, 21),
        ("StableHLO ops", None, 214, 407),
    ]
    assert sizes[0].detail == "static_rtol 0.1, per lowering: 1 -> 2 lowerings"
    assert sizes[0].reasons == ("new function: extra at pkg/sim.py:90",)
    assert breach_lines(sizes[1])[0] == (
        "StableHLO ops of all functions: baseline 214 -> now 407 (+193, +90%) "
        "[static_rtol 0.1, per lowering: 1 -> 2 lowerings]"
    )
    # The same program once more in a new function: per lowering the total did not grow.
    twin = fn("twin", "pkg/sim.py:95", 1)
    twin.jaxpr_eqns, twin.hlo_ops = 12, 214
    same = _sized(1, 12, 214)
    same.functions[twin.key] = twin
    same.recompute_totals()
    assert {b.metric for b in _judge(same, before).breaches} == {"traces", "compiles"}
