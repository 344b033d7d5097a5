"""The quick reader of a file in the current schema (the `fast` extra's msgspec): one pass
in C decodes the JSON, checks every value the careful reader checks (`model.run_from_json`,
the reference) and makes the records, with no Python call per value or per record.

What it takes, it reads into exactly the records the careful reader makes; anything it does
not take (another schema, a value of another type or out of range, an unknown field where
the reader refuses one, anything unusual) makes it return None, and the file is then read
the careful way, which says what is wrong. So it may refuse more than the reference, and
accepts no more but in one case: the value of a field both leave out (an unknown field of a
test entry, say) is skipped by msgspec, not made a Python value, so an integer there of more
digits than json reads (sys.get_int_max_str_digits()) goes unnoticed where json refuses the
file. Bytes that are not UTF-8 are refused anywhere, as by the other parsers. In detail:

- counts are ints (a bool is not one) >= 0; seconds are numbers >= 0 read as floats, finite
  (JSON has no NaN, and msgspec refuses a number past a float's range, which json would
  read as inf); CPU seconds and program sizes may be null; every field is required;
- a number the careful reader keeps as read (a benchmark's first-call seconds, its program
  metrics, a runtime's CPU median) stays the int or the float it is; an int past 2**62
  there is left to the careful reader;
- a baseline's wall seconds, its eager block's all but its counts (the whole block where
  those are 0) and its runtime statistics the runtime rule does not read may be left out
  (None), as the careful reader reads a file of this schema;
- a benchmark's entry must name its kind (the plugin always writes it) and hold no unknown
  field; its first-call seconds may be left out (a baseline holds none); a confirmation
  (what the plugin re-measured) is read by the careful reader, from
  its own text;
- a key twice in one object keeps the last value, as json and orjson do; but an environment
  entry decoded twice (its key twice, or the file's `environment` twice) makes it return
  None, counted as it is decoded (`_EnvironmentValue`), and the test ids are counted by the
  caller (store.py), as for the other parsers.

The records come out of the decoder as instances of mirror dataclasses whose fields carry
the constraints, then become the model's classes in place (`__class__` set, the same
attributes): a mirror's fields are the model class's, which a test checks."""

from __future__ import annotations

import collections
import dataclasses
import itertools
import operator
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal

import msgspec  # without the `fast` extra an ImportError: store.py reads as ever then
from msgspec import UNSET, Meta, Raw, Struct, UnsetType

from ..model import (
    COUNT_FIELDS,
    CPU_FIELDS,
    EAGER_OPTIONAL,
    NUMBER_FIELDS,
    SCHEMA,
    SIZE_FIELDS,
    TIME_FIELDS,
    WALL_FIELDS,
    BenchmarkEntry,
    Counts,
    Entry,
    FunctionRecord,
    ProgramMetrics,
    RecordedTest,
    RunRecord,
    RuntimeStats,
    ScalingEntry,
    remeasured_from_json,
)

Count = Annotated[int, Meta(ge=0)]
Seconds = Annotated[float, Meta(ge=0)]  # an int is read as a float, as the careful reader does
# A number kept as read: an int stays one. Past 2**62 the careful reader decides.
_BIG = 2**62
Number = Annotated[int, Meta(ge=0, le=_BIG)] | Annotated[float, Meta(ge=0)]
SignedNumber = Annotated[int, Meta(ge=-_BIG, le=_BIG)] | float

_COUNTS_TYPES: dict[str, Any] = {
    **dict.fromkeys(COUNT_FIELDS, Count),
    **dict.fromkeys(TIME_FIELDS, Seconds),
    **dict.fromkeys(CPU_FIELDS, Seconds | None),
    **dict.fromkeys(SIZE_FIELDS, Count | None),
}


def _absent() -> Any:
    """The value of a field the entry does not hold, put in the record's own attributes as
    the careful reader puts it (a default of None would leave the attribute to the class)."""
    return None


def _counts(optional: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """The Counts fields, each required as the careful reader requires it of the current
    schema but those in `optional`, None where left out (null refused where the careful
    reader refuses it)."""
    return [
        (name, _COUNTS_TYPES[name], dataclasses.field(default_factory=_absent))
        if name in optional
        else (name, _COUNTS_TYPES[name])
        for name in NUMBER_FIELDS
    ]


# A test's and a function's: the wall seconds may be left out (a baseline gated on CPU).
_COUNTS = _counts(WALL_FIELDS)


class _Runtime(Struct, forbid_unknown_fields=True, kw_only=True):
    """A benchmark's runtime statistics, RuntimeStats's fields (a baseline's holds those the
    runtime rule reads: model.RUNTIME_OPTIONAL may be left out)."""

    min_s: Seconds
    max_s: Seconds | None = None
    median_s: Seconds
    mean_s: Seconds | None = None
    stddev_s: Seconds | None = None
    q1_s: Seconds | None = None
    q3_s: Seconds | None = None
    iqr_s: Seconds | None = None
    rounds: Count | None = None
    iterations: Count | None = None
    outliers: Count | None = None
    samples_s: tuple[Seconds, ...]
    cpu_median_s: Number | None = None


class _Benchmark(Struct, tag_field="kind", tag="benchmark", forbid_unknown_fields=True):
    """A `jaxperf.benchmark` entry as written: its program metrics inline."""

    compiled_on_first_call: bool
    # The first call's seconds: a baseline holds none of them (model.FIRST_CALL_FIELDS).
    trace_s: Seconds | None = None
    lower_s: Seconds | None = None
    compile_s: Seconds | None = None
    first_call_s: Number | None = None
    runtime: _Runtime | None = None
    jaxpr_eqns: Count | UnsetType = UNSET
    hlo_ops: Count | None | UnsetType = UNSET
    flops: Number | None = None
    transcendentals: Number | None = None
    bytes_accessed: Number | None = None
    argument_bytes: Number | None = None
    output_bytes: Number | None = None
    temp_bytes: Number | None = None
    peak_bytes: Number | None = None
    eager_median_s: Number | None = None
    break_even_calls: Number | None = None
    device_peak_bytes: Count | None = None
    jitted_by_benchmark: bool | None = None
    instructions: Count | None = None


class _Scaling(Struct, tag_field="kind", tag="scaling", forbid_unknown_fields=True):
    """A `jaxperf.scaling` entry as written."""

    metric: str
    sizes: tuple[Count, ...]
    values: tuple[float, ...]  # finite, of any sign
    exponent: float
    max_exponent: SignedNumber | None = None


# The eager block: its counts required, the rest may be left out (a baseline's).
_CountsMirror = dataclasses.make_dataclass("_CountsMirror", _counts(EAGER_OPTIONAL), kw_only=True)


def _no_eager() -> Any:
    """The eager block of an entry that has none (model.no_eager), as a mirror."""
    return _CountsMirror(**dict.fromkeys(COUNT_FIELDS, 0), **dict.fromkeys(EAGER_OPTIONAL))


_FunctionMirror = dataclasses.make_dataclass(
    "_FunctionMirror",
    [
        *_COUNTS,
        ("name", str),
        ("site", str),
        ("retrace_reasons", list[str]),
        (
            "eqn_sources",
            dict[str, Annotated[list[Count], Meta(min_length=3, max_length=3)]],
            dataclasses.field(default_factory=dict),
        ),
        ("instructions", dict[str, Count], dataclasses.field(default_factory=dict)),
    ],
    kw_only=True,
)
_TestMirror = dataclasses.make_dataclass(
    "_TestMirror",
    [
        *_COUNTS,
        ("outcome", str),
        ("functions", dict[str, _FunctionMirror]),  # type: ignore[valid-type]
        ("eager", _CountsMirror, dataclasses.field(default_factory=_no_eager)),
        ("benchmarks", dict[str, _Benchmark | _Scaling]),
        ("environment", dict[str, Any] | None, dataclasses.field(default_factory=_absent)),
        ("marker", dict[str, Any], dataclasses.field(default_factory=dict)),
        # Read from its text by the careful reader: any value, null included, is kept here.
        # Where there is none, the attribute is put in the record by _records (msgspec
        # 0.22 decodes no Raw into a field with a default_factory).
        ("confirmation", Raw, dataclasses.field(default=None)),
    ],
    kw_only=True,
)
# The model class each mirror becomes.
MIRRORS: dict[type[Any], type[Any]] = {
    _CountsMirror: Counts,
    _FunctionMirror: FunctionRecord,
    _TestMirror: RecordedTest,
}


class _EnvironmentValue:
    """An entry of the file's environment as decoded (any JSON value, as for `Any`), made by
    `_environment_value`, which counts the entries as msgspec decodes them: a key kept twice
    in a dict is decoded twice, so more entries decoded than kept tell a key twice, at no
    cost but a call per entry."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


# Environment entries decoded, by any thread: read_run takes the difference around its own
# decoding, which another thread's decoding at the same time can only make larger (then the
# careful reader reads the file).
_DECODED = itertools.count()


def _environment_value(kind: type[Any], value: Any) -> Any:
    """msgspec's hook for a type of its own: only `_EnvironmentValue`."""
    next(_DECODED)
    return _EnvironmentValue(value)


class _Run(Struct):
    """A file: unknown top-level keys are left out, as the careful reader leaves them."""

    schema: Literal[SCHEMA]  # type: ignore[valid-type]
    environment: dict[str, _EnvironmentValue] = {}
    tests: dict[str, _TestMirror] = {}  # type: ignore[valid-type]


_run_decoder = msgspec.json.Decoder(_Run, dec_hook=_environment_value)
_test_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(_TestMirror)


class _Refused(Exception):
    """A value the careful reader is left to read (and to say what is wrong with)."""


# What the decoder or a reading here raises for a file the careful reader is to read: any
# refusal of msgspec's, a bad UTF-8 byte (a ValueError), an object nested too deep, a value
# the careful reader refuses (FormatError is a ValueError) or cannot take (a number past a
# float's range in a confirmation).
_NOT_TAKEN = (msgspec.MsgspecError, ValueError, RecursionError, ArithmeticError, _Refused)


def read_run(raw: bytes) -> RunRecord | None:
    """The run in `raw`, a file in the current schema, every value checked; None where the
    careful reader is to read it, as where an environment entry is there twice. Test ids kept
    twice are not seen here: the last is read, as by json, and the caller counts them."""
    try:
        _utf8(raw)
        before = next(_DECODED)
        run = _run_decoder.decode(raw)
        decoded = next(_DECODED) - before - 1
        _records(list(run.tests.values()))
    except _NOT_TAKEN:
        return None
    environment = {key: entry.value for key, entry in run.environment.items()}
    if decoded != len(environment):
        return None  # an entry twice (a merge that kept both sides?): said by the careful reader
    return RunRecord(environment=environment, tests=run.tests)


def read_test(raw: bytes) -> RecordedTest | None:
    """One test entry of a file in the current schema (its text), as read_run reads each."""
    try:
        _utf8(raw)
        rec = _test_decoder.decode(raw)
        if rec.benchmarks or rec.confirmation is not None:
            _finish(rec)
    except _NOT_TAKEN:
        return None
    # As _records does for many, without its iterators (a lazily read baseline reads each
    # entry alone, as its test is gated).
    rec.__dict__.setdefault("confirmation", None)
    for fn in rec.functions.values():
        fn.__class__ = FunctionRecord
    rec.eager.__class__ = Counts
    rec.__class__ = RecordedTest
    test: RecordedTest = rec
    return test


def _utf8(raw: bytes) -> None:
    """UnicodeDecodeError where `raw` is not UTF-8 (msgspec checks the strings it reads, not
    those of a field it leaves out). A file as the plugin writes it is ASCII: told in C at
    once."""
    if not raw.isascii():
        raw.decode("utf-8")


_FUNCTIONS = operator.attrgetter("functions")
_OWN = operator.attrgetter("__dict__")
_EAGER = operator.attrgetter("eager")


def _records(tests: list[Any]) -> None:
    """`tests` (decoded mirrors) made the model's records in place: their benchmark entries
    and confirmations read, then every mirror object given its model class."""
    for rec in [t for t in tests if t.benchmarks or t.confirmation is not None]:
        _finish(rec)
    _put(map(_setdefault, map(_OWN, tests), _repeat("confirmation"), _repeat(None)))
    functions = itertools.chain.from_iterable(map(dict.values, map(_FUNCTIONS, tests)))
    _become(functions, FunctionRecord)
    _become(map(_EAGER, tests), Counts)
    _become(tests, RecordedTest)


def _finish(rec: Any) -> None:
    """The benchmark entries and the confirmation of `rec` (a mirror) read into records."""
    rec.benchmarks = {k: _entry(v) for k, v in rec.benchmarks.items()}
    if rec.confirmation is not None:
        rec.confirmation = remeasured_from_json(msgspec.json.decode(rec.confirmation), "")


def _become(objects: Iterable[Any], cls: type[Any]) -> None:
    """Every object of `objects` (a mirror of `cls`, the same attributes) made a `cls`."""
    _put(map(setattr, objects, _repeat("__class__"), _repeat(cls)))


_repeat = itertools.repeat
_setdefault: Callable[[dict[str, Any], str, None], Any] = dict.setdefault
_put: Callable[[Iterable[Any]], None] = collections.deque(maxlen=0).extend  # runs calls, in C


def _entry(value: _Benchmark | _Scaling) -> Entry:
    if type(value) is _Scaling:
        if len(value.sizes) != len(value.values):
            raise _Refused
        return ScalingEntry(
            metric=value.metric,
            sizes=value.sizes,
            values=value.values,
            exponent=value.exponent,
            max_exponent=value.max_exponent,
        )
    assert type(value) is _Benchmark
    metrics = None
    if value.jaxpr_eqns is not UNSET or value.hlo_ops is not UNSET:
        if value.jaxpr_eqns is UNSET:
            raise _Refused  # program sizes without the equations
        metrics = ProgramMetrics(
            value.jaxpr_eqns,
            None if value.hlo_ops is UNSET else value.hlo_ops,
            value.flops,
            value.transcendentals,
            value.bytes_accessed,
            value.argument_bytes,  # type: ignore[arg-type]
            value.output_bytes,  # type: ignore[arg-type]
            value.temp_bytes,  # type: ignore[arg-type]
            value.peak_bytes,  # type: ignore[arg-type]
        )
    runtime = value.runtime
    return BenchmarkEntry(
        first_call_s=value.first_call_s,
        trace_s=value.trace_s,
        lower_s=value.lower_s,
        compile_s=value.compile_s,
        compiled_on_first_call=value.compiled_on_first_call,
        runtime=None if runtime is None else RuntimeStats(**msgspec.structs.asdict(runtime)),
        metrics=metrics,
        eager_median_s=value.eager_median_s,
        break_even_calls=value.break_even_calls,
        device_peak_bytes=value.device_peak_bytes,
        jitted_by_benchmark=bool(value.jitted_by_benchmark),
        instructions=value.instructions,
    )
