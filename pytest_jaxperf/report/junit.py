"""Key metrics of a test as JUnit XML properties, for CI systems that display them."""

from __future__ import annotations

from ..compare import Verdict
from ..model import RecordedTest, held


def properties(record: RecordedTest, verdict: Verdict) -> list[tuple[str, object]]:
    """Key metrics as JUnit XML properties, for CI systems that display them."""
    props: list[tuple[str, object]] = [
        ("jaxperf_status", verdict.status),
        ("jaxperf_traces", record.traces),
        ("jaxperf_compiles", record.compiles),
        ("jaxperf_compile_s", round(held(record.total_s, "wall seconds"), 6)),
    ]
    if record.total_cpu_s is not None:
        props.append(("jaxperf_compile_cpu_s", round(record.total_cpu_s, 6)))
    for label, entry in record.benchmark_entries():
        if entry.runtime is not None:
            props.append((f"jaxperf_runtime_median_s[{label}]", entry.runtime.median_s))
        if entry.metrics is not None:
            props.append((f"jaxperf_jaxpr_eqns[{label}]", entry.metrics.jaxpr_eqns))
    return props
