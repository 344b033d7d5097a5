"""Runs that save into one baseline or append to one history at the same time keep each
other's work: the merge re-reads the file under its lock (unit and end to end)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _jaxperf_data import ENV
from _records import fn, rec, resaved
from conftest import read_json
from filelock import FileLock

from pytest_jaxperf.model import RunRecord
from pytest_jaxperf.storage import history, outputs, store


def _run(*nodeids: str) -> RunRecord:
    return RunRecord(environment=ENV, tests={n: rec(fn("f", "m.py:1")) for n in nodeids})


def test_save_merged_keeps_entries_saved_since_the_run_started(tmp_path: Path) -> None:
    path = tmp_path / ".jaxperf" / "baseline.json"
    store.save(path, _run("t::old"))
    at_start = store.read(path)  # what this run read at start-up
    store.save_locked(path, _run("t::other"), resaved)  # another run saved meanwhile
    merged = store.save_locked(path, _run("t::mine"), resaved, at_start)
    assert set(merged.tests) == {"t::old", "t::other", "t::mine"}
    assert store.load(path) == merged
    assert outputs.lock_path(path) == tmp_path / ".jaxperf" / "baseline.json.lock"
    assert outputs.lock_path(path).exists()


def test_save_merged_reads_an_unchanged_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "baseline.json"
    store.save(path, _run("t::old"))
    at_start = store.read(path)
    assert at_start.stamp == store.stamp_of(path)

    def no_second_read(*args: object, **kwargs: object) -> None:
        raise AssertionError("read again")

    monkeypatch.setattr(store, "load", no_second_read)
    merged = store.save_locked(path, _run("t::mine"), resaved, at_start)
    assert set(merged.tests) == {"t::old", "t::mine"}
    monkeypatch.undo()
    assert store.load(path) == merged
    # The save replaced the file: the start-up read no longer stands for it.
    assert store.stamp_of(path) != at_start.stamp
    # No file at the start and none now: nothing to read either.
    new = tmp_path / "new.json"
    assert store.read(new) == store.Loaded(None, None)
    monkeypatch.setattr(store, "load", no_second_read)
    nothing = store.Loaded(None, None)
    assert set(store.save_locked(new, _run("t::mine"), resaved, nothing).tests) == {"t::mine"}


def test_save_merged_waits_for_the_lock_and_says_so_when_it_gives_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, log = tmp_path / "baseline.json", tmp_path / "h.jsonl"
    store.save(path, _run("t::old"))
    before = path.read_text()
    monkeypatch.setattr(outputs, "LOCK_TIMEOUT_S", 0.05)
    # Other runs holding the locks.
    with FileLock(outputs.lock_path(path)), FileLock(outputs.lock_path(log)):
        with pytest.raises(outputs.OutputError) as info:
            store.save_locked(path, _run("t::mine"), resaved)
        with pytest.raises(outputs.OutputError, match="h.jsonl.lock after 0.05 s"):
            history.append(log, {"tests": {}})
    assert str(info.value) == (
        f"{path}: another run still held its lock baseline.json.lock after 0.05 s; "
        "let it finish (or stop it) and run again"
    )
    assert path.read_text() == before
    assert not log.exists()
    store.save_locked(path, _run("t::mine"), resaved)  # free again
    assert set(read_json(path)["tests"]) == {"t::old", "t::mine"}
    history.append(log, {"tests": {}})
    assert history.load(log) == [{"tests": {}}]


def test_a_broken_baseline_met_while_saving_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_text('{"schema": "pytest-jaxperf/2", "tests": {"a": ')  # cut short meanwhile
    with pytest.raises(store.BaselineError, match="is not valid JSON"):
        store.save_locked(path, _run("t::mine"), resaved)
    assert path.read_text() == '{"schema": "pytest-jaxperf/2", "tests": {"a": '


# -- end to end: two pytest processes saving at once ---------------------------------------

# Run A stops inside its baseline write (under the lock, in the fixed plugin) until the test
# creates the file "go"; run B starts while A waits there, so B's start-up read of the
# baseline comes before A's write whatever the timing.
CONFTEST = """
import os
import time
from pathlib import Path

import pytest_jaxperf.storage.store as store

SIGNALS = Path(os.environ["JAXPERF_TEST_SIGNALS"])
_save = store.save


def _held_save(path, report):
    if path.name == "baseline.json":
        (SIGNALS / "a-saving").touch()
        deadline = time.monotonic() + 300
        while not (SIGNALS / "go").exists():
            if time.monotonic() > deadline:
                raise RuntimeError("run A was never let go")
            time.sleep(0.01)
    _save(path, report)


if os.environ.get("JAXPERF_TEST_ROLE") == "A":
    store.save = _held_save
"""

SUITE = """
import os
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

@jax.jit
def f(x):
    return x + 1

@pytest.mark.jaxperf
def test_a():
    f(jnp.ones(3))

@pytest.mark.jaxperf
def test_b():
    f(jnp.ones(3)); f(jnp.ones(4))
    if os.environ.get("JAXPERF_TEST_ROLE") == "B":
        (Path(os.environ["JAXPERF_TEST_SIGNALS"]) / "b-ran").touch()
"""

WAIT_S = 300.0  # a deadline against a hang, not a timing the test depends on


def _wait_for(path: Path, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while not path.exists():
        if proc.poll() is not None:
            pytest.fail(f"exited ({proc.returncode}) before {path.name}:\n{log.read_text()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no {path.name} after {WAIT_S} s:\n{log.read_text()}")
        time.sleep(0.01)


def test_two_runs_saving_different_subsets_at_once_keep_both(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    jp.makeconftest(CONFTEST)
    jp.makepyfile(test_suite=SUITE)
    signals = jp.path / "signals"
    signals.mkdir()
    monkeypatch.setenv("JAXPERF_TEST_SIGNALS", str(signals))
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--jaxperf", "--jaxperf-save",
            "--jaxperf-history=h.jsonl"]  # fmt: skip
    procs, logs = {}, {}
    for role in ("A", "B"):
        monkeypatch.setenv("JAXPERF_TEST_ROLE", role)
        logs[role] = jp.path / f"{role}.log"
        with logs[role].open("wb") as out:
            procs[role] = jp.popen(
                [*args, "-k", f"test_{role.lower()}"],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=jp.path,
            )
        # A is inside its save before B starts; B has read the baseline and run its test
        # before A is let go.
        _wait_for(signals / ("a-saving" if role == "A" else "b-ran"), procs[role], logs[role])
    (signals / "go").touch()
    for role, proc in procs.items():
        assert proc.wait(timeout=WAIT_S) == 0, logs[role].read_text()
    saved = read_json(jp.path / ".jaxperf" / "baseline.json")["tests"]
    assert {k: v["traces"] for k, v in saved.items()} == {
        "test_suite.py::test_a": 1,
        "test_suite.py::test_b": 2,
    }
    lines = (jp.path / "h.jsonl").read_text().splitlines()
    assert sorted(next(iter(json.loads(line)["tests"])) for line in lines) == sorted(saved)
    assert sorted(p.name for p in (jp.path / ".jaxperf").iterdir()) == [
        "baseline.json",
        "baseline.json.lock",
    ]
