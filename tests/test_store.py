"""Unit tests for pytest_jaxperf.storage.store and the JSON form in pytest_jaxperf.model."""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _records import resaved

from pytest_jaxperf import model
from pytest_jaxperf.model import (
    SCHEMA,
    BenchmarkEntry,
    Counts,
    FunctionRecord,
    ProgramMetrics,
    RecordedTest,
    RunRecord,
    RuntimeStats,
    ScalingEntry,
    run_to_json,
)
from pytest_jaxperf.storage import entries, store
from pytest_jaxperf.storage.store import BaselineError, dumps, format_json, load, save


def full_report() -> RunRecord:
    """A report in which every field holds a distinct, non-default value."""
    f = FunctionRecord(
        traces=2,
        lowerings=3,
        compiles=4,
        cache_hits=1,
        trace_s=0.012345,
        lower_s=0.023456,
        compile_s=0.345678,
        name="integrate",
        site="pkg/ode.py:42",
        retrace_reasons=["x: f32[3] -> f32[4]", "static argument n: 2 -> 3"],
    )
    g = FunctionRecord(traces=1, lowerings=1, compiles=1, name="<lambda>", site="pkg/ode.py:7")
    rec = RecordedTest(
        traces=3,
        lowerings=4,
        compiles=5,
        cache_hits=1,
        trace_s=0.5,
        lower_s=0.25,
        compile_s=1.125,
        outcome="passed",
        functions={f.key: f, g.key: g},
        eager=Counts(lowerings=7, compiles=7, compile_s=0.174),
        benchmarks={
            "step": BenchmarkEntry(
                first_call_s=0.31,
                trace_s=0.01,
                lower_s=0.02,
                compile_s=0.25,
                compiled_on_first_call=True,
                runtime=RuntimeStats(
                    min_s=1e-05,
                    max_s=2e-05,
                    median_s=1.2e-05,
                    mean_s=1.3e-05,
                    stddev_s=2e-06,
                    q1_s=1.1e-05,
                    q3_s=1.3e-05,
                    iqr_s=2e-06,
                    rounds=3,
                    iterations=200,
                    outliers=0,
                    samples_s=(1e-05, 1.2e-05, 2e-05),
                ),
                metrics=ProgramMetrics(jaxpr_eqns=22, hlo_ops=40, flops=1e6),
                eager_median_s=1e-4,
                break_even_calls=None,
            ),
            "scaling:f": ScalingEntry(
                metric="jaxpr_eqns", sizes=(10, 20), values=(5.0, 5.0), exponent=0.0
            ),
        },
        marker={"compile_rtol": 3.0, "max_traces": {"integrate": 1}},
    )
    other = RecordedTest(outcome="passed")
    return RunRecord(
        environment={"jax": "0.10.2", "backend": "cpu", "device_count": 2, "x64": False},
        tests={"tests/test_b.py::test_y": rec, "tests/test_a.py::test_x": other},
    )


def tmp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# -- saving -----------------------------------------------------------------------------------


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    report = full_report()
    path = tmp_path / "baseline.json"
    save(path, report)
    loaded = load(path)
    assert loaded == report
    assert loaded is not None
    f = loaded.tests["tests/test_b.py::test_y"].functions["integrate at pkg/ode.py:42"]
    assert f.retrace_reasons == ["x: f32[3] -> f32[4]", "static argument n: 2 -> 3"]
    assert f.cache_hits == 1
    assert loaded.schema == SCHEMA


def test_save_creates_missing_directories(tmp_path: Path) -> None:
    path = tmp_path / ".jaxperf" / "deep" / "baseline.json"
    save(path, full_report())
    assert load(path) == full_report()


def test_file_format_is_sorted_indented_and_ends_with_newline(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    save(path, full_report())
    text = path.read_text(encoding="utf-8")
    assert text.endswith("}\n")
    assert not text.endswith("\n\n")
    assert text == format_json(json.loads(text)) + "\n"
    assert text.splitlines()[1].startswith('  "environment": {')
    data = json.loads(text)
    assert list(data) == ["environment", "schema", "tests"]
    assert list(data["tests"]) == ["tests/test_a.py::test_x", "tests/test_b.py::test_y"]
    entry = data["tests"]["tests/test_b.py::test_y"]
    assert list(entry) == sorted(entry)
    assert list(entry["functions"]) == ["<lambda> at pkg/ode.py:7", "integrate at pkg/ode.py:42"]


def test_timings_are_rounded_to_six_digits() -> None:
    f = FunctionRecord(name="f", site="m.py:1", trace_s=0.1234567891, compile_s=2.0000004)
    rec = RecordedTest(functions={f.key: f}, lower_s=1e-9)
    data = json.loads(dumps(RunRecord(tests={"t": rec})))
    entry = data["tests"]["t"]
    assert entry["functions"]["f at m.py:1"]["trace_s"] == 0.123457
    assert entry["functions"]["f at m.py:1"]["compile_s"] == 2.0
    assert entry["lower_s"] == 0.0


def test_save_is_deterministic() -> None:
    assert dumps(full_report()) == dumps(full_report())


# -- the file layout --------------------------------------------------------------------------


def odd_report() -> RunRecord:
    """Values the templates do not write themselves: odd strings, odd numbers, odd keys."""
    rec = full_report().tests["tests/test_b.py::test_y"]
    rec.outcome = 'weird "quoted"\\ \u00e9\n\t'
    rec.functions['ünïcode at a"b.py:1'] = FunctionRecord(
        name="ünïcode", site='a"b.py:1', retrace_reasons=['x, y: "z" -> \\', "\u2603"]
    )
    rec.benchmarks['odd "label" \u00e9'] = ScalingEntry(
        metric="compile_s", sizes=(), values=(), exponent=math.nan, max_exponent=-math.inf
    )
    floaty = RecordedTest(
        traces=True,  # a bool where a count goes: written as json writes a bool
        cache_hits=2**70,
        compile_s=math.inf,
        eager=Counts(compiles=3, trace_s=1),  # an int where seconds go
        functions={"f": FunctionRecord(name="f", lower_s=math.nan, compiles=1.0)},  # type: ignore[arg-type]
    )
    unnamed = FunctionRecord(name=None, site="m.py:1")  # type: ignore[arg-type]
    whole = FunctionRecord(name="g", site="m.py:2", trace_s=1)  # an int where seconds go
    numbered = RecordedTest(
        functions={"f": unnamed, "e": whole},
        benchmarks={2: rec.benchmarks["step"], 1: rec.benchmarks["step"]},  # type: ignore[dict-key]
    )
    return RunRecord(
        environment={"é": "ü", "list": [1, "two"], "none": None, "nested": {"b": 1, "a": 2}},
        tests={
            "tests/test_b.py::test_y": rec,
            "tests/test_a.py::test_x": RecordedTest(),
            'tests/test_ü.py::test["quote", \\]': floaty,
            "tests/test_z.py::test_numbered": numbered,
        },
    )


REPORTS = [
    pytest.param(full_report, id="full"),
    pytest.param(odd_report, id="odd-values"),
    pytest.param(RunRecord, id="empty"),
    pytest.param(
        lambda: RunRecord(tests={2: RecordedTest(), 1: RecordedTest()}), id="numbered-tests"
    ),
]


@pytest.mark.parametrize("make", REPORTS)
def test_file_holds_exactly_the_json_form(make: Any) -> None:
    report = make()
    text = dumps(report)
    doc = run_to_json(report)
    before = json.dumps(doc, indent=2, sort_keys=True) + "\n"  # the layout before this one
    assert json.dumps(json.loads(text)) == json.dumps(json.loads(before))  # nan == nan too
    assert json.dumps(json.loads(text)) == json.dumps(doc, sort_keys=True)
    assert text.isascii()


@pytest.mark.parametrize("make", REPORTS)
def test_templates_write_what_the_general_layout_writes(make: Any) -> None:
    report = make()
    assert dumps(report) == format_json(run_to_json(report)) + "\n"


def slim_report() -> RunRecord:
    """Entries as a /7 baseline holds them (resave.baseline_form), in each of their forms:
    with and without wall seconds; the eager block whole, its counts alone and left out; the
    runtime statistics whole and as a baseline keeps them; a function's source lines."""
    from pytest_jaxperf.storage.resave import baseline_form

    base = dataclasses.replace(full_report().tests["tests/test_b.py::test_y"], marker={})
    sourced = next(iter(base.functions.values()))
    sourced.eqn_sources = {"pkg/ode.py:43": [5, 3, 1]}
    sourced.trace_cpu_s, sourced.compile_cpu_s = 0.25, 0.5
    step = base.benchmarks["step"]
    assert step.runtime is not None
    cpu_runtime = dataclasses.replace(step.runtime, cpu_median_s=2e-5)
    cpu_step = dataclasses.replace(step, runtime=cpu_runtime)
    base.benchmarks = {**base.benchmarks, "cpu": cpu_step}  # a CPU median besides
    slim = baseline_form(base, "cpu")
    assert slim.trace_s is None and slim.eager.trace_cpu_s is None  # what the test is about
    no_eager = dataclasses.replace(slim, eager=model.no_eager())
    on_wall = baseline_form(base, "wall")  # its wall seconds kept, the eager counts alone
    assert on_wall.trace_s is not None and on_wall.eager.compile_s is None
    no_wall: dict[str, Any] = dict.fromkeys(model.WALL_FIELDS)
    eager_no_wall = dataclasses.replace(base.eager, **no_wall)
    whole_eager_no_wall = dataclasses.replace(slim, eager=eager_no_wall)
    tests = {
        "slim": slim,
        "no_eager": no_eager,
        "on_wall": on_wall,
        "on_wall_no_eager": dataclasses.replace(on_wall, eager=model.no_eager()),
        "whole_eager_no_wall": whole_eager_no_wall,
        "whole_eager": dataclasses.replace(on_wall, eager=base.eager),
        "sourced": dataclasses.replace(base, confirmation=None),
    }
    return RunRecord(environment={"backend": "cpu"}, tests=tests)


def test_templates_write_the_baseline_forms_as_the_general_layout_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = slim_report()
    expected = format_json(run_to_json(report)) + "\n"
    data = json.loads(expected)["tests"]
    assert "trace_s" not in data["slim"] and "eager" not in data["no_eager"]
    assert "trace_s" not in data["whole_eager_no_wall"]["eager"]
    assert "trace_cpu_s" in data["whole_eager_no_wall"]["eager"]
    assert list(data["on_wall"]["eager"]) == sorted(model.COUNT_FIELDS)
    # Every entry from the templates: the general writer is not called.
    monkeypatch.setattr(store, "recorded_test_to_json", None)
    assert dumps(report) == expected
    assert model.run_from_json(json.loads(expected)) == report  # read back as written


def test_the_fast_path_reads_the_baseline_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    report = slim_report()
    text = dumps(report)
    data = json.loads(text)
    benchmarks = data["tests"]["slim"]["benchmarks"]
    assert list(benchmarks["step"]["runtime"]) == ["median_s", "min_s", "samples_s"]
    assert list(benchmarks["cpu"]["runtime"]) == ["cpu_median_s", "median_s", "min_s", "samples_s"]
    monkeypatch.setattr(model, "_checked_runtime", None)  # the runtime blocks read at once too
    assert model._plain_tests(data["tests"]) == set(data["tests"])  # every entry: none refused
    fast = model.run_from_json(data, consume=True)
    careful = {
        k: model.recorded_test_from_json(v, k) for k, v in json.loads(text)["tests"].items()
    }
    assert fast == RunRecord(report.environment, careful) == report
    assert type(fast.tests["no_eager"].eager) is Counts
    assert fast.tests["no_eager"].eager is not fast.tests["on_wall_no_eager"].eager
    assert dumps(fast) == text


@pytest.mark.parametrize("make", REPORTS)
def test_every_object_has_sorted_keys(make: Any) -> None:
    def check(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        assert keys == sorted(keys)
        return dict(pairs)

    json.loads(dumps(make()), object_pairs_hook=check)


def test_layout_indents_to_each_field_function_and_benchmark_entry() -> None:
    lines = dumps(full_report()).splitlines()
    assert lines[:3] == ["{", '  "environment": {', '    "backend": "cpu",']
    assert '  "schema": "pytest-jaxperf/7",' in lines
    assert '    "tests/test_a.py::test_x": {' in lines
    assert '      "traces": 3,' in lines
    assert '      "compile_s": 1.125,' in lines
    assert (
        '      "eager": {"cache_hits": 0, "compile_cpu_s": 0.0, "compile_s": 0.174, '
        '"compiles": 7, "hlo_ops": 0, "jaxpr_eqns": 0, "lower_cpu_s": 0.0, "lower_s": 0.0, '
        '"lowerings": 7, "trace_cpu_s": 0.0, "trace_eqns": 0, "trace_s": 0.0, "traces": 0, '
        '"xla_ops": 0},'
    ) in lines
    assert (
        '        "integrate at pkg/ode.py:42": {"cache_hits": 1, "compile_cpu_s": 0.0, '
        '"compile_s": 0.345678, "compiles": 4, "hlo_ops": 0, "jaxpr_eqns": 0, "lower_cpu_s": 0.0, '
        '"lower_s": 0.023456, '
        '"lowerings": 3, "name": "integrate", '
        '"retrace_reasons": ["x: f32[3] -> f32[4]", "static argument n: 2 -> 3"], '
        '"site": "pkg/ode.py:42", "trace_cpu_s": 0.0, "trace_eqns": 0, "trace_s": 0.012345, '
        '"traces": 2, "xla_ops": 0}'
    ) in lines
    assert '        "step": {' in lines
    assert '          "first_call_s": 0.31,' in lines
    assert (
        '          "runtime": {"iqr_s": 2e-06, "iterations": 200, "max_s": 2e-05, '
        '"mean_s": 1.3e-05, "median_s": 1.2e-05, "min_s": 1e-05, "outliers": 0, "q1_s": 1.1e-05, '
        '"q3_s": 1.3e-05, "rounds": 3, "samples_s": [1e-05, 1.2e-05, 2e-05], "stddev_s": 2e-06},'
    ) in lines
    assert '      "benchmarks": {},' in lines  # empty objects stay on their line
    assert '      "functions": {},' in lines
    assert lines[-1] == "}"


def test_save_is_stable_byte_for_byte(tmp_path: Path) -> None:
    first, second, again = (tmp_path / name for name in ("a.json", "b.json", "c.json"))
    save(first, full_report())
    save(second, full_report())
    assert first.read_bytes() == second.read_bytes()
    loaded = load(first)
    assert loaded is not None
    save(again, loaded)  # a baseline rewritten unchanged stays byte for byte the same
    assert again.read_bytes() == first.read_bytes()


def test_a_file_in_the_old_layout_loads_the_same(tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    report = full_report()
    old.write_text(json.dumps(run_to_json(report), indent=2, sort_keys=True), encoding="utf-8")
    save(new, report)
    assert load(old) == load(new) == report


def _older_file(path: Path, schema: str, missing: tuple[str, ...]) -> dict[str, Any]:
    """A valid file as an older pytest-jaxperf wrote it: `schema`, without the `missing`
    fields in any counts; written to `path`, and returned."""
    data = valid()
    data["schema"] = schema
    for test in data["tests"].values():
        for counts in (test, test["eager"], *test["functions"].values()):
            for name in missing:
                del counts[name]
    path.write_text(json.dumps(data), encoding="utf-8")
    return data


def test_a_file_of_the_first_schema_loads_with_cpu_seconds_not_measured(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    data = _older_file(path, "pytest-jaxperf/1", model.CPU_FIELDS)
    loaded = load(path)
    assert loaded is not None
    rec = loaded.tests["tests/test_b.py::test_y"]
    assert (rec.total_cpu_s, rec.eager.total_cpu_s) == (None, None)
    assert rec.functions["integrate at pkg/ode.py:42"].compile_cpu_s is None
    assert rec.traces == 3 and rec.compile_s == 1.125
    data["schema"] = "pytest-jaxperf/2"  # from /2 on they are required
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(BaselineError, match="missing field 'trace_cpu_s'"):
        load(path)


def test_a_file_before_the_fourth_schema_loads_with_program_sizes_not_measured(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.json"
    data = _older_file(path, "pytest-jaxperf/3", model.SIZE_FIELDS)
    loaded = load(path)
    assert loaded is not None
    rec = loaded.tests["tests/test_b.py::test_y"]
    fn = rec.functions["integrate at pkg/ode.py:42"]
    assert (rec.jaxpr_eqns, rec.hlo_ops, fn.jaxpr_eqns, fn.hlo_ops) == (None,) * 4
    assert rec.traces == 3 and fn.compile_cpu_s == 0.0
    data["schema"] = "pytest-jaxperf/4"  # from /4 on they are required
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(BaselineError, match="missing field 'jaxpr_eqns'"):
        load(path)


def test_program_sizes_round_trip_measured_or_not(tmp_path: Path) -> None:
    report = full_report()
    rec = report.tests["tests/test_b.py::test_y"]
    fn = rec.functions["integrate at pkg/ode.py:42"]
    fn.jaxpr_eqns, fn.hlo_ops = 12, 13_702
    rec.eager.hlo_ops = None  # a lowering whose module was not found
    rec.recompute_totals()
    path = tmp_path / "b.json"
    save(path, report)
    text = path.read_text(encoding="utf-8")
    assert '"hlo_ops": 13702' in text and '"hlo_ops": null' in text
    loaded = load(path)
    assert loaded == report
    assert loaded is not None and loaded.tests["tests/test_b.py::test_y"].eager.hlo_ops is None


def test_a_benchmark_entry_reads_back_as_written() -> None:
    report = full_report()
    loaded = model.run_from_json(json.loads(dumps(report)))
    assert loaded.tests["tests/test_b.py::test_y"].benchmarks == (
        report.tests["tests/test_b.py::test_y"].benchmarks
    )


def test_a_new_counts_field_needs_only_its_declaration() -> None:
    # The field lists, the reader, the writer and the file's templates follow the dataclass.
    names = tuple(f.name for f in dataclasses.fields(Counts))
    assert names == model.NUMBER_FIELDS
    tagged = model.COUNT_FIELDS + model.TIME_FIELDS + model.CPU_FIELDS + model.SIZE_FIELDS
    assert set(tagged) == set(names)
    # The reader passes the numbers by position: they are the first fields of each record.
    assert tuple(f.name for f in dataclasses.fields(FunctionRecord))[: len(names)] == names
    assert tuple(f.name for f in dataclasses.fields(RecordedTest))[: len(names)] == names
    line = dumps(full_report()).splitlines()
    eager = next(x for x in line if x.startswith('      "eager": '))
    assert [k for k in json.loads(eager.split(": ", 1)[1].rstrip(","))] == sorted(names)


def test_load_leaves_the_garbage_collector_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    save(path, full_report())
    assert gc.isenabled()
    load(path)
    assert gc.isenabled()
    path.write_text("{", encoding="utf-8")
    with pytest.raises(BaselineError):
        load(path)
    assert gc.isenabled()
    gc.disable()
    try:
        save(path, full_report())
        load(path)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_save_replaces_the_whole_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_text("x" * 100_000, encoding="utf-8")
    save(path, RunRecord())
    assert path.read_text(encoding="utf-8") == dumps(RunRecord())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["baseline.json"]


def test_failed_save_onto_a_directory_leaves_it_untouched(tmp_path: Path) -> None:
    target = tmp_path / "baseline.json"
    target.mkdir()
    (target / "keep.txt").write_text("precious", encoding="utf-8")
    with pytest.raises((IsADirectoryError, PermissionError)):
        save(target, full_report())
    assert target.is_dir()
    assert (target / "keep.txt").read_text(encoding="utf-8") == "precious"
    assert tmp_files(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["baseline.json"]


def test_failed_save_leaves_the_old_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    save(path, full_report())
    before = path.read_bytes()
    broken = full_report()
    broken.tests["tests/test_b.py::test_y"].outcome = object()  # type: ignore[assignment]
    with pytest.raises(TypeError):
        save(path, broken)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["baseline.json"]


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("umask_022")
def test_new_file_gets_the_usual_permissions(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    save(path, RunRecord())
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


@pytest.mark.usefixtures("umask_022")
def test_overwriting_keeps_the_file_permissions(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_text("{}", encoding="utf-8")
    path.chmod(0o644)
    save(path, RunRecord())
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


# -- merging ----------------------------------------------------------------------------------


def with_outcome(outcome: str, traces: int) -> RecordedTest:
    f = FunctionRecord(name="f", site="m.py:1", traces=traces, lowerings=traces, compiles=traces)
    rec = RecordedTest(outcome=outcome, functions={f.key: f})
    rec.recompute_totals()
    return rec


def test_merge_keeps_tests_that_did_not_run_and_takes_passed_ones() -> None:
    old = RunRecord(
        environment={"jax": "0.10.1"},
        tests={"t::kept": with_outcome("passed", 1), "t::updated": with_outcome("passed", 1)},
    )
    run = RunRecord(
        environment={"jax": "0.10.2"},
        tests={"t::updated": with_outcome("passed", 2), "t::added": with_outcome("passed", 3)},
    )
    merged = resaved(old, run)
    assert sorted(merged.tests) == ["t::added", "t::kept", "t::updated"]
    # The kept entry was measured under jax 0.10.1, and keeps saying so; the file now says 0.10.2.
    assert merged.tests["t::kept"].traces == 1
    assert merged.environment_of("t::kept") == {"jax": "0.10.1"}
    assert merged.environment_of("t::updated") == {"jax": "0.10.2"}
    assert merged.tests["t::updated"].environment is None
    assert merged.tests["t::updated"].traces == 2
    assert merged.tests["t::added"].traces == 3
    assert merged.environment == {"jax": "0.10.2"}


@pytest.mark.parametrize("outcome", ["failed", "skipped"])
def test_merge_never_overwrites_with_an_unpassed_run(outcome: str) -> None:
    old = RunRecord(tests={"t::a": with_outcome("passed", 1)})
    run = RunRecord(tests={"t::a": with_outcome(outcome, 5), "t::b": with_outcome(outcome, 5)})
    merged = resaved(old, run)
    assert merged.tests == {"t::a": old.tests["t::a"]}
    assert merged.tests["t::a"].traces == 1


def test_merge_without_an_old_baseline() -> None:
    run = RunRecord(tests={"t::a": with_outcome("passed", 1), "t::b": with_outcome("failed", 1)})
    assert sorted(resaved(None, run).tests) == ["t::a"]


def test_merge_does_not_modify_the_old_report() -> None:
    old = RunRecord(tests={"t::a": with_outcome("passed", 1)})
    resaved(old, RunRecord(tests={"t::b": with_outcome("passed", 1)}))
    assert sorted(old.tests) == ["t::a"]


# -- loading ----------------------------------------------------------------------------------


def test_load_of_a_missing_file_is_none(tmp_path: Path) -> None:
    assert load(tmp_path / "nope.json") is None


def test_load_accepts_a_minimal_file(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"schema": SCHEMA}), encoding="utf-8")
    assert load(path) == RunRecord()


def valid() -> dict[str, Any]:
    return json.loads(dumps(full_report()))


def entry(data: dict[str, Any]) -> dict[str, Any]:
    return data["tests"]["tests/test_b.py::test_y"]


def function(data: dict[str, Any]) -> dict[str, Any]:
    return entry(data)["functions"]["integrate at pkg/ode.py:42"]


def bench_entry(data: dict[str, Any]) -> dict[str, Any]:
    return entry(data)["benchmarks"]["step"]


def broken(change: Any) -> str:
    data = valid()
    change(data)
    return json.dumps(data)


BROKEN_FILES = [
    pytest.param("", "is empty", id="empty"),
    pytest.param("  \n\n", "is empty", id="whitespace-only"),
    pytest.param("{'schema': 1}", "is not valid JSON (line 1, column 2", id="invalid-json"),
    pytest.param(dumps(full_report())[:200], "is not valid JSON", id="truncated-json"),
    pytest.param("[1, 2]", "top level: expected an object, got list", id="json-list"),
    pytest.param(
        json.dumps({"schema": "pytest-benchmark/4", "tests": {}}),
        "schema: expected one of 'pytest-jaxperf/1', 'pytest-jaxperf/2', 'pytest-jaxperf/3', "
        "'pytest-jaxperf/4', 'pytest-jaxperf/5', 'pytest-jaxperf/6', "
        "'pytest-jaxperf/7', got 'pytest-benchmark/4'",
        id="wrong-schema",
    ),
    pytest.param(json.dumps({"tests": {}}), "got None", id="no-schema"),
    pytest.param(
        broken(lambda d: d.update(tests=[])), "tests: expected an object", id="tests-not-object"
    ),
    pytest.param(
        broken(lambda d: entry(d).pop("compiles")),
        "tests['tests/test_b.py::test_y']: missing field 'compiles'",
        id="count-missing",
    ),
    pytest.param(
        broken(lambda d: function(d).pop("site")),
        "tests['tests/test_b.py::test_y'].functions['integrate at pkg/ode.py:42']: "
        "missing field 'site'",
        id="site-missing",
    ),
    pytest.param(
        broken(lambda d: entry(d).pop("outcome")),
        "tests['tests/test_b.py::test_y']: missing field 'outcome'",
        id="outcome-missing",
    ),
    pytest.param(
        broken(lambda d: entry(d)["eager"].pop("traces")),
        "tests['tests/test_b.py::test_y'].eager: missing field 'traces'",
        id="eager-count-missing",
    ),
    pytest.param(
        dumps(full_report()).replace('"traces": 3', '"traces": ' + "9" * 5000),
        "holds an integer with more digits than Python reads",
        id="count-with-5000-digits",
    ),
    pytest.param(
        '{"schema": "pytest-jaxperf/4", "environment": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "nested too deeply to read",
        id="deeply-nested",
    ),
    pytest.param(
        broken(lambda d: entry(d).update(environment=[1])),
        "tests['tests/test_b.py::test_y'].environment: expected an object",
        id="entry-environment",
    ),
    pytest.param(
        broken(lambda d: entry(d).update(traces="3")),
        "tests['tests/test_b.py::test_y'].traces: expected a count, got '3'",
        id="count-is-string",
    ),
    pytest.param(
        broken(lambda d: function(d).update(compiles=-1)),
        "tests['tests/test_b.py::test_y'].functions['integrate at pkg/ode.py:42'].compiles: "
        "expected a count, got -1",
        id="negative-count",
    ),
    pytest.param(
        broken(lambda d: function(d).update(traces=True)),
        ".traces: expected a count, got True",
        id="boolean-count",
    ),
    pytest.param(
        broken(lambda d: entry(d).update(traces=1.5)),
        ".traces: expected a count, got 1.5",
        id="fractional-count",
    ),
    pytest.param(
        broken(lambda d: entry(d).update(compile_s="fast")),
        ".compile_s: expected seconds, got 'fast'",
        id="seconds-is-string",
    ),
    pytest.param(
        broken(lambda d: entry(d).update(functions=["integrate"])),
        "tests['tests/test_b.py::test_y'].functions: expected an object",
        id="functions-not-object",
    ),
    pytest.param(
        broken(lambda d: function(d).update(retrace_reasons="x changed")),
        ".retrace_reasons: expected a list of strings",
        id="reasons-a-string",
    ),
    pytest.param(
        broken(lambda d: function(d).update(retrace_reasons=["ok", 3])),
        ".retrace_reasons: expected a list of strings",
        id="reasons-not-all-strings",
    ),
    pytest.param(
        broken(lambda d: entry(d).update(outcome=None)), ".outcome: expected a string", id="outcome"
    ),
    pytest.param(
        broken(lambda d: entry(d).update(benchmarks=[1])),
        "tests['tests/test_b.py::test_y'].benchmarks: expected an object",
        id="benchmarks",
    ),
    pytest.param(
        broken(lambda d: entry(d).update(benchmarks={"step": 1})),
        ".benchmarks['step']: expected an object, got int",
        id="benchmark-not-object",
    ),
    pytest.param(
        broken(lambda d: bench_entry(d).update(kind="timing")),
        ".benchmarks['step'].kind: expected 'benchmark' or 'scaling', got 'timing'",
        id="benchmark-kind",
    ),
    pytest.param(
        broken(lambda d: bench_entry(d).update(jaxpr_eqnz=3)),
        ".benchmarks['step']: unknown field 'jaxpr_eqnz'",
        id="benchmark-unknown-field",
    ),
    pytest.param(
        broken(lambda d: bench_entry(d).pop("compiled_on_first_call")),
        ".benchmarks['step']: missing field 'compiled_on_first_call'",
        id="benchmark-missing-field",
    ),
    pytest.param(
        # Before /6 every benchmark held its first-call seconds (a baseline of /6 none).
        broken(lambda d: (d.update(schema="pytest-jaxperf/5"), bench_entry(d).pop("compile_s"))),
        ".benchmarks['step']: missing field 'compile_s'",
        id="benchmark-missing-field-of-schema-5",
    ),
    pytest.param(
        broken(lambda d: bench_entry(d)["runtime"].pop("median_s")),
        ".benchmarks['step'].runtime: missing field 'median_s'",
        id="runtime-missing-median",
    ),
    pytest.param(
        broken(lambda d: bench_entry(d)["runtime"].update(samples_s=[1e-5, "x"])),
        ".benchmarks['step'].runtime.samples_s: expected a list of seconds",
        id="runtime-samples",
    ),
    pytest.param(
        broken(lambda d: bench_entry(d)["runtime"].update(rounds=2.5)),
        ".benchmarks['step'].runtime.rounds: expected a count, got 2.5",
        id="runtime-rounds",
    ),
    pytest.param(
        broken(lambda d: entry(d)["benchmarks"]["scaling:f"].update(values=3)),
        ".benchmarks['scaling:f'].values: expected a list of numbers, got 3",
        id="scaling-values-a-number",
    ),
    pytest.param(
        broken(lambda d: entry(d)["benchmarks"]["scaling:f"].update(values=[1.0])),
        ".benchmarks['scaling:f'].values: expected one value per size",
        id="scaling-values-per-size",
    ),
]


@pytest.fixture(params=["msgspec", "orjson", "json"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Files read through msgspec (the `fast` extra, installed with `test`: decoded straight
    into records, orjson reading what it does not), through orjson alone, or through json."""
    if request.param == "msgspec":
        pytest.importorskip("msgspec")
        assert store.reader() == "msgspec"
        return "msgspec"
    monkeypatch.setattr(store, "_typed", None)
    if request.param == "orjson":
        orjson = pytest.importorskip("orjson")
        # Set, not compared: store imports orjson on first use, and an in-process pytester
        # run that imported it first drops the module afterwards (pytest restores
        # sys.modules), so the orjson imported here may be a second copy of it.
        monkeypatch.setattr(store, "_fast_loads", orjson.loads)
        assert store.parser() == "orjson"
    else:
        monkeypatch.setattr(store, "_fast_loads", None)
        assert store.parser() == "json"
    return str(request.param)


@pytest.mark.parametrize(("text", "problem"), BROKEN_FILES)
def test_load_rejects_a_broken_file_naming_it(
    tmp_path: Path, text: str, problem: str, parser: str
) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BaselineError) as info:
        load(path)
    message = str(info.value)
    assert message.startswith(str(path))
    assert problem in message
    assert "--jaxperf-save" in message
    assert path.read_text(encoding="utf-8") == text


def test_load_of_undecodable_bytes_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_bytes(b'{"schema": "\xff"}')
    with pytest.raises(BaselineError, match="cannot read") as info:
        load(path)
    assert str(path) in str(info.value)


def odd_file(change: str) -> str:
    """A report file with one value orjson and json might read differently."""
    text = dumps(full_report())
    assert '"traces": 3,\n' in text
    return {
        "big-count": text.replace('"traces": 3,\n', '"traces": 123456789012345678901234567890,\n'),
        "nan-seconds": text.replace('"compile_s": 1.125,', '"compile_s": NaN,'),
        "lone-surrogate": text.replace('"tests/test_a.py::test_x"', '"tests/\\ud800.py::t"'),
        "duplicate-key": text.replace('"traces": 3,\n', '"traces": 1, "traces": 3,\n'),
    }[change]


@pytest.mark.parametrize("change", ["big-count", "nan-seconds", "lone-surrogate", "duplicate-key"])
def test_both_parsers_read_a_file_the_same(tmp_path: Path, change: str, parser: str) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(odd_file(change), encoding="utf-8")
    data = json.loads(path.read_text(encoding="utf-8"))
    try:
        expected: object = model.run_from_json(data)
    except model.FormatError as exc:
        expected = f"{path} is not a pytest-jaxperf baseline: {exc}"
    try:
        got: object = load(path)
    except BaselineError as exc:
        got = str(exc).rsplit("; ", 1)[0]
    assert got == expected
    if change == "big-count":  # read as the int it is, by either parser
        assert isinstance(got, RunRecord)
        assert got.tests["tests/test_b.py::test_y"].traces == 123456789012345678901234567890


def test_both_parsers_read_a_report_the_same(
    tmp_path: Path, parser: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "baseline.json"
    save(path, full_report())
    if parser != "json":  # a file as the plugin writes it is read by msgspec or orjson alone

        def not_json(text: str) -> None:
            raise AssertionError("read with json")

        monkeypatch.setattr(store.json, "loads", not_json)
    if parser == "msgspec":  # ... and by msgspec alone

        def not_orjson(text: str) -> None:
            raise AssertionError("read with orjson")

        monkeypatch.setattr(store, "_fast_loads", not_orjson)
    assert load(path) == full_report()


def _finishes(call: Any, seconds: float = 10.0) -> Any:
    """call() in a thread; what it returned or raised, failing the test if it still blocks."""
    import threading

    out: list[Any] = []

    def run() -> None:
        try:
            out.append(call())
        except BaseException as exc:  # noqa: BLE001 - handed to the test as a value
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert out, f"still blocked after {seconds} s"
    return out[0]


def test_a_baseline_that_is_a_fifo_or_a_directory_is_refused_not_waited_on(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "baseline.json"
    os.mkfifo(fifo)
    error = _finishes(lambda: store.load(fifo))
    assert isinstance(error, store.BaselineError)
    assert str(error) == f"cannot read {fifo}: [Errno 22] not a regular file: '{fifo}'"
    error = _finishes(lambda: store.load(tmp_path))
    assert isinstance(error, store.BaselineError) and "not a regular file" in str(error)


def test_a_test_kept_twice_by_a_merge_is_refused_naming_it(tmp_path: Path, parser: str) -> None:
    report = RunRecord(
        environment={"jax": "0.10.2"},
        tests={"t.py::test_a": RecordedTest(traces=1), "t.py::test_b": RecordedTest(traces=2)},
    )
    text = store.dumps(report)
    path = tmp_path / "baseline.json"
    path.write_text(text)
    assert load(path) == report  # as written: read as ever (through orjson where installed)
    # Both sides of a merge conflict kept: test_a's entry from each branch.
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith('    "t.py::test_a"'))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("    }"))
    path.write_text("".join(lines[: end + 1] + [",\n"] + lines[start:]).replace("},\n,\n", "},\n"))
    with pytest.raises(BaselineError) as info:
        load(path)
    assert str(info.value) == (
        f"{path} holds the key 't.py::test_a' twice (a merge that kept both sides?): only one "
        "would be read; keep one of them"
    )


@pytest.mark.parametrize(
    ("before", "twice", "key"),
    [
        # Both sides of a conflict on an environment line kept.
        ('    "jax"', '    "jax": "0.9.0",\n', "jax"),
        # The whole environment kept twice.
        ('  "environment"', '  "environment": {\n    "jax": "0.9.0"\n  },\n', "environment"),
    ],
)
def test_an_environment_entry_kept_twice_is_refused_naming_it(
    tmp_path: Path, parser: str, before: str, twice: str, key: str
) -> None:
    report = RunRecord(
        environment={"jax": "0.10.2", "python": "3.11"},
        tests={"t.py::test_a": RecordedTest(traces=1), "t.py::test_b": RecordedTest(traces=2)},
    )
    text = store.dumps(report)
    at = text.index(before)
    path = tmp_path / "baseline.json"
    path.write_text(text[:at] + twice + text[at:])
    with pytest.raises(BaselineError) as info:
        load(path)
    assert str(info.value) == (
        f"{path} holds the key {key!r} twice (a merge that kept both sides?): only one "
        "would be read; keep one of them"
    )


@pytest.mark.parametrize("lazy", [False, True])
def test_a_test_kept_twice_on_one_line_is_refused_too(
    tmp_path: Path, parser: str, lazy: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The second copy does not start a line of its own (a hand-resolved conflict joined two
    # lines): the line count cannot tell it, the tests' own count can.
    report = RunRecord(
        environment={"jax": "0.10.2"},
        tests={"t.py::test_a": RecordedTest(traces=1), "t.py::test_b": RecordedTest(traces=2)},
    )
    text = store.dumps(report)
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith('    "t.py::test_a"'))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("    }"))
    copy = "".join(lines[start : end + 1]).strip().rstrip(",")
    joined = lines[: end + 1]
    joined[end] = joined[end].rstrip("\n").rstrip(",") + ", " + copy + ",\n"
    path = tmp_path / "baseline.json"
    path.write_text("".join(joined + lines[end + 1 :]))
    if lazy:
        monkeypatch.setattr(entries, "LAZY_FROM_BYTES", 0)
    with pytest.raises(BaselineError) as info:
        store.read(path, lazy=lazy)
    assert str(info.value) == (
        f"{path} holds the key 't.py::test_a' twice (a merge that kept both sides?): only one "
        "would be read; keep one of them"
    )


def test_a_runtime_block_as_a_baseline_holds_it_is_refused_before_schema_7() -> None:
    data = json.loads(dumps(slim_report()))
    runtime = data["tests"]["slim"]["benchmarks"]["step"]["runtime"]
    with pytest.raises(model.FormatError, match=r"^b: missing field 'max_s'$"):
        model._runtime_from_json(runtime, "b", "pytest-jaxperf/6")
    assert model._runtime_from_json(runtime, "b").max_s is None
