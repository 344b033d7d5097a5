"""The files a run writes: paths checked at start-up (unit and end to end), a write that fails
at the end reported without stopping the others, and the $GITHUB_STEP_SUMMARY append."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ONE_JITTED_TEST, lit, read_json

from pytest_jaxperf.storage import outputs
from pytest_jaxperf.storage.outputs import Output

# -- the start-up rule, one case at a time -------------------------------------------------


def test_a_writable_path_has_no_problem_and_nothing_is_created(tmp_path: Path) -> None:
    for mode in ("replace", "write", "append"):
        out = Output("--jaxperf-json", tmp_path / "new" / "deeper" / "r.json", mode, locked=True)
        assert outputs.problem(out) is None
    assert list(tmp_path.iterdir()) == []


def test_a_directory_where_a_file_is_expected(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    line = outputs.problem(Output("--jaxperf-json", tmp_path / "out", "replace"))
    assert line == f"--jaxperf-json {tmp_path / 'out'}: is a directory, not a file; " + (
        "pass the path of a file"
    )
    # Even a baseline that is only read.
    assert outputs.problem(Output("--jaxperf-baseline", tmp_path / "out", "read")) is not None


def test_a_file_in_the_way_of_the_directory(tmp_path: Path) -> None:
    (tmp_path / "reports").write_text("not a directory")
    path = tmp_path / "reports" / "sub" / "summary.md"
    line = outputs.problem(Output("ini option jaxperf_markdown", path, "write"))
    assert line == (
        f"ini option jaxperf_markdown {path}: cannot create directory {path.parent}: "
        f"{tmp_path / 'reports'} is a file; pass another path or move that file"
    )


def test_replacing_something_that_is_not_a_regular_file(tmp_path: Path) -> None:
    if not Path("/dev/null").exists():
        pytest.skip("needs /dev/null")
    line = outputs.problem(Output("--jaxperf-json", Path("/dev/null"), "replace"))
    assert line is not None and "is not a regular file" in line
    assert outputs.problem(Output("--jaxperf-markdown", Path("/dev/null"), "write")) is None


def test_an_unwritable_directory_or_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # os.access stands in for the permissions: the suite may run as root, who may write anywhere.
    existing = tmp_path / "h.jsonl"
    existing.write_text("")
    denied = {tmp_path}
    monkeypatch.setattr(outputs.os, "access", lambda p, mode: Path(p) not in denied)
    line = outputs.problem(Output("--jaxperf-json", tmp_path / "r.json", "replace"))
    assert line == (
        f"--jaxperf-json {tmp_path / 'r.json'}: directory {tmp_path} is not writable; "
        "pass a path in a writable directory or fix its permissions"
    )
    # A file written in place needs only itself writable, unless a lock file goes beside it.
    assert outputs.problem(Output("--jaxperf-markdown", existing, "append")) is None
    assert "is not writable" in str(outputs.problem(Output("-x", existing, "append", locked=True)))
    denied = {existing}
    line = outputs.problem(Output("--jaxperf-markdown", existing, "write"))
    assert line == (
        f"--jaxperf-markdown {existing}: file is not writable; "
        "fix its permissions or pass another path"
    )
    # Replaced, not written in place: its directory decides.
    assert outputs.problem(Output("--jaxperf-json", existing, "replace")) is None


def test_step_summary_is_the_path_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "step_summary"
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert not outputs.is_step_summary(summary)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert outputs.is_step_summary(summary)
    assert outputs.is_step_summary(tmp_path / "x" / ".." / "step_summary")
    assert not outputs.is_step_summary(tmp_path / "other.md")


def test_write_text_appends_after_a_blank_line(tmp_path: Path) -> None:
    path = tmp_path / "a" / "s.md"
    outputs.write_text(path, "one\n", append=True)
    assert path.read_text() == "one\n"
    outputs.write_text(path, "two\n", append=True)
    assert path.read_text() == "one\n\ntwo\n"
    outputs.write_text(path, "three\n")
    assert path.read_text() == "three\n"


# -- end to end: start-up ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "ini", "named"),
    [
        (["--jaxperf-json=taken"], "", "--jaxperf-json {taken}: is a directory"),
        (["--jaxperf-markdown=taken"], "", "--jaxperf-markdown {taken}: is a directory"),
        (["--jaxperf-html=taken"], "", "--jaxperf-html {taken}: is a directory"),
        (["--jaxperf-history=taken"], "", "--jaxperf-history {taken}: is a directory"),
        (["--jaxperf-baseline=taken"], "", "--jaxperf-baseline {taken}: is a directory"),
        (["--jaxperf-save"], "jaxperf_baseline = taken",
         "ini option jaxperf_baseline {taken}: is a directory"),
        (["--jaxperf-json=blocker/r.json"], "",
         "--jaxperf-json {blocker}/r.json: cannot create directory {blocker}: {blocker} is a file"),
        ([], "jaxperf_history = blocker/deep/h.jsonl",
         "ini option jaxperf_history {blocker}/deep/h.jsonl: cannot create directory "
         "{blocker}/deep: {blocker} is a file"),
    ],
)  # fmt: skip
def test_a_path_that_cannot_be_written_stops_the_run_before_any_test(
    jp: pytest.Pytester, args: list[str], ini: str, named: str
) -> None:
    jp.makeini(f"[pytest]\naddopts = -p no:cacheprovider\n{ini}\n")
    jp.makepyfile(ONE_JITTED_TEST)
    (jp.path / "taken").mkdir()
    (jp.path / "blocker").write_text("a file")
    result = jp.runpytest("--jaxperf", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.strip()]
    assert len(errors) == 1, errors
    expected = named.format(taken=jp.path / "taken", blocker=jp.path / "blocker")
    assert errors[0].startswith(f"ERROR: pytest-jaxperf: {expected}")
    assert errors[0].endswith(("pass the path of a file", "pass another path or move that file"))
    result.stdout.no_fnmatch_line("*passed*")
    assert not (jp.path / ".jaxperf").exists()
    assert list((jp.path / "taken").iterdir()) == []
    assert (jp.path / "blocker").read_text() == "a file"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_directory_stops_the_run(jp: pytest.Pytester) -> None:
    jp.makepyfile(ONE_JITTED_TEST)
    locked_dir = jp.path / "ro"
    locked_dir.mkdir()
    locked_dir.chmod(0o500)
    try:
        result = jp.runpytest("--jaxperf", f"--jaxperf-json={locked_dir}/r.json")
    finally:
        locked_dir.chmod(0o700)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: pytest-jaxperf: --jaxperf-json {locked_dir}/r.json: directory {locked_dir} "
         "is not writable; pass a path in a writable directory or fix its permissions"]
    )  # fmt: skip


# -- end to end: at the end ----------------------------------------------------------------

# The test itself puts a directory where one file will be written, after the start-up check.
SABOTAGE = (
    "import os\nfrom pathlib import Path\n"
    + ONE_JITTED_TEST
    + '    Path(os.environ["JAXPERF_TEST_SABOTAGE"]).mkdir(parents=True)\n'
)


@pytest.mark.parametrize("broken", ["baseline", "json", "markdown", "history"])
def test_a_file_that_cannot_be_written_at_the_end_keeps_the_others(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    jp.makepyfile(SABOTAGE)
    paths = {
        "baseline": jp.path / "perf" / "base.json",
        "json": jp.path / "out" / "run.json",
        "markdown": jp.path / "out" / "summary.md",
        "history": jp.path / "out" / "history.jsonl",
    }
    options = {
        "baseline": "--jaxperf-baseline",
        "json": "--jaxperf-json",
        "markdown": "--jaxperf-markdown",
        "history": "--jaxperf-history",
    }
    monkeypatch.setenv("JAXPERF_TEST_SABOTAGE", str(paths[broken]))
    args = [f"{options[k]}={p}" for k, p in paths.items()]
    result = jp.runpytest("--jaxperf", "--jaxperf-save", *args)
    result.assert_outcomes(passed=1)
    # The test passed, but a file asked for is missing: the run says so in its exit status.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        lit(f"pytest-jaxperf: {options[broken]} {paths[broken]} not written: *")
    )
    assert len([ln for ln in result.stdout.lines if "not written" in ln]) == 1
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    assert paths[broken].is_dir()
    nodeid = "test_a_file_that_cannot_be_written_at_the_end_keeps_the_others.py::test_f"
    for kind, path in paths.items():
        if kind == broken:
            continue
        assert path.is_file(), kind
        text = path.read_text()
        if kind in ("baseline", "json"):
            assert read_json(path)["tests"][nodeid]["traces"] == 1
        elif kind == "history":
            assert json.loads(text.splitlines()[-1])["tests"][nodeid]["traces"] == 1
        else:
            assert nodeid in text


def test_markdown_to_the_step_summary_appends(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    jp.makepyfile(ONE_JITTED_TEST)
    summary = jp.path / "step_summary"
    summary.write_text("## Lint\nall clean\n")
    other = jp.path / "other.md"
    other.write_text("old content\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    jp.runpytest("--jaxperf", f"--jaxperf-markdown={summary}").assert_outcomes(passed=1)
    text = summary.read_text()
    assert text.startswith("## Lint\nall clean\n\n## pytest-jaxperf\n")
    jp.runpytest("--jaxperf", f"--jaxperf-markdown={summary}").assert_outcomes(passed=1)
    assert summary.read_text().count("## pytest-jaxperf") == 2
    assert summary.read_text().startswith(text)
    # Any other markdown path is overwritten, as before.
    jp.runpytest("--jaxperf", f"--jaxperf-markdown={other}").assert_outcomes(passed=1)
    assert other.read_text().startswith("## pytest-jaxperf\n")


# -- --jaxperf-export -------------------------------------------------------------------------

BENCHMARKED = """
import jax
import jax.numpy as jnp

@jax.jit
def step(x):
    return jnp.sin(x) * 2.0

def test_step(jaxperf):
    jaxperf.benchmark(step, jnp.ones(64), label="step")

def test_counts_only(jaxperf):
    step(jnp.ones(8))
"""


def test_export_writes_a_pytest_benchmark_document(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_bench=BENCHMARKED)
    result = jp.runpytest(
        "--jaxperf",
        "--jaxperf-min-rounds=5",
        "--jaxperf-max-time=0.01",
        "--jaxperf-export=pytest-benchmark:out/bench.json",
        "--jaxperf-json=run.json",
    )
    result.assert_outcomes(passed=2)
    doc = read_json(jp.path / "out" / "bench.json")
    run = read_json(jp.path / "run.json")
    # One entry per benchmark that measured a runtime; the run's own figures.
    [entry] = doc["benchmarks"]
    assert entry["fullname"] == "test_bench.py::test_step::step"
    runtime = run["tests"]["test_bench.py::test_step"]["benchmarks"]["step"]["runtime"]
    assert entry["stats"]["median"] == runtime["median_s"]
    assert entry["stats"]["rounds"] == runtime["rounds"] >= 5
    assert entry["stats"]["ops"] == pytest.approx(1 / runtime["mean_s"])
    assert doc["commit_info"] == {}  # not a git work tree: nothing made up
    assert doc["machine_info"]["jaxperf_environment"]["jax"] == run["environment"]["jax"]


def test_pytest_benchmark_compare_reads_the_export_of_over_a_hundred_rounds(
    jp: pytest.Pytester,
) -> None:
    pytest.importorskip("pytest_benchmark")
    jp.makepyfile(test_bench=BENCHMARKED)
    result = jp.runpytest(
        "--jaxperf",
        "--jaxperf-min-rounds=150",  # more rounds than a report keeps samples of (100)
        "--jaxperf-max-time=0.01",
        "--jaxperf-export=pytest-benchmark:plugin.json",
        "--jaxperf-json=run.json",
    )
    result.assert_outcomes(passed=2)
    command = [sys.executable, "-m", "pytest_jaxperf", "export", "--format", "pytest-benchmark"]
    exported = subprocess.run([*command, "run.json", "-o", "cli.json"], cwd=jp.path)
    assert exported.returncode == 0
    for name in ("plugin.json", "cli.json"):
        stats = read_json(jp.path / name)["benchmarks"][0]["stats"]
        assert stats["rounds"] >= 150 and len(stats["data"]) == 100
        assert {"outliers", "stddev_outliers", "ld15iqr", "hd15iqr", "data"} <= set(stats)
    # pytest-benchmark's own reader and table, as `pytest-benchmark compare A B` runs them.
    main = "import sys; from pytest_benchmark.cli import main; sys.argv[0] = 'x'; main()"
    compared = subprocess.run(
        [sys.executable, "-c", main, "compare", "plugin.json", "cli.json"],
        cwd=jp.path, capture_output=True, text=True,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "Failed to load" not in compared.stdout + compared.stderr
    rows = [line for line in compared.stdout.splitlines() if line.startswith("test_step::step")]
    assert len(rows) == 2, compared.stdout


def test_export_format_other_than_pytest_benchmark(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_bench=BENCHMARKED)
    result = jp.runpytest("--jaxperf", "--jaxperf-timing=off", "--jaxperf-export=bencher:bmf.json")
    result.assert_outcomes(passed=2)
    doc = read_json(jp.path / "bmf.json")
    assert doc["test_bench.py::test_counts_only"]["compiles"] == {"value": 1}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--jaxperf-json=out.json", "--jaxperf-export=pytest-benchmark:out.json"],
         "--jaxperf-json and --jaxperf-export both name {path}/out.json"),
        (["--jaxperf-baseline=b.json", "--jaxperf-json=./b.json"],
         "--jaxperf-baseline and --jaxperf-json both name {path}/b.json"),
        (["--jaxperf-markdown=r.md", "--jaxperf-html=r.md"],
         "--jaxperf-markdown and --jaxperf-html both name {path}/r.md"),
    ],
)  # fmt: skip
def test_two_options_naming_one_file_stop_the_run(
    jp: pytest.Pytester, args: list[str], message: str
) -> None:
    jp.makepyfile(ONE_JITTED_TEST)
    (jp.path / "b.json").write_text("kept")
    result = jp.runpytest("--jaxperf", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: pytest-jaxperf: {message.format(path=jp.path)}*give each its own path"]
    )
    assert (jp.path / "b.json").read_text() == "kept"
    assert not (jp.path / "out.json").exists()


# -- symbolic links --------------------------------------------------------------------------


def test_a_baseline_linked_to_a_shared_file_is_saved_there(jp: pytest.Pytester) -> None:
    jp.makepyfile(ONE_JITTED_TEST)
    shared = jp.path / "shared" / "baseline.json"
    shared.parent.mkdir()
    link = jp.path / ".jaxperf" / "baseline.json"
    link.parent.mkdir()
    link.symlink_to(os.path.relpath(shared, link.parent))  # dangling until the first save
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=1)
    assert link.is_symlink()
    assert list(read_json(shared)["tests"]) == [
        "test_a_baseline_linked_to_a_shared_file_is_saved_there.py::test_f"
    ]
    # The lock beside the file it guards, not beside the link.
    assert (shared.parent / "baseline.json.lock").exists()
    assert not (link.parent / "baseline.json.lock").exists()
    # Saved again through the link: still a link, the shared file updated in place.
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=1)
    assert link.is_symlink() and read_json(link) == read_json(shared)


def test_a_replaced_file_keeps_its_mode_and_a_new_one_gets_the_umasks(tmp_path: Path) -> None:
    kept = tmp_path / "kept.json"
    kept.write_text("{}")
    kept.chmod(0o640)
    outputs.replace_text(kept, "[]")
    assert kept.read_text() == "[]" and kept.stat().st_mode & 0o777 == 0o640
    umask = os.umask(0o022)
    try:
        outputs.replace_text(tmp_path / "new.json", "{}")
    finally:
        os.umask(umask)
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o644
