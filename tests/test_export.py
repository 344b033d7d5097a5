"""Unit tests for report.export: github-action-benchmark, Bencher and pytest-benchmark
formats."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _jaxperf_data import (
    IMPROVED,
    NEW,
    OK,
    REGRESSED,
    baseline_and_run,
    bench,
    fn,
    rec,
    unmeasured,
    with_runtime,
)

from pytest_jaxperf import config
from pytest_jaxperf.model import BenchmarkEntry, ProgramMetrics, RunRecord, ScalingEntry
from pytest_jaxperf.report import export
from pytest_jaxperf.report.export import to_bencher, to_github_action_benchmark, to_pytest_benchmark


def by_name(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in entries}


def test_github_action_benchmark_entries_per_test_and_metric() -> None:
    _, run = baseline_and_run()
    entries = to_github_action_benchmark(run)
    json.dumps(entries, allow_nan=False)  # valid JSON
    for entry in entries:
        assert set(entry) <= {"name", "unit", "value", "range", "extra"}
        assert isinstance(entry["name"], str) and isinstance(entry["unit"], str)
        assert isinstance(entry["value"], (int, float)) and not isinstance(entry["value"], bool)
        assert isinstance(entry.get("extra", ""), str)
    named = by_name(entries)
    assert len(named) == len(entries)  # names are unique
    assert named[f"{REGRESSED} traces"] == {
        "name": f"{REGRESSED} traces",
        "unit": "traces",
        "value": 2,
    }
    assert named[f"{REGRESSED} compiles"]["value"] == 2
    compile_time = named[f"{REGRESSED} compile time"]
    assert (compile_time["unit"], compile_time["value"]) == ("s", 0.12)
    assert compile_time["extra"].splitlines() == [
        "trace 0.010000 s",
        "lower 0.010000 s",
        "backend compile 0.100000 s",
    ]
    runtime = named[f"{REGRESSED}::step runtime median"]
    assert (runtime["unit"], runtime["value"]) == ("s", 1.6e-3)
    assert "rounds 40" in runtime["extra"] and "min " in runtime["extra"]
    assert (
        named[f"{REGRESSED} StableHLO ops"]["unit"],
        named[f"{REGRESSED} StableHLO ops"]["value"],
    ) == ("StableHLO ops", 0)
    # Four tests x six metrics, plus the two benchmarks with a runtime.
    assert len(entries) == 4 * 6 + 2
    assert f"{OK}::" not in " ".join(named)


def test_github_action_benchmark_marks_tests_that_did_not_pass() -> None:
    _, run = baseline_and_run()
    run.tests[IMPROVED].outcome = "failed"
    named = by_name(to_github_action_benchmark(run))
    assert named[f"{IMPROVED} traces"]["extra"] == "test outcome: failed"
    assert named[f"{IMPROVED} compile time"]["extra"].endswith("\ntest outcome: failed")


def check_bmf(doc: Any) -> None:
    """The BMF JSON schema: benchmark -> measure -> {value, lower_value?, upper_value?}."""
    json.dumps(doc, allow_nan=False)
    assert isinstance(doc, dict)
    for name, measures in doc.items():
        assert isinstance(name, str) and 0 < len(name) <= 1024
        assert isinstance(measures, dict) and measures
        for slug, metric in measures.items():
            assert isinstance(slug, str) and 0 < len(slug) <= 64
            assert set(metric) <= {"value", "lower_value", "upper_value"} and "value" in metric
            for value in metric.values():
                assert isinstance(value, (int, float)) and not isinstance(value, bool)
            assert metric.get("lower_value", metric["value"]) <= metric["value"]
            assert metric.get("upper_value", metric["value"]) >= metric["value"]


def test_bencher_names_stay_within_its_limit() -> None:
    # A long parametrization id: Bencher refuses a benchmark name over 1024 characters.
    long_a, long_b = (f"t.py::test_a[{'x' * 1100}-{end}]" for end in "ab")
    run = RunRecord(tests={long_a: rec(fn("f", "m.py:1"), benchmarks={"step": bench(1e-3)}),
                           long_b: rec(fn("f", "m.py:1"))})  # fmt: skip
    doc = to_bencher(run)
    check_bmf(doc)
    assert len(doc) == 3  # the two tests and the benchmark, still apart
    assert all(len(name) == 1024 and name.startswith("t.py::test_a[xxx") for name in doc)
    assert to_bencher(run) == doc  # the same names in every run
    short = RunRecord(tests={"t.py::test_a": rec(fn("f", "m.py:1"))})
    assert list(to_bencher(short)) == ["t.py::test_a"]


def test_bencher_measures_per_test_and_per_benchmark() -> None:
    _, run = baseline_and_run()
    doc = to_bencher(run)
    check_bmf(doc)
    assert sorted(doc) == sorted([*run.tests, f"{REGRESSED}::step", f"{NEW}::fresh"])
    assert doc[REGRESSED] == {
        "traces": {"value": 2},
        "compiles": {"value": 2},
        "compile-time": {"value": 0.12},
        "jaxpr-equations": {"value": 0},
        "stablehlo-ops": {"value": 0},
        "optimized-hlo-ops": {"value": 0},
    }
    step = run.tests[REGRESSED].benchmarks["step"]
    assert isinstance(step, BenchmarkEntry) and step.runtime is not None
    assert doc[f"{REGRESSED}::step"] == {
        "runtime": {
            "value": 1.6e-3,
            "lower_value": step.runtime.min_s,
            "upper_value": step.runtime.q3_s,
        },
        "jaxpr-equations": {"value": 12},
    }


@pytest.mark.parametrize(
    ("q3", "lower", "upper"),
    [
        (2.5, 1.0, 2.5),
        (1.0, 1.0, None),  # a third quartile below the median: left out
        (2.5, 3.0, 2.5),  # a minimum above the median: left out
    ],
)
def test_bencher_bounds_are_the_minimum_and_the_third_quartile(
    q3: float, lower: float, upper: float | None
) -> None:
    entry = with_runtime(bench(2.0), q3_s=q3, min_s=lower)
    run = RunRecord(tests={"t::a": rec(fn("f", "m.py:1"), benchmarks={"b": entry})})
    metric = to_bencher(run)["t::a::b"]["runtime"]
    check_bmf(to_bencher(run))
    assert metric.get("upper_value") == upper
    assert metric.get("lower_value") == (lower if lower <= 2.0 else None)


def test_benchmarks_without_measurements_are_not_exported() -> None:
    record = rec(
        fn("f", "m.py:1"),
        benchmarks={
            "sizes": ScalingEntry(metric="jaxpr_eqns", sizes=(1, 2), values=(1, 2), exponent=0),
            "off": unmeasured(first_call_s=None),
            "eqns": unmeasured(metrics=ProgramMetrics(jaxpr_eqns=7, hlo_ops=9)),
        },
    )
    record.jaxpr_eqns = record.hlo_ops = record.xla_ops = None  # not measured: left out, not 0
    run = RunRecord(tests={"t::a": record})
    doc = to_bencher(run)
    check_bmf(doc)
    assert sorted(doc) == ["t::a", "t::a::eqns"]
    assert "stablehlo-ops" not in doc["t::a"] and "jaxpr-equations" not in doc["t::a"]
    assert doc["t::a::eqns"] == {"jaxpr-equations": {"value": 7}}
    assert [e["name"] for e in to_github_action_benchmark(run)] == [
        "t::a traces",
        "t::a compiles",
        "t::a compile time",
    ]


def test_an_empty_run_exports_empty_documents() -> None:
    assert to_github_action_benchmark(RunRecord()) == []
    assert to_bencher(RunRecord()) == {}


# What pytest-benchmark writes in each benchmark's "stats" (its Stats.fields, plus ops, total,
# iterations and the per-round data) and what github-action-benchmark's `pytest` tool reads.
PYTEST_BENCHMARK_STATS = {
    "min", "max", "mean", "stddev", "rounds", "median", "iqr", "q1", "q3", "iqr_outliers",
    "stddev_outliers", "outliers", "ld15iqr", "hd15iqr", "ops", "total", "iterations", "data",
}  # fmt: skip


def test_pytest_benchmark_document_has_its_layout_and_our_statistics() -> None:
    _, run = baseline_and_run()
    doc = to_pytest_benchmark(run, {"commit": "abc123", "dirty": False})
    json.dumps(doc, allow_nan=False)
    assert set(doc) == {"machine_info", "commit_info", "benchmarks", "datetime"}
    assert doc["commit_info"] == {"id": "abc123", "dirty": False}
    assert doc["machine_info"]["python_version"] == run.environment["python"]
    assert doc["machine_info"]["jaxperf_environment"] == run.environment
    named = {b["fullname"]: b for b in doc["benchmarks"]}
    assert sorted(named) == sorted([f"{NEW}::fresh", f"{REGRESSED}::step"])
    step = named[f"{REGRESSED}::step"]
    assert step["name"] == "test_step::step"
    stats = step["stats"]
    assert set(stats) == PYTEST_BENCHMARK_STATS
    runtime = dict(run.tests[REGRESSED].benchmark_entries())["step"].runtime
    assert runtime is not None
    assert (stats["median"], stats["min"], stats["rounds"]) == (
        runtime.median_s,
        runtime.min_s,
        runtime.rounds,
    )
    assert stats["iterations"] == runtime.iterations
    assert stats["ops"] == pytest.approx(1 / runtime.mean_s)
    assert stats["total"] == pytest.approx(runtime.mean_s * runtime.rounds)
    assert stats["data"] == list(runtime.samples_s)
    assert stats["ld15iqr"] >= runtime.min_s and stats["hd15iqr"] <= runtime.max_s
    assert stats["outliers"] == f"{stats['stddev_outliers']};{runtime.outliers}"


def test_pytest_benchmark_figures_from_the_kept_rounds_are_said() -> None:
    entry = with_runtime(bench(2e-3, n=40), rounds=400)  # 400 rounds, 40 samples kept
    run = RunRecord(tests={"t.py::test_a": rec(fn("f", "m.py:1"), benchmarks={"b": entry})})
    (benchmark,) = to_pytest_benchmark(run, {})["benchmarks"]
    stats = benchmark["stats"]
    # Every key pytest-benchmark writes (its compare reads them), the count over all rounds.
    assert set(stats) == PYTEST_BENCHMARK_STATS
    assert stats["rounds"] == 400 and len(stats["data"]) == 40
    runtime = entry.runtime
    assert runtime is not None
    assert stats["outliers"] == f"{stats['stddev_outliers']};{runtime.outliers}"
    assert runtime.min_s <= stats["ld15iqr"] <= stats["hd15iqr"] <= runtime.max_s
    assert benchmark["extra_info"]["jaxperf_rounds_kept"] == (
        "stddev_outliers, data and, where rounds fell outside 1.5 IQR, ld15iqr and hd15iqr are "
        "from 40 of the 400 rounds, evenly spread (the report keeps at most 100)"
    )
    assert to_pytest_benchmark(run, {})["commit_info"] == {}


def test_export_formats_are_the_options_formats() -> None:
    assert export.FORMATS == config.EXPORT_FORMATS
    _, run = baseline_and_run()
    for fmt in export.FORMATS:
        json.loads(export.dumps(export.document(fmt, run)))
    with pytest.raises(ValueError, match="unknown export format 'csv'"):
        export.document("csv", run)


def test_instructions_per_call_are_exported_where_counted() -> None:
    record = rec(fn("f", "m.py:1"), benchmarks={"step": unmeasured(instructions=6_930_123)})
    run = RunRecord(tests={"t::a": record})
    doc = to_bencher(run)
    check_bmf(doc)
    assert doc["t::a::step"] == {"instructions": {"value": 6_930_123}}
    assert by_name(to_github_action_benchmark(run))["t::a::step instructions per call"] == {
        "name": "t::a::step instructions per call", "unit": "instructions", "value": 6_930_123
    }  # fmt: skip


@pytest.mark.parametrize("fmt", ["github-action-benchmark", "bencher", "pytest-benchmark"])
def test_a_baseline_is_refused_in_one_line_naming_what_it_lacks(
    fmt: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # A baseline keeps what the gate reads (no wall seconds beside CPU seconds, of the
    # runtime the median, fastest round and CPU median): an export needs the run file.
    from pytest_jaxperf import cli
    from pytest_jaxperf.storage import store
    from pytest_jaxperf.storage.resave import baseline_form

    _, run = baseline_and_run()
    path = tmp_path / "baseline.json"
    slim = {k: baseline_form(r, "cpu") for k, r in run.tests.items() if r.outcome == "passed"}
    store.save(path, RunRecord(run.environment, slim))
    assert cli.main(["export", "--format", fmt, str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"jaxperf: {path}: ") and line.endswith(
        "not stored: a baseline holds only what the gate reads (use the run file, --jaxperf-json)"
    )
