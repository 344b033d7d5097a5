"""Unit tests for pytest_jaxperf.storage.history: entries, JSON Lines appends and loading."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from _jaxperf_data import ENV, NEW, REGRESSED, baseline_and_run, fn, rec, unmeasured
from conftest import ONE_JITTED_TEST

from pytest_jaxperf.model import RunRecord, ScalingEntry
from pytest_jaxperf.storage import history

WHEN = datetime(2025, 3, 4, 5, 6, 7, tzinfo=timezone.utc)


def test_entry_holds_time_environment_and_key_metrics(tmp_path: Path) -> None:
    _, run = baseline_and_run()
    run.tests[REGRESSED].outcome = "failed"
    entry = history.make_entry(run, WHEN, cwd=tmp_path)
    assert entry["schema"] == history.SCHEMA
    assert entry["time"] == "2025-03-04T05:06:07Z"
    assert entry["environment"] == ENV
    assert "commit" not in entry and "dirty" not in entry  # tmp_path is no git work tree
    assert entry["tests"][REGRESSED] == {
        "traces": 2,
        "compiles": 2,
        "compile_s": 0.12,  # trace 0.01 + lower 0.01 + backend 0.1
        "outcome": "failed",
        "runtime_s": {"step": 1.6e-3},
    }
    assert entry["tests"][NEW]["runtime_s"] == {"fresh": 2e-5}
    assert "outcome" not in entry["tests"][NEW]
    assert list(entry["tests"]) == sorted(run.tests)


def test_time_is_converted_to_utc(tmp_path: Path) -> None:
    berlin = timezone(timedelta(hours=1))
    entry = history.make_entry(RunRecord(), datetime(2025, 1, 1, 0, 30, tzinfo=berlin), tmp_path)
    assert entry["time"] == "2024-12-31T23:30:00Z"
    now = history.make_entry(RunRecord(), cwd=tmp_path)["time"]
    assert now.endswith("Z") and abs(
        datetime.fromisoformat(now[:-1]).replace(tzinfo=timezone.utc) - datetime.now(timezone.utc)
    ) < timedelta(minutes=1)


def test_benchmarks_without_a_runtime_are_left_out(tmp_path: Path) -> None:
    record = rec(
        fn("f", "m.py:1"),
        benchmarks={
            "scaling": ScalingEntry(metric="jaxpr_eqns", sizes=(1, 2), values=(1, 2), exponent=0),
            "none": unmeasured(),
        },
    )
    entry = history.make_entry(RunRecord(tests={"t::a": record}), WHEN, tmp_path)
    assert "runtime_s" not in entry["tests"]["t::a"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_commit_and_dirty_flag_in_a_git_work_tree(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    _git(tmp_path, "add", "a.py")
    _git(tmp_path, "commit", "-q", "-m", "one")
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.strip()
    entry = history.make_entry(RunRecord(), WHEN, cwd=tmp_path)
    assert (entry["commit"], entry["dirty"]) == (head, False)
    (tmp_path / "report.json").write_text("{}")  # untracked files do not count
    assert history.make_entry(RunRecord(), WHEN, cwd=tmp_path)["dirty"] is False
    (tmp_path / "a.py").write_text("x = 2\n")
    assert history.make_entry(RunRecord(), WHEN, cwd=tmp_path)["dirty"] is True


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_repository_without_commits_has_no_commit(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    assert "commit" not in history.make_entry(RunRecord(), WHEN, cwd=tmp_path)


def test_no_git_or_a_slow_git_leaves_the_fields_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert "commit" not in history.make_entry(RunRecord(), WHEN, cwd=Path.cwd())
    monkeypatch.undo()

    def slow(*args: object, **kwargs: object) -> None:
        raise subprocess.TimeoutExpired("git", history.GIT_TIMEOUT_S)

    monkeypatch.setattr(history.subprocess, "run", slow)
    entry = history.make_entry(RunRecord(), WHEN, cwd=Path.cwd())
    assert "commit" not in entry and "dirty" not in entry


def test_append_writes_one_line_per_run_and_load_reads_them_back(tmp_path: Path) -> None:
    _, run = baseline_and_run()
    path = tmp_path / "deep" / "er" / "history.jsonl"
    first = history.make_entry(run, WHEN, tmp_path)
    second = history.make_entry(run, WHEN + timedelta(days=1), tmp_path)
    history.append(path, first)
    history.append(path, second)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    assert [json.loads(line)["time"] for line in lines] == [first["time"], second["time"]]
    assert history.load(path) == [first, second]


def test_load_of_a_missing_file_is_empty_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    assert history.load(tmp_path / "nope.jsonl") == []
    path = tmp_path / "h.jsonl"
    path.write_text('{"tests": {}}\n\n   \n{"tests": {"t": {}}}\n', encoding="utf-8")
    assert history.load(path) == [{"tests": {}}, {"tests": {"t": {}}}]


def test_load_last_parses_only_the_final_entries(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    # A broken first line is not read when only the last two are asked for.
    path.write_text('{"tests": {\n{"tests": {"a": {}}}\n\n{"tests": {"b": {}}}\n')
    assert history.read(path, last=2) == history.History(
        [{"tests": {"a": {}}}, {"tests": {"b": {}}}]
    )
    assert history.load(path, last=1) == [{"tests": {"b": {}}}]
    assert history.load(path, last=0) == []
    assert history.read(path, last=5).skipped == (1,)


def test_last_counts_entries_not_lines(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"tests": {"a": {}}}\n{"tests": {"b": {}}}\n{"tes\n{"tests": {"c": {}}}\n')
    got = history.read(path, last=2)
    assert got.entries == [{"tests": {"b": {}}}, {"tests": {"c": {}}}]
    assert got.skipped == (3,)


@pytest.mark.parametrize(
    ("second_line", "message"),
    [
        ("[1, 2]", "not a pytest-jaxperf history entry"),
        ('{"tests": []}', "not a pytest-jaxperf history entry"),
        ('{"schema": "other/9", "tests": {}}', "history schema 'other/9'"),
    ],
)
def test_a_bad_line_names_the_file_and_line(tmp_path: Path, second_line: str, message: str) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"tests": {}}\n' + second_line + "\n", encoding="utf-8")
    with pytest.raises(history.HistoryError) as info:
        history.load(path)
    assert str(info.value).startswith(f"{path}:2: ")
    assert message in str(info.value)
    assert str(info.value).endswith("fix or delete that line")


def test_an_unfinished_last_line_does_not_swallow_the_next_entry(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"tests": {}}\n{"tests": {"t::a": {"tra', encoding="utf-8")
    history.append(path, {"tests": {"t::b": {"traces": 1}}})
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[2] == '{"tests":{"t::b":{"traces":1}}}'
    got = history.read(path)
    assert got.entries == [{"tests": {}}, {"tests": {"t::b": {"traces": 1}}}]
    assert got.skipped == (2,)


@pytest.mark.parametrize(
    "cut",
    [
        b'{"tests": {"t::a": {"tra',  # inside a key
        b'{"schema":"pytest-jaxperf-history/1","tests":{"t::a":{"traces":1}}',  # one brace short
        '{"tests": {"t::\u00e9'.encode()[:-1],  # inside a character: not even UTF-8
    ],
)
def test_a_line_cut_short_is_skipped_with_a_note(tmp_path: Path, cut: bytes) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(b'{"tests": {}}\n' + cut + b'\n{"tests": {"t::b": {}}}\n')
    got = history.read(path)
    assert got.entries == [{"tests": {}}, {"tests": {"t::b": {}}}]
    assert got.skipped == (2,)
    assert got.note(path) == (
        f"{path}: skipped 1 unreadable line(s) (line 2: cut short by an interrupted run?); "
        "delete them to silence this note"
    )
    assert history.History([{"tests": {}}]).note(path) is None
    many = history.History([], tuple(range(1, 8))).note(path)
    assert many is not None and "skipped 7 unreadable line(s) (line 1, 2, 3, 4, 5, ...:" in many


def test_a_run_after_an_interrupted_writer_appends_with_a_note(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_run=ONE_JITTED_TEST)
    path = jp.path / "h.jsonl"
    jp.runpytest("--jaxperf", f"--jaxperf-history={path}").assert_outcomes(passed=1)
    first = path.read_text()
    path.write_text(first + first[: len(first) // 2])  # a second run cut short mid-line
    for run in (1, 2):
        result = jp.runpytest("--jaxperf", f"--jaxperf-history={path}")
        assert result.ret == pytest.ExitCode.OK
        result.assert_outcomes(passed=1)
        notes = [line for line in result.stdout.lines if "unreadable line" in line]
        assert notes == [
            f"pytest-jaxperf: {path}: skipped 1 unreadable line(s) (line 2: cut short by an "
            "interrupted run?); delete them to silence this note"
        ]
        result.stdout.no_fnmatch_line("*Traceback*")
        lines = path.read_text().split("\n")
        assert lines[-1] == "" and len(lines) == 3 + run
        assert json.loads(lines[-2])["tests"]["test_run.py::test_f"]["traces"] == 1
    assert [e["tests"]["test_run.py::test_f"]["traces"] for e in history.load(path)] == [1, 1, 1]


def test_append_refuses_values_json_cannot_hold(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    with pytest.raises(ValueError, match="JSON compliant"):
        history.append(path, {"tests": {"t": {"compile_s": float("nan")}}})
    assert not path.exists() or path.read_text() == ""


def test_lines_past_what_python_reads_are_skipped_and_a_fifo_is_refused(tmp_path: Path) -> None:
    import os

    from pytest_jaxperf.storage.outputs import OutputError

    path = tmp_path / "history.jsonl"
    good = json.dumps({"schema": history.SCHEMA, "tests": {}})
    huge = '{"tests": {}, "n": ' + "9" * 5000 + "}"
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text("\n".join([good, huge, deep, good]) + "\n")
    read = history.read(path)
    assert len(read.entries) == 2 and read.skipped == (2, 3)
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises((history.HistoryError, OutputError)) as info:
        history.read(fifo)
    assert str(info.value) == (
        f"cannot read history {fifo}: [Errno 22] not a regular file: '{fifo}'"
    )
