"""A run's key metrics in the formats of continuous-benchmarking services.

- github-action-benchmark, tool ``customSmallerIsBetter``
  (github.com/benchmark-action/github-action-benchmark, README "Examples for other tools"):
  a JSON array of ``{"name": str, "unit": str, "value": number}``, optionally with
  ``"range": str`` and ``"extra": str`` (shown in the chart's tooltip). Smaller is better
  for every metric exported here.
- Bencher Metric Format (bencher.dev/docs/reference/bencher-metric-format):
  ``{"<benchmark name>": {"<measure slug>": {"value": number, "lower_value": number,
  "upper_value": number}}}``, lower/upper optional; benchmark names up to 1024 characters,
  measure slugs up to 64 (a longer test id is cut, with a hash of the whole). A measure
  given by a slug that does not exist yet is created.
- pytest-benchmark's JSON (``pytest --benchmark-json``: ``machine_info``, ``commit_info``,
  ``benchmarks[]`` with ``name``, ``fullname`` and ``stats``), which dashboards built for it
  and github-action-benchmark's ``pytest`` tool read (that tool plots ``stats.ops``, shows
  ``stats.stddev``, ``stats.mean`` and ``stats.rounds``). One entry per benchmark that
  measured a runtime; its stats are per-call seconds, as pytest-benchmark's are.

Test-level metrics are exported under the test's nodeid; metrics of one ``jaxperf.benchmark``
call under ``"<nodeid>::<label>"`` so that a test with several benchmarks keeps them apart.
All seconds are seconds (not Bencher's default nanoseconds).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from ..config import EXPORT_FORMATS
from ..model import SIZE_WORDS, BenchmarkEntry, RecordedTest, RunRecord, RuntimeStats, held

FORMATS = EXPORT_FORMATS
GITHUB_ACTION_BENCHMARK, BENCHER, PYTEST_BENCHMARK = FORMATS

# Bencher measure slugs.
BENCHER_TRACES = "traces"
BENCHER_COMPILES = "compiles"
BENCHER_COMPILE_TIME = "compile-time"
BENCHER_RUNTIME = "runtime"
BENCHER_INSTRUCTIONS = "instructions"
JAXPR_EQUATIONS = "jaxpr-equations"
STABLEHLO_OPS = "stablehlo-ops"
# A test's program sizes (summed over its functions' lowerings) under each format's names;
# left out where not measured. The traced equations are not exported: a dashboard's series
# stay those of the lowered programs.
_SLUGS = {"jaxpr_eqns": JAXPR_EQUATIONS, "hlo_ops": STABLEHLO_OPS, "xla_ops": "optimized-hlo-ops"}
_SIZES = tuple((name, slug, SIZE_WORDS[name]) for name, slug in _SLUGS.items())


def document(fmt: str, run: RunRecord, commit: Mapping[str, Any] | None = None) -> Any:
    """`run` as the JSON document of format `fmt` (one of FORMATS). `commit` is the git state
    of the code measured (`history.git_state`: "commit", "dirty"), for the formats that keep
    it; leave it out when unknown."""
    if fmt == PYTEST_BENCHMARK:
        return to_pytest_benchmark(run, commit or {})
    if fmt == BENCHER:
        return to_bencher(run)
    if fmt == GITHUB_ACTION_BENCHMARK:
        return to_github_action_benchmark(run)
    raise ValueError(f"unknown export format {fmt!r}; expected one of {', '.join(FORMATS)}")


def dumps(doc: Any) -> str:
    """A document as written: indented JSON, with null for a number that is not finite (a
    report's environment may hold NaN; JSON has no such number)."""
    return json.dumps(_finite(doc), indent=2, allow_nan=False) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def to_github_action_benchmark(run: RunRecord) -> list[dict[str, Any]]:
    """One entry per test and metric: traces, compiles, compile seconds (trace + lower +
    backend), jaxpr equations, StableHLO ops and optimized HLO ops (where measured), and the
    runtime median (or instructions per call, under the instructions clock) of each
    benchmark that measured one."""
    out: list[dict[str, Any]] = []
    for nodeid, rec in sorted(run.tests.items()):
        note = "" if rec.outcome == "passed" else f"test outcome: {rec.outcome}"
        out.append(_gab(f"{nodeid} traces", "traces", rec.traces, note))
        out.append(_gab(f"{nodeid} compiles", "compiles", rec.compiles, note))
        wall = round(held(rec.total_s, f"wall seconds of {nodeid}"), 6)
        split = (
            f"trace {rec.trace_s:.6f} s\nlower {rec.lower_s:.6f} s\n"
            f"backend compile {rec.compile_s:.6f} s"
        )
        out.append(_gab(f"{nodeid} compile time", "s", wall, _join(split, note)))
        for name, _, words in _SIZES:
            if (size := getattr(rec, name)) is not None:
                out.append(_gab(f"{nodeid} {words}", words, size, note))
        for label, entry in rec.benchmark_entries():
            if entry.instructions is not None:
                out.append(_gab(f"{nodeid}::{label} instructions per call", "instructions",
                                entry.instructions, note))  # fmt: skip
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
    iqr, rounds = held(runtime.iqr_s, "runtime iqr_s"), held(runtime.rounds, "runtime rounds")
    return f"min {runtime.min_s:.6g} s\nIQR {iqr:.6g} s\nrounds {rounds}"


def to_bencher(run: RunRecord) -> dict[str, dict[str, dict[str, float]]]:
    """Bencher Metric Format: per test the measures traces, compiles, compile-time
    (seconds), jaxpr-equations, stablehlo-ops and optimized-hlo-ops (where measured); per
    benchmark runtime (median seconds, lower_value the minimum, upper_value the 75th
    percentile), instructions (per call, under the instructions clock) and
    jaxpr-equations, where measured."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for nodeid, rec in sorted(run.tests.items()):
        out[_bencher_name(nodeid)] = _test_measures(rec)
        for label, entry in rec.benchmark_entries():
            measures = _benchmark_measures(entry)
            if measures:
                out[_bencher_name(f"{nodeid}::{label}")] = measures
    return out


# Bencher refuses a benchmark name longer than this (BMF reference, "Order of Precedence").
BENCHER_NAME_MAX = 1024


def _bencher_name(name: str) -> str:
    """`name`, or where it is too long for Bencher (a long parametrization id), its start
    with "..." and a hash of the whole: the same name in every run, and two long names that
    share their start stay apart."""
    if len(name) <= BENCHER_NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]
    return f"{name[: BENCHER_NAME_MAX - 3 - len(digest)]}...{digest}"


def _test_measures(rec: RecordedTest) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {
        BENCHER_TRACES: {"value": rec.traces},
        BENCHER_COMPILES: {"value": rec.compiles},
        BENCHER_COMPILE_TIME: {"value": round(held(rec.total_s, "wall seconds"), 6)},
    }
    for name, slug, _ in _SIZES:
        if (size := getattr(rec, name)) is not None:
            out[slug] = {"value": size}
    return out


def _benchmark_measures(entry: BenchmarkEntry) -> dict[str, dict[str, float]]:
    measures: dict[str, dict[str, float]] = {}
    rt = entry.runtime
    if rt is not None:
        metric = {"value": rt.median_s}
        # Bencher expects lower <= value <= upper; skip a bound that would break that.
        if rt.min_s <= rt.median_s:
            metric["lower_value"] = rt.min_s
        q3 = held(rt.q3_s, "runtime q3_s")
        if q3 >= rt.median_s:
            metric["upper_value"] = q3
        measures[BENCHER_RUNTIME] = metric
    if entry.instructions is not None:
        measures[BENCHER_INSTRUCTIONS] = {"value": entry.instructions}
    if entry.metrics is not None:
        measures[JAXPR_EQUATIONS] = {"value": entry.metrics.jaxpr_eqns}
    return measures


def to_pytest_benchmark(run: RunRecord, commit: Mapping[str, Any]) -> dict[str, Any]:
    """pytest-benchmark's JSON layout. `machine_info` holds what the run recorded about its
    machine (the environment, under pytest-benchmark's key names where one exists) and
    `commit_info` the commit given (empty when unknown): nothing is made up for the keys a
    run does not measure."""
    env = run.environment
    machine: dict[str, Any] = {"jaxperf_environment": dict(env)}
    if "python" in env:
        machine["python_version"] = env["python"]
    if "cpu" in env or "cpu_count" in env:
        machine["cpu"] = {
            k: env[key] for k, key in (("brand_raw", "cpu"), ("count", "cpu_count")) if key in env
        }
    commit_info: dict[str, Any] = {}
    if "commit" in commit:
        commit_info["id"] = commit["commit"]
    if "dirty" in commit:
        commit_info["dirty"] = commit["dirty"]
    benchmarks = []
    for nodeid, rec in sorted(run.tests.items()):
        for label, entry in rec.benchmark_entries():
            if entry.runtime is not None:
                benchmarks.append(_pytest_benchmark_entry(nodeid, label, entry, entry.runtime))
    return {
        "machine_info": machine,
        "commit_info": commit_info,
        "benchmarks": benchmarks,
        "datetime": datetime.now(timezone.utc).isoformat(),
    }


def _pytest_benchmark_entry(
    nodeid: str, label: str, entry: BenchmarkEntry, rt: RuntimeStats
) -> dict[str, Any]:
    # Every statistic: a run file's (a baseline keeps those the gate reads: NotStored).
    mean, rounds = held(rt.mean_s, "runtime mean_s"), held(rt.rounds, "runtime rounds")
    q1, q3, iqr = (held(v, "runtime quartiles") for v in (rt.q1_s, rt.q3_s, rt.iqr_s))
    stddev, top = held(rt.stddev_s, "runtime stddev_s"), held(rt.max_s, "runtime max_s")
    stats: dict[str, Any] = {
        "min": rt.min_s,
        "max": top,
        "mean": mean,
        "stddev": stddev,
        "rounds": rounds,
        "median": rt.median_s,
        "iqr": iqr,
        "q1": q1,
        "q3": q3,
        "iqr_outliers": held(rt.outliers, "runtime outliers"),
        "ops": 1.0 / mean if mean > 0 else None,
        "total": mean * rounds,
        "iterations": held(rt.iterations, "runtime iterations"),
    }
    data = list(rt.samples_s) or [rt.median_s]
    # pytest-benchmark's figures from every round where the report kept every round; from
    # those it kept (at most a hundred, evenly spread) where it did not, and said so below.
    # Its `compare` needs them all (`outliers` for its table, the 1.5 IQR ends for its
    # histogram); iqr_outliers is the count over every round either way.
    low, high = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    inside = [x for x in data if low <= x <= high]
    stddev_outliers = sum(1 for x in data if abs(x - mean) > stddev)
    stats["stddev_outliers"] = stddev_outliers
    stats["outliers"] = f"{stddev_outliers};{rt.outliers}"
    stats["ld15iqr"] = rt.min_s if rt.min_s >= low else min(inside, default=rt.min_s)
    stats["hd15iqr"] = top if top <= high else max(inside, default=top)
    stats["data"] = data
    extra: dict[str, Any] = {"jaxperf_label": label}
    if len(data) < rounds:
        extra["jaxperf_rounds_kept"] = (
            f"stddev_outliers, data and, where rounds fell outside 1.5 IQR, ld15iqr and "
            f"hd15iqr are from {len(data)} of the {rt.rounds} rounds, evenly spread (the report "
            "keeps at most 100)"
        )
    if rt.cpu_median_s is not None:
        extra["cpu_median_s"] = rt.cpu_median_s
    if entry.metrics is not None:
        extra["jaxpr_eqns"] = entry.metrics.jaxpr_eqns
    return {
        "group": None,
        "name": f"{nodeid.rsplit('::', 1)[-1]}::{label}",
        "fullname": f"{nodeid}::{label}",
        "params": None,
        "param": None,
        "extra_info": extra,
        "options": {"timer": "perf_counter"},
        "stats": stats,
    }
