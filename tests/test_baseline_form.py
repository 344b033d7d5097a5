"""What a baseline holds (schema /7): what the gate reads, per field; the rest is in the run
file only. An older file still reads, and the first save converts it, saying so."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from _records import fn, rec
from conftest import read_json
from test_store import full_report

from pytest_jaxperf import model
from pytest_jaxperf.compare import Gating, Verdict, runtime_verdict
from pytest_jaxperf.config import Tolerances
from pytest_jaxperf.model import (
    BenchmarkEntry,
    Phases,
    RecordedTest,
    Remeasured,
    RunRecord,
    RuntimeStats,
    ScalingEntry,
)
from pytest_jaxperf.storage import store
from pytest_jaxperf.storage.resave import (
    BASELINE_SAMPLES,
    Measured,
    Resave,
    baseline_form,
    baseline_samples,
)

ENV = {"jax": "0.10.2", "backend": "cpu", "device_count": 1, "x64": False}


def runtime(samples: tuple[float, ...], **changes: Any) -> RuntimeStats:
    ordered = sorted(samples)
    n = len(ordered)
    stats = RuntimeStats(
        min_s=ordered[0], max_s=ordered[-1], median_s=ordered[n // 2],
        mean_s=sum(ordered) / n, stddev_s=1e-6, q1_s=ordered[n // 4], q3_s=ordered[3 * n // 4],
        iqr_s=ordered[3 * n // 4] - ordered[n // 4], rounds=n, iterations=10, outliers=2,
        samples_s=samples, cpu_median_s=ordered[n // 2] * 0.9,
    )  # fmt: skip
    return dataclasses.replace(stats, **changes)


def bench(samples: tuple[float, ...] = (), **changes: Any) -> BenchmarkEntry:
    samples = samples or tuple(1e-3 * (1 + ((7 * i) % 100) / 1000) for i in range(100))
    entry = BenchmarkEntry(
        first_call_s=0.31, trace_s=0.01, lower_s=0.02, compile_s=0.25,
        compiled_on_first_call=True, runtime=runtime(samples),
        metrics=model.ProgramMetrics(jaxpr_eqns=22, hlo_ops=40, flops=1e6),
        eager_median_s=4e-3, break_even_calls=12.0, device_peak_bytes=4096,
        jitted_by_benchmark=True, instructions=None,
    )  # fmt: skip
    return dataclasses.replace(entry, **changes)


def measured_test() -> RecordedTest:
    f = fn("step", "m.py:3", trace_s=0.1, lower_s=0.2, compile_s=0.3)
    f.eqn_sources = {"m.py:4": [3, 2, 0]}
    test = rec(f, benchmarks={"step": bench(), "grow": ScalingEntry(
        metric="jaxpr_eqns", sizes=(1, 2), values=(3.0, 3.0), exponent=0.0
    )})  # fmt: skip
    test.eager = model.Counts(lowerings=2, compiles=2, compile_s=0.05, compile_cpu_s=0.04)
    test.confirmation = Remeasured({f.key: Phases(0.2, 0.3)}, repeats=3, seconds=1.0)
    return test


# -- per field ---------------------------------------------------------------------------------


def test_a_benchmark_keeps_what_the_gate_reads_and_drops_the_rest() -> None:
    entry = bench()
    slim = baseline_form(rec(benchmarks={"b": entry}), "cpu").benchmarks["b"]
    assert isinstance(slim, BenchmarkEntry) and slim.runtime is not None
    assert entry.runtime is not None
    # Dropped: never gated (the first call's seconds and the op-by-op median and break-even).
    dropped = ("first_call_s", "trace_s", "lower_s", "compile_s", "eager_median_s",
               "break_even_calls")  # fmt: skip
    assert {k: getattr(slim, k) for k in dropped} == dict.fromkeys(dropped)
    # Kept: program metrics, the flags, device peak, instructions.
    kept = ("metrics", "compiled_on_first_call", "jitted_by_benchmark", "device_peak_bytes",
            "instructions")  # fmt: skip
    assert {k: getattr(slim, k) for k in kept} == {k: getattr(entry, k) for k in kept}
    # Of the runtime, what compare.runtime_verdict reads: median, fastest round, CPU median
    # (and the rounds, below); the statistics that only describe the run are left out.
    read = ("median_s", "min_s", "cpu_median_s")
    assert {k: getattr(slim.runtime, k) for k in read} == {
        k: getattr(entry.runtime, k) for k in read
    }
    assert model.RUNTIME_OPTIONAL == ("max_s", "mean_s", "stddev_s", "q1_s", "q3_s", "iqr_s",
                                      "rounds", "iterations", "outliers")  # fmt: skip
    assert all(getattr(entry.runtime, k) is not None for k in model.RUNTIME_OPTIONAL)
    assert {k: getattr(slim.runtime, k) for k in model.RUNTIME_OPTIONAL} == dict.fromkeys(
        model.RUNTIME_OPTIONAL
    )
    # The rank test's rounds: the middle one of each of 40 equal runs of the sorted rounds.
    assert BASELINE_SAMPLES == 40
    ordered = sorted(entry.runtime.samples_s)
    assert slim.runtime.samples_s == tuple(ordered[(2 * i + 1) * 100 // 80] for i in range(40))


def test_a_test_entry_gated_on_cpu_keeps_its_counts_and_cpu_seconds_not_its_wall() -> None:
    test = measured_test()
    slim = baseline_form(test, "cpu")
    assert slim.confirmation is None
    assert [f.eqn_sources for f in slim.functions.values()] == [{}]
    # Counts, sizes and CPU seconds of the test and its functions as measured; their wall
    # seconds (not read by a gate on the CPU clock) left out.
    f, g = test.functions["step at m.py:3"], slim.functions["step at m.py:3"]
    for name in model.NUMBER_FIELDS:
        if name in model.WALL_FIELDS:
            assert (getattr(slim, name), getattr(g, name)) == (None, None)
            assert getattr(test, name) and getattr(f, name)  # measured: there to drop
        else:
            assert (getattr(slim, name), getattr(g, name)) == (
                getattr(test, name),
                getattr(f, name),
            )
    assert (slim.total_s, slim.total_cpu_s) == (None, test.total_cpu_s)
    assert slim.benchmarks["grow"] is test.benchmarks["grow"]  # a scaling entry, whole


def test_the_eager_block_keeps_its_counts_alone_and_is_left_out_where_they_are_0() -> None:
    test = measured_test()  # 2 lowerings, 2 compiles of JAX's helpers, with their seconds
    slim = baseline_form(test, "cpu")
    # The compile-storm diagnosis reads its compiles; nothing reads its seconds or sizes.
    assert {k: getattr(slim.eager, k) for k in model.COUNT_FIELDS} == {
        "traces": 0, "lowerings": 2, "compiles": 2, "cache_hits": 0
    }  # fmt: skip
    assert {k: getattr(slim.eager, k) for k in model.EAGER_OPTIONAL} == dict.fromkeys(
        model.EAGER_OPTIONAL
    )
    written = model.recorded_test_to_json(slim)
    assert written["eager"] == {"cache_hits": 0, "compiles": 2, "lowerings": 2, "traces": 0}
    quiet = baseline_form(rec(fn("f", "m.py:1")), "cpu")
    assert "eager" not in model.recorded_test_to_json(quiet)
    assert quiet.eager == model.no_eager()
    # The run file keeps the whole block, zeros and all.
    assert model.recorded_test_to_json(rec(fn("f", "m.py:1")))["eager"] == {
        k: 0 if k in model.COUNT_FIELDS or k.endswith("eqns") or k.endswith("ops") else 0.0
        for k in model.NUMBER_FIELDS
    }


@pytest.mark.parametrize("how", ["option", "marker"])
def test_a_test_gated_on_wall_seconds_keeps_them(how: str) -> None:
    test = measured_test()
    if how == "marker":  # @pytest.mark.jaxperf(compile_clock="wall") over the run's cpu
        test.marker = {"compile_clock": "wall"}
    slim = baseline_form(test, "wall" if how == "option" else "cpu")
    assert (slim.total_s, slim.total_cpu_s) == (test.total_s, test.total_cpu_s)
    assert slim.functions["step at m.py:3"].compile_s == 0.3
    # A marker's other clock over a wall run: left out again.
    test.marker = {"compile_clock": "cpu"}
    assert baseline_form(test, "wall").total_s is None


def test_wall_seconds_stay_where_the_cpu_seconds_were_not_measured() -> None:
    # The gate falls back to wall seconds where an entry has no CPU seconds (a /1 file).
    test = rec(fn("f", "m.py:1", compile_s=0.3, cpu=None))
    slim = baseline_form(test, "cpu")
    assert slim.total_cpu_s is None and slim.total_s == 0.3
    assert baseline_form(rec(fn("f", "m.py:1", compile_s=0.3)), "instructions").total_s is None


def test_the_baseline_form_of_a_baseline_entry_is_itself() -> None:
    slim = baseline_form(measured_test(), "cpu")
    assert baseline_form(slim, "cpu") is slim
    assert baseline_samples(baseline_samples(tuple(range(100)))) == baseline_samples(
        tuple(range(100))
    )


@pytest.mark.parametrize("n", [0, 1, 5, 40, 41, 57, 100])
def test_baseline_samples_keeps_at_most_forty_sorted_order_statistics(n: int) -> None:
    samples = tuple(float((13 * i) % 101) for i in range(n))
    kept = baseline_samples(samples)
    assert len(kept) == min(n, BASELINE_SAMPLES)
    assert list(kept) == sorted(kept)
    assert set(kept) <= set(samples)
    if n <= BASELINE_SAMPLES:
        assert kept == tuple(sorted(samples))
    else:  # spread over the whole range: neither end left to one side
        ordered = sorted(samples)
        step = n // BASELINE_SAMPLES
        assert kept[0] <= ordered[step] and kept[-1] >= ordered[-1 - step]


def test_the_rank_test_against_the_kept_rounds_gives_the_same_verdicts() -> None:
    # A clear slowdown, an unchanged run and a clear speed-up, each judged against the full
    # rounds and against the 40 a baseline keeps: the same breach, note or improvement.
    base = bench(tuple(1e-3 * (1 + (i % 10) / 100) for i in range(100)))
    for factor, found in ((2.5, "breach"), (1.0, "none"), (0.4, "improvement")):
        assert base.runtime is not None
        now = bench(tuple(s * factor for s in base.runtime.samples_s))
        outcomes = []
        for old in (base, baseline_form(rec(benchmarks={"b": base}), "cpu").benchmarks["b"]):
            verdict = Verdict()
            assert isinstance(old, BenchmarkEntry)
            runtime_verdict(verdict, "b", now, old, Gating(tol=Tolerances()))
            outcomes.append(
                "breach" if verdict.breaches else "improvement" if verdict.improvements else "none"
            )
        assert outcomes == [found, found]


# -- the file ----------------------------------------------------------------------------------


def test_a_baseline_entry_is_written_without_the_dropped_fields(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    store.save(path, RunRecord(ENV, {"t.py::a": baseline_form(measured_test(), "cpu")}))
    entry = read_json(path)["tests"]["t.py::a"]
    step = entry["benchmarks"]["step"]
    assert set(step) == {
        "kind", "compiled_on_first_call", "runtime", "jaxpr_eqns", "hlo_ops", "flops",
        "device_peak_bytes", "jitted_by_benchmark",
    }  # fmt: skip
    assert len(step["runtime"]["samples_s"]) == 40
    assert "confirmation" not in entry and "eqn_sources" not in entry["functions"]["step at m.py:3"]
    assert store.load(path) == RunRecord(ENV, {"t.py::a": baseline_form(measured_test(), "cpu")})


def test_a_run_file_keeps_every_field(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    store.save(path, RunRecord(ENV, {"t.py::a": measured_test()}))
    step = read_json(path)["tests"]["t.py::a"]["benchmarks"]["step"]
    assert {"first_call_s", "trace_s", "lower_s", "compile_s", "eager_median_s"} <= set(step)
    assert len(step["runtime"]["samples_s"]) == 100
    assert store.load(path) == RunRecord(ENV, {"t.py::a": measured_test()})


@pytest.mark.parametrize("reader", ["msgspec", "orjson", "json"])
def test_every_reader_reads_a_baseline_as_the_careful_reader(
    tmp_path: Path, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if reader != "msgspec":
        monkeypatch.setattr(store, "_typed", None)
    if reader == "json":
        monkeypatch.setattr(store, "_fast_loads", None)
    run = RunRecord(ENV, {k: baseline_form(v, "cpu") for k, v in full_report().tests.items()})
    path = tmp_path / "baseline.json"
    store.save(path, run)
    careful = model.RunRecord(
        ENV,
        {
            k: model.recorded_test_from_json(v, k)
            for k, v in json.loads(path.read_text())["tests"].items()
        },
    )
    assert store.load(path) == careful == run


# -- a file of an older schema -----------------------------------------------------------------


def schema_5(run: RunRecord, schema: str = "pytest-jaxperf/5") -> dict[str, Any]:
    """`run` as pytest-jaxperf/5 wrote it: every field of every benchmark (a /6 baseline as
    well but for the first-call seconds, which /6 may leave out)."""
    data = model.run_to_json(run)
    data["schema"] = schema
    return data


@pytest.mark.parametrize("schema", ["pytest-jaxperf/5", "pytest-jaxperf/6"])
def test_an_older_file_reads_and_the_first_save_converts_it(tmp_path: Path, schema: str) -> None:
    path = tmp_path / "baseline.json"
    old = RunRecord(ENV, {"t.py::a": measured_test(), "t.py::b": rec(fn("g", "m.py:9"))})
    old.tests["t.py::a"].confirmation = None  # as a save of /5 wrote it
    path.write_text(json.dumps(schema_5(old, schema), indent=2))
    loaded = store.load(path)
    assert loaded is not None and loaded.schema == schema
    assert loaded.tests == old.tests
    # A save of one test converts every entry, and its line says so.
    how = Resave(Measured.of(ENV, "gate", "wall"), Tolerances())
    store.save_locked(path, RunRecord(ENV, {"t.py::b": rec(fn("g", "m.py:9"))}), how)
    assert how.tally.line("b.json") == (
        "jaxperf: baseline b.json: 0 entries updated, 2 kept, 0 added; converted from "
        f"{schema} to pytest-jaxperf/7 (what no gate reads is now in the run file only: "
        "wall seconds beside gated CPU seconds, JAX helpers' seconds, runtime statistics but "
        "median and fastest round, first-call seconds)"
    )
    data = read_json(path)
    assert data["schema"] == "pytest-jaxperf/7"
    entry = data["tests"]["t.py::a"]
    assert "first_call_s" not in entry["benchmarks"]["step"]
    assert "iqr_s" not in entry["benchmarks"]["step"]["runtime"]
    assert "compile_s" not in entry and "compile_cpu_s" in entry
    assert entry["eager"] == {"cache_hits": 0, "compiles": 2, "lowerings": 2, "traces": 0}
    assert "eager" not in data["tests"]["t.py::b"]
    saved = store.load(path)
    assert saved is not None and saved.tests["t.py::a"] == baseline_form(
        old.tests["t.py::a"], "cpu"
    )
    # The next save has nothing to convert.
    again = Resave(Measured.of(ENV, "gate", "wall"), Tolerances())
    store.save_locked(path, RunRecord(ENV, {"t.py::b": rec(fn("g", "m.py:9"))}), again)
    assert "converted" not in again.tally.line("b.json")
    assert read_json(path) == data


# -- end to end --------------------------------------------------------------------------------

BENCHMARKED = """
import jax
import jax.numpy as jnp

@jax.jit
def step(x):
    return jnp.tanh(x) * 2 + 1

@jax.jit
def other(x):
    return jnp.cos(x) @ x

def test_step(jaxperf):
    jaxperf.benchmark(step, jnp.ones(64))

def test_other(jaxperf):
    jaxperf.benchmark(other, jnp.ones((8, 8)))
"""
# Enough rounds that a baseline keeps fewer than the run file.
ROUNDS = ("--jaxperf-min-rounds=60", "--jaxperf-max-time=0.01")
CONVERTED = (
    "jaxperf: baseline .jaxperf/baseline.json: * entries updated, * kept, 0 added; converted "
    "from pytest-jaxperf/6 to pytest-jaxperf/7 (what no gate reads is now in the run file "
    "only: wall seconds beside gated CPU seconds, JAX helpers' seconds, runtime statistics "
    "but median and fastest round, first-call seconds)"
)


def _statuses(junit: Path) -> dict[str, str]:
    import xml.etree.ElementTree as ET

    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        out[case.get("name", "")] = str(props.get("jaxperf_status"))
    return out


@pytest.mark.jax_internals
def test_a_baseline_of_schema_6_converts_once_and_compare_judges_as_the_plugin(
    jp: pytest.Pytester,
) -> None:
    import subprocess
    import sys

    from pytest_jaxperf.cli import evaluate_all

    jp.makepyfile(test_mod=BENCHMARKED)
    saved = jp.runpytest_subprocess(
        "--jaxperf", "--jaxperf-save", "--jaxperf-json=run.json", *ROUNDS
    )
    saved.assert_outcomes(passed=2)
    path = jp.path / ".jaxperf" / "baseline.json"
    data, run = read_json(path), read_json(jp.path / "run.json")
    for nodeid in ("test_mod.py::test_step", "test_mod.py::test_other"):
        (label,) = data["tests"][nodeid]["benchmarks"]
        kept, full = (d["tests"][nodeid]["benchmarks"][label] for d in (data, run))
        # The baseline holds the rank test's 40 rounds, sorted; the run file every round
        # (60 or more, thinned to 100) and the first call's seconds.
        assert len(kept["runtime"]["samples_s"]) == 40 < len(full["runtime"]["samples_s"])
        assert kept["runtime"]["samples_s"] == sorted(kept["runtime"]["samples_s"])
        assert "first_call_s" not in kept and full["first_call_s"] > 0
        assert kept["runtime"]["median_s"] == full["runtime"]["median_s"]
        # Of the runtime statistics what the rule reads; the run file has them all.
        assert set(kept["runtime"]) == {"median_s", "min_s", "cpu_median_s", "samples_s"}
        assert {"iqr_s", "rounds", "mean_s"} <= set(full["runtime"])
        # No wall seconds (the gate reads CPU seconds), of the eager block its counts (none
        # where all 0); the run file has them all.
        entry = data["tests"][nodeid]
        assert "compile_s" not in entry and entry["compile_cpu_s"] > 0
        assert set(entry.get("eager", {})) <= set(model.COUNT_FIELDS)
        assert set(run["tests"][nodeid]["eager"]) == set(model.NUMBER_FIELDS)
        # As pytest-jaxperf/6 saved it: every field but the first call's seconds.
        data["tests"][nodeid] = run["tests"][nodeid]
        data["tests"][nodeid]["benchmarks"][label] = {
            k: v for k, v in full.items() if k not in model.FIRST_CALL_FIELDS
        }
        assert data["tests"][nodeid]["functions"]
    data["schema"] = "pytest-jaxperf/6"
    path.write_text(json.dumps(data, indent=2))
    assert store.load(path) is not None  # read as it is
    result = jp.runpytest_subprocess("--jaxperf", "--jaxperf-save", *ROUNDS)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([CONVERTED])
    assert sum("converted from" in line for line in result.outlines) == 1
    converted = read_json(path)
    assert converted["schema"] == "pytest-jaxperf/7"
    for entry in converted["tests"].values():
        (bench,) = entry["benchmarks"].values()
        assert "first_call_s" not in bench and len(bench["runtime"]["samples_s"]) == 40
        assert "iqr_s" not in bench["runtime"]
        assert set(entry.get("eager", {})) <= set(model.COUNT_FIELDS)
        assert not {"trace_s", "lower_s", "compile_s"} & {
            k for e in (entry, *entry["functions"].values()) for k in e
        }
    again = jp.runpytest_subprocess("--jaxperf", "--jaxperf-save", *ROUNDS)
    assert "converted" not in again.stdout.str()
    # `jaxperf compare` of the run file against this baseline: the plugin's verdicts.
    gated = jp.runpytest_subprocess(
        "--jaxperf", "--jaxperf-json=run2.json", "--junitxml=junit.xml", *ROUNDS
    )
    plugin = _statuses(jp.path / "junit.xml")
    assert set(plugin) == {"test_step", "test_other"}
    loaded, now = store.load(path), store.load(jp.path / "run2.json")
    assert loaded is not None and now is not None
    judged = evaluate_all(loaded, now, Tolerances())
    assert {k.split("::")[1]: v.status for k, v in judged.items()} == plugin
    compared = subprocess.run(
        [sys.executable, "-m", "pytest_jaxperf", "compare", str(path), "run2.json"],
        cwd=jp.path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    tally = [x for x in gated.outlines if x.startswith("jaxperf: ") and " regression" in x]
    assert tally and tally[-1] in compared.stdout.splitlines()


def test_jaxperf_merge_writes_the_baseline_form_and_says_it_converted(tmp_path: Path) -> None:
    from pytest_jaxperf.storage.shards import load_shards, resave_lines, resave_shards

    shard = tmp_path / "shard.json"
    store.save(shard, RunRecord(ENV, {"t.py::a": measured_test()}))
    path = tmp_path / "baseline.json"
    old = RunRecord(ENV, {"t.py::b": rec(fn("g", "m.py:9"))})
    old.tests["t.py::b"].benchmarks = {"b": bench()}
    path.write_text(json.dumps(schema_5(old), indent=2))
    merged = resave_shards(path, load_shards([shard]), Tolerances())
    assert resave_lines(merged)[0] == (
        f"jaxperf: merged 1 shard report into {path}: 1 passed test (0 entries updated, 1 added, "
        "0 as stored), 1 other entry kept, 2 in all; converted from pytest-jaxperf/5 to "
        "pytest-jaxperf/7 (what no gate reads is now in the run file only: wall seconds "
        "beside gated CPU seconds, JAX helpers' seconds, runtime statistics but median and "
        "fastest round, first-call seconds)"
    )
    saved = store.load(path)
    assert saved is not None
    # The stored entry the shard did not touch is converted too.
    assert (
        saved.tests["t.py::b"] == baseline_form(old.tests["t.py::b"], "cpu") != old.tests["t.py::b"]
    )
    assert saved.tests["t.py::a"] == baseline_form(
        dataclasses.replace(measured_test(), confirmation=None), "cpu"
    )


def test_jaxperf_resolve_writes_the_baseline_form(tmp_path: Path) -> None:
    from pytest_jaxperf.storage.resolve import resolve_sides

    test = dataclasses.replace(measured_test(), confirmation=None)
    # One side of an older schema, the other saved since: the same entry, written alike.
    ours = json.dumps(schema_5(RunRecord(ENV, {"t.py::a": test})), indent=2)
    theirs = store.dumps(RunRecord(ENV, {"t.py::a": baseline_form(test, "cpu")}))
    resolved = resolve_sides(ours, theirs, None, "ours", "--keep ours")
    assert resolved.kept == ()  # no difference the gate reads: nothing to choose
    assert resolved.run.tests == {"t.py::a": baseline_form(test, "cpu")}


@pytest.mark.parametrize("reader", ["msgspec", "orjson", "json"])
def test_a_benchmark_that_measured_no_number_reads_back(
    tmp_path: Path, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Timing off and no program metrics: its baseline entry holds no number at all.
    if reader != "msgspec":
        monkeypatch.setattr(store, "_typed", None)
    if reader == "json":
        monkeypatch.setattr(store, "_fast_loads", None)
    bare = bench(runtime=None, metrics=None, device_peak_bytes=None, jitted_by_benchmark=False)
    run = RunRecord(
        ENV, {"t.py::a": baseline_form(rec(fn("f", "m.py:1"), benchmarks={"b": bare}), "cpu")}
    )
    path = tmp_path / "baseline.json"
    store.save(path, run)
    assert read_json(path)["tests"]["t.py::a"]["benchmarks"]["b"] == {
        "kind": "benchmark", "compiled_on_first_call": True
    }  # fmt: skip
    assert store.load(path) == run


FLAT = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def f(x):
    for _ in range(20):
        x = jnp.sin(x) * 2 + 1
    return x

@pytest.mark.jaxperf
def test_f():
    f(jnp.ones(8))
"""
NO_WALL = (
    "jaxperf: compile time of 1 test not gated: the baseline has no wall seconds (saved on "
    "the CPU clock: the run file has them); re-save with --jaxperf-compile-clock=wall "
    "--jaxperf-save [baseline_incomplete]"
)


@pytest.mark.jax_internals
def test_a_wall_clock_gate_against_a_cpu_saved_baseline_says_not_gated_with_the_fix(
    jp: pytest.Pytester,
) -> None:
    jp.makepyfile(test_mod=FLAT)
    jp.runpytest_subprocess("--jaxperf", "--jaxperf-save").assert_outcomes(passed=1)
    path = jp.path / ".jaxperf" / "baseline.json"
    entry = read_json(path)["tests"]["test_mod.py::test_f"]
    assert "compile_s" not in entry and entry["compile_cpu_s"] > 0
    wall = ("--jaxperf", "--jaxperf-compile-clock=wall", "--jaxperf-compile-floor=1000")
    result = jp.runpytest_subprocess(*wall)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([NO_WALL, "jaxperf: 0 regressions, 0 improvements, 0 new, *"])
    # Never a silent pass: the code makes it fail where CI asks.
    strict = jp.runpytest_subprocess(*wall, "--jaxperf-strict=baseline_incomplete")
    strict.assert_outcomes(failed=1)
    # Saved on the wall clock, the baseline keeps the wall seconds it gates, and the note goes.
    saved = jp.runpytest_subprocess(*wall, "--jaxperf-save")
    saved.assert_outcomes(passed=1)
    saved.stdout.fnmatch_lines(["jaxperf: baseline *: 1 entries updated, 0 kept, 0 added"])
    entry = read_json(path)["tests"]["test_mod.py::test_f"]
    (function,) = entry["functions"].values()
    for where in (entry, function):
        assert where["compile_s"] > 0 and where["compile_cpu_s"] > 0
        assert {"trace_s", "lower_s"} <= set(where)
    again = jp.runpytest_subprocess(*wall)
    again.assert_outcomes(passed=1)
    assert "no wall seconds" not in again.stdout.str()


def test_the_baseline_form_makes_new_records_and_leaves_the_run_s_as_they_were() -> None:
    import copy

    whole = full_report().tests["tests/test_b.py::test_y"]
    whole.functions["integrate at pkg/ode.py:42"].eqn_sources = {"pkg/ode.py:43": [5, 3, 1]}
    kept = copy.deepcopy(whole)
    wall_kept: dict[str, Any] = {}
    for clock, dropped in (("wall", wall_kept), ("cpu", dict.fromkeys(model.WALL_FIELDS))):
        form = baseline_form(whole, clock)
        assert whole == kept  # the run's record unchanged
        assert type(form) is model.RecordedTest and sorted(vars(form)) == sorted(vars(whole))
        for key, f in form.functions.items():
            changed = bool(dropped or whole.functions[key].eqn_sources)
            assert type(f) is model.FunctionRecord and (f is not whole.functions[key]) == changed
            assert f == dataclasses.replace(whole.functions[key], eqn_sources={}, **dropped)
        assert form == dataclasses.replace(
            whole, confirmation=None, functions=form.functions, benchmarks=form.benchmarks,
            eager=form.eager, **dropped,
        )  # fmt: skip
