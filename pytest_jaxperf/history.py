"""A JSON Lines history of runs: one line per run with time, commit and key metrics per test."""

from __future__ import annotations

import json
import math
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .baseline import BaselineError
from .model import Report

SCHEMA = "pytest-jaxperf-history/1"

# git must never hold up the end of a test session.
GIT_TIMEOUT_S = 2.0


def make_entry(
    run: Report, when: datetime | None = None, cwd: Path | None = None
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
            "compile_s": round(rec.total_s, 6),
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
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def append(path: Path, entry: dict[str, Any]) -> None:
    """Add `entry` as one line at the end of `path` (creating it and its directories). A line
    left unfinished by an interrupted writer is closed first, so it cannot swallow this one."""
    line = json.dumps(entry, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as fh:
        if fh.tell() > 0 and not _ends_with_newline(path):
            line = "\n" + line
        fh.write(line.encode("utf-8"))


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"


def load(path: Path, *, last: int | None = None) -> list[dict[str, Any]]:
    """The entries of a history file in order (only the final `last` ones when given: a long
    history need not be parsed whole for a plot); [] when it does not exist. A line that is
    not a JSON object raises BaselineError naming the file and the line (blank lines are
    skipped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"cannot read history {path}: {exc}") from None
    entries: list[dict[str, Any]] = []
    hint = "fix or delete that line"
    lines = [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
    if last is not None:
        lines = lines[max(0, len(lines) - last) :] if last > 0 else []
    for number, line in lines:
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BaselineError(
                f"{path}:{number}: not a JSON line of a pytest-jaxperf history "
                f"(column {exc.colno}: {exc.msg}); {hint}"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("tests", {}), dict):
            raise BaselineError(
                f"{path}:{number}: not a pytest-jaxperf history entry "
                f"(expected an object with a 'tests' object); {hint}"
            )
        if data.get("schema", SCHEMA) != SCHEMA:
            raise BaselineError(
                f"{path}:{number}: history schema {data.get('schema')!r}, expected {SCHEMA!r} "
                f"(written by another version of pytest-jaxperf); {hint}"
            )
        entries.append(data)
    return entries
