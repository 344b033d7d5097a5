"""Loading, validating, merging and atomically saving baseline and report files."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from .model import FormatError, Report, TestRecord, report_from_json, report_to_json


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
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); {hint}"
        ) from None
    try:
        return report_from_json(data)
    except FormatError as exc:
        raise BaselineError(f"{path} is not a pytest-jaxperf baseline: {exc}; {hint}") from None


def merge(old: Report | None, run: Report) -> Report:
    """`old` updated with the passed tests of `run`; every other entry of `old` is kept."""
    tests: dict[str, TestRecord] = dict(old.tests) if old else {}
    for nodeid, rec in run.tests.items():
        if rec.outcome == "passed":
            tests[nodeid] = rec
    return Report(environment=dict(run.environment), tests=tests)


def dumps(report: Report) -> str:
    return json.dumps(report_to_json(report), indent=2, sort_keys=True) + "\n"


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
