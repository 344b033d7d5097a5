"""CPU seconds beside wall seconds: recorded per phase and per timed round, compile time and
runtime gated on the CPU clock by default, wall clock on request, old baselines on wall."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import pytest
from _jaxperf_data import with_runtime
from _records import fn, rec
from conftest import read_json
from test_benchmark_gates import TOL, bench, steady

from pytest_jaxperf.compare import COMPILE_TIME, RUNTIME, Gating, evaluate
from pytest_jaxperf.config import MarkerLimits
from pytest_jaxperf.measure.timing import TimingConfig, measure, summarize
from pytest_jaxperf.model import (
    CPU_FIELDS,
    FIRST_CALL_FIELDS,
    SCHEMA,
    BenchmarkEntry,
    RecordedTest,
    runtime_to_json,
)

pytestmark = pytest.mark.jax_internals

WALL = dataclasses.replace(TOL, compile_clock="wall", runtime_clock="wall")


def _judge(now: RecordedTest, before: RecordedTest, tol: Any = TOL, limits: Any = None) -> Any:
    return evaluate(now, before, limits or MarkerLimits(), Gating(tol))


# -- compile time ---------------------------------------------------------------------------


def test_compile_time_under_load_passes_on_cpu_and_fails_on_wall() -> None:
    # Wall seconds tripled (other processes on the cores), CPU seconds unchanged.
    before = rec(fn("f", "m.py:3", compile_s=0.4, cpu=1.0))
    now = rec(fn("f", "m.py:3", compile_s=1.2, cpu=1.0 / 3))
    assert not _judge(now, before).failed
    out = _judge(now, before, WALL)
    (b,) = out.breaches
    assert (b.metric, b.reference, b.current) == (COMPILE_TIME, 0.4, 1.2)
    assert b.detail == "wall seconds, rtol 1, floor 0.1 s"


def test_compile_time_that_really_grew_fails_on_cpu() -> None:
    before = rec(fn("f", "m.py:3", compile_s=0.4, cpu=1.0))
    now = rec(fn("f", "m.py:3", compile_s=1.2, cpu=1.0))
    (b,) = _judge(now, before).breaches
    assert (b.metric, b.reference, b.current) == (COMPILE_TIME, 0.4, pytest.approx(1.2))
    assert b.detail.startswith("cpu seconds")
    assert b.reasons[0].startswith("f at m.py:3: 0.400 s -> 1.200 s (wall: ")


def test_marker_compile_clock_overrides_the_default() -> None:
    before = rec(fn("f", "m.py:3", compile_s=0.4, cpu=1.0))
    now = rec(fn("f", "m.py:3", compile_s=1.2, cpu=1.0 / 3))
    assert _judge(now, before, limits=MarkerLimits(compile_clock="wall")).failed
    # max_compile_time reads the same clock.
    limit = MarkerLimits(max_compile_time=0.5)
    assert not evaluate(now, None, limit, Gating(TOL)).failed
    assert evaluate(now, None, limit, Gating(WALL)).failed


def test_baseline_without_cpu_seconds_is_gated_on_wall_with_a_note() -> None:
    before = rec(fn("f", "m.py:3", compile_s=0.4, cpu=None))
    now = rec(fn("f", "m.py:3", compile_s=1.2, cpu=1.0 / 3))
    out = _judge(now, before)
    assert [b.detail for b in out.breaches] == ["wall seconds, rtol 1, floor 0.1 s"]
    assert any(
        n.startswith("compile time gated on wall seconds: the baseline has no CPU")
        for n in out.info
    )
    assert not out.notes  # gated all the same, on the other clock


# -- runtime --------------------------------------------------------------------------------


def _with_cpu(entry: BenchmarkEntry, cpu_median: float) -> BenchmarkEntry:
    return with_runtime(entry, cpu_median_s=cpu_median)


def test_runtime_slower_on_the_wall_only_is_load_on_the_cpu_clock() -> None:
    before = RecordedTest(benchmarks={"mm": _with_cpu(bench(steady(1e-3)), 1e-3)})
    now = RecordedTest(benchmarks={"mm": _with_cpu(bench(steady(3e-3)), 1.1e-3)})
    out = _judge(now, before)
    assert not out.breaches
    assert out.notes == [
        "runtime of mm median +200% but its CPU time per call only +10%: machine load, not "
        "gated (--jaxperf-runtime-clock=wall gates on wall time alone)"
    ]
    (b,) = _judge(now, before, WALL).breaches
    assert b.metric == RUNTIME


def test_runtime_slower_in_cpu_time_too_fails() -> None:
    before = RecordedTest(benchmarks={"mm": _with_cpu(bench(steady(1e-3)), 1e-3)})
    now = RecordedTest(benchmarks={"mm": _with_cpu(bench(steady(3e-3)), 3e-3)})
    (b,) = _judge(now, before).breaches
    assert (b.metric, b.gated) == (RUNTIME, True)


def test_runtime_without_cpu_seconds_keeps_the_wall_rule() -> None:
    # An accelerator, or a baseline from before CPU seconds: wall time decides.
    before = RecordedTest(benchmarks={"mm": bench(steady(1e-3))})
    now = RecordedTest(benchmarks={"mm": _with_cpu(bench(steady(3e-3)), 1e-3)})
    (b,) = _judge(now, before).breaches
    assert b.metric == RUNTIME


def test_measure_reads_the_cpu_clock_per_round() -> None:
    ticks = iter(range(10**6))
    cpu_ticks = iter(range(0, 10**7, 3))

    def clock() -> float:
        return next(ticks) * 1e-3

    def cpu() -> float:
        return next(cpu_ticks) * 1e-3

    stats = measure(lambda: None, TimingConfig(min_rounds=5, max_time=0.0), clock, cpu)
    assert stats.rounds == 5
    assert stats.cpu_median_s is not None and stats.cpu_median_s > 0
    assert "cpu_median_s" in runtime_to_json(stats)
    plain = measure(lambda: None, TimingConfig(min_rounds=5, max_time=0.0), clock)
    assert plain.cpu_median_s is None and "cpu_median_s" not in runtime_to_json(plain)
    assert summarize([1.0, 2.0], 1, [0.5, 0.7]).cpu_median_s == pytest.approx(0.6)


# -- end to end -----------------------------------------------------------------------------

SRC = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def f(x):
    for _ in range(40):
        x = jnp.sin(x) * 2 + 1
    return x

@pytest.mark.jaxperf
def test_f(jaxperf):
    f(jnp.ones(3)); f(jnp.ones(4))
    jaxperf.benchmark(f, jnp.ones(8), label="f8")
"""


def test_cpu_seconds_are_recorded_beside_wall_seconds(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_mod=SRC)
    result = jp.runpytest("--jaxperf", "--jaxperf-json=out.json", "-rA")
    assert result.ret == 0, result.stdout.str()
    data = read_json(jp.path / "out.json")
    assert data["schema"] == SCHEMA
    test = data["tests"]["test_mod.py::test_f"]
    (f,) = [v for v in test["functions"].values() if v["name"] == "f"]
    cores = os.cpu_count() or 1
    for entry in (f, test):
        for cpu_name in CPU_FIELDS:
            wall_name = cpu_name.replace("_cpu", "")
            cpu, wall = entry[cpu_name], entry[wall_name]
            assert isinstance(cpu, float) and cpu >= 0, cpu_name
            # 5 ms of slack: the two clocks tick at different resolutions.
            assert cpu <= wall * cores + 5e-3, (cpu_name, cpu, wall)
    assert f["compile_cpu_s"] > 0
    runtime = test["benchmarks"]["f8"]["runtime"]
    assert runtime["cpu_median_s"] > 0
    result.stdout.fnmatch_lines(
        ["f at test_mod.py:*cpu=*s jaxpr_eqns=* hlo_ops=*", "*cpu * per call*", "*cpu s*"]
    )


def test_old_baseline_without_cpu_seconds_is_read_and_gated_on_wall(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_mod=SRC)
    jp.runpytest("--jaxperf", "--jaxperf-save", "--jaxperf-json=run.json").assert_outcomes(
        passed=1
    )
    path = jp.path / ".jaxperf" / "baseline.json"
    # Every field of each entry, as a /1 baseline held them (a baseline now keeps only what
    # the gate reads: no wall seconds beside CPU seconds, say).
    data = {**read_json(path), "tests": read_json(jp.path / "run.json")["tests"]}
    data["schema"] = "pytest-jaxperf/1"

    def strip(entry: dict[str, Any]) -> None:
        for name in CPU_FIELDS:
            del entry[name]

    for test in data["tests"].values():
        strip(test)
        strip(test["eager"])
        for fn_entry in test["functions"].values():
            strip(fn_entry)
        for bench_entry in test["benchmarks"].values():  # a /1 file has its first call's
            bench_entry.update(dict.fromkeys(FIRST_CALL_FIELDS, 0.01))
    path.write_text(json.dumps(data), encoding="utf-8")
    # No timing verdict: wall seconds on a shared machine are what this gate is about.
    result = jp.runpytest(
        "--jaxperf", "-rA", "--jaxperf-timing=off", "--jaxperf-compile-floor=1000"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*note: compile time gated on wall seconds: the baseline has no CPU*",
            # Nor has it program sizes (schema /4).
            "jaxperf: program sizes of 1 test not gated: the baseline has none*",
            "jaxperf: 0 regressions, 0 improvements, 0 new, 1 not gated",
        ]  # fmt: skip
    )
    # Saving again writes the newest schema, with CPU seconds.
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=1)
    assert read_json(path)["schema"] == SCHEMA


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--jaxperf-compile-clock=process"],
            "--jaxperf-compile-clock: expected one of cpu, wall, instructions, got 'process'",
        ),
        (
            ["--jaxperf-runtime-clock=WALLTIME"],
            "--jaxperf-runtime-clock: expected one of cpu, wall, instructions, got 'WALLTIME'",
        ),
    ],
)
def test_unknown_clock_is_a_usage_error(jp: pytest.Pytester, args: list[str], message: str) -> None:
    jp.makepyfile(test_mod=SRC)
    result = jp.runpytest("--jaxperf", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


def test_wrong_marker_clock_is_a_usage_error(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        test_mod=SRC.replace("@pytest.mark.jaxperf", "@pytest.mark.jaxperf(compile_clock='gpu')")
    )
    result = jp.runpytest("--jaxperf")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*jaxperf(compile_clock=...) expects one of 'cpu', 'wall', 'instructions', got 'gpu'*"]
    )


# -- CPU dispatch: the runtime CPU clock counts work, not a spin-wait ------------------------

DISPATCH_SRC = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def f(x):
    return jnp.sin(x) * 2

@pytest.mark.jaxperf
def test_f(jaxperf):
    jaxperf.benchmark(f, jnp.ones(8), label="f8")
    print("async dispatch:", jax.config.read("jax_cpu_enable_async_dispatch"))
"""


def _dispatch_run(jp: pytest.Pytester, *args: str) -> pytest.RunResult:
    """DISPATCH_SRC in a fresh process, where JAX builds its CPU client after
    pytest_configure (in-process runs share this process's client)."""
    jp.makepyfile(test_mod=DISPATCH_SRC)
    result = jp.runpytest_subprocess("--jaxperf", "-s", *args)
    assert result.ret == 0, result.stdout.str()
    return result


def test_cpu_runtime_clock_makes_cpu_dispatch_synchronous(jp: pytest.Pytester) -> None:
    result = _dispatch_run(jp, "--jaxperf-json=out.json")
    result.stdout.fnmatch_lines(["*async dispatch: False*"])
    result.stdout.no_fnmatch_line("*CPU dispatch left asynchronous*")
    assert read_json(jp.path / "out.json")["environment"]["cpu_dispatch"] == "sync"


def test_cpu_dispatch_left_alone_is_said_in_the_header(jp: pytest.Pytester) -> None:
    # A conftest that computes at import builds the CPU client before the plugin can act.
    jp.makeconftest("import jax.numpy as jnp\nWARM = jnp.ones(2) + 1\n")
    result = _dispatch_run(jp, "--jaxperf-json=out.json")
    result.stdout.fnmatch_lines(
        [
            "jaxperf: CPU dispatch left asynchronous (JAX's backends were initialised before "
            "pytest_configure (by a conftest?)): on the CPU backend, runtime CPU seconds "
            "include the caller's wait and grow with machine load",
            "*async dispatch: True*",
        ]
    )
    assert read_json(jp.path / "out.json")["environment"]["cpu_dispatch"] == "async"


def test_wall_runtime_clock_leaves_cpu_dispatch_alone(jp: pytest.Pytester) -> None:
    result = _dispatch_run(jp, "--jaxperf-runtime-clock=wall")
    result.stdout.fnmatch_lines(["*async dispatch: True*"])
    result.stdout.no_fnmatch_line("*CPU dispatch left asynchronous*")


def test_timings_are_not_compared_across_cpu_dispatch_modes() -> None:
    from pytest_jaxperf.environment import timing_differences

    sync, run_async = {"backend": "cpu", "cpu_dispatch": "sync"}, {"backend": "cpu"}
    run_async["cpu_dispatch"] = "async"
    assert timing_differences(sync, run_async) == ["cpu_dispatch sync -> async"]
    # A report from before the field (or an accelerator's) is compared as before.
    assert timing_differences({"backend": "cpu"}, sync) == []
    assert timing_differences(sync, {"backend": "cpu"}) == []
