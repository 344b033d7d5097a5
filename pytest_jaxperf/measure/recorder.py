"""Records traces, lowerings and backend compiles per user function inside a scope.

Sources (see `_jaxhooks` for the JAX internals behind each):
- traces: one event per real Python trace from JAX's trace cache, for jitted functions
  (nested ones included) and for bodies of eager `lax.scan` / `while_loop` / `cond`, with
  the cause computed from the cache's own keys: no logging, no notion of "user files";
- lowerings, compiles and their seconds: `jax.monitoring` duration events, each charged
  to the user function inside the lowered program, whatever JAX transformation wraps it.

Between recorded tests the user's functions are evicted from JAX's caches, except those
traced while a fixture that is still alive was set up; JAX's own helpers stay compiled.
"""

from __future__ import annotations

import contextlib
import inspect
import linecache
import os
import re
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .. import causes
from ..model import (
    MAX_REASONS,
    MAX_SOURCE_LINES,
    PROGRAM_SIZE,
    SOURCE_BUILTIN_SUM,
    SOURCE_CONST_KIB,
    SOURCE_UNROLLED,
    Counts,
    Entry,
    FunctionRecord,
    Phases,
    RecordedTest,
    function_key,
    short_name,
)
from . import _jaxhooks as hooks
from . import gctime, identity, leafdiff, program_metrics
from .identity import Identity

_N = TypeVar("_N", int, float)
# The probe `x * 2.0 + 1.0`: equations mul, add; at least main, multiply, add and return in
# its module (jax 0.6 - 0.10 add two constants and their broadcasts: 8).
_PROBE_EQNS, _PROBE_MIN_OPS = 2, 4
_PHASES = (hooks.TRACE_EVENT, hooks.LOWER_EVENT, hooks.COMPILE_EVENT)
# Bounds the callables remembered between two isolations (a jit inside a loop of 10,000).
_MAX_SEEN = 2000
# Bounds the traces under way whose identity is kept (`Recorder._identified`): nested
# traces are few; the older ones are traces that raised or whose end JAX does not announce.
_MAX_IDENTIFIED = 256
_Identified = tuple[weakref.ref[Any] | int, tuple[int, ...], Identity | None]
# Bounds the trace-cache keys kept per function to find a repeated program (`Scope.repeats`).
MAX_COUNTED_KEYS = 64
# Bounds the programs a test keeps for confirming a compile-time breach (`Scope.programs`):
# a function that lowered more is confirmed on its first ones kept.
MAX_KEPT = 64
REWARMED = (
    "compiled again what a live fixture had compiled, lost to jax.clear_caches() before "
    "this test (in another test or between tests): in another order this test would find "
    "it compiled"
)
CLEARED = (
    "traced again after its cache was cleared (jax.clear_caches(), clear_cache(), or "
    "the function was evicted by another tool)"
)


@dataclass(eq=False)
class Warm:
    """One trace a fixture made while it was set up: its function, the trace-cache entry it
    filled (`hooks.entry_key`), and the `jax.clear_caches()` calls counted when that entry
    was last filled (a clear after it emptied it)."""

    ref: weakref.ref[Any] | int
    key: Any
    clears: int


# A top-level trace's lowering and compile that follow it on its thread, not charged.
_REWARM = object()


@dataclass
class BlockTally:
    """What one user function did inside one watched block of a scope."""

    function: FunctionRecord
    traces: int = 0
    compiles: int = 0
    # The causes of this block's own traces: the scope's list is de-duplicated and capped
    # over the whole test, so its tail may name an earlier trace's cause.
    retrace_reasons: list[str] = field(default_factory=list)


@dataclass
class Kept:
    """The programs of one function kept for confirmation (`recompile`): the ClosedJaxprs its
    lowerings lowered, and what lowering and compiling those took when the test did."""

    jaxprs: list[Any] = field(default_factory=list)
    lower_s: float = 0.0
    compile_s: float = 0.0
    lower_cpu_s: float | None = 0.0
    compile_cpu_s: float | None = 0.0

    @property
    def first(self) -> Phases:
        return Phases(self.lower_s, self.compile_s, self.lower_cpu_s, self.compile_cpu_s)


@dataclass
class Block:
    """The traces and compiles of each user function inside one block (`Scope.block()`,
    for `jaxperf.no_recompile`), keyed by the function's record."""

    tallies: dict[int, BlockTally] = field(default_factory=dict)

    def tally(self, fn: FunctionRecord) -> BlockTally:
        found = self.tallies.get(id(fn))
        if found is None:
            found = self.tallies[id(fn)] = BlockTally(fn)
        return found


class Scope:
    """What happened between opening and closing one recording block."""

    def __init__(self, rootdir: Path) -> None:
        self._rootdir = str(rootdir)
        self._lock = threading.Lock()
        self.functions: dict[str, FunctionRecord] = {}
        # Written by the jaxperf fixture (benchmark, scaling), keyed by label.
        self.benchmarks: dict[str, Entry] = {}
        self.eager = Counts()
        self.listener_errors = 0
        # Events on threads that were already running when the scope opened: a thread left
        # over by an earlier test must not charge this one.
        self.foreign_events = 0
        self._foreign = {t.ident for t in threading.enumerate()} - {threading.get_ident()}
        # Per thread: the function whose lowering awaits its backend compile, and whether
        # a persistent-cache hit was announced for that compile.
        self._pending: dict[int, Identity | None] = {}
        self._cache_hit: set[int] = set()
        self._sites: dict[str, str] = {}
        # Each function's record by (__name__, site): what JAX's DebugInfo names it by, too.
        self._records: dict[tuple[str, str], FunctionRecord] = {}
        # Function objects traced in this scope, per function record: a trace of a new object
        # of a known function is a re-definition (jit inside a loop).
        self._objects: dict[int, list[weakref.ref[Any] | int]] = {}
        # What those objects were made from (`identity.definition`), per function record:
        # a loop's objects die with their iteration, their definition stays.
        self._definitions: dict[int, list[Any]] = {}
        # `jax.clear_caches()` calls counted when the scope opened (see `Recorder._rewarm`),
        # the work not charged per function key ([traces, lowerings, compiles]), and per
        # thread the function whose not-charged trace awaits its lowering and compile.
        self.clears_at_open = 0
        self.rewarmed: dict[str, list[int]] = {}
        self._rewarm_thread: dict[int, tuple[str, str, str]] = {}
        self._rewarm_compile: dict[int, str] = {}
        # Open `block()`s: each also gets what happens while it is open.
        self._blocks: list[Block] = []
        # Per function record (by id): the record and its kept programs, to lower and
        # compile again should its compile time breach (see `confirmation`); why a
        # function's programs could not all be kept; per thread, the kept program whose
        # backend compile is awaited (its first seconds are added then).
        self._programs: dict[int, tuple[FunctionRecord, Kept]] = {}
        self._unkept: dict[int, str] = {}
        self._kept = 0
        self._kept_pending: dict[int, Kept] = {}
        # Per function record (by id): the source lines of the equations its lowerings made
        # (`program_metrics.eqn_lines`), and the programs its top-level traces made, whose
        # lines are read only for a function that never lowered (its gated equations are
        # the traced ones then; a jit that lowers would read each program twice); the
        # record keeps the top lines of those its gated equations count (`snapshot`).
        self._lowered_lines: dict[int, program_metrics.LineTally] = {}
        self._traced_programs: dict[int, list[Any]] = {}
        # The compile clock's instructions (`instructions.PhaseClock`, under valgrind with
        # --jaxperf-compile-clock=instructions; else None), and each phase's span of its
        # dumps by function record, read into `FunctionRecord.instructions` once no phase is
        # open (`snapshot`).
        self.phase_clock: Any = None
        self._spans: list[tuple[FunctionRecord, str, Any]] = []
        # The trace-cache keys (`hooks.entry_key`, not hashable on every jax) of the
        # top-level traces the compile clock counted, by function record: a program is
        # counted once per test (`repeats`).
        self._counted_keys: dict[int, list[Any]] = {}

    def owns_current_thread(self) -> bool:
        if threading.get_ident() in self._foreign:
            self.foreign_events += 1
            return False
        return True

    # -- identity -------------------------------------------------------------------------
    def _site(self, filename: str | None, lineno: int | None) -> str:
        if not filename:
            return ""
        rel = self._sites.get(filename)
        if rel is None:
            rel = _relative(filename, self._rootdir)
            self._sites[filename] = rel
        return f"{rel}:{lineno}" if lineno else rel

    def function(self, ident: Identity) -> FunctionRecord:
        """The record of `ident`'s function, named by its qualified name where known."""
        site = self._site(ident.filename, ident.lineno)
        fn = self._records.get((ident.name, site))
        if fn is None:
            fn = FunctionRecord(name=ident.qualname or ident.name, site=site)
            self._records[(ident.name, site)] = self.functions[fn.key] = fn
        elif ident.qualname and fn.name != ident.qualname:
            # First met through a lowering's DebugInfo, which has no qualified name.
            del self.functions[fn.key]
            fn.name = ident.qualname
            self.functions[fn.key] = fn
        return fn

    def _target(self, ident: Identity | None) -> Counts:
        return self.eager if ident is None else self.function(ident)

    # -- events ---------------------------------------------------------------------------
    def on_trace(
        self,
        ident: Identity,
        fun: Any,
        seen_before: bool,
        explanation: str | None,
        user: Any,
        leaves: dict[str, causes.LeafDiff] | None = None,
        inside_wrapper: bool = False,
    ) -> None:
        """One trace of `ident`'s function; `leaves`: the first leaf that differs in each
        static argument that changed since its last trace (see `causes.cause`).
        `inside_wrapper`: traced inside the trace of a wrapper around it (`jax.jit(jax.vmap(
        jitted))`): part of that trace, which is counted; only its object is remembered."""
        with self._lock:
            fn = self.function(ident)
            objects = self._objects.setdefault(id(fn), [])
            definitions = self._definitions.setdefault(id(fn), [])
            if inside_wrapper:
                _remember_object(objects, definitions, fun)
                return
            if seen_before:
                reason: str | None = (
                    causes.cause(
                        explanation, _positional_names(fun), _positional_names(user), leaves
                    )
                    if explanation
                    else "cause unknown"
                )
            elif not objects:
                reason = None  # first trace of this function in the test
            elif any(_same(ref, fun) for ref in objects):
                reason = CLEARED
            elif _wrapper_of(
                fun, [f for ref in objects if (f := _get(ref)) is not None], definitions
            ):
                reason = causes.WRAPPER.format(name=ident.name)
            else:
                reason = causes.REDEFINED.format(name=ident.name)
            _remember_object(objects, definitions, fun)
            fn.traces += 1
            causes.add_reason(fn.retrace_reasons, reason)
            for block in self._blocks:
                tally = block.tally(fn)
                tally.traces += 1
                causes.add_reason(tally.retrace_reasons, reason)

    def repeats(self, ident: Identity, key: Any) -> bool:
        """Whether a top-level trace of `ident` with trace-cache key `key` repeats one this
        test counted on the compile clock (after `jax.clear_caches()`, or a new jit of the
        same function and input types); else it is remembered as counted. Past
        MAX_COUNTED_KEYS of a function, every further trace is counted (no quadratic search)."""
        with self._lock:
            keys = self._counted_keys.setdefault(id(self.function(ident)), [])
            for known in keys:
                try:
                    if known == key:
                        return True
                except Exception:  # keys that cannot be compared: not the same program
                    continue
            if len(keys) < MAX_COUNTED_KEYS:
                keys.append(key)
            return False

    def on_rewarm(self, ident: Identity, top_level: bool) -> None:
        """A trace that fills again an entry a live fixture had filled, emptied by
        `jax.clear_caches()` before this test: not charged, nor are the lowering and compile
        that follow a top-level one on this thread."""
        with self._lock:
            # No record is made for it: the report reads as in an order with no clear.
            site = self._site(ident.filename, ident.lineno)
            fn = self._records.get((ident.name, site))
            key = fn.key if fn is not None else function_key(ident.qualname or ident.name, site)
            self.rewarmed.setdefault(key, [0, 0, 0])[0] += 1
            if top_level:
                self._rewarm_thread[threading.get_ident()] = (ident.name, site, key)

    def end_rewarm(self) -> None:
        """A top-level trace that is charged began on this thread: no lowering to come
        belongs to an earlier one that was not."""
        if self._rewarm_thread:
            with self._lock:
                self._rewarm_thread.pop(threading.get_ident(), None)

    def _rewarm_lowering(self, ident: Identity | None) -> bool:
        """Whether this thread's lowering of `ident` follows a trace not charged."""
        tid = threading.get_ident()
        awaited = self._rewarm_thread.get(tid)
        if ident is None or awaited is None:
            return False
        if awaited[:2] != (ident.name, self._site(ident.filename, ident.lineno)):
            return False
        self.rewarmed[awaited[2]][1] += 1
        self._pending[tid] = None
        self._kept_pending.pop(tid, None)
        self._rewarm_compile[tid] = awaited[2]
        return True

    def rewarm_lines(self) -> list[str]:
        """One line per function whose work was not charged (see `on_rewarm`)."""
        return [
            f"not charged: {key}: {t} trace(s), {lo} lowering(s), {c} compile(s): {REWARMED}"
            for key, (t, lo, c) in sorted(self.rewarmed.items())
        ]

    def on_trace_time(
        self, ident: Identity | None, seconds: float, cpu: float | None, span: Any = None
    ) -> None:
        with self._lock:
            target = self._target(ident)
            target.trace_s = _plus(target.trace_s, seconds)
            target.trace_cpu_s = _plus(target.trace_cpu_s, cpu)
            self._span(target, "trace", span)

    def _span(self, target: Counts, phase: str, span: Any) -> None:
        # A phase's instructions, read later (see `phase_clock`); a user function's only.
        if span is not None and isinstance(target, FunctionRecord):
            self._spans.append((target, phase, span))

    def on_traced_program(
        self, ident: Identity | None, eqns: int | None, jaxpr: Any = None
    ) -> None:
        """The jaxpr equations of one top-level trace (None: not read): a test that only
        traces (eval_shape, make_jaxpr) is size-gated on these; `jaxpr`, the program traced,
        whose equations' source lines are tallied."""
        with self._lock:
            target = self._target(ident)
            target.trace_eqns = _plus(target.trace_eqns, eqns)
            if jaxpr is not None and isinstance(target, FunctionRecord):
                self._traced_programs.setdefault(id(target), []).append(jaxpr)

    def on_lowering(
        self,
        ident: Identity | None,
        seconds: float,
        cpu: float | None,
        size: tuple[int | None, int | None] = (None, None),
        jaxpr: Any = None,
        span: Any = None,
    ) -> None:
        """One lowering: its seconds and the (jaxpr equations, StableHLO ops) of what it
        lowered (None: not read); `jaxpr`, what it lowered, whose equations' source lines
        are tallied."""
        with self._lock:
            if self._rewarm_lowering(ident):
                return
            target = self._target(ident)
            target.lowerings += 1
            target.lower_s = _plus(target.lower_s, seconds)
            target.lower_cpu_s = _plus(target.lower_cpu_s, cpu)
            self._span(target, "lower", span)
            target.jaxpr_eqns = _plus(target.jaxpr_eqns, size[0])
            target.hlo_ops = _plus(target.hlo_ops, size[1])
            self._pending[threading.get_ident()] = ident
            if jaxpr is not None and size[0] is not None and isinstance(target, FunctionRecord):
                program_metrics.eqn_lines(jaxpr, self._lowered_lines.setdefault(id(target), {}))

    def keep_program(
        self,
        ident: Identity | None,
        jaxpr: Any,
        seconds: float = 0.0,
        cpu: float | None = 0.0,
        devices: int | None = 1,
    ) -> None:
        """Keep what a user function's lowering lowered (JAX's caches hold it until the next
        isolation anyway), with its lowering's `seconds` and `cpu` seconds: the program a
        compile-time breach is confirmed on. Not a program over `devices` > 1 (or unknown):
        compiled again from its jaxpr alone it would be another program, on one device."""
        if ident is None:
            return  # JAX's helpers: not in the gated compile time
        with self._lock:
            if threading.get_ident() in self._rewarm_compile:
                return  # not charged: nothing to confirm
            fn = self.function(ident)
            why = None
            if jaxpr is None:
                why = "a lowering's program was not found"
            elif devices != 1:
                why = (
                    f"a program over {devices or 'several'} devices, which compiled again from "
                    "its jaxpr would be another program (its shardings are not kept)"
                )
            elif self._kept >= MAX_KEPT:
                why = f"the test lowered more than {MAX_KEPT} programs: the first kept"
            if why is not None:
                self._unkept.setdefault(id(fn), why)
                return
            kept = self._programs.setdefault(id(fn), (fn, Kept()))[1]
            kept.jaxprs.append(jaxpr)
            kept.lower_s += seconds
            kept.lower_cpu_s = _plus(kept.lower_cpu_s, cpu)
            self._kept += 1
            self._kept_pending[threading.get_ident()] = kept

    def programs(self) -> tuple[dict[str, Kept], dict[str, str]]:
        """The kept programs by function key (a function that lowered more programs than
        were kept is confirmed on those kept), and the functions none of whose programs
        could be kept, with why."""
        with self._lock:
            kept = {fn.key: k for fn, k in self._programs.values()}
            records = {id(fn): fn for fn in self.functions.values()}
            left = {
                records[i].key: why
                for i, why in self._unkept.items()
                if i in records and records[i].key not in kept
            }
        return kept, left

    def on_compile(
        self, seconds: float, cpu: float | None, ops: int | None = None, span: Any = None
    ) -> None:
        """One backend compile (or persistent-cache load): its seconds and the HLO
        instructions of what XLA made of the program (None: not read)."""
        tid = threading.get_ident()
        with self._lock:
            rewarmed = self._rewarm_compile.pop(tid, None)
            if rewarmed is not None:
                self._pending.pop(tid, None)
                self._rewarm_thread.pop(tid, None)
                self._cache_hit.discard(tid)
                self.rewarmed[rewarmed][2] += 1
                return
            target = self._target(self._pending.pop(tid, None))
            kept = self._kept_pending.pop(tid, None)
            target.compiles += 1
            target.xla_ops = _plus(target.xla_ops, ops)
            if tid in self._cache_hit:
                # A persistent-cache hit takes ~1 ms: never let it pass for a fast compile.
                self._cache_hit.discard(tid)
                target.cache_hits += 1
            else:
                target.compile_s = _plus(target.compile_s, seconds)
                target.compile_cpu_s = _plus(target.compile_cpu_s, cpu)
                self._span(target, "compile", span)  # a cache hit's load is no compile
                if kept is not None:
                    kept.compile_s += seconds
                    kept.compile_cpu_s = _plus(kept.compile_cpu_s, cpu)
            if isinstance(target, FunctionRecord):
                for block in self._blocks:
                    block.tally(target).compiles += 1

    def on_cache_hit(self) -> None:
        with self._lock:
            self._cache_hit.add(threading.get_ident())

    @contextlib.contextmanager
    def block(self) -> Iterator[Block]:
        """Record, besides the scope's totals, what each user function does inside the block:
        its own traces, compiles and their causes."""
        block = Block()
        with self._lock:
            self._blocks.append(block)
        try:
            yield block
        finally:
            with self._lock:
                self._blocks.remove(block)

    # -- result ---------------------------------------------------------------------------
    def _sources(self, fn: FunctionRecord) -> dict[str, list[int]]:
        """The top source lines of the equations `fn`'s gated size counts: its lowerings'
        where it lowered a program that was read, else its top-level traces' (see
        `FunctionRecord.eqn_sources`); empty where not tallied, or not all of them were."""
        lowered = fn.lowerings > 0 and fn.jaxpr_eqns is not None
        if lowered:
            tally = self._lowered_lines.get(id(fn), {})
        else:
            tally = {}
            for jaxpr in self._traced_programs.get(id(fn), ()):
                program_metrics.eqn_lines(jaxpr, tally)
        total = fn.jaxpr_eqns if lowered else fn.trace_eqns
        if not tally or sum(c[0] for c, _ in tally.values()) != total:
            return {}  # a program's lines not read: partial lines would mislead
        top = sorted(tally.items(), key=lambda item: (-item[1][0][0], str(item[0])))
        # Past the top lines, those of a known pattern (an unrolled loop's own line makes a
        # single scan equation): a few more, never the whole program.
        kept = (
            top[:MAX_SOURCE_LINES]
            + [
                (line, (c, n))
                for line, (c, n) in top[MAX_SOURCE_LINES:]
                if c[1] > 1 or c[2] >= 1024
            ][:MAX_SOURCE_LINES]
        )
        return {
            self._site(*line) if line else "": [c[0], len(n), _patterns(line, c)]
            for line, (c, n) in kept
        }

    def totals(self) -> Counts:
        """The user functions' counts and seconds so far, summed."""
        total = Counts()
        for fn in self.functions.values():
            total.add(fn)
        return total

    def read_instructions(self) -> None:
        """Add the instructions of the phases so far to their functions' records, where no
        phase is open (reading a dump inside one would count the reading)."""
        clock = self.phase_clock
        if clock is None or clock.open:
            return
        with self._lock:
            spans, self._spans = self._spans, []
        for fn, phase, span in spans:
            fn.instructions[phase] = fn.instructions.get(phase, 0) + clock.count(span)
        clock.clear()

    def snapshot(self) -> RecordedTest:
        """A RecordedTest holding copies of what this scope recorded so far."""
        self.read_instructions()
        rec = RecordedTest(
            functions={
                k: FunctionRecord(
                    **{
                        **vars(f),
                        "retrace_reasons": list(f.retrace_reasons),
                        "eqn_sources": self._sources(f),
                        "instructions": dict(f.instructions),
                    }
                )  # fmt: skip
                for k, f in self.functions.items()
            },
            benchmarks=dict(self.benchmarks),
        )
        rec.eager.add(self.eager)
        rec.recompute_totals()
        return rec


class Recorder:
    """Process-wide: JAX listeners are registered once and route to the open scope."""

    def __init__(self) -> None:
        self.active: Scope | None = None
        self._installed = False
        self._jax_dirs: tuple[str, ...] = ()
        self._traces: hooks.TraceListener | None = None
        # JAX's DebugInfo text -> the user's function, where they differ (wrapped or
        # partial functions): lowerings carry only the DebugInfo.
        self._aliases: dict[str, Identity] = {}
        # JAX's own module-level functions met in its caches: never evicted.
        self._helpers: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
        self._init_trace_state()
        self._init_isolation_state()
        self._init_phase_clocks()
        # What the last self-check found missing, by metric.
        self.problems: dict[str, str] = {}

    def _init_trace_state(self) -> None:
        """What each function's last trace left, and the traces under way."""
        # The cache key of each function's last trace, for "previous value" causes.
        self._last_key: dict[int, tuple[weakref.ref[Any] | int, Any]] = {}
        # The static arguments of each function's last trace (held: JAX's cache holds them
        # too), to name the leaf of one that changed.
        self._last_static: dict[int, tuple[weakref.ref[Any] | int, Any]] = {}
        # The user function each trace under way stands for, as its start found it, so that
        # its end (the trace's seconds) need not resolve it again: by (id of the callable,
        # id of its DebugInfo), with the callable and the ids of its static arguments.
        self._identified: dict[tuple[int, int], _Identified] = {}
        # The traces under way, as in `_identified`, that are not charged (`_refills`).
        self._rewarming: set[tuple[int, int]] = set()

    def _init_isolation_state(self) -> None:
        """What the next isolation must empty or keep of JAX's caches."""
        # Every callable traced for a jit or eagerly since the last isolation, and those
        # isolation kept, by id(): only these can have earlier entries in JAX's trace cache,
        # so only their traces pay for reading its keys (which costs what the cache holds).
        # The reference tells a callable from a new one at the same address: JAX wraps the
        # function anew on each call (diffrax's tests: 674 traces in 16 tests listed the
        # cache for a new wrapper whose id an earlier, collected one had held).
        self._may_be_cached: dict[int, weakref.ref[Any] | int] = {}
        # Functions traced while a fixture was set up, per live fixture: kept by isolation.
        # (callable, DebugInfo of its trace), as isolation's `_traced` holds them.
        self._collecting: list[list[tuple[weakref.ref[Any] | int, Any]]] = []
        self._fixture_funs: dict[int, list[tuple[weakref.ref[Any] | int, Any]]] = {}
        # The same fixtures' traces with the cache entries they filled, per live fixture
        # and by id(function), and how many times `jax.clear_caches()` was called: an entry
        # a clear emptied is filled again by the next trace of it, which a recorded test is
        # not charged for when the clear came before it (`_refills`).
        self._collecting_warm: list[list[Warm]] = []
        self._fixture_warm: dict[int, list[Warm]] = {}
        self._warm: dict[int, list[Warm]] = {}
        self.clears = 0
        # Callables traced since the last isolation (for caches that cannot be listed), and
        # whether anything was traced at all: an isolation with nothing new is skipped.
        self._seen: dict[int, weakref.ref[Any] | int] = {}
        # The jax.jit objects of user functions traced since the last isolation, as
        # id(jit object) -> (id(traced function), the object). `_unmatched`: some jit
        # trace's object could not be found (or functions were traced before the recorder
        # was installed), so isolation must empty every C++ dispatch cache.
        # Held, not weakly referenced: JAX's C++ dispatch cache is keyed on the function, so
        # the entry a test's local `jax.jit(f)` made outlives the object, and only that
        # object's `_clear_cache()` empties it (the next test's new jax.jit(f) would hit it).
        self._jitted: dict[int, tuple[int, Any]] = {}
        self._unmatched = True
        self._dirty = True
        # Every trace since the last isolation, as (callable, DebugInfo): what the next one
        # looks at. `_walk`: some trace may have been missed (before the listener was
        # installed, or past _MAX_SEEN), so the next isolation walks every cache instead.
        self._traced: list[tuple[weakref.ref[Any] | int, Any]] = []
        self._walk = True
        self.evicted = 0
        self.isolation = "per function"
        self._probes: list[Any] = []
        # The kept programs of the last scope closed (`Scope.programs`), until the next
        # scope or isolation: what `recompile` confirms a breach of that test with.
        self.last_programs: tuple[dict[str, Kept], dict[str, str]] = ({}, {})

    def _init_phase_clocks(self) -> None:
        """The clocks each phase (trace, lowering, compile) is timed with, and their starts."""
        # Per thread and phase, the CPU clock and the collector's seconds at each open
        # phase's start, innermost last: a trace may start another inside it (a jitted
        # helper traced for the first time).
        self._cpu_start: dict[tuple[int, str], list[tuple[float, gctime.Totals]]] = {}
        # Collector seconds, subtracted from each phase's (see `gctime`); the CPU clock is an
        # attribute so that tests can drive both with fake clocks.
        self.gc = gctime.GcClock()
        self._cpu_clock: Callable[[], float] = time.process_time
        # The compile clock's instructions (see `Scope.phase_clock`), and per thread and
        # phase its marks at each open phase's start, innermost last.
        self.phase_clock: Any = None
        self._instr_start: dict[tuple[int, str], list[Any]] = {}

    @property
    def jax_dirs(self) -> tuple[str, ...]:
        return self._jax_dirs

    def install(self) -> None:
        if not self._installed:
            import jax.monitoring

            self._jax_dirs = identity.jax_dirs()
            # Registered once and never removed: jax's unregister asserts, and a dormant
            # listener costs one attribute check per compile.
            jax.monitoring.register_event_duration_secs_listener(self._on_duration)
            jax.monitoring.register_event_listener(self._on_event)
            jax.monitoring.register_scalar_listener(self._on_phase_start)
            hooks.watch_cache_clears(self._on_clear)
            self.gc.install()
            self._installed = True
        if self._traces is None and not hooks.missing():
            self._traces = hooks.TraceListener(self._on_trace)
        if self._traces is not None and self._traces.ensure():
            # Our listener had been replaced in JAX's slot (or was just put there): traces
            # may have been missed, so the next isolation walks every cache.
            self._walk = True

    def _on_clear(self) -> None:
        self.clears += 1

    # -- identity -------------------------------------------------------------------------
    def _user(self, ident: Identity | None) -> Identity | None:
        return None if identity.is_jax(ident, self._jax_dirs) else ident

    def _identify(self, fun: Any, dbg: Any, static: tuple[Any, ...] = ()) -> Identity | None:
        """The user function a trace stands for; None for JAX's own helpers."""
        if hooks.is_jit_wrapper(fun):
            return None  # make_jaxpr(jitted): the jitted function's own trace follows
        ident = self._user(identity.resolve(fun, self._jax_dirs, static))
        named = identity.from_debug_info(dbg)
        if ident is None:
            # A JAX-made closure around a user body (fori_loop's scanned_fun).
            ident = self._user(named)
        elif named is None or (named.name, named.filename) != (ident.name, ident.filename):
            src = getattr(dbg, "func_src_info", None)
            if src:
                self._aliases[str(src)] = ident
        return ident

    def _identified_at_end(
        self, fun: Any, dbg: Any, static: tuple[Any, ...]
    ) -> tuple[Identity | None, bool]:
        """`_identify` of a trace that is ending: what its start found, where it saw it; and
        whether its start was seen (a real trace, not a hit of JAX's trace cache)."""
        seen = self._identified.pop((id(fun), id(dbg)), None)
        if seen is not None and _same(seen[0], fun) and seen[1] == tuple(map(id, static)):
            return seen[2], True
        return self._identify(fun, dbg, static), False

    def _lowered(self, jaxpr: Any) -> Identity | None:
        fun = hooks.jitted_callable()
        if fun is not None and not hooks.is_jit_wrapper(fun):
            ident = self._user(identity.resolve(fun, self._jax_dirs))
            if ident is not None:
                return ident
        for dbg in hooks.debug_infos(jaxpr):
            src = getattr(dbg, "func_src_info", None)
            ident = self._aliases.get(str(src)) if src else None
            ident = self._user(ident or identity.from_debug_info(dbg))
            if ident is not None:
                return ident
        return None

    # -- listeners ------------------------------------------------------------------------
    def _on_trace(self, call: hooks.TraceCall) -> None:
        self._as_own(self._trace, call)

    def _as_own(self, work: Callable[..., None], *args: Any) -> None:
        """`work(*args)`, a listener's, whose seconds are not those of the phases it runs
        inside (see `gctime`): a trace's cause, a nested phase's sizing."""
        started = self.gc.own_start()
        apart = self.phase_clock is not None and self.phase_clock.own_start()
        try:
            work(*args)
        finally:
            if apart:
                self.phase_clock.own_stop(apart)
            self.gc.own_stop(started)

    def _trace(self, call: hooks.TraceCall) -> None:
        """One trace JAX announces: kept for isolation, then counted in the open scope."""
        try:
            cached_before, inner = self._seen_for_isolation(call)
            refill = self._refills(call)
            scope = self.active
            if scope is None or not (call.by_jit or call.eager):
                return
            if not scope.owns_current_thread():
                return
            if not call.by_jit and hooks.find_frame("_trace_for_jit", start=4) is not None:
                return  # JAX's own staging inside a jit trace (pmap's shard_map): counted there
            ident = self._identify(call.fun, call.debug_info, call.static)
            if len(self._identified) >= _MAX_IDENTIFIED:
                # The oldest: a trace that raised, or one whose end is not announced.
                self._identified.pop(next(iter(self._identified)), None)
            self._identified[(id(call.fun), id(call.debug_info))] = (
                _ref(call.fun),
                tuple(map(id, call.static)),
                ident,
            )
            if ident is not None:
                self._count_trace(scope, call, ident, cached_before, inner, refill)
        except Exception:
            # A listener error must never surface in the user's f(x).
            if self.active is not None:
                self.active.listener_errors += 1

    def _seen_for_isolation(self, call: hooks.TraceCall) -> tuple[bool, Any]:
        """What the next isolation must know of this trace; (whether its callable may have
        earlier entries in JAX's trace cache, the user's callable inside it: None for a
        trace neither for a jit nor eager)."""
        if len(self._traced) < _MAX_SEEN:
            self._traced.append((_ref(call.fun), call.debug_info))
        else:
            self._walk = True
        known = self._may_be_cached.get(id(call.fun))
        cached_before = known is not None and _same(known, call.fun)
        if not (call.by_jit or call.eager):
            return cached_before, None
        if not cached_before:
            self._may_be_cached[id(call.fun)] = _ref(call.fun)
        if not self._collecting:
            # Any trace may fill a cache that holds a user function (an eager
            # primitive's, around the user's body): the next isolation must run.
            self._dirty = True
        inner = identity.user_callable(call.fun, self._jax_dirs)
        # Only the user's functions matter to isolation: JAX's helpers stay cached,
        # and evicting them from pmap's caches would make them recompile.
        if self._user(identity.of_callable(inner)) or self._user(
            identity.from_debug_info(call.debug_info)
        ):
            self._remember(call.fun, inner, call.debug_info)
            if call.by_jit and not self._collecting:
                self._remember_jitted(call.fun)
            if self._collecting:
                warm = Warm(_ref(call.fun), hooks.entry_key(call), self.clears)
                for group in self._collecting_warm:
                    group.append(warm)
        return cached_before, inner

    def _count_trace(
        self,
        scope: Scope,
        call: hooks.TraceCall,
        ident: Identity,
        cached_before: bool,
        inner: Any,
        refill: bool,
    ) -> None:
        """A trace of the user's function `ident` in `scope`: not charged (a refill), part of
        a wrapper's trace, or counted with its cause against the function's last key."""
        if refill and scope.clears_at_open == self.clears:
            # A clear before this test emptied what a live fixture compiled: in another
            # order the test finds it compiled. Its key is kept, as for any trace.
            self._keep_key(call, explain=False)
            self._rewarming.add((id(call.fun), id(call.debug_info)))
            scope.on_rewarm(ident, top_level=call.eager)
            return
        if call.eager:
            scope.end_rewarm()
        if any(
            identity.wraps(outer, call.fun) and not hooks.is_jit_wrapper(outer)
            for outer in call.enclosing
        ):
            # `jax.jit(jax.vmap(jitted))`, a partial or decorator around a jitted
            # function: its body runs once, inside the trace of the wrapper, which is
            # the one counted (with its own cause). Its key is still kept: a later
            # retrace of it alone is explained against this one. Not under the trace of
            # the jitted object itself (`eval_shape(jitted)`, `make_jaxpr(jitted)`):
            # that trace only calls the jit, and is never counted (`_identify`).
            self._keep_key(call, explain=False)
            scope.on_trace(ident, call.fun, cached_before, None, inner, inside_wrapper=True)
            return
        last = self._last_key.get(id(call.fun))
        previous = last[1] if last is not None and _same(last[0], call.fun) else None
        # Every retrace explained, past the causes kept too: they are counted by kind
        # (`causes.add_reason`), one diff with the last trace's key each.
        if cached_before:
            seen, explanation = hooks.miss_explanation(call, previous)
        else:
            seen, explanation = cached_before, None
        leaves = self._keep_key(call, explain=seen and bool(explanation))
        scope.on_trace(ident, call.fun, seen, explanation, inner, leaves)
        clock = self.phase_clock
        # Only a trace no other phase encloses (an enclosing trace's count needs it): its
        # own phase open, or not started yet (jax < 0.7 announces the trace first).
        if (
            clock is not None
            and call.by_jit
            and (clock.open == 0 or clock.on and clock.open == 1)
            and scope.repeats(ident, hooks.entry_key(call))
        ):
            clock.repeat(ident.name)

    def _keep_key(self, call: hooks.TraceCall, explain: bool) -> dict[str, causes.LeafDiff] | None:
        """Keep this trace's key as its function's last (a later retrace is explained
        against it) and return its changed static arguments (`_changed_statics`)."""
        self._last_key[id(call.fun)] = (_ref(call.fun), hooks.cache_key(call))
        return self._changed_statics(call, explain=explain)

    def _refills(self, call: hooks.TraceCall) -> bool:
        """Whether this trace fills again a cache entry a live fixture filled while it was
        set up, after a `jax.clear_caches()` emptied it; the entry is then filled again."""
        if not self.clears:
            return False
        warm = self._warm.get(id(call.fun))
        if not warm:
            return False
        key = hooks.entry_key(call)
        refilled = False
        for entry in warm:
            if not _same(entry.ref, call.fun):
                continue
            try:
                if entry.key != key:
                    continue
            except Exception:  # keys that cannot be compared: not the same entry
                continue
            refilled = refilled or entry.clears < self.clears
            entry.clears = self.clears
        return refilled

    def _changed_statics(
        self, call: hooks.TraceCall, explain: bool
    ) -> dict[str, causes.LeafDiff] | None:
        """The first leaf that differs in each static argument since the function's last
        trace, by JAX's input path (looked for where `explain`); this trace's are kept."""
        last = self._last_static.pop(id(call.fun), None)
        before = dict(last[1]) if last is not None and _same(last[0], call.fun) else {}
        if call.static_at:
            self._last_static[id(call.fun)] = (_ref(call.fun), call.static_at)
        if not explain:
            return None
        found = {}
        for path, value in call.static_at:
            if path in before:
                leaf = leafdiff.first_difference(before[path], value)
                if leaf is not None:
                    found[path] = leaf
        return found or None

    def _on_phase_start(self, event: str, value: float, **kwargs: Any) -> None:
        # JAX announces the start of each trace / lowering / compile with a scalar event
        # (its wall-clock start time); the process CPU clock and the collector's seconds
        # are read here and at the end.
        if self.active is not None and event in _PHASES:
            if self.phase_clock is not None and self.active.owns_current_thread():
                self._instr_start.setdefault((threading.get_ident(), event), []).append(
                    self.phase_clock.start(event == hooks.TRACE_EVENT, kwargs.get("fun_name"))
                )
            self.gc.watching += 1
            self._cpu_start.setdefault((threading.get_ident(), event), []).append(
                (self._cpu_clock(), self.gc.totals())
            )

    def _on_duration(self, event: str, duration_secs: float, **kwargs: Any) -> None:
        scope = self.active
        if scope is None:
            return
        try:
            if event not in _PHASES:
                return
            span = self._phase_span(event)
            starts = self._cpu_start.get((threading.get_ident(), event))
            start = starts.pop() if starts else None
            cpu = None if start is None else max(0.0, self._cpu_clock() - start[0])
            if start is not None:
                self.gc.watching = max(0, self.gc.watching - 1)
                # A collection that ran inside the phase is not the compile's cost.
                duration_secs, cpu = gctime.without_gc(
                    duration_secs, cpu, self.gc.totals().since(start[1])
                )
            if not scope.owns_current_thread():
                return
            # Identifying the function and sizing its program run inside the phases
            # enclosing this one.
            self._as_own(self._phase_done, scope, event, duration_secs, cpu, span)
        except Exception:
            scope.listener_errors += 1
        clock = self.phase_clock
        if clock is not None and event == hooks.COMPILE_EVENT and not clock.open:
            # A jit's last phase (counted or repeated): the test's own work runs
            # uninstrumented until the next.
            clock.pause()

    def _phase_span(self, event: str) -> Any:
        # First thing at a phase's end: its span of instructions (None: not counted).
        if self.phase_clock is None:
            return None
        starts = self._instr_start.get((threading.get_ident(), event))
        return self.phase_clock.end(starts.pop()) if starts else None

    def _phase_done(
        self, scope: Scope, event: str, duration_secs: float, cpu: float | None, span: Any = None
    ) -> None:
        if event == hooks.TRACE_EVENT:
            traced = hooks.traced_for_jit()
            if traced is not None and (id(traced[0]), id(traced[1])) in self._rewarming:
                self._rewarming.discard((id(traced[0]), id(traced[1])))
                self._identified.pop((id(traced[0]), id(traced[1])), None)
                return  # not charged (see `_refills`)
            ident, started = (None, False) if traced is None else self._identified_at_end(*traced)
            scope.on_trace_time(ident, duration_secs, cpu, span)
            if traced is not None:
                program = hooks.traced_program()
                # A trace cache hit emits the event too: only real traces add their size.
                if program.top_level and (started or program.misses_only):
                    # A trace that raised (diffrax's error tests) made no program: 0 more.
                    raised = hooks.trace_raised()
                    eqns = 0 if raised else program_metrics.traced_eqns(program.jaxpr)
                    scope.on_traced_program(ident, eqns, None if raised else program.jaxpr)
        elif event == hooks.LOWER_EVENT:
            lowering = hooks.lowering()
            lowered = self._lowered(lowering.jaxpr)
            size = program_metrics.size(lowering)
            scope.on_lowering(lowered, duration_secs, cpu, size, lowering.jaxpr, span)
            scope.keep_program(lowered, lowering.jaxpr, duration_secs, cpu, lowering.devices)
        else:
            ops = program_metrics.xla_ops(hooks.compiled_executable())
            scope.on_compile(duration_secs, cpu, ops, span)

    def _on_event(self, event: str, **kwargs: Any) -> None:
        scope = self.active
        if scope is None or event != hooks.CACHE_HIT_EVENT:
            return
        try:
            scope.on_cache_hit()
        except Exception:
            scope.listener_errors += 1

    # -- fixtures and isolation -----------------------------------------------------------
    def _remember(self, fun: Any, inner: Any, dbg: Any) -> None:
        """A user function was traced: the next isolation evicts it, unless a fixture being
        set up owns it."""
        # The closure value JAX holds (pmap) may be decorated: keep the code's function too.
        refs = [_ref(fun), _ref(inner), _ref(identity.unwrap(inner))]
        for funs in self._collecting:
            funs.extend((r, dbg) for r in refs)
        if not self._collecting and len(self._seen) < _MAX_SEEN:
            self._seen.update((_key(r), r) for r in refs)

    def _remember_jitted(self, fun: Any) -> None:
        jitted = hooks.calling_jitted()
        if jitted is None or len(self._jitted) >= _MAX_SEEN:
            self._unmatched = True
        else:
            self._jitted[id(jitted)] = (id(fun), jitted)

    @contextlib.contextmanager
    def fixture_setup(self, owner: object) -> Iterator[None]:
        """Functions traced while `owner` (a fixture) is set up stay compiled until
        `release(owner)`: a fixture's warm-up is not undone by isolation, nor charged to the
        test, even when the body requests it with `request.getfixturevalue`."""
        funs: list[tuple[weakref.ref[Any] | int, Any]] = []
        warm: list[Warm] = []
        self._collecting.append(funs)
        self._collecting_warm.append(warm)
        try:
            with self.paused():
                yield
        finally:
            self._collecting.remove(funs)
            self._collecting_warm.remove(warm)
            if funs:
                self._fixture_funs.setdefault(id(owner), []).extend(funs)
            if warm:
                self._fixture_warm.setdefault(id(owner), []).extend(warm)
                for entry in warm:
                    self._warm.setdefault(_key(entry.ref), []).append(entry)

    def release(self, owner: object) -> None:
        for entry in self._fixture_warm.pop(id(owner), ()):
            entries = self._warm.get(_key(entry.ref), [])
            if entry in entries:
                entries.remove(entry)
            if not entries:
                self._warm.pop(_key(entry.ref), None)
        funs = self._fixture_funs.pop(id(owner), None)
        if funs:
            self._dirty = True
            self._unmatched = True  # their jax.jit objects were not looked for
            self._seen.update((_key(r), r) for r, _ in funs)
            # Isolations looked at their traces while the fixture owned them, and kept them:
            # handed to the next one again, to be evicted now.
            self._traced.extend(funs)
            self._walk = self._walk or len(self._traced) > _MAX_SEEN

    def isolate(self) -> None:
        """Forget every user function not owned by a live fixture, so that counts do not
        depend on earlier tests. JAX's own helpers stay cached. Relies on private JAX
        caches; when they are not as expected, everything is cleared instead."""
        import jax

        self.install()
        self.last_programs = ({}, {})
        if not self._dirty and self._traces is not None:
            return  # nothing was traced since the last isolation
        kept = {_key(r): r for funs in self._fixture_funs.values() for r, _ in funs}
        seen = [f for k, r in self._seen.items() if k not in kept and (f := _get(r)) is not None]

        def keep(fun: Any, dbg: Callable[[], Any]) -> bool:
            if id(fun) in kept or self._is_helper(fun):
                return True
            if self._user(identity.of_callable(fun)) is not None:
                return False
            helper = self._user(identity.from_debug_info(dbg())) is None
            # Module-level JAX functions are helpers for good: remembered, so that each
            # isolation looks at the (thousands of) cached helpers only once.
            if helper and not getattr(fun, "__closure__", None):
                with contextlib.suppress(TypeError):
                    self._helpers[fun] = True
            return helper

        jitted = None
        # Without the trace listener no jax.jit object was seen: every one is emptied.
        if not self._unmatched and self._traces is not None:
            jitted = [j for fun, j in self._jitted.values() if fun not in kept]
        traced = None
        if not self._walk and self._traces is not None:
            # A callable gone since its trace took its cache entries with it.
            traced = [(f, dbg) for ref, dbg in self._traced if (f := _get(ref)) is not None]
        try:
            self.evicted += hooks.evict(keep, seen, jitted, traced)
            self.isolation = "per function"
        except Exception:
            self.isolation = "jax.clear_caches() (per-function eviction failed)"
            jax.clear_caches()
        self._seen.clear()
        self._jitted.clear()
        self._traced.clear()
        self._walk = self._traces is None
        self._may_be_cached = kept
        self._last_key = {k: v for k, v in self._last_key.items() if k in kept}
        self._last_static = {k: v for k, v in self._last_static.items() if k in kept}
        self._unmatched = False
        self._dirty = False

    def _is_helper(self, fun: Any) -> bool:
        try:
            return fun in self._helpers
        except TypeError:  # not weakly referenceable
            return False

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Nothing inside the block is recorded (the plugin's own measurement work)."""
        outer, self.active = self.active, None
        try:
            yield
        finally:
            self.active = outer

    @contextlib.contextmanager
    def scope(self, rootdir: Path) -> Iterator[Scope]:
        """Record everything compiled inside the block."""
        self.install()
        scope = Scope(rootdir)
        scope.clears_at_open = self.clears
        scope.phase_clock = self.phase_clock
        # Aliases from an earlier test would charge this test's lowerings by whichever test
        # ran before: a generic wrapper's source (equinox's fun_wrapped) is shared by all.
        self._aliases.clear()
        outer, self.active = self.active, scope
        self.last_programs = ({}, {})
        try:
            yield scope
        finally:
            self.active = outer
            self.last_programs = scope.programs()
            if self.phase_clock is not None:
                self._instr_start.clear()
                self.phase_clock.open = 0
                scope.read_instructions()

    # -- self-check -----------------------------------------------------------------------
    def sources(self) -> str:
        """One line: where this run's numbers come from."""
        traces = (
            "traces and causes from JAX's trace cache"
            if "traces" not in self.problems
            else "traces NOT measured"
        )
        if "traces" not in self.problems and not hooks.eager_traces_counted():
            traces += " (traces of eager lax control-flow bodies not counted on this jax)"
        return (
            f"{traces}; lowerings, compiles and seconds from jax.monitoring; "
            f"isolation {self.isolation}"
        )

    def self_check(self, rootdir: Path) -> dict[str, str]:
        """Trace, compile, retrace and evict a probe function in a throwaway scope, under
        JAX's default settings whatever the user's configuration (`hooks.own_settings`).

        Returns {metric: what is wrong} for every metric this JAX cannot be counted on for:
        'traces', 'compiles' (lowerings and compiles with their seconds), PROGRAM_SIZE (the
        jaxpr equations and StableHLO ops of each lowering). A hook missing from
        JAX reads "missing ..."; a probe that misbehaved says what was seen."""
        self.install()
        problems: dict[str, str] = {}
        if missing := hooks.missing():
            problems["traces"] = "missing " + ", ".join(missing)
        with hooks.own_settings():
            counted, expected = self._probe(rootdir)
        first, second, third = (fns[0] if len(fns) == 1 else None for fns in counted)
        here = os.path.basename(__file__)
        reasons = second.retrace_reasons if second else []
        if "traces" not in problems and not (
            first and first.traces == 1 and here in first.site and second and second.traces
        ):
            problems["traces"] = (
                "a probe function's trace was not counted under its name (traces counted: "
                f"{_probe_counts(counted, 'traces')})"
            )
        elif "traces" not in problems and not any(expected in r for r in reasons):
            problems["traces"] = (
                f"the probe's retrace cause read {'; '.join(reasons) or 'nothing'!r} where "
                f"{expected!r} was expected"
            )
        if not (first and first.lowerings == 1 and first.compiles == 1):
            problems["compiles"] = (
                "a probe function's lowering/compile was not counted (lowerings, compiles: "
                f"{_probe_counts(counted, 'lowerings')}, {_probe_counts(counted, 'compiles')})"
            )
        if "traces" not in problems and first and first.trace_eqns not in (None, _PROBE_EQNS):
            # Not found reads as not measured; a wrong count must not be gated. (Where traces
            # are not seen, neither are their sizes: the verdicts leave both out.)
            problems[PROGRAM_SIZE] = (
                f"the probe's traced jaxpr equations read {first.trace_eqns}, expected "
                f"{_PROBE_EQNS}"
            )
        if "compiles" not in problems and not (
            first
            and first.jaxpr_eqns == _PROBE_EQNS
            and (first.hlo_ops or 0) >= _PROBE_MIN_OPS
            and (first.xla_ops or 0) >= 1
        ):
            problems[PROGRAM_SIZE] = (
                "the probe's program was not read (jaxpr equations, StableHLO ops, optimized "
                f"HLO ops: {_probe_counts(counted, 'jaxpr_eqns')}, "
                f"{_probe_counts(counted, 'hlo_ops')}, {_probe_counts(counted, 'xla_ops')}; "
                f"expected {_PROBE_EQNS}, at least {_PROBE_MIN_OPS}, at least 1)"
            )
        if not (third and third.compiles == 1 and (third.traces == 1 or "traces" in problems)):
            # Counts would then depend on the tests that ran before: neither can be gated.
            for metric in ("traces", "compiles"):
                problems.setdefault(metric, "an evicted probe function was not compiled again")
        self.problems = problems
        return problems

    def _probe(self, rootdir: Path) -> tuple[list[list[FunctionRecord]], str]:
        # The probe's compiles are the plugin's: not counted by the compile clock (under
        # valgrind's instrumentation they would cost a minute).
        clock, self.phase_clock = self.phase_clock, None
        try:
            return self._run_probe(rootdir)
        finally:
            self.phase_clock = clock

    def _run_probe(self, rootdir: Path) -> tuple[list[list[FunctionRecord]], str]:
        """The probe's records in three scopes (a first call, a new shape, the first shape
        again after isolation), and the retrace cause the second should read."""
        import jax
        import jax.numpy as jnp

        def _jaxperf_probe(x: Any) -> Any:
            return x * 2.0 + 1.0

        probe = jax.jit(_jaxperf_probe)
        # Kept alive: a later probe must never reuse this one's id in JAX's caches.
        self._probes.append((_jaxperf_probe, probe))
        with self.paused():
            small, large = jnp.ones(3, jnp.float32), jnp.ones(4, jnp.float32)
        counted = []
        for x, isolate in ((small, False), (large, False), (small, True)):
            if isolate:
                self.isolate()
            with self.scope(rootdir) as scope:
                jax.block_until_ready(probe(x))
            counted.append(
                [f for f in scope.functions.values() if short_name(f.name) == "_jaxperf_probe"]
            )
        return counted, f"x: {_aval(small)} -> {_aval(large)}"


RECORDER = Recorder()


def _aval(x: Any) -> str:
    """'f32[3]': how JAX's cache-miss explanations write an array's type."""
    return str(x.aval.str_short(short_dtypes=True))


def _probe_counts(counted: list[list[FunctionRecord]], metric: str) -> str:
    return "/".join(",".join(str(getattr(f, metric)) for f in fns) or "none" for fns in counted)


def _plus(total: _N | None, more: _N | None) -> _N | None:
    """CPU seconds (or program sizes) so far plus one phase's; None once one could not be
    measured."""
    return None if total is None or more is None else total + more


def _ref(fun: Any) -> weakref.ref[Any] | int:
    try:
        return weakref.ref(fun)
    except TypeError:
        return id(fun)


def _get(ref: weakref.ref[Any] | int) -> Any:
    return ref() if isinstance(ref, weakref.ref) else None


def _key(ref: weakref.ref[Any] | int) -> int:
    return id(ref()) if isinstance(ref, weakref.ref) else ref


def _same(ref: weakref.ref[Any] | int, fun: Any) -> bool:
    return _get(ref) is fun if isinstance(ref, weakref.ref) else ref == id(fun)


def _remember_object(
    objects: list[weakref.ref[Any] | int], definitions: list[Any], fun: Any
) -> None:
    """Remember a traced object of a function, and what it was made from (the last
    MAX_REASONS of each: a jit inside a loop of 10,000)."""
    if not any(_same(ref, fun) for ref in objects):
        objects.append(_ref(fun))
        del objects[:-MAX_REASONS]
    made = identity.definition(fun)
    if not any(d is made for d in definitions):
        definitions.append(made)
        del definitions[:-MAX_REASONS]


def _wrapper_of(fun: Any, alive: list[Any], definitions: list[Any]) -> bool:
    """Whether `fun`, traced for the first time, is another wrapper of a function traced
    before (or the function inside one) rather than a new copy of one of them: `kf(x)` then
    `jax.jit(jax.vmap(kf))(xs)` builds two programs of `kf`, where a `jax.jit(jax.vmap(kf))`
    made anew on each call of a loop is a re-definition (one definition, many objects)."""
    made = identity.definition(fun)
    if any(d is made for d in definitions):
        return False
    return any(identity.wraps(fun, old) or identity.wraps(old, fun) for old in alive)


def _positional_names(fun: Any) -> list[str]:
    try:
        params = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in kinds]


# A call of Python's builtin sum: not a method (`x.sum(`) nor a qualified name (`jnp.sum(`).
_BUILTIN_SUM = re.compile(r"(?<![\w.])sum\(")


def _patterns(line: tuple[str, int] | None, counts: list[int]) -> int:
    """A source line's known patterns as `FunctionRecord.eqn_sources` keeps them, from its
    `program_metrics.LineTally` counts."""
    _, unroll, const_bytes = counts
    builtin_sum = line is not None and _calls_builtin_sum(*line)
    return (
        SOURCE_BUILTIN_SUM * builtin_sum
        + SOURCE_UNROLLED * (unroll > 1)
        + SOURCE_CONST_KIB * (const_bytes // 1024)
    )


def _calls_builtin_sum(filename: str, lineno: int) -> bool:
    """Whether the source line calls Python's builtin `sum` (read from the file, as a
    traceback reads it)."""
    return bool(_BUILTIN_SUM.search(linecache.getline(filename, lineno)))


def _relative(filename: str, rootdir: str) -> str:
    """A definition site that reads the same on every machine: rootdir- or sys.path-relative."""
    path = os.path.abspath(filename)
    bases = [rootdir] + sorted((p for p in sys.path if p), key=len, reverse=True)
    for base in bases:
        base = os.path.abspath(base)
        if path.startswith(base + os.sep):
            return os.path.relpath(path, base).replace(os.sep, "/")
    return path.replace(os.sep, "/")
