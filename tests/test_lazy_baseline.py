"""A big baseline read lazily (storage/entries.py): its entries kept as text and read when a
test asks, the same records and saved bytes as a whole read, errors named per entry."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import lit
from test_baseline_end_to_end import SRC
from test_big_files import big_run

from pytest_jaxperf import model
from pytest_jaxperf.config import Tolerances
from pytest_jaxperf.model import RunRecord
from pytest_jaxperf.storage import entries, resave, store
from pytest_jaxperf.storage.store import BaselineError


@pytest.fixture(autouse=True)
def every_file_is_big(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entries, "LAZY_FROM_BYTES", 0)


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "baseline.json"
    store.save(path, big_run())
    return path


def _records(run: RunRecord) -> dict[str, Any]:
    return {k: model.recorded_test_to_json(run.tests[k]) for k in run.tests}


def test_a_lazy_read_gives_the_whole_read_s_records(saved: Path) -> None:
    lazy, whole = store.read(saved, lazy=True).run, store.read(saved).run
    assert lazy is not None and whole is not None
    assert isinstance(lazy.tests, entries.Entries)
    assert not isinstance(whole.tests, entries.Entries)
    assert lazy.environment == whole.environment
    assert list(lazy.tests) == list(whole.tests)
    assert _records(lazy) == _records(whole)
    for nodeid in whole.tests:
        assert lazy.environment_of(nodeid) == whole.environment_of(nodeid)


def test_entries_are_parsed_only_when_asked_for(
    saved: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed = _count_parses(monkeypatch)
    run = store.read(saved, lazy=True).run
    assert run is not None
    assert parsed == []  # the environment is read by json, the entries not at all
    nodeid = "tests/test_m0.py::test_04"
    run.tests.get(nodeid)
    run.environment_of(nodeid)  # the same entry again: kept from the last read
    assert len(parsed) == 1 and parsed[0].startswith(b"{\n")
    # Only the entry with an environment of its own is read to find the environments.
    assert run.tests.may_have_environment() == ["tests/test_m0.py::test_02"]  # type: ignore[attr-defined]


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The text of each entry parsed from now on (by orjson or json, or decoded by msgspec)."""
    parsed: list[bytes] = []
    real = store._fast_loads or json.loads

    def counted(raw: bytes) -> Any:
        parsed.append(raw)
        return real(raw)

    monkeypatch.setattr(store, "_fast_loads", counted)
    if store._typed is not None:
        read_test = store._typed.read_test

        def decoded(raw: bytes) -> Any:
            parsed.append(raw)
            return read_test(raw)

        monkeypatch.setattr(store, "_typed", SimpleNamespace(read_test=decoded))
    return parsed


def test_small_files_are_read_whole(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entries, "LAZY_FROM_BYTES", saved.stat().st_size + 1)
    run = store.read(saved, lazy=True).run
    assert run is not None and type(run.tests) is dict


@pytest.mark.parametrize(
    "write",
    [
        lambda run: json.dumps(model.run_to_json(run), indent=2),
        lambda run: json.dumps(model.run_to_json(run)),
        # The plugin's layout with one entry's functions indented as deep as a test's key.
        lambda run: store.dumps(run).replace('\n        "', '\n    "', 1),
    ],
    ids=["indent-2", "compact", "one-entry-indented-otherwise"],
)
def test_other_layouts_give_the_same_records(tmp_path: Path, write: Any) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(write(big_run()))
    run = store.read(path, lazy=True).run
    assert run is not None
    assert _records(run) == _records(big_run())


def _saved_both_ways(
    path: Path, run: RunRecord, how: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[bytes, bytes, list[bytes]]:
    """The bytes saved by merging `run` into the file at `path`, read lazily and whole; and
    the entries the lazy save parsed."""
    out, parsed = [], []
    for lazy in (True, False):
        copy = path.with_name(f"copy-{lazy}.json")
        copy.write_bytes(path.read_bytes())
        with monkeypatch.context() as m:
            if lazy:
                parsed = _count_parses(m)
            store.save_locked(copy, run, how(), store.read(copy, lazy=lazy))
        out.append(copy.read_bytes())
    return out[0], out[1], parsed


def _one_test_run(environment: dict[str, Any]) -> RunRecord:
    base = big_run()
    nodeid = "tests/test_m1.py::test_07"
    rec = dataclasses.replace(base.tests[nodeid], traces=base.tests[nodeid].traces + 1)
    return RunRecord(environment=environment, tests={nodeid: rec, "tests/new.py::t": rec})


@pytest.mark.parametrize("where", ["same environment", "another environment"])
def test_a_save_writes_the_same_bytes_as_after_a_whole_read(
    saved: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = dict(big_run().environment)
    if where == "another environment":
        env["jax"] = "0.11.0"
    run = _one_test_run(env)

    def merge_how() -> Any:
        return resave.Resave(resave.Measured.of(env, "gate", "wall"), Tolerances())

    lazy, whole, parsed = _saved_both_ways(saved, run, merge_how, monkeypatch)
    assert lazy == whole
    assert b'"tests/new.py::t"' in lazy and lazy != saved.read_bytes()
    # The entry with an environment of its own, and (a re-save keeps the file's environment
    # where most entries were measured) the stored entry it compares the run with: every
    # other entry is copied as it was read.
    assert len(parsed) == 2


def _broken(path: Path, nodeid: str, old: str, new: str) -> None:
    text = path.read_text()
    start = text.index(f'\n    "{nodeid}": ')
    end = min(i for i in (text.find('\n    "', start + 1), text.rindex("\n  }")) if i > 0)
    entry = text[start:end]
    assert old in entry
    path.write_text(text[:start] + entry.replace(old, new, 1) + text[end:])


def test_a_wrong_value_fails_only_the_test_that_reads_it(saved: Path) -> None:
    _broken(saved, "tests/test_m0.py::test_04", '"compile_s": ', '"compile_s": -')
    run = store.read(saved, lazy=True).run
    assert run is not None
    assert run.tests["tests/test_m0.py::test_06"].outcome == "passed"
    with pytest.raises(BaselineError) as info:
        run.tests.get("tests/test_m0.py::test_04")
    message = str(info.value)
    assert str(saved) in message and "tests['tests/test_m0.py::test_04']" in message
    assert "compile_s: expected seconds" in message and "--jaxperf-save" in message
    # A save that touches it writes nothing.
    before = saved.read_bytes()
    run2 = RunRecord(
        environment=dict(run.environment),
        tests={"tests/test_m0.py::test_04": big_run().tests["tests/test_m0.py::test_04"]},
    )
    how = resave.Resave(resave.Measured.of(run.environment, "gate", "wall"), Tolerances())
    with pytest.raises(BaselineError):
        store.save_locked(saved, run2, how, store.read(saved, lazy=True))
    assert saved.read_bytes() == before


def test_broken_json_in_an_entry_gets_json_s_message(saved: Path) -> None:
    _broken(saved, "tests/test_m0.py::test_04", '"traces": ', '"traces": :')
    run = store.read(saved, lazy=True).run
    assert run is not None
    with pytest.raises(BaselineError, match=r"is not valid JSON \(line \d+, column \d+"):
        run.tests.get("tests/test_m0.py::test_04")


def test_a_test_kept_twice_is_refused_at_once(saved: Path) -> None:
    text = saved.read_text()
    start = text.index('\n    "tests/test_m0.py::test_04": ')
    end = text.index('\n    "', start + 1)
    saved.write_text(text[:end] + text[start:end] + text[end:])
    with pytest.raises(BaselineError, match="holds the key 'tests/test_m0.py::test_04' twice"):
        store.read(saved, lazy=True)


def test_a_session_gates_and_saves_with_a_lazy_baseline(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_mod=SRC.format(body="f(jnp.ones(3))"))
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=2)
    baseline = jp.path / ".jaxperf" / "baseline.json"
    # Entries of other tests, as a big suite's baseline has them: copies of test_other's.
    run = store.load(baseline)
    assert run is not None
    for i in range(50):
        run.tests[f"other.py::test_{i:02}"] = run.tests["test_mod.py::test_other"]
    store.save(baseline, run)
    others = {
        k: v
        for k, v in json.loads(baseline.read_text())["tests"].items()
        if k.startswith("other.py")
    }

    # A retrace is gated as ever, the entries read one by one.
    jp.makepyfile(test_mod=SRC.format(body="f(jnp.ones(3)); f(jnp.ones(4))"))
    result = jp.runpytest("--jaxperf", "--jaxperf-compile-floor=1000")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*traces of f (defined at test_mod.py:5): baseline 1 -> now 2*"])

    # A broken entry of a test that does not run changes nothing; one that runs fails it,
    # naming the file and the entry.
    _broken(baseline, "other.py::test_07", '"compile_cpu_s": ', '"compile_cpu_s": -')
    _broken(baseline, "test_mod.py::test_other", '"compile_cpu_s": ', '"compile_cpu_s": -')
    result = jp.runpytest("--jaxperf", "--jaxperf-compile-floor=1000", "-k", "test_other")
    result.assert_outcomes(passed=0, failed=1)
    result.stdout.fnmatch_lines(
        lit(
            "pytest-jaxperf: *baseline.json is not a pytest-jaxperf baseline: "
            "tests['test_mod.py::test_other'].compile_cpu_s: expected CPU seconds or null, got "
            "-*; fix it, or "
            "delete it and re-create it with --jaxperf-save",
            "test_mod.py::test_other * failed",
        )
    )

    # A save that does not touch the broken entries keeps them, and every other entry, as
    # they were.
    broken = baseline.read_text()
    jp.makepyfile(test_mod=SRC.format(body="f(jnp.ones(3)); f(jnp.ones(4))"))
    jp.runpytest("--jaxperf", "--jaxperf-save", "-k", "test_f").assert_outcomes(passed=1)
    saved = baseline.read_text()
    assert saved != broken
    assert '"compile_cpu_s": -' in saved.split('"other.py::test_07"')[1].split("\n    }")[0]
    after = json.loads(saved)["tests"]
    assert after["test_mod.py::test_f"]["traces"] == 2
    assert {
        k: v for k, v in after.items() if k.startswith("other.py") and k != "other.py::test_07"
    } == {k: v for k, v in others.items() if k != "other.py::test_07"}
