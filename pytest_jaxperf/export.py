"""A run's key metrics in the formats of continuous-benchmarking services.

- github-action-benchmark, tool ``customSmallerIsBetter``
  (github.com/benchmark-action/github-action-benchmark, README "Examples for other tools"):
  a JSON array of ``{"name": str, "unit": str, "value": number}``, optionally with
  ``"range": str`` and ``"extra": str`` (shown in the chart's tooltip). Smaller is better
  for every metric exported here.
- Bencher Metric Format (bencher.dev/docs/reference/bencher-metric-format):
  ``{"<benchmark name>": {"<measure slug>": {"value": number, "lower_value": number,
  "upper_value": number}}}``, lower/upper optional; benchmark names up to 1024 characters,
  measure slugs up to 64. A measure given by a slug that does not exist yet is created.

Test-level metrics are exported under the test's nodeid; metrics of one ``jaxperf.benchmark``
call under ``"<nodeid>::<label>"`` so that a test with several benchmarks keeps them apart.
All seconds are seconds (not Bencher's default nanoseconds).
"""

from __future__ import annotations

from typing import Any

from .model import BenchmarkEntry, Report, RuntimeStats, TestRecord

# Bencher measure slugs.
TRACES = "traces"
COMPILES = "compiles"
COMPILE_TIME = "compile-time"
RUNTIME = "runtime"
JAXPR_EQUATIONS = "jaxpr-equations"


def to_github_action_benchmark(run: Report) -> list[dict[str, Any]]:
    """One entry per test and metric: traces, compiles, compile seconds (trace + lower +
    backend), and the runtime median of each benchmark that measured one."""
    out: list[dict[str, Any]] = []
    for nodeid, rec in sorted(run.tests.items()):
        note = "" if rec.outcome == "passed" else f"test outcome: {rec.outcome}"
        out.append(_gab(f"{nodeid} traces", "traces", rec.traces, note))
        out.append(_gab(f"{nodeid} compiles", "compiles", rec.compiles, note))
        split = (
            f"trace {rec.trace_s:.6f} s\nlower {rec.lower_s:.6f} s\n"
            f"backend compile {rec.compile_s:.6f} s"
        )
        out.append(_gab(f"{nodeid} compile time", "s", round(rec.total_s, 6), _join(split, note)))
        for label, entry in rec.benchmark_entries():
            if entry.runtime is None:
                continue
            out.append(
                _gab(
                    f"{nodeid}::{label} runtime median",
                    "s",
                    entry.runtime.median_s,
                    _join(_runtime_extra(entry.runtime), note),
                )
            )
    return out


def _gab(name: str, unit: str, value: float, extra: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "unit": unit, "value": value}
    if extra:
        entry["extra"] = extra
    return entry


def _join(*parts: str) -> str:
    return "\n".join(p for p in parts if p)


def _runtime_extra(runtime: RuntimeStats) -> str:
    return f"min {runtime.min_s:.6g} s\nIQR {runtime.iqr_s:.6g} s\nrounds {runtime.rounds}"


def to_bencher(run: Report) -> dict[str, dict[str, dict[str, float]]]:
    """Bencher Metric Format: per test the measures traces, compiles and compile-time
    (seconds); per benchmark runtime (median seconds, lower_value the minimum, upper_value
    the 75th percentile) and jaxpr-equations, where measured."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for nodeid, rec in sorted(run.tests.items()):
        out[nodeid] = _test_measures(rec)
        for label, entry in rec.benchmark_entries():
            measures = _benchmark_measures(entry)
            if measures:
                out[f"{nodeid}::{label}"] = measures
    return out


def _test_measures(rec: TestRecord) -> dict[str, dict[str, float]]:
    return {
        TRACES: {"value": rec.traces},
        COMPILES: {"value": rec.compiles},
        COMPILE_TIME: {"value": round(rec.total_s, 6)},
    }


def _benchmark_measures(entry: BenchmarkEntry) -> dict[str, dict[str, float]]:
    measures: dict[str, dict[str, float]] = {}
    rt = entry.runtime
    if rt is not None:
        metric = {"value": rt.median_s}
        # Bencher expects lower <= value <= upper; skip a bound that would break that.
        if rt.min_s <= rt.median_s:
            metric["lower_value"] = rt.min_s
        if rt.q3_s >= rt.median_s:
            metric["upper_value"] = rt.q3_s
        measures[RUNTIME] = metric
    if entry.metrics is not None:
        measures[JAXPR_EQUATIONS] = {"value": entry.metrics.jaxpr_eqns}
    return measures
