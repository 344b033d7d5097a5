"""How every save folds a run into the baseline (`--jaxperf-save`, serial or under xdist,
`jaxperf merge` of shards, `jaxperf resolve`'s environment): per test and per kind of value,
what this run measured replaces the stored value, what it did not measure keeps the stored
value and the environment it was measured in, and a timing inside its keep band of the stored
value keeps the stored value whole, on the gate's clock (so an unchanged re-save rewrites
nothing, on a busy machine too); and what a baseline holds of an entry at all
(`baseline_form`: what the gate reads; the run file holds everything)."""

from __future__ import annotations

import copy
import dataclasses
import json
import operator
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..compare import Gating, Verdict, compile_seconds, runtime_verdict
from ..config import CLOCKS, Clock, Tolerances
from ..environment import (
    COMPILE,
    COUNTS,
    INSTRUCTION_KEYS,
    INSTRUCTIONS,
    JIT_DISABLED,
    OPTIONAL_KEYS,
    REFERENCE_KEY,
    RUN_KEYS,
    RUNTIME,
    SIZES,
    STATIC_KEYS,
    TIMING_KEYS,
    differences,
    stored_reference_agrees,
    timing_off,
    under_xdist,
    unmeasured,
)
from ..model import (
    COUNT_FIELDS,
    EAGER_OPTIONAL,
    FIRST_CALL_FIELDS,
    PROGRAM_SIZE,
    RUNTIME_OPTIONAL,
    SCHEMA,
    SECONDS_FIELDS,
    SIZE_FIELDS,
    WALL_FIELDS,
    BenchmarkEntry,
    Counts,
    Entry,
    FunctionRecord,
    RecordedTest,
    RunRecord,
    ScalingEntry,
)
from .entries import Entries
from .store import BaselineError, entry_text, placed

# The kinds of value an entry holds (named in environment.py), each compared between
# environments on its own keys: counts and program sizes where the program is the same
# (static keys), seconds where the machine and run are the same (timing keys), instructions
# on the same simulated CPU. A plugin's `pytest_jaxperf_compatible` hook decides gating
# only: what a save keeps follows these keys.
_STATIC = (COUNTS, SIZES)
# The order a refusal looks for the value it names.
_ORDER = (RUNTIME, INSTRUCTIONS, COMPILE, COUNTS, SIZES)
_TIMED = (COMPILE, RUNTIME)
# The environment keys each kind of value depends on.
_KEYS = {COUNTS: STATIC_KEYS, SIZES: STATIC_KEYS, INSTRUCTIONS: INSTRUCTION_KEYS,
         COMPILE: TIMING_KEYS, RUNTIME: TIMING_KEYS}  # fmt: skip
# What the self-check's not-measured metrics are a part of.
_KIND_OF_UNMEASURED = {"traces": COUNTS, "compiles": COUNTS, PROGRAM_SIZE: SIZES}

C = TypeVar("C", bound=Counts)

# A stored compile time is kept while a new one reads between KEEP_FASTER of it and the gate's
# tolerance above it (or within the floor): unchanged code's compile CPU seconds, re-measured,
# read 0.61x-1.83x their stored value on six real suites (q01 0.61-0.93, max 1.83x;
# benchmarks/results/suite_false_failures-2026-11-2*.txt). Below the band the code got faster
# and the save records it, so the gate tightens (1.0 -> 0.55 s is written; a later 2x fails).
KEEP_FASTER = 0.6


class SaveRefused(BaselineError):
    """A save would lose a stored value this run did not measure; nothing is written."""


@dataclass(frozen=True)
class Measured:
    """What one run measured, by kind of value: {kind: why not} for each kind it did not
    (the option or setting to name when that makes a save impossible)."""

    missing: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, env: Mapping[str, Any], timing_mode: str, runtime_clock: str) -> Measured:
        missing: dict[str, str] = {}
        skipped = unmeasured(env)
        for metric, why in skipped.items():
            kind = _KIND_OF_UNMEASURED.get(metric, COUNTS)
            missing.setdefault(kind, f"{metric} not measured: {why}")
        counts = [m for m in ("traces", "compiles") if m in skipped]
        if counts:  # both, for one reason, in one phrase (the save's line shows it)
            whys = "; ".join(dict.fromkeys(skipped[m] for m in counts))
            missing[COUNTS] = f"{' and '.join(counts)} not measured ({whys})"
        if COUNTS in missing:  # sizes and compile seconds are read from the same compiles
            missing.setdefault(SIZES, missing[COUNTS])
            missing.setdefault(COMPILE, missing[COUNTS])
        untimed = None
        if timing_mode == "off" or timing_off(env):
            untimed = "--jaxperf-timing=off"
        elif any(JIT_DISABLED in why for why in skipped.values()):
            untimed = "JAX_DISABLE_JIT (jitted functions ran op by op)"
        elif under_xdist(env):
            untimed = "pytest-xdist workers (-n), timed beside each other"
        if untimed is not None:
            for kind in (*_TIMED, INSTRUCTIONS):
                missing.setdefault(kind, untimed)
        if env.get("valgrind"):
            for kind in _TIMED:
                missing.setdefault(kind, "under valgrind: --jaxperf-runtime-clock=instructions")
        if runtime_clock != "instructions":
            missing.setdefault(INSTRUCTIONS, f"--jaxperf-runtime-clock={runtime_clock}")
        return cls(missing)

    def has(self, kind: str) -> bool:
        return kind not in self.missing


@dataclass
class Tally:
    """What a save did to the baseline's entries."""

    updated: int = 0
    kept: int = 0
    added: int = 0
    # Passed tests of a run that measured no counts (jit off) whose entry the save neither
    # added nor changed, and why: an entry of 0 traces labelled "not measured" would pass
    # whatever the next run traces (counts are gated only where both sides measured them).
    unmeasured: int = 0
    why: str = ""
    # Entries removed (--jaxperf-prune: their tests did not run), by test id.
    pruned: list[str] = field(default_factory=list)
    # The schema of the file before, where the save converts it (an older one): "" if none.
    converted: str = ""

    @property
    def wrote_nothing(self) -> bool:
        """Whether the run measured no counts and the save changed no entry: the file is
        left as it was (not even written)."""
        return bool(self.unmeasured) and not (self.updated or self.added or self.pruned)

    def line(self, path: str) -> str:
        if self.wrote_nothing:
            return (
                f"jaxperf: --jaxperf-save wrote nothing for {self.unmeasured} test(s) to "
                f"{path}: {self.why}"
            )
        out = (
            f"jaxperf: baseline {path}: {self.updated} entries updated, {self.kept} kept, "
            f"{self.added} added"
        )
        if self.pruned:
            out += f", {len(self.pruned)} pruned ({', '.join(self.pruned)})"
        if self.unmeasured:
            out += f"; nothing written for {self.unmeasured} test(s): {self.why}"
        return out + self.conversion()

    def conversion(self) -> str:
        """What the save's line ends with where it converted a file of an older schema."""
        if not self.converted:
            return ""
        return (
            f"; converted from {self.converted} to {SCHEMA} (what no gate reads is now in the "
            "run file only: wall seconds beside gated CPU seconds, JAX helpers' seconds, "
            "runtime statistics but median and fastest round, first-call seconds)"
        )


@dataclass
class Resave:
    """The resave of one run into a baseline for `--jaxperf-save` (called by the store under
    the baseline's lock with the file as it is then); `tally` says what it did."""

    measured: Measured
    tolerances: Tolerances
    # What a refusal tells the user to do instead (`jaxperf merge` names its own -o).
    instead: str = "save into another file (--jaxperf-baseline) or delete the entry first"
    # Entries to remove (--jaxperf-prune: tests that did not run, see notrun.py).
    prune: frozenset[str] = frozenset()
    tally: Tally = field(default_factory=Tally)
    _memo: dict[int, tuple[dict[str, Any], dict[str, Any], frozenset[str]]] = field(
        default_factory=dict, repr=False
    )

    def __call__(self, old: RunRecord | None, run: RunRecord) -> RunRecord:
        self.tally, self._memo = Tally(), {}
        if any(k in run.environment for k in RUN_KEYS):  # how the run was made, not where
            env = {k: v for k, v in run.environment.items() if k not in RUN_KEYS}
            run = dataclasses.replace(run, environment=env)
        # A file of an older schema is written in the baseline's form: the tally's line says.
        self.tally.converted = old.schema if old is not None and old.schema != SCHEMA else ""
        clock = self.tolerances.compile_clock
        entries = _stored(old, clock if self.tally.converted else None)
        for nodeid in sorted(self.prune & set(entries)):
            del entries[nodeid]
            self.tally.pruned.append(nodeid)
        counted = self.measured.has(COUNTS)
        self.tally.why = self.measured.missing.get(COUNTS, "")
        for nodeid, rec in sorted(run.tests.items()):
            if rec.outcome != "passed":
                continue
            rec = baseline_form(rec, clock)
            if nodeid not in entries:
                if counted:
                    entries[nodeid] = (rec, run.environment)
                    self.tally.added += 1
                else:
                    self.tally.unmeasured += 1
                continue
            stored, stored_env = entries[nodeid]
            if stored is None:  # an unread entry of `old`
                stored = old.tests[nodeid] if old is not None else rec
            stored = baseline_form(stored, clock)
            resaved = self.entry(nodeid, stored, stored_env, rec, run.environment)
            if resaved is not None:
                entries[nodeid] = resaved
                self.tally.updated += 1
            elif not counted:
                self.tally.unmeasured += 1
        unchanged = len(old.tests) - self.tally.updated - len(self.tally.pruned) if old else 0
        self.tally.kept = unchanged
        if self.tally.wrote_nothing:
            # The file as it was, the very object: the store then writes nothing.
            return old if old is not None else RunRecord(dict(run.environment), {})
        environment = file_environment(
            [env for _, env in entries.values()],
            old.environment if old else None,
            run.environment,
        )
        if old is None or not isinstance(old.tests, Entries):
            tests = {k: placed(r, env, environment) for k, (r, env) in entries.items() if r}
            return RunRecord(environment=environment, tests=tests)
        same = old.environment == environment
        kept: dict[str, RecordedTest | None] = {}
        for k, (r, env) in entries.items():
            if r is None and not same:
                r = old.tests[k]
            kept[k] = None if r is None else placed(r, env, environment)
        return RunRecord(environment=environment, tests=old.tests.updated(kept))

    def entry(
        self,
        nodeid: str,
        stored: RecordedTest,
        stored_env: dict[str, Any],
        rec: RecordedTest,
        env: Mapping[str, Any],
    ) -> tuple[RecordedTest, dict[str, Any]] | None:
        """The entry of `nodeid` after this run and the environment it was measured in; None
        when that is the stored entry as it was. `stored`, `stored_env`: the entry and its
        environment in the file; `rec`, `env`: this run's."""
        run_env, differ = self._between(stored_env, env)
        new = {k for k in (*_STATIC, *_TIMED, INSTRUCTIONS) if self.measured.has(k)}
        kinds_new = new & _kinds(rec)
        kinds_old = _kinds(stored) - new | _unrun_kinds(stored, rec)
        as_run, as_stored = not kinds_old & differ, not kinds_new & differ
        if as_run or as_stored:
            out = self._build(stored, rec, new, differ)
            if as_stored:
                # Whatever else of the run differs, the values are the stored environment's.
                as_was = (out, _with_unmeasured(stored_env, stored_env, run_env, new))
                if _same(as_was, (stored, stored_env)):
                    return None
                if not as_run:
                    return as_was
            label = _unknown_dropped(run_env, stored_env, kinds_old)
            return out, _with_unmeasured(label, stored_env, run_env, new)
        # Neither environment holds all the values: keeping both would mislabel some.
        kind = next(k for k in _ORDER if k in kinds_old and k in differ)
        why = self.measured.missing.get(kind, "its benchmark was not run")
        elsewhere = ", ".join(_differences(kind, stored_env, run_env))
        raise SaveRefused(
            f"{nodeid}: its {kind} in the baseline was measured elsewhere ({elsewhere}) and "
            f"this run did not measure it ({why}); {self.instead}"
        )

    def _between(
        self, stored_env: dict[str, Any], env: Mapping[str, Any]
    ) -> tuple[dict[str, Any], frozenset[str]]:
        """The run's environment as an entry measured in `stored_env` takes it (`_as_stored`),
        and the kinds of value the two differ in: computed once per stored environment (most
        entries share their file's)."""
        found = self._memo.get(id(stored_env))
        if found is None or found[0] is not stored_env:
            run_env = _as_stored(env, stored_env, self.tolerances)
            differ = frozenset(k for k in _ORDER if _differences(k, stored_env, run_env))
            found = self._memo[id(stored_env)] = (stored_env, run_env, differ)
        return found[1], found[2]

    def _build(
        self, stored: RecordedTest, rec: RecordedTest, new: set[str], differ: frozenset[str]
    ) -> RecordedTest:
        """`rec` with the values of the kinds not in `new` taken from `stored`, and timings
        within tolerance of the stored ones kept as stored."""
        tol = self.tolerances
        clock = gate_clock(rec, tol.compile_clock)
        if clock != tol.compile_clock:  # the marker's: kept on the clock the test is gated on
            tol = dataclasses.replace(tol, compile_clock=clock)
        close = {k for k in (*_TIMED, INSTRUCTIONS) if k in new and k not in differ}
        if COUNTS not in new:
            out = dataclasses.replace(stored, marker=rec.marker)
        else:
            out = copy.copy(_counts(rec, stored, new, close, tol))
            out.functions = {
                key: _counts(fn, stored.functions.get(key), new, close, tol)
                for key, fn in rec.functions.items()
            }
            # JAX's own helpers (never gated): the stored block stands while they compiled as
            # much as before; their seconds alone moving rewrites nothing.
            # (Where the run measured its seconds in another environment, they are this
            # run's, like every other timing.)
            same_place = COMPILE not in new or COMPILE in close
            out.eager = (
                stored.eager
                if same_place and _same_work(rec.eager, stored.eager)
                else _counts(rec.eager, stored.eager, new, close, tol)
            )
        benchmarks = dict(stored.benchmarks)
        for label, entry in rec.benchmarks.items():
            benchmarks[label] = _benchmark(entry, stored.benchmarks.get(label), new, close, tol)
        out.benchmarks = benchmarks
        out.outcome, out.environment = "passed", None
        return out


Stored = dict[str, tuple[RecordedTest | None, dict[str, Any]]]


def _stored(old: RunRecord | None, convert: Clock | None) -> Stored:
    """The entries of `old`, each with the environment it was measured in; with `convert`
    (a file of an older schema: the save's compile clock) in a baseline's form
    (`baseline_form`); a file of this
    schema, which a save wrote, holds them so (an entry this run touches is put so anyway).
    None: an entry of a big baseline still unread (entries.py), measured in the file's
    environment; read only if this run touches it or the file's environment changes."""
    entries: Stored = {}
    if old is None:
        return entries
    tests = old.tests
    unread = tests.unread if isinstance(tests, Entries) else None
    for nodeid in tests:
        if unread is not None and unread(nodeid):
            entries[nodeid] = (None, old.environment)
        else:
            rec = tests[nodeid]
            form = baseline_form(rec, convert) if convert else rec
            entries[nodeid] = (form, old.environment_of(nodeid))
    return entries


def _counts(new: C, old: Counts | None, kinds: set[str], close: set[str], tol: Tolerances) -> C:
    """`new`, or a copy of it with the sizes and seconds it should keep from `old`. Its
    seconds (wall and CPU, each phase) are kept or replaced together, by what the gate reads
    of them: their sum on the gate's clock (a phase's wall seconds moving under load while
    the CPU seconds the gate reads stay put rewrites nothing)."""
    if old is None:
        return new
    changes = {}
    if SIZES not in kinds:
        changes.update({name: getattr(old, name) for name in SIZE_FIELDS})
    if COMPILE not in kinds or (COMPILE in close and compile_kept(old, new, tol)):
        changes.update(
            (name, before)
            for name in SECONDS_FIELDS
            if (before := getattr(old, name)) != getattr(new, name)
        )
    before, now = getattr(old, "instructions", None), getattr(new, "instructions", None)
    if before and now and now != before and _phases_close(before, now, tol):
        # The compile clock's counts move by tenths of a percent run to run: within the
        # gate's tolerance of the stored ones, those stand (the file is not rewritten).
        changes["instructions"] = before
    if not changes:
        return new
    out = copy.copy(new)
    for name, value in changes.items():
        setattr(out, name, value)
    return out


def _phases_close(before: Mapping[str, int], now: Mapping[str, int], tol: Tolerances) -> bool:
    """Whether each phase's count is within instructions_rtol of the stored one's."""
    return before.keys() == now.keys() and all(
        abs(now[k] - n) <= tol.instructions_rtol * n for k, n in before.items()
    )


def baseline_form(rec: RecordedTest, clock: Clock | None) -> RecordedTest:
    """`rec` as a baseline holds it: what the gate reads, without what only judges or
    explains this run (the run file keeps all of it). The re-measurement that confirmed a
    breach judged this run alone; the source lines of each function's equations move
    whenever code above them is edited (no gate reads them: they explain a breach in the
    run's own report); the wall seconds of a test gated on its CPU seconds (`clock`, the
    save's compile clock, or its marker's: see `wall_unread`); of JAX's helpers' block
    (`eager`) only its counts are read (the compile-storm diagnosis), and none where they
    are all 0; a benchmark's first-call seconds and op-by-op median are never gated (the
    test's compile seconds and the jitted runtime are), of its runtime statistics the rule
    reads the median, the fastest round and the CPU median, and of its rounds the rank test
    needs BASELINE_SAMPLES order statistics, not every round (`baseline_samples`). The
    record itself where it holds none of these (an entry of a baseline read back). `clock`
    None (`jaxperf resolve`, which knows no run's clock): the wall seconds stay as they are,
    each side's save having decided them."""
    benchmarks = {k: _benchmark_form(e) for k, e in rec.benchmarks.items()}
    slim = all(map(operator.is_, benchmarks.values(), rec.benchmarks.values()))
    eager = _eager_form(rec.eager)
    drop_wall = clock is not None and wall_unread(rec, clock) and _has_wall(rec)
    if (
        slim
        and eager is rec.eager
        and not drop_wall
        and rec.confirmation is None
        and not any(f.eqn_sources for f in rec.functions.values())
    ):
        return rec
    wall: dict[str, Any] = dict.fromkeys(WALL_FIELDS) if drop_wall else {}
    unsourced = {"eqn_sources": {}, **wall}
    functions = {
        k: _changed(f, unsourced) if f.eqn_sources or wall else f for k, f in rec.functions.items()
    }
    changes = {"confirmation": None, "functions": functions, "benchmarks": benchmarks}
    return _changed(rec, {**changes, "eager": eager, **wall})


_R = TypeVar("_R", RecordedTest, FunctionRecord)


def _changed(record: _R, changes: dict[str, Any]) -> _R:
    """dataclasses.replace(record, **changes) for these records (plain fields, no
    __post_init__) without calling __init__: a third of the time, and a save of a big suite
    makes one per test and per function."""
    new: _R = object.__new__(type(record))
    new.__dict__ = {**vars(record), **changes}
    return new


def gate_clock(rec: RecordedTest, clock: Clock) -> Clock:
    """The compile clock `rec`'s test is gated on: its marker's, else the run's `clock`."""
    marked = rec.marker.get("compile_clock")
    return marked if marked in CLOCKS else clock


def wall_unread(rec: RecordedTest, clock: Clock) -> bool:
    """Whether the gate reads none of `rec`'s wall seconds: its test is gated on another
    clock than wall (`clock`, or its marker's) and its CPU seconds, which that gate reads
    instead, were measured (where they were not, compare falls back to wall seconds)."""
    return (
        gate_clock(rec, clock) != "wall"
        and rec.total_cpu_s is not None
        and all(f.total_cpu_s is not None for f in rec.functions.values())
    )


def _has_wall(rec: RecordedTest) -> bool:
    return rec.total_s is not None or any(f.total_s is not None for f in rec.functions.values())


def _eager_form(eager: Counts) -> Counts:
    """JAX's helpers' block as a baseline holds it: its counts alone (`model.eager_to_json`
    leaves it out where they are all 0); the block itself where it already is."""
    if all(getattr(eager, name) is None for name in EAGER_OPTIONAL):
        return eager
    left_out: dict[str, Any] = dict.fromkeys(EAGER_OPTIONAL)
    return dataclasses.replace(eager, **left_out)


# The rounds of a benchmark a baseline keeps: the rank test (compare.significance) against a
# later run's (up to timing.MAX_SAMPLES) rounds needs their spread, not each of them. Forty
# order statistics of 100 rounds gave the runtime rule's verdict of all 100 in 20,000 of
# 20,000 synthetic pairs (20 kept: 20,000 less 6, each at the tolerance's edge) and on the
# example's real rounds (benchmarks/results/baseline_form-2026-11-28-amd-epyc.txt), and
# halve a moved benchmark's runtime line.
BASELINE_SAMPLES = 40


def baseline_samples(samples: tuple[float, ...]) -> tuple[float, ...]:
    """The rounds a baseline keeps of `samples`: sorted, and of more than BASELINE_SAMPLES
    the middle one of each of that many equal runs of them (the same again when applied to
    its own result)."""
    ordered = sorted(samples)
    n = len(ordered)
    if n <= BASELINE_SAMPLES:
        return tuple(ordered)
    runs = 2 * BASELINE_SAMPLES
    return tuple(ordered[(2 * i + 1) * n // runs] for i in range(BASELINE_SAMPLES))


def _benchmark_form(entry: Entry) -> Entry:
    """A benchmark entry as a baseline holds it (see `baseline_form`); the entry itself
    where it already is."""
    if not isinstance(entry, BenchmarkEntry):
        return entry
    runtime = entry.runtime
    if runtime is not None:
        samples = baseline_samples(runtime.samples_s)
        described = any(getattr(runtime, name) is not None for name in RUNTIME_OPTIONAL)
        if samples != runtime.samples_s or described:
            # What compare.runtime_verdict reads of a baseline: the median, the fastest round,
            # the CPU median and the rounds; the rest describes the run (its file has them).
            left_out: dict[str, Any] = dict.fromkeys(RUNTIME_OPTIONAL)
            runtime = dataclasses.replace(runtime, samples_s=samples, **left_out)
    unread = (*FIRST_CALL_FIELDS, "eager_median_s", "break_even_calls")
    if runtime is entry.runtime and all(getattr(entry, k) is None for k in unread):
        return entry
    return dataclasses.replace(
        entry,
        runtime=runtime,
        first_call_s=None,
        trace_s=None,
        lower_s=None,
        compile_s=None,
        eager_median_s=None,
        break_even_calls=None,
    )


def compile_kept(old: Counts, new: Counts, tol: Tolerances) -> bool:
    """Whether a save keeps `old`'s compile seconds for `new`'s: their sums on the gate's
    clock (wall where either side has no CPU seconds) inside the keep band."""
    clock = tol.compile_clock
    if clock == "cpu" and (old.total_cpu_s is None or new.total_cpu_s is None):
        clock = "wall"
    return seconds_close(compile_seconds(old, clock), compile_seconds(new, clock), tol)


def seconds_close(before: float | None, now: float | None, tol: Tolerances) -> bool:
    """Whether a save keeps the stored compile seconds `before` where it measured `now`:
    within the compile floor, or from KEEP_FASTER of them to the gate's tolerance above."""
    if before is None or now is None:
        return before is now
    if abs(now - before) <= tol.compile_floor:
        return True
    return before > 0 and KEEP_FASTER <= now / before <= 1 + tol.compile_rtol


def _benchmark(
    new: Entry, old: Entry | None, kinds: set[str], close: set[str], tol: Tolerances
) -> Entry:
    """One benchmark entry after the run: each group of values from `new` or kept."""
    if isinstance(new, ScalingEntry):
        timed = _SCALING_KIND.get(new.metric, COUNTS)
        if isinstance(old, ScalingEntry) and (
            timed not in kinds or (timed in close and _scaling_close(new, old, timed, tol))
        ):
            return old
        return new
    if not isinstance(old, BenchmarkEntry):
        return new
    if COUNTS not in kinds:  # nothing compiled (jit off): not even its flags were measured
        return old
    # (Its first-call seconds are in no baseline: baseline_form.)
    changes: dict[str, Any] = {}
    if SIZES not in kinds or new.metrics is None:
        changes["metrics"] = old.metrics
    if (
        RUNTIME not in kinds
        or new.runtime is None
        or (RUNTIME in close and _runtime_close(new, old, tol))
    ):
        changes["runtime"] = old.runtime
    if (
        INSTRUCTIONS not in kinds
        or new.instructions is None
        or (
            INSTRUCTIONS in close
            and old.instructions is not None
            and abs(new.instructions - old.instructions) <= tol.instructions_rtol * old.instructions
        )
    ):
        changes["instructions"] = old.instructions
    if new.device_peak_bytes is None:
        changes["device_peak_bytes"] = old.device_peak_bytes
    return dataclasses.replace(new, **changes)


def _runtime_close(new: BenchmarkEntry, old: BenchmarkEntry, tol: Tolerances) -> bool:
    """Whether the runtime gate finds neither a regression nor an improvement (machine load
    that its fastest round or CPU time shows for what it is counts as the same). (The
    op-by-op median, `eager=True`, which moved 30x under load where the gated runtime did
    not, is in no baseline: baseline_form.)"""
    if old.runtime is None:
        return False
    verdict = Verdict()
    runtime_verdict(verdict, "", new, old, Gating(tol=tol))
    return not (verdict.breaches or verdict.improvements)


_SCALING_KIND = {"compile_s": COMPILE, "runtime_s": RUNTIME}


def _scaling_close(new: ScalingEntry, old: ScalingEntry, kind: str, tol: Tolerances) -> bool:
    if (new.metric, new.sizes, new.max_exponent) != (old.metric, old.sizes, old.max_exponent):
        return False
    if kind == COMPILE:
        return all(seconds_close(b, n, tol) for b, n in zip(old.values, new.values))
    bound = 1 + tol.runtime_rtol
    return all(b > 0 and n > 0 and 1 / bound <= n / b <= bound
               for b, n in zip(old.values, new.values))  # fmt: skip


def _same_work(new: Counts, old: Counts) -> bool:
    """Whether two blocks counted the same traces, lowerings, compiles and program sizes."""
    return all(getattr(new, n) == getattr(old, n) for n in (*COUNT_FIELDS, *SIZE_FIELDS))


def _kinds(rec: RecordedTest) -> set[str]:
    """The kinds of value the entry holds."""
    kinds = {*_STATIC, COMPILE}
    for entry in rec.benchmarks.values():
        if isinstance(entry, ScalingEntry):
            kinds.add(_SCALING_KIND.get(entry.metric, COUNTS))
        else:
            if entry.runtime is not None:
                kinds.add(RUNTIME)
            if entry.instructions is not None:
                kinds.add(INSTRUCTIONS)
    return kinds


def _unrun_kinds(stored: RecordedTest, rec: RecordedTest) -> set[str]:
    """The kinds held by benchmarks of `stored` that the run did not run: they are kept."""
    unrun = RecordedTest(benchmarks={
        k: e for k, e in stored.benchmarks.items() if k not in rec.benchmarks
    })  # fmt: skip
    return _kinds(unrun) - {*_STATIC, COMPILE} if unrun.benchmarks else set()


def _differences(kind: str, before: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """How two environments differ in what values of `kind` depend on."""
    return differences(_KEYS[kind], before, now)


def _as_stored(
    env: Mapping[str, Any], stored: Mapping[str, Any], tol: Tolerances
) -> dict[str, Any]:
    """The run's environment; the stored one where they differ only in this machine's
    reference compile by less than the compile tolerance (one more sample of the same
    machine: rewriting it would change the file and move nothing) or where the run measured
    none (--jaxperf-no-reference-compile: the stored one is still this machine's)."""
    measured = {k for k in {*env, *stored} if k.startswith("reference_")} | {"not_measured"}
    if any(env.get(k) != stored.get(k) for k in {*env, *stored} - measured):
        return dict(env)
    if REFERENCE_KEY in env and not stored_reference_agrees(stored, env):
        return dict(env)
    out = {k: v for k, v in stored.items() if k != "not_measured"}
    if "not_measured" in env:
        out["not_measured"] = env["not_measured"]
    return out


def _unknown_dropped(
    run_env: dict[str, Any], stored_env: Mapping[str, Any], kept: set[str]
) -> dict[str, Any]:
    """`run_env` without the keys a file older than them lacks where a value it keeps depends
    on them: that value's setting is unknown, and labelling it with this run's (an xdist
    run's `xdist_workers`) would make later runs skip or misjudge it."""
    unknown = {k for k in OPTIONAL_KEYS - stored_env.keys() if k in run_env}
    drop = {k for k in unknown if any(k in _KEYS[kind] for kind in kept)}
    return {k: v for k, v in run_env.items() if k not in drop} if drop else run_env


def _with_unmeasured(
    base: Mapping[str, Any],
    stored_env: Mapping[str, Any],
    run_env: Mapping[str, Any],
    new: set[str],
) -> dict[str, Any]:
    """`base` with the not-measured metrics of the values the entry holds: the stored ones
    for what it kept, this run's for what it measured."""
    out = {k: v for k, v in base.items() if k != "not_measured"}
    skipped = {}
    for env, from_run in ((stored_env, False), (run_env, True)):
        for metric, why in unmeasured(env).items():
            if (_KIND_OF_UNMEASURED.get(metric, COUNTS) in new) == from_run:
                skipped[metric] = why
    if skipped:
        out["not_measured"] = skipped
    return out


Placed = tuple[RecordedTest, Mapping[str, Any]]  # an entry and where it was measured


def _same(a: Placed, b: Placed) -> bool:
    """Whether two entries would be written alike (times as rounded in the file): equal
    records are (the usual case of an unchanged re-save, found without writing either)."""
    if a[1] != b[1]:
        return False
    first, second = (_bare(rec) for rec in (a[0], b[0]))
    return first == second or entry_text(first) == entry_text(second)


def _bare(rec: RecordedTest) -> RecordedTest:
    """`rec` without its own environment (compared apart)."""
    return rec if rec.environment is None else dataclasses.replace(rec, environment=None)


def file_environment(
    entries: list[dict[str, Any]], stored: dict[str, Any] | None, run: Mapping[str, Any]
) -> dict[str, Any]:
    """The environment most entries were measured in (the fewest entries then carry one of
    their own); on a tie one where every metric was measured, this run's, the stored file's."""
    if not entries:
        return dict(stored if stored is not None else run)
    # Most entries share their file's environment object: each object is encoded once.
    memo: dict[int, str] = {}
    counts = Counter(memo.get(id(env)) or memo.setdefault(id(env), _key(env)) for env in entries)
    preferred = [_key(run)] + ([_key(stored)] if stored is not None else [])

    def rank(key: str) -> tuple[int, bool, int]:
        order = preferred.index(key) if key in preferred else len(preferred)
        return (-counts[key], '"not_measured"' in key, order)

    best: dict[str, Any] = json.loads(min(counts, key=rank))
    return best


def _key(env: Mapping[str, Any]) -> str:
    return json.dumps(env, sort_keys=True)
