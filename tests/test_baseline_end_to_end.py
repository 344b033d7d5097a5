"""End to end: saving a baseline, gating against it, and the failure messages."""

from __future__ import annotations

import json
import re

import pytest
from conftest import lit, read_json

from pytest_jaxperf.storage.store import format_json

SRC = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def f(x):
    return x * 2

@pytest.mark.jaxperf
def test_f():
    {body}

@pytest.mark.jaxperf
def test_other():
    f(jnp.ones(2))
"""


# These tests are about counts: compile time under this suite's own load is not their subject.
COUNTS_ONLY = ("--jaxperf-compile-floor=1000",)


def _save(jp: pytest.Pytester, body: str, *args: str) -> pytest.RunResult:
    jp.makepyfile(test_mod=SRC.format(body=body))
    return jp.runpytest("--jaxperf", "--jaxperf-save", *args)


def test_extra_retrace_fails_with_cause(jp: pytest.Pytester) -> None:
    _save(jp, "f(jnp.ones(3)); f(jnp.ones(3))").assert_outcomes(passed=2)
    baseline = jp.path / ".jaxperf" / "baseline.json"
    saved = baseline.read_text()
    jp.makepyfile(test_mod=SRC.format(body="f(jnp.ones(3)); f(jnp.ones(4))"))
    result = jp.runpytest("--jaxperf", "--junitxml=junit.xml", *COUNTS_ONLY)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*jaxperf: test_mod.py::test_f: * metric(s) over the baseline or a limit",
            "*traces of f (defined at test_mod.py:5): baseline 1 -> now 2 (+1, +100%)",
            "*cause: x: f32[3] -> f32[4]; fix: pad to a fixed size or a few buckets*",
            "*compiles of f (defined at test_mod.py:5): baseline 1 -> now 2*",
            "*update it with --jaxperf-save*",
            "test_mod.py::test_f * REGRESSED",
            "jaxperf: 1 regression, 0 improvements, 0 new, 0 not gated",
        )
    )
    assert 'failures="1"' in (jp.path / "junit.xml").read_text()
    assert baseline.read_text() == saved  # gating never writes the baseline


RED, BOLD, GREEN = "\x1b[31m", "\x1b[1m", "\x1b[32m"


def test_regressions_in_colour_as_pytest_colours_failures(jp: pytest.Pytester) -> None:
    _save(jp, "f(jnp.ones(3))").assert_outcomes(passed=2)
    jp.makepyfile(test_mod=SRC.format(body="f(jnp.ones(3)); f(jnp.ones(4))"))
    coloured = jp.runpytest("--jaxperf", "--color=yes", *COUNTS_ONLY)
    coloured.assert_outcomes(passed=1, failed=1)
    lines = coloured.outlines
    regressed = next(x for x in lines if "test_mod.py::test_f " in x and "REGRESSED" in x)
    ok = next(x for x in lines if "test_mod.py::test_other " in x)
    tally = next(x for x in lines if "jaxperf: 1 regression" in x)
    assert RED in regressed and BOLD in regressed
    assert RED not in ok and GREEN not in ok
    assert RED in tally
    plain = jp.runpytest("--jaxperf", "--color=no", *COUNTS_ONLY)
    assert not [x for x in plain.outlines if "\x1b[" in x]
    # Nothing regressed: the tally in green.
    _save(jp, "f(jnp.ones(3))").assert_outcomes(passed=2)
    calm = jp.runpytest("--jaxperf", "--color=yes", *COUNTS_ONLY)
    assert GREEN in next(x for x in calm.outlines if "jaxperf: 0 regressions" in x)


def test_unchanged_code_passes_and_fewer_traces_is_an_improvement(jp: pytest.Pytester) -> None:
    _save(jp, "f(jnp.ones(3)); f(jnp.ones(4))").assert_outcomes(passed=2)
    jp.runpytest("--jaxperf", *COUNTS_ONLY).assert_outcomes(passed=2)
    jp.makepyfile(test_mod=SRC.format(body="f(jnp.ones(3)); f(jnp.ones(3))"))
    result = jp.runpytest("--jaxperf", *COUNTS_ONLY)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(lit("test_mod.py::test_f * improved*", "*1 improvement*"))


def test_builtin_sum_caught_by_compile_time(jp: pytest.Pytester) -> None:
    code = """
import jax
import jax.numpy as jnp
import pytest

N = 1200

@jax.jit
def integrate(x):
    return {expr} / N

@pytest.mark.jaxperf
def test_integrate():
    integrate(jnp.linspace(0.0, 1.0, N))
"""
    jp.makepyfile(test_int=code.format(expr="jnp.sum(x)"))
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=1)
    jp.makepyfile(test_int=code.format(expr="sum(x)"))
    result = jp.runpytest("--jaxperf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            # A percentage, or past +1000% a ratio ("x14").
            "*compile time of all functions: baseline * s -> now * s (+* s, *) "
            "[cpu seconds, rtol 1, floor 0.1 s; not re-measured: the test fails on other "
            "metrics too]"
        )
    )
    # Same counts: only the compile time betrays the unrolled loop.
    result.stdout.no_fnmatch_line("*traces of integrate*")


def test_environment_mismatch_is_reported_not_gated(jp: pytest.Pytester) -> None:
    _save(jp, "f(jnp.ones(3))").assert_outcomes(passed=2)
    path = jp.path / ".jaxperf" / "baseline.json"
    data = read_json(path)
    data["environment"]["jax"] = "0.0.1"
    for rec in data["tests"].values():
        rec["trace_s"] = rec["lower_s"] = rec["compile_s"] = 0.0
    path.write_text(json.dumps(data))
    result = jp.runpytest("--jaxperf", "-rA")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        lit("*compile time not gated: environment differs (jax 0.0.1 -> *)*", "*2 not gated*")
    )
    # Said after the table, with how many tests it concerns, not only counted in the tally.
    result.stdout.fnmatch_lines(
        [
            "jaxperf: compile time of 2 tests not gated: environment differs (jax 0.0.1 -> *) *",
            "jaxperf: 0 regressions, 0 improvements, 0 new, 2 not gated",
        ]
    )


def test_table_shows_compile_time_growth_that_was_not_gated(jp: pytest.Pytester) -> None:
    """A baseline from a foreign environment whose compile seconds are 100 times smaller: the
    gate leaves compile time out, and the table says how it moved instead of "="."""
    _save(jp, "f(jnp.ones(3))").assert_outcomes(passed=2)
    path = jp.path / ".jaxperf" / "baseline.json"
    data = read_json(path)
    data["environment"]["jax"] = "0.0.1"
    for entry in data["tests"].values():
        for counts in [entry, *entry["functions"].values()]:
            for key in [k for k in counts if k.endswith("_s")]:
                counts[key] /= 100
    path.write_text(json.dumps(data))
    # Floor 0: the growth of a small program's compile (hundredths of a second) counts.
    result = jp.runpytest("--jaxperf", "--jaxperf-compile-floor=0")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["test_mod.py::test_f * compile x* (not gated) *ok (not gated)"])
    row = next(line for line in result.outlines if line.startswith("test_mod.py::test_f "))
    assert re.search(r"  compile x\d+ \(not gated\)  ", row), row


def test_partial_save_keeps_other_entries_and_failed_entries(jp: pytest.Pytester) -> None:
    _save(jp, "f(jnp.ones(3))").assert_outcomes(passed=2)
    path = jp.path / ".jaxperf" / "baseline.json"
    before = read_json(path)["tests"]
    # test_other changes and is re-saved alone; test_f's entry must survive.
    jp.makepyfile(
        test_mod=SRC.format(body="f(jnp.ones(3))").replace(
            "f(jnp.ones(2))\n", "f(jnp.ones(2)); f(jnp.ones(5))\n"
        )
    )
    jp.runpytest("--jaxperf", "--jaxperf-save", "-k", "test_other").assert_outcomes(passed=1)
    after = read_json(path)["tests"]
    assert after["test_mod.py::test_f"] == before["test_mod.py::test_f"]
    assert after["test_mod.py::test_other"]["traces"] == 2
    # A failing test's entry is not overwritten.
    jp.makepyfile(test_mod=SRC.format(body="f(jnp.ones(9)); f(jnp.ones(10)); assert False"))
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=1, failed=1)
    assert read_json(path)["tests"]["test_mod.py::test_f"] == before["test_mod.py::test_f"]


def test_save_reports_but_does_not_fail_limits_still_do(jp: pytest.Pytester) -> None:
    _save(jp, "f(jnp.ones(3))").assert_outcomes(passed=2)
    jp.makepyfile(
        test_mod=SRC.format(body="f(jnp.ones(3)); f(jnp.ones(4))")
        + """
@pytest.mark.jaxperf(max_traces=1)
def test_limited():
    f(jnp.ones(6)); f(jnp.ones(7))
"""
    )
    result = jp.runpytest("--jaxperf", "--jaxperf-save")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "*traces of all functions: 2 > limit 1*",
            "reported only: test_mod.py::test_f: traces of f *baseline 1 -> now 2*",
        )
    )
    saved = read_json(jp.path / ".jaxperf" / "baseline.json")["tests"]
    assert saved["test_mod.py::test_f"]["traces"] == 2
    assert "test_mod.py::test_limited" not in saved


def test_json_report_format(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_mod=SRC.format(body="f(jnp.ones(3))"))
    jp.runpytest("--jaxperf", "--jaxperf-json=reports/run.json").assert_outcomes(passed=2)
    text = (jp.path / "reports" / "run.json").read_text()
    data = json.loads(text)
    assert data["schema"] == "pytest-jaxperf/7"
    assert set(data["environment"]) >= {
        "jax", "jaxlib", "python", "backend", "device_kind", "device_count", "x64",
    }  # fmt: skip
    rec = data["tests"]["test_mod.py::test_f"]
    assert rec["outcome"] == "passed"
    assert set(rec) >= {"traces", "lowerings", "compiles", "trace_s", "lower_s", "compile_s"}
    assert text == format_json(data) + "\n"  # sorted keys, the file layout
    assert not (jp.path / ".jaxperf").exists()  # no baseline written without --jaxperf-save


def test_marker_limits_without_baseline(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        """
import functools
import jax
import jax.numpy as jnp
import pytest

@functools.partial(jax.jit, static_argnames="n")
def g(x, n):
    return x * n

@pytest.mark.jaxperf(max_traces={"g": 1}, max_compiles=5)
def test_dict_limit():
    g(jnp.ones(3), n=2); g(jnp.ones(3), n=3)

@pytest.mark.jaxperf(max_traces=2, max_compile_time=1000)
def test_within():
    g(jnp.ones(3), n=2); g(jnp.ones(3), n=3)

@pytest.mark.jaxperf(max_compile_time=0)
def test_compile_time():
    g(jnp.ones(3), n=2)
"""
    )
    result = jp.runpytest("--jaxperf")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        lit(
            "*traces of g (defined at test_marker_limits_without_baseline.py:6): 2 > limit 1",
            "*cause: static argument n: 2 -> 3; fix: *",
            "*compile time of all functions: * s > limit 0.000 s*",
        )
    )


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            "max_trace=1",
            "unknown argument 'max_trace' (did you mean 'max_traces'?); expected "
            "one of max_traces*",
        ),
        ("speedy=1", "unknown argument 'speedy'; expected one of max_traces*"),
        ("max_traces=-1", "max_traces=...) expects a whole number >= 0*got -1"),
        ("max_traces=1.5", "max_traces=...) expects a whole number >= 0*got 1.5"),
        ("max_compile_time='fast'", "max_compile_time=...) expects a number >= 0*'fast'"),
        ("max_traces={'f': -2}", "max_traces=...): the limit for 'f' must be a whole number*"),
        ("max_traces={}", "max_traces=...): the dict is empty, so it limits nothing; *"),
        ("max_hlo_ops={3: 1}", "max_hlo_ops=...): key 3 is not a function name or benchmark*"),
        # The other gated program sizes: a benchmark's metrics, the executables' ops.
        (
            "max_temp_bytes=-1",
            "max_temp_bytes=...) expects a number >= 0 for each benchmark or a dict "
            "{benchmark_label: limit}, got -1",
        ),
        ("max_flops='many'", "max_flops=...) expects a number >= 0 for each benchmark*'many'"),
        ("max_peak_bytes=True", "max_peak_bytes=...) expects a number >= 0*got True"),
        ("max_bytes_accessed={'b': -1}", "max_bytes_accessed=...): the limit for 'b' must be*"),
        ("max_xla_ops=2.5", "max_xla_ops=...) expects a whole number >= 0*got 2.5"),
        (
            "max_temp_byte=1",
            "unknown argument 'max_temp_byte' (did you mean 'max_temp_bytes'?); expected*",
        ),
        # max_time is the time budget of every benchmark, not a limit: one number only.
        (
            "max_time={'f': 0.1}",
            "max_time=...) expects a number >= 0 (seconds of timed rounds"
            " per benchmark; one number for every benchmark of the test), got {'f': 0.1}",
        ),
        ("max_time={}", "max_time=...) expects a number >= 0 (seconds of timed rounds*got {}"),
        ("max_time=-1", "max_time=...) expects a number >= 0 (seconds of timed rounds*got -1"),
        ("rounds=0", "rounds=...) expects a whole number >= 1 (timed rounds per benchmark*got 0"),
        ("compile_rtol={'f': 1}", "compile_rtol=...) expects a number >= 0, got {'f': 1}"),
        ("3", "takes keyword arguments only*"),
    ],
)
def test_bad_marker_arguments(jp: pytest.Pytester, marker: str, message: str) -> None:
    jp.makepyfile(
        f"""
import pytest

@pytest.mark.jaxperf({marker})
def test_x():
    pass
"""
    )
    line = f"ERROR: test_bad_marker_arguments.py::test_x: *{message}"
    # Without --jaxperf too: a typo must not pass silently until the plugin is turned on.
    for args in (["--jaxperf"], []):
        result = jp.runpytest(*args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(lit(line))
        assert "jaxperf: no test was recorded" not in result.stdout.str()  # the error alone


def test_per_test_tolerance_overrides_default(jp: pytest.Pytester) -> None:
    _save(jp, "f(jnp.ones(3))").assert_outcomes(passed=2)
    path = jp.path / ".jaxperf" / "baseline.json"
    data = read_json(path)
    for rec in data["tests"].values():  # pretend compiling used to be instantaneous
        rec["trace_s"] = rec["lower_s"] = rec["compile_s"] = 1e-6
        rec["trace_cpu_s"] = rec["lower_cpu_s"] = rec["compile_cpu_s"] = 1e-6
    path.write_text(json.dumps(data))
    jp.runpytest("--jaxperf", "--jaxperf-compile-floor=1000").assert_outcomes(passed=2)
    jp.runpytest("--jaxperf", "--jaxperf-compile-floor=0").assert_outcomes(failed=2)
    jp.makepyfile(
        test_mod=SRC.format(body="f(jnp.ones(3))").replace(
            "@pytest.mark.jaxperf\ndef test_f",
            "@pytest.mark.jaxperf(compile_floor=1000)\ndef test_f",
        )
    )
    jp.runpytest("--jaxperf", "--jaxperf-compile-floor=0").assert_outcomes(passed=1, failed=1)


LIMITS_BY_NAME = """
import functools
import jax
import jax.numpy as jnp
import pytest

@functools.partial(jax.jit, static_argnames="step")
def sgd_step(w, step):
    return w - 0.1 * step

def train():
    w = jnp.ones(3)
    for step in range(5):  # a static argument: one trace per step
        w = sgd_step(w, step=step)

@pytest.mark.jaxperf(max_traces={"sgd_stpe": 1})
def test_misspelt():
    train()

@pytest.mark.jaxperf(max_traces={"sgd_step": 5}, max_compiles={"sgd_step at test_mod.py:6": 5})
def test_by_name_and_by_key():
    train()

@pytest.mark.jaxperf(max_traces={"sgd_step": 4})
def test_over():
    train()

@pytest.mark.jaxperf(max_jaxpr_eqns={"sgd_stp": 100})
def test_misspelt_label(jaxperf):
    jaxperf.benchmark(sgd_step, jnp.ones(3), step=1)
"""


def test_limit_naming_nothing_the_test_ran_fails_naming_it(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_mod=LIMITS_BY_NAME)
    result = jp.runpytest("--jaxperf", "--jaxperf-timing=off")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(
        lit(
            "jaxperf: test_mod.py::test_misspelt: @pytest.mark.jaxperf(max_traces=...) names "
            "'sgd_stpe', a function this test did not trace (did you mean 'sgd_step'?); traced: "
            "sgd_step at test_mod.py:6. Use a traced function's name or its 'name at path:line'",
        )
    )
    result.stdout.fnmatch_lines(
        lit(
            "jaxperf: test_mod.py::test_misspelt_label: @pytest.mark.jaxperf(max_jaxpr_eqns=...) "
            "names 'sgd_stp', a function or benchmark this test did not trace or run (did you "
            "mean 'sgd_step'?); traced and benchmarks: sgd_step, sgd_step at test_mod.py:6. Use "
            "a traced function's name or its 'name at path:line' or a benchmark label",
        )
    )
    result.stdout.fnmatch_lines(
        lit(
            "test_mod.py::test_by_name_and_by_key * new",
            "test_mod.py::test_misspelt * BAD LIMIT",
            "test_mod.py::test_misspelt_label * BAD LIMIT",
            "test_mod.py::test_over * OVER LIMIT",
        )
    )
    result.stdout.fnmatch_lines(lit("*traces of sgd_step (defined at test_mod.py:6): 5 > limit 4"))


UNJITTED = """
import jax
import jax.numpy as jnp
import pytest

{decorator}
def step(x):
    return jnp.sin(x) * 2

@pytest.mark.jaxperf
def test_calls():
    step(jnp.ones(3))
"""


def test_removed_jit_is_a_function_gone_not_an_improvement(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_mod=UNJITTED.format(decorator="@jax.jit"))
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=1)
    # The same code op by op: fewer traces and no compile time, yet nothing got better.
    jp.makepyfile(test_mod=UNJITTED.format(decorator=""))
    result = jp.runpytest(
        "--jaxperf", "--jaxperf-markdown=summary.md", "--junitxml=junit.xml", "-rA"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        lit(
            "test_mod.py::test_calls * gone: step * function gone",
            "function gone: test_mod.py::test_calls: step at test_mod.py:5 no longer traced "
            "(baseline: traces 1, compiles 1); if the test still calls it, it is no longer "
            "jitted and runs op by op",
            "jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated, 1 function gone",
        )
    )
    result.stdout.no_fnmatch_line("*improved*")
    assert "### Functions gone (1)" in (jp.path / "summary.md").read_text()
    assert 'name="jaxperf_status" value="function gone"' in (jp.path / "junit.xml").read_text()


BENCHMARKED = """
import jax
import jax.numpy as jnp

{decorator}
def step(x):
    return jnp.tanh(x) * 2 + 1

def test_bench(jaxperf):
    jaxperf.benchmark(step, jnp.ones(64))
"""


def test_removed_jit_from_a_benchmarked_function_fails(jp: pytest.Pytester) -> None:
    # jaxperf.benchmark jits a plain function itself, so neither the counts nor the runtime
    # would show that the code lost its jax.jit: the benchmark entry says who jitted it.
    fast = ("--jaxperf-min-rounds=3", "--jaxperf-max-time=0.01")
    jp.makepyfile(test_mod=BENCHMARKED.format(decorator="@jax.jit"))
    jp.runpytest("--jaxperf", "--jaxperf-save", *fast).assert_outcomes(passed=1)
    saved = read_json(jp.path / ".jaxperf" / "baseline.json")
    assert (
        "jitted_by_benchmark" not in saved["tests"]["test_mod.py::test_bench"]["benchmarks"]["step"]
    )
    jp.makepyfile(test_mod=BENCHMARKED.format(decorator=""))
    result = jp.runpytest("--jaxperf", "--jaxperf-json=run.json", *fast)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "  benchmark 'step': the function it times is no longer jitted (jaxperf.benchmark "
            "wraps it in jax.jit itself, so its runtime hides the op-by-op cost the code now pays)",
            "test_mod.py::test_bench * no longer jitted  REGRESSED",
        )
    )
    entry = read_json(jp.path / "run.json")["tests"]["test_mod.py::test_bench"]
    assert entry["benchmarks"]["step"]["jitted_by_benchmark"] is True
    # Saved that way, a plain function handed to the benchmark is its normal state.
    jp.runpytest("--jaxperf", "--jaxperf-save", *fast).assert_outcomes(passed=1)
    jp.runpytest("--jaxperf", *fast).assert_outcomes(passed=1)


UNMARKED = """
import jax
import jax.numpy as jnp

@jax.jit
def f(x):
    return x * 2

def test_plain():
    f(jnp.ones(3))
"""
NOTHING_RECORDED = (
    "jaxperf: no test was recorded{saved}; record a test with @pytest.mark.jaxperf, by "
    "requesting the jaxperf fixture, or record every test with --jaxperf-all"
)


def test_a_run_that_records_nothing_says_so_once(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_mod=UNMARKED)
    baseline = jp.path / ".jaxperf" / "baseline.json"
    saved = jp.runpytest("--jaxperf", "--jaxperf-save")
    saved.assert_outcomes(passed=1)
    line = NOTHING_RECORDED.format(saved=f", so --jaxperf-save wrote nothing to {baseline}")
    assert saved.stdout.lines.count(line) == 1, saved.stdout.str()
    assert not baseline.exists()
    gated = jp.runpytest("--jaxperf")
    assert gated.stdout.lines.count(NOTHING_RECORDED.format(saved="")) == 1
    # Without --jaxperf the plugin says nothing; with --jaxperf-all the test is recorded.
    assert "no test was recorded" not in jp.runpytest().stdout.str()
    every = jp.runpytest("--jaxperf", "--jaxperf-save", "--jaxperf-all")
    assert "no test was recorded" not in every.stdout.str()
    assert "test_mod.py::test_plain" in read_json(baseline)["tests"]


def test_a_save_where_no_recorded_test_passed_writes_nothing(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        test_mod=UNMARKED.replace("def test_plain", "@pytest.mark.jaxperf\ndef test_a").replace(
            "import jax\n", "import jax\nimport pytest\n", 1
        )
        + "    assert False\n"
    )
    result = jp.runpytest("--jaxperf", "--jaxperf-save")
    result.assert_outcomes(failed=1)
    baseline = jp.path / ".jaxperf" / "baseline.json"
    result.stdout.fnmatch_lines(lit(
        f"pytest-jaxperf: --jaxperf-save wrote nothing to {baseline}: none of the 1 recorded "
        "test(s) passed (only passed tests are saved)"
    ))  # fmt: skip
    assert not baseline.exists()
