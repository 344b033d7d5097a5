"""Hand-built reports, baselines and outcomes for the report-format tests (no jax needed)."""

from __future__ import annotations

import dataclasses
from typing import Any

import _records
from _records import rec

from pytest_jaxperf.compare import Gating, Verdict, evaluate
from pytest_jaxperf.config import MarkerLimits
from pytest_jaxperf.environment import timing_differences
from pytest_jaxperf.model import (
    BenchmarkEntry,
    FunctionRecord,
    ProgramMetrics,
    RunRecord,
    RuntimeStats,
)

ENV = {
    "backend": "cpu",
    "cpu": "AMD EPYC",
    "cpu_count": 2,
    "device_count": 1,
    "device_kind": "cpu",
    "jax": "0.10.2",
    "jaxlib": "0.10.2",
    "python": "3.11.7",
    "x64": False,
}

REGRESSED = "tests/test_sim.py::test_step"
IMPROVED = "tests/test_sim.py::test_solver"
NEW = "tests/test_sim.py::test_new[a|b]"
OK = "tests/test_sim.py::test_ok"


def fn(
    name: str,
    site: str,
    traces: int = 1,
    compiles: int | None = None,
    trace_s: float = 0.01,
    lower_s: float = 0.01,
    compile_s: float = 0.1,
    reasons: tuple[str, ...] = (),
    cpu: float | None = 1.0,
) -> FunctionRecord:
    """A function record with realistic default timings (CPU seconds `cpu` x wall)."""
    return _records.fn(
        name, site, traces, compiles,
        trace_s=trace_s, lower_s=lower_s, compile_s=compile_s, reasons=reasons, cpu=cpu,
    )  # fmt: skip


def bench(median: float, spread: float = 0.05, n: int = 40, eqns: int = 12) -> BenchmarkEntry:
    """A benchmark entry shaped like the fixture's, with per-round samples around `median`."""
    samples = [median * (1 + spread * ((i * 7919) % n - n / 2) / n) for i in range(n)]
    ordered = sorted(samples)
    return BenchmarkEntry(
        first_call_s=0.2,
        trace_s=0.01,
        lower_s=0.01,
        compile_s=0.1,
        compiled_on_first_call=True,
        metrics=ProgramMetrics(jaxpr_eqns=eqns, hlo_ops=30),
        runtime=RuntimeStats(
            min_s=ordered[0],
            max_s=ordered[-1],
            median_s=median,
            mean_s=sum(samples) / n,
            stddev_s=median * spread / 4,
            q1_s=ordered[n // 4],
            q3_s=ordered[3 * n // 4],
            iqr_s=ordered[3 * n // 4] - ordered[n // 4],
            rounds=n,
            iterations=100,
            outliers=0,
            samples_s=tuple(samples),
        ),
    )


def unmeasured(**changes: Any) -> BenchmarkEntry:
    """A benchmark entry with neither runtime nor program metrics, less `changes`."""
    return dataclasses.replace(bench(1e-3), **{"runtime": None, "metrics": None, **changes})


def with_runtime(entry: BenchmarkEntry, **changes: Any) -> BenchmarkEntry:
    """`entry` with some of its runtime statistics changed."""
    assert entry.runtime is not None
    return dataclasses.replace(entry, runtime=dataclasses.replace(entry.runtime, **changes))


def baseline_and_run() -> tuple[RunRecord, RunRecord]:
    """A baseline and a run with one regressed, one improved, one new and one unchanged test."""
    base = RunRecord(
        environment=dict(ENV),
        tests={
            REGRESSED: rec(fn("step", "pkg/sim.py:12"), benchmarks={"step": bench(1.0e-3)}),
            IMPROVED: rec(fn("solve", "pkg/solve.py:40", traces=3, compile_s=0.3)),
            OK: rec(fn("<lambda>", "pkg/sim.py:30", compile_s=0.05)),
        },
    )
    run = RunRecord(
        environment=dict(ENV),
        tests={
            REGRESSED: rec(
                fn("step", "pkg/sim.py:12", traces=2, reasons=("x: f32[3] -> f32[4]",)),
                benchmarks={"step": bench(1.6e-3)},
            ),
            IMPROVED: rec(fn("solve", "pkg/solve.py:40", traces=1, compile_s=0.1)),
            NEW: rec(fn("fresh", "pkg/new.py:1"), benchmarks={"fresh": bench(2e-5)}),
            OK: rec(fn("<lambda>", "pkg/sim.py:30", compile_s=0.05)),
        },
    )
    return base, run


def outcomes_for(base: RunRecord | None, run: RunRecord) -> dict[str, Verdict]:
    differences = timing_differences(base.environment, run.environment) if base else []
    return {
        nodeid: evaluate(
            record,
            base.tests.get(nodeid) if base else None,
            MarkerLimits(),
            Gating(timing_differences=differences),
        )
        for nodeid, record in run.tests.items()
    }
