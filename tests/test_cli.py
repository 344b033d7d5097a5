"""Tests of the `jaxperf` command: show, compare (exit codes 0/1/2) and export."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _jaxperf_data import (
    ENV,
    IMPROVED,
    NEW,
    OK,
    REGRESSED,
    baseline_and_run,
    bench,
    fn,
    outcomes_for,
    rec,
    unmeasured,
)

from pytest_jaxperf.cli import evaluate_all, main
from pytest_jaxperf.config import Tolerances
from pytest_jaxperf.model import (
    BenchmarkEntry,
    FunctionRecord,
    ProgramMetrics,
    RecordedTest,
    RunRecord,
)
from pytest_jaxperf.report.export import to_bencher, to_github_action_benchmark
from pytest_jaxperf.report.summary import RunSummary
from pytest_jaxperf.report.terminal import failure_text
from pytest_jaxperf.report.wording import benchmark_line
from pytest_jaxperf.storage import store


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """(baseline, report) files: the report has one regression."""
    base, run = baseline_and_run()
    base_path, run_path = tmp_path / "baseline.json", tmp_path / "run.json"
    store.save(base_path, base)
    store.save(run_path, run)
    return base_path, run_path


def test_compare_prints_each_regression_and_exits_1(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base_path, run_path = files
    assert main(["compare", str(base_path), str(run_path)]) == 1
    out, err = capsys.readouterr()
    base, run = store.load(base_path), store.load(run_path)
    assert base is not None and run is not None
    outcomes = outcomes_for(base, run)
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == f"jaxperf: comparing {run_path} (4 tests) with {base_path} (3 tests)"
    assert failure_text(REGRESSED, outcomes[REGRESSED], str(base_path)) in out
    assert f"improved: {IMPROVED}: traces of solve at pkg/solve.py:40: 3 -> 1" in out
    assert (
        lines[-1]
        == RunSummary.of(outcomes).tally()
        == ("jaxperf: 1 regression, 1 improvement, 1 new, 0 not gated")
    )
    assert NEW not in out and OK not in out


def test_compare_without_regressions_exits_0(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base_path, _ = files
    assert main(["compare", str(base_path), str(base_path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated"


def eqns(n: int) -> BenchmarkEntry:
    return unmeasured(metrics=ProgramMetrics(jaxpr_eqns=n, hlo_ops=9))


def test_compare_reports_a_gone_function_as_such_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = RunRecord(tests={"t::a": rec(fn("f", "m.py:1"), fn("g", "m.py:9", compile_s=0.5))})
    run = RunRecord(tests={"t::a": rec(fn("f", "m.py:1"))})
    base_path, run_path = tmp_path / "b.json", tmp_path / "r.json"
    store.save(base_path, base)
    store.save(run_path, run)
    assert main(["compare", str(base_path), str(run_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:] == [
        "function gone: t::a: g at m.py:9 no longer traced (baseline: traces 1, compiles 1); "
        "if the test still calls it, it is no longer jitted and runs op by op",
        "jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated, 1 function gone",
    ]


def test_compare_tolerances_and_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = RunRecord(environment={"jax": "0.10.2"}, tests={"t::a": rec(fn("f", "m.py:1"))})
    run = RunRecord(
        environment={"jax": "0.10.2"}, tests={"t::a": rec(fn("f", "m.py:1", compile_s=1.5))}
    )
    base_path, run_path = tmp_path / "b.json", tmp_path / "r.json"
    store.save(base_path, base)
    store.save(run_path, run)
    args = ["compare", str(base_path), str(run_path)]
    # 0.12 s -> 1.52 s, and no re-measurement in the run file: judged on its one sample,
    # beyond the band (baseline x 3 (1 + rtol), 5 floors above it).
    assert main(args) == 1
    assert "compile time of all functions: baseline 0.120 s -> now 1.520 s" in (
        capsys.readouterr().out
    )
    assert main([*args, "--compile-rtol", "4"]) == 0  # band x15
    assert main([*args, "--compile-floor=0.5"]) == 0  # band 2.5 s above
    capsys.readouterr()

    run.environment["jax"] = "0.10.3"
    store.save(run_path, run)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert (
        "jaxperf: compile time of 1 test not gated: environment differs (jax 0.10.2 -> 0.10.3)"
        in out
    )
    assert out.splitlines()[-1].endswith("1 not gated")


def test_compare_clock_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Wall seconds grew tenfold under load, CPU seconds stayed where they were.
    base = RunRecord(tests={"t::a": rec(fn("f", "m.py:1", compile_s=0.2))})
    run = RunRecord(tests={"t::a": rec(fn("f", "m.py:1", compile_s=2.0, cpu=0.25))})
    base_path, run_path = tmp_path / "b.json", tmp_path / "r.json"
    store.save(base_path, base)
    store.save(run_path, run)
    args = ["compare", str(base_path), str(run_path)]
    assert main(args) == 0
    assert main([*args, "--compile-clock=wall"]) == 1
    assert "[wall seconds, rtol 1, floor 0.1 s; not confirmed: " in capsys.readouterr().out


def test_compare_gates_program_metrics_only_on_the_same_jax(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def report(jax: str, eqns: int) -> RunRecord:
        bench = unmeasured(metrics=ProgramMetrics(jaxpr_eqns=eqns, hlo_ops=9))
        return RunRecord(
            environment={"jax": jax},
            tests={"t::a": rec(fn("f", "m.py:1"), benchmarks={"b": bench})},
        )

    base_path, run_path = tmp_path / "b.json", tmp_path / "r.json"
    store.save(base_path, report("0.10.2", 12))
    store.save(run_path, report("0.10.2", 40))
    assert main(["compare", str(base_path), str(run_path)]) == 1
    assert "jaxpr equations of benchmark 'b'" in capsys.readouterr().out
    store.save(run_path, report("0.10.3", 40))
    assert main(["compare", str(base_path), str(run_path)]) == 0
    out = capsys.readouterr().out
    assert "jaxpr_eqns" not in out
    assert (
        "jaxperf: program metrics of 1 test not gated: environment differs (jax 0.10.2 -> "
        "0.10.3)" in out
    )


def test_compare_gates_regressed_tests_and_skips_failed_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = RunRecord(tests={"t::a": rec(fn("f", "m.py:1")), "t::b": rec(fn("g", "m.py:5"))})
    run = RunRecord(
        tests={
            "t::a": rec(fn("f", "m.py:1", traces=2)),
            "t::b": rec(fn("g", "m.py:5", traces=3)),
            "t::gone": rec(),
        }
    )
    run.tests["t::a"].outcome = "regressed"  # the plugin failed it
    run.tests["t::b"].outcome = "failed"  # it failed by itself: a partial record
    base_path, run_path = tmp_path / "b.json", tmp_path / "r.json"
    store.save(base_path, RunRecord(tests={**base.tests, "t::old": rec()}))
    store.save(run_path, run)
    assert main(["compare", str(base_path), str(run_path)]) == 1
    out = capsys.readouterr().out
    assert "  note: the test's outcome in the report: regressed" in out
    assert "traces of g" not in out
    assert "1 baseline tests are not in the report (not compared)" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "run.json: no such file"),
        ("{not json", "run.json is not valid JSON (line 1, column 2"),
        ('{"schema": "other/1"}', "run.json is not a pytest-jaxperf baseline: schema"),
        ("", "run.json is empty"),
    ],
)
def test_compare_bad_input_exits_2_with_one_line(
    files: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    content: str | None,
    message: str,
) -> None:
    base_path, run_path = files
    if content is None:
        run_path.unlink()
    else:
        run_path.write_text(content, encoding="utf-8")
    assert main(["compare", str(base_path), str(run_path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("jaxperf: ")
    assert message in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["compare", "a.json"], "the following arguments are required: REPORT"),
        (["compare", "a", "b", "--compile-rtol", "-1"], "expected a number >= 0, got '-1'"),
        (["compare", "a", "b", "--compile-floor", "nan"], "expected a number >= 0, got 'nan'"),
        (["export", "--format", "csv", "r.json"], "invalid choice: 'csv'"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("jaxperf: ") and message in err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "show" in capsys.readouterr().out
    assert main(["compare", "--help"]) == 0
    assert "--compile-rtol X" in capsys.readouterr().out


def test_show_prints_the_table_and_details(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, run_path = files
    assert main(["show", str(run_path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"{run_path}: 4 tests; backend cpu, cpu AMD EPYC")
    assert lines[1].split() == [
        "test", "traces", "compiles", "compile", "s", "(trace/lower/backend)", "cpu", "s",
        "eqns", "/", "hlo", "/", "xla", "ops", "vs", "baseline", "status",
    ]  # fmt: skip
    assert f"{REGRESSED} (passed)" in lines
    assert (
        "  step at pkg/sim.py:12: traces=2 lowerings=2 compiles=2 cache_hits=0 "
        "trace=0.010s lower=0.010s compile=0.100s cpu=0.120s jaxpr_eqns=0 hlo_ops=0 xla_ops=0 "
        "trace_eqns=0"
    ) in lines
    assert "      retrace: x: f32[3] -> f32[4]" in lines
    loaded = store.load(run_path)
    assert loaded is not None
    assert "  " + benchmark_line("step", loaded.tests[REGRESSED].benchmarks["step"]) in lines


def test_show_names_a_broken_benchmark_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = rec(fn("f", "m.py:1"), benchmarks={"b": unmeasured()})
    path = tmp_path / "r.json"
    store.save(path, RunRecord(tests={"t::a": record}))
    assert main(["show", str(path)]) == 0
    assert "  benchmark 'b': first call 0.200 s" in capsys.readouterr().out
    data = json.loads(path.read_text(encoding="utf-8"))
    data["tests"]["t::a"]["benchmarks"]["b"] = {"runtime": {"median_s": 1.0}}
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{path} is not a pytest-jaxperf baseline: tests['t::a'].benchmarks['b']" in err
    assert "missing field 'compiled_on_first_call'" in err


def test_show_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(tmp_path / "x.json")]) == 2
    assert capsys.readouterr().err == f"jaxperf: {tmp_path / 'x.json'}: no such file\n"


@pytest.mark.parametrize(
    ("fmt", "convert"),
    [("github-action-benchmark", to_github_action_benchmark), ("bencher", to_bencher)],
)
def test_export_to_stdout_and_file(
    files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fmt: str,
    convert: object,
) -> None:
    _, run_path = files
    run = store.load(run_path)
    assert run is not None and callable(convert)
    assert main(["export", "--format", fmt, str(run_path)]) == 0
    assert json.loads(capsys.readouterr().out) == convert(run)
    out_path = tmp_path / "sub" / "out.json"
    assert main(["export", "--format", fmt, str(run_path), "-o", str(out_path)]) == 0
    assert capsys.readouterr().out == ""
    assert json.loads(out_path.read_text(encoding="utf-8")) == convert(run)


def test_export_to_an_unwritable_place_exits_2(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, run_path = files
    target = run_path / "inside-a-file.json"  # run_path is a file, not a directory
    assert main(["export", "--format", "bencher", str(run_path), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"jaxperf: cannot write {target}: ") and err.count("\n") == 1


def _module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_jaxperf", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.e2e
def test_python_dash_m_compare_exit_codes(files: tuple[Path, Path], tmp_path: Path) -> None:
    base_path, run_path = files
    same = _module("compare", str(base_path), str(base_path))
    assert (same.returncode, same.stderr) == (0, "")
    regressed = _module("compare", str(base_path), str(run_path))
    assert regressed.returncode == 1
    assert f"jaxperf: {REGRESSED}: 2 metric(s) over the baseline or a limit" in regressed.stdout
    missing = _module("compare", str(base_path), str(tmp_path / "missing.json"))
    assert missing.returncode == 2
    assert missing.stderr == f"jaxperf: {tmp_path / 'missing.json'}: no such file\n"


PURE = "jax", "jaxlib", "numpy", "matplotlib", "pytest", "_pytest"


@pytest.mark.e2e
def test_compare_without_an_ini_option_does_not_import_pytest(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    base_path, run_path = files
    code = (
        "import sys\n"
        "from pytest_jaxperf.cli import main\n"
        f"code = main(['compare', {str(base_path)!r}, {str(run_path)!r}])\n"
        f"print(code, sorted(m for m in {PURE!r} if m in sys.modules))\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -q\n")  # sets no jaxperf option
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.stdout.splitlines()[-1] == "1 []", done.stderr
    assert "; no ini file sets a jaxperf option" in done.stdout
    # An ini option: read through pytest's own config, so the file is found as a run finds it.
    (tmp_path / "pytest.ini").write_text("[pytest]\njaxperf_static_rtol = 0.3\n")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert "'pytest'" in done.stdout.splitlines()[-1]
    assert f"static rtol 0.3; ini file {tmp_path / 'pytest.ini'}" in done.stdout


def _grown(eqns: int, environment: dict[str, str] | None = None) -> RecordedTest:
    fn = FunctionRecord(traces=1, lowerings=1, compiles=1, name="f", site="t.py:1")
    fn.jaxpr_eqns = fn.hlo_ops = fn.xla_ops = fn.trace_eqns = eqns
    rec = RecordedTest(functions={fn.key: fn}, environment=environment)
    rec.recompute_totals()
    return rec


def test_each_entry_is_gated_in_its_own_environment_between_the_file_s() -> None:
    # evaluate_all works out the gating between the two files' environments once; an entry
    # measured elsewhere (an older jax: its sizes not gated) between two that were not
    # gets its own.
    env = {"backend": "cpu", "jax": "0.10.2", "jaxlib": "0.10.2", "python": "3.11.7"}
    older = {**env, "jax": "0.9.0", "jaxlib": "0.9.0"}
    base = RunRecord(env, {n: _grown(10) for n in ("t.py::a", "t.py::b", "t.py::c")})
    run = RunRecord(
        env, {"t.py::a": _grown(40), "t.py::b": _grown(40, older), "t.py::c": _grown(40)}
    )
    verdicts = evaluate_all(base, run, Tolerances())
    assert {k: v.status for k, v in verdicts.items()} == {
        "t.py::a": "REGRESSED",
        "t.py::b": "ok",
        "t.py::c": "REGRESSED",
    }
    assert verdicts["t.py::b"].notes[0].startswith(
        "program metrics not gated: environment differs (jax 0.10.2 -> 0.9.0"
    )


# What `jaxperf compare` does not use: the save's rules, the ab command, the other reports;
# orjson too, where msgspec reads every file (the `fast` extra).
UNUSED_BY_COMPARE = (
    "pytest_jaxperf.storage.resave",
    "pytest_jaxperf.ab",
    "pytest_jaxperf.report.markdown",
    "pytest_jaxperf.report.html",
    "orjson",
)


@pytest.mark.e2e
def test_compare_imports_only_what_it_uses(files: tuple[Path, Path], tmp_path: Path) -> None:
    pytest.importorskip("msgspec")
    base_path, run_path = files
    code = (
        "import sys\n"
        "from pytest_jaxperf.cli import main\n"
        f"code = main(['compare', {str(base_path)!r}, {str(run_path)!r}])\n"
        f"print(code, sorted(m for m in {UNUSED_BY_COMPARE!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.stdout.splitlines()[-1] == "1 []", done.stderr
    # A merge imports the save's rules where it needs them.
    merged = tmp_path / "merged.json"
    assert main(["merge", str(run_path), "-o", str(merged)]) == 0
    assert merged.exists()


# -- the same verdict as the plugin ---------------------------------------------------------

SAME_VERDICT = """
import os

import jax
import jax.numpy as jnp
import pytest

# 10 equations; 12 (+20%) with GROW=2.
STEPS = 10 + int(os.environ.get("GROW", "0"))

@jax.jit
def poly(x):
    for _ in range(STEPS):
        x = x * 1.5
    return x

def test_ini_tolerance(jaxperf):  # +20% within the ini's static_rtol 0.3
    jaxperf.benchmark(poly, jnp.ones(4))

@pytest.mark.jaxperf(static_rtol=0.05)
def test_marker_tolerance(jaxperf):  # +20% over the marker's own 0.05
    jaxperf.benchmark(poly, jnp.ones(4))

@pytest.mark.jaxperf(max_traces=1)
def test_marker_limit():  # never saved: over its limit, so 'new' but failing
    poly(jnp.ones(2)), poly(jnp.ones(3))
"""


def _verdicts(
    jp: pytest.Pytester, capsys: pytest.CaptureFixture[str], *flags: str
) -> tuple[set[str], str, str]:
    """The plugin's tests that regressed and its tally line, and the CLI's output for the
    same pair of files."""
    baseline = jp.path / ".jaxperf" / "baseline.json"
    run = jp.runpytest("--jaxperf", "--jaxperf-json=run.json", *flags)
    report = json.loads((jp.path / "run.json").read_text(encoding="utf-8"))
    regressed = {k for k, t in report["tests"].items() if t["outcome"] == "regressed"}
    (plugin_tally,) = (line for line in run.stdout.lines if re.match(r"jaxperf: \d+ regr", line))
    capsys.readouterr()
    cli_flags = [f.replace("--jaxperf-", "--") for f in flags]
    assert main(["compare", str(baseline), str(jp.path / "run.json"), *cli_flags]) == (
        1 if regressed else 0
    )
    cli_out = capsys.readouterr().out
    assert cli_out.splitlines()[-1] == plugin_tally
    for nodeid in regressed:
        # The whole failure text, as the plugin printed it (same baseline path).
        lines = cli_out.split(f"\njaxperf: {nodeid}: ", 1)[1].splitlines()
        body = itertools.takewhile(lambda line: line.startswith("  "), lines[1:])
        text = "\n".join([f"jaxperf: {nodeid}: {lines[0]}", *body])
        text = text.split("\n  note: the test's outcome in the report")[0]
        assert text in run.stdout.str()
    return regressed, plugin_tally, cli_out


def test_compare_gives_the_plugins_verdict_for_the_same_files(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Timings out of the way (not deterministic): program metrics, counts and limits decide.
    jp.makeini(
        "[pytest]\naddopts = -p no:cacheprovider\njaxperf_static_rtol = 0.3\n"
        "jaxperf_compile_floor = 1000\njaxperf_timing = off\n"
    )
    jp.makepyfile(test_same=SAME_VERDICT)
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=2, failed=1)
    monkeypatch.setenv("GROW", "2")
    marker_only = {"test_same.py::test_marker_tolerance", "test_same.py::test_marker_limit"}

    regressed, tally, out = _verdicts(jp, capsys)
    assert regressed == marker_only
    assert tally == "jaxperf: 2 regressions, 0 improvements, 0 new, 0 not gated"
    assert "static rtol 0.3; ini file " + str(jp.path / "tox.ini") in out
    assert "test_same.py::test_marker_limit: 1 metric(s) over the baseline or a limit" in out

    # A flag over the ini file, the marker's own tolerance over both.
    regressed, _, out = _verdicts(jp, capsys, "--jaxperf-static-rtol=0.1")
    assert regressed == {"test_same.py::test_ini_tolerance", *marker_only}
    # The function's own program size, as the plugin gates it; the benchmark's, the same
    # numbers, said on that one line.
    assert "jaxpr equations of poly (defined at test_same.py:" in out
    assert "baseline 10 -> now 12" in out.split("jaxpr equations of poly (defined at")[1]
    assert "jaxpr equations of benchmark 'poly'" not in out


def _save_pair(tmp_path: Path, base: RunRecord, run: RunRecord) -> list[str]:
    base_path, run_path = tmp_path / "b.json", tmp_path / "r.json"
    store.save(base_path, base)
    store.save(run_path, run)
    return ["compare", str(base_path), str(run_path)]


def test_compare_runtime_static_and_timing_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no ini file: the defaults
    base = RunRecord(
        environment=dict(ENV), tests={"t::a": rec(fn("f", "m.py:1"), benchmarks={"b": bench(1e-3)})}
    )
    run = RunRecord(
        environment=dict(ENV),
        tests={"t::a": rec(fn("f", "m.py:1"), benchmarks={"b": bench(2e-3, eqns=14)})},
    )
    args = _save_pair(tmp_path, base, run)
    assert main(args) == 1  # twice the runtime; 12 -> 14 equations (+17%)
    out = capsys.readouterr().out
    assert "runtime of benchmark 'b': baseline 1.000 ms -> now 2.000 ms" in out
    assert "jaxpr equations of benchmark 'b': baseline 12 -> now 14" in out
    assert main([*args, "--static-rtol=0.2"]) == 1  # the runtime still
    out = capsys.readouterr().out.split("jaxperf: t::a")[1]
    assert "jaxpr equations of" not in out
    # Within its tolerance, the program's growth is still what the runtime's cause says.
    assert "    cause: the program changed with it: jaxpr equations 12 -> 14" in out
    assert main([*args, "--static-rtol=0.2", "--runtime-rtol=1.5"]) == 0
    capsys.readouterr()
    assert main([*args, "--static-rtol=0.2", "--timing=report"]) == 0
    assert "0 regressions, 0 improvements, 0 new, 0 not gated, 1 reported only" in (
        capsys.readouterr().out  # measured and reported, not failing
    )
    assert main([*args, "--static-rtol=0.2", "--timing=off"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated"
    )


def test_compare_reads_the_ini_file_as_a_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / "tests").mkdir(parents=True)
    elsewhere.mkdir()
    ini = project / "pyproject.toml"
    ini.write_text('[tool.pytest.ini_options]\njaxperf_static_rtol = "0.2"\n', encoding="utf-8")
    base = RunRecord(tests={"t::a": rec(fn("f", "m.py:1"), benchmarks={"b": eqns(12)})})
    run = RunRecord(tests={"t::a": rec(fn("f", "m.py:1"), benchmarks={"b": eqns(14)})})
    args = _save_pair(tmp_path, base, run)

    monkeypatch.chdir(project / "tests")  # found from the current directory up, as pytest does
    assert main(args) == 0
    assert f"static rtol 0.2; ini file {ini}" in capsys.readouterr().out
    assert main([*args, "--static-rtol=0.1"]) == 1  # a flag over the ini file
    monkeypatch.chdir(elsewhere)
    assert main(args) == 1  # no ini file here: the default 0.1
    assert "static rtol 0.1; no ini file sets a jaxperf option" in capsys.readouterr().out
    assert main([*args, "-c", str(ini)]) == 0
    assert main([*args, f"--rootdir={project}"]) == 0
    assert main([*args, "--config-file", str(elsewhere / "missing.ini")]) == 2
    assert "missing.ini' not found" in capsys.readouterr().err

    ini.write_text('[tool.pytest.ini_options]\njaxperf_timing = "fast"\n', encoding="utf-8")
    assert main([*args, "-c", str(ini)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "jaxperf: ini option jaxperf_timing: expected one of gate, report, off, got 'fast'\n"
    )


def test_compare_applies_the_marker_keywords_saved_in_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = RunRecord(
        tests={"t::a": rec(fn("f", "m.py:1", traces=2), benchmarks={"b": bench(1e-3)})}
    )
    run = RunRecord(
        tests={"t::a": rec(fn("f", "m.py:1", traces=2), benchmarks={"b": bench(1e-3, eqns=14)})}
    )
    run.tests["t::a"].marker = {"max_traces": 1, "static_rtol": 0.5}
    args = _save_pair(tmp_path, base, run)
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "traces of all functions: 2 > limit 1" in out
    assert "jaxpr_eqns" not in out  # +17% is within the marker's static_rtol
    run.tests["t::a"].marker = {"max_traces": -1}
    args = _save_pair(tmp_path, base, run)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"jaxperf: {tmp_path / 'r.json'}: test t::a: @pytest.mark.jaxperf(")
    assert (
        "expects a whole number >= 0 for the test total or a dict {function_name: limit}, got -1"
    ) in err


def test_compare_does_not_gate_timings_measured_under_xdist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = RunRecord(environment=dict(ENV), tests={"t::a": rec(fn("f", "m.py:1"))})
    run = RunRecord(
        environment={**ENV, "xdist_workers": 2},
        tests={"t::a": rec(fn("f", "m.py:1", compile_s=2.0))},
    )
    assert main(_save_pair(tmp_path, base, run)) == 0
    assert (
        "jaxperf: compile time of 1 test not gated: environment differs (measured under "
        "pytest-xdist, beside other workers)" in capsys.readouterr().out
    )


@pytest.mark.e2e
def test_odd_values_in_a_report_are_shown_and_exported_not_raised(tmp_path: Path) -> None:
    base, run = baseline_and_run()
    nodeid = next(iter(run.tests))
    run.tests["t.py::test_\udc80odd"] = run.tests[nodeid]  # a lone surrogate in a test id
    run.environment["cpu_freq_mhz"] = float("nan")
    path = tmp_path / "run.json"
    path.write_text(store.dumps(run), encoding="utf-8", errors="surrogatepass")
    # The terminal's encoding strict, as a C locale's or a pipe's may be.
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    shown = subprocess.run(
        [sys.executable, "-m", "pytest_jaxperf", "show", str(path)],
        capture_output=True, text=True, timeout=120, env=env, errors="replace",
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "t.py::test_\\udc80odd" in shown.stdout
    exported = subprocess.run(
        [sys.executable, "-m", "pytest_jaxperf", "export", "--format", "pytest-benchmark",
         str(path)],
        capture_output=True, text=True, timeout=120, env=env, errors="replace",
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    machine = json.loads(exported.stdout)["machine_info"]["jaxperf_environment"]
    assert machine["cpu_freq_mhz"] is None
