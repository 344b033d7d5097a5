"""Loading, validating, merging and atomically saving baseline and report files."""

from __future__ import annotations

import gc
import json
import math
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .model import (
    TIME_DIGITS,
    Counts,
    FormatError,
    FunctionRecord,
    Report,
    TestRecord,
    report_from_json,
    report_to_json,
    test_to_json,
)


class BaselineError(Exception):
    """A baseline or report file cannot be used; the message names the file and the fix."""


def load(path: Path) -> Report | None:
    """The report stored at `path`, or None when there is no file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"cannot read {path}: {exc}") from None
    hint = "fix it, or delete it and re-create it with --jaxperf-save"
    if not text.strip():
        raise BaselineError(f"{path} is empty; {hint}")
    with _collector_paused():
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BaselineError(
                f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                f"{hint}"
            ) from None
        try:
            return report_from_json(data)
        except FormatError as exc:
            raise BaselineError(f"{path} is not a pytest-jaxperf baseline: {exc}; {hint}") from None


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a while. Reading or writing a big file makes
    hundreds of thousands of objects, none in a cycle, and the collections they would set off
    (each also walking whatever else the process holds, jax's objects in a test session) are
    wasted, and a large share of the time to load a big file."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def merge(old: Report | None, run: Report) -> Report:
    """`old` updated with the passed tests of `run`; every other entry of `old` is kept."""
    tests: dict[str, TestRecord] = dict(old.tests) if old else {}
    for nodeid, rec in run.tests.items():
        if rec.outcome == "passed":
            tests[nodeid] = rec
    return Report(environment=dict(run.environment), tests=tests)


# The file layout. The content is report_to_json's, and every object's keys are sorted as
# json.dumps(sort_keys=True) sorts them. The text is indented by two spaces down to one line
# per environment entry, per test field, per function and per benchmark field; anything deeper
# stays on that one line with ", " and ": " between items: a function's counts and causes, the
# eager counts, a benchmark's runtime statistics with their samples. A review diff shows a
# changed function or statistic as one changed line, and the text comes from templates and the
# C encoder (json.dumps with indent= runs the pure-Python encoder, slow on a big report).
#
# A layout maps a key to the layout of its value, "*" to that of any other key; None writes the
# value on one line.
Layout = dict[str, Any] | None
_ENVIRONMENT: Layout = {"*": None}
_BENCHMARKS: Layout = {"*": {"*": None}}
_TEST: Layout = {"benchmarks": _BENCHMARKS, "functions": {"*": None}, "*": None}
LAYOUT: Layout = {"environment": _ENVIRONMENT, "tests": {"*": _TEST}, "*": None}

_compact = json.JSONEncoder(sort_keys=True).encode
_string = json.encoder.encode_basestring_ascii  # C; raises TypeError for anything but a str


def format_json(data: Any, layout: Layout = LAYOUT, indent: str = "") -> str:
    """`data` as JSON text in the file layout (no final newline): keys sorted, objects indented
    where `layout` says and written on one line below."""
    if layout is None or type(data) is not dict or not data:
        return _value(data)
    inner = indent + "  "
    other = layout.get("*")
    lines = []
    try:
        for key, value in sorted(data.items()):
            sub = layout.get(key, other)
            text = _value(value) if sub is None else format_json(value, sub, inner)
            lines.append(f"{inner}{_string(key)}: {text}")
    except TypeError:  # a key that is not a string: on one line, the way json.dumps does it
        return _value(data)
    return "{\n" + ",\n".join(lines) + "\n" + indent + "}"


def _value(value: Any) -> str:
    """`value` on one line; strings and plain numbers without the encoder's per-call cost."""
    kind = type(value)
    if kind is str:
        return _string(value)
    if kind is int:
        return int.__repr__(value)
    if kind is float and value - value == 0.0:  # finite: what json.dumps writes is the repr
        return float.__repr__(value)
    if kind is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if kind is dict and not value:
        return "{}"
    return _compact(value)


def dumps(report: Report) -> str:
    """The file text of `report`: exactly report_to_json's content, in the file layout."""
    with _collector_paused():
        return _dumps(report)


def _dumps(report: Report) -> str:
    try:
        nodeids = sorted(report.tests)
        keys = [_string(nodeid) for nodeid in nodeids]
    except TypeError:  # node ids that are not strings: the general way
        return format_json(report_to_json(report)) + "\n"
    tests = [f"    {key}: {_test_text(report.tests[nodeid])}" for key, nodeid in zip(keys, nodeids)]
    environment = format_json(dict(report.environment), _ENVIRONMENT, "  ")
    body = "{\n" + ",\n".join(tests) + "\n  }" if tests else "{}"
    return _DOCUMENT % (environment, _value(report.schema), body)


# Templates for the usual case, what format_json(report_to_json(report)) writes at each depth;
# a test checks the two agree. %r writes an int or a finite float as json.dumps does.
_DOCUMENT = '{\n  "environment": %s,\n  "schema": %s,\n  "tests": %s\n}\n'
_TEST_TEXT = (
    "{\n"
    '      "benchmarks": %s,\n'
    '      "cache_hits": %r,\n'
    '      "compile_cpu_s": %r,\n'
    '      "compile_s": %r,\n'
    '      "compiles": %r,\n'
    '      "eager": %s,\n'
    '      "functions": %s,\n'
    '      "lower_cpu_s": %r,\n'
    '      "lower_s": %r,\n'
    '      "lowerings": %r,\n'
    "%s"  # _MARKER_LINE, when the test's marker had keywords
    '      "outcome": %s,\n'
    '      "trace_cpu_s": %r,\n'
    '      "trace_s": %r,\n'
    '      "traces": %r\n'
    "    }"
)
_MARKER_LINE = '      "marker": %s,\n'
_EAGER_LINE = (
    '{"cache_hits": %r, "compile_cpu_s": %r, "compile_s": %r, "compiles": %r, '
    '"lower_cpu_s": %r, "lower_s": %r, "lowerings": %r, "trace_cpu_s": %r, "trace_s": %r, '
    '"traces": %r}'
)
_FUNCTION_LINE = (
    '{"cache_hits": %r, "compile_cpu_s": %r, "compile_s": %r, "compiles": %r, '
    '"lower_cpu_s": %r, "lower_s": %r, "lowerings": %r, "name": %s, "retrace_reasons": [%s], '
    '"site": %s, "trace_cpu_s": %r, "trace_s": %r, "traces": %r}'
)
_INF = math.inf


def _numbers(c: Counts) -> tuple[Any, ...] | None:
    """The counts and rounded seconds of `c` in key order (cache_hits, compile_cpu_s,
    compile_s, compiles, lower_cpu_s, lower_s, lowerings, trace_cpu_s, trace_s, traces) when
    the counts are ints and the seconds finite floats (%r then writes them as json.dumps
    does), else None (CPU seconds not measured, say: the general writer writes null)."""
    hits, compiles, lowerings, traces = c.cache_hits, c.compiles, c.lowerings, c.traces
    trace_s, lower_s, compile_s = c.trace_s, c.lower_s, c.compile_s
    tc, lc, cc = c.trace_cpu_s, c.lower_cpu_s, c.compile_cpu_s
    if (
        # Chained: all four exactly int (a bool is not one), all six exactly float.
        type(hits) is int is type(compiles) is type(lowerings) is type(traces)
        and type(trace_s) is float is type(lower_s) is type(compile_s)
        and type(tc) is float is type(lc) is type(cc)
        and -_INF < trace_s + lower_s + compile_s + tc + lc + cc < _INF  # none inf or nan
    ):
        return (
            hits,
            round(cc, TIME_DIGITS),
            round(compile_s, TIME_DIGITS),
            compiles,
            round(lc, TIME_DIGITS),
            round(lower_s, TIME_DIGITS),
            lowerings,
            round(tc, TIME_DIGITS),
            round(trace_s, TIME_DIGITS),
            traces,
        )
    return None


def _test_text(rec: TestRecord) -> str:
    """format_json(test_to_json(rec), _TEST, "    "), from templates when the values are plain."""
    try:
        text = _quick_test_text(rec)
    except TypeError:  # a string field that is not a string, say
        text = None
    return text if text is not None else format_json(test_to_json(rec), _TEST, "    ")


def _quick_test_text(rec: TestRecord) -> str | None:
    own, eager = _numbers(rec), _numbers(rec.eager)
    if own is None or eager is None:
        return None
    functions = []
    for key, fn in sorted(rec.functions.items()):
        line = _function_line(fn)
        if line is None:
            return None
        functions.append(f"        {_string(key)}: {line}")
    return _TEST_TEXT % (
        format_json(rec.benchmarks, _BENCHMARKS, "      "),
        *own[:4],
        _EAGER_LINE % eager,
        "{\n" + ",\n".join(functions) + "\n      }" if functions else "{}",
        *own[4:7],
        _MARKER_LINE % _value(rec.marker) if rec.marker else "",
        _value(rec.outcome),
        *own[7:],
    )


def _function_line(fn: FunctionRecord) -> str | None:
    numbers = _numbers(fn)
    if numbers is None:
        return None
    return _FUNCTION_LINE % (
        *numbers[:7],
        _string(fn.name),
        ", ".join(map(_string, fn.retrace_reasons)),
        _string(fn.site),
        *numbers[7:],
    )


def save(path: Path, report: Report) -> None:
    """Write `report` to `path` atomically: readers see the old file or the new one, whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = dumps(report)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates the file 0600; give it the mode a plain open() would have.
        os.chmod(tmp, _mode_for(path))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mode_for(path: Path) -> int:
    """The existing file's permissions, or 0666 less the umask for a new file."""
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
