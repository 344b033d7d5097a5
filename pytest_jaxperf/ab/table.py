"""The table `jaxperf ab` shows: the run records of both trees, round by round -> one row per
test and metric, with its status.

- Counts (traces, compiles), program sizes (jaxpr equations and StableHLO ops of the test's
  functions, judged per function and in total, new functions included) and program
  metrics come from the first round and follow the plugin's own rules with the base run as
  the baseline (`compare.evaluate`: functions matched by name and site, retrace causes, gone
  functions): any count increase fails, a
  program size or metric fails above `static_rtol`. They do not vary between runs; a count
  that did vary is noted.
- Compile seconds (process CPU seconds where measured, per test) and steady-state runtime (per
  benchmark) are head/base ratios over all rounds with their intervals (`stats`): a slowdown
  fails when the whole interval lies above its threshold (compile time: and the growth is
  above the plugin's compile floor, so that a 10 ms compile does not fail over 20 ms). From
  one round they are shown and not judged (`1 round`): its interval cannot hold the
  difference between two processes that the load makes.
- Runtime per call is read on one of two clocks (`runtime_clock`): each run's median CPU
  seconds per call where every run was confined to one CPU (from two rounds), else the wall
  seconds of every timed round. With `--runtime-clock instructions` the runs count
  instructions per call under valgrind instead (deterministic: one round is enough), and a
  benchmark's row is the exact head/base ratio of its counts.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .. import compare
from ..config import (
    DEFAULT_COMPILE_FLOOR,
    DEFAULT_STATIC_RTOL,
    MarkerLimits,
    RuntimeClock,
    Tolerances,
)
from ..model import (
    SIZE_WORDS,
    STATIC_METRICS,
    BenchmarkEntry,
    RecordedTest,
    RunRecord,
    RuntimeStats,
)
from ..report import wording
from . import stats

RUNTIME = compare.RUNTIME
INSTRUCTIONS = compare.INSTRUCTIONS
COMPILE_TIME = compare.COMPILE_TIME
COUNTS = ("traces", "compiles")
# Why compare.evaluate leaves timings to us (Gating.between's timed_elsewhere).
_TIMED_HERE = "timed by jaxperf ab"

# A compile-time change beyond the threshold but within the plugin's compile floor (seconds).
UNDER_FLOOR = "ok (under floor)"
# A timing measured in one round only: shown, never judged (no spread between processes).
ONE_ROUND = "1 round"


def runtime_clock(on_cpus: frozenset[int] | None, rounds: int) -> RuntimeClock:
    """What runtime rows compare: "cpu" (each run's median CPU seconds per call) when every run
    was confined to one CPU and there are two rounds or more, else "wall" (the wall seconds of
    every timed round).

    On one CPU a process's CPU seconds are the time it computed, while its wall seconds also
    count the time it waited for that CPU: with a load bound to the same CPU
    (benchmarks/ab_power.py) wall medians swung 2-3x from one run to the next and hid
    slowdowns, while CPU seconds stayed within 1.9x of their tree's median. A run keeps only
    the median of its CPU seconds, one value, so an interval needs two rounds; with one, or
    with runs not confined to one CPU (threads at once, whose CPU seconds add up past the wall
    clock), wall seconds."""
    return "cpu" if on_cpus is not None and len(on_cpus) == 1 and rounds >= 2 else "wall"


@dataclass(frozen=True)
class Row:
    """One line of the table: a test's metric (for runtime and program metrics, of one of its
    benchmarks) in both trees."""

    test: str
    metric: str  # "traces", "compiles", COMPILE_TIME, RUNTIME, INSTRUCTIONS or a program metric
    status: str  # stats.RatioStatus, a compare.Status word, or why there is none
    base: float | None = None
    head: float | None = None
    ratio: stats.Ratio | None = None
    benchmark: str | None = None
    causes: tuple[str, ...] = ()
    clock: RuntimeClock | None = None  # runtime rows: the clock the ratio was read on

    @property
    def regressed(self) -> bool:
        return self.status == "REGRESSED"


@dataclass(frozen=True)
class Thresholds:
    runtime: float
    compile: float
    compile_floor: float = DEFAULT_COMPILE_FLOOR
    static_rtol: float = DEFAULT_STATIC_RTOL


@dataclass
class Comparison:
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[Row]:
        return [r for r in self.rows if r.regressed]

    @property
    def improvements(self) -> list[Row]:
        return [r for r in self.rows if r.status == "improved"]

    def regressed_tests(self) -> dict[str, list[Row]]:
        """The tests with a REGRESSED row, each with those rows, in table order: what the
        tally counts, as the plugin's gate counts a test with any regressed metric once."""
        return _by_test(self.regressions)

    def improved_tests(self) -> dict[str, list[Row]]:
        """The tests with an improved row and no REGRESSED one (the gate's `improved`
        status), each with its improved rows."""
        regressed = self.regressed_tests()
        return {t: rows for t, rows in _by_test(self.improvements).items() if t not in regressed}


def judged_ok(row: Row) -> bool:
    """A row judged `ok` (or `ok (under floor)`), which the reports put after the rows that
    changed or could not be judged: the same in both trees, or within its threshold (a
    program size judged per retrace, a timing within its interval)."""
    return row.status in ("ok", UNDER_FLOOR)


def _by_test(rows: Iterable[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for row in rows:
        out.setdefault(row.test, []).append(row)
    return out


def compare_rounds(
    rounds: Sequence[tuple[RunRecord, RunRecord]],
    thresholds: Thresholds,
    confidence: float = stats.CONFIDENCE,
    clock: RuntimeClock = "wall",
) -> Comparison:
    """The comparison of `rounds`, each (base report, head report) of one round; runtime rows
    on `clock` (see runtime_clock) where every run measured it."""
    out = Comparison()
    if not rounds:
        return out
    first_base, first_head = rounds[0]
    for nodeid in sorted(set(first_base.tests) | set(first_head.tests)):
        base, head = first_base.tests.get(nodeid), first_head.tests.get(nodeid)
        if head is None:
            out.rows.append(Row(nodeid, "test", "not in head"))
            continue
        if base is None:
            out.rows.append(Row(nodeid, "test", "new"))
            continue
        failed = _failed(nodeid, rounds)
        if failed:
            out.rows.append(Row(nodeid, "test", failed))
            continue
        gating = compare.Gating.between(
            first_base.environment_of(nodeid),
            first_head.environment_of(nodeid),
            Tolerances(static_rtol=thresholds.static_rtol),
            timing_mode="off",
            timed_elsewhere=_TIMED_HERE,
        )
        rows, notes = _exact(nodeid, base, head, gating, thresholds.static_rtol)
        out.rows += rows
        out.notes += notes
        out.notes += _varying_counts(nodeid, rounds)
        complete = [(b.tests[nodeid], h.tests[nodeid]) for b, h in rounds]
        timed = _compile_time(nodeid, complete, thresholds, confidence)
        runtimes = (
            _instruction_counts(nodeid, complete, thresholds)
            if clock == "instructions"
            else _runtimes(nodeid, complete, thresholds, confidence, clock)
        )
        timed += runtimes
        out.rows += timed
        out.notes += [_left_out_line(row) for row in timed if row.ratio and row.ratio.left_out]
        out.notes += [
            f"{nodeid} {RUNTIME} {row.benchmark}: wall seconds per call, not CPU seconds: fewer "
            "than two rounds have its CPU seconds from both trees (they are read on the CPU "
            "backend)"
            for row in runtimes
            if clock == "cpu" and row.clock == "wall"
        ]
    if any(r.metric in (RUNTIME, COMPILE_TIME) and r.status == ONE_ROUND for r in out.rows):
        out.notes.append(
            "timings measured in one round are shown, not judged: one round cannot see how "
            "much its two processes differ for reasons other than the code (load); "
            "--rounds 2 or more judges them"
        )
    return out


def _failed(nodeid: str, rounds: Sequence[tuple[RunRecord, RunRecord]]) -> str | None:
    """ "failed in head", "failed in base and head (rounds 2, 3 of 3)": where the test did
    not pass (or was not recorded) in any round; None when it passed in every run. A test
    that failed once is not compared at all: its counts and times in the other rounds come
    from fewer processes than the table would claim."""
    where: dict[str, list[int]] = {"base": [], "head": []}
    for number, pair in enumerate(rounds, 1):
        for side, run in zip(("base", "head"), pair):
            rec = run.tests.get(nodeid)
            if rec is None or not rec.comparable:
                where[side].append(number)
    sides = [side for side, numbers in where.items() if numbers]
    if not sides:
        return None
    text = f"failed in {' and '.join(sides)}"
    numbers = sorted({n for side in sides for n in where[side]})
    if len(rounds) > 1:
        label = "round" if len(numbers) == 1 else "rounds"
        text += f" ({label} {', '.join(map(str, numbers))} of {len(rounds)})"
    return text


def _left_out_line(row: Row) -> str:
    r = row.ratio
    assert r is not None
    what = f"{row.metric} {row.benchmark}" if row.benchmark else row.metric
    n = r.left_out
    return (
        f"{row.test} {what}: {n} of {n + r.rounds} rounds left out: a process in "
        f"{'each' if n > 1 else 'it'} ran more than {stats.OUTLIER:g}x away from the median of "
        "its tree's processes (what ran beside it, not the code)"
    )


def _exact(
    nodeid: str, base: RecordedTest, head: RecordedTest, gating: compare.Gating, rtol: float
) -> tuple[list[Row], list[str]]:
    """Counts and program metrics, by the plugin's rules, the base run as the baseline; and
    the plugin's notes on what it left out of them (a metric a run could not measure, program
    metrics of two different JAX builds), the timings being ab's own."""
    judged = compare.evaluate(head, base, MarkerLimits(), gating)
    breaches = [b for b in judged.breaches if b.against == "baseline" and b.gated]
    notes = [f"{nodeid}: {n}" for n in judged.notes if _TIMED_HERE not in n]
    rows = []
    for metric in COUNTS:
        mine = [b for b in breaches if b.metric == metric]
        before, now = getattr(base, metric), getattr(head, metric)
        status = "REGRESSED" if mine else "improved" if now < before else "ok"
        if metric in gating.skipped:  # never an "ok" for what was not measured
            status = "not measured"
        rows.append(Row(nodeid, metric, status, before, now, causes=_causes(mine)))
    gone = tuple(wording.gone_line(fn, baseline="base") for fn in judged.gone)
    if gone:  # shown under the test's counts; neither better nor worse
        rows[-1] = dataclasses.replace(rows[-1], causes=rows[-1].causes + gone)
    for field_name, metric in SIZE_WORDS.items():
        # The test's functions summed; shown where they differ, judged per function and in
        # total (new functions included), as the plugin judges them.
        before_n, now_n = getattr(base, field_name), getattr(head, field_name)
        if before_n is None or now_n is None or before_n == now_n:
            continue
        if field_name == "trace_eqns" and base.lowerings and head.lowerings:
            continue  # judged through the lowered programs' equations, as the plugin does
        mine = [b for b in breaches if b.metric == metric]
        status = _static_status(bool(mine), now_n, before_n, rtol)
        rows.append(Row(nodeid, metric, status, before_n, now_n, causes=_causes(mine)))
    base_benchmarks = dict(base.benchmark_entries())
    for label, bench in head.benchmark_entries():
        old = base_benchmarks.get(label)
        if old is None:
            continue
        for metric in STATIC_METRICS:
            now_v, before_v = bench.program_metric(metric), old.program_metric(metric)
            if now_v is None or before_v is None or now_v == before_v:
                continue
            regressed = any(b.metric == metric and b.benchmark == label for b in breaches)
            status = _static_status(regressed, now_v, before_v, rtol)
            rows.append(Row(nodeid, metric, status, before_v, now_v, benchmark=label))
    return rows, notes


def _static_status(regressed: bool, now: float, before: float, rtol: float) -> str:
    """A deterministic metric's row: the plugin's breach, or better beyond `rtol`."""
    if regressed:
        return "REGRESSED"
    return "improved" if now * (1 + rtol) < before else "ok"


def _causes(breaches: Iterable[compare.Breach]) -> tuple[str, ...]:
    lines = []
    for b in breaches:
        where = "all functions" if b.function is None else b.function.key
        detail = f" [{b.detail}]" if b.detail else ""
        lines.append(f"{b.metric} of {where}: base {b.reference:,g} -> head {b.current:,g}{detail}")
        lines += [f"  cause: {r}" for r in b.reasons]
    return tuple(lines)


def _varying_counts(nodeid: str, rounds: Sequence[tuple[RunRecord, RunRecord]]) -> list[str]:
    notes = []
    for side, index in (("base", 0), ("head", 1)):
        seen = {
            (rec.traces, rec.compiles)
            for pair in rounds
            if (rec := pair[index].tests.get(nodeid)) is not None
        }
        if len(seen) > 1:
            shown = ", ".join(f"{t}/{c}" for t, c in sorted(seen))
            notes.append(
                f"{nodeid}: traces/compiles differ between the {side} runs ({shown}): they "
                "depend on something other than the code (test order, a cache, the clock); "
                "the first round's are compared"
            )
    return notes


def _compile_time(
    nodeid: str,
    records: Sequence[tuple[RecordedTest, RecordedTest]],
    thresholds: Thresholds,
    confidence: float,
) -> list[Row]:
    values = [
        (compare.compile_seconds(b, "cpu"), compare.compile_seconds(h, "cpu")) for b, h in records
    ]
    if not values or not any(b and h for b, h in values):
        return []
    r = stats.ratio([((b,), (h,)) for b, h in values if b and h], confidence=confidence)
    if r is None:
        first_b, first_h = values[0]
        return [Row(nodeid, COMPILE_TIME, ONE_ROUND, first_b, first_h)]
    status: str = stats.ratio_status(r, thresholds.compile)
    if status in ("REGRESSED", "improved", "unclear") and (
        abs(r.head - r.base) <= thresholds.compile_floor
    ):
        status = UNDER_FLOOR
    return [Row(nodeid, COMPILE_TIME, status, r.base, r.head, r)]


def _runtimes(
    nodeid: str,
    records: Sequence[tuple[RecordedTest, RecordedTest]],
    thresholds: Thresholds,
    confidence: float,
    clock: RuntimeClock,
) -> list[Row]:
    rows = []
    labels = sorted({label for _, h in records for label, _ in h.benchmark_entries()} |
                    {label for b, _ in records for label, _ in b.benchmark_entries()})  # fmt: skip
    for label in labels:
        measured = []
        for b, h in records:
            old, new = _runtime(b, label), _runtime(h, label)
            if old is not None and new is not None:
                measured.append((old, new))
        cpu = [((b.cpu_median_s,), (h.cpu_median_s,)) for b, h in measured
               if b.cpu_median_s and h.cpu_median_s]  # fmt: skip
        # One value per run: an interval on the CPU clock needs two rounds of it.
        used: RuntimeClock = "cpu" if clock == "cpu" and len(cpu) == len(measured) >= 2 else "wall"
        pairs = cpu if used == "cpu" else [(_samples(b), _samples(h)) for b, h in measured]
        if not pairs:
            in_base = any(_runtime(b, label) is not None for b, _ in records)
            in_head = any(_runtime(h, label) is not None for _, h in records)
            if in_base != in_head:
                rows.append(
                    Row(nodeid, RUNTIME, "new" if in_head else "not in head", benchmark=label)
                )
            continue
        if len(pairs) == 1:
            # One round's interval holds only the noise within its two processes, not what
            # differs between them (load that came and went): HEAD against HEAD under load
            # read 1.56x [1.49, 3.44]. Shown, not judged, as compile time is.
            old, new = measured[0]
            rows.append(Row(nodeid, RUNTIME, ONE_ROUND, old.median_s, new.median_s,
                            benchmark=label, clock=used))  # fmt: skip
            continue
        r = stats.ratio(pairs, confidence=confidence)
        if r is None:
            rows.append(Row(nodeid, RUNTIME, "too few samples", benchmark=label, clock=used))
            continue
        status = stats.ratio_status(r, thresholds.runtime)
        rows.append(Row(nodeid, RUNTIME, status, r.base, r.head, r, benchmark=label, clock=used))
    return rows


def _instruction_counts(
    nodeid: str, records: Sequence[tuple[RecordedTest, RecordedTest]], thresholds: Thresholds
) -> list[Row]:
    """Per benchmark, head/base of instructions per call (the median over rounds, which
    agree within a fraction of a percent): exact, so the threshold is the whole status."""
    rows = []
    labels = sorted({label for b, h in records for rec in (b, h)
                     for label, _ in rec.benchmark_entries()})  # fmt: skip
    for label in labels:
        base = [n for b, _ in records if (n := _count(b, label)) is not None]
        head = [n for _, h in records if (n := _count(h, label)) is not None]
        if not base or not head:
            if bool(base) != bool(head):
                status = "new" if head else "not in head"
                rows.append(Row(nodeid, INSTRUCTIONS, status, benchmark=label))
            continue
        before, now = statistics.median(base), statistics.median(head)
        estimate = now / before
        r = stats.Ratio(estimate, estimate, estimate, len(records), base=before, head=now)
        rows.append(Row(nodeid, INSTRUCTIONS, stats.ratio_status(r, thresholds.runtime), before,
                        now, r, benchmark=label, clock="instructions"))  # fmt: skip
    return rows


def _count(rec: RecordedTest, label: str) -> int | None:
    entry = rec.benchmarks.get(label)
    return entry.instructions if isinstance(entry, BenchmarkEntry) else None


def _runtime(rec: RecordedTest, label: str) -> RuntimeStats | None:
    entry = rec.benchmarks.get(label)
    if not isinstance(entry, BenchmarkEntry):
        return None
    return entry.runtime


def _samples(runtime: RuntimeStats) -> tuple[float, ...]:
    return runtime.samples_s or (runtime.median_s,)
