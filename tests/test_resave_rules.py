"""What `--jaxperf-save` keeps of each entry, on hand-built records (storage/resave.py): values
a run did not measure keep their stored value and environment, timings within tolerance keep
theirs, and a save that could not keep a value honestly is refused in one line."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from _records import fn, rec

from pytest_jaxperf.config import Tolerances
from pytest_jaxperf.environment import REFERENCE_KEY, timing_differences
from pytest_jaxperf.model import (
    RUNTIME_OPTIONAL,
    BenchmarkEntry,
    Counts,
    RecordedTest,
    RunRecord,
    RuntimeStats,
)
from pytest_jaxperf.storage import resolve as resolving
from pytest_jaxperf.storage.resave import Measured, Resave, SaveRefused, Tally
from pytest_jaxperf.storage.store import dumps, save, save_locked

HERE: dict[str, Any] = {
    "jax": "0.10.2", "jaxlib": "0.10.2", "backend": "cpu", "device_kind": "cpu",
    "device_count": 1, "x64": False, "cpu": "AMD EPYC", "cpu_count": 2,
    "cpu_dispatch": "sync", "xdist_workers": 0, REFERENCE_KEY: 0.3,
}  # fmt: skip


def _runtime(median: float) -> RuntimeStats:
    samples = (median,) * 5
    return RuntimeStats(median, median, median, median, 0.0, median, median, 0.0, 5, 1, 0,
                        samples, cpu_median_s=median)  # fmt: skip


def _stored(median: float) -> RuntimeStats:
    """_runtime(median) as a baseline keeps it: what the runtime rule reads."""
    left_out: dict[str, Any] = dict.fromkeys(RUNTIME_OPTIONAL)
    return dataclasses.replace(_runtime(median), **left_out)


def _bench(median: float | None = 1e-3, instructions: int | None = None) -> BenchmarkEntry:
    return BenchmarkEntry(
        first_call_s=0.05, trace_s=0.01, lower_s=0.01, compile_s=0.03,
        compiled_on_first_call=True,
        runtime=None if median is None else _runtime(median), instructions=instructions,
    )  # fmt: skip


def _test(traces: int = 1, compile_s: float = 0.2, **benchmarks: BenchmarkEntry) -> RecordedTest:
    return rec(fn("f", "m.py:1", traces, compile_s=compile_s), benchmarks=dict(benchmarks))


def _save(
    old: RunRecord | None, new: RecordedTest, env: dict[str, Any], timing: str = "gate",
    clock: str = "cpu",
) -> tuple[RunRecord, Resave]:  # fmt: skip
    how = Resave(Measured.of(env, timing, clock), Tolerances())
    return how(old, RunRecord(environment=env, tests={"t::a": new})), how


def test_timings_within_tolerance_keep_the_stored_values() -> None:
    base, _ = _save(None, _test(compile_s=0.2, b=_bench(1e-3)), HERE)
    # Compile 0.25 s (within the 0.1 s floor), runtime +30% (within rtol 0.75), another
    # sample of the reference compile: nothing moved.
    again, how = _save(base, _test(compile_s=0.25, b=_bench(1.3e-3)), {**HERE, REFERENCE_KEY: 0.4})
    assert dumps(again) == dumps(base)
    assert (
        how.tally.line("b.json") == "jaxperf: baseline b.json: 0 entries updated, 1 kept, 0 added"
    )
    # A count that changed is rewritten; the timings that did not move stay as stored.
    moved, how = _save(base, _test(traces=2, compile_s=0.25, b=_bench(3e-3)), HERE)
    assert moved.tests["t::a"].traces == 2
    # (On the CPU clock the baseline keeps the CPU seconds the gate reads, no wall seconds.)
    assert (moved.tests["t::a"].compile_cpu_s, moved.tests["t::a"].compile_s) == (0.2, None)
    runtime = moved.tests["t::a"].benchmarks["b"].runtime  # type: ignore[union-attr]
    assert runtime is not None and runtime.median_s == 3e-3  # 3x: outside the tolerance
    assert (how.tally.updated, how.tally.kept, how.tally.added) == (1, 0, 0)


def test_a_save_without_a_reference_keeps_the_one_stored_for_this_machine() -> None:
    base, _ = _save(None, _test(compile_s=0.2), HERE)
    # --jaxperf-no-reference-compile: the run's environment has none.
    unmeasured = {k: v for k, v in HERE.items() if k != REFERENCE_KEY}
    moved, how = _save(base, _test(traces=2, compile_s=0.5), unmeasured)
    assert (moved.tests["t::a"].traces, moved.tests["t::a"].compile_cpu_s) == (2, 0.5)
    assert moved.environment == HERE and moved.tests["t::a"].environment is None
    assert (how.tally.updated, how.tally.kept) == (1, 0)
    # On another machine the stored reference is not this one's: none is kept.
    elsewhere = {**unmeasured, "cpu": "Intel(R) Xeon(R) Processor"}
    moved, _ = _save(base, _test(traces=2, compile_s=0.5), elsewhere)
    assert moved.environment == elsewhere


def test_a_save_under_xdist_keeps_the_serial_timings_and_environment() -> None:
    base, _ = _save(None, _test(compile_s=0.2, b=_bench(1e-3)), HERE)
    workers = {**HERE, "xdist_workers": 2}
    saved, _ = _save(base, _test(traces=2, compile_s=3.0, b=_bench(9e-3)), workers)
    assert saved.environment == HERE
    entry = saved.tests["t::a"]
    assert (entry.traces, entry.compile_cpu_s, entry.environment) == (2, 0.2, None)
    assert entry.benchmarks["b"].runtime == _stored(1e-3)  # type: ignore[union-attr]


def test_an_xdist_save_into_a_file_older_than_its_keys_does_not_relabel_serial_timings() -> None:
    # Saved before environments named xdist_workers or cpu_dispatch: the kept serial
    # timings must not be labelled with the xdist run's values, or every later serial gate
    # would skip them as measured beside other workers.
    older = {k: v for k, v in HERE.items() if k not in ("xdist_workers", "cpu_dispatch")}
    base, _ = _save(None, _test(compile_s=0.2, b=_bench(1e-3)), older)
    workers = {**HERE, "xdist_workers": 2, "cpu_dispatch": "async"}
    saved, _ = _save(base, _test(traces=2, compile_s=3.0, b=_bench(9e-3)), workers)
    entry = saved.tests["t::a"]
    assert (entry.traces, entry.compile_cpu_s) == (2, 0.2)
    assert entry.benchmarks["b"].runtime == _stored(1e-3)  # type: ignore[union-attr]
    where = saved.environment_of("t::a")
    assert "xdist_workers" not in where and "cpu_dispatch" not in where
    assert timing_differences(where, HERE) == []
    # A serial run that measured everything labels the entry as it ran.
    serial, _ = _save(saved, _test(traces=2, compile_s=3.0, b=_bench(9e-3)), HERE)
    assert serial.environment_of("t::a") == HERE


def test_a_benchmark_the_run_did_not_run_is_kept() -> None:
    base, _ = _save(None, _test(b=_bench(1e-3), c=_bench(2e-3)), HERE)
    saved, _ = _save(base, _test(traces=2, b=_bench(1e-3)), HERE)
    assert saved.tests["t::a"].benchmarks["c"] == base.tests["t::a"].benchmarks["c"]


def test_a_save_on_another_machine_that_measured_everything_moves_the_entry() -> None:
    base, _ = _save(None, _test(b=_bench(1e-3)), HERE)
    there = {**HERE, "cpu": "Intel"}
    saved, _ = _save(base, _test(compile_s=0.9, b=_bench(2e-3)), there)
    assert saved.environment == there and saved.tests["t::a"].compile_cpu_s == 0.9


def test_runtime_under_the_instructions_clock_into_a_native_entry_is_refused() -> None:
    base, _ = _save(None, _test(b=_bench(1e-3)), HERE)
    valgrind = {**HERE, "valgrind": "3.22", "instructions_isa": "x86-64"}
    with pytest.raises(SaveRefused) as info:
        _save(base, _test(b=_bench(None, instructions=1000)), valgrind, clock="instructions")
    message = str(info.value)
    assert "\n" not in message
    assert message == (
        "t::a: its runtime in the baseline was measured elsewhere (valgrind None -> 3.22) and "
        "this run did not measure it (under valgrind: --jaxperf-runtime-clock=instructions); "
        "save into another file (--jaxperf-baseline) or delete the entry first"
    )
    # The reverse: instructions stored, a native run saving seconds.
    inst, _ = _save(None, _test(b=_bench(None, instructions=1000)), valgrind, clock="instructions")
    with pytest.raises(SaveRefused, match="its instructions .*--jaxperf-runtime-clock=cpu"):
        _save(inst, _test(b=_bench(1e-3)), HERE)


def test_a_jit_disabled_run_keeps_the_entry_and_adds_no_new_test() -> None:
    """A run that measured no counts writes nothing: an entry of 0 traces labelled "not
    measured" would keep the next run's counts out of its verdict."""
    base, _ = _save(None, _test(b=_bench(1e-3)), HERE)
    why = {"traces": "jax_disable_jit is on: ...", "compiles": "jax_disable_jit is on: ..."}
    off = {**HERE, "not_measured": why}
    saved, how = _save(base, RecordedTest(), off)
    assert saved is base  # the file as read: the store writes nothing
    run = RunRecord(environment=off, tests={"t::a": RecordedTest(), "t::new": RecordedTest()})
    how = Resave(Measured.of(off, "gate", "cpu"), Tolerances())
    saved = how(base, run)
    assert saved is base and set(saved.tests) == {"t::a"}
    assert (how.tally.updated, how.tally.added, how.tally.unmeasured) == (0, 0, 2)
    assert how.tally.line("b.json") == (
        "jaxperf: --jaxperf-save wrote nothing for 2 test(s) to b.json: traces and compiles "
        "not measured (jax_disable_jit is on: ...)"
    )
    # Into no file: no entries.
    assert Resave(Measured.of(off, "gate", "cpu"), Tolerances())(None, run).tests == {}


def test_a_run_without_trace_counts_adds_no_test_and_says_why() -> None:
    """Traces the self-check could not vouch for (--jaxperf-allow-partial): as with jit off,
    no test is added and the stored entry keeps its counts."""
    base, _ = _save(None, _test(traces=1, b=_bench(1e-3)), HERE)
    partial = {**HERE, "not_measured": {"traces": "missing hook"}}
    run = RunRecord(
        environment=partial, tests={"t::a": _test(traces=0, b=_bench(9e-3)), "t::new": _test()}
    )
    how = Resave(Measured.of(partial, "gate", "cpu"), Tolerances())
    assert how(base, run) is base
    assert how.tally.why == "traces not measured (missing hook)"
    # Where something else was written, the tally says what was not.
    tally = Tally(updated=1, kept=3, unmeasured=2, why=how.tally.why)
    assert tally.line("b.json") == (
        "jaxperf: baseline b.json: 1 entries updated, 3 kept, 0 added; nothing written for "
        "2 test(s): traces not measured (missing hook)"
    )


def test_the_store_writes_nothing_for_a_merge_that_changes_nothing(tmp_path: Path) -> None:
    off = {**HERE, "not_measured": {"traces": "jax_disable_jit is on", "compiles": "x"}}
    run = RunRecord(environment=off, tests={"t::new": RecordedTest()})
    how = Resave(Measured.of(off, "gate", "cpu"), Tolerances())
    path = tmp_path / "baseline.json"
    save_locked(path, run, how=how)
    assert not path.exists()
    base, _ = _save(None, _test(), HERE)
    save(path, base)
    before = path.stat().st_mtime_ns, path.read_bytes()
    assert save_locked(path, run, how=how).tests.keys() == {"t::a"}
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before


# -- resolve -------------------------------------------------------------------------------


def _conflicted(ours: str, theirs: str, base: str | None = None) -> str:
    """What git leaves when the two texts conflict everywhere (one hunk)."""
    middle = f"||||||| base\n{base}" if base is not None else ""
    return f"<<<<<<< HEAD\n{ours}{middle}=======\n{theirs}>>>>>>> other\n"


def test_resolve_takes_the_chosen_side_for_a_test_changed_on_both() -> None:
    base = RunRecord(environment=HERE, tests={"t::a": _test(1), "t::b": _test(1)})
    ours = RunRecord(environment=HERE, tests={"t::a": _test(2), "t::b": _test(1)})
    theirs = RunRecord(environment=HERE, tests={"t::a": _test(3), "t::b": _test(5)})
    text = _conflicted(dumps(ours), dumps(theirs), dumps(base))
    done = resolving.resolve(text, "ours", "--keep ours")
    # t::a changed on both sides: ours; t::b changed on theirs only: theirs.
    assert (done.run.tests["t::a"].traces, done.run.tests["t::b"].traces) == (2, 5)
    assert done.conflicting == ("t::a",)
    # Without the common ancestor, every test that differs takes the chosen side.
    done = resolving.resolve(_conflicted(dumps(ours), dumps(theirs)), "theirs", "--keep theirs")
    assert (done.run.tests["t::a"].traces, done.run.tests["t::b"].traces) == (3, 5)
    assert done.line(Path("b.json")) == (
        "jaxperf: b.json: 2 test(s) changed on both sides, resolved to theirs (--keep theirs); "
        "`git add b.json` to conclude"
    )


def test_resolve_refuses_a_file_without_markers_or_with_a_broken_side() -> None:
    text = dumps(RunRecord(environment=HERE, tests={"t::a": _test()}))
    with pytest.raises(resolving.BaselineError, match="no merge-conflict markers"):
        resolving.resolve(text, "ours", "")
    with pytest.raises(resolving.BaselineError, match="their side is not JSON"):
        resolving.resolve(_conflicted(text, "{\n"), "ours", "")
    with pytest.raises(resolving.BaselineError, match="not closed"):
        resolving.resolve("<<<<<<< HEAD\n{}\n", "ours", "")


def test_a_save_leaves_the_runs_records_as_they_were() -> None:
    # The run's records are written to its report after the save.
    base, _ = _save(None, _test(compile_s=0.2, b=_bench(1e-3)), HERE)
    new = _test(traces=2, compile_s=0.25, b=_bench(1.1e-3))
    before = copy.deepcopy(new)
    _save(base, new, HERE)
    assert new == before


def test_sizes_the_self_check_left_out_keep_their_stored_values() -> None:
    stored = _test()
    stored.functions["f at m.py:1"].jaxpr_eqns = 7
    stored.recompute_totals()
    base, _ = _save(None, stored, HERE)
    partial = {**HERE, "not_measured": {"program size": "missing a hook"}}
    new = _test(traces=2)
    new.functions["f at m.py:1"].jaxpr_eqns = None
    saved, _ = _save(base, new, partial)
    entry = saved.tests["t::a"]
    assert (entry.functions["f at m.py:1"].traces, entry.functions["f at m.py:1"].jaxpr_eqns) == (
        2,
        7,
    )
    # The sizes kept were measured: the entry carries no "not measured" of its own.
    assert saved.environment_of("t::a") == HERE


def _phases(test: RecordedTest, wall: float, cpu: float) -> RecordedTest:
    """`test` with every phase of its function at `wall` wall and `cpu` CPU seconds."""
    out = copy.deepcopy(test)
    for f in out.functions.values():
        f.trace_s = f.lower_s = f.compile_s = wall
        f.trace_cpu_s = f.lower_cpu_s = f.compile_cpu_s = cpu
    out.recompute_totals()
    return out


def test_wall_seconds_moving_under_load_rewrite_nothing_the_gate_reads_cpu() -> None:
    # As on a busy machine: every wall phase x8 (a lower_s 0.015 -> 0.126 in the field), the
    # CPU seconds the gate reads unchanged; the eager helpers' and the first call's seconds
    # moved too (never gated).
    stored = _phases(_test(b=_bench(None)), wall=0.05, cpu=0.1)
    stored.eager = Counts(compiles=2, compile_s=0.1)
    base, _ = _save(None, stored, HERE)
    busy = _phases(_test(b=_bench(None)), wall=0.4, cpu=0.1)
    busy.eager = Counts(compiles=2, compile_s=0.7)
    busy.benchmarks["b"] = dataclasses.replace(busy.benchmarks["b"], first_call_s=0.9)
    again, how = _save(base, busy, HERE)
    assert dumps(again) == dumps(base)
    assert (how.tally.updated, how.tally.kept) == (0, 1)
    # The helpers compiling more is a change of what ran: their block is written anew.
    busy.eager = Counts(compiles=3, compile_s=0.7)
    moved, _ = _save(base, busy, HERE)
    assert moved.tests["t::a"].eager.compiles == 3
    assert moved.tests["t::a"].compile_cpu_s == base.tests["t::a"].compile_cpu_s


@pytest.mark.parametrize(
    ("cpu_now", "written"),
    [(0.55, True), (0.65, False), (1.9, False), (2.2, True)],
)
def test_a_compile_time_is_kept_only_inside_its_keep_band(cpu_now: float, written: bool) -> None:
    # Stored 1.0 CPU s over three phases; the band keeps 0.6x-2x (suite data: unchanged code
    # read 0.61x-1.83x): 1.0 -> 0.55 is an improvement the file records, so a later 2x of the
    # new value fails; 0.65 is noise and rewrites nothing.
    base, _ = _save(None, _phases(_test(), wall=1 / 3, cpu=1 / 3), HERE)
    again, how = _save(base, _phases(_test(), wall=cpu_now / 3, cpu=cpu_now / 3), HERE)
    assert (how.tally.updated == 1) is written
    stored = again.tests["t::a"].total_cpu_s
    assert stored == pytest.approx(cpu_now if written else 1.0, rel=1e-5)


def test_a_save_takes_a_fresh_reference_by_the_sessions_agreement_rule() -> None:
    # The stored reference stands only where a fresh one agrees with it (10%, or the samples'
    # spread): a fresh 0.48 s against a stored 0.25 s is written with the entries it measured.
    stored = {**HERE, REFERENCE_KEY: 0.25}
    base, _ = _save(None, _test(traces=1), stored)
    moved, _ = _save(base, _test(traces=2), {**HERE, REFERENCE_KEY: 0.48})
    assert moved.environment[REFERENCE_KEY] == 0.48
    agreeing, _ = _save(base, _test(traces=2), {**HERE, REFERENCE_KEY: 0.26})
    assert agreeing.environment[REFERENCE_KEY] == 0.25


def test_the_op_by_op_median_rides_with_the_gated_runtime() -> None:
    # Under load the eager (op-by-op) median moved 30x where the gated runtime stayed inside
    # the gate's judgement: the entry stands as stored.
    stored = dataclasses.replace(_bench(1e-3), eager_median_s=0.004, break_even_calls=80.0)
    base, _ = _save(None, _test(b=stored), HERE)
    busy = dataclasses.replace(_bench(1.2e-3), eager_median_s=0.12, break_even_calls=300.0)
    again, how = _save(base, _test(b=busy), HERE)
    assert dumps(again) == dumps(base) and how.tally.updated == 0


def _counted(**phases: int) -> RecordedTest:
    """A test whose one function's compile phases were counted by the compile clock."""
    test = _test()
    (f,) = test.functions.values()
    f.instructions = dict(phases)
    return test


def test_a_save_keeps_compile_counts_within_the_tolerance() -> None:
    # The compile clock's counts move by tenths of a percent run to run: within
    # instructions_rtol (2%) of the stored ones they stand; a 5.6% trace growth is written.
    base, _ = _save(None, _counted(trace=9_000_000, lower=13_000_000, compile=225_000_000), HERE)
    close = _counted(trace=9_050_000, lower=12_990_000, compile=226_000_000)
    again, how = _save(base, close, HERE)
    assert dumps(again) == dumps(base) and how.tally.updated == 0
    grown, how = _save(base, _counted(trace=9_500_000, lower=13_000_000, compile=225_000_000), HERE)
    (f,) = grown.tests["t::a"].functions.values()
    assert f.instructions["trace"] == 9_500_000 and how.tally.updated == 1
