"""Gating rules: a test's record, its baseline entry and its limits -> a Verdict (pure)."""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from . import causes, diagnose
from .config import (
    NO_LIMITS,
    Clock,
    Limit,
    MarkerLimits,
    TimingMode,
    Tolerances,
    did_you_mean,
)
from .environment import (
    COMPILE,
    MACHINE_KEYS,
    SIZES,
    UNDER_VALGRIND,
    UNDER_XDIST,
    Compatible,
    MachineScale,
    differences,
    instruction_differences,
    machine_scale,
    other_differences,
    reference_missing,
    static_differences,
    timing_differences,
    too_noisy,
    under_xdist,
    unmeasured,
)
from .environment import INSTRUCTIONS as INSTRUCTION_KIND
from .environment import RUNTIME as RUNTIME_KIND
from .matching import match_functions
from .model import (
    PROGRAM_SIZE,
    SIZE_WORDS,
    STATIC_METRICS,
    BenchmarkEntry,
    Counts,
    FunctionRecord,
    RecordedTest,
    RuntimeStats,
    function_from_json,
    function_to_json,
    short_name,
)
from .notgated import Note, code_of, strict_lines

COMPILE_TIME = "compile time"
# Said after the machines' differences when the baseline has no reference compile.
RESCALE_HINT = (
    "; the baseline has no reference compile: re-saving it (--jaxperf-save) gates compile "
    "time across machines"
)
# Said after the differences where a plugin's rule decided two environments do not gate a
# kind of value that the built-in rules would gate.
BY_HOOK = "as a pytest_jaxperf_compatible hook decides"
# What each size is summed over: a retrace or recompile is compared per one of these.
_SIZE_UNIT = {
    "jaxpr_eqns": "lowerings", "hlo_ops": "lowerings", "xla_ops": "compiles", "trace_eqns": "traces"
}  # fmt: skip


# A test's verdict, in the words every report shows (terminal, markdown, HTML, JUnit and
# `jaxperf compare`); those that fail the test in capitals. From most to least pressing:
# a marker limit naming nothing the test ran, a marker limit exceeded, a gated breach of
# the baseline, breaches shown but not gated (saving, --jaxperf-timing=report), a user
# function the baseline has and the test no longer traced (neutral: removed, or no longer
# jitted), better than the baseline, within it, not in it. "NOT GATED": a metric left out of
# the verdict for a reason the user made fail (--jaxperf-strict, see `notgated`).
Status = Literal[
    "BAD LIMIT", "OVER LIMIT", "REGRESSED", "NOT GATED", "reported only", "function gone",
    "improved", "ok", "new",
]  # fmt: skip
STATUSES: tuple[Status, ...] = get_args(Status)


@dataclass(frozen=True)
class Breach:
    """One metric over its baseline or limit."""

    metric: str  # "traces", "compiles" or COMPILE_TIME
    function: FunctionRecord | None  # None: the test total
    reference: float  # the baseline value, or the limit
    current: float
    against: str  # "baseline" or "limit"
    reasons: tuple[str, ...] = ()
    gated: bool = True
    detail: str = ""
    benchmark: str | None = None  # the jaxperf.benchmark label, for program/runtime metrics
    # Of a breach of jaxpr equations: the source lines that made most of them (`diagnose`).
    where: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Plain JSON values (a pytest-xdist worker sends its verdicts to the controller)."""
        out = {k: getattr(self, k) for k in ("metric", "reference", "current", "against",
                                             "gated", "detail", "benchmark")}  # fmt: skip
        out["reasons"] = list(self.reasons)
        if self.where:  # written where found: a verdict read from an older file has none
            out["where"] = list(self.where)
        out["function"] = function_to_json(self.function) if self.function is not None else None
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Breach:
        fn = function_from_json(d["function"], "function") if d.get("function") else None
        return cls(
            metric=d["metric"], function=fn, reference=d["reference"], current=d["current"],
            against=d["against"], reasons=tuple(d["reasons"]), gated=d["gated"],
            detail=d["detail"], benchmark=d["benchmark"], where=tuple(d.get("where", ())),
        )  # fmt: skip


@dataclass
class Verdict:
    status: Status = "ok"
    breaches: list[Breach] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    # Why something was not gated: `notgated.Note`s (a plain str read from an old run file).
    notes: list[str] = field(default_factory=list)
    # How something was gated, where the user may want to know (shown, not "not gated").
    info: list[str] = field(default_factory=list)
    # Baseline functions this test no longer traced: neither better nor worse, but shown.
    gone: list[FunctionRecord] = field(default_factory=list)
    # Marker limits naming a function or benchmark the test did not have: each fails it.
    errors: list[str] = field(default_factory=list)
    # Notes whose code --jaxperf-strict makes fail, one line each (see `apply_strict`).
    strict: list[str] = field(default_factory=list)
    # Where the baseline differs by a jax/jaxlib upgrade alone: what it changed, not gated,
    # as (what, baseline value, value now): sizes per function, then compile seconds.
    upgrade: list[tuple[str, float, float]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.errors) or bool(self.strict) or any(b.gated for b in self.breaches)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "breaches": [b.to_json() for b in self.breaches],
            "improvements": list(self.improvements),
            "notes": list(map(str, self.notes)),
            "codes": [code_of(n) for n in self.notes],
            "info": list(self.info),
            "gone": [function_to_json(f) for f in self.gone],
            "errors": list(self.errors),
            "strict": list(self.strict),
            "upgrade": [list(u) for u in self.upgrade],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Verdict:
        return cls(
            status=_parse_status(d["status"]),
            breaches=[Breach.from_json(b) for b in d["breaches"]],
            improvements=list(d["improvements"]),
            notes=[
                n if c is None else Note(n, c)
                for n, c in zip(d["notes"], d.get("codes", [None] * len(d["notes"])))
            ],
            info=list(d.get("info", [])),
            gone=[function_from_json(f, "gone") for f in d.get("gone", [])],
            errors=list(d.get("errors", [])),
            strict=list(d.get("strict", [])),
            upgrade=[(str(w), float(b), float(n)) for w, b, n in d.get("upgrade", [])],
        )


def _parse_status(value: Any) -> Status:
    for status in STATUSES:
        if value == status:
            return status
    raise ValueError(f"unknown verdict status {value!r}; expected one of {', '.join(STATUSES)}")


def _limit_for(
    limit: Limit | None, functions: Mapping[str, FunctionRecord]
) -> list[tuple[str | None, list[FunctionRecord], float]]:
    """(the dict key or None for a whole-test limit, the functions it covers, the limit) for
    each limit that applies. A key names a function by its qualified name, its last part or
    its full key ("name at path:line"); a key naming no function covers none."""
    if limit is None:
        return []
    if not isinstance(limit, Mapping):
        return [(None, list(functions.values()), float(limit))]
    # By qualified name, key, or the name alone: {"__call__": 1} covers every __call__.
    return [
        (name, [f for f in functions.values() if name in (f.name, f.key, short_name(f.name))],
         float(value))
        for name, value in limit.items()
    ]  # fmt: skip


# Names listed when a marker limit names something the test did not have.
MAX_LISTED = 10


def unknown_name(argument: str, key: str, kind: str, known: Iterable[str]) -> str:
    """One line: a marker limit's dict key names nothing the test had; the close match, what
    it had, and what to name instead. `kind` is "function", "benchmark" or "function or
    benchmark"."""
    known = sorted(set(known))
    if kind.startswith("function"):
        did, listed, fix = "trace", "traced", "a traced function's name or its 'name at path:line'"
        if kind != "function":
            did, listed = "trace or run", "traced and benchmarks"
            fix += " or a benchmark label"
        # A key may be a name or a full key: suggest from both.
        pool = sorted({k.split(" at ", 1)[0] for k in known} | set(known))
    else:
        did, listed, fix = "run", "benchmarks", "the label of one of this test's benchmarks"
        pool = known
    hint = did_you_mean(key, pool)
    shown = ", ".join(known[:MAX_LISTED]) or "none"
    if len(known) > MAX_LISTED:
        shown += f" and {len(known) - MAX_LISTED} more"
    return (
        f"@pytest.mark.jaxperf({argument}=...) names {key!r}, a {kind} this test did not "
        f"{did}{hint}; {listed}: {shown}. Use {fix}"
    )


def _metric(rec: FunctionRecord | RecordedTest, metric: str, clock: Clock = "wall") -> float | None:
    return compile_seconds(rec, clock) if metric == COMPILE_TIME else float(getattr(rec, metric))


def compile_seconds(rec: Counts, clock: Clock) -> float | None:
    """Trace + lower + compile seconds on `clock`: process CPU seconds where they were
    measured and asked for, else wall seconds; None where those are not stored (a baseline
    saved on the CPU clock holds no wall seconds: storage/resave.py, `baseline_form`)."""
    cpu = rec.total_cpu_s
    # The instructions clock's seconds (under valgrind) are never gated: read as CPU's.
    return cpu if clock != "wall" and cpu is not None else rec.total_s


@dataclass(frozen=True)
class Gating:
    """How to gate: the tolerances (the marker's over these, per test) and what the two
    environments and the run allow to be gated against the baseline. Built by `between`,
    the one place environment differences become gating (the session, `jaxperf compare` and
    `jaxperf ab` alike)."""

    tol: Tolerances = field(default_factory=Tolerances)
    # How the environment differs from the baseline's: timings are gated only when there is
    # no difference, program metrics only when there is no static one.
    timing_differences: Sequence[str] = ()
    static_differences: Sequence[str] = ()
    # The runtime's own, where a plugin's rule set them apart from the compile seconds'
    # (None: the timing_differences, as the built-in rules have it).
    runtime_differences: Sequence[str] | None = None
    timing_mode: TimingMode = "gate"  # "report": runtime shown, never failing
    gate_baseline: bool = True  # False while saving: baseline breaches shown, not failing
    # {metric: why} the self-check could not vouch for: shown, never gated.
    not_measured: Mapping[str, str] = field(default_factory=dict)
    # Where the machine is the only timing difference: compile CPU seconds are compared
    # scaled by the two machines' reference compiles.
    machine: MachineScale | None = None
    # How the environment differs in what instructions per call depend on.
    instruction_differences: Sequence[str] = ()
    # Why compile seconds are not scaled although the machine is the only difference.
    machine_left_out: str | None = None
    # How the versions of jax and jaxlib (and the codegen flags) differ, where nothing else
    # that program metrics or compile seconds depend on does: an upgrade, whose changes the
    # verdict lists (`Verdict.upgrade`) though it gates none of them.
    upgrade: Sequence[str] = ()
    # Where compile time is not compared across machines only for want of the baseline's
    # reference compile: what to do about it.
    rescale_hint: str = ""

    @classmethod
    def between(
        cls,
        baseline: Mapping[str, Any],
        current: Mapping[str, Any],
        tolerances: Tolerances,
        *,
        timing_mode: TimingMode = "gate",
        gate_baseline: bool = True,
        timed_elsewhere: str | None = None,
        compatible: Compatible | None = None,
    ) -> Gating:
        """Gating of a record measured in `current` against a baseline entry measured in
        `baseline` (environment blocks); `timed_elsewhere` says why a caller that times on
        its own (`jaxperf ab`) leaves timings out; `compatible`, a plugin's rule (the
        session's `pytest_jaxperf_compatible` hook) over the built-in ones, per kind."""
        # Every test of a run is gated between the same two blocks, as a rule: the gating
        # worked out for them last is reused (after checking the blocks are still equal to
        # what it was worked out from), saving most of a big comparison's time.
        args = (tolerances, timing_mode, gate_baseline, timed_elsewhere, compatible)
        key = (id(baseline), id(current))
        known = _GATINGS.get(key)
        if known is not None and known[2] == args and known[0] == baseline and known[1] == current:
            return known[3]
        gating = cls._between(baseline, current, *args)
        if len(_GATINGS) >= _GATINGS_KEPT:
            _GATINGS.clear()
        _GATINGS[key] = (copy.deepcopy(baseline), copy.deepcopy(current), args, gating)
        return gating

    @classmethod
    def _between(
        cls,
        baseline: Mapping[str, Any],
        current: Mapping[str, Any],
        tolerances: Tolerances,
        timing_mode: TimingMode,
        gate_baseline: bool,
        timed_elsewhere: str | None,
        compatible: Compatible | None = None,
    ) -> Gating:
        # What the run itself rules out, whatever the two environments: seconds measured
        # beside other workers, under valgrind, or timed by the caller.
        run = [UNDER_XDIST] if under_xdist(current) else []
        if timed_elsewhere:
            run.append(timed_elsewhere)
        timing = timing_differences(baseline, current)
        gating = cls(
            tol=tolerances,
            timing_differences=(*timing, *run),
            static_differences=tuple(static_differences(baseline, current)),
            upgrade=tuple(upgrade_differences(baseline, current)),
            timing_mode=timing_mode,
            gate_baseline=gate_baseline,
            not_measured={**unmeasured(current), **unmeasured(baseline)},
            machine=machine_scale(baseline, current),
            instruction_differences=tuple(instruction_differences(baseline, current)),
            machine_left_out=too_noisy(baseline, current),
            rescale_hint=RESCALE_HINT if reference_missing(baseline, current) else "",
        )
        if compatible is None:
            return gating
        said = {kind: compatible(kind, baseline, current) for kind in HOOK_KINDS}
        if all(v is None for v in said.values()):
            return gating

        def decided(kind: str, found: Sequence[str], kept: Sequence[str] = ()) -> tuple[str, ...]:
            # True: only the run's own reasons stand; False: the differences the built-in
            # rule found, or else those it does not look at, with who decided.
            verdict = said[kind]
            if verdict is None:
                return tuple(found)
            if verdict:
                return tuple(r for r in found if r in kept)
            return tuple(found) or (*other_differences(baseline, current), BY_HOOK)

        run_reasons = (UNDER_VALGRIND, *run)
        changes: dict[str, Any] = {
            "static_differences": decided(SIZES, gating.static_differences),
            "timing_differences": decided(COMPILE, gating.timing_differences, run_reasons),
            "runtime_differences": decided(RUNTIME_KIND, gating.timing_differences, run_reasons),
            "instruction_differences": decided(INSTRUCTION_KIND, gating.instruction_differences),
        }
        if said[COMPILE] is not None:
            # The plugin's word on compile seconds: compared as measured, or not at all;
            # never scaled between machines by the reference compile.
            changes.update(machine=None, machine_left_out=None, rescale_hint="")
        if said[SIZES] is not None or said[COMPILE] is not None:
            changes["upgrade"] = ()  # an upgrade is the built-in rules' word
        return dataclasses.replace(gating, **changes)

    @property
    def runtime_reasons(self) -> Sequence[str]:
        """Why steady-state runtime is not gated: none where it is."""
        if self.runtime_differences is None:
            return self.timing_differences
        return self.runtime_differences

    @functools.cached_property
    def plain(self) -> bool:
        """Whether every metric is gated as measured: nothing left out as not measured, no
        environment difference, no scaling between machines (see `_unchanged`)."""
        return not (
            self.not_measured
            or self.timing_differences
            or self.runtime_reasons
            or self.static_differences
            or self.machine is not None
        )

    @functools.cached_property
    def skipped(self) -> frozenset[str]:
        """Metrics left out of the verdict: those not measured, and compile time and program
        sizes with the compile counts (they are read from the same compiles)."""
        skipped = set(self.not_measured)
        if "compiles" in skipped:
            skipped |= {COMPILE_TIME, PROGRAM_SIZE}
        return frozenset(skipped)


# The kinds of value a `compatible` rule is asked about: those the built-in rules gate by
# environment (counts are gated in every environment).
HOOK_KINDS = (SIZES, COMPILE, RUNTIME_KIND, INSTRUCTION_KIND)

# Gating.between's recent results by the ids of the two blocks: copies of the blocks (to see
# they were not changed since, nor are other blocks at the same addresses), the other
# arguments, the gating.
_GATINGS: dict[
    tuple[int, int], tuple[Mapping[str, Any], Mapping[str, Any], tuple[Any, ...], Gating]
] = {}
_GATINGS_KEPT = 64


def evaluate(
    record: RecordedTest, base: RecordedTest | None, limits: MarkerLimits, gating: Gating
) -> Verdict:
    """Compare one test against its marker limits and its baseline entry, as `gating` says
    (its tolerances overridden by the marker's)."""
    if (
        base is not None
        and limits is NO_LIMITS
        and gating.plain
        and _unchanged(record, base, gating)
    ):
        # The usual test of a big suite: nothing but its benchmarks can give it a finding.
        verdict = Verdict()
        if record.benchmarks:
            _benchmarks_vs_baseline(verdict, record, base, gating)
            if verdict.breaches:  # rare: said where and why as on the full path
                _diagnose(verdict, record, base, match_functions(record.functions, base.functions))
            verdict.status = verdict_status(verdict)
        return verdict
    verdict = Verdict()
    for metric, why in sorted(gating.not_measured.items()):
        verdict.notes.append(Note(f"{metric} not measured ({why}): not gated", "not_measured"))
    tol = gating.tol if limits is NO_LIMITS else limits.tolerances(gating.tol)
    if tol is not gating.tol:
        gating = dataclasses.replace(gating, tol=tol)
    _count_and_time_limits(verdict, record, limits, gating)
    _size_limits(verdict, record, limits, gating)
    if base is None:
        _diagnose(verdict, record, None, {})
        verdict.status = verdict_status(verdict, new=True)
        return verdict
    _benchmarks_vs_baseline(verdict, record, base, gating)
    matched = match_functions(record.functions, base.functions)
    verdict.gone = _gone(base, matched)
    _counts_vs_baseline(verdict, record, base, matched, verdict.gone, gating)
    _sizes_vs_baseline(verdict, record, base, matched, gating)
    if gating.tol.compile_clock == "instructions":
        # In place of the seconds (measured under valgrind, never gated there).
        _phase_instructions(verdict, record, matched, gating)
    else:
        _compile_time_vs_baseline(verdict, record, base, matched, verdict.gone, gating)
    verdict.upgrade = _upgrade_changes(record, base, matched, gating)
    if verdict.upgrade:
        verdict.info.append(
            f"upgrade ({', '.join(gating.upgrade)}), not gated: "
            + ", ".join(map(upgrade_text, verdict.upgrade))
        )
    _diagnose(verdict, record, base, matched)
    verdict.status = verdict_status(verdict)
    return verdict


def _diagnose(
    verdict: Verdict,
    record: RecordedTest,
    base: RecordedTest | None,
    matched: Mapping[str, FunctionRecord],
) -> None:
    """Says where each breach of jaxpr equations comes from and which known pattern it is,
    with its fix (`diagnose`); the patterns that grow a program besides its equations, on
    any breach of its size or compile seconds; what the program metrics say of a slower
    benchmark; and a compile storm outside any jit, which no gate sees. Each said once."""
    said_where: set[tuple[str, ...]] = set()
    said: set[str] = set()
    # Sizes before compile seconds, as a failure lists them: a pattern is said at the first.
    order = sorted(
        range(len(verdict.breaches)), key=lambda i: verdict.breaches[i].metric == COMPILE_TIME
    )
    for i in order:
        b = verdict.breaches[i]
        if b.metric in (RUNTIME, INSTRUCTIONS) and base is not None and b.benchmark:
            cause = _runtime_cause(b.benchmark, record, base)
            if cause is not None:
                verdict.breaches[i] = dataclasses.replace(b, reasons=b.reasons + (cause,))
            continue
        if b.metric not in diagnose.PROGRAM_METRICS or b.where:
            continue
        where: list[str] = []
        found: list[str] = []
        if b.metric in diagnose.EQUATION_METRICS:
            where, found = diagnose.explain_size(
                b.function, record, base, matched, b.against == "baseline"
            )
        found += diagnose.explain_program(
            b.function, record, base, matched, b.against == "baseline"
        )
        # A benchmark's program, its function and the test's total are often the same
        # program: its lines and each pattern are said once, at the first breach of it.
        sites = tuple(line.split(" (")[0] for line in where)
        if sites in said_where:
            where = []
        said_where.add(sites)
        found = [f for f in dict.fromkeys(found) if f not in said]
        said.update(found)
        if where or found:
            verdict.breaches[i] = dataclasses.replace(
                b, where=tuple(where), reasons=b.reasons + tuple(found)
            )
    grew = [line for line in diagnose.constants_grew(record, base, matched) if line not in said]
    storm = diagnose.compile_storm(record, base)
    for line in grew + ([storm] if storm is not None else []):
        verdict.info.append(diagnose.DIAGNOSIS + line)


def _runtime_cause(label: str, record: RecordedTest, base: RecordedTest) -> str | None:
    now, old = record.benchmarks.get(label), base.benchmarks.get(label)
    if type(now) is not BenchmarkEntry or type(old) is not BenchmarkEntry:
        return None
    return diagnose.runtime_cause(now, old)


def upgrade_differences(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """'jax 0.10.2 -> 0.12.0.1', ... where the versions (or codegen flags) are all that
    differs of what program metrics depend on, and of what compile seconds depend on besides
    the machine (a CI runner's CPU model may change with the same commit); empty otherwise."""
    found = differences(UPGRADE_KEYS, baseline, current)
    if not found or len(static_differences(baseline, current)) != len(found):
        return []
    rest = len(timing_differences(baseline, current)) - len(
        differences(MACHINE_KEYS, baseline, current)
    )
    return found if rest == len(found) else []


# What an upgrade is: the versions, and the XLA flags and JAX options programs depend on.
UPGRADE_KEYS = ("jax", "jaxlib", "program_flags")


def _upgrade_changes(
    record: RecordedTest,
    base: RecordedTest,
    matched: Mapping[str, FunctionRecord],
    gating: Gating,
) -> list[tuple[str, float, float]]:
    """What an upgrade (`gating.upgrade`) changed of the test: each function's sizes that
    moved, then its compile seconds on the gate's clock."""
    if not gating.upgrade:
        return []
    changes: list[tuple[str, float, float]] = []
    if PROGRAM_SIZE not in gating.skipped:
        for key, fn in sorted(record.functions.items()):
            old = matched.get(key)
            for metric, words in SIZE_WORDS.items():
                now, before = getattr(fn, metric), getattr(old, metric, None)
                if now is not None and before is not None and now != before:
                    changes.append((f"{words} of {short_name(fn.name)}", before, now))
    same_machine = len(gating.timing_differences) == len(gating.upgrade)
    if (
        same_machine
        and COMPILE_TIME not in gating.skipped
        and not (record.cache_hits or base.cache_hits)
    ):
        clock = gating.tol.compile_clock
        if clock == "cpu" and (record.total_cpu_s is None or base.total_cpu_s is None):
            clock = "wall"
        before_s, now_s = compile_seconds(base, clock), compile_seconds(record, clock)
        if before_s is not None and now_s is not None:
            changes.append((f"compile {clock} seconds", before_s, now_s))
    return changes


def upgrade_text(change: tuple[str, float, float]) -> str:
    """`jaxpr equations of f 30 -> 28`, `compile cpu seconds 0.180 -> 0.210`."""
    what, before, now = change
    if what.startswith("compile "):
        return f"{what} {before:.3f} -> {now:.3f}"
    return f"{what} {before:,g} -> {now:,g}"


def upgrade_change(change: tuple[str, float, float]) -> float:
    """How large a change is, either way: the ratio of the larger value to the smaller."""
    _, before, now = change
    low, high = sorted((before, now))
    return high / low if low > 0 else math.inf if high > 0 else 1.0


# What of a function, or of a test's totals, the counts and sizes compare: where all are the
# same as in the baseline entry, neither gives a finding.
_SHAPE = operator.attrgetter(
    "traces", "compiles", "lowerings", "jaxpr_eqns", "hlo_ops", "xla_ops", "trace_eqns"
)


def _unchanged(record: RecordedTest, base: RecordedTest, gating: Gating) -> bool:
    """Whether the rules of `evaluate` surely find nothing in the test's functions, counts,
    sizes and compile time, with a `plain` gating and no marker limits: the same functions
    (by key), each, and the totals, with the same counts and measured sizes, no cache hits,
    and compile seconds on the gating's clock neither over the tolerance nor under it. The
    benchmarks are not looked at. False (the rules then run) wherever that is not so."""
    functions, old_functions = record.functions, base.functions
    if (
        functions.keys() != old_functions.keys()
        or record.cache_hits
        or base.cache_hits
        or _SHAPE(record) != _SHAPE(base)
    ):
        return False
    for key, fn in functions.items():
        shape, old = _SHAPE(fn), old_functions[key]
        if None in shape or shape != _SHAPE(old):
            return False
        if old.eqn_sources and diagnose.constant_kib(fn) > diagnose.constant_kib(old):
            return False  # a closed-over constant grew (both sides run files): named
    tol = gating.tol
    if tol.compile_clock == "instructions":
        return False  # gated per phase (`_phase_instructions`)
    if tol.compile_clock == "cpu":
        now_s, before_s = record.total_cpu_s, base.total_cpu_s
        if now_s is None or before_s is None:
            return False  # gated on wall seconds, with a word that says so
    else:
        now_s, before_s = record.total_s, base.total_s
        if now_s is None or before_s is None:
            return False  # not gated, with a word that says so
    rtol, floor = tol.compile_rtol, tol.compile_floor
    grew = now_s > before_s * (1 + rtol) and now_s - before_s > floor
    shrank = now_s * (1 + rtol) < before_s and before_s - now_s > floor
    return not (grew or shrank)


def verdict_status(verdict: Verdict, new: bool = False) -> Status:
    """The most pressing of the test's findings (see `Status`)."""
    if verdict.errors:
        return "BAD LIMIT"
    if any(b.against == "limit" and b.gated for b in verdict.breaches):
        return "OVER LIMIT"
    if any(b.gated for b in verdict.breaches):
        return "REGRESSED"
    if verdict.strict:
        return "NOT GATED"
    if verdict.breaches:
        return "reported only"
    if new:
        return "new"
    if verdict.gone:
        return "function gone"
    return "improved" if verdict.improvements else "ok"


def _gone(base: RecordedTest, matched: Mapping[str, FunctionRecord]) -> list[FunctionRecord]:
    """Baseline functions with traces or compiles that this test no longer traced. Not an
    improvement: the likeliest cause is a removed @jax.jit, and the code then runs op by op,
    which no count or compile time of this test can show."""
    seen = {id(f) for f in matched.values()}
    gone = [f for f in base.functions.values() if id(f) not in seen and (f.traces or f.compiles)]
    return sorted(gone, key=lambda f: f.key)


def _count_and_time_limits(
    verdict: Verdict, record: RecordedTest, limits: MarkerLimits, gating: Gating
) -> None:
    """max_traces, max_compiles and max_compile_time: for the test or named functions."""
    clock = gating.tol.compile_clock
    for argument, metric, limit in (
        ("max_traces", "traces", limits.max_traces),
        ("max_compiles", "compiles", limits.max_compiles),
        ("max_compile_time", COMPILE_TIME, limits.max_compile_time),
    ):
        if metric in gating.skipped:
            continue
        if (
            metric == COMPILE_TIME
            and limit is not None
            and UNDER_VALGRIND in gating.timing_differences
        ):
            # Seconds under valgrind are 20-500x a native compile's: no limit in seconds holds.
            _note(verdict, Note(f"{argument} not applied: {UNDER_VALGRIND}", "environment_differs"))
            continue
        for name, fns, value in _limit_for(limit, record.functions):
            whole_test = name is None
            if not fns and not whole_test:
                # A limit on nothing would pass whatever the code does (a misspelt name).
                verdict.errors.append(
                    unknown_name(argument, str(name), "function", record.functions)
                )
                continue
            values = [_metric(record, metric, clock)] if whole_test else [
                _metric(f, metric, clock) for f in fns
            ]  # fmt: skip
            if None in values:
                continue  # wall seconds of a baseline given as the run: not stored
            current = sum(v for v in values if v is not None)
            if current <= value:
                continue
            reasons = () if metric == COMPILE_TIME else _reasons(fns, whole_test or len(fns) > 1)
            verdict.breaches.append(Breach(
                metric=metric, function=fns[0] if len(fns) == 1 and not whole_test else None,
                reference=value, current=current, against="limit", reasons=reasons,
            ))  # fmt: skip


def _counts_vs_baseline(
    verdict: Verdict,
    record: RecordedTest,
    base: RecordedTest,
    matched: Mapping[str, FunctionRecord],
    gone: Sequence[FunctionRecord],
    gating: Gating,
) -> None:
    """Traces and compiles per function, then in total: any increase is a breach; a decrease
    that the gone functions account for is no improvement."""
    metrics = [m for m in ("traces", "compiles") if m not in gating.skipped]
    for key, fn in sorted(record.functions.items()):
        old = matched.get(key)
        for metric in metrics:
            now, before = getattr(fn, metric), getattr(old, metric) if old else 0
            if now > before:
                reasons = tuple(causes.summary(fn.retrace_reasons, fn.traces))
                if metric == "compiles" and fn.compiles - fn.traces > (
                    old.compiles - old.traces if old else 0
                ):
                    reasons += (causes.SILENT_RECOMPILE,)
                # A re-defined function is new to any baseline: its cause says more.
                if old is None and not causes.redefined(fn.retrace_reasons):
                    reasons = ("new function (not in the baseline)",) + reasons
                verdict.breaches.append(Breach(
                    metric=metric, function=fn, reference=before, current=now,
                    against="baseline", reasons=reasons, gated=gating.gate_baseline,
                ))  # fmt: skip
            elif now < before:
                verdict.improvements.append(f"{metric} of {fn.key}: {before} -> {now}")
    for metric in metrics:
        now, before = getattr(record, metric), getattr(base, metric)
        kept = before - sum(getattr(f, metric) for f in gone)
        per_function = any(b.metric == metric and b.function for b in verdict.breaches)
        if now > before and not per_function:
            verdict.breaches.append(Breach(
                metric=metric, function=None, reference=before, current=now,
                against="baseline", gated=gating.gate_baseline,
            ))  # fmt: skip
        elif now < kept and not any(i.startswith(metric) for i in verdict.improvements):
            verdict.improvements.append(f"total {metric}: {before} -> {now}")


def _sizes_vs_baseline(
    verdict: Verdict,
    record: RecordedTest,
    base: RecordedTest,
    matched: Mapping[str, FunctionRecord],
    gating: Gating,
) -> None:
    """The jaxpr equations and StableHLO ops each function lowered, against its baseline
    entry: deterministic for a jax, jaxlib, backend and x64 setting, whatever the CPU, so
    gated with static_rtol wherever those match. A function new to the baseline is left to
    the counts (its traces and compiles already fail). The jaxpr equations of its top-level
    traces gate a function that did not lower on both sides (eval_shape, make_jaxpr);
    where it did, its lowerings' equations already do."""
    if PROGRAM_SIZE in gating.skipped:
        return
    if gating.static_differences:
        _note(verdict, _static_note(gating))
        return
    # Per size: where it was not measured ("the baseline", "this run").
    unmeasured: dict[str, set[str]] = {}
    for key, fn in sorted(record.functions.items()):
        old = matched.get(key)
        if old is None:
            continue
        sizes = _SIZES_OF(fn)
        if None not in sizes and sizes == _SIZES_OF(old):
            continue  # the same sizes of as many programs: neither grown nor shrunk
        _function_sizes_vs_baseline(verdict, fn, old, gating, unmeasured)
    lowered = {m: w for m, w in unmeasured.items() if m != "trace_eqns"}
    if not lowered:
        _size_totals_vs_baseline(verdict, record, base, matched, gating, set(unmeasured))
    _unmeasured_size_notes(verdict, lowered, unmeasured.get("trace_eqns", set()))


def _function_sizes_vs_baseline(
    verdict: Verdict,
    fn: FunctionRecord,
    old: FunctionRecord,
    gating: Gating,
    unmeasured: dict[str, set[str]],
) -> None:
    """One function's sizes against its baseline entry's: growth over static_rtol is a
    breach; a size one side lacks is added to `unmeasured`, with the side."""
    rtol = gating.tol.static_rtol
    for metric, words in SIZE_WORDS.items():
        now, before = getattr(fn, metric), getattr(old, metric)
        if metric == "trace_eqns" and (
            _lowered(fn) and _lowered(old) or now == 0 or "traces" in gating.skipped
        ):
            # Gated through its lowerings' equations; or no top-level trace now (a
            # nested jit, whose equations are its outer's); or traces not seen, and so
            # neither their sizes: nothing to gate.
            continue
        if now is None or before is None:
            # Where neither side has it, this run's is the one to mend.
            where = "the baseline" if before is None and now is not None else "this run"
            unmeasured.setdefault(metric, set()).add(where)
            continue
        now, before, detail = _per_program(metric, now, before, fn, old, rtol)
        if now > before * (1 + rtol) and now > before:
            verdict.breaches.append(Breach(
                metric=words, function=fn, reference=before, current=now,
                against="baseline", gated=gating.gate_baseline, detail=detail,
            ))  # fmt: skip
        elif now * (1 + rtol) < before:
            verdict.improvements.append(f"{words} of {fn.key}: {before:,g} -> {now:,g}")


def _per_program(
    metric: str, now: float, before: float, rec: Counts, old: Counts, rtol: float
) -> tuple[float, float, str]:
    """`now` and `before` as a size's gate compares them, with the breach's detail: a
    retrace or recompile is the counts' finding, so where their number changed the sizes
    are compared per one (one more of the same program is not "growth")."""
    unit = _SIZE_UNIT[metric]
    n_now, n_before = getattr(rec, unit), getattr(old, unit)
    if not (n_now and n_before and n_now != n_before):
        return now, before, f"static_rtol {rtol:g}"
    per = f"static_rtol {rtol:g}, per {unit[:-1]}: {n_before} -> {n_now} {unit}"
    return now / n_now, before / n_before, per


def _unmeasured_size_notes(
    verdict: Verdict, lowered: Mapping[str, set[str]], traced: set[str]
) -> None:
    """The notes for sizes some function was not measured in: lowered program sizes and
    traced equations, each by the side that lacks them (the baseline, this run)."""
    if any("the baseline" in w for w in lowered.values()):
        _note(verdict, _NO_SIZES)
    if any("this run" in w for w in lowered.values()):
        _note(verdict, Note("program sizes not gated: this run has none (the lowered program "
                            "was not read)", "not_measured"))  # fmt: skip
    if "the baseline" in traced:
        _note(verdict, _NO_TRACE_SIZES)
    if "this run" in traced:
        _note(verdict, Note("traced jaxpr equations not gated: this run has none (the traced "
                            "program was not read)", "not_measured"))  # fmt: skip


# The sizes `_sizes_vs_baseline` compares, and the numbers of programs they are summed over.
_SIZES_OF = operator.attrgetter(*SIZE_WORDS, "lowerings", "compiles", "traces")


def _lowered(counts: Counts) -> bool:
    """Whether the function (or test) lowered a program whose equations were counted: its
    traced equations are then gated through the lowerings'."""
    return counts.lowerings > 0 and counts.jaxpr_eqns is not None


def _size_totals_vs_baseline(
    verdict: Verdict,
    record: RecordedTest,
    base: RecordedTest,
    matched: Mapping[str, FunctionRecord],
    gating: Gating,
    unmeasured: set[str],
) -> None:
    """The test's program sizes summed over its functions, new ones included (a jax.jit
    inside a loop adds functions no baseline entry matches), by each function's rule: over
    static_rtol, per lowering (per compile, per trace) where their number changed, is a
    breach. Left to a function's own breach of the same size where there is one; traced
    equations to the lowered ones where the test lowered on both sides; `unmeasured` sizes
    (of some function) left out."""
    rtol = gating.tol.static_rtol
    for metric, words in SIZE_WORDS.items():
        if metric in unmeasured or (
            metric == "trace_eqns"
            and (_lowered(record) and _lowered(base) or "traces" in gating.skipped)
        ):
            continue
        if any(b.metric == words and b.function is not None for b in verdict.breaches):
            continue
        now, before = getattr(record, metric), getattr(base, metric)
        if now is None or not before:
            continue
        now, before, detail = _per_program(metric, now, before, record, base, rtol)
        if now > before * (1 + rtol) and now > before:
            new = [f for k, f in sorted(record.functions.items()) if k not in matched]
            verdict.breaches.append(Breach(
                metric=words, function=None, reference=before, current=now,
                against="baseline", gated=gating.gate_baseline, detail=detail,
                reasons=tuple(f"new function: {f.key}" for f in new) + _reasons(new, True),
            ))  # fmt: skip


_NO_SIZES = Note(
    "program sizes not gated: the baseline has none (saved before pytest-jaxperf/4; re-save it "
    "with --jaxperf-save)",
    "baseline_incomplete",
)


_NO_TRACE_SIZES = Note(
    "traced jaxpr equations not gated: the baseline has none (saved before pytest-jaxperf/5; "
    "re-save it with --jaxperf-save)",
    "baseline_incomplete",
)


def _static_note(gating: Gating) -> Note:
    return Note(
        f"program metrics not gated: environment differs ({', '.join(gating.static_differences)})",
        "environment_differs",
    )


def _compile_time_vs_baseline(
    verdict: Verdict,
    record: RecordedTest,
    base: RecordedTest,
    matched: Mapping[str, FunctionRecord],
    gone: Sequence[FunctionRecord],
    gating: Gating,
) -> None:
    """The test's total compile seconds: above rtol and floor, on the chosen clock. An
    improvement only against the baseline's seconds of the functions still traced."""
    if COMPILE_TIME in gating.skipped:
        return
    if record.cache_hits or base.cache_hits:
        verdict.notes.append(Note(
            "compile time not gated: persistent compilation cache hits "
            f"(baseline {base.cache_hits}, now {record.cache_hits})", "cache_hits",
        ))  # fmt: skip
        return
    gated = _compile_time_clock(verdict, record, base, gating)
    if gated is not None:
        clock, machine = gated
        _compile_seconds_vs_baseline(verdict, record, base, matched, gone, gating, clock, machine)


def _compile_time_clock(
    verdict: Verdict, record: RecordedTest, base: RecordedTest, gating: Gating
) -> tuple[Clock, MachineScale | None] | None:
    """The clock compile seconds are compared on and the machines' ratio they are scaled by
    (None: the same machine); None, with a note, where environments keep them ungated."""
    differs = (
        f"compile time not gated: environment differs ({', '.join(gating.timing_differences)})"
        + gating.rescale_hint
    )
    machine = gating.machine
    if machine is not None and set(machine.differences) != set(gating.timing_differences):
        machine = None  # something besides the machine differs (xdist, a version)
    if gating.machine_left_out:
        differs += f"; {gating.machine_left_out}"
    if gating.timing_differences and machine is None:
        verdict.notes.append(Note(differs, "environment_differs"))
        return None
    clock = gating.tol.compile_clock
    has_cpu = record.total_cpu_s is not None and base.total_cpu_s is not None
    if machine is not None and not (clock == "cpu" and has_cpu):
        # The reference compile is measured in CPU seconds: wall seconds do not scale by it.
        verdict.notes.append(Note(
            differs + "; across machines only CPU seconds are compared", "environment_differs"
        ))  # fmt: skip
        return None
    if clock == "cpu" and not has_cpu:
        clock = "wall"
        verdict.info.append(
            "compile time gated on wall seconds: the baseline has no CPU seconds (saved by "
            "an older pytest-jaxperf; re-save it with --jaxperf-save)"
        )
    if clock == "wall" and (base.total_s is None or record.total_s is None):
        verdict.notes.append(_NO_WALL if base.total_s is None else _NO_RUN_WALL)
        return None
    return clock, machine


# A baseline keeps a test's wall seconds only where it was saved gated on them.
_NO_WALL = Note(
    "compile time not gated: the baseline has no wall seconds (saved on the CPU clock: the "
    "run file has them); re-save with --jaxperf-compile-clock=wall --jaxperf-save",
    "baseline_incomplete",
)
_NO_RUN_WALL = Note(
    "compile time not gated: the run has no wall seconds (a baseline given as the run: "
    "compare the run file, --jaxperf-json)",
    "not_measured",
)


def _compile_seconds_vs_baseline(
    verdict: Verdict,
    record: RecordedTest,
    base: RecordedTest,
    matched: Mapping[str, FunctionRecord],
    gone: Sequence[FunctionRecord],
    gating: Gating,
    clock: Clock,
    machine: MachineScale | None,
) -> None:
    """The test's compile seconds on `clock` against the baseline's (times the machines'
    ratio): growth above rtol and floor is a breach, a like fall an improvement."""
    tol = gating.tol
    scale = 1.0 if machine is None else machine.factor
    now, before = compile_seconds(record, clock), compile_seconds(base, clock)
    if now is None or before is None:  # _compile_time_clock said why
        return
    now_s, before_s = now, before * scale
    if machine is not None:  # another CPU model: its own, wider margin (config.py)
        tol = dataclasses.replace(
            tol, compile_rtol=max(tol.compile_rtol, tol.cross_machine_compile_rtol)
        )
    detail = f"{clock} seconds, rtol {tol.compile_rtol:g}, floor {tol.compile_floor:g} s"
    if machine is not None:
        detail += (
            f"; baseline x {scale:.2f}: the reference compile takes {machine.before_s:.3f} s "
            f"there, {machine.now_s:.3f} s here ({', '.join(machine.differences)})"
        )
        verdict.info.append(
            f"compile time gated across machines: the baseline's CPU seconds x {scale:.2f}, "
            "the ratio of the two machines' reference compiles"
        )
    if now_s > before_s * (1 + tol.compile_rtol) and now_s - before_s > tol.compile_floor:
        verdict.breaches.append(Breach(
            metric=COMPILE_TIME, function=None, reference=before_s, current=now_s,
            against="baseline", reasons=_compile_time_growth(record, matched, clock, scale),
            gated=gating.gate_baseline, detail=detail,
        ))  # fmt: skip
        return
    # (A baseline leaves out the wall seconds of a test and all its functions together.)
    kept_s = before_s - sum(compile_seconds(f, clock) or 0.0 for f in gone) * scale
    if now_s * (1 + tol.compile_rtol) < kept_s and kept_s - now_s > tol.compile_floor:
        verdict.improvements.append(f"compile time ({clock}): {before_s:.3f} s -> {now_s:.3f} s")


def _reasons(functions: list[FunctionRecord], labelled: bool) -> tuple[str, ...]:
    """The functions' retrace causes, short and folded (`causes.summary`), each fix once;
    each labelled with its function's short name where several are (the full name where two
    short ones are the same)."""
    fixed: set[str] = set()
    short = [causes.label_name(f.name) for f in functions]
    names = short if len(set(short)) == len(short) else [f.name for f in functions]
    return tuple(
        line
        for f, name in zip(functions, names)
        for line in causes.summary(f.retrace_reasons, f.traces, f"{name}: " * labelled, fixed)
    )


def _compile_time_growth(
    record: RecordedTest,
    matched: Mapping[str, FunctionRecord],
    clock: Clock,
    scale: float = 1.0,
    most: int = 3,
) -> tuple[str, ...]:
    """The functions whose compile time grew most, with the phase split: where to look
    (the baseline's seconds times `scale`, the machines' ratio)."""
    grown = []
    for key, fn in record.functions.items():
        old = matched.get(key)
        before = (compile_seconds(old, clock) or 0.0) * scale if old else 0.0
        now = compile_seconds(fn, clock) or 0.0
        if now > before:
            grown.append((now - before, fn, before, now))
    grown.sort(key=lambda g: -g[0])
    return tuple(
        f"{fn.key}: {before:.3f} s -> {now:.3f} s (wall: trace {fn.trace_s:.3f}, "
        f"lower {fn.lower_s:.3f}, backend {fn.compile_s:.3f})"
        for _, fn, before, now in grown[:most]
    )


# A slowdown must be this unlikely under "no change" (one-sided Mann-Whitney U on the raw
# per-round times) before it fails a test; a larger median alone is not enough.
RUNTIME_ALPHA = 0.01
RUNTIME = "runtime"
INSTRUCTIONS = "instructions per call"
# The compile clock's metrics: each phase's instructions per function (instructions.py's
# PhaseClock), as breaches name them.
PHASE_INSTRUCTIONS = {
    "trace": "trace instructions",
    "lower": "lowering instructions",
    "compile": "backend compile instructions",
}
# Shown, not gated: in 9 runs of 3 unchanged functions (benchmarks/compile_instructions.py)
# one backend compile counted 4.8% fewer instructions than the baseline's, the other 26
# within 0.7%; trace and lowering within 1.3%.
UNGATED_PHASES = {
    "compile": "backend compile instructions not gated: they vary by up to 5% between runs "
    "of unchanged code (which fusions XLA's CPU compiler compiles in a fresh MLIR context is "
    "a race between its threads)",
}
JIT = "jit"


# The marker's program-size limits: (metric, what it limits: functions and benchmarks,
# functions only, or benchmarks only).
_SIZE_LIMITS = (
    ("jaxpr_eqns", "both"), ("hlo_ops", "both"), ("xla_ops", "functions"),
    *((name, "benchmarks") for name in STATIC_METRICS[2:]),
)  # fmt: skip


def _size_limits(
    verdict: Verdict, record: RecordedTest, limits: MarkerLimits, gating: Gating
) -> None:
    """max_jaxpr_eqns, max_hlo_ops and max_xla_ops, and a benchmark's max_flops ...
    max_peak_bytes. A number limits the test's total (its functions' lowerings summed) and
    every benchmark (those a function has no value of: every benchmark alone); a dict key
    names a benchmark label or a function."""
    benchmarks = dict(record.benchmark_entries())
    for metric, on in _SIZE_LIMITS:
        limit: Limit | None = getattr(limits, f"max_{metric}")
        if limit is None:
            continue
        on_functions: Limit = limit
        if isinstance(limit, Mapping) and on != "functions":
            on_functions = {k: v for k, v in limit.items() if k not in benchmarks}
        if on != "functions":
            _benchmark_size_limit(verdict, metric, limit, benchmarks, on == "benchmarks")
        if on == "benchmarks":
            if isinstance(on_functions, Mapping):
                for key in on_functions:  # a key naming no benchmark would limit nothing
                    verdict.errors.append(
                        unknown_name(f"max_{metric}", key, "benchmark", benchmarks)
                    )
            continue
        if PROGRAM_SIZE in gating.skipped:
            continue
        for name, fns, value in _limit_for(on_functions, record.functions):
            whole_test = name is None
            if not fns and not whole_test:
                # A limit on nothing would pass whatever the program becomes (a misspelt name).
                verdict.errors.append(
                    unknown_name(f"max_{metric}", str(name), "function or benchmark",
                                 [*record.functions, *benchmarks])
                )  # fmt: skip
                continue
            sizes = [getattr(record, metric)] if whole_test else [getattr(f, metric) for f in fns]
            words = SIZE_WORDS[metric]
            if metric == "jaxpr_eqns" and "traces" not in gating.skipped:
                # A function that did not lower (eval_shape, make_jaxpr) is limited by the
                # equations it traced (not where traces, and so their sizes, were not seen).
                sizes = [f.jaxpr_eqns if _lowered(f) else f.trace_eqns for f in fns]
                if fns and not any(map(_lowered, fns)):
                    words = SIZE_WORDS["trace_eqns"]
            if None in sizes:
                _note(verdict, Note(f"{words} not measured for this test: max_{metric} not "
                                    "applied to its functions", "not_measured"))  # fmt: skip
                continue
            current = float(sum(sizes))
            if current > value:
                verdict.breaches.append(Breach(
                    metric=words,
                    function=fns[0] if len(fns) == 1 and not whole_test else None,
                    reference=value, current=current, against="limit",
                ))  # fmt: skip


def _benchmark_size_limit(
    verdict: Verdict,
    metric: str,
    limit: Limit,
    benchmarks: Mapping[str, BenchmarkEntry],
    only_benchmarks: bool,
) -> None:
    """A size limit on each benchmark (one number for all, or by label); where the metric is
    a benchmark's only (`only_benchmarks`: flops, bytes), one the backend has no value of is
    said, not passed in silence."""
    for label, bench in sorted(benchmarks.items()):
        value = limit.get(label) if isinstance(limit, Mapping) else limit
        current = bench.program_metric(metric)
        if value is not None and current is None and only_benchmarks:
            _note(verdict, Note(f"{metric} not measured for benchmark {label!r} (the "
                                f"backend has no value): max_{metric} not applied",
                                "not_measured"))  # fmt: skip
        if value is not None and current is not None and current > value:
            verdict.breaches.append(Breach(
                metric=metric, function=None, reference=float(value), current=current,
                against="limit", benchmark=label,
            ))  # fmt: skip


def _note(verdict: Verdict, note: Note) -> None:
    if note not in verdict.notes:
        verdict.notes.append(note)


def _benchmarks_vs_baseline(
    verdict: Verdict, record: RecordedTest, base: RecordedTest, gating: Gating
) -> None:
    """Each benchmark that is in the baseline too: program metrics, then runtime."""
    old_benchmarks = dict(base.benchmark_entries())
    for label, bench in record.benchmark_entries():
        old = old_benchmarks.get(label)
        if old is None:
            continue
        _program_metrics(verdict, label, bench, old, gating)
        if bench.jitted_by_benchmark and not old.jitted_by_benchmark:
            # The code lost its jax.jit, yet the benchmark jits the function itself: its
            # runtime cannot show the op-by-op cost that the code's other callers now pay.
            verdict.breaches.append(Breach(
                metric=JIT, function=None, reference=1.0, current=0.0, against="baseline",
                gated=gating.gate_baseline, benchmark=label,
            ))  # fmt: skip
        if gating.timing_mode == "off":
            continue
        if gating.tol.runtime_clock == "instructions":
            _instructions(verdict, label, bench, old, gating)
        elif bench.runtime is None and bench.instructions is not None:
            clock = gating.tol.runtime_clock
            _note(verdict, Note(f"runtime not gated: this run counted instructions, the {clock} "
                                "clock asked for has no seconds to compare",
                                "not_measured"))  # fmt: skip
        else:
            runtime_verdict(verdict, label, bench, old, gating)


def _program_metrics(
    verdict: Verdict, label: str, bench: BenchmarkEntry, old: BenchmarkEntry, gating: Gating
) -> None:
    """Deterministic program metrics: above static_rtol is a breach."""
    if gating.static_differences:
        _note(verdict, _static_note(gating))
        return
    rtol = gating.tol.static_rtol
    for metric in STATIC_METRICS:
        now, before = bench.program_metric(metric), old.program_metric(metric)
        if metric == "hlo_ops" and now is not None and before is None:
            _note(verdict, _NO_SIZES)
        if now is None or before is None:
            continue
        if now > before * (1 + rtol) and now > before:
            verdict.breaches.append(Breach(
                metric=metric, function=None, reference=before, current=now,
                against="baseline", gated=gating.gate_baseline,
                detail=f"static_rtol {rtol:g}", benchmark=label,
            ))  # fmt: skip
        elif now * (1 + rtol) < before:
            verdict.improvements.append(f"{metric} of {label}: {before:g} -> {now:g}")


def runtime_verdict(
    verdict: Verdict, label: str, bench: BenchmarkEntry, old: BenchmarkEntry, gating: Gating
) -> None:
    """Steady-state runtime: median, fastest round, CPU per call and a rank test."""
    tol = gating.tol
    now_rt, old_rt = bench.runtime, old.runtime
    if now_rt is None or old_rt is None or not now_rt.median_s or not old_rt.median_s:
        return
    now, before = now_rt.median_s, old_rt.median_s
    change = now / before - 1
    if gating.runtime_reasons:
        if abs(change) > tol.runtime_rtol:
            verdict.notes.append(Note(
                f"runtime of {label} not gated: environment differs "
                f"({', '.join(gating.runtime_reasons)}); median {before:.3g} s -> {now:.3g} s",
                "environment_differs",
            ))  # fmt: skip
        return
    if change > tol.runtime_rtol:
        if not _machine_load(verdict, label, now_rt, old_rt, tol):
            _runtime_growth(verdict, label, now_rt, old_rt, gating)
    elif change < -tol.runtime_rtol / (1 + tol.runtime_rtol):
        p = significance(now_rt.samples_s, old_rt.samples_s, "less")
        if p is not None and p < RUNTIME_ALPHA:
            verdict.improvements.append(f"runtime of {label}: {before:.3g} s -> {now:.3g} s")


def _machine_load(
    verdict: Verdict, label: str, now_rt: RuntimeStats, old_rt: RuntimeStats, tol: Tolerances
) -> bool:
    """Whether a median above runtime_rtol is machine load (its fastest round, or its CPU
    time per call, grew no more than that), said in a note; False: the slowdown is real."""
    change = now_rt.median_s / old_rt.median_s - 1
    now_min, before_min = now_rt.min_s, old_rt.min_s
    # The fastest round must be slower too: load from other processes moves the median of
    # unchanged code by +50% on a shared 2-core machine, but rarely every round.
    min_change = now_min / before_min - 1 if now_min and before_min else change
    now_cpu, before_cpu = now_rt.cpu_median_s, old_rt.cpu_median_s
    # CPU backend only (the fixture records CPU seconds there alone): load from other
    # processes inflates wall time, not the process's own CPU time; a real slowdown of the
    # same work grows both.
    cpu_change = (
        now_cpu / before_cpu - 1
        if tol.runtime_clock == "cpu" and now_cpu is not None and before_cpu
        else None
    )
    if min_change <= tol.runtime_rtol:
        verdict.notes.append(Note(
            f"runtime of {label} median {change:+.0%} but its fastest round only "
            f"{min_change:+.0%}: machine load, not gated", "machine_load",
        ))  # fmt: skip
    elif cpu_change is not None and cpu_change <= tol.runtime_rtol:
        verdict.notes.append(Note(
            f"runtime of {label} median {change:+.0%} but its CPU time per call only "
            f"{cpu_change:+.0%}: machine load, not gated (--jaxperf-runtime-clock=wall gates "
            "on wall time alone)", "machine_load",
        ))  # fmt: skip
    else:
        return False
    return True


def _runtime_growth(
    verdict: Verdict, label: str, now_rt: RuntimeStats, old_rt: RuntimeStats, gating: Gating
) -> None:
    """A median slower by more than runtime_rtol: a breach where the rank test makes it
    clear (p below RUNTIME_ALPHA), else a note."""
    tol = gating.tol
    now, before = now_rt.median_s, old_rt.median_s
    change = now / before - 1
    p = significance(now_rt.samples_s, old_rt.samples_s, "greater")
    detail = f"median, runtime_rtol {tol.runtime_rtol:g}, " + (
        f"Mann-Whitney p={p:.2g}" if p is not None else "too few rounds for a test"
    )
    if p is not None and p < RUNTIME_ALPHA:
        verdict.breaches.append(Breach(
            metric=RUNTIME, function=None, reference=before, current=now,
            against="baseline", detail=detail, benchmark=label,
            gated=gating.gate_baseline and gating.timing_mode == "gate",
        ))  # fmt: skip
    else:
        verdict.notes.append(Note(
            f"runtime of {label} {change:+.0%} but not statistically clear ({detail})",
            "not_significant",
        ))  # fmt: skip


def _instructions(
    verdict: Verdict, label: str, bench: BenchmarkEntry, old: BenchmarkEntry, gating: Gating
) -> None:
    """Instructions per call on valgrind's simulated CPU: deterministic, so any growth above
    instructions_rtol fails, on any machine where what the count depends on matches."""
    now, before = bench.instructions, old.instructions
    flag = "--jaxperf-runtime-clock=instructions"
    if now is None:
        return _not_counted(verdict, INSTRUCTIONS, "not_measured", flag)
    if before is None or before <= 0:
        return _not_counted(verdict, INSTRUCTIONS, "baseline_incomplete", flag)
    if gating.instruction_differences:
        return _not_counted(verdict, INSTRUCTIONS, "environment_differs", flag, gating)
    rtol = gating.tol.instructions_rtol
    if now > before * (1 + rtol):
        verdict.breaches.append(Breach(
            metric=INSTRUCTIONS, function=None, reference=before, current=now,
            against="baseline", detail=f"instructions_rtol {rtol:g}", benchmark=label,
            gated=gating.gate_baseline and gating.timing_mode == "gate",
        ))  # fmt: skip
    elif now * (1 + rtol) < before:
        verdict.improvements.append(
            f"{INSTRUCTIONS} of {label}: {before:,} -> {now:,} ({now / before - 1:+.1%})"
        )


def _not_counted(
    verdict: Verdict, what: str, code: str, flag: str, gating: Gating | None = None
) -> None:
    """The instructions clocks' one "not gated" note of each kind (`code`), naming the
    `flag` that counts them."""
    why = {
        "not_measured": f"this run did not count them (they are counted with {flag})",
        "baseline_incomplete": f"the baseline has none (save it with {flag} --jaxperf-save)",
        "environment_differs": "environment differs ("
        + ", ".join(gating.instruction_differences if gating else ())
        + ")",
    }[code]
    _note(verdict, Note(f"{what} not gated: {why}", code))


def _phase_instructions(
    verdict: Verdict,
    record: RecordedTest,
    matched: Mapping[str, FunctionRecord],
    gating: Gating,
) -> None:
    """The compile clock: each function's trace, lowering and backend compile instructions
    against its baseline entry's; any growth above instructions_rtol fails, on any machine
    where what the counts depend on matches (the same Python build, C library, jax, flags)."""
    counted = {k: fn for k, fn in record.functions.items() if fn.instructions}
    what, flag = "compile instructions", "--jaxperf-compile-clock=instructions"
    if not counted:
        if any(fn.compiles or fn.lowerings or fn.traces for fn in record.functions.values()):
            _not_counted(verdict, what, "not_measured", flag)
        return
    if gating.instruction_differences:
        return _not_counted(verdict, what, "environment_differs", flag, gating)
    rtol = gating.tol.instructions_rtol
    for key, fn in sorted(counted.items()):
        old = matched.get(key)
        if old is None:
            continue  # a new function: its counts say so
        if not old.instructions:
            _not_counted(verdict, what, "baseline_incomplete", flag)
            continue
        for phase, metric in PHASE_INSTRUCTIONS.items():
            now, before = fn.instructions.get(phase), old.instructions.get(phase)
            if now is None or not before:
                continue
            unstable = UNGATED_PHASES.get(phase)
            if now > before * (1 + rtol):
                verdict.breaches.append(Breach(
                    metric=metric, function=fn, reference=before, current=now,
                    against="baseline", detail=f"instructions_rtol {rtol:g}",
                    gated=gating.gate_baseline and unstable is None,
                ))  # fmt: skip
                if unstable is not None:
                    _note(verdict, Note(unstable, "unstable_count"))
            elif unstable is None and now * (1 + rtol) < before:
                verdict.improvements.append(
                    f"{metric} of {short_name(fn.name)}: {before:,} -> {now:,} "
                    f"({now / before - 1:+.1%})"
                )


def apply_strict(verdict: Verdict, strict: frozenset[str], new: bool = False) -> None:
    """Fail the verdict on each note whose code is in `strict` (--jaxperf-strict): one line
    each in `verdict.strict`, and the status says so unless something more pressing does."""
    if not strict:
        return
    verdict.strict = strict_lines(verdict.notes, strict)
    verdict.status = verdict_status(verdict, new)


def significance(now: Sequence[float], before: Sequence[float], alternative: str) -> float | None:
    """One-sided Mann-Whitney U p-value that `now` is `alternative` than `before`; None
    with fewer than 5 rounds on either side."""
    if len(now) < 5 or len(before) < 5:
        return None
    from scipy import stats

    return float(stats.mannwhitneyu(now, before, alternative=alternative).pvalue)
