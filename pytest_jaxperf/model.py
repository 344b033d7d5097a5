"""The records a run produces and their JSON form (imports neither pytest nor jax)."""

from __future__ import annotations

import collections
import dataclasses
import itertools
import math
import operator
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, TypeVar

SCHEMA = "pytest-jaxperf/7"
# Every schema the reader loads: /1 has no CPU seconds (they read as None: not measured);
# /1 and /2 have no per-entry environments (every entry has the file's); /1 to /3 have no
# program sizes of the recorded functions (None: not measured); /1 to /4 have no traced
# jaxpr equations (`trace_eqns`, None). From /6 on a benchmark's first-call seconds
# (`first_call_s`, `trace_s`, `lower_s`, `compile_s`) may be left out (None): a baseline
# holds none (see storage/resave.py, `baseline_form`), a run file all of them. From /7 on
# a baseline leaves out (None) what the gate does not read: the wall seconds of a test and
# its functions where it is gated on CPU seconds (WALL_FIELDS), the `eager` block's seconds
# and sizes (the whole block where its counts are all 0), and a benchmark's runtime
# statistics but its median, fastest round, CPU median and rounds (RUNTIME_OPTIONAL).
READABLE_SCHEMAS = (
    "pytest-jaxperf/1", "pytest-jaxperf/2", "pytest-jaxperf/3", "pytest-jaxperf/4",
    "pytest-jaxperf/5", "pytest-jaxperf/6", SCHEMA,
)  # fmt: skip
_WITHOUT_CPU_SECONDS = "pytest-jaxperf/1"
_WITHOUT_SIZES = frozenset(READABLE_SCHEMAS[:3])
_WITHOUT_TRACE_EQNS = frozenset(READABLE_SCHEMAS[:4])
_FIRST_CALL_REQUIRED = frozenset(READABLE_SCHEMAS[:5])
# The schemas whose every entry holds its wall seconds, whole eager block and runtime.
_ALL_REQUIRED = frozenset(READABLE_SCHEMAS[:6])

# What the self-check and the verdicts call the lowered programs' sizes (SIZE_FIELDS) when
# they cannot be read.
PROGRAM_SIZE = "program size"

# Bounds what a pathological test (a jit inside a loop of 10,000) can put in a report.
MAX_REASONS = 10
# The source lines kept per function in `FunctionRecord.eqn_sources` (the top lines by
# equations; besides them, as many lines again that show a known pattern).
MAX_SOURCE_LINES = 6
# The third value of a line in `FunctionRecord.eqn_sources`: its patterns, summed: 1 where
# the line calls Python's builtin sum, 2 where it made a scan or fori_loop with `unroll`
# above 1, plus 4 x the KiB of the closed-over array constants its equations use.
SOURCE_BUILTIN_SUM, SOURCE_UNROLLED, SOURCE_CONST_KIB = 1, 2, 4

# Seconds are written rounded to this many decimals (microseconds).
TIME_DIGITS = 6
# The outcomes of a test whose record is complete (RecordedTest.comparable).
COMPARABLE_OUTCOMES = ("passed", "regressed")

# How a Counts field is read and written; the field lists below, the reader, the writer and the
# file layout's templates all follow from these tags, so a new field is added in one place.
_COUNT, _SECONDS, _CPU_SECONDS, _SIZE = "count", "seconds", "cpu_seconds", "size"


def _count() -> Any:
    return field(default=0, metadata={"json": _COUNT})


def _seconds() -> Any:
    # None where not stored (a baseline's wall seconds of a test gated on CPU seconds).
    return field(default=0.0, metadata={"json": _SECONDS})


def _cpu_seconds() -> Any:
    # None where not measured (files older than /2).
    return field(default=0.0, metadata={"json": _CPU_SECONDS})


def _size() -> Any:
    # None where not measured (files older than /4, or /5 for trace_eqns; a program that was
    # not found).
    return field(default=0, metadata={"json": _SIZE})


@dataclass
class Counts:
    """Traces, lowerings, backend compiles and their seconds for one function or a total;
    and the size of the programs: jaxpr equations (recursive) and operations of the
    StableHLO module handed to XLA, summed over the lowerings; HLO instructions of what XLA
    made of them (`xla_ops`, after its passes), summed over the compiles; jaxpr equations
    of the top-level jit traces (`trace_eqns`, counted as the lowerings' are), summed over
    those traces: the size of a program only traced (eval_shape, make_jaxpr)."""

    traces: int = _count()
    lowerings: int = _count()
    compiles: int = _count()
    cache_hits: int = _count()
    trace_s: float | None = _seconds()
    lower_s: float | None = _seconds()
    compile_s: float | None = _seconds()
    trace_cpu_s: float | None = _cpu_seconds()
    lower_cpu_s: float | None = _cpu_seconds()
    compile_cpu_s: float | None = _cpu_seconds()
    jaxpr_eqns: int | None = _size()
    hlo_ops: int | None = _size()
    xla_ops: int | None = _size()
    trace_eqns: int | None = _size()

    @property
    def total_s(self) -> float | None:
        """Wall seconds spent tracing, lowering and compiling; None where not stored (a
        baseline saved on another compile clock than wall)."""
        values = [getattr(self, name) for name in TIME_FIELDS]
        return None if None in values else sum(values)

    @property
    def total_cpu_s(self) -> float | None:
        """Process CPU seconds of the same phases (XLA's compile threads included); None
        when not measured."""
        values = [getattr(self, name) for name in CPU_FIELDS]
        return None if None in values else sum(values)

    def add(self, other: Counts) -> None:
        for name in COUNT_FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in TIME_FIELDS + CPU_FIELDS + SIZE_FIELDS:
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, None if mine is None or theirs is None else mine + theirs)


class NotStored(ValueError):
    """A value a baseline leaves out (storage/resave.py, `baseline_form`) asked of it where a
    run's record, which holds every value, is needed."""


_T = TypeVar("_T")


def held(value: _T | None, what: str) -> _T:
    """`value`, of a record that holds it (every run's); NotStored, naming `what`, where it is
    left out: a baseline given where a run file is needed."""
    if value is None:
        raise NotStored(
            f"{what} not stored: a baseline holds only what the gate reads (use the run file, "
            "--jaxperf-json)"
        )
    return value


def _tagged(tag: str) -> tuple[str, ...]:
    return tuple(f.name for f in fields(Counts) if f.metadata["json"] == tag)


COUNT_FIELDS = _tagged(_COUNT)
TIME_FIELDS = _tagged(_SECONDS)
CPU_FIELDS = _tagged(_CPU_SECONDS)
SIZE_FIELDS = _tagged(_SIZE)
NUMBER_FIELDS = tuple(f.name for f in fields(Counts))
SECONDS_FIELDS = TIME_FIELDS + CPU_FIELDS


@dataclass
class FunctionRecord(Counts):
    """One jitted user function, identified by name and definition site.

    `eqn_sources`: where the equations of its programs come from, the top source lines
    (MAX_SOURCE_LINES, and lines of a known pattern) of the programs its gated jaxpr
    equations count (its lowerings' where it lowered, else its top-level traces'), as
    "path:line" (rootdir-
    relative, like `site`; "" for equations made with no frame outside JAX) -> [equations,
    distinct primitives among them, its patterns (SOURCE_BUILTIN_SUM ...: 0 for none)].
    Empty: not recorded (a file written before it was, or a program not read)."""

    name: str = ""
    site: str = ""
    retrace_reasons: list[str] = field(default_factory=list)
    eqn_sources: dict[str, list[int]] = field(default_factory=dict)
    # Instructions of its traces, lowerings and backend compiles on valgrind's simulated
    # CPU, by phase ("trace", "lower", "compile"), less spin-waits and fusion-compiler
    # construction: the compile clock's (--jaxperf-compile-clock=instructions); empty where
    # not counted. Written only where counted: other files read the same.
    instructions: dict[str, int] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return function_key(self.name, self.site)


def function_key(name: str, site: str) -> str:
    return f"{name} at {site}" if site else name


@dataclass(frozen=True)
class RuntimeStats:
    """Per-call seconds over timed rounds (each round's time divided by its iterations).

    `rounds` is the number of timed rounds and `iterations` the calls in each; a measurement
    that gives every call fresh inputs times one call per round, so there `iterations` is 1
    and `rounds` is the number of timed calls. `samples_s` keeps (at most a hundred of) the
    rounds for rank tests against a later run. A baseline holds what the runtime rule reads
    (the median, the fastest round, the CPU median, the rounds: `samples_s`); the others
    (RUNTIME_OPTIONAL) are None there; a run file holds them all."""

    min_s: float
    max_s: float | None
    median_s: float
    mean_s: float | None
    stddev_s: float | None
    q1_s: float | None
    q3_s: float | None
    iqr_s: float | None
    rounds: int | None
    iterations: int | None
    outliers: int | None
    samples_s: tuple[float, ...]
    # Median process CPU seconds per call over the same rounds; measured on the CPU backend
    # only (device work is not process CPU time), else None.
    cpu_median_s: float | None = None

    def rounded(self) -> RuntimeStats:
        """As reports keep them: six significant digits, enough for any gate; four for the
        samples, plenty for a rank test. Both keep a baseline diff readable."""
        changes: dict[str, Any] = {
            f.name: significant(value, 6)
            for f in fields(self)
            if type(value := getattr(self, f.name)) is float
        }
        changes["samples_s"] = tuple(significant(v, 4) for v in self.samples_s)
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class ProgramMetrics:
    """Deterministic size metrics of a compiled program; None where the backend has none."""

    jaxpr_eqns: int
    hlo_ops: int | None  # None: read from a file before /4, which counted them otherwise
    flops: float | None = None
    transcendentals: float | None = None
    bytes_accessed: float | None = None
    argument_bytes: int | None = None
    output_bytes: int | None = None
    temp_bytes: int | None = None
    peak_bytes: int | None = None


# What a baseline's runtime block leaves out (from /7 on): no rule reads them of a baseline.
RUNTIME_OPTIONAL = (
    "max_s", "mean_s", "stddev_s", "q1_s", "q3_s", "iqr_s", "rounds", "iterations", "outliers",
)  # fmt: skip
# The wall seconds of a test, a function, the eager block (TIME_FIELDS, named here for what
# a baseline leaves out).
WALL_FIELDS = ("trace_s", "lower_s", "compile_s")


# Deterministic for a given jax version, in report order.
STATIC_METRICS = tuple(f.name for f in fields(ProgramMetrics))
# The program sizes of the recorded functions (SIZE_FIELDS), as breaches name them (and a
# benchmark's program metrics in a cause line); a benchmark's breach keeps the field's name
# (`jaxpr_eqns of benchmark 'b'`), as its marker limit and its program metrics do.
SIZE_WORDS = {
    "jaxpr_eqns": "jaxpr equations", "hlo_ops": "StableHLO ops", "xla_ops": "optimized HLO ops",
    "trace_eqns": "traced jaxpr equations",
}  # fmt: skip


@dataclass(frozen=True)
class BenchmarkEntry:
    """What one `jaxperf.benchmark` recorded: first call, steady state, program metrics."""

    kind: ClassVar[Literal["benchmark"]] = "benchmark"
    # The first call's seconds, and its trace, lower and backend-compile wall seconds (never
    # gated: the test's compile seconds are). None in a baseline, which keeps only what the
    # gate reads; a run file has them.
    first_call_s: float | None
    trace_s: float | None
    lower_s: float | None
    compile_s: float | None
    compiled_on_first_call: bool
    runtime: RuntimeStats | None = None
    metrics: ProgramMetrics | None = None
    # The op-by-op median and the calls after which jit pays off; with `eager=True` only.
    eager_median_s: float | None = None
    break_even_calls: float | None = None
    device_peak_bytes: int | None = None
    # The function given was not jitted (no `.lower`), so the benchmark wrapped it in jax.jit:
    # its runtime is then that of a compiled program whatever the code does with it.
    jitted_by_benchmark: bool = False
    # Instructions one steady-state call executed on valgrind's simulated CPU, less the
    # spinning of waiting thread-pool workers; measured under the instructions clock only.
    instructions: int | None = None

    def program_metric(self, name: str) -> float | None:
        """A program metric by name; None when not measured."""
        return None if self.metrics is None else getattr(self.metrics, name)


@dataclass(frozen=True)
class ScalingEntry:
    """What one `jaxperf.scaling` recorded: a metric at growing sizes and its growth."""

    kind: ClassVar[Literal["scaling"]] = "scaling"
    metric: str
    sizes: tuple[int, ...]
    values: tuple[float, ...]
    exponent: float
    max_exponent: float | None = None


Entry = BenchmarkEntry | ScalingEntry
# A benchmark's first-call seconds: written where kept, left out of a baseline.
FIRST_CALL_FIELDS = ("first_call_s", "trace_s", "lower_s", "compile_s")


def short_name(name: str) -> str:
    """The last part of a qualified name: 'Model.__call__' -> '__call__' (the name files
    written before qualified names hold, and that a marker limit may use)."""
    return name.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Phases:
    """One function's lower and backend-compile seconds (wall and process CPU)."""

    lower_s: float = 0.0
    compile_s: float = 0.0
    lower_cpu_s: float | None = 0.0
    compile_cpu_s: float | None = 0.0


@dataclass(frozen=True)
class Remeasured:
    """What confirming a test's compile-time breach measured (see `confirmation`): by
    function key, the fastest lower and backend seconds of its kept programs compiled again
    over `repeats` repeats (`functions`), and what those same programs took when the test
    first compiled them (`first`: a function that lowered more programs than were kept is
    confirmed on the kept ones, the others keep their first figures); the seconds the
    confirmation took; the functions that could not be re-measured, with why. Written into
    the run file, so that `jaxperf compare` gives the verdict the plugin gave."""

    functions: Mapping[str, Phases]
    repeats: int
    seconds: float
    left_out: Mapping[str, str] = field(default_factory=dict)
    first: Mapping[str, Phases] = field(default_factory=dict)


@dataclass
class RecordedTest(Counts):
    """Everything recorded for one test; the totals cover user functions only."""

    # pytest's outcome (passed, failed, skipped), or "regressed" when the plugin failed the
    # test; the plugin's judgement is compare.Verdict, not this.
    outcome: str = "passed"
    functions: dict[str, FunctionRecord] = field(default_factory=dict)
    # Compiles of JAX's own helpers during eager ops (jnp.ones -> broadcast_in_dim, ...).
    eager: Counts = field(default_factory=Counts)
    benchmarks: dict[str, Entry] = field(default_factory=dict)
    # Where this entry was measured, when not where the report's other entries were: a
    # baseline keeps the entries of earlier runs (a partial --jaxperf-save on another machine,
    # say) with their own environment, and each is gated against its own.
    environment: dict[str, Any] | None = None
    # The keywords of the test's @pytest.mark.jaxperf (limits, tolerances), as JSON values:
    # `jaxperf compare` gates the test with them, as the plugin did. Written when not empty.
    marker: dict[str, Any] = field(default_factory=dict)
    # What the plugin re-measured to confirm a compile-time breach of this test (a run
    # report's, never a baseline's): `jaxperf compare` judges the breach with it.
    confirmation: Remeasured | None = None

    @property
    def comparable(self) -> bool:
        """Whether the record is complete enough to compare: the test passed, or the plugin
        failed it (a test that failed by itself recorded only part of its work)."""
        return self.outcome in COMPARABLE_OUTCOMES

    def recompute_totals(self) -> None:
        total = Counts()
        for fn in self.functions.values():
            total.add(fn)
        for name in NUMBER_FIELDS:
            setattr(self, name, getattr(total, name))

    def benchmark_entries(self) -> list[tuple[str, BenchmarkEntry]]:
        """The `jaxperf.benchmark` entries (not the scaling ones), sorted by label."""
        return [(k, e) for k, e in sorted(self.benchmarks.items()) if type(e) is BenchmarkEntry]


@dataclass
class RunRecord:
    """What one run recorded: its environment and each test's record. A baseline is a saved
    run record; rendered outputs (terminal, markdown, HTML) are reports."""

    environment: dict[str, Any] = field(default_factory=dict)
    # A dict, or a big baseline's entries kept as text until asked for (a read-only
    # storage.entries.Entries; see there).
    tests: Mapping[str, RecordedTest] = field(default_factory=dict)
    # The schema of the file it was read from (a save says when it converts an older one).
    schema: str = SCHEMA

    def environment_of(self, nodeid: str) -> dict[str, Any]:
        """The environment the test's entry was measured in."""
        rec = self.tests.get(nodeid)
        own = rec.environment if rec is not None else None
        return self.environment if own is None else own


# -- writing -----------------------------------------------------------------------------------


def _round(value: float) -> float:
    # Microsecond resolution keeps review diffs readable; finer digits are noise.
    return round(value, TIME_DIGITS)


def _round_or_none(value: float | None) -> float | None:
    return None if value is None else _round(value)


def significant(value: float, digits: int) -> float:
    """`value` to `digits` significant digits."""
    return float(f"{value:.{digits}g}")


def _counts_to_json(c: Counts) -> dict[str, Any]:
    out: dict[str, Any] = {name: getattr(c, name) for name in COUNT_FIELDS}
    # Wall seconds are written where stored (a baseline's of a test gated on CPU seconds: none).
    out.update((name, _round(v)) for name in TIME_FIELDS if (v := getattr(c, name)) is not None)
    out.update({name: _round_or_none(getattr(c, name)) for name in CPU_FIELDS})
    out.update({name: getattr(c, name) for name in SIZE_FIELDS})
    return out


# The fields of the eager block a baseline leaves out (from /7 on): only its counts are read
# of a baseline (diagnose.compile_storm, its compiles).
EAGER_OPTIONAL = tuple(name for name in NUMBER_FIELDS if name not in COUNT_FIELDS)


def no_eager() -> Counts:
    """The eager block of a baseline's entry that has none: no helper compiled, nothing else
    stored (what a baseline's block of all-0 counts reads as, and is written as: left out)."""
    left_out: dict[str, Any] = dict.fromkeys(EAGER_OPTIONAL)
    return Counts(**left_out)


def eager_to_json(c: Counts) -> dict[str, Any] | None:
    """The eager block as written: whole (a run file's); its counts alone where it holds
    nothing else (a baseline's); None (left out) where those are all 0 too."""
    if any(getattr(c, name) is not None for name in EAGER_OPTIONAL):
        return _counts_to_json(c)
    if not any(getattr(c, name) for name in COUNT_FIELDS):
        return None
    return {name: getattr(c, name) for name in COUNT_FIELDS}


def function_to_json(fn: FunctionRecord) -> dict[str, Any]:
    out = _counts_to_json(fn)
    out.update(name=fn.name, site=fn.site, retrace_reasons=list(fn.retrace_reasons))
    if fn.eqn_sources:  # written only where recorded: a file without them reads the same
        out["eqn_sources"] = {k: list(v) for k, v in sorted(fn.eqn_sources.items())}
    if fn.instructions:
        out["instructions"] = dict(sorted(fn.instructions.items()))
    return out


def runtime_to_json(stats: RuntimeStats) -> dict[str, Any]:
    out = {f.name: v for f in fields(stats) if (v := getattr(stats, f.name)) is not None}
    out["samples_s"] = list(stats.samples_s)
    return out


def entry_to_json(entry: Entry) -> dict[str, Any]:
    """A benchmark or scaling entry as written (its values as they are: the fixture rounds
    them when it makes the entry): the program metrics inline, absent values left out."""
    if isinstance(entry, ScalingEntry):
        return {
            "kind": entry.kind,
            "metric": entry.metric,
            "sizes": list(entry.sizes),
            "values": list(entry.values),
            "exponent": entry.exponent,
            "max_exponent": entry.max_exponent,
        }
    out: dict[str, Any] = {"kind": entry.kind}
    # Written where kept (a run file's; a baseline holds none of them).
    out.update((k, v) for k in FIRST_CALL_FIELDS if (v := getattr(entry, k)) is not None)
    out["compiled_on_first_call"] = entry.compiled_on_first_call
    if entry.runtime is not None:
        out["runtime"] = runtime_to_json(entry.runtime)
    if entry.metrics is not None:
        out.update((k, v) for k in STATIC_METRICS if (v := getattr(entry.metrics, k)) is not None)
    if entry.eager_median_s is not None:
        out["eager_median_s"] = entry.eager_median_s
        out["break_even_calls"] = entry.break_even_calls
    if entry.device_peak_bytes is not None:
        out["device_peak_bytes"] = entry.device_peak_bytes
    if entry.jitted_by_benchmark:  # written only when true: older entries stay as they were
        out["jitted_by_benchmark"] = True
    if entry.instructions is not None:
        out["instructions"] = entry.instructions
    return out


def recorded_test_to_json(rec: RecordedTest) -> dict[str, Any]:
    out = _counts_to_json(rec)
    out["outcome"] = rec.outcome
    out["functions"] = {k: function_to_json(f) for k, f in sorted(rec.functions.items())}
    eager = eager_to_json(rec.eager)
    if eager is not None:
        out["eager"] = eager
    out["benchmarks"] = {k: entry_to_json(e) for k, e in sorted(rec.benchmarks.items())}
    if rec.environment is not None:
        out["environment"] = dict(rec.environment)
    if rec.marker:
        out["marker"] = rec.marker
    if rec.confirmation is not None:
        out["confirmation"] = remeasured_to_json(rec.confirmation)
    return out


def _phases_to_json(p: Phases) -> dict[str, Any]:
    return {
        "lower_s": _round(p.lower_s),
        "compile_s": _round(p.compile_s),
        "lower_cpu_s": _round_or_none(p.lower_cpu_s),
        "compile_cpu_s": _round_or_none(p.compile_cpu_s),
    }


def remeasured_to_json(m: Remeasured) -> dict[str, Any]:
    return {
        "repeats": m.repeats,
        "seconds": _round(m.seconds),
        "functions": {k: _phases_to_json(p) for k, p in sorted(m.functions.items())},
        "first": {k: _phases_to_json(p) for k, p in sorted(m.first.items())},
        "left_out": dict(sorted(m.left_out.items())),
    }


def run_to_json(run: RunRecord) -> dict[str, Any]:
    return {
        "schema": run.schema,
        "environment": dict(run.environment),
        "tests": {k: recorded_test_to_json(t) for k, t in sorted(run.tests.items())},
    }


# -- reading -----------------------------------------------------------------------------------
# One reader, checking each value once. The path of a value (`tests['t'].functions['f'].traces`)
# is formatted only when the value is wrong, which keeps reading a big file fast.


_INF = math.inf


class FormatError(ValueError):
    """A report or baseline document does not have the expected shape; the text says where."""


def _expect(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise FormatError(f"{where}: {what}")


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _count_of(value: Any, where: str, name: str) -> int:
    if type(value) is int and value >= 0:
        return value
    _expect(_is_int(value) and value >= 0, f"{where}.{name}", f"expected a count, got {value!r}")
    return int(value)


def _seconds_of(value: Any, where: str, name: str) -> float:
    if type(value) is float and 0.0 <= value < math.inf:
        return value
    _expect(_is_num(value) and value >= 0, f"{where}.{name}", f"expected seconds, got {value!r}")
    return float(value)


def _cpu_seconds_of(value: Any, where: str, name: str) -> float | None:
    if value is None:
        return None
    if type(value) is float and 0.0 <= value < math.inf:
        return value
    _expect(
        _is_num(value) and value >= 0,
        f"{where}.{name}",
        f"expected CPU seconds or null, got {value!r}",
    )
    return float(value)


def _size_of(value: Any, where: str, name: str) -> int | None:
    if value is None:
        return None
    return _count_of(value, where, name)


_READ = {
    _COUNT: _count_of, _SECONDS: _seconds_of, _CPU_SECONDS: _cpu_seconds_of, _SIZE: _size_of
}  # fmt: skip
_NUMBER_READERS = tuple((f.name, _READ[f.metadata["json"]]) for f in fields(Counts))
# What a file as this version writes it holds: every field, counts ints, seconds floats.
_PLAIN_TYPES = tuple(
    int if f.metadata["json"] in (_COUNT, _SIZE) else float for f in fields(Counts)
)
_NUMBERS_OF = operator.itemgetter(*NUMBER_FIELDS)
# The same without the wall seconds (a baseline's gated on CPU seconds: /7), which follow the
# counts in NUMBER_FIELDS.
_SLIM_NUMBER_FIELDS = tuple(name for name in NUMBER_FIELDS if name not in WALL_FIELDS)
_SLIM_NUMBERS_OF = operator.itemgetter(*_SLIM_NUMBER_FIELDS)
_SLIM_TYPES = tuple(t for name, t in zip(NUMBER_FIELDS, _PLAIN_TYPES) if name not in WALL_FIELDS)
_WALL_AT = NUMBER_FIELDS.index(WALL_FIELDS[0])
_NO_WALL_VALUES = (None,) * len(WALL_FIELDS)
assert NUMBER_FIELDS[_WALL_AT : _WALL_AT + len(WALL_FIELDS)] == WALL_FIELDS


def _numbers_of(
    data: Any, where: str, schema: str, optional: tuple[str, ...] = WALL_FIELDS
) -> tuple[Any, ...]:
    """The Counts fields of `data` in NUMBER_FIELDS order, each checked. A file as this
    version writes it passes one check of all values together; anything else (CPU seconds
    not measured, a wrong value, a field missing) is read value by value. Every field is
    required (a missing one would read as 0 and then be gated as "baseline 0 -> now 1"),
    but CPU seconds in a /1 file, sizes in files before /4 and traced equations in files
    before /5, which have none; and from /7 on the fields `optional` (a baseline's wall
    seconds; the eager block's all but its counts), None where left out."""
    if type(data) is not dict:
        raise FormatError(f"{where}: expected an object, got {type(data).__name__}")
    try:
        values = _NUMBERS_OF(data)
        if tuple(map(type, values)) == _PLAIN_TYPES and min(values) >= 0 and sum(values) < _INF:
            return values  # type: ignore[no-any-return]
    except (KeyError, OverflowError):  # a field missing; a count too big for a float
        pass
    if (
        schema not in _ALL_REQUIRED
        and "trace_s" in optional
        and data.keys().isdisjoint(WALL_FIELDS)
    ):
        try:  # no wall seconds (a baseline's gated on CPU seconds): checked at once too
            values = _SLIM_NUMBERS_OF(data)
            if tuple(map(type, values)) == _SLIM_TYPES and min(values) >= 0 and sum(values) < _INF:
                return values[:_WALL_AT] + _NO_WALL_VALUES + values[_WALL_AT:]  # type: ignore[no-any-return]
        except (KeyError, OverflowError):
            pass
    if schema == _WITHOUT_CPU_SECONDS:
        data = {**dict.fromkeys(CPU_FIELDS), **data}
    if schema in _WITHOUT_SIZES:
        data = {**dict.fromkeys(SIZE_FIELDS), **data}
    elif schema in _WITHOUT_TRACE_EQNS:
        data = {"trace_eqns": None, **data}
    left_out = () if schema in _ALL_REQUIRED else [k for k in optional if k not in data]
    return tuple(
        None if name in left_out else read(_required(data, name, where), where, name)
        for name, read in _NUMBER_READERS
    )


def _eager_of(data: dict[str, Any], where: str, schema: str) -> Counts:
    """A test entry's eager block; from /7 on left out where none (all 0) and its counts
    alone in a baseline."""
    if schema not in _ALL_REQUIRED:
        if "eager" not in data:
            return no_eager()
        return Counts(*_numbers_of(data["eager"], f"{where}.eager", schema, EAGER_OPTIONAL))
    return Counts(*_numbers_of(_required(data, "eager", where), f"{where}.eager", schema))


def _required(data: dict[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise FormatError(f"{where}: missing field {key!r}")
    return data[key]


def _string_of(data: dict[str, Any], key: str, where: str) -> str:
    value = _required(data, key, where)
    if type(value) is not str:
        raise FormatError(f"{where}.{key}: expected a string")
    return str(value)


# A function entry as this version writes it: its values in field order, and their types.
_FUNCTION_OF = operator.itemgetter(*NUMBER_FIELDS, "name", "site", "retrace_reasons")
_PLAIN_FUNCTION_TYPES = (*_PLAIN_TYPES, str, str, list)


def function_from_json(data: Any, where: str, schema: str = SCHEMA) -> FunctionRecord:
    try:
        values = _FUNCTION_OF(data)
        numbers, reasons = values[: len(_PLAIN_TYPES)], values[-1]
        if (
            tuple(map(type, values)) == _PLAIN_FUNCTION_TYPES
            and min(numbers) >= 0
            and sum(numbers) < _INF
            and set(map(type, reasons)) <= {str}
        ):
            # One check of all values together, in C: the usual case on a big file.
            fn = FunctionRecord(*values[:-1], list(reasons))  # type: ignore[call-arg]
            if "eqn_sources" in data:
                fn.eqn_sources = _sources_of(data["eqn_sources"], where)
            if "instructions" in data:
                fn.instructions = _phase_instructions(data["instructions"], where)
            return fn
    except (TypeError, KeyError, OverflowError):  # not a dict, a field missing, a huge count
        pass
    numbers = _numbers_of(data, where, schema)
    reasons = _required(data, "retrace_reasons", where)
    if type(reasons) is not list or not all(type(r) is str for r in reasons):
        raise FormatError(f"{where}.retrace_reasons: expected a list of strings")
    # The numbers by position (they are the first fields, in order), the rest by name.
    fn = FunctionRecord(*numbers)
    fn.name = _string_of(data, "name", where)
    fn.site = _string_of(data, "site", where)
    fn.retrace_reasons = list(reasons)
    fn.eqn_sources = _sources_of(data.get("eqn_sources", {}), where)
    fn.instructions = _phase_instructions(data.get("instructions", {}), where)
    return fn


def _phase_instructions(value: Any, where: str) -> dict[str, int]:
    """A function's `instructions` as written: phase name -> a count."""
    _expect(
        type(value) is dict and all(type(k) is str and _is_count(v) for k, v in value.items()),
        f"{where}.instructions",
        "expected an object of phase names to counts",
    )
    return dict(value)


def _sources_ok(value: Any) -> bool:
    """Whether `value` is a function's `eqn_sources` as written: "path:line" -> three counts."""
    return type(value) is dict and all(
        type(k) is str and type(v) is list and len(v) == 3 and all(_is_count(n) for n in v)
        for k, v in value.items()
    )


def _sources_of(value: Any, where: str) -> dict[str, list[int]]:
    _expect(
        _sources_ok(value),
        f"{where}.eqn_sources",
        "expected an object of source lines -> [equations, primitives, patterns]",
    )
    return {k: list(v) for k, v in value.items()}


def recorded_test_from_json(data: Any, where: str, schema: str = SCHEMA) -> RecordedTest:  # noqa: PT028
    numbers = _numbers_of(data, where, schema)
    # (A baseline's entry (/7) may leave out its wall seconds, all three, and its eager block.)
    left_out = ("eager" not in data) + (numbers[_WALL_AT] is None) * len(WALL_FIELDS)
    if (
        len(data) == _TEST_FIELDS - left_out
        and schema == SCHEMA  # an older entry with environment and marker has as many keys
        and type(outcome := data.get("outcome")) is str
        and type(functions := data.get("functions")) is dict
        and type(benchmarks := data.get("benchmarks")) is dict
        and ("eager" not in data or type(data["eager"]) is dict)
        and not data.keys() & _OWN_KEYS
    ):
        # A test entry as this version writes it (no environment or marker of its own).
        return RecordedTest(  # type: ignore[call-arg]
            *numbers,
            outcome,
            {
                k: function_from_json(v, f"{where}.functions[{k!r}]", schema)
                for k, v in functions.items()
            },
            _eager_of(data, where, schema),
            {
                k: entry_from_json(v, f"{where}.benchmarks[{k!r}]", schema)
                for k, v in benchmarks.items()
            },
        )
    return _test_from_json(data, where, schema, numbers)


# The keys of a test entry as written: its numbers, outcome, functions, eager, benchmarks.
_TEST_FIELDS = len(NUMBER_FIELDS) + 4
# What an entry holds beside those where it has them (read by _test_from_json).
_OWN_KEYS = frozenset({"environment", "marker", "confirmation"})


def _test_from_json(data: Any, where: str, schema: str, numbers: tuple[Any, ...]) -> RecordedTest:
    functions = _required(data, "functions", where)
    if type(functions) is not dict:
        raise FormatError(f"{where}.functions: expected an object")
    benchmarks = _required(data, "benchmarks", where)
    if type(benchmarks) is not dict:
        raise FormatError(f"{where}.benchmarks: expected an object")
    environment = data.get("environment")
    if environment is not None and type(environment) is not dict:
        raise FormatError(f"{where}.environment: expected an object")
    rec = RecordedTest(*numbers)
    rec.outcome = _string_of(data, "outcome", where)
    rec.environment = environment
    rec.functions = {
        k: function_from_json(v, f"{where}.functions[{k!r}]", schema) for k, v in functions.items()
    }
    rec.eager = _eager_of(data, where, schema)
    rec.benchmarks = {
        k: entry_from_json(v, f"{where}.benchmarks[{k!r}]", schema) for k, v in benchmarks.items()
    }
    marker = data.get("marker", {})
    if type(marker) is not dict or not all(type(k) is str for k in marker):
        raise FormatError(f"{where}.marker: expected an object")
    rec.marker = marker
    if "confirmation" in data:
        rec.confirmation = remeasured_from_json(data["confirmation"], f"{where}.confirmation")
    return rec


def _phases_from_json(data: Any, where: str) -> Phases:
    _expect(type(data) is dict, where, "expected an object")
    seconds = (
        _field(data, "lower_s", where, _is_seconds, "seconds"),
        _field(data, "compile_s", where, _is_seconds, "seconds"),
    )
    cpu = [data.get(k) for k in ("lower_cpu_s", "compile_cpu_s")]
    for key, value in zip(("lower_cpu_s", "compile_cpu_s"), cpu):
        _expect(value is None or _is_seconds(value), f"{where}.{key}", "expected seconds or null")
    return Phases(*seconds, *cpu)


def remeasured_from_json(data: Any, where: str) -> Remeasured:
    _expect(type(data) is dict, where, "expected an object")
    repeats = _field(data, "repeats", where, _is_count, "a count")
    seconds = _field(data, "seconds", where, _is_seconds, "seconds")
    parts = {}
    for key in ("functions", "first", "left_out"):
        value = data.get(key, {})
        _expect(type(value) is dict, f"{where}.{key}", "expected an object")
        parts[key] = value
    left_out = parts["left_out"]
    _expect(all(type(v) is str for v in left_out.values()), f"{where}.left_out", "expected strings")
    return Remeasured(
        functions={
            k: _phases_from_json(v, f"{where}.functions[{k!r}]")
            for k, v in parts["functions"].items()
        },
        repeats=repeats,
        seconds=seconds,
        left_out=dict(left_out),
        first={k: _phases_from_json(v, f"{where}.first[{k!r}]") for k, v in parts["first"].items()},
    )


def _field(data: dict[str, Any], key: str, where: str, check: Any, what: str) -> Any:
    # The messages are formatted only for a wrong value: a repr of a long list is not free.
    if key not in data:
        raise FormatError(f"{where}: missing field {key!r}")
    value = data[key]
    if not check(value):
        raise FormatError(f"{where}.{key}: expected {what}, got {value!r}")
    return value


def _optional(data: dict[str, Any], key: str, where: str, check: Any, what: str) -> Any:
    value = data.get(key)
    if value is not None and not check(value):
        raise FormatError(f"{where}.{key}: expected {what}, got {value!r}")
    return value


def _is_seconds(v: object) -> bool:
    return _is_num(v) and v >= 0  # type: ignore[operator]


def _are_seconds(v: list[Any]) -> bool:
    """Whether `v` holds floats only, each seconds (>= 0, finite)."""
    return not v or (set(map(type, v)) == {float} and min(v) >= 0.0 and sum(v) < _INF)


def _is_seconds_list(v: object) -> bool:
    if type(v) is not list:
        return False
    if not v or set(map(type, v)) == {float}:  # the usual case, checked in C
        return not v or (min(v) >= 0.0 and sum(v) < _INF)  # a NaN makes the sum NaN
    return all(map(_is_seconds, v))


def _is_count(v: object) -> bool:
    return _is_int(v) and v >= 0  # type: ignore[operator]


def _only(data: dict[str, Any], known: frozenset[str], where: str) -> None:
    if not known.issuperset(data):
        unknown = sorted(str(k) for k in data if k not in known)
        raise FormatError(f"{where}: unknown field {unknown[0]!r}")


_RUNTIME_KEYS = frozenset(f.name for f in fields(RuntimeStats))
_BENCHMARK_KEYS = frozenset(
    {"kind", "first_call_s", "trace_s", "lower_s", "compile_s", "compiled_on_first_call",
     "runtime", "eager_median_s", "break_even_calls", "device_peak_bytes",
     "jitted_by_benchmark", "instructions", *STATIC_METRICS}
)  # fmt: skip
_SCALING_KEYS = frozenset({"kind", *(f.name for f in fields(ScalingEntry))})


def entry_from_json(data: Any, where: str, schema: str = SCHEMA) -> Entry:
    """A benchmark or scaling entry, every field checked; an unknown field is an error (it
    would be lost on the next save). A benchmark's `hlo_ops` in a file before /4 counted the
    op names of the module's text (no `call`, `return`): read as not measured."""
    if schema == SCHEMA:
        entry = _plain_benchmark(data)
        if entry is not None:
            return entry
    _expect(type(data) is dict, where, f"expected an object, got {type(data).__name__}")
    kind = data.get("kind", "benchmark")
    if kind == "scaling":
        return _scaling_from_json(data, where)
    _expect(
        kind == "benchmark", f"{where}.kind", f"expected 'benchmark' or 'scaling', got {kind!r}"
    )
    _only(data, _BENCHMARK_KEYS, where)
    runtime = data.get("runtime")
    metrics = None
    if "jaxpr_eqns" in data or "hlo_ops" in data:
        hlo_ops = _optional(data, "hlo_ops", where, _is_count, "a count")
        metrics = ProgramMetrics(
            jaxpr_eqns=_field(data, "jaxpr_eqns", where, _is_count, "a count"),
            hlo_ops=None if schema in _WITHOUT_SIZES else hlo_ops,
            **{k: _optional(data, k, where, _is_seconds, "a number") for k in STATIC_METRICS[2:]},
        )
    if schema in _FIRST_CALL_REQUIRED:  # from /6 on left out of a baseline
        for key in FIRST_CALL_FIELDS[1:]:
            _field(data, key, where, _is_seconds, "seconds")
    phases = [_optional(data, k, where, _is_seconds, "seconds") for k in FIRST_CALL_FIELDS[1:]]
    return BenchmarkEntry(
        first_call_s=_optional(data, "first_call_s", where, _is_seconds, "seconds or null"),
        trace_s=None if phases[0] is None else float(phases[0]),
        lower_s=None if phases[1] is None else float(phases[1]),
        compile_s=None if phases[2] is None else float(phases[2]),
        compiled_on_first_call=_field(
            data, "compiled_on_first_call", where, lambda v: type(v) is bool, "true or false"
        ),
        runtime=None
        if runtime is None
        else _runtime_from_json(runtime, f"{where}.runtime", schema),
        metrics=metrics,
        eager_median_s=_optional(data, "eager_median_s", where, _is_seconds, "seconds"),
        break_even_calls=_optional(data, "break_even_calls", where, _is_seconds, "a number"),
        device_peak_bytes=_optional(data, "device_peak_bytes", where, _is_count, "a byte count"),
        jitted_by_benchmark=bool(
            _optional(data, "jitted_by_benchmark", where, lambda v: type(v) is bool, "true")
        ),
        instructions=_optional(data, "instructions", where, _is_count, "a count"),
    )


# The type of each field of a benchmark entry as this version writes it (every value there).
_BENCHMARK_TYPES = {
    "kind": str, "first_call_s": float, "trace_s": float, "lower_s": float, "compile_s": float,
    "compiled_on_first_call": bool, "runtime": dict, "eager_median_s": float,
    "break_even_calls": float, "device_peak_bytes": int, "jitted_by_benchmark": bool,
    "instructions": int, "jaxpr_eqns": int, "hlo_ops": int, "flops": float,
    "transcendentals": float, "bytes_accessed": float, "argument_bytes": int,
    "output_bytes": int, "temp_bytes": int, "peak_bytes": int,
}  # fmt: skip
_REQUIRED_BENCHMARK_KEYS = frozenset({"compiled_on_first_call"})
_NUMBER_TYPES = frozenset({int, float})


def _plain_benchmark(data: Any) -> BenchmarkEntry | None:
    """A benchmark entry as this version writes it, checked with a few calls in C; None for
    anything else (entry_from_json then checks it field by field)."""
    try:
        types = tuple(map(_BENCHMARK_TYPES.__getitem__, data))
    except (KeyError, TypeError):  # an unknown field; not an object
        return None
    if (
        tuple(map(type, data.values())) != types
        or not _REQUIRED_BENCHMARK_KEYS.issubset(data)
        or data.get("kind", "benchmark") != "benchmark"
        or ("hlo_ops" in data and "jaxpr_eqns" not in data)
    ):
        return None
    numbers = [v for v, t in zip(data.values(), types) if t in _NUMBER_TYPES]
    try:
        # (None at all in a baseline's entry of a benchmark that measured no metric.)
        if numbers and not (min(numbers) >= 0 and sum(numbers) < _INF):  # NaN: the sum NaN
            return None
    except OverflowError:  # a count too big for a float
        return None
    runtime = data.get("runtime")
    if runtime is not None:
        runtime = _plain_runtime(runtime)
        if runtime is None:
            return None
    get = data.get
    return BenchmarkEntry(
        first_call_s=get("first_call_s"),
        trace_s=get("trace_s"),
        lower_s=get("lower_s"),
        compile_s=get("compile_s"),
        compiled_on_first_call=data["compiled_on_first_call"],
        runtime=runtime,
        metrics=ProgramMetrics(*map(get, STATIC_METRICS)) if "jaxpr_eqns" in data else None,
        eager_median_s=get("eager_median_s"),
        break_even_calls=get("break_even_calls"),
        device_peak_bytes=get("device_peak_bytes"),
        jitted_by_benchmark=get("jitted_by_benchmark", False),
        instructions=get("instructions"),
    )


# A runtime block as the fixture writes it: every field but the CPU median, in field order.
_RUNTIME_FIELDS = tuple(f.name for f in fields(RuntimeStats))[:-1]
_RUNTIME_OF = operator.itemgetter(*_RUNTIME_FIELDS)
_PLAIN_RUNTIME_TYPES = tuple(
    list if name == "samples_s" else float if name.endswith("_s") else int
    for name in _RUNTIME_FIELDS
)


def _runtime_from_json(data: Any, where: str, schema: str = SCHEMA) -> RuntimeStats:
    quick = _plain_runtime(data, schema not in _ALL_REQUIRED)
    if quick is not None:
        return quick
    return _checked_runtime(data, where, schema)


def _plain_runtime(data: Any, kept: bool = True) -> RuntimeStats | None:
    """A runtime block as the fixture writes it, or (`kept`: a file from /7 on) as a baseline
    holds it (its median, fastest round and rounds), checked at once; None for anything
    else."""
    try:
        cpu = data.get("cpu_median_s")
        whole = len(data) - (cpu is not None) == len(_RUNTIME_FIELDS) or not kept
        getter, types = (
            (_RUNTIME_OF, _PLAIN_RUNTIME_TYPES) if whole else (_KEPT_RUNTIME_OF, _KEPT_TYPES)
        )
        values = getter(data)
        if (
            len(data) - (cpu is not None) == len(types)
            and tuple(map(type, values)) == types
            and (cpu is None or type(cpu) is float)
        ):
            samples = values[-1]
            numbers = list(values[:-1]) + ([cpu] if cpu is not None else [])
            # Samples all floats: an int among them is read as a float, below.
            if min(numbers) >= 0 and sum(numbers) < _INF and _are_seconds(samples):
                # One check of the whole block: the usual case.
                if whole:
                    return RuntimeStats(*values[:-1], tuple(samples), cpu)  # type: ignore[call-arg]
                return RuntimeStats(
                    min_s=values[0], median_s=values[1], samples_s=tuple(samples),
                    cpu_median_s=cpu, **_NO_RUNTIME_OPTIONAL,
                )  # fmt: skip
    except (AttributeError, TypeError, KeyError, OverflowError):  # not a dict, a field missing
        pass
    return None


# A runtime block as a baseline holds it (from /7 on; the CPU median where measured).
_KEPT_RUNTIME_OF = operator.itemgetter("min_s", "median_s", "samples_s")
_KEPT_TYPES = (float, float, list)
_NO_RUNTIME_OPTIONAL: dict[str, Any] = dict.fromkeys(RUNTIME_OPTIONAL)


def _checked_runtime(data: Any, where: str, schema: str = SCHEMA) -> RuntimeStats:
    _expect(type(data) is dict, where, f"expected an object, got {type(data).__name__}")
    _only(data, _RUNTIME_KEYS, where)
    samples = _field(data, "samples_s", where, _is_seconds_list, "a list of seconds")
    # From /7 on a baseline holds only what the runtime rule reads (RUNTIME_OPTIONAL: None).
    optional = () if schema in _ALL_REQUIRED else RUNTIME_OPTIONAL
    values: dict[str, Any] = {}
    for f in fields(RuntimeStats):
        name = f.name
        if name in ("samples_s", "cpu_median_s"):
            continue
        seconds = name.endswith("_s")
        check, what = (_is_seconds, "seconds") if seconds else (_is_count, "a count")
        if name in optional:
            value = _optional(data, name, where, check, what)
        else:
            value = _field(data, name, where, check, what)
        values[name] = float(value) if seconds and value is not None else value
    return RuntimeStats(
        **values,
        samples_s=tuple(map(float, samples)),
        cpu_median_s=_optional(data, "cpu_median_s", where, _is_seconds, "CPU seconds or null"),
    )


def _scaling_from_json(data: dict[str, Any], where: str) -> ScalingEntry:
    _only(data, _SCALING_KEYS, where)
    sizes = _field(data, "sizes", where, lambda v: type(v) is list and all(map(_is_count, v)),
                   "a list of sizes")  # fmt: skip
    values = _field(data, "values", where, lambda v: type(v) is list and all(map(_is_num, v)),
                    "a list of numbers")  # fmt: skip
    _expect(len(sizes) == len(values), f"{where}.values", "expected one value per size")
    return ScalingEntry(
        metric=_field(data, "metric", where, lambda v: type(v) is str, "a metric name"),
        sizes=tuple(sizes),
        values=tuple(float(v) for v in values),
        exponent=float(_field(data, "exponent", where, _is_num, "a number")),
        max_exponent=_optional(data, "max_exponent", where, _is_num, "a number or null"),
    )


def run_from_json(data: Any, *, consume: bool = False) -> RunRecord:
    """The run record of a parsed file, every value checked (FormatError says where one is
    wrong). With `consume`, the caller hands `data` over: the test entries of the current
    schema become the records' own attributes (the fast path), and `data` is changed."""
    _expect(type(data) is dict, "top level", f"expected an object, got {type(data).__name__}")
    schema = data.get("schema")
    _expect(
        schema in READABLE_SCHEMAS,
        "schema",
        f"expected one of {', '.join(map(repr, READABLE_SCHEMAS))}, got {schema!r} "
        "(not a pytest-jaxperf file, or a newer version)",
    )
    env = data.get("environment", {})
    _expect(type(env) is dict, "environment", "expected an object")
    tests = data.get("tests", {})
    _expect(type(tests) is dict, "tests", "expected an object")
    plain = _plain_tests(tests) if consume and schema == SCHEMA else set()
    if plain:
        return RunRecord(environment=dict(env), tests=_tests_from_json(tests, plain))
    return RunRecord(
        environment=dict(env),
        tests={k: recorded_test_from_json(v, f"tests[{k!r}]", schema) for k, v in tests.items()},
        schema=schema,
    )


# -- the fast path -----------------------------------------------------------------------------
# The test entries of a file as this version writes it (no environment or marker of their own)
# are checked all at once, column by column in C: the type of every value, the least and the
# sum of the numbers. Their records are then made without a call per value or per field: each
# record's attributes are the very object its entry was read into (the entry's keys being
# exactly the record's fields), its functions' and eager counts' alike. What does not pass is
# read entry by entry as above, so any error is found and worded as ever.

_FUNCTIONS_AT = 1  # after the numbers: the outcome, then the functions, then the eager block
_new = object.__new__
_TYPE_OF = dict(zip(NUMBER_FIELDS, _PLAIN_TYPES))
_NO_WALL = dict.fromkeys(WALL_FIELDS)
_NO_EAGER_OPTIONAL = dict.fromkeys(EAGER_OPTIONAL)


@dataclass(frozen=True)
class _Shape:
    """One layout of an entry as this version writes it: what `getter` takes of it (its
    numbers, the first `numbers` values, then its other fields) and the types of those."""

    getter: operator.itemgetter[Any]
    types: tuple[type, ...]
    numbers: int
    eager: bool = False


def _shape(wall: bool, keys: tuple[str, ...], types: tuple[type, ...]) -> _Shape:
    names = NUMBER_FIELDS if wall else _SLIM_NUMBER_FIELDS
    return _Shape(
        operator.itemgetter(*names, *keys),
        tuple(_TYPE_OF[name] for name in names) + types,
        len(names),
        "eager" in keys,
    )


def _shapes(keys: tuple[str, ...], types: tuple[type, ...]) -> dict[int, _Shape]:
    """The layouts of an entry with and without its wall seconds (by their numbers of keys)."""
    both = (_shape(wall, keys, types) for wall in (True, False))
    return {len(shape.types): shape for shape in both}


# A test entry with and without its wall seconds and its eager block (left out of a
# baseline's entry whose helpers compiled nothing: /7), by its number of keys.
_TEST_SHAPES = {
    **_shapes(("outcome", "functions", "eager", "benchmarks"), (str, dict, dict, dict)),
    **_shapes(("outcome", "functions", "benchmarks"), (str, dict, dict)),
}
# A function entry with and without its wall seconds; either may have `eqn_sources` besides.
_FUNCTION_SHAPES = _shapes(("name", "site", "retrace_reasons"), (str, str, list))
# The eager block: whole, without wall seconds, its counts alone (a baseline's: /7).
_EAGER_SHAPES = {**_shapes((), ()), len(COUNT_FIELDS): _Shape(
    operator.itemgetter(*COUNT_FIELDS), (int,) * len(COUNT_FIELDS), len(COUNT_FIELDS)
)}  # fmt: skip


def _plain_rows(entries: list[Any], shape: _Shape) -> list[tuple[Any, ...]] | None:
    """What `shape`'s getter takes of each of `entries` (objects of its number of keys, or
    one more, `eqn_sources`, checked by the caller), where each holds values of its types,
    the numbers among them >= 0 and finite; else None."""
    if not entries:
        return []
    try:
        rows = list(map(shape.getter, entries))
        if set(map(tuple, map(map, itertools.repeat(type), rows))) != {shape.types}:
            return None
        of_row = operator.itemgetter(slice(0, shape.numbers))
        numbers = list(itertools.chain.from_iterable(map(of_row, rows)))
        if not numbers or (min(numbers) >= 0 and sum(numbers) < _INF):  # NaN: the sum NaN
            return rows
    except (KeyError, OverflowError):  # a field missing (another in its place); a huge count
        pass
    return None


def _grouped(entries: list[Any], sizes: dict[int, Any]) -> dict[int, list[Any]] | None:
    """`entries` by their number of keys, where each is an object of one of `sizes`; else
    None."""
    if set(map(type, entries)) - {dict}:
        return None
    lengths = list(map(len, entries))
    if not set(lengths) <= sizes.keys():
        return None
    groups: dict[int, list[Any]] = {}
    for size, entry in zip(lengths, entries):
        groups.setdefault(size, []).append(entry)
    return groups


def _plain_tests(tests: dict[Any, Any]) -> set[Any]:
    """The ids of the test entries, in a file of this schema, that the fast path reads: those
    in one of _TEST_SHAPES (so without an environment or marker of their own), the entries
    of a layout that one of them is not as this version writes it excepted; none where any
    of their functions or eager blocks is not."""
    plain: list[Any] = []
    functions: list[Any] = []
    eager: list[Any] = []
    by_size: dict[int, list[Any]] = {}
    for k, v in tests.items():
        if type(v) is dict and len(v) in _TEST_SHAPES:
            by_size.setdefault(len(v), []).append(k)
    for size, ids in by_size.items():
        shape = _TEST_SHAPES[size]
        rows = _plain_rows([tests[k] for k in ids], shape)
        if rows is None:
            continue
        plain += ids
        at = shape.numbers + _FUNCTIONS_AT
        of_tests = map(operator.itemgetter(at), rows)
        functions += itertools.chain.from_iterable(map(dict.values, of_tests))
        if shape.eager:
            eager += map(operator.itemgetter(at + 1), rows)
    return set(plain) if _plain_parts(functions, eager) else set()


def _plain_parts(functions: list[Any], eager: list[Any]) -> bool:
    """Whether the function entries and eager blocks of the plain tests are all as this
    version writes them."""
    # A function entry may have its source lines besides (`eqn_sources`, written where
    # recorded): checked here, the other fields as ever.
    fn_sizes = {size + more: size for size in _FUNCTION_SHAPES for more in (0, 1)}
    fn_groups = _grouped(functions, fn_sizes)
    eager_groups = _grouped(eager, _EAGER_SHAPES)
    if fn_groups is None or eager_groups is None:
        return False
    for size, group in eager_groups.items():
        if _plain_rows(group, _EAGER_SHAPES[size]) is None:
            return False
    for size, group in fn_groups.items():
        shape = _FUNCTION_SHAPES[fn_sizes[size]]
        if size != fn_sizes[size] and not all(_sources_ok(f.get("eqn_sources")) for f in group):
            return False
        rows = _plain_rows(group, shape)
        if rows is None:
            return False
        reasons = itertools.chain.from_iterable(map(operator.itemgetter(-1), rows))
        if not set(map(type, reasons)) <= {str}:
            return False
    return True


def _adopted(cls: type[Any], entries: list[dict[str, Any]]) -> list[Any]:
    """Records of `cls` whose attributes are `entries` (objects holding exactly its fields)."""
    records = list(map(_new, itertools.repeat(cls, len(entries))))
    for _ in map(setattr, records, itertools.repeat("__dict__"), entries):
        pass
    return records


def _completed(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`entries` with what a baseline leaves out (from /7 on) put in as None: the wall
    seconds where there are none; an eager block's all but its counts where it holds them
    alone. (Loops in C: a big baseline has tens of thousands of entries.)"""
    has_wall = map(operator.contains, entries, itertools.repeat("trace_s"))
    slim = list(itertools.compress(entries, map(operator.not_, has_wall)))
    if slim:
        counts_alone = map(operator.eq, map(len, slim), itertools.repeat(len(COUNT_FIELDS)))
        alone = list(map(bool, counts_alone))
        for of, more in ((alone, _NO_EAGER_OPTIONAL), (map(operator.not_, alone), _NO_WALL)):
            collections.deque(
                map(dict.update, itertools.compress(slim, of), itertools.repeat(more)), 0
            )
    return entries


def _tests_from_json(tests: dict[str, Any], plain: set[str]) -> dict[str, RecordedTest]:
    """The records of `tests`: those in `plain` (checked by _plain_tests) made of their
    entries, the others read entry by entry; in the file's order, so that the first error
    found (in a benchmark entry, or in an entry read the careful way) is the first in it."""
    entries = _completed([tests[k] for k in tests if k in plain])
    function_entries = list(itertools.chain.from_iterable(e["functions"].values() for e in entries))
    for f in _completed(function_entries):
        if "eqn_sources" not in f:  # no source lines recorded (an attribute of each)
            f["eqn_sources"] = {}
        f["instructions"] = {}  # files with them are read the careful way
    functions = iter(_adopted(FunctionRecord, function_entries))
    blocks = [e["eager"] for e in entries if "eager" in e]
    eager = iter(_adopted(Counts, _completed(blocks)))
    records = iter(_adopted(RecordedTest, entries))
    out: dict[str, RecordedTest] = {}
    for nodeid, data in tests.items():
        where = f"tests[{nodeid!r}]"
        if nodeid not in plain:
            out[nodeid] = recorded_test_from_json(data, where, SCHEMA)
            continue
        # `data` is the record's attributes: its entries become records in place.
        names = data["functions"]
        data["functions"] = dict(zip(names, itertools.islice(functions, len(names))))
        data["eager"] = next(eager) if "eager" in data else no_eager()
        benchmarks = data["benchmarks"]
        if benchmarks:
            data["benchmarks"] = {
                k: entry_from_json(v, f"{where}.benchmarks[{k!r}]", SCHEMA)
                for k, v in benchmarks.items()
            }
        data["environment"] = None
        data["marker"] = {}
        data["confirmation"] = None
        out[nodeid] = next(records)
    return out


# Names before 0.2, kept for one release: `TestRecord` started with "Test", so pytest tried
# to collect it wherever it was imported into a test module.
_DEPRECATED = {"TestRecord": "RecordedTest", "Report": "RunRecord"}


def renamed(name: str, stacklevel: int = 2) -> Any:
    """The class an old name stands for, with a DeprecationWarning at the importer's line."""
    new = _DEPRECATED[name]
    warnings.warn(
        f"pytest_jaxperf: {name} is renamed {new}; import {new} instead",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )
    return globals()[new]


def __getattr__(name: str) -> Any:
    if name in _DEPRECATED:
        return renamed(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
