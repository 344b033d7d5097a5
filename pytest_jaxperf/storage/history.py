"""A JSON Lines history of runs: one line per run with time, commit and key metrics per test."""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..model import RunRecord, held
from . import gitenv
from .outputs import locked, read_regular

SCHEMA = "pytest-jaxperf-history/1"


class HistoryError(Exception):
    """A history file cannot be used; the message names the file, the line and the fix."""


# git must never hold up the end of a test session.
GIT_TIMEOUT_S = 2.0


def make_entry(
    run: RunRecord, when: datetime | None = None, cwd: Path | None = None
) -> dict[str, Any]:
    """One history line for `run`: {"schema", "time" (ISO-8601 UTC), "commit" and "dirty"
    (when `cwd` is in a git work tree and git answers), "environment", "tests": {nodeid:
    {"traces", "compiles", "compile_s", "runtime_s": {label: median seconds}}}}. A naive
    `when` is taken as local time; "outcome" is stored only for tests that did not pass."""
    moment = (when or datetime.now(timezone.utc)).astimezone(timezone.utc)
    entry: dict[str, Any] = {
        "schema": SCHEMA,
        "time": moment.isoformat(timespec="seconds").replace("+00:00", "Z"),
    }
    entry.update(git_state(cwd or Path.cwd()))
    entry["environment"] = dict(run.environment)
    tests: dict[str, Any] = {}
    for nodeid, rec in sorted(run.tests.items()):
        item: dict[str, Any] = {
            "traces": rec.traces,
            "compiles": rec.compiles,
            "compile_s": round(held(rec.total_s, f"wall seconds of {nodeid}"), 6),
        }
        if rec.outcome != "passed":
            item["outcome"] = rec.outcome
        medians = {
            label: entry.runtime.median_s
            for label, entry in rec.benchmark_entries()
            if entry.runtime is not None
        }
        if medians:
            item["runtime_s"] = medians
        tests[nodeid] = item
    entry["tests"] = tests
    return entry


def number(value: object) -> float | None:
    """A metric of a history entry as a finite float, or None (history lines are read as
    written, by any version: a value may be missing or odd)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def git_state(cwd: Path) -> dict[str, Any]:
    """{"commit": sha, "dirty": bool} for the git work tree at `cwd`; {} when there is none,
    git is missing or slow. Untracked files do not count as dirty (reports land there)."""
    commit = _git(cwd, "rev-parse", "--verify", "HEAD")
    if commit is None:
        return {}
    state: dict[str, Any] = {"commit": commit}
    status = _git(cwd, "status", "--porcelain", "--untracked-files=no")
    if status is not None:
        state["dirty"] = bool(status)
    return state


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = gitenv.run(list(args), cwd, GIT_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def append(path: Path, entry: dict[str, Any]) -> None:
    """Add `entry` as one line at the end of `path` (creating it and its directories), under
    the lock beside it. A line left unfinished by an interrupted writer is closed first, so it
    cannot swallow this one."""
    line = _line(entry)
    with locked(path):
        _append_line(path, line)


def append_and_read(path: Path, entry: dict[str, Any], *, last: int | None = None) -> History:
    """append(path, entry), then read(path, last=last), under one hold of the lock: another
    run's half-written line is never read."""
    line = _line(entry)
    with locked(path):
        _append_line(path, line)
        return read(path, last=last)


def _line(entry: dict[str, Any]) -> bytes:
    text = json.dumps(entry, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return (text + "\n").encode("utf-8")


def _append_line(path: Path, line: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as fh:
        if fh.tell() > 0 and not _ends_with_newline(path):
            line = b"\n" + line
        fh.write(line)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"


@dataclass(frozen=True)
class History:
    """The entries read from a history file, and the lines skipped as unreadable."""

    entries: list[dict[str, Any]]
    # Line numbers (from 1) of lines that are not JSON: cut short by an interrupted writer.
    skipped: tuple[int, ...] = ()

    def note(self, path: Path) -> str | None:
        """One line about the skipped lines, or None when there were none."""
        if not self.skipped:
            return None
        shown = ", ".join(map(str, self.skipped[:5])) + (", ..." if len(self.skipped) > 5 else "")
        return (
            f"{path}: skipped {len(self.skipped)} unreadable line(s) (line {shown}: cut short "
            "by an interrupted run?); delete them to silence this note"
        )


def load(path: Path, *, last: int | None = None) -> list[dict[str, Any]]:
    """read(path, last=last).entries."""
    return read(path, last=last).entries


def read(path: Path, *, last: int | None = None) -> History:
    """The entries of a history file in order (only the final `last` ones when given: a long
    history need not be parsed whole for a plot); none when it does not exist. A line that is
    not JSON (an interrupted writer's) is skipped and its number kept in `skipped`; a JSON line
    that is not a history entry raises HistoryError naming the file and the line: that file is
    not a history (blank lines are skipped)."""
    try:
        raw, _ = read_regular(path)
    except FileNotFoundError:
        return History([])
    except OSError as exc:
        raise HistoryError(f"cannot read history {path}: {exc}") from None
    entries: list[dict[str, Any]] = []
    skipped: list[int] = []
    hint = "fix or delete that line"
    lines = [(n, line) for n, line in enumerate(raw.split(b"\n"), start=1) if line.strip()]
    # From the end, so that `last` entries are found however many broken lines are among them.
    for number, line in reversed(lines):
        if last is not None and len(entries) >= last:
            break
        try:
            # Each line on its own: a line cut inside a character spoils only itself.
            data = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            # Not JSON, or JSON past what Python reads (an integer of more than 4,300
            # digits, nesting past the recursion limit): no history entry either way.
            skipped.append(number)
            continue
        if not isinstance(data, dict) or not isinstance(data.get("tests", {}), dict):
            raise HistoryError(
                f"{path}:{number}: not a pytest-jaxperf history entry "
                f"(expected an object with a 'tests' object); {hint}"
            )
        if data.get("schema", SCHEMA) != SCHEMA:
            raise HistoryError(
                f"{path}:{number}: history schema {data.get('schema')!r}, expected {SCHEMA!r} "
                f"(written by another version of pytest-jaxperf); {hint}"
            )
        entries.append(data)
    return History(entries[::-1], tuple(skipped[::-1]))
