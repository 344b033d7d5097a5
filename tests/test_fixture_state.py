"""End to end: measuring leaves the user's state alone (scaling's compiles, donated arguments),
and benchmark's setup= gives every timed call fresh arguments."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import lit, read_json

from pytest_jaxperf.measure.timing import TimingConfig, measure_each

pytestmark = pytest.mark.jax_internals

FAST = ("--jaxperf-min-rounds=5", "--jaxperf-max-time=0.05")
HEADER = """
import functools
import time

import jax
import jax.numpy as jnp
import pytest
"""
# The user's suite turns warnings into errors: the plugin's own work must not warn.
STRICT_INI = "[pytest]\naddopts = -p no:cacheprovider\nfilterwarnings = error\n"


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--jaxperf", "--jaxperf-json=out.json", *FAST, *args)


def _record(pytester: pytest.Pytester, test: str) -> Any:
    return read_json(pytester.path / "out.json")["tests"][test]


# -- scaling: a fresh jit per size, the user's function untouched -----------------------------

SCALING = """
@functools.partial(jax.jit, static_argnums=1)
def f(x, k):
    for _ in range(k):
        x = jnp.sin(x) + x
    return x

# Donates an argument that no output can reuse: JAX warns at every compile of it.
@functools.partial(jax.jit, donate_argnums=0)
def total(x):
    return jnp.sum(x * 2)

def test_keeps_cache(jaxperf):
    f(jnp.ones(8), 3)
    result = jaxperf.scaling(f, lambda n: (jnp.ones(n), 3), [8, 16, 32], metric="compile_s")
    assert result.sizes == [8, 16, 32]
    assert all(v > 0 for v in result.values), result.values
    with jaxperf.no_recompile():
        f(jnp.ones(8), 3)

def test_warned_once(jaxperf):
    with pytest.warns(UserWarning, match="Some donated buffers were not usable"):
        total(jnp.ones(8))
    result = jaxperf.scaling(total, lambda n: (jnp.ones(n),), [8, 16], metric="compile_s")
    assert all(v > 0 for v in result.values), result.values
    with jaxperf.no_recompile():
        total(jnp.ones(8))
"""


@pytest.mark.parametrize("on", [True, False])
def test_scaling_compile_s_keeps_the_users_cache(jp: pytest.Pytester, on: bool) -> None:
    jp.makeini(STRICT_INI)
    jp.makepyfile(HEADER + SCALING)
    result = _run(jp) if on else jp.runpytest()
    # Before: clear_cache() made the no_recompile block compile again, and total's second
    # compile repeated the donation warning (an error under filterwarnings = error).
    result.assert_outcomes(passed=2)
    if on:
        # Only the user's own first calls count; scaling's compiles are not the test's.
        for test in ("test_keeps_cache", "test_warned_once"):
            rec = _record(jp, f"test_scaling_compile_s_keeps_the_users_cache.py::{test}")
            assert (rec["traces"], rec["compiles"]) == (1, 1), test


def test_scaling_runtime_of_a_donating_function(jp: pytest.Pytester) -> None:
    jp.makeini(STRICT_INI)
    jp.makepyfile(
        HEADER
        + """
@functools.partial(jax.jit, donate_argnums=0)
def step(x):
    return x * 2 + 1

def test_runtime(jaxperf):
    result = jaxperf.scaling(step, lambda n: (jnp.ones(n),), [8, 16], metric="runtime_s")
    assert all(v > 0 for v in result.values), result.values
    # Nothing was compiled into the user's function: its first call at a size is a compile.
    step(jnp.ones(16))
"""
    )
    _run(jp).assert_outcomes(passed=1)
    rec = _record(jp, "test_scaling_runtime_of_a_donating_function.py::test_runtime")
    assert (rec["traces"], rec["compiles"]) == (1, 1)


# -- benchmark of a function that donates its arguments ---------------------------------------

DONATING = """
@functools.partial(jax.jit, donate_argnums=(0, 1))
def update(x, y):
    return x + 1, y * 2

def test_donated(jaxperf, caplog):
    x = jnp.ones(64)  # uncommitted
    y = jax.device_put(jnp.ones(64), jax.devices()[0])  # committed
    with jax.log_compiles():
        result = jaxperf.benchmark(update, x, y, eager=True)
    # The copies keep each argument's committed-ness: the timed calls compile nothing more
    # (the test's counts cannot tell, the plugin's own calls are not recorded).
    done = "Finished XLA compilation of jit(update)"
    compiled = [m for m in caplog.messages if m.startswith(done)]
    assert len(compiled) == 1, compiled
    # The first call consumed the caller's arguments, exactly as without the plugin.
    assert x.is_deleted() and y.is_deleted()
    assert result.output[0].tolist() == [2.0] * 64
    if jaxperf.enabled:
        # Fresh copies per timed call: one call per round.
        assert result.runtime.iterations == 1 and result.runtime.rounds >= 5
        assert result.eager.iterations == 1 and result.eager.rounds >= 5
"""


def test_benchmark_of_donating_function(jp: pytest.Pytester) -> None:
    jp.makeini(STRICT_INI)
    jp.makepyfile(HEADER + DONATING)
    # Before: "Buffer has been deleted or donated" in the timed rounds.
    _run(jp).assert_outcomes(passed=1)
    rec = _record(jp, "test_benchmark_of_donating_function.py::test_donated")
    assert (rec["traces"], rec["lowerings"], rec["compiles"]) == (1, 1, 1)
    bench = rec["benchmarks"]["update"]
    assert (bench["runtime"]["iterations"], bench["argument_bytes"]) == (1, 512)
    assert bench["eager_median_s"] > 0


# -- timing.measure_each: fresh inputs per call, untimed --------------------------------------


def test_measure_each_times_only_the_calls() -> None:
    # A fake clock: preparing costs 1 s, a call 2**-12 s (exact in binary floating point).
    now = [0.0]
    prepared: list[int] = []

    def prepare() -> int:
        now[0] += 1.0
        prepared.append(len(prepared))
        return prepared[-1]

    def call(inputs: int) -> None:
        assert inputs == prepared[-1]  # each call gets its own, just prepared
        now[0] += 2.0**-12

    config = TimingConfig(min_rounds=7, max_time=0.0, warmup_time=0.0)
    s = measure_each(prepare, call, config, clock=lambda: now[0])
    assert (s.rounds, s.iterations, len(prepared)) == (7, 1, 1 + 7)  # one warm-up call
    assert s.min_s == s.max_s == 2.0**-12


# -- benchmark(setup=...) ---------------------------------------------------------------------

SETUP = """
@functools.partial(jax.jit, donate_argnums=0)
def step(x, scale):
    return x * scale

def test_setup(jaxperf):
    spent = []

    def setup():
        start = time.perf_counter()
        time.sleep(0.01)
        x = jnp.full(32, 3.0)
        spent.append(time.perf_counter() - start)
        return (x,), {"scale": 2.0}

    result = jaxperf.benchmark(step, setup=setup)
    assert result.output.tolist() == [6.0] * 32
    if not jaxperf.enabled:
        assert len(spent) == 1  # one plain call with setup()'s arguments
        return
    runtime = result.runtime
    # A fresh setup() before every call, the first one and the warm-up included.
    assert runtime.iterations == 1 and len(spent) >= runtime.rounds + 2
    # The setup's sleep is not in the timed calls.
    assert runtime.median_s < min(spent)
"""


@pytest.mark.parametrize("on", [True, False])
def test_benchmark_setup_gives_fresh_arguments(jp: pytest.Pytester, on: bool) -> None:
    jp.makeini(STRICT_INI)
    jp.makepyfile(HEADER + SETUP)
    # Before: setup= went on to the function as a keyword argument.
    result = _run(jp) if on else jp.runpytest()
    result.assert_outcomes(passed=1)
    if on:
        rec = _record(jp, "test_benchmark_setup_gives_fresh_arguments.py::test_setup")
        assert (rec["traces"], rec["compiles"]) == (1, 1)
        assert rec["benchmarks"]["step"]["runtime"]["iterations"] == 1


@pytest.mark.parametrize("on", [True, False])
def test_benchmark_setup_misuse(jp: pytest.Pytester, on: bool) -> None:
    jp.makepyfile(
        HEADER
        + """
double = jax.jit(lambda x: x * 2)

def test_bad_return(jaxperf):
    jaxperf.benchmark(double, setup=lambda: (jnp.ones(3),))

def test_list_args(jaxperf):
    jaxperf.benchmark(double, setup=lambda: ([jnp.ones(3)], {}))

def test_both(jaxperf):
    jaxperf.benchmark(double, jnp.ones(3), setup=lambda: ((jnp.ones(3),), {}))
"""
    )
    result = _run(jp) if on else jp.runpytest()
    result.assert_outcomes(failed=3)
    fix = "a tuple and a dict, e.g. `return (x,), {}`; it returned"
    result.stdout.fnmatch_lines(
        lit(
            f"*test_benchmark_setup_misuse.py::test_bad_return: jaxperf.benchmark setup= must "
            f"return (args, kwargs), {fix} tuple",
        )
    )
    result.stdout.fnmatch_lines(lit(f"*::test_list_args: *{fix} (list, dict)"))
    result.stdout.fnmatch_lines(
        lit(
            "*::test_both: jaxperf.benchmark takes arguments or setup=, not both; "
            "return all the arguments from setup()"
        )
    )
