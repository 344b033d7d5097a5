"""End to end: each trap of the example project, switched back on, fails the test that
guards it, with a message naming the function and the cause.

Only counts and program metrics decide here (compile time and runtime are given margins
no regression reaches), so the failing set is exact. Each case runs only the tests that
guard its module, to keep it to a few seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import pytest
from _jax_releases import UNSTACKS, builtin_sum_eqns
from conftest import EXAMPLE, lit

pytestmark = pytest.mark.jax_internals

VARIABLE = "JAXPERF_EXAMPLE_REGRESSION"
# No reference compile either: no compile time decides here.
COUNTS_ONLY = (
    "--jaxperf-compile-rtol=1000", "--jaxperf-runtime-rtol=1000", "--jaxperf-no-reference-compile"
)  # fmt: skip


class Case(NamedTuple):
    select: tuple[str, ...]  # what to run of the example's tests
    failed: tuple[str, ...]  # the tests that must fail (all others selected must pass)
    lines: tuple[str, ...]  # fnmatch patterns, in order, in the output
    passed: int = 0
    # Further patterns, for program metrics compared with the baseline: gated (and so
    # printed) only where the JAX version is the baseline's.
    same_jax_lines: tuple[str, ...] = ()
    # Tests that fail only there, on those metrics (elsewhere they pass, saying why).
    same_jax_failed: tuple[str, ...] = ()


CASES = {
    # Only the scaling test: it traces and never compiles, where each other test of the
    # module would spend 1-3 s compiling the unrolled sum (they fail too, by compile time,
    # and test_overlap_first_call_and_steady_state by its max_jaxpr_eqns=50).
    "builtin_sum": Case(
        select=("tests/test_integration.py::test_equations_do_not_grow_with_the_grid",),
        failed=("test_integration.py::test_equations_do_not_grow_with_the_grid",),
        lines=(
            # The grid's builtin sum and overlap's other equations (29 of them; 30 with the
            # unstack of jax >= 0.11, which builtin_sum_eqns counts in).
            "*jaxpr_eqns of overlap grows with exponent "
            + ("0.94" if UNSTACKS else "0.98")
            + " > max_exponent 0.1",
            "      size  jaxpr_eqns",
            *(f"{n:>10}  {builtin_sum_eqns(n, extra=29)}" for n in (200, 400, 800, 1600)),
        ),
    ),
    "int_std": Case(
        select=("tests/test_integration.py::test_width_sweep_compiles_once",),
        failed=("test_integration.py::test_width_sweep_compiles_once",),
        lines=(
            "*traces of overlap (defined at jaxperf_example/integration.py:*): 2 > limit 1",
            "*cause: std1: i32[] -> f32[]; fix: give it one dtype on every call (jnp.float32(x))",
            # The same cause breaches the baseline's traces and compiles: said once, above.
            "*traces of overlap (defined at *): baseline 1 -> now 2 (+1, +100%)",
            "*compiles of overlap (defined at *): baseline 1 -> now 2 (+1, +100%)",
            "  baseline: *",
        ),
    ),
    "jit_pieces": Case(
        select=("tests/test_layer.py",),
        failed=(
            "test_layer.py::test_forward_passes_compile_once",
            "test_layer.py::test_first_call_vs_steady_state",
        ),
        passed=1,
        lines=(
            "*test_forward_passes_compile_once*",
            "*traces of all functions: 3 > limit 1",
            "*compiles of all functions: 3 > limit 1",
            "*traces of add_bias (defined at jaxperf_example/layer.py:*): baseline 0 -> now 1*",
            "*cause: new function (not in the baseline)",
        ),
    ),
    # Twice the flops with the same single trace and compile: no count fails, the program
    # metrics and sizes do (the marker's max_jaxpr_eqns=10, the baseline's flops and the
    # function's jaxpr equations and StableHLO ops); the runtime
    # (about 2x, benchmarks/compile_under_load.py measures how often it is caught) is not
    # gated here.
    "double_work": Case(
        select=("tests/test_layer.py",),
        failed=("test_layer.py::test_first_call_vs_steady_state",),
        passed=1,
        lines=("*jaxpr equations of benchmark 'dense_relu': * > limit 10",),
        same_jax_lines=(
            "*jaxpr equations of dense_relu (defined at jaxperf_example/layer.py:*): "
            "baseline 6 -> now 15 (+9, +150%)*",
            "*flops of benchmark 'dense_relu': baseline * -> now * (+*, +100%)*",
        ),
        # Its program sizes, against the baseline's, whatever the CPU.
        same_jax_failed=("test_layer.py::test_forward_passes_compile_once",),
    ),
    # Runtime only: the same program and counts, each call of dense_relu made 2x or 1.25x as
    # long (a busy wait after it). Nothing here can see that, so nothing fails: the counts
    # and program metrics equal the committed baseline's. `jaxperf ab` is what catches them
    # (benchmarks/ab_power.py measures how often). Timings are left ungated on a jax other
    # than the committed baseline's, hence any number "not gated".
    "slow_2x": Case(
        select=("tests/test_layer.py",),
        failed=(),
        passed=3,
        lines=("jaxperf: 0 regressions, 0 improvements, 0 new, * not gated",),
    ),
    "slow_1_25x": Case(
        select=("tests/test_layer.py",),
        failed=(),
        passed=3,
        lines=("jaxperf: 0 regressions, 0 improvements, 0 new, * not gated",),
    ),
    # About 4% more work per call, the program unchanged: below what seconds can gate, so
    # nothing fails here; the instructions clock catches it
    # (tests/test_example_project.py::test_example_benchmarks_under_the_instructions_clock).
    "more_work": Case(
        select=("tests/test_layer.py",),
        failed=(),
        passed=3,
        lines=("jaxperf: 0 regressions, 0 improvements, 0 new, * not gated",),
    ),
    "data_dependent_size": Case(
        select=("tests/test_neighbours.py::test_trajectory_compiles_once",),
        failed=("test_neighbours.py::test_trajectory_compiles_once",),
        lines=(
            "*jaxperf.no_recompile: compiled inside the block:",
            "pair_energy at jaxperf_example/neighbours.py:*: * trace(s), * compile(s)",
            "    cause: static argument size changed on * traces: *; fix: use a few fixed values*",
        ),
    ),
    "jit_in_loop": Case(
        select=("tests/test_sampler.py::test_tuning_reuses_one_compiled_sampler",),
        failed=("test_sampler.py::test_tuning_reuses_one_compiled_sampler",),
        lines=(
            "*traces of all functions: 3 > limit 1",
            # Labelled with the short name (the full one is in the detailed section).
            "      cause: run_block: function re-defined on every call: "
            "a new run_block object was traced; fix: create and jit it once, outside the loop",
            "*traces of tune_and_sample.<locals>.run_block (defined at "
            "jaxperf_example/sampler.py:*): "
            "baseline 0 -> now 3 (+3)",
            # Its cause said once, above.
            "*compiles of tune_and_sample.<locals>.run_block (defined at *): baseline 0 -> now 3*",
            "  function gone: metropolis *",
        ),
    ),
    # The same results, counts and jaxpr (one loop equation); the compiled program holds a
    # copy of the Newton step per iteration: the baseline's StableHLO ops of the function
    # catch it on any CPU model (its compile time grows about 5x too, not gated here).
    "unrolled": Case(
        select=("tests/test_integration.py::test_quantile_matches_the_closed_form",),
        failed=(),
        lines=(),
        same_jax_failed=("test_integration.py::test_quantile_matches_the_closed_form",),
        same_jax_lines=(
            "*2 metric(s) over the baseline or a limit",
            "*StableHLO ops of gaussian_quantile (defined at jaxperf_example/integration.py:*): "
            "baseline * -> now * (+*, +*%) [static_rtol 0.1]",
            # Named with its line (the scan equation's `unroll`), said once for both sizes.
            "      cause: unrolled fori_loop/scan at jaxperf_example/integration.py:71: unroll= "
            "copies its body into the program per step; fix: drop unroll= (or a small factor)",
            # XLA inlines the step's calls: what it compiles grows about 30x.
            "*optimized HLO ops of gaussian_quantile (defined at *): baseline * -> now *",
        ),
    ),
    "print_in_jit": Case(
        select=("tests/test_side_effects.py",),
        failed=("test_side_effects.py::test_training_logs_every_step_and_traces_once",),
        passed=1,
        lines=(
            "*traces of sgd_step (defined at jaxperf_example/side_effects.py:*): 5 > limit 1",
            "*cause: static argument step changed on 4 of 5 traces: 0, 1, 2, ...; "
            "fix: use a few fixed values (buckets), or pass it as an array",
            "*compiles of sgd_step (defined at *): baseline 1 -> now 5 (+4, +400%)",
        ),
    ),
}


def test_every_regression_has_a_case_and_a_documented_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The example package need not be installed for the plugin's own suite.
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from jaxperf_example.regression import REGRESSIONS

    assert set(CASES) == set(REGRESSIONS)
    readme = (EXAMPLE / "README.md").read_text()
    for name in REGRESSIONS:
        assert f"`{name}`" in readme


@pytest.mark.parametrize("name", sorted(CASES))
def test_regression_fails_the_test_that_guards_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, example: Path, name: str
) -> None:
    case = CASES[name]
    monkeypatch.setenv(VARIABLE, name)
    committed = (example / ".jaxperf" / "baseline.json").read_text()
    result = pytester.runpytest_subprocess(
        *case.select, "--jaxperf", *COUNTS_ONLY, "-p", "no:cacheprovider", "-rf"
    )
    import jax

    same_jax = json.loads(committed)["environment"]["jax"] == jax.__version__
    expected = case.failed + (case.same_jax_failed if same_jax else ())
    passed = case.passed + (0 if same_jax else len(case.same_jax_failed))
    result.assert_outcomes(failed=len(expected), passed=passed)
    failed = {line.split()[1] for line in result.outlines if line.startswith("FAILED ")}
    assert failed == {f"tests/{nodeid}" for nodeid in expected}
    result.stdout.fnmatch_lines(lit(*case.lines))
    if case.same_jax_lines:
        if same_jax:
            result.stdout.fnmatch_lines(lit(*case.same_jax_lines))
        else:
            result.stdout.fnmatch_lines(["*program metrics*not gated: environment differs (jax *"])
    assert (example / ".jaxperf" / "baseline.json").read_text() == committed


def test_runtime_only_slowdown_waits_factor_times_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from jaxperf_example.layer import SlowedSteadyState

    now = [0.0]
    calls: list[float] = []

    def clock() -> float:
        now[0] += 0.001  # every reading takes a millisecond
        return now[0]

    def jitted(x: float) -> float:
        now[0] += 1.0  # the compiled call takes a second
        calls.append(x)
        return x * 2

    jitted.lower = "lower of jitted"  # type: ignore[attr-defined]
    slowed = SlowedSteadyState(jitted, 1.25, clock)
    start = now[0]
    assert slowed(3.0) == 6.0
    assert calls == [3.0]
    assert 1.25 <= now[0] - start <= 1.26  # the call, then a quarter of it waiting
    assert slowed.lower == "lower of jitted"  # the program is the jitted function's
    assert slowed.__wrapped__ is jitted  # type: ignore[attr-defined]


def test_unknown_regression_name_is_a_clear_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, example: Path
) -> None:
    monkeypatch.setenv(VARIABLE, "builtin_summ")
    result = pytester.runpytest_subprocess("tests/test_integration.py", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*ValueError: JAXPERF_EXAMPLE_REGRESSION: unknown regression(s) builtin_summ; *"]
    )
