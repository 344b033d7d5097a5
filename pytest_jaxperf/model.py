"""The records a run produces and their JSON form (imports neither pytest nor jax)."""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Any

SCHEMA = "pytest-jaxperf/2"
# Every schema the reader loads; /1 has no CPU seconds (they read as None: not measured).
READABLE_SCHEMAS = ("pytest-jaxperf/1", SCHEMA)

# Bounds what a pathological test (a jit inside a loop of 10,000) can put in a report.
MAX_REASONS = 10

COUNT_FIELDS = ("traces", "lowerings", "compiles", "cache_hits")
TIME_FIELDS = ("trace_s", "lower_s", "compile_s")
# Process CPU seconds of the same phases; None where not measured (files older than /2).
CPU_FIELDS = ("trace_cpu_s", "lower_cpu_s", "compile_cpu_s")
# Seconds are written rounded to this many decimals (microseconds).
TIME_DIGITS = 6


@dataclass
class Counts:
    """Traces, lowerings, backend compiles and their seconds for one function or a total."""

    traces: int = 0
    lowerings: int = 0
    compiles: int = 0
    cache_hits: int = 0
    trace_s: float = 0.0
    lower_s: float = 0.0
    compile_s: float = 0.0
    trace_cpu_s: float | None = 0.0
    lower_cpu_s: float | None = 0.0
    compile_cpu_s: float | None = 0.0

    @property
    def total_s(self) -> float:
        """Wall seconds spent tracing, lowering and compiling."""
        return self.trace_s + self.lower_s + self.compile_s

    @property
    def total_cpu_s(self) -> float | None:
        """Process CPU seconds of the same phases (XLA's compile threads included); None
        when not measured."""
        values = [self.trace_cpu_s, self.lower_cpu_s, self.compile_cpu_s]
        return None if None in values else sum(v for v in values if v is not None)

    def add(self, other: Counts) -> None:
        for name in COUNT_FIELDS + TIME_FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in CPU_FIELDS:
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, None if mine is None or theirs is None else mine + theirs)


@dataclass
class FunctionRecord(Counts):
    """One jitted user function, identified by name and definition site."""

    name: str = ""
    site: str = ""
    retrace_reasons: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return function_key(self.name, self.site)


def function_key(name: str, site: str) -> str:
    return f"{name} at {site}" if site else name


def short_name(name: str) -> str:
    """The last part of a qualified name: 'Model.__call__' -> '__call__' (the name files
    written before qualified names hold, and that a marker limit may use)."""
    return name.rsplit(".", 1)[-1]


@dataclass
class TestRecord(Counts):
    """Everything recorded for one test; the totals cover user functions only."""

    outcome: str = "passed"
    functions: dict[str, FunctionRecord] = field(default_factory=dict)
    # Compiles of JAX's own helpers during eager ops (jnp.ones -> broadcast_in_dim, ...).
    eager: Counts = field(default_factory=Counts)
    benchmarks: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The keywords of the test's @pytest.mark.jaxperf (limits, tolerances), as JSON values:
    # `jaxperf compare` gates the test with them, as the plugin did. Written when not empty.
    marker: dict[str, Any] = field(default_factory=dict)

    def recompute_totals(self) -> None:
        total = Counts()
        for fn in self.functions.values():
            total.add(fn)
        for name in COUNT_FIELDS + TIME_FIELDS + CPU_FIELDS:
            setattr(self, name, getattr(total, name))


@dataclass
class Report:
    """A run report; a baseline is a saved report."""

    environment: dict[str, Any] = field(default_factory=dict)
    tests: dict[str, TestRecord] = field(default_factory=dict)
    schema: str = SCHEMA


def _round(value: float) -> float:
    # Microsecond resolution keeps review diffs readable; finer digits are noise.
    return round(value, TIME_DIGITS)


def _counts_to_json(c: Counts) -> dict[str, Any]:
    out: dict[str, Any] = {name: getattr(c, name) for name in COUNT_FIELDS}
    out.update({name: _round(getattr(c, name)) for name in TIME_FIELDS})
    out.update({name: _round_or_none(getattr(c, name)) for name in CPU_FIELDS})
    return out


def _round_or_none(value: float | None) -> float | None:
    return None if value is None else _round(value)


def function_to_json(fn: FunctionRecord) -> dict[str, Any]:
    out = _counts_to_json(fn)
    out.update(name=fn.name, site=fn.site, retrace_reasons=list(fn.retrace_reasons))
    return out


def test_to_json(rec: TestRecord) -> dict[str, Any]:
    out = _counts_to_json(rec)
    out["outcome"] = rec.outcome
    out["functions"] = {k: function_to_json(f) for k, f in sorted(rec.functions.items())}
    out["eager"] = _counts_to_json(rec.eager)
    out["benchmarks"] = rec.benchmarks
    if rec.marker:
        out["marker"] = rec.marker
    return out


def report_to_json(report: Report) -> dict[str, Any]:
    return {
        "schema": report.schema,
        "environment": dict(report.environment),
        "tests": {k: test_to_json(t) for k, t in sorted(report.tests.items())},
    }


class FormatError(ValueError):
    """A report or baseline document does not have the expected shape; the text says where."""


def _expect(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise FormatError(f"{where}: {what}")


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _counts_from_json(data: Any, where: str, target: Counts) -> None:
    _expect(isinstance(data, dict), where, f"expected an object, got {type(data).__name__}")
    for name in COUNT_FIELDS:
        value = data.get(name, 0)
        _expect(
            _is_int(value) and value >= 0, f"{where}.{name}", f"expected a count, got {value!r}"
        )
        setattr(target, name, value)
    for name in TIME_FIELDS:
        value = data.get(name, 0.0)
        _expect(
            _is_num(value) and value >= 0, f"{where}.{name}", f"expected seconds, got {value!r}"
        )
        setattr(target, name, float(value))
    for name in CPU_FIELDS:
        value = data.get(name)
        _expect(
            value is None or (_is_num(value) and value >= 0),
            f"{where}.{name}",
            f"expected CPU seconds or null, got {value!r}",
        )
        setattr(target, name, None if value is None else float(value))


def function_from_json(data: Any, where: str) -> FunctionRecord:
    fn = _quick_function(data)
    return fn if fn is not None else _function_from_json(data, where)


def _function_from_json(data: Any, where: str) -> FunctionRecord:
    fn = FunctionRecord()
    _counts_from_json(data, where, fn)
    name, site = data.get("name", ""), data.get("site", "")
    _expect(isinstance(name, str), f"{where}.name", "expected a string")
    _expect(isinstance(site, str), f"{where}.site", "expected a string")
    reasons = data.get("retrace_reasons", [])
    _expect(
        isinstance(reasons, list) and all(isinstance(r, str) for r in reasons),
        f"{where}.retrace_reasons",
        "expected a list of strings",
    )
    fn.name, fn.site, fn.retrace_reasons = name, site, list(reasons)
    return fn


def test_from_json(data: Any, where: str) -> TestRecord:
    rec = _quick_test(data)
    return rec if rec is not None else _test_from_json(data, where)


def _test_from_json(data: Any, where: str) -> TestRecord:
    rec = TestRecord()
    _counts_from_json(data, where, rec)
    outcome = data.get("outcome", "passed")
    _expect(isinstance(outcome, str), f"{where}.outcome", "expected a string")
    rec.outcome = outcome
    functions = data.get("functions", {})
    _expect(isinstance(functions, dict), f"{where}.functions", "expected an object")
    rec.functions = {
        k: function_from_json(v, f"{where}.functions[{k!r}]") for k, v in functions.items()
    }
    _counts_from_json(data.get("eager", {}), f"{where}.eager", rec.eager)
    benchmarks = data.get("benchmarks", {})
    _expect(
        isinstance(benchmarks, dict) and all(isinstance(b, dict) for b in benchmarks.values()),
        f"{where}.benchmarks",
        "expected an object of objects",
    )
    rec.benchmarks = benchmarks
    marker = data.get("marker", {})
    _expect(
        isinstance(marker, dict) and all(isinstance(k, str) for k in marker),
        f"{where}.marker",
        "expected an object",
    )
    rec.marker = marker
    return rec


# The fast path of the two readers above. An object exactly as report_to_json writes it (every
# field there and nothing else, counts plain ints, seconds finite floats, strings where strings
# go) is checked here without formatting a path or a message per value, which is most of what
# the careful checks cost on a big file. Anything else, say a file from an older version with a
# field missing, returns None and is read by the careful checks, which accept it or name its
# first problem as they always did. The checks here accept nothing that the careful ones reject,
# so a file's first error and its message are unchanged.
_INF = math.inf
# The values in the order of the dataclasses' fields, for the positional calls below (a test
# checks the order).
_N = len(COUNT_FIELDS) + len(TIME_FIELDS) + len(CPU_FIELDS)
_COUNTS_OF = operator.itemgetter(*COUNT_FIELDS, *TIME_FIELDS, *CPU_FIELDS)
_FUNCTION_OF = operator.itemgetter(
    *COUNT_FIELDS, *TIME_FIELDS, *CPU_FIELDS, "name", "site", "retrace_reasons"
)
_TEST_OF = operator.itemgetter(
    *COUNT_FIELDS, *TIME_FIELDS, *CPU_FIELDS, "outcome", "functions", "eager", "benchmarks"
)


def _plain_counts(values: tuple[Any, ...]) -> bool:
    """Whether the values of COUNT_FIELDS + TIME_FIELDS + CPU_FIELDS are counts and finite
    seconds (CPU seconds measured: a null goes to the careful reader)."""
    traces, lowerings, compiles, hits, trace_s, lower_s, compile_s, tc, lc, cc = values
    return (
        # Chained: all four exactly int (a bool is not one), all six exactly float.
        type(traces) is int is type(lowerings) is type(compiles) is type(hits)
        and min(traces, lowerings, compiles, hits) >= 0
        and type(trace_s) is float is type(lower_s) is type(compile_s)
        and type(tc) is float is type(lc) is type(cc)
        and 0.0 <= trace_s < _INF
        and 0.0 <= lower_s < _INF
        and 0.0 <= compile_s < _INF
        and 0.0 <= tc < _INF
        and 0.0 <= lc < _INF
        and 0.0 <= cc < _INF
    )


def _quick_function(data: Any) -> FunctionRecord | None:
    if type(data) is not dict or len(data) != _N + 3:
        return None
    try:
        values = _FUNCTION_OF(data)
    except KeyError:
        return None
    name, site, reasons = values[_N:]
    if (
        _plain_counts(values[:_N])
        and type(name) is str is type(site)
        and type(reasons) is list
        and (not reasons or all(type(r) is str for r in reasons))
    ):
        return FunctionRecord(*values[:_N], name, site, reasons[:])  # type: ignore[call-arg]
    return None


def _quick_test(data: Any) -> TestRecord | None:
    if type(data) is not dict:
        return None
    # "marker" is written only when the test's marker had keywords.
    marker = data.get("marker") if len(data) == _N + 5 else None
    if len(data) != _N + 4 and type(marker) is not dict:
        return None
    try:
        values = _TEST_OF(data)
    except KeyError:
        return None
    counts = values[:_N]
    outcome, functions, eager, benchmarks = values[_N:]
    if not (
        _plain_counts(counts)
        and type(outcome) is str
        and type(functions) is dict
        and type(benchmarks) is dict
        and type(eager) is dict
        and len(eager) == _N
    ):
        return None
    try:
        eager_values = _COUNTS_OF(eager)
    except KeyError:
        return None
    if not _plain_counts(eager_values):
        return None
    records: dict[str, FunctionRecord] = {}
    for key, value in functions.items():
        fn = _quick_function(value)
        if fn is None:
            return None
        records[key] = fn
    for bench in benchmarks.values():
        if type(bench) is not dict:
            return None
    if marker and not all(type(k) is str for k in marker):
        return None
    return TestRecord(  # type: ignore[call-arg]
        *counts, outcome, records, Counts(*eager_values), benchmarks, marker or {}
    )


def report_from_json(data: Any) -> Report:
    _expect(isinstance(data, dict), "top level", f"expected an object, got {type(data).__name__}")
    schema = data.get("schema")
    _expect(
        schema in READABLE_SCHEMAS,
        "schema",
        f"expected one of {', '.join(map(repr, READABLE_SCHEMAS))}, got {schema!r} "
        "(not a pytest-jaxperf file, or a newer version)",
    )
    env = data.get("environment", {})
    _expect(isinstance(env, dict), "environment", "expected an object")
    tests = data.get("tests", {})
    _expect(isinstance(tests, dict), "tests", "expected an object")
    return Report(
        environment=dict(env),
        tests={k: test_from_json(v, f"tests[{k!r}]") for k, v in tests.items()},
    )
