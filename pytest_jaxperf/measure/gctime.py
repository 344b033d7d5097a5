"""Time spent in Python's garbage collector, and in the plugin's own listeners, per
thread, so that a compile phase is not charged for a collection that happened to run inside
it, nor for the recorder's work on the traces and compiles nested in it.

A trace or a lowering allocates heavily; CPython then runs a collection on whatever thread
allocated, of the whole heap when it is a full one, and on a large heap (a test suite that
keeps arrays, fixtures and compiled programs alive) that takes up to a second. The phase's
wall and CPU seconds included it, and a compile-time gate failed unchanged code (issue 31:
`lower 0.766 s` for a program that lowers in a few ms).

Accounting rather than `gc.disable()` around the phases: the collector still runs when
CPython decides, so a 10 GB trace's garbage is still freed as it goes (a collector kept
out of a long trace lets its cycles pile up until the trace ends), the user's finalizers
run as they would without the plugin, and a phase that raises leaves nothing switched
off. The cost is one callback at each collection's start and stop: an attribute read while
no phase is open (`watching`), four clock reads while one is.

Per thread: a collection blocks the thread it runs on, whose phase's wall seconds lose it;
the process CPU clock counts every thread's collections, so a phase's CPU seconds lose
those of all threads (`Totals.all_cpu`).

The recorder's listeners run inside the phase whose events they handle, and inside every
phase enclosing it (a jitted function's trace holds the traces of the jitted functions it
calls): in diffrax's 16 `test_subsaveat` tests, 2,433 listener calls inside open phases
took 0.36 s that was charged to the user's trace and compile seconds. `own_start` and
`own_stop` around a listener add its seconds, less the collections inside them, to the same
totals.

No lock: CPython runs one collection at a time, its callbacks included, so the updates
never race each other; and a collection starts at any allocation, also inside a reader
holding a lock, whose callback would then wait on its own thread for ever (it did, in an
equinox suite). A reader may see one collection's update half done, and a listener's
`own_stop` may race a collection on another thread: a few microseconds either way.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Clock = Callable[[], float]


@dataclass(frozen=True)
class Totals:
    """Collector seconds so far: this thread's wall and CPU seconds, and the CPU seconds of
    every thread's collections."""

    wall: float = 0.0
    cpu: float = 0.0
    all_cpu: float = 0.0

    def since(self, start: Totals) -> Totals:
        return Totals(self.wall - start.wall, self.cpu - start.cpu, self.all_cpu - start.all_cpu)


class GcClock:
    """Accumulates each thread's collector seconds from `gc.callbacks` ("start"/"stop").

    The clocks are injectable: `wall` is the clock JAX's durations are read on
    (perf_counter), `cpu` a per-thread CPU clock (a collection runs on one thread)."""

    def __init__(
        self,
        wall: Clock = time.perf_counter,
        cpu: Clock = time.thread_time,
        thread: Callable[[], int] = threading.get_ident,
    ) -> None:
        self._wall, self._cpu, self._thread = wall, cpu, thread
        # Per thread: (wall, cpu) at the start of the collection now running on it.
        self._open: dict[int, tuple[float, float]] = {}
        self._wall_s: dict[int, float] = {}
        self._cpu_s: dict[int, float] = {}
        self._all_cpu_s = 0.0
        self.collections = 0
        # Phases open now, on any thread: collections are timed only while there is one
        # (a phase that never ends, its trace having raised, only keeps them timed).
        self.watching = 0

    def callback(self, phase: str, info: dict[str, Any]) -> None:
        """The `gc.callbacks` entry: never raises (it runs inside CPython's collector)."""
        try:
            if phase == "start":
                if self.watching > 0:
                    self._open[self._thread()] = (self._wall(), self._cpu())
                return
            if not self._open:
                return
            tid = self._thread()
            started = self._open.pop(tid, None)
            if phase != "stop" or started is None:
                return
            wall = max(0.0, self._wall() - started[0])
            cpu = max(0.0, self._cpu() - started[1])
            self._wall_s[tid] = self._wall_s.get(tid, 0.0) + wall
            self._cpu_s[tid] = self._cpu_s.get(tid, 0.0) + cpu
            self._all_cpu_s += cpu
            self.collections += 1
        except Exception:  # pragma: no cover - a clock that fails: nothing is subtracted
            pass

    def own_start(self) -> tuple[int, float, float, float, float] | None:
        """The clocks and this thread's collector totals at the start of a listener's work,
        where a phase is open (else None: there is nothing to take its seconds out of).
        Plain floats: this runs on every trace."""
        if self.watching <= 0:
            return None
        tid = self._thread()
        return (tid, self._wall(), self._cpu(),
                self._wall_s.get(tid, 0.0), self._cpu_s.get(tid, 0.0))  # fmt: skip

    def own_stop(self, started: tuple[int, float, float, float, float] | None) -> None:
        """Adds the listener's seconds since `own_start` (less the collections inside them,
        already counted) to the thread's totals."""
        if started is None:
            return
        try:
            tid, wall0, cpu0, gc_wall0, gc_cpu0 = started
            gc_wall, gc_cpu = self._wall_s.get(tid, 0.0), self._cpu_s.get(tid, 0.0)
            wall = self._wall() - wall0 - (gc_wall - gc_wall0)
            cpu = self._cpu() - cpu0 - (gc_cpu - gc_cpu0)
            if wall > 0:
                self._wall_s[tid] = gc_wall + wall
            if cpu > 0:
                self._cpu_s[tid] = gc_cpu + cpu
                self._all_cpu_s += cpu
        except Exception:  # pragma: no cover - a clock that fails: nothing is subtracted
            pass

    def totals(self) -> Totals:
        """The calling thread's totals so far (read at a phase's start and end)."""
        tid = self._thread()
        return Totals(self._wall_s.get(tid, 0.0), self._cpu_s.get(tid, 0.0), self._all_cpu_s)

    def install(self) -> None:
        if self.callback not in gc.callbacks:
            gc.callbacks.append(self.callback)

    def uninstall(self) -> None:
        if self.callback in gc.callbacks:
            gc.callbacks.remove(self.callback)


def without_gc(wall: float, cpu: float | None, spent: Totals) -> tuple[float, float | None]:
    """A phase's (wall, CPU) seconds less the collector's seconds inside it: this thread's
    collections from the wall seconds, every thread's from the process CPU seconds."""
    return (
        max(0.0, wall - spent.wall),
        None if cpu is None else max(0.0, cpu - spent.all_cpu),
    )
