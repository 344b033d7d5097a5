"""Reading big files fast: one parse per file, the current schema's fast path (records made of
the parsed objects), the gating reused between tests, and what `jaxperf compare` imports."""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import math
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_jaxperf import compare, model
from pytest_jaxperf.config import NO_LIMITS, MarkerLimits, Tolerances
from pytest_jaxperf.model import (
    BenchmarkEntry,
    Counts,
    FunctionRecord,
    ProgramMetrics,
    RecordedTest,
    RunRecord,
    RuntimeStats,
    ScalingEntry,
)
from pytest_jaxperf.storage import outputs, store
from pytest_jaxperf.storage.store import BaselineError, load


def _function(i: int, j: int) -> FunctionRecord:
    traces = 1 + (i + j) % 3
    return FunctionRecord(
        traces=traces,
        lowerings=traces,
        compiles=traces,
        cache_hits=j % 2,
        trace_s=round(0.001 * (i + 1), 6),
        lower_s=round(0.002 * (j + 1), 6),
        compile_s=round(0.031 + i / 1000, 6),
        trace_cpu_s=round(0.0009 * (i + 1), 6),
        lower_cpu_s=0.0019,
        compile_cpu_s=round(0.05 + j / 100, 6),
        jaxpr_eqns=10 + i,
        hlo_ops=20 + j,
        xla_ops=15 + i + j,
        name=f"fn{j}",
        site=f"pkg/mod{i % 3}.py:{10 + j}",
        retrace_reasons=[f"x: f32[{k}] -> f32[{k + 1}]" for k in range(traces - 1)],
    )


def _benchmark(i: int) -> BenchmarkEntry:
    samples = tuple(1e-4 * (1 + k / 100) for k in range(7))
    return BenchmarkEntry(
        first_call_s=0.3,
        trace_s=0.01,
        lower_s=0.02,
        compile_s=0.25,
        compiled_on_first_call=True,
        runtime=RuntimeStats(
            min_s=1e-4,
            max_s=1.06e-4,
            median_s=1.03e-4,
            mean_s=1.03e-4,
            stddev_s=2e-6,
            q1_s=1.01e-4,
            q3_s=1.05e-4,
            iqr_s=4e-6,
            rounds=7,
            iterations=10,
            outliers=0,
            samples_s=samples,
            cpu_median_s=1.02e-4,
        ),  # fmt: skip
        metrics=ProgramMetrics(
            jaxpr_eqns=5 + i,
            hlo_ops=9,
            flops=1e6,
            transcendentals=3.0,
            bytes_accessed=4e3,
            argument_bytes=64,
            output_bytes=32,
            temp_bytes=0,
            peak_bytes=128,
        ),  # fmt: skip
        eager_median_s=1e-3,
        break_even_calls=12.0,
        device_peak_bytes=4096,
        jitted_by_benchmark=i % 2 == 1,
        instructions=123456,
    )


def big_run() -> RunRecord:
    """A run of plain tests (every field present) and a few that are not: one with a marker,
    one with an environment of its own, one with a scaling entry, one that failed."""
    tests = {}
    for i in range(12):
        fns = [_function(i, j) for j in range(1 + i % 4)]
        rec = RecordedTest(functions={f.key: f for f in fns}, outcome="passed")
        rec.recompute_totals()
        rec.eager = Counts(lowerings=i, compiles=i, compile_s=round(0.02 * i, 6),
                           trace_cpu_s=0.0, lower_cpu_s=0.0, compile_cpu_s=round(0.01 * i, 6),
                           jaxpr_eqns=i, hlo_ops=i, xla_ops=i)  # fmt: skip
        if i % 3 == 0:
            rec.benchmarks = {"main": _benchmark(i)}
        tests[f"tests/test_m{i % 2}.py::test_{i:02}"] = rec
    tests["tests/test_m1.py::test_01"].marker = {"max_traces": 10}
    tests["tests/test_m0.py::test_02"].environment = {"jax": "0.10.1", "backend": "cpu"}
    tests["tests/test_m1.py::test_03"].benchmarks["scaling:f"] = ScalingEntry(
        metric="jaxpr_eqns", sizes=(1, 2), values=(3.0, 3.0), exponent=0.0
    )
    tests["tests/test_m1.py::test_05"].outcome = "failed"
    run = RunRecord(environment={"jax": "0.10.2", "backend": "cpu", "x64": False}, tests=tests)
    return _careful(model.run_to_json(run))  # as written: seconds rounded


PLAIN = 10  # the tests of big_run() that the fast path reads (neither marker nor environment)


def _careful(data: dict[str, Any]) -> RunRecord:
    """The records as the entry-by-entry reader makes them."""
    schema = data["schema"]
    return RunRecord(
        environment=dict(data["environment"]),
        tests={
            k: model.recorded_test_from_json(v, f"tests[{k!r}]", schema)
            for k, v in data["tests"].items()
        },
        schema=schema,
    )


def test_fast_and_careful_readers_make_equal_records() -> None:
    text = store.dumps(big_run())
    data = json.loads(text)
    plain = model._plain_tests(data["tests"])
    assert len(plain) == PLAIN and "tests/test_m1.py::test_01" not in plain
    fast = model.run_from_json(data, consume=True)
    assert fast == _careful(json.loads(text)) == big_run()
    rec = fast.tests["tests/test_m1.py::test_03"]
    assert type(rec) is RecordedTest and type(rec.eager) is Counts
    assert all(type(f) is FunctionRecord for f in rec.functions.values())
    assert rec.environment is None and rec.marker == {}
    assert store.dumps(fast) == text  # written back as it was
    # Without `consume`, the data stays as it was: read again, the same records.
    kept = json.loads(text)
    assert model.run_from_json(kept) == model.run_from_json(kept) == fast


def test_fast_path_records_are_independent_records() -> None:
    run = model.run_from_json(json.loads(store.dumps(big_run())), consume=True)
    a, b = (run.tests[f"tests/test_m1.py::test_{i:02}"] for i in (7, 9))
    a.marker["max_traces"] = 1
    a.recompute_totals()
    assert b.marker == {}
    assert dataclass_fields(a) == dataclass_fields(RecordedTest())


def dataclass_fields(rec: RecordedTest) -> list[str]:
    return sorted(vars(rec))


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda f: f.update(traces=True), ".traces: expected a count, got True"),
        (lambda f: f.update(compile_s=-1.0), ".compile_s: expected seconds, got -1.0"),
        (lambda f: f.pop("site"), ": missing field 'site'"),
        (lambda f: f.update(retrace_reasons=[3]), ".retrace_reasons: expected a list of strings"),
        (lambda f: f.update(jaxpr_eqns=1.5), ".jaxpr_eqns: expected a count, got 1.5"),
    ],
    ids=["bool-count", "negative-seconds", "missing-field", "reason-not-text", "float-size"],
)
def test_a_value_the_fast_path_refuses_is_named_as_ever(change: Any, problem: str) -> None:
    data = json.loads(store.dumps(big_run()))
    entry = data["tests"]["tests/test_m1.py::test_07"]["functions"]
    change(next(iter(entry.values())))
    assert model._plain_tests(data["tests"]) == set()
    with pytest.raises(model.FormatError) as fast:
        model.run_from_json(copy.deepcopy(data), consume=True)
    with pytest.raises(model.FormatError) as careful:
        _careful(data)
    assert str(fast.value) == str(careful.value)
    assert str(fast.value).startswith("tests['tests/test_m1.py::test_07'].functions[")
    assert str(fast.value).endswith(problem)


def test_a_bad_benchmark_entry_is_named_as_ever() -> None:
    data = json.loads(store.dumps(big_run()))
    data["tests"]["tests/test_m1.py::test_09"]["benchmarks"]["main"]["runtime"]["rounds"] = -1
    with pytest.raises(model.FormatError) as info:
        model.run_from_json(data, consume=True)
    assert str(info.value) == (
        "tests['tests/test_m1.py::test_09'].benchmarks['main'].runtime.rounds: expected a "
        "count, got -1"
    )


def test_an_older_schema_file_still_loads(tmp_path: Path) -> None:
    doc = model.run_to_json(big_run())
    doc["schema"] = "pytest-jaxperf/3"
    for test in doc["tests"].values():
        for counts in [test, test["eager"], *test["functions"].values()]:
            for name in model.SIZE_FIELDS:
                del counts[name]
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    run = load(path)
    assert run is not None and run == _careful(json.loads(path.read_text(encoding="utf-8")))
    f = next(iter(run.tests["tests/test_m1.py::test_07"].functions.values()))
    assert (f.jaxpr_eqns, f.hlo_ops, f.xla_ops) == (None, None, None)


# -- one parse per file --------------------------------------------------------------------------


@pytest.fixture(params=["msgspec", "orjson", "json"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Files read through msgspec and orjson (the `fast` extra), through orjson alone, or
    through json; every parse counted in `parses` (msgspec's decoding of a file or an entry
    as one)."""
    typed = (
        pytest.importorskip("pytest_jaxperf.storage.typed") if request.param == "msgspec" else None
    )
    fast = pytest.importorskip("orjson").loads if request.param == "orjson" else None

    def counted(real: Any, name: str) -> Any:
        def loads(*args: Any, **kwargs: Any) -> Any:
            PARSES.append(name)
            return real(*args, **kwargs)

        return loads

    if typed is not None:
        decoders = {name: counted(getattr(typed, name), "msgspec") for name in TYPED_READERS}
        monkeypatch.setattr(store, "_typed", SimpleNamespace(**decoders))
        fast = store._fast_loads  # where msgspec does not read: orjson, where installed
    else:
        monkeypatch.setattr(store, "_typed", None)
    monkeypatch.setattr(store, "_fast_loads", None if fast is None else counted(fast, "orjson"))
    monkeypatch.setattr(store.json, "loads", counted(json.loads, "json"))
    PARSES.clear()
    return str(request.param)


TYPED_READERS = ("read_run", "read_test")


PARSES: list[str] = []
LAYOUTS = {
    "as-saved": store.dumps,
    "indent-1": lambda run: json.dumps(model.run_to_json(run), indent=1),
    "indent-tab": lambda run: json.dumps(model.run_to_json(run), indent="\t"),
    "compact": lambda run: json.dumps(model.run_to_json(run)),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_file_is_parsed_once(tmp_path: Path, parser: str, layout: str) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(LAYOUTS[layout](big_run()), encoding="utf-8")
    assert load(path) == big_run()
    assert len(PARSES) == 1
    # Laid out one key per line, a file is read with msgspec or orjson where installed; any
    # other layout with json, which refuses a key twice as it reads.
    expected = ["json" if layout == "compact" else parser]
    assert expected == PARSES


def _twice(text: str, nodeid: str) -> str:
    """`text` with the entry of `nodeid` kept twice, as a merge that kept both sides does."""
    data = json.loads(text)
    key = json.dumps(nodeid)
    start = text.index(f"{key}:")
    entry = json.dumps(data["tests"][nodeid])
    # The entry as it is laid out in `text`: from its key to where it parses whole.
    end = start + len(key) + 1
    depth, i = 0, text.index("{", end)
    for i in range(text.index("{", end), len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            break
    assert json.loads(text[text.index("{", end) : i + 1]) == json.loads(entry)
    line = text.rindex("\n", 0, start) + 1 if "\n" in text[:start] else start
    return text[: i + 1] + ",\n" + text[line : i + 1] + text[i + 1 :]


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_test_kept_twice_is_refused_in_every_layout(
    tmp_path: Path, parser: str, layout: str
) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(_twice(LAYOUTS[layout](big_run()), "tests/test_m1.py::test_07"))
    with pytest.raises(BaselineError) as info:
        load(path)
    assert str(info.value) == (
        f"{path} holds the key 'tests/test_m1.py::test_07' twice (a merge that kept both "
        "sides?): only one would be read; keep one of them"
    )


@pytest.mark.parametrize("layout", ["indent-1", "compact"])
def test_a_broken_file_gets_json_s_message(tmp_path: Path, parser: str, layout: str) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(LAYOUTS[layout](big_run())[:-40], encoding="utf-8")
    with pytest.raises(BaselineError, match=r"is not valid JSON \(line \d+, column \d+: "):
        load(path)


# -- the gating between two environments, reused ----------------------------------------------


def test_gating_is_reused_while_the_environments_are_equal() -> None:
    base = {"jax": "0.10.1", "backend": "cpu", "program_flags": {"jax_enable_x64": False}}
    now = {"jax": "0.10.2", "backend": "cpu", "program_flags": {"jax_enable_x64": False}}
    first = compare.Gating.between(base, now, Tolerances())
    assert compare.Gating.between(base, now, Tolerances()) is first
    assert first.timing_differences == ("jax 0.10.1 -> 0.10.2",)
    # Changed in place (the same objects), or other arguments: worked out again.
    now["program_flags"]["jax_enable_x64"] = True
    changed = compare.Gating.between(base, now, Tolerances())
    assert changed is not first
    assert changed.static_differences == (
        "jax 0.10.1 -> 0.10.2", "jax_enable_x64 False -> True"
    )  # fmt: skip
    saving = compare.Gating.between(base, now, Tolerances(), gate_baseline=False)
    assert saving is not changed and not saving.gate_baseline
    strict = compare.Gating.between(base, now, Tolerances(compile_rtol=0.1))
    assert strict.tol.compile_rtol == 0.1


def test_evaluate_keeps_the_gating_s_tolerances_without_a_marker_tolerance() -> None:
    run = big_run()
    rec = run.tests["tests/test_m0.py::test_00"]
    gating = compare.Gating.between(run.environment, run.environment, Tolerances())
    assert compare.evaluate(rec, rec, NO_LIMITS, gating) == compare.Verdict()


# -- what `jaxperf compare` imports ---------------------------------------------------------------


@pytest.mark.e2e
def test_compare_imports_nothing_of_ab_nor_export(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    store.save(path, big_run())
    code = (
        "import sys; from pytest_jaxperf.cli import main; "
        f"code = main(['compare', {str(path)!r}, {str(path)!r}]); "
        "print(sorted(m for m in sys.modules if m.startswith(('pytest_jaxperf.ab', "
        "'pytest_jaxperf.report.export', 'tempfile', 'difflib', 'pytest.', '_pytest')) "
        "or m == 'pytest'), code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    assert done.stdout.splitlines()[-1] == "[] 0"


# -- the comparison's quick route (compare._unchanged) ----------------------------------------


def _set(attr: str, value: Any, fn: int | None = 0) -> Any:
    """A change to a record: `attr` of its `fn`th function (None: of the test) set to `value`."""

    def change(rec: RecordedTest) -> None:
        target = rec if fn is None else list(rec.functions.values())[fn]
        setattr(target, attr, value)

    return change


def _scaled(factor: float, *names: str) -> Any:
    def change(rec: RecordedTest) -> None:
        for target in (rec, *rec.functions.values()):
            for name in names:
                value = getattr(target, name)
                if value is not None:
                    setattr(target, name, value * factor)

    return change


def _renamed(rec: RecordedTest) -> None:
    key, fn = next(iter(rec.functions.items()))
    fn.site = fn.site.replace(":", ":1")
    rec.functions = {fn.key if k == key else k: f for k, f in rec.functions.items()}


def _added(rec: RecordedTest) -> None:
    fn = copy.deepcopy(next(iter(rec.functions.values())))
    fn.name = "extra"
    rec.functions[fn.key] = fn
    rec.recompute_totals()


def _slower(rec: RecordedTest) -> None:
    bench = rec.benchmarks.get("main")
    if isinstance(bench, BenchmarkEntry) and bench.runtime is not None:
        rt = bench.runtime
        slow = tuple(s * 3 for s in rt.samples_s)
        rec.benchmarks["main"] = dataclasses.replace(
            bench,
            runtime=dataclasses.replace(
                rt, samples_s=slow, median_s=rt.median_s * 3, min_s=rt.min_s * 3, cpu_median_s=None
            ),  # fmt: skip
        )


CHANGES: dict[str, Any] = {
    "none": lambda rec: None,
    "traces up": _set("traces", 9),
    "compiles up": _set("compiles", 9),
    "lowerings up": _set("lowerings", 9),
    "traces down": _set("traces", 0),
    "total traces up": _set("traces", 40, None),
    "total compiles down": _set("compiles", 0, None),
    "jaxpr_eqns up": _set("jaxpr_eqns", 500),
    "hlo_ops down": _set("hlo_ops", 1),
    "xla_ops unmeasured": _set("xla_ops", None),
    "total xla_ops up": _set("xla_ops", 900, None),
    "cache hits": _set("cache_hits", 1, None),
    "cpu seconds unmeasured": _set("compile_cpu_s", None, None),
    "compile seconds x3": _scaled(3.0, "compile_s", "compile_cpu_s"),
    "compile seconds x1.05": _scaled(1.05, "compile_s", "compile_cpu_s"),
    "compile seconds x0.2": _scaled(0.2, "compile_s", "compile_cpu_s"),
    "compile seconds x1000": _scaled(1000.0, "compile_s", "compile_cpu_s"),
    "function renamed": _renamed,
    "function added": _added,
    "runtime slower": _slower,
}
GATINGS = {
    "default": ({}, {}, Tolerances()),
    "wall clock": ({}, {}, Tolerances(compile_clock="wall")),
    "strict": ({}, {}, Tolerances(compile_rtol=0.0, compile_floor=0.0, static_rtol=0.0)),
    "another jax": ({"jax": "0.10.1"}, {}, Tolerances()),
    "another cpu": ({"cpu": "other"}, {}, Tolerances()),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_the_quick_route_gives_the_careful_verdicts(
    change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = big_run()
    now = copy.deepcopy(base)
    for rec in now.tests.values():
        CHANGES[change](rec)
    quick = 0
    careful = compare._unchanged

    def counted(*args: Any) -> bool:
        nonlocal quick
        found = careful(*args)
        quick += found
        return found

    for name, (base_env, now_env, tol) in GATINGS.items():
        old = RunRecord({**base.environment, **base_env}, base.tests)
        new = RunRecord({**now.environment, **now_env}, now.tests)
        for limits in (NO_LIMITS, MarkerLimits(max_traces=100)):
            got = {}
            for route in ("quick", "careful"):
                monkeypatch.setattr(compare, "_unchanged", counted if route == "quick" else
                                    (lambda *a: False))  # fmt: skip
                got[route] = [
                    compare.evaluate(
                        rec, old.tests.get(k), limits,
                        compare.Gating.between(old.environment_of(k), new.environment_of(k), tol),
                    ).to_json()
                    for k, rec in new.tests.items()
                ]  # fmt: skip
            assert got["quick"] == got["careful"], (change, name, limits)
    # The quick route is taken where nothing changed, and never where a count, a size, a cache
    # hit or the functions did (timings may pass within the tolerance).
    if change in ("none", "runtime slower"):
        assert quick > 0
    elif not change.startswith(("compile seconds", "cpu seconds")):
        assert quick == 0


# -- saving in pieces ---------------------------------------------------------------------------


@pytest.mark.parametrize("tests", ["all", "none", "one"])
def test_save_writes_dumps_text_in_pieces(
    tmp_path: Path, tests: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = big_run()
    if tests == "none":
        run.tests = {}
    elif tests == "one":
        run.tests = dict(list(run.tests.items())[:1])
    written: list[Any] = []
    replace_text = outputs.replace_text

    def spy(path: Path, text: Any) -> None:
        written.append(text)
        replace_text(path, text)

    monkeypatch.setattr(outputs, "replace_text", spy)
    path = tmp_path / "baseline.json"
    store.save(path, run)
    assert path.read_bytes() == store.dumps(run).encode("utf-8")
    # Handed over one test's text at a time: the whole text of a big file is never held.
    assert not isinstance(written[0], str)
    assert load(path) == run


def _scale_with_files(tmp_path: Path, tests: int) -> Any:
    """benchmarks/scale.py, with its synthetic baseline.json and run.json of `tests` tests
    saved in `tmp_path`."""
    from conftest import benchmark_module

    scale = benchmark_module("scale")
    base, run = scale.build(tests)
    store.save(tmp_path / "baseline.json", base)
    store.save(tmp_path / "run.json", run)
    return scale


@pytest.mark.e2e
def test_scale_measures_gate_and_save_each_in_a_fresh_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scale = _scale_with_files(tmp_path, 30)
    scale._gate_and_save(tmp_path / "baseline.json", tmp_path / "run.json", "json")
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "gate (read the baseline, compare every test)",
        "of which reading the baseline (parse, check, records)",
        "save (merge the run into the baseline by --jaxperf-save's rules, write it)",
    ]
    assert all(" MB = " in line and "x the file" in line for line in lines[1::2])
    assert " MB kept (the records)" in lines[2]
    # The save step wrote the baseline merged as a session merges it, beside the one it
    # started from.
    run = load(tmp_path / "run.json")
    assert run is not None
    merged = scale._resave(run)(load(tmp_path / "baseline.json"), run)
    assert (tmp_path / "baseline.save").read_text(encoding="utf-8") == store.dumps(merged)


@pytest.mark.e2e  # starts an interpreter
def test_scale_prints_the_floor_under_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scale = _scale_with_files(tmp_path, 5)
    scale._floor(tmp_path / "baseline.json", tmp_path / "run.json", 1)
    (line,) = capsys.readouterr().out.splitlines()
    names = ["orjson", "json"] if store.parser() == "orjson" else ["json"]
    if store.reader() == "msgspec":
        names[:0] = ["msgspec into checked records", "msgspec"]
    parsers = " [0-9.]+ s, ".join(names)
    assert re.fullmatch(
        rf"   the floor of jaxperf compare: parsing both files, nothing else: {parsers} "
        r"[0-9.]+ s; python -c pass [0-9.]+ s",
        line,
    ), line


# -- jaxperf compare: the quick routes and the careful ones give the same output -----------------


def _careful_routes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every quick route of reading and gating off: each file read the careful way (decoded,
    parsed, its keys checked, each entry value by value), the gating worked out for every
    test, and every test through every rule."""
    monkeypatch.setattr(store, "_read_once", lambda raw: None)
    monkeypatch.setattr(model, "_plain_tests", lambda tests: set())
    monkeypatch.setattr(compare, "_unchanged", lambda *args: False)

    def between(
        cls: type[compare.Gating], baseline: Any, current: Any, tolerances: Tolerances, **kw: Any
    ) -> compare.Gating:
        return cls._between(
            baseline, current, tolerances, kw.get("timing_mode", "gate"),
            kw.get("gate_baseline", True), kw.get("timed_elsewhere"),
        )  # fmt: skip

    monkeypatch.setattr(compare.Gating, "between", classmethod(between))


def _older(text: str) -> str:
    """A file of the schema before program sizes, as that version wrote it."""
    doc = json.loads(text)
    doc["schema"] = "pytest-jaxperf/3"
    for test in doc["tests"].values():
        for counts in [test, test["eager"], *test["functions"].values()]:
            for name in model.SIZE_FIELDS:
                del counts[name]
    return json.dumps(doc, indent=1)


@functools.lru_cache(maxsize=1)
def _compare_files() -> tuple[str, str]:
    """A baseline and a report (as saved) with every kind of finding: regressions, an
    improvement, new and missing tests, a gone function, a marker limit over, an entry
    measured elsewhere, a test that failed by itself."""
    from conftest import benchmark_module

    base, run = benchmark_module("scale").build(150)
    ids = sorted(run.tests)
    faster = next(k for k in ids if run.tests[k].benchmarks)
    for label, bench in run.tests[faster].benchmark_entries():  # faster: an improvement
        rt = bench.runtime
        assert rt is not None and rt.cpu_median_s is not None
        quick = dataclasses.replace(
            rt, samples_s=tuple(s / 4 for s in rt.samples_s), median_s=rt.median_s / 4,
            min_s=rt.min_s / 4, cpu_median_s=rt.cpu_median_s / 4,
        )  # fmt: skip
        run.tests[faster].benchmarks[label] = dataclasses.replace(bench, runtime=quick)
    gone = run.tests[ids[11]]
    gone.functions = dict(list(gone.functions.items())[1:])  # a function gone
    gone.recompute_totals()
    run.tests[ids[12]].marker = {"max_traces": 0}  # over its limit
    run.tests[ids[13]].environment = {**run.environment, "jax": "0.10.1"}  # timing not gated
    run.tests[ids[14]].outcome = "failed"  # not compared
    slow = max((k for k in ids[15:] if k in base.tests), key=lambda k: run.tests[k].total_s)
    for fn in run.tests[slow].functions.values():  # the same counts, compiles 10x slower
        fn.compile_s, fn.compile_cpu_s = fn.compile_s * 10, (fn.compile_cpu_s or 0.0) * 10
    run.tests[slow].recompute_totals()
    return store.dumps(base), store.dumps(run)


def _broken(text: str, how: str) -> str:
    if how == "truncated":
        return text[:-40]
    if how == "twice":
        return _twice(text, next(iter(json.loads(text)["tests"])))
    doc = json.loads(text)
    entry = next(iter(doc["tests"].values()))
    fn = next(iter(entry["functions"].values()))
    if how == "nan":
        fn["compile_s"] = math.nan
    elif how == "bool-count":
        fn["traces"] = True
    else:  # (the whole block may be left out: a baseline's, where its counts are all 0)
        del entry["eager"]["compiles"]
    return store.format_json(doc)  # as saved (a NaN as json writes it)


CASES = ["as-saved", "older-baseline", "older-report", "indent-1"] + [
    f"broken-{how}" for how in ("truncated", "twice", "nan", "bool-count", "missing-eager-count")
]


@pytest.mark.parametrize("case", CASES)
def test_compare_gives_the_same_output_by_the_quick_and_the_careful_routes(
    tmp_path: Path,
    parser: str,
    case: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from conftest import benchmark_module

    from pytest_jaxperf import cli

    base, run = _compare_files()
    if case == "older-baseline":  # made of the baseline's every field, as that version held
        base = _older(store.dumps(benchmark_module("scale").build(150, full=True)[0]))
    elif case == "older-report":
        run = _older(run)
    elif case == "indent-1":
        base, run = (json.dumps(json.loads(t), indent=1) for t in (base, run))
    elif case.startswith("broken-"):
        base = _broken(base, case.removeprefix("broken-"))
    (tmp_path / "baseline.json").write_text(base, encoding="utf-8")
    (tmp_path / "run.json").write_text(run, encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # no ini file: the defaults
    got = {}
    for route in ("quick", "careful"):
        with monkeypatch.context() as patch:
            if route == "careful":
                _careful_routes(patch)
            code = cli.main(["compare", "baseline.json", "run.json"])
            got[route] = (code, *capsys.readouterr())
    assert got["quick"] == got["careful"]
    code, out, err = got["quick"]
    if case.startswith("broken-"):
        assert (code, out) == (2, "")
        assert err.startswith("jaxperf: baseline.json ") and err.count("\n") == 1, err
        return
    assert code == 1 and err == ""
    for word in ("improved: ", "function gone", "> limit 0", "not gated", "compile time of"):
        assert word in out, word
    assert "1 baseline tests are not in the report (not compared)" in out
