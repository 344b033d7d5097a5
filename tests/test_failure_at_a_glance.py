"""End to end: a failure a reader takes in at a glance. One line per breached metric (a
benchmark's program size that its function breached by the same numbers is said once), in
the gating page's words (`jaxpr equations`, `bytes accessed`, never `jaxpr_eqns`), the most
telling first (runtime when it moved, then counts, then sizes, then seconds), each retrace
cause once, a growth past +1000% as a ratio (`x3,400`), and the summary table's cells
capped in width.

The runtime is injected (`jaxperf compare` on hand-built files): no verdict here rests on a
clock of this machine.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest
from _jaxperf_data import ENV, bench, fn
from _records import rec
from conftest import lit

from pytest_jaxperf.cli import main
from pytest_jaxperf.model import ProgramMetrics, RunRecord
from pytest_jaxperf.report.terminal import TEST_NAME_WIDTH, VS_BASELINE_WIDTH
from pytest_jaxperf.storage import store

pytestmark = pytest.mark.jax_internals

MODULE = """
import jax
import jax.numpy as jnp
import pytest

def normalise(x):
    {body}

@jax.jit
def step(x):
    return x * 2

@pytest.mark.jaxperf
def {name}(jaxperf):
    jaxperf.benchmark(normalise, jnp.ones((100, 100), jnp.float32), label="normalise")
    for n in {sizes}:
        step(jnp.ones(n))
"""
BEFORE = "return x / jnp.sqrt(jnp.sum(x * x, axis=1, keepdims=True))"
# Three exp(log(...)) rounds: more equations and ops, transcendentals x601, temp bytes x101.
AFTER = """y = x
    for _ in range(3):
        y = jnp.exp(jnp.log(jnp.abs(y) + 1.0)) - 1.0
    return y / jnp.sqrt(jnp.sum(y * y, axis=1, keepdims=True))"""
# A parametrized test's id makes the node id long: the table cuts it.
NAME = "test_normalise_keeps_its_program_and_its_step_compiled_once_per_shape"


def _failure(jp: pytest.Pytester) -> tuple[list[str], list[str]]:
    """The failure's jaxperf lines and the summary table's rows of a real session."""
    jp.makepyfile(test_glance=MODULE.format(body=BEFORE, sizes="(3,)", name=NAME))
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=1)
    jp.makepyfile(test_glance=MODULE.format(body=AFTER, sizes="(3, 4, 5)", name=NAME))
    # No clock in the verdict: counts and sizes alone.
    result = jp.runpytest("--jaxperf", "--jaxperf-timing=off", "--jaxperf-compile-floor=1000")
    result.assert_outcomes(failed=1)
    out = result.outlines
    start = next(i for i, line in enumerate(out) if "metric(s) over the baseline" in line)
    end = next(i for i, line in enumerate(out) if line.startswith("  baseline: "))
    table = out[out.index(next(x for x in out if x.startswith("test "))) :]
    return out[start : end + 1], table[:2]


def test_a_failure_lists_each_metric_once_counts_then_sizes(jp: pytest.Pytester) -> None:
    lines, _ = _failure(jp)
    heads = [
        line.split(" of ", 1)[0].strip() for line in lines[1:-1] if not line.startswith("    ")
    ]
    # Counts, then sizes in the gating page's order, each once: the benchmark's equations and
    # ops are its function's (the same numbers), said on the function's line.
    assert heads == [
        "traces", "compiles", "jaxpr equations", "StableHLO ops", "optimized HLO ops", "flops",
        "transcendentals", "bytes accessed", "temp bytes",
    ]  # fmt: skip
    assert lines[0].endswith(f"::{NAME}: 9 metric(s) over the baseline or a limit")
    text = "\n".join(lines)
    # One vocabulary: never a field's name.
    assert not re.search(r"jaxpr_eqns|hlo_ops|bytes_accessed|temp_bytes", text), text
    assert "jaxpr equations of benchmark 'normalise'" not in text
    # The retrace breaches traces and compiles alike: its cause said once, under the first.
    causes = [line for line in lines if line.startswith("      cause: ")]
    assert causes == [
        "      cause: x: shape changed on 2 of 3 traces: f32[3], f32[4], f32[5]; fix: pad to a "
        "fixed size or a few buckets (jnp.nonzero(..., size=, fill_value=))"
    ]
    assert lines.index(causes[0]) == 2
    # Past +1000%, a ratio; below it, a percentage.
    (grown,) = [line for line in lines if line.startswith("  transcendentals of ")]
    assert re.search(r"\(\+[\d,]+, x[\d,]+\) \[static_rtol 0.1\]$", grown), grown
    (flops,) = [line for line in lines if line.startswith("  flops of ")]
    assert re.search(r"\(\+[\d,]+, \+\d+%\) \[static_rtol 0.1\]$", flops), flops


def test_the_summary_table_caps_its_cells(jp: pytest.Pytester) -> None:
    _, (header, row) = _failure(jp)
    vs = header.index("vs baseline")
    cell = row[vs : header.index("status")].rstrip()
    assert cell.startswith("traces +2; compiles +2; jaxpr equations +15; +")  # the rest counted
    assert len(cell) <= VS_BASELINE_WIDTH
    name = row.split()[0]
    assert len(name) == TEST_NAME_WIDTH and name.startswith("…")
    assert f"test_glance.py::{NAME}".endswith(name[1:])  # cut from the left
    assert row.endswith("REGRESSED")


def test_a_moved_runtime_comes_first_and_a_big_growth_reads_as_a_ratio(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def normalise(median: float, transcendentals: float, eqns: int) -> RunRecord:
        entry = bench(median, eqns=eqns)
        metrics = ProgramMetrics(jaxpr_eqns=eqns, hlo_ops=30, transcendentals=transcendentals)
        entry = type(entry)(**{**vars(entry), "metrics": metrics})
        record = rec(fn("step", "m.py:1", traces=1), benchmarks={"normalise": entry})
        return RunRecord(environment=dict(ENV), tests={"t::normalise": record})

    base, run = tmp_path / "b.json", tmp_path / "r.json"
    store.save(base, normalise(1e-3, 1_000, 12))
    store.save(run, normalise(2.2e-3, 3_400_000, 14))
    assert main(["compare", str(base), str(run)]) == 1
    out = capsys.readouterr().out.splitlines()
    start = out.index("jaxperf: t::normalise: 3 metric(s) over the baseline or a limit")
    expected = (
        "  runtime of benchmark 'normalise': baseline 1.000 ms -> now 2.200 ms (+1.200 ms, "
        "+120%) [median, runtime_rtol 0.75, Mann-Whitney p=*]",
        # What the program metrics say of it (`diagnose.runtime_cause`).
        "      cause: the program changed with it: jaxpr equations 12 -> 14, transcendentals "
        "1,000 -> 3,400,000",
        "  jaxpr equations of benchmark 'normalise': baseline 12 -> now 14 (+2, +17%) "
        "[static_rtol 0.1]",
        "  transcendentals of benchmark 'normalise': baseline 1,000 -> now 3,400,000 "
        "(+3,399,000, x3,400) [static_rtol 0.1]",
    )
    shown = out[start + 1 : start + 5]
    assert all(fnmatch.fnmatchcase(a, b) for a, b in zip(shown, lit(*expected))), shown
    assert len(shown) == 4
