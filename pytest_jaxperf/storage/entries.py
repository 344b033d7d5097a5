"""A big baseline's test entries kept as their text, each read into its record when a test
asks for it, and written back as it was read where the save did not change it.

A session reads its baseline at start-up; a file of tens of thousands of tests held as
records costs about three times its size in memory, and every full collection of the user's
session walks those objects. A file laid out as `store.dumps` lays it out (the plugin's own
saves) is instead split into one span of bytes per test entry: the test's gate reads only
its own entry, and a save copies the text of every entry the run did not touch.

What is not checked at start-up: each entry is checked when it is read (a broken entry fails
the test that reads it, naming the file, the entry and the fix), and an entry no test reads
is kept as it is. Any file that is not laid out as expected is read whole, as ever."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..model import SCHEMA, FormatError, RecordedTest, RunRecord, recorded_test_from_json
from .errors import BaselineError

# Files this big or bigger are read this way (about 4,000 tests of a synthetic suite with
# every field present); smaller ones are read and checked whole at start-up.
LAZY_FROM_BYTES = 8_000_000

Span = tuple[int, int]

_TESTS = b'\n  "tests": {\n'
# A test entry's key line in the layout: four spaces, the key (JSON text: no raw newline,
# any quote escaped), a colon. Deeper lines are indented further; nothing else starts a line
# with exactly four spaces and a quote after the "tests" line.
_KEY = re.compile(rb'\n    ("(?:[^"\\\n]|\\.)*"): ')
_TAILS = (b"\n  }\n}\n", b"\n  }\n}")
_OWN_ENVIRONMENT = b'"environment": '


class _Source:
    """The bytes read, and how to read one entry of them (or, once an entry turned out not
    to be readable on its own, the whole file's records)."""

    def __init__(
        self,
        path: Path,
        raw: bytes,
        hint: str,
        loads: Callable[[bytes], Any],
        read_whole: Callable[[Path, str, str], RunRecord],
        read_entry: Callable[[bytes], RecordedTest | None] | None,
    ) -> None:
        self.path, self.raw, self.hint = path, raw, hint
        self._loads, self._read_whole, self._read_entry = loads, read_whole, read_entry
        self.whole: dict[str, RecordedTest] | None = None

    def entry(self, nodeid: str, span: Span) -> RecordedTest:
        if self.whole is not None:
            return self.whole[nodeid]
        if self._read_entry is not None:
            # Decoded straight into its record (msgspec, the `fast` extra); None for anything
            # it does not take, read as below.
            rec = self._read_entry(self.raw[span[0] : span[1]])
            if rec is not None:
                return rec
        try:
            data = self._loads(self.raw[span[0] : span[1]])
        except (ValueError, RecursionError):
            # Not readable on its own: the whole file says what is wrong with it, or is a
            # valid file laid out otherwise, read whole from now on.
            try:
                text = self.raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise BaselineError(f"cannot read {self.path}: {exc}") from None
            self.whole = dict(self._read_whole(self.path, text, self.hint).tests)
            return self.whole[nodeid]
        try:
            # One entry: the careful reader is quicker than the fast path's checks of columns.
            return recorded_test_from_json(data, f"tests[{nodeid!r}]", SCHEMA)
        except FormatError as exc:
            raise BaselineError(
                f"{self.path} is not a pytest-jaxperf baseline: {exc}; {self.hint}"
            ) from None


class Entries(Mapping[str, RecordedTest]):
    """Test entries by id: records, and spans of the source's bytes read when asked for (the
    last one read is kept, for a test's entry and its environment asked one after the other)."""

    def __init__(self, source: _Source, items: dict[str, Span | RecordedTest]) -> None:
        self._source = source
        self._items = items
        self._last: tuple[str, RecordedTest] | None = None

    def __getitem__(self, nodeid: str) -> RecordedTest:
        item = self._items[nodeid]
        if not isinstance(item, tuple):
            return item
        if self._last is not None and self._last[0] == nodeid:
            return self._last[1]
        rec = self._source.entry(nodeid, item)
        self._last = (nodeid, rec)
        return rec

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, nodeid: object) -> bool:
        return nodeid in self._items

    def _span(self, nodeid: str) -> Span | None:
        """Where the entry's text is, while it is text the records do not replace."""
        item = self._items[nodeid]
        return item if isinstance(item, tuple) and self._source.whole is None else None

    def text(self, nodeid: str) -> str | None:
        """The entry's text as read, where it was not read into a record; else None."""
        span = self._span(nodeid)
        return None if span is None else self._source.raw[span[0] : span[1]].decode("utf-8")

    def unread(self, nodeid: str) -> bool:
        """Whether the entry is still text that holds no environment of its own (it was
        measured in the file's): a save can copy it as it is."""
        span = self._span(nodeid)
        return span is not None and self._source.raw.find(_OWN_ENVIRONMENT, *span) < 0

    def may_have_environment(self) -> list[str]:
        """The ids of the entries that may hold an environment of their own (the others
        surely do not): what the session looks at without reading every entry."""
        return [nodeid for nodeid in self._items if not self.unread(nodeid)]

    def updated(self, records: Mapping[str, RecordedTest | None]) -> Entries:
        """These entries as `records` has them: None keeps an entry's text unread."""
        items: dict[str, Span | RecordedTest] = {}
        for nodeid, rec in records.items():
            items[nodeid] = self._items[nodeid] if rec is None else rec
        return Entries(self._source, items)


# Each test entry holds this key once, and nothing else in a file holds it as written (a
# quote inside a string is escaped): counted in C, it tells how many test entries the file
# has, wherever they start.
OUTCOME = b'"outcome"'


def read(
    path: Path,
    raw: bytes,
    hint: str,
    loads: Callable[[bytes], Any],
    read_whole: Callable[[Path, str, str], RunRecord],
    read_entry: Callable[[bytes], RecordedTest | None] | None = None,
) -> RunRecord | None:
    """The run in `raw` with its test entries kept as text, where the file is big and laid
    out as the plugin saves it, in the current schema; None for any other file (read whole).
    An entry is read, when asked for, by `read_entry` where given (None: not taken), else
    parsed by `loads` and checked."""
    if len(raw) < LAZY_FROM_BYTES:
        return None
    at = raw.find(_TESTS)
    if at < 0 or not raw.startswith(b'{\n  "environment": '):
        return None
    try:
        head = json.loads(raw[:at] + b'\n  "tests": {}\n}')
    except ValueError:
        return None
    if set(head) != {"environment", "schema", "tests"} or head["schema"] != SCHEMA:
        return None
    environment = head["environment"]
    if type(environment) is not dict:
        return None
    items: dict[str, Span | RecordedTest] = {}
    start = at + len(_TESTS) - 1  # the first key line starts at the newline
    previous: tuple[str, int] | None = None
    for found in _KEY.finditer(raw, start):
        if previous is not None:
            end = found.start() - 1
            if raw[end] != ord(",") or not _closed(raw, previous[1], end):
                return None
            items[previous[0]] = (previous[1], end)
        elif found.start() != start:
            return None
        quoted = found[1]
        key = quoted[1:-1].decode("utf-8") if b"\\" not in quoted else json.loads(quoted)
        if key in items or (previous is not None and key == previous[0]):
            raise BaselineError(
                f"{path} holds the key {key!r} twice (a merge that kept both sides?): only "
                "one would be read; keep one of them"
            )
        previous = (key, found.end())
    if previous is None:
        return None
    tail = next((t for t in _TAILS if raw.endswith(t)), None)
    end = len(raw) - len(tail) if tail is not None else -1
    if tail is None or not _closed(raw, previous[1], end):
        return None
    items[previous[0]] = (previous[1], end)
    if raw.count(OUTCOME) != len(items):
        return None  # an entry that starts no line of its own (a key twice?): read whole
    source = _Source(path, raw, hint, loads, read_whole, read_entry)
    return RunRecord(environment=environment, tests=Entries(source, items))


def _closed(raw: bytes, start: int, end: int) -> bool:
    """Whether raw[start:end] can be one object: it opens and closes one."""
    return end > start and raw[start] == ord("{") and raw[end - 1] == ord("}")
