"""Hand-built records for the plugin's unit tests (no jax needed)."""

from __future__ import annotations

from pytest_jaxperf.model import Entry, FunctionRecord, RecordedTest, RunRecord


def fn(
    name: str,
    site: str,
    traces: int = 1,
    compiles: int | None = None,
    *,
    trace_s: float = 0.0,
    lower_s: float = 0.0,
    compile_s: float = 0.0,
    cache_hits: int = 0,
    reasons: tuple[str, ...] = (),
    cpu: float | None = 1.0,
) -> FunctionRecord:
    """A function record; lowerings and compiles default to the number of traces, and the
    CPU seconds of each phase to `cpu` times its wall seconds (None: not measured)."""
    compiles = traces if compiles is None else compiles
    return FunctionRecord(
        name=name,
        site=site,
        traces=traces,
        lowerings=compiles,
        compiles=compiles,
        cache_hits=cache_hits,
        trace_s=trace_s,
        lower_s=lower_s,
        compile_s=compile_s,
        trace_cpu_s=None if cpu is None else trace_s * cpu,
        lower_cpu_s=None if cpu is None else lower_s * cpu,
        compile_cpu_s=None if cpu is None else compile_s * cpu,
        retrace_reasons=list(reasons),
    )


def rec(*functions: FunctionRecord, benchmarks: dict[str, Entry] | None = None) -> RecordedTest:
    """A test record holding `functions`, with its totals summed."""
    record = RecordedTest(functions={f.key: f for f in functions}, benchmarks=benchmarks or {})
    record.recompute_totals()
    return record


def resaved(old: RunRecord | None, run: RunRecord) -> RunRecord:
    """`run` saved into `old` as every save merges (storage/resave.py), all values measured."""
    from pytest_jaxperf.config import Tolerances
    from pytest_jaxperf.storage.resave import Measured, Resave

    return Resave(Measured(), Tolerances())(old, run)
