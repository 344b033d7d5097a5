"""Runs that save into one baseline or append to one history at the same time keep each
other's work: the merge re-reads the file under its lock."""

from __future__ import annotations

from pathlib import Path

import pytest
from _jaxperf_data import ENV
from _records import fn, rec
from conftest import read_json
from filelock import FileLock

from pytest_jaxperf import baseline, history, outputs
from pytest_jaxperf.model import Report


def _run(*nodeids: str) -> Report:
    return Report(environment=ENV, tests={n: rec(fn("f", "m.py:1")) for n in nodeids})


def test_save_merged_keeps_entries_saved_since_the_run_started(tmp_path: Path) -> None:
    path = tmp_path / ".jaxperf" / "baseline.json"
    baseline.save(path, _run("t::old"))
    at_start = baseline.load(path)  # what this run read at start-up
    baseline.save_merged(path, _run("t::other"))  # another run saved meanwhile
    merged = baseline.save_merged(path, _run("t::mine"))
    assert set(merged.tests) == {"t::old", "t::other", "t::mine"}
    assert baseline.load(path) == merged
    # What saving did before: the start-up read merged, the other run's entry lost.
    assert "t::other" not in baseline.merge(at_start, _run("t::mine")).tests
    assert outputs.lock_path(path) == tmp_path / ".jaxperf" / "baseline.json.lock"
    assert outputs.lock_path(path).exists()


def test_save_merged_waits_for_the_lock_and_says_so_when_it_gives_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, log = tmp_path / "baseline.json", tmp_path / "h.jsonl"
    baseline.save(path, _run("t::old"))
    before = path.read_text()
    monkeypatch.setattr(outputs, "LOCK_TIMEOUT_S", 0.05)
    # Other runs holding the locks.
    with FileLock(outputs.lock_path(path)), FileLock(outputs.lock_path(log)):
        with pytest.raises(outputs.OutputError) as info:
            baseline.save_merged(path, _run("t::mine"))
        with pytest.raises(outputs.OutputError, match="h.jsonl.lock after 0.05 s"):
            history.append(log, {"tests": {}})
    assert str(info.value) == (
        f"{path}: another run still held its lock baseline.json.lock after 0.05 s; "
        "let it finish (or stop it) and run again"
    )
    assert path.read_text() == before
    assert not log.exists()
    baseline.save_merged(path, _run("t::mine"))  # free again
    assert set(read_json(path)["tests"]) == {"t::old", "t::mine"}
    history.append(log, {"tests": {}})
    assert history.load(log) == [{"tests": {}}]


def test_a_broken_baseline_met_while_saving_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_text('{"schema": "pytest-jaxperf/2", "tests": {"a": ')  # cut short meanwhile
    with pytest.raises(baseline.BaselineError, match="is not valid JSON"):
        baseline.save_merged(path, _run("t::mine"))
    assert path.read_text() == '{"schema": "pytest-jaxperf/2", "tests": {"a": '
