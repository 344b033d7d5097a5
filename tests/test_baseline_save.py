"""The end of --jaxperf-save (baseline_save.py): a deferred reference check is made only where
the save writes something this run measured, and its fields go where the run's go."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _records import fn, rec

from pytest_jaxperf import baseline_save
from pytest_jaxperf.environment import REFERENCE_KEY, SAMPLES_KEY, SPREAD_KEY
from pytest_jaxperf.model import RunRecord
from pytest_jaxperf.storage import store
from pytest_jaxperf.storage.resave import Tally

STORED = {REFERENCE_KEY: 1.0, SPREAD_KEY: 0.01, SAMPLES_KEY: 5}


class FakeResave:
    """Resaves by taking the run whole; its tally says it added `added` entries."""

    def __init__(self, added: int) -> None:
        self.tally = Tally(added=added)
        self.calls: list[tuple[RunRecord | None, RunRecord]] = []

    def __call__(self, old: RunRecord | None, new: RunRecord) -> RunRecord:
        self.calls.append((old, new))
        return RunRecord(environment=dict(new.environment), tests=dict(new.tests))


def _run() -> RunRecord:
    return RunRecord(environment={"cpu": "x"}, tests={"t::a": rec(fn("f", "m.py:1"))})


def _prepare(added: int, measured: dict[str, Any] | None, assumed: Any = STORED) -> tuple:
    run, how, asked = _run(), FakeResave(added), []

    def measure() -> dict[str, Any]:
        asked.append(True)
        assert measured is not None, "measured where nothing needed it"
        return measured

    prepared = baseline_save.with_reference(run, None, how, assumed, measure)  # type: ignore[arg-type]
    return run, how, asked, prepared


def test_no_deferred_check_saves_the_run_as_it_is() -> None:
    run, how, asked, prepared = _prepare(1, None, assumed=None)
    assert prepared == baseline_save.Prepared(run) and not asked and not how.calls


def test_a_save_that_writes_nothing_measured_keeps_the_stored_reference_unchecked() -> None:
    run, how, asked, prepared = _prepare(0, None)
    assert not asked and len(how.calls) == 1
    assert prepared.run.environment == {"cpu": "x", **STORED}
    assert prepared.resaved is not None and prepared.resaved.environment == prepared.run.environment
    assert run.environment == {"cpu": "x"}  # the run file carries no value it did not check


def test_a_check_that_agrees_keeps_the_early_resave() -> None:
    run, how, asked, prepared = _prepare(1, dict(STORED))
    assert asked == [True] and len(how.calls) == 1
    assert run.environment == {"cpu": "x", **STORED}  # the run file's environment too
    assert prepared.resaved is not None and prepared.run.environment == run.environment


def test_a_check_that_moved_saves_the_fresh_value_again_under_the_lock(tmp_path: Path) -> None:
    moved = {**STORED, REFERENCE_KEY: 2.0}
    run, how, asked, prepared = _prepare(1, moved)
    assert prepared == baseline_save.Prepared(run) and run.environment == {"cpu": "x", **moved}
    path = tmp_path / "baseline.json"
    saved = baseline_save.save(path, prepared, how, store.read(path))  # type: ignore[arg-type]
    assert len(how.calls) == 2 and saved.environment[REFERENCE_KEY] == 2.0
    assert store.load(path) is not None


def test_an_early_resave_is_written_where_the_file_did_not_change(tmp_path: Path) -> None:
    run, how, _, prepared = _prepare(0, None)
    path = tmp_path / "baseline.json"
    saved = baseline_save.save(path, prepared, how, store.read(path))  # type: ignore[arg-type]
    assert saved is prepared.resaved and len(how.calls) == 1


def test_the_summary_line_names_a_changed_environment_only_where_entries_were_written() -> None:
    before = RunRecord(environment={"x64": False})
    after = RunRecord(environment={"x64": True})
    wrote = FakeResave(1)
    line = baseline_save.summary_line(wrote, "b.json", before, after)  # type: ignore[arg-type]
    assert line.startswith("jaxperf: baseline b.json: 0 entries updated, 0 kept, 1 added; ")
    assert "the baseline's environment changed (x64 False -> True)" in line
    kept = FakeResave(0)
    assert "changed" not in baseline_save.summary_line(kept, "b.json", before, after)  # type: ignore[arg-type]
    assert "changed" not in baseline_save.summary_line(wrote, "b.json", None, after)  # type: ignore[arg-type]
