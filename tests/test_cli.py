"""Tests of the `jaxperf` command: show, compare (exit codes 0/1/2) and export."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _jaxperf_data import (
    IMPROVED,
    NEW,
    OK,
    REGRESSED,
    baseline_and_run,
    fn,
    outcomes_for,
    rec,
    unmeasured,
)

from pytest_jaxperf import baseline as baseline_io
from pytest_jaxperf.cli import main
from pytest_jaxperf.export import to_bencher, to_github_action_benchmark
from pytest_jaxperf.model import ProgramMetrics, Report
from pytest_jaxperf.report import benchmark_line, failure_text, tally


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """(baseline, report) files: the report has one regression."""
    base, run = baseline_and_run()
    base_path, run_path = tmp_path / "baseline.json", tmp_path / "run.json"
    baseline_io.save(base_path, base)
    baseline_io.save(run_path, run)
    return base_path, run_path


def test_compare_prints_each_regression_and_exits_1(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base_path, run_path = files
    assert main(["compare", str(base_path), str(run_path)]) == 1
    out, err = capsys.readouterr()
    base, run = baseline_io.load(base_path), baseline_io.load(run_path)
    assert base is not None and run is not None
    outcomes = outcomes_for(base, run)
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == f"jaxperf: comparing {run_path} (4 tests) with {base_path} (3 tests)"
    assert failure_text(REGRESSED, outcomes[REGRESSED], str(base_path)) in out
    assert f"improved: {IMPROVED}: traces of solve at pkg/solve.py:40: 3 -> 1" in out
    assert (
        lines[-1] == tally(outcomes) == ("jaxperf: 1 regression, 1 improvement, 1 new, 0 not gated")
    )
    assert NEW not in out and OK not in out


def test_compare_without_regressions_exits_0(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base_path, _ = files
    assert main(["compare", str(base_path), str(base_path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated"


def test_compare_reports_a_gone_function_as_such_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = Report(tests={"t::a": rec(fn("f", "m.py:1"), fn("g", "m.py:9", compile_s=0.5))})
    run = Report(tests={"t::a": rec(fn("f", "m.py:1"))})
    base_path, run_path = tmp_path / "b.json", tmp_path / "r.json"
    baseline_io.save(base_path, base)
    baseline_io.save(run_path, run)
    assert main(["compare", str(base_path), str(run_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        "function gone: t::a: g at m.py:9 no longer traced (baseline: traces 1, compiles 1); "
        "if the test still calls it, it is no longer jitted and runs op by op",
        "jaxperf: 0 regressions, 0 improvements, 0 new, 0 not gated, 1 function gone",
    ]


def test_compare_tolerances_and_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = Report(environment={"jax": "0.10.2"}, tests={"t::a": rec(fn("f", "m.py:1"))})
    run = Report(
        environment={"jax": "0.10.2"}, tests={"t::a": rec(fn("f", "m.py:1", compile_s=0.5))}
    )
    base_path, run_path = tmp_path / "b.json", tmp_path / "r.json"
    baseline_io.save(base_path, base)
    baseline_io.save(run_path, run)
    args = ["compare", str(base_path), str(run_path)]
    assert main(args) == 1  # 0.12 s -> 0.52 s: over rtol 1 and floor 0.1
    assert "compile time of all functions: baseline 0.120 s -> now 0.520 s" in (
        capsys.readouterr().out
    )
    assert main([*args, "--compile-rtol", "4"]) == 0
    assert main([*args, "--compile-floor=0.5"]) == 0
    capsys.readouterr()

    run.environment["jax"] = "0.10.3"
    baseline_io.save(run_path, run)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert (
        "note (1 test): compile time not gated: environment differs (jax 0.10.2 -> 0.10.3)" in out
    )
    assert out.splitlines()[-1].endswith("1 not gated")


def test_compare_clock_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Wall seconds grew fourfold under load, CPU seconds stayed where they were.
    base = Report(tests={"t::a": rec(fn("f", "m.py:1", compile_s=0.2))})
    run = Report(tests={"t::a": rec(fn("f", "m.py:1", compile_s=0.8, cpu=0.25))})
    base_path, run_path = tmp_path / "b.json", tmp_path / "r.json"
    baseline_io.save(base_path, base)
    baseline_io.save(run_path, run)
    args = ["compare", str(base_path), str(run_path)]
    assert main(args) == 0
    assert main([*args, "--compile-clock=wall"]) == 1
    assert "[wall seconds, rtol 1, floor 0.1 s]" in capsys.readouterr().out


def test_compare_gates_program_metrics_only_on_the_same_jax(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def report(jax: str, eqns: int) -> Report:
        bench = unmeasured(metrics=ProgramMetrics(jaxpr_eqns=eqns, hlo_ops=9))
        return Report(
            environment={"jax": jax},
            tests={"t::a": rec(fn("f", "m.py:1"), benchmarks={"b": bench})},
        )

    base_path, run_path = tmp_path / "b.json", tmp_path / "r.json"
    baseline_io.save(base_path, report("0.10.2", 12))
    baseline_io.save(run_path, report("0.10.2", 40))
    assert main(["compare", str(base_path), str(run_path)]) == 1
    assert "jaxpr_eqns" in capsys.readouterr().out
    baseline_io.save(run_path, report("0.10.3", 40))
    assert main(["compare", str(base_path), str(run_path)]) == 0
    out = capsys.readouterr().out
    assert "jaxpr_eqns" not in out
    assert (
        "note (1 test): program metrics not gated: environment differs (jax 0.10.2 -> 0.10.3)"
        in out
    )


def test_compare_gates_regressed_tests_and_skips_failed_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = Report(tests={"t::a": rec(fn("f", "m.py:1")), "t::b": rec(fn("g", "m.py:5"))})
    run = Report(
        tests={
            "t::a": rec(fn("f", "m.py:1", traces=2)),
            "t::b": rec(fn("g", "m.py:5", traces=3)),
            "t::gone": rec(),
        }
    )
    run.tests["t::a"].outcome = "regressed"  # the plugin failed it
    run.tests["t::b"].outcome = "failed"  # it failed by itself: a partial record
    base_path, run_path = tmp_path / "b.json", tmp_path / "r.json"
    baseline_io.save(base_path, Report(tests={**base.tests, "t::old": rec()}))
    baseline_io.save(run_path, run)
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
        "vs", "baseline", "status",
    ]  # fmt: skip
    assert f"{REGRESSED} (passed)" in lines
    assert (
        "  step at pkg/sim.py:12: traces=2 lowerings=2 compiles=2 cache_hits=0 "
        "trace=0.010s lower=0.010s compile=0.100s cpu=0.120s"
    ) in lines
    assert "      retrace: x: f32[3] -> f32[4]" in lines
    loaded = baseline_io.load(run_path)
    assert loaded is not None
    assert "  " + benchmark_line("step", loaded.tests[REGRESSED].benchmarks["step"]) in lines


def test_show_names_a_broken_benchmark_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = rec(fn("f", "m.py:1"), benchmarks={"b": unmeasured()})
    path = tmp_path / "r.json"
    baseline_io.save(path, Report(tests={"t::a": record}))
    assert main(["show", str(path)]) == 0
    assert "  benchmark 'b': first call 0.200 s" in capsys.readouterr().out
    data = json.loads(path.read_text(encoding="utf-8"))
    data["tests"]["t::a"]["benchmarks"]["b"] = {"runtime": {"median_s": 1.0}}
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{path} is not a pytest-jaxperf baseline: tests['t::a'].benchmarks['b']" in err
    assert "missing field 'trace_s'" in err


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
    run = baseline_io.load(run_path)
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


def test_report_modules_import_neither_jax_nor_matplotlib() -> None:
    code = (
        "import sys\n"
        "import pytest_jaxperf.cli, pytest_jaxperf.markdown, pytest_jaxperf.history\n"
        "import pytest_jaxperf.export, pytest_jaxperf.html\n"
        "print(sorted(m for m in ('jax', 'jaxlib', 'matplotlib') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"
