"""End to end: the jaxperf fixture (benchmark, no_recompile, scaling) and the runtime gate."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _jax_releases import UNSTACKS, builtin_sum_eqns
from conftest import lit, read_json

pytestmark = pytest.mark.jax_internals

FAST = ("--jaxperf-min-rounds=5", "--jaxperf-max-time=0.05")
HEADER = """
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--jaxperf", "--jaxperf-json=out.json", *FAST, *args)


def test_benchmark_records_first_call_runtime_and_metrics(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        HEADER
        + """
@jax.jit
def f(x):
    return jnp.sin(x) * 2 + 1

def test_bench(jaxperf):
    result = jaxperf.benchmark(f, jnp.ones(1000), eager=True)
    assert result.runtime.median_s > 0
    assert result.metrics.jaxpr_eqns == 3
    assert float(result.output[0]) == pytest.approx(float(np.sin(1.0) * 2 + 1))
    jaxperf.benchmark(f, jnp.ones(10), label="small", reference=lambda x: np.sin(x) * 2 + 1)
"""
    )
    _run(jp).assert_outcomes(passed=1)
    rec = read_json(jp.path / "out.json")["tests"][
        "test_benchmark_records_first_call_runtime_and_metrics.py::test_bench"
    ]
    # Two benchmarks, two shapes: the measuring and the program metrics add no trace.
    assert (rec["traces"], rec["compiles"]) == (2, 2)
    bench = rec["benchmarks"]["f"]
    assert bench["kind"] == "benchmark"
    assert bench["compiled_on_first_call"] is True
    assert bench["first_call_s"] >= bench["compile_s"] > 0
    assert (bench["jaxpr_eqns"], bench["flops"], bench["transcendentals"]) == (3, 2000, 1000)
    assert (bench["argument_bytes"], bench["output_bytes"]) == (4000, 4000)
    runtime = bench["runtime"]
    assert runtime["rounds"] >= 5 and runtime["iterations"] >= 1
    assert runtime["min_s"] <= runtime["median_s"] <= runtime["max_s"]
    assert len(runtime["samples_s"]) == min(runtime["rounds"], 100)
    assert bench["eager_median_s"] > 0
    assert "break_even_calls" in bench
    assert "device_peak_bytes" not in bench  # CPU reports no device memory
    assert rec["benchmarks"]["small"]["argument_bytes"] == 40


def test_benchmark_label_twice_is_an_error(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        HEADER
        + """
def test_twice(jaxperf):
    f = jax.jit(lambda x: x + 1)
    jaxperf.benchmark(f, jnp.ones(3), label="add")
    jaxperf.benchmark(f, jnp.ones(4), label="add")
"""
    )
    result = _run(jp)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit("*jaxperf label 'add' is used twice in this test; pass a distinct label=...*")
    )


def test_benchmark_is_a_plain_call_when_off(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        HEADER
        + """
def test_off(jaxperf):
    assert not jaxperf.enabled
    result = jaxperf.benchmark(jax.jit(lambda x: x * 3), jnp.ones(2))
    assert result.runtime is None and result.first_call_s is None
    assert result.output.tolist() == [3.0, 3.0]
"""
    )
    jp.runpytest().assert_outcomes(passed=1)


# What the fixture page's example uses, defined as small as it can be.
PAGE_NAMES = """
@jax.jit
def dense(params, x):
    return jnp.tanh(x @ params)

params = jnp.ones((512, 8)) * 0.01
batches = [jnp.ones((256, 512)) * i for i in range(3)]

@jax.jit
def integrate(y):
    return jnp.sum(y) / y.shape[0]
"""


def test_the_fixture_pages_example_runs_with_and_without_jaxperf(jp: pytest.Pytester) -> None:
    page = (Path(__file__).parent.parent / "docs" / "marker-and-fixture.md").read_text()
    example = page.split("## Fixture", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    jp.makepyfile(HEADER + PAGE_NAMES + "\n" + example)
    off = jp.runpytest("-s")
    off.assert_outcomes(passed=1)
    off.stdout.fnmatch_lines(lit(
        "*benchmark 'dense': not measured (pytest ran without --jaxperf); the function ran "
        "once, its return value is .output"
    ))  # fmt: skip
    on = _run(jp, "-s")
    on.assert_outcomes(passed=1)
    on.stdout.fnmatch_lines(
        lit("*benchmark 'dense': first call * s, * us per call (median of * rounds), 2 jaxpr*")
    )


def test_timing_off_skips_steady_state(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        HEADER
        + """
def test_bench(jaxperf):
    result = jaxperf.benchmark(jax.jit(lambda x: x * 3), jnp.ones(2))
    assert result.runtime is None and result.metrics.jaxpr_eqns == 1
"""
    )
    _run(jp, "--jaxperf-timing=off").assert_outcomes(passed=1)


NO_RECOMPILE = """
@jax.jit
def step(x):
    return x * 0.5 + 1

def test_steady_loop(jaxperf):
    x = jnp.ones(8)
    x = step(x)
    with jaxperf.no_recompile():
        for _ in range(20):
            x = step(x)
        jnp.zeros(17) + jnp.arange(17.0)  # eager helper compiles do not count

def test_shape_change(jaxperf):
    step(jnp.ones(8))
    with jaxperf.no_recompile():
        step(jnp.ones(9))
"""


@pytest.mark.parametrize("on", [True, False])
def test_no_recompile(jp: pytest.Pytester, on: bool) -> None:
    jp.makepyfile(HEADER + NO_RECOMPILE)
    result = _run(jp) if on else jp.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*jaxperf.no_recompile: compiled inside the block:",
            "step at test_no_recompile.py:*: 1 trace(s), 1 compile(s)",
            "    cause: x: f32[8] -> f32[9]; fix: pad to a fixed size or a few buckets *",
        )
    )


NO_RECOMPILE_CAUSES = """
@jax.jit
def grow(x):
    return x * 2.0

@jax.jit
def scaled(x, k):
    return x * k

scaled = jax.jit(scaled.__wrapped__, static_argnums=1)

def test_cause_past_the_cap(jaxperf):
    for n in range(1, 13):  # eleven retraces: the test's list of causes is full
        grow(jnp.ones(n))
    with jaxperf.no_recompile():
        grow(jnp.ones(30))

def test_cause_seen_before_the_block(jaxperf):
    scaled(jnp.ones(3), 1)
    scaled(jnp.ones(3), 2)  # static argument k: 1 -> 2
    scaled(jnp.ones(4), 1)  # another cause, the test's latest
    with jaxperf.no_recompile():
        scaled(jnp.ones(4), 2)  # static argument k: 1 -> 2 again
"""


@pytest.mark.parametrize("on", [True, False])
def test_no_recompile_names_the_causes_of_the_block(jp: pytest.Pytester, on: bool) -> None:
    jp.makepyfile(HEADER + NO_RECOMPILE_CAUSES)
    result = _run(jp) if on else jp.runpytest()
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    # The failure sections alone (with CI=true pytest's short summary repeats them whole).
    sections = re.split(r"\n=+ ", out.split("_ test_cause_past_the_cap _")[1])[0] + "\n"
    past_cap, seen_before = sections.split("_ test_cause_seen_before_the_block _")
    # The block's own cause (the previous shape: f32[12] with --jaxperf, whichever cached
    # one JAX names without), not the last the test remembered (x: f32[10] -> f32[11]).
    assert "grow at test_no_recompile_names_the_causes_of_the_block.py:" in past_cap
    block_cause = r"1 trace\(s\), 1 compile\(s\)\n    cause: x: f32\[1[02]\] -> f32\[30\]; fix: pad"
    assert re.search(block_cause, past_cap)
    assert past_cap.count("cause:") == 1
    assert (
        "1 trace(s), 1 compile(s)\n    cause: static argument k: 1 -> 2; fix: use a few fixed "
        "values (buckets), or pass it as an array\n"
    ) in seen_before
    assert seen_before.count("cause:") == 1


def test_scaling_tells_builtin_sum_from_jnp_sum(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        HEADER
        + """
SIZES = [50, 100, 200, 400]

def make(n):
    return (jnp.ones(n),)

def test_jnp_sum(jaxperf):
    result = jaxperf.scaling(jnp.sum, make, SIZES, max_exponent=0.2)
    assert result.values == [1.0, 1.0, 1.0, 1.0] and result.exponent == 0.0

def test_builtin_sum(jaxperf):
    jaxperf.scaling(lambda x: sum(x), make, SIZES, max_exponent=0.5, label="builtin")

def test_at_set_loop(jaxperf):
    def double_each(x):
        for i in range(x.shape[0]):
            x = x.at[i].set(x[i] * 2)
        return x
    jaxperf.scaling(double_each, make, [10, 20, 40], metric="hlo_ops", max_exponent=0.5)

def test_bad_metric(jaxperf):
    jaxperf.scaling(jnp.sum, make, SIZES, metric="seconds")
"""
    )
    result = _run(jp)
    result.assert_outcomes(passed=1, failed=3)
    # 3n equations grow with exponent 1.00 exactly; n+1 with 0.99 over these sizes.
    exponent = "0.99" if UNSTACKS else "1.00"
    result.stdout.fnmatch_lines(
        lit(
            f"*jaxperf.scaling: jaxpr_eqns of <lambda> grows with exponent {exponent} > "
            "max_exponent 0.5",
            "      size  jaxpr_eqns",
            *(f"{n:>10}  {builtin_sum_eqns(n)}" for n in (50, 100, 200, 400)),
        )
    )
    result.stdout.fnmatch_lines(lit("*hlo_ops of double_each grows with exponent *"))
    result.stdout.fnmatch_lines(
        lit("*'seconds' is unknown; expected one of jaxpr_eqns, hlo_ops, compile_s, runtime_s")
    )
    data = read_json(jp.path / "out.json")["tests"]
    points = data["test_scaling_tells_builtin_sum_from_jnp_sum.py::test_jnp_sum"]["benchmarks"]
    assert points["scaling:sum"]["exponent"] == 0.0
    # The scaling work itself is not charged to the test's counts.
    assert data["test_scaling_tells_builtin_sum_from_jnp_sum.py::test_jnp_sum"]["traces"] == 0


def test_program_metric_limit_and_gate(jp: pytest.Pytester) -> None:
    code = (
        HEADER
        + """
N = 64

@jax.jit
def total(x):
    return {expr}

@pytest.mark.jaxperf(max_jaxpr_eqns={limit})
def test_total(jaxperf):
    jaxperf.benchmark(total, jnp.ones(N))
"""
    )
    jp.makepyfile(test_m=code.format(expr="jnp.sum(x)", limit=1000))
    _run(jp, "--jaxperf-save").assert_outcomes(passed=1)
    jp.makepyfile(test_m=code.format(expr="sum(x)", limit=1000))
    result = _run(jp, "--jaxperf-timing=off")
    result.assert_outcomes(failed=1)
    now = builtin_sum_eqns(64)  # 192, or 65 from jax 0.11 on
    # Over +1000%: a ratio. The benchmark's equations are its function's: one line.
    grew = f"+{now - 1}, x{now}"
    result.stdout.fnmatch_lines(
        lit(f"*jaxpr equations of total (defined at *): baseline 1 -> now {now} ({grew}) [stat*")
    )
    assert "jaxpr equations of benchmark 'total': baseline" not in result.stdout.str()
    jp.makepyfile(test_m=code.format(expr="sum(x)", limit=50))
    result = _run(jp, "--jaxperf-timing=off", "--jaxperf-save")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(lit(f"*jaxpr equations of benchmark 'total': {now} > limit 50"))


RUNTIME = """
import jax
import jax.numpy as jnp
from jax import lax

REPEAT = {repeat}

@jax.jit
def work(x):
    return lax.fori_loop(0, REPEAT, lambda i, v: jnp.sin(v) * 0.5 + 0.25, x)

def test_runtime(jaxperf):
    jaxperf.benchmark(work, jnp.ones(4096))
"""


def test_runtime_gate(jp: pytest.Pytester) -> None:
    # Compile time is not this test's subject: keep it out of the verdict.
    # runtime_rtol 1 rather than the default 0.75: pytester's in-process runs share this
    # process's CPU client, built with asynchronous dispatch (its CPU seconds include the
    # spin-wait), and this suite runs beside a second xdist worker.
    timing = (
        "--jaxperf-min-rounds=30",
        "--jaxperf-max-time=0.3",
        "--jaxperf-compile-floor=1000",
        "--jaxperf-runtime-rtol=1",
    )
    jp.makepyfile(test_rt=RUNTIME.format(repeat=20))
    jp.runpytest("--jaxperf", "--jaxperf-save", *timing).assert_outcomes(passed=1)
    # No exit code here depends on a timing verdict (this suite runs beside a second xdist
    # worker, valgrind's runs included: unchanged code has read +122% under it). Whether the
    # gate fails a slowdown is checked on fixed samples in test_benchmark_gates.py; here the
    # runtime is reported only, so that the wording and the rest of the verdict are checked.
    unchanged = jp.runpytest("--jaxperf", "--jaxperf-timing=report", *timing)
    unchanged.assert_outcomes(passed=1)
    unchanged.stdout.fnmatch_lines(lit("jaxperf: 0 regressions, *"))
    # The wording of a breach that is reported only; 32x the work, so that a second
    # measurement under this suite's load still shows it.
    jp.makepyfile(test_rt=RUNTIME.format(repeat=640))
    result = jp.runpytest("--jaxperf", "--jaxperf-timing=report", "--junitxml=junit.xml", *timing)
    result.assert_outcomes(passed=1)
    # Shown but not gated, in the same words everywhere; nothing was saved.
    result.stdout.fnmatch_lines(
        lit(
            "test_rt.py::test_runtime * reported only",
            "reported only: test_rt.py::test_runtime: runtime of benchmark 'work': baseline * ->"
            " now * (+*, *) [median, runtime_rtol 1, Mann-Whitney p=*]",
            "jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated, 1 reported only",
        )
    )
    result.stdout.no_fnmatch_line("*saving*")
    assert 'name="jaxperf_status" value="reported only"' in (jp.path / "junit.xml").read_text()
