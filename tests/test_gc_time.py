"""Compile seconds less the garbage collector's: collections inside a trace, lowering or
backend compile are not charged to it (fake clocks, collector events called by hand)."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_jaxperf.measure import _jaxhooks as hooks
from pytest_jaxperf.measure.gctime import GcClock, Totals, without_gc
from pytest_jaxperf.measure.recorder import Recorder, Scope


class FakeClocks:
    """A wall clock, a per-thread CPU clock and a process CPU clock, moved by hand; and the
    thread the code believes it runs on."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu: dict[int, float] = {1: 0.0, 2: 0.0}
        self.thread = 1

    def thread_cpu(self) -> float:
        return self.cpu[self.thread]

    def process_cpu(self) -> float:
        return sum(self.cpu.values())

    def work(self, seconds: float, thread: int | None = None) -> None:
        """`seconds` of CPU work on a thread (the current one by default), as long in wall
        time."""
        self.wall += seconds
        self.cpu[self.thread if thread is None else thread] += seconds


@pytest.fixture
def clocks() -> FakeClocks:
    return FakeClocks()


def _gc_clock(clocks: FakeClocks) -> GcClock:
    return GcClock(wall=lambda: clocks.wall, cpu=clocks.thread_cpu, thread=lambda: clocks.thread)


def _collect(gcc: GcClock, clocks: FakeClocks, seconds: float, thread: int = 1) -> None:
    """One collection of `seconds` on `thread`, as CPython reports it to gc.callbacks."""
    was, clocks.thread = clocks.thread, thread
    gcc.callback("start", {"generation": 2, "collected": 0, "uncollectable": 0})
    clocks.work(seconds)
    gcc.callback("stop", {"generation": 2, "collected": 1000, "uncollectable": 0})
    clocks.thread = was


def test_collections_are_summed_per_thread_and_for_the_process(clocks: FakeClocks) -> None:
    gcc = _gc_clock(clocks)
    gcc.watching = 1  # a phase is open somewhere
    _collect(gcc, clocks, 0.25, thread=1)
    _collect(gcc, clocks, 0.5, thread=2)
    _collect(gcc, clocks, 0.125, thread=1)
    assert gcc.totals() == Totals(wall=0.375, cpu=0.375, all_cpu=0.875)
    clocks.thread = 2
    assert gcc.totals() == Totals(wall=0.5, cpu=0.5, all_cpu=0.875)
    assert gcc.collections == 3


def test_collections_while_no_phase_is_open_are_not_timed(clocks: FakeClocks) -> None:
    gcc = _gc_clock(clocks)
    reads = []
    gcc._wall = lambda: reads.append("wall") or clocks.wall  # type: ignore[func-returns-value]
    _collect(gcc, clocks, 0.5)
    assert (gcc.totals(), gcc.collections, reads) == (Totals(), 0, [])


def test_a_stop_without_its_start_adds_nothing(clocks: FakeClocks) -> None:
    gcc = _gc_clock(clocks)
    clocks.work(1.0)
    gcc.callback("stop", {})
    assert gcc.totals() == Totals()


def test_without_gc_subtracts_this_threads_wall_and_every_threads_cpu() -> None:
    spent = Totals(wall=0.2, cpu=0.2, all_cpu=0.5)
    assert without_gc(1.0, 1.5, spent) == (pytest.approx(0.8), pytest.approx(1.0))
    assert without_gc(1.0, None, spent) == (pytest.approx(0.8), None)
    # Never negative (clocks of different resolution).
    assert without_gc(0.1, 0.1, spent) == (0.0, 0.0)


def test_install_registers_one_callback_and_uninstall_removes_it() -> None:
    gcc = GcClock()
    gcc.watching = 1
    gcc.install()
    gcc.install()
    try:
        assert sum(cb == gcc.callback for cb in gc.callbacks) == 1
        gc.collect()
        assert gcc.collections >= 1
    finally:
        gcc.uninstall()
    assert gcc.callback not in gc.callbacks


# -- the recorder's phases ------------------------------------------------------------------


@pytest.fixture
def recorder(clocks: FakeClocks) -> Recorder:
    """A recorder whose phase listeners are called by hand, on the fake clocks (never
    installed: it registers nothing with JAX or the collector)."""
    rec = Recorder()
    rec.gc = _gc_clock(clocks)
    rec._cpu_clock = clocks.process_cpu
    return rec


@contextlib.contextmanager
def _scope(rec: Recorder, tmp_path: Path) -> Iterator[Scope]:
    rec.active = scope = Scope(tmp_path)
    try:
        yield scope
    finally:
        rec.active = None


def _phase(
    rec: Recorder, clocks: FakeClocks, event: str, body: list[tuple[str, float, int]]
) -> None:
    """One phase (its start, then `body`: ("work" | "gc", seconds, thread) steps, then its
    duration event), as JAX announces it."""
    start = clocks.wall
    rec._on_phase_start(event, start)
    for what, seconds, thread in body:
        if what == "gc":
            _collect(rec.gc, clocks, seconds, thread)
        else:
            clocks.work(seconds, thread)
    rec._on_duration(event, clocks.wall - start)


def test_a_collection_inside_a_lowering_is_not_charged_to_it(
    recorder: Recorder, clocks: FakeClocks, tmp_path: Path
) -> None:
    with _scope(recorder, tmp_path) as scope:
        _phase(recorder, clocks, hooks.LOWER_EVENT,
               [("work", 0.01, 1), ("gc", 0.75, 1), ("work", 0.01, 1)])  # fmt: skip
    # No jitted function on the stack: the lowering is charged to the eager total.
    assert scope.eager.lowerings == 1
    assert scope.eager.lower_s == pytest.approx(0.02)
    assert scope.eager.lower_cpu_s == pytest.approx(0.02)


def test_another_threads_collection_leaves_wall_but_not_cpu(
    recorder: Recorder, clocks: FakeClocks, tmp_path: Path
) -> None:
    with _scope(recorder, tmp_path) as scope:
        # Thread 2 collects while thread 1 traces: the process CPU clock counted it, the
        # trace's own wall time did not wait for it (here: it ran beside it).
        start = clocks.wall
        recorder._on_phase_start(hooks.TRACE_EVENT, start)
        clocks.work(0.1)
        clocks.cpu[2] += 0.3
        clocks.thread = 2
        recorder.gc.callback("start", {})
        clocks.cpu[2] += 0.4
        recorder.gc.callback("stop", {})
        clocks.thread = 1
        recorder._on_duration(hooks.TRACE_EVENT, clocks.wall - start)
    assert scope.eager.trace_s == pytest.approx(0.1)
    # 0.1 own + 0.3 other work of thread 2 (still counted) + 0.4 collection (subtracted).
    assert scope.eager.trace_cpu_s == pytest.approx(0.4)


def test_nested_phases_each_lose_only_their_own_collections(
    recorder: Recorder, clocks: FakeClocks, tmp_path: Path
) -> None:
    with _scope(recorder, tmp_path) as scope:
        outer = clocks.wall
        recorder._on_phase_start(hooks.TRACE_EVENT, outer)
        _collect(recorder.gc, clocks, 0.5)
        _phase(recorder, clocks, hooks.TRACE_EVENT, [("work", 0.1, 1), ("gc", 0.25, 1)])
        clocks.work(0.2)
        recorder._on_duration(hooks.TRACE_EVENT, clocks.wall - outer)
    # Inner 0.1; outer 0.5 + 0.1 + 0.25 + 0.2 less both collections = 0.3.
    assert scope.eager.trace_s == pytest.approx(0.1 + 0.3)
    assert scope.eager.trace_cpu_s == pytest.approx(0.1 + 0.3)
    # Both phases ended: collections are no longer timed.
    assert recorder.gc.watching == 0


def test_without_collections_the_phase_keeps_its_seconds(
    recorder: Recorder, clocks: FakeClocks, tmp_path: Path
) -> None:
    with _scope(recorder, tmp_path) as scope:
        _phase(recorder, clocks, hooks.COMPILE_EVENT, [("work", 0.6, 1), ("work", 0.2, 2)])
    assert scope.eager.compile_s == pytest.approx(0.8)
    assert scope.eager.compile_cpu_s == pytest.approx(0.8)


def test_the_recorders_own_listener_work_is_not_charged_to_the_phases_around_it(
    recorder: Recorder, clocks: FakeClocks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Explaining a nested function's retrace (0.15 s on these fake clocks), and
    # sizing the program of a lowering that ended inside the trace (0.05 s, a collection of
    # 0.02 s inside it), ran inside the outer trace: its seconds are the user's 0.3 alone.
    done = Recorder._phase_done

    def explain(call: object) -> None:
        clocks.work(0.15)

    def size(self: Recorder, *args: object) -> None:
        clocks.work(0.03)
        _collect(self.gc, clocks, 0.02)
        done(self, *args)

    monkeypatch.setattr(recorder, "_trace", explain)
    monkeypatch.setattr(Recorder, "_phase_done", size)
    with _scope(recorder, tmp_path) as scope:
        outer = clocks.wall
        recorder._on_phase_start(hooks.TRACE_EVENT, outer)
        clocks.work(0.1)
        recorder._on_trace(object())  # type: ignore[arg-type]
        _phase(recorder, clocks, hooks.LOWER_EVENT, [("work", 0.1, 1)])
        clocks.work(0.1)
        recorder._on_duration(hooks.TRACE_EVENT, clocks.wall - outer)
    # The lowering keeps its 0.1 s: its sizing came after its end.
    assert scope.eager.lower_s == pytest.approx(0.1)
    assert scope.eager.trace_s == pytest.approx(0.1 + 0.1 + 0.1)
    assert scope.eager.trace_cpu_s == pytest.approx(0.3)
    assert recorder.gc.watching == 0
    # Outside any phase the listener's work is not even timed.
    recorder._on_trace(object())  # type: ignore[arg-type]
    # Taken out: 0.15 + 0.03 of the listeners' own and the collection's 0.02, once each.
    assert dataclasses.astuple(recorder.gc.totals()) == pytest.approx((0.2, 0.2, 0.2))


def test_the_recorder_listens_to_the_collector_once_installed() -> None:
    from pytest_jaxperf.measure.recorder import RECORDER

    RECORDER.install()
    assert RECORDER.gc.callback in gc.callbacks


# JAX's own trace durations of `collects`, while a test listens (registered once per process
# and dormant otherwise: jax 0.6 has no public way to unregister a listener).
_TRACE_DURATIONS: list[float] | None = None
_LISTENING = False


def _on_duration(event: str, duration: float, **kwargs: object) -> None:
    wanted = event == hooks.TRACE_EVENT and kwargs.get("fun_name") == "collects"
    if _TRACE_DURATIONS is not None and wanted:
        _TRACE_DURATIONS.append(duration)


@pytest.mark.jax_internals
def test_a_collection_inside_a_real_trace_is_taken_out(tmp_path: Path) -> None:
    import jax
    import jax.numpy as jnp

    from pytest_jaxperf.measure.recorder import RECORDER

    global _TRACE_DURATIONS, _LISTENING
    if not _LISTENING:
        jax.monitoring.register_event_duration_secs_listener(_on_duration)
        _LISTENING = True

    def collects(x: jax.Array) -> jax.Array:
        gc.collect()  # what an allocation inside a trace may set off
        return x * 2

    _TRACE_DURATIONS = durations = []
    try:
        RECORDER.install()
        before = RECORDER.gc.collections
        with RECORDER.scope(tmp_path) as scope:
            jax.jit(collects)(jnp.ones(3)).block_until_ready()
    finally:
        _TRACE_DURATIONS = None
    (fn,) = [f for f in scope.functions.values() if f.name.endswith("collects")]
    assert RECORDER.gc.collections > before
    # JAX's own duration includes the collection; the recorded one does not.
    assert fn.traces == 1 and fn.trace_s < durations[0]



_TOTALS_UNDER_COLLECTIONS = """
import gc
from pytest_jaxperf.measure.gctime import GcClock
gcc = GcClock()
gcc.watching = 1
gcc.install()
gc.set_threshold(1, 1, 1)  # a collection at nearly every allocation, some inside totals()
for _ in range(20_000):
    gcc.totals()
print(gcc.collections > 0)
"""


@pytest.mark.e2e
def test_a_collection_inside_totals_does_not_deadlock() -> None:
    # A collection starts at any allocation, also inside `totals()`, and its callback runs
    # on that thread: with a lock held across the read, the thread waited on itself for
    # ever (an equinox suite under --jaxperf hung so). In a fresh interpreter: whether a
    # collection falls inside depends on the heap, which a fresh one makes the same each run.
    done = subprocess.run(
        [sys.executable, "-c", _TOTALS_UNDER_COLLECTIONS],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout.strip()) == (0, "True"), done.stderr
