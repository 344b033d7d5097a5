"""Reading, validating and atomically writing baselines and run files (a run's `RunRecord` as
JSON), and the locked read-resave-write every save goes through (`save_locked`; the resave
itself is `resave.Resave`)."""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import operator
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..model import (
    COUNT_FIELDS,
    CPU_FIELDS,
    EAGER_OPTIONAL,
    SIZE_FIELDS,
    TIME_DIGITS,
    WALL_FIELDS,
    Counts,
    FormatError,
    FunctionRecord,
    RecordedTest,
    RunRecord,
    entry_to_json,
    recorded_test_to_json,
    run_from_json,
    run_to_json,
)
from . import entries
from .errors import BaselineError as BaselineError  # raised by every reader: named here too

# What to do about a broken file, for a baseline.
FIX_BASELINE = "fix it, or delete it and re-create it with --jaxperf-save"


# What the file system says of one version of a file (device, inode, size, modification
# time): a save, which renames a new file over the old, changes it.
Stamp = tuple[int, int, int, int]


@dataclass(frozen=True)
class Loaded:
    """A file as it was read: its run record (None: no file) and the stamp of what was read."""

    run: RunRecord | None
    stamp: Stamp | None


def load(path: Path, hint: str = FIX_BASELINE) -> RunRecord | None:
    """The run record stored at `path`, or None when there is no file; a file that cannot be
    used raises BaselineError naming it, the problem and `hint` (what to do about it)."""
    return read(path, hint).run


def load_run(path: str | os.PathLike[str]) -> RunRecord:
    """The run file or baseline at `path`, as the plugin reads it (every schema it reads).
    FileNotFoundError where there is no file; ValueError, naming the file and the problem,
    where it cannot be used."""
    try:
        run = load(Path(path), hint="is it a pytest-jaxperf file?")
    except BaselineError as exc:
        raise ValueError(str(exc)) from None
    if run is None:
        raise FileNotFoundError(f"{path}: no such file")
    return run


def read(path: Path, hint: str = FIX_BASELINE, lazy: bool = False) -> Loaded:
    """load(), and the stamp of the version read (the same open file is read and stamped).
    With `lazy` (a session's baseline), a big file as the plugin saves it keeps its test
    entries as text, each read when asked for (see entries.py)."""
    from .outputs import read_regular

    try:
        raw, st = read_regular(path)
    except FileNotFoundError:
        return Loaded(None, None)
    except OSError as exc:
        raise BaselineError(f"cannot read {path}: {exc}") from None
    stamp = _stamp(st)
    if lazy:
        with collector_paused():
            run = entries.read(
                path,
                raw,
                hint,
                _fast() or json.loads,
                _read_text,
                None if _typed is None else _typed.read_test,
            )
        if run is not None:
            return Loaded(run, stamp)
    with collector_paused():
        run = _read_once(raw)
    if run is not None:
        return Loaded(run, stamp)
    # Something is wrong with the file, or it could not be vouched for in one reading: read
    # it the careful way, which says what is wrong.
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BaselineError(f"cannot read {path}: {exc}") from None
    return Loaded(_read_text(path, text, hint), stamp)


# How a file laid out one key per line, as `dumps`, json.dumps(indent=N) and most writers lay
# it out, starts: its first top-level key's indentation is one level's.
_INDENTED = re.compile(rb"[ \t\r\n]*\{(\r?\n)([ \t]+)\"")


def _depth_two(raw: bytes) -> bytes | None:
    """What starts the line of each key of a top-level object (a test id, an environment
    entry) in a file laid out one key per line, as `raw` starts (a newline, two levels of
    indentation, a quote); None for any other layout."""
    found = _INDENTED.match(raw)
    return None if found is None else found[1] + found[2] * 2 + b'"'


def _read_once(raw: bytes) -> RunRecord | None:
    """The run in `raw`, read with one parse, where it is a valid file whose test ids and
    environment entries are each there once; None where it is not, or where that cannot be
    told so (the careful reading then says). In a file laid out one key per line, a key kept
    twice (a merge that kept both sides of a conflict) adds a line at its depth: lines there
    that outnumber the keys read tell, at no cost. Such a file in the current schema is
    decoded straight into its records, every value checked, by msgspec where installed (the
    `fast` extra; typed.py, which counts the environment entries as it decodes them), else
    parsed by orjson (the same extra) or json and then checked. Either way every test entry
    holds one "outcome": more of them than tests read tell a test id twice, wherever it is.
    Any other layout is read with json, refusing a key twice at any depth as it goes."""
    depth_two = _depth_two(raw)
    if depth_two is not None and _typed is not None:
        run = _typed.read_run(raw)
        if run is not None:
            return run if raw.count(entries.OUTCOME) == len(run.tests) else None
    try:
        fast = None if depth_two is None else _fast()
        if fast is not None:
            data = fast(raw)
        elif depth_two is not None:
            data = json.loads(raw.decode("utf-8"))
        else:
            data = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique)
    except (ValueError, RecursionError):  # UnicodeDecodeError and _DuplicateKey are ones
        return None
    if depth_two is not None and raw.count(depth_two) != _entries_at_depth_two(data):
        return None
    if raw.count(entries.OUTCOME) != _tests_read(data):
        return None  # a test entry twice where it starts no line of its own, say
    try:
        return run_from_json(data, consume=True)
    except ValueError:  # FormatError is one
        return None


def _read_text(path: Path, text: str, hint: str) -> RunRecord:
    """The run in `text`, or the BaselineError that says what is wrong with it."""
    if not text.strip():
        raise BaselineError(f"{path} is empty; {hint}")
    with collector_paused():
        fast_loads = _fast()
        if fast_loads is not None:
            # orjson where installed (the `fast` extra) parses a big report much faster. What
            # it refuses (NaN, a lone surrogate, a broken file), or reads into values the reader
            # refuses (an integer past 64 bits becomes a float, which is no count), is read
            # again with json, so errors are json's. Such an integer where a float is taken
            # (no file the plugin writes has one) reads as the nearest float.
            try:
                fast = fast_loads(text)
            except ValueError:
                fast = None
            if fast is not None:
                _refuse_duplicates(path, text, fast)
                try:
                    return run_from_json(fast, consume=True)
                except ValueError:  # FormatError is one
                    pass
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BaselineError(
                f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                f"{hint}"
            ) from None
        except ValueError:  # an integer past Python's digit limit (sys.get_int_max_str_digits)
            raise BaselineError(
                f"{path} holds an integer with more digits than Python reads; {hint}"
            ) from None
        except RecursionError:
            raise BaselineError(f"{path} is nested too deeply to read; {hint}") from None
        _refuse_duplicates(path, text, data)
        try:
            return run_from_json(data, consume=True)
        except FormatError as exc:
            raise BaselineError(f"{path} is not a pytest-jaxperf baseline: {exc}; {hint}") from None


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object of a file being read, refused when a key is there twice: json would keep the
    last silently, and a merge conflict resolved by keeping both sides leaves exactly that."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def _refuse_duplicates(path: Path, text: str, data: Any) -> None:
    """BaselineError when a test id (or an environment entry) is in the file twice, as a
    merge conflict resolved by keeping both sides leaves it: either parser would keep the
    last silently. Checked where the keys at that depth, as `dumps` lays them out, outnumber
    those read (so at no cost for a file as the plugin writes it); then json says which."""
    if _keys_at_depth_two(text) == _entries_at_depth_two(data) and text.count(
        entries.OUTCOME.decode()
    ) == _tests_read(data):
        return
    try:
        json.loads(text, object_pairs_hook=_unique)
    except _DuplicateKey as exc:
        raise BaselineError(
            f"{path} holds the key {exc.key!r} twice (a merge that kept both sides?): only "
            "one would be read; keep one of them"
        ) from None
    except (ValueError, RecursionError):
        pass  # read once already: not these keys' doing


def _keys_at_depth_two(text: str) -> int:
    # As `dumps` writes: each key of a top-level object (a test id, an environment entry)
    # starts a line indented by four spaces.
    return text.count('\n    "')


def _entries_at_depth_two(data: Any) -> int:
    if not isinstance(data, dict):
        return -1
    return sum(len(v) for v in data.values() if isinstance(v, dict))


def _tests_read(data: Any) -> int:
    tests = data.get("tests") if isinstance(data, dict) else None
    return len(tests) if isinstance(tests, dict) else -1


def stamp_of(path: Path) -> Stamp | None:
    """The stamp of the file at `path` now; None when there is none."""
    try:
        return _stamp(path.stat())
    except FileNotFoundError:
        return None


def _stamp(st: os.stat_result) -> Stamp:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _orjson_loads() -> Callable[[str | bytes], Any] | None:
    try:
        from orjson import loads
    except ImportError:  # the extra is not installed
        return None
    return loads


def __getattr__(name: str) -> Any:
    # `_fast_loads`, orjson's loads or None, is looked up on first use: where msgspec reads
    # every file (the `fast` extra: typed.py), orjson is never imported (a few ms of each
    # `jaxperf compare`). Set it (a test does) to read with another parser.
    if name == "_fast_loads":
        loads = globals()["_fast_loads"] = _orjson_loads()
        return loads
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _fast() -> Callable[[str | bytes], Any] | None:
    """orjson's loads where installed (the `fast` extra), else None."""
    here = globals()
    loads: Callable[[str | bytes], Any] | None = (
        here["_fast_loads"] if "_fast_loads" in here else __getattr__("_fast_loads")
    )
    return loads


def _typed_reader() -> ModuleType | None:
    try:
        from . import typed
    except ImportError:  # msgspec, of the `fast` extra, is not installed
        return None
    return typed


# Decodes a file in the current schema straight into its records (see typed.py).
_typed = _typed_reader()


def parser() -> str:
    """Which parser reads files first where msgspec does not: "orjson" (the `fast` extra)
    or "json"."""
    return "json" if _fast() is None else "orjson"


def reader() -> str:
    """What reads a file in the current schema, laid out one key per line, first: "msgspec"
    (the `fast` extra: decoded straight into records), else parser()."""
    return parser() if _typed is None else "msgspec"


@contextmanager
def collector_paused() -> Iterator[None]:
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


def placed(
    rec: RecordedTest, measured_in: dict[str, Any], file_environment: dict[str, Any]
) -> RecordedTest:
    """`rec`, measured in `measured_in`, as an entry of a file whose environment is
    `file_environment`: with its own environment where the two differ, none where they agree."""
    own = None if measured_in == file_environment else dict(measured_in)
    return rec if rec.environment == own else dataclasses.replace(rec, environment=own)


def save_locked(
    path: Path,
    run: RunRecord,
    how: Callable[[RunRecord | None, RunRecord], RunRecord],
    known: Loaded | None = None,
) -> RunRecord:
    """Resave the passed tests of `run` into the baseline at `path` as it is now, not as it
    was when the run started, and save the result; returns it. The read, resave and write happen
    under the lock beside the file, so two runs saving at once (different -k subsets, say)
    keep each other's entries; `known`, the file as the run read it at its start, stands in
    for reading it again when its stamp says it is still that version. `how` resaves (the
    save's is `resave.Resave`). A file that became unreadable meanwhile raises BaselineError
    and is left as it is; so does a resave that raises it. A resave that returns the file as
    read (the same object), or no entries where there was no file, writes nothing."""
    from .outputs import locked

    with locked(path):
        old = known.run if known is not None and known.stamp == stamp_of(path) else load(path)
        resaved = how(old, run)
        if resaved is not old and (old is not None or resaved.tests):
            _remove_stale_temporaries(path)
            save(path, resaved)
    return resaved


def _remove_stale_temporaries(path: Path) -> None:
    """The temporary files an earlier save left beside the baseline when it was killed
    mid-write (`.baseline.json.*.tmp`, up to the file's size each): under the baseline's
    lock no other save is writing one."""
    from .outputs import target

    where = target(path)
    for stale in where.parent.glob(f".{where.name}.*.tmp"):
        with suppress(OSError):
            stale.unlink()


# The file layout. The content is run_to_json's, and every object's keys are sorted as
# json.dumps(sort_keys=True) sorts them. The text is indented by two spaces down to one line
# per environment entry, per test field, per function and per benchmark field; anything deeper
# stays on that one line with ", " and ": " between items: a function's counts and causes, the
# eager counts, a benchmark's runtime statistics with their samples. A review diff shows a
# changed function or statistic as one changed line, and the text comes from templates and the
# C encoder (json.dumps with indent= runs the pure-Python encoder, slow on a big run).
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


def dumps(run: RunRecord) -> str:
    """The file text of `run`: exactly run_to_json's content, in the file layout."""
    with collector_paused():
        return "".join(_pieces(run))


def _pieces(run: RunRecord) -> Iterator[str]:
    """dumps(run) in pieces, a test's entry each: `save` writes them as they come, so that
    the text of a big file is never held whole (nor twice, joined and encoded)."""
    try:
        nodeids = sorted(run.tests)
        keys = [_string(nodeid) for nodeid in nodeids]
    except TypeError:  # node ids that are not strings: the general way
        yield format_json(run_to_json(run)) + "\n"
        return
    environment = format_json(dict(run.environment), _ENVIRONMENT, "  ")
    head, _, tail = _DOCUMENT.rpartition("%s")
    head %= (environment, _value(run.schema))
    if not nodeids:
        yield head + "{}" + tail
        return
    yield head + "{\n"
    separator = ""
    # Entries of a baseline read lazily that nothing changed are written as they were read.
    tests = run.tests
    text_of = tests.text if isinstance(tests, entries.Entries) else lambda nodeid: None
    for key, nodeid in zip(keys, nodeids):
        text = text_of(nodeid)
        if text is None:
            text = entry_text(run.tests[nodeid])
        yield f"{separator}    {key}: {text}"
        separator = ",\n"
    yield "\n  }" + tail


# The usual case, what format_json(run_to_json(run)) writes at each depth, from templates
# built here out of the record's field lists (a test checks the two agree). %r writes an int or
# a finite float as json.dumps does; %s takes text already encoded.
_DOCUMENT = '{\n  "environment": %s,\n  "schema": %s,\n  "tests": %s\n}\n'


def _template(
    numbers: tuple[str, ...], keys: tuple[str, ...], separator: str, start: str, end: str
) -> tuple[str, Callable[[tuple[Any, ...]], tuple[Any, ...]]]:
    """A %-template of an object holding the numbers `numbers` and the texts `keys` (already
    encoded), keys sorted as json.dumps sorts them; and the getter that puts a tuple of the
    numbers (in `numbers` order) and then the texts (in `keys` order) into the template's
    order."""
    fields = numbers + keys
    ordered = sorted(fields)
    items = (f"{_string(k)}: %{'s' if k in keys else 'r'}" for k in ordered)
    return start + separator.join(items) + end, operator.itemgetter(
        *(fields.index(k) for k in ordered)
    )


_COUNTS_OF = operator.attrgetter(*COUNT_FIELDS, *SIZE_FIELDS)
_WALL_OF = operator.attrgetter(*WALL_FIELDS)
_CPU_OF = operator.attrgetter(*CPU_FIELDS)
_NO_WALL = (None,) * len(WALL_FIELDS)
# The numbers in the order _numbers gives them: with the wall seconds (a run file's, and a
# baseline's gated on wall) and without them (a baseline's gated on CPU seconds: /7).
_NAMES = COUNT_FIELDS + SIZE_FIELDS + WALL_FIELDS + CPU_FIELDS
_SLIM_NAMES = COUNT_FIELDS + SIZE_FIELDS + CPU_FIELDS
_INTS = (int,) * (len(COUNT_FIELDS) + len(SIZE_FIELDS))
_FLOATS = (float,) * len(_NAMES)
_DIGITS = (TIME_DIGITS,) * len(_NAMES)
_INF = math.inf
_TEST_KEYS = ("benchmarks", "eager", "functions", "outcome")
_TEST_SHAPE = (",\n      ", "{\n      ", "\n    }")
_FUNCTION_KEYS = ("name", "site", "retrace_reasons")
_Template = tuple[str, Callable[[tuple[Any, ...]], tuple[Any, ...]]]


def _both(keys: tuple[str, ...], separator: str, start: str, end: str) -> dict[bool, _Template]:
    """The template of an object with the wall seconds (True) and without them (False)."""
    return {
        True: _template(_NAMES, keys, separator, start, end),
        False: _template(_SLIM_NAMES, keys, separator, start, end),
    }


_EAGER_LINES = _both((), ", ", "{", "}")
_EAGER_COUNTS_LINE, _EAGER_COUNTS_ORDER = _template(COUNT_FIELDS, (), ", ", "{", "}")
_EAGER_COUNTS_OF = operator.attrgetter(*COUNT_FIELDS)
_COUNT_INTS = (int,) * len(COUNT_FIELDS)
_EAGER_OPTIONAL_OF = operator.attrgetter(*EAGER_OPTIONAL)
_NO_EAGER_OPTIONAL = (None,) * len(EAGER_OPTIONAL)
_TEST_TEXTS = _both(_TEST_KEYS, *_TEST_SHAPE)
# A test entry without its eager block (a baseline's whose helpers compiled nothing: /7).
_TEST_TEXTS_NO_EAGER = _both(("benchmarks", "functions", "outcome"), *_TEST_SHAPE)
_FUNCTION_LINES = _both(_FUNCTION_KEYS, ", ", "{", "}")
_SOURCED_LINES = _both((*_FUNCTION_KEYS, "eqn_sources"), ", ", "{", "}")


def _numbers(c: Counts) -> tuple[bool, tuple[Any, ...]] | None:
    """Whether `c` holds its wall seconds, and its counts and rounded seconds (in _NAMES or
    _SLIM_NAMES order), where the counts are ints and the seconds finite floats (%r then
    writes them as json.dumps does) and the wall seconds all there or all left out (a
    baseline's gated on CPU seconds); else None (CPU seconds or sizes not measured, say: the
    general writer writes null)."""
    counts, wall = _COUNTS_OF(c), _WALL_OF(c)
    full = wall != _NO_WALL
    seconds = wall + _CPU_OF(c) if full else _CPU_OF(c)
    if (
        tuple(map(type, counts)) == _INTS  # a bool is not one
        and tuple(map(type, seconds)) == _FLOATS[: len(seconds)]
        and -_INF < sum(seconds) < _INF  # none inf or nan
    ):
        return full, counts + tuple(map(round, seconds, _DIGITS))
    return None


def entry_text(rec: RecordedTest) -> str:
    """format_json(recorded_test_to_json(rec), _TEST, "    "), from templates when the values
    are plain."""
    try:
        text = _quickentry_text(rec)
    except TypeError:  # a string field that is not a string, say
        text = None
    return text if text is not None else format_json(recorded_test_to_json(rec), _TEST, "    ")


def _eager_text(eager: Counts) -> str | None:
    """The eager block's line as model.eager_to_json has it: whole (a run file's), its counts
    alone (a baseline's), "" where left out (its counts all 0 too); None: the general way."""
    if _EAGER_OPTIONAL_OF(eager) == _NO_EAGER_OPTIONAL:
        counts = _EAGER_COUNTS_OF(eager)
        if tuple(map(type, counts)) != _COUNT_INTS:
            return None
        return _EAGER_COUNTS_LINE % _EAGER_COUNTS_ORDER(counts) if any(counts) else ""
    numbers = _numbers(eager)
    if numbers is None:
        return None
    line, order = _EAGER_LINES[numbers[0]]
    text: str = line % order(numbers[1])
    return text


def _quickentry_text(rec: RecordedTest) -> str | None:
    if rec.environment is not None or rec.marker or rec.confirmation is not None:
        return None  # not in the template: the general way
    own, eager = _numbers(rec), _eager_text(rec.eager)
    if own is None or eager is None:
        return None
    functions = []
    for key, fn in sorted(rec.functions.items()):
        line = _function_line(fn)
        if line is None:
            return None
        functions.append(f"        {_string(key)}: {line}")
    benchmarks = {k: entry_to_json(e) for k, e in rec.benchmarks.items()}
    texts = (
        format_json(benchmarks, _BENCHMARKS, "      "),
        "{\n" + ",\n".join(functions) + "\n      }" if functions else "{}",
        _string(rec.outcome),
    )
    if eager:
        template, order = _TEST_TEXTS[own[0]]
        return template % order(own[1] + texts[:1] + (eager,) + texts[1:])
    template, order = _TEST_TEXTS_NO_EAGER[own[0]]
    text: str = template % order(own[1] + texts)
    return text


def _function_line(fn: FunctionRecord) -> str | None:
    numbers = _numbers(fn)
    if numbers is None or fn.instructions:  # instructions: the general way
        return None
    wall, values = numbers
    reasons = "[" + ", ".join(map(_string, fn.retrace_reasons)) + "]"
    texts = (_string(fn.name), _string(fn.site), reasons)
    if fn.eqn_sources:  # written where recorded (see model.function_to_json)
        sources = _compact({k: list(v) for k, v in fn.eqn_sources.items()})
        line, order = _SOURCED_LINES[wall]
        sourced: str = line % order(values + texts + (sources,))
        return sourced
    line, order = _FUNCTION_LINES[wall]
    text: str = line % order(values + texts)
    return text


def save(path: Path, run: RunRecord) -> None:
    """Write `run` to `path` atomically: readers see the old file or the new one, whole.
    A symbolic link is written at its target."""
    from .outputs import replace_text

    with collector_paused():
        replace_text(path, _pieces(run))
