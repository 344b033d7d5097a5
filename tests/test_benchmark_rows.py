"""How fast each benchmark is, in plain sight: the terminal's lines under the summary table
and the markdown's section give each benchmark's median, spread and change against the
baseline, with the gate's word on that change (or why it was not gated)."""

from __future__ import annotations

from typing import Any

import pytest
from _jaxperf_data import (
    ENV,
    NEW,
    REGRESSED,
    baseline_and_run,
    bench,
    fn,
    outcomes_for,
    rec,
    with_runtime,
)

from pytest_jaxperf.compare import Gating, Verdict, evaluate
from pytest_jaxperf.config import MarkerLimits
from pytest_jaxperf.environment import timing_differences
from pytest_jaxperf.model import BenchmarkEntry, RunRecord
from pytest_jaxperf.report import terminal
from pytest_jaxperf.report.markdown import render_markdown
from pytest_jaxperf.report.wording import benchmark_rows

WORK = "tests/test_x.py::test_work"


def judged(
    before: BenchmarkEntry, now: BenchmarkEntry, **env: Any
) -> tuple[RunRecord, RunRecord, dict[str, Verdict]]:
    """A baseline and a run of one test with one benchmark, gated as the plugin gates it."""
    base = RunRecord(dict(ENV), {WORK: rec(fn("work", "pkg/w.py:1"), benchmarks={"work": before})})
    run = RunRecord({**ENV, **env}, {WORK: rec(fn("work", "pkg/w.py:1"), benchmarks={"work": now})})
    gating = Gating(timing_differences=timing_differences(base.environment, run.environment))
    return base, run, {WORK: evaluate(run.tests[WORK], base.tests[WORK], MarkerLimits(), gating)}


def versus(before: BenchmarkEntry, now: BenchmarkEntry, **env: Any) -> str:
    base, run, verdicts = judged(before, now, **env)
    (row,) = benchmark_rows(run.tests, verdicts, base, run.environment)
    return row.versus


def test_the_terminal_lists_each_benchmark_under_the_table() -> None:
    base, run = baseline_and_run()
    rows = benchmark_rows(run.tests, outcomes_for(base, run), base, run.environment)
    lines = terminal.benchmark_lines(rows)
    assert lines[0].split() == ["benchmark", "median", "IQR", "min", "rounds", "vs", "baseline"]
    fresh, step = lines[1:]
    assert fresh.startswith(f"{NEW}::fresh") and fresh.split()[-1] == "new"
    # +60% is within the default runtime_rtol (0.75): the test regressed on its traces.
    assert step.startswith(f"{REGRESSED}::step")
    assert step.split()[-9:] == ["1.600", "ms", "40.0", "us", "1.560", "ms", "40", "+60%", "ok"]
    # Right-aligned figures under their header.
    assert lines[0].index("median") + len("median") == step.index("1.600 ms") + len("1.600 ms")


def test_no_benchmark_no_lines() -> None:
    base, run = baseline_and_run()
    del run.tests[REGRESSED], run.tests[NEW]
    assert terminal.benchmark_lines(benchmark_rows(run.tests, outcomes_for(base, run), base)) == []


def test_the_change_has_the_gates_word() -> None:
    assert versus(bench(1e-3), bench(1.02e-3)) == "+2% ok"
    assert versus(bench(1e-3), bench(0.5e-3)) == "-50% improved"
    # Faster, but the rank test cannot tell with 4 rounds: not "improved".
    assert versus(bench(1e-3, n=4), bench(0.5e-3, n=4)) == "-50% ok"
    assert versus(bench(1e-3), bench(2e-3)) == "+100% REGRESSED"
    # Slower past the tolerance, but the rank test cannot tell with 4 rounds.
    assert versus(bench(1e-3, n=4), bench(2e-3, n=4)) == "+100% not gated: not significant"
    # The median grew, the fastest round did not: the gate calls it load.
    loaded = with_runtime(bench(2e-3), min_s=bench(1e-3).runtime.min_s)  # type: ignore[union-attr]
    assert versus(bench(1e-3), loaded) == "+100% not gated: machine load"


def test_a_change_on_another_machine_says_it_was_not_gated() -> None:
    """On another CPU the gate compares no runtime: a change within the tolerance is not
    "ok" there either."""
    other = {"cpu": "Intel(R) Xeon(R)"}
    assert versus(bench(1e-3), bench(2e-3), **other) == "+100% not gated: environment differs"
    assert versus(bench(1e-3), bench(1.02e-3), **other) == (
        "+2% not gated: environment differs (cpu AMD EPYC -> Intel(R) Xeon(R))"
    )


def test_names_and_changes_are_capped_in_width() -> None:
    long = "tests/" + "deep/" * 30 + "test_x.py::test_work"
    base, run, verdicts = judged(bench(1e-3), bench(1e-3), cpu="x" * 200)
    run.tests[long] = run.tests.pop(WORK)
    base.tests[long] = base.tests.pop(WORK)
    verdicts[long] = verdicts.pop(WORK)
    (line,) = terminal.benchmark_lines(benchmark_rows(run.tests, verdicts, base, run.environment))[
        1:
    ]
    name, *_ = line.split("  ")
    assert name.startswith("…") and name.endswith("test_x.py::test_work::work")
    assert len(name) == terminal.BENCHMARK_NAME_WIDTH
    assert len(line) < terminal.BENCHMARK_NAME_WIDTH + 40 + terminal.VS_BASELINE_WIDTH


def test_the_markdown_has_a_benchmarks_section() -> None:
    base, run = baseline_and_run()
    text = render_markdown(run, outcomes_for(base, run), "b.json", baseline=base)
    section = text[text.index("### Benchmarks (2)") : text.index("### All recorded tests")]
    assert "| benchmark | median | IQR | min | rounds | vs baseline |" in section
    assert f"| `{REGRESSED}::step` | 1.600 ms | 40.0 us | 1.560 ms | 40 | +60% ok |" in section
    assert "| new |" in section
    # Without the baseline (an old caller): the change is not guessed.
    assert "| - |" in render_markdown(run, outcomes_for(base, run), "b.json")


def test_a_run_prints_its_benchmarks_and_writes_them_to_the_markdown(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        test_b="""
        import jax, jax.numpy as jnp

        @jax.jit
        def step(x):
            return jnp.sin(x) * 2

        def test_step(jaxperf):
            jaxperf.benchmark(step, jnp.ones(100))
        """
    )
    # Beside other tests: a runtime tolerance no load exceeds, so that the word is "ok".
    fast = ("--jaxperf-min-rounds=5", "--jaxperf-max-time=0.02", "--jaxperf-runtime-rtol=1000")
    assert jp.runpytest("--jaxperf", "--jaxperf-save", *fast).ret == 0
    result = jp.runpytest("--jaxperf", "--jaxperf-markdown=r.md", *fast)
    assert result.ret == 0
    result.stdout.re_match_lines(
        [r"benchmark +median +IQR +min +rounds +vs baseline",
         r"test_b\.py::test_step::step +\S+ [um]?s +\S+ [um]?s +\S+ [um]?s +\d+ +[-+]\d+% ok"]
    )  # fmt: skip
    assert "| `test_b.py::test_step::step` |" in (jp.path / "r.md").read_text()
