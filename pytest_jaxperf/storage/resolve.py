"""A baseline left with git's merge-conflict markers, resolved per test (`jaxperf resolve`):
each side of the conflict is read as a whole baseline, and a test whose entry differs
between them takes the entry of the side whose commit is the newer one (or the side asked
for). Every other entry, and each entry's environment, is kept."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model import FormatError, RecordedTest, RunRecord, recorded_test_to_json, run_from_json
from . import gitenv
from .resave import _file_environment
from .store import BaselineError, placed, save

OURS, THEIRS = "ours", "theirs"
# The ref git leaves for the other side of each operation that can stop on a conflict.
_OTHER_HEADS = ("MERGE_HEAD", "REBASE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD")


@dataclass(frozen=True)
class Resolved:
    """What `resolve` did: the tests whose entries differed, and the side they took."""

    run: RunRecord
    conflicting: tuple[str, ...]
    side: str
    why: str

    def line(self, path: Path) -> str:
        if not self.conflicting:
            return f"jaxperf: {path}: the two sides hold the same entries; resolved"
        return (
            f"jaxperf: {path}: {len(self.conflicting)} test(s) in conflict took {self.side}'s "
            f"entry ({self.why}); `git add {path}` to conclude"
        )


def sides(text: str) -> tuple[str, str] | None:
    """The file as each side of the conflict wrote it (ours, theirs), or None when the text
    has no conflict markers. The common ancestor's part (diff3 style) is dropped."""
    ours: list[str] = []
    theirs: list[str] = []
    state, found = "both", False
    for line in text.splitlines(keepends=True):
        marker = line[:7]
        if marker == "<<<<<<<" and state == "both":
            state, found = OURS, True
        elif marker == "|||||||" and state == OURS:
            state = "base"
        elif marker == "=======" and state in (OURS, "base"):
            state = THEIRS
        elif marker == ">>>>>>>" and state == THEIRS:
            state = "both"
        elif state in ("both", OURS):
            ours.append(line)
            if state == "both":
                theirs.append(line)
        elif state == THEIRS:
            theirs.append(line)
    if state != "both":
        raise BaselineError("a conflict is not closed (no >>>>>>> line)")
    return ("".join(ours), "".join(theirs)) if found else None


def _read(text: str, what: str) -> RunRecord:
    try:
        return run_from_json(json.loads(text))
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and FormatError are ones
        kind = "is not a pytest-jaxperf baseline" if isinstance(exc, FormatError) else "is not JSON"
        raise BaselineError(f"{what} {kind} ({exc}); resolve it by hand") from None


def newer_side(where: Path) -> tuple[str, str]:
    """(side, why): the side whose commit is newer, by committer date, of the git operation
    stopped in the repository holding `where`; BaselineError when there is none."""
    for head in _OTHER_HEADS:
        found = gitenv.run(["log", "-1", "--format=%ct", head, "--"], cwd=where, timeout=30)
        if found.returncode != 0:
            continue
        mine = gitenv.run(["log", "-1", "--format=%ct", "HEAD", "--"], cwd=where, timeout=30)
        if mine.returncode != 0:
            break
        if int(found.stdout.strip() or 0) >= int(mine.stdout.strip() or 0):
            return THEIRS, f"{head} is the newer commit"
        return OURS, f"HEAD is newer than {head}"
    raise BaselineError(
        "cannot tell which side is newer: no merge, rebase or cherry-pick is under way here; "
        "pass --keep ours or --keep theirs"
    )


def resolve(text: str, side: str, why: str) -> Resolved:
    """The baseline `text` (with conflict markers) resolved: every test of either side, a
    test whose entries differ taking `side`'s."""
    found = sides(text)
    if found is None:
        raise BaselineError("has no merge-conflict markers: nothing to resolve")
    ours, theirs = (_read(t, f"the {s} side") for t, s in zip(found, (OURS, THEIRS)))
    first, second = (ours, theirs) if side == OURS else (theirs, ours)
    entries: dict[str, tuple[RecordedTest, dict[str, Any]]] = {}
    for run in (second, first):  # the chosen side last: its entries win
        for nodeid, rec in run.tests.items():
            entries[nodeid] = (rec, run.environment_of(nodeid))
    conflicting = tuple(
        nodeid
        for nodeid in sorted(set(ours.tests) & set(theirs.tests))
        if _written(ours, nodeid) != _written(theirs, nodeid)
    )
    environment = _file_environment(
        [env for _, env in entries.values()], second.environment, first.environment
    )
    tests = {k: placed(r, env, environment) for k, (r, env) in sorted(entries.items())}
    return Resolved(RunRecord(environment, tests), conflicting, side, why)


def _written(run: RunRecord, nodeid: str) -> dict[str, Any]:
    return recorded_test_to_json(run.tests[nodeid]) | {"environment": run.environment_of(nodeid)}


def resolve_file(path: Path, keep: str) -> Resolved:
    """Resolve the conflicted baseline at `path` in place (atomically): `keep` is "ours",
    "theirs" or "newer"."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BaselineError(f"cannot read {path}: {exc.strerror or exc}") from None
    if keep == "newer":
        side, why = newer_side(path.resolve().parent)
    else:
        side, why = keep, f"--keep {keep}"
    try:
        resolved = resolve(text, side, why)
    except BaselineError as exc:
        raise BaselineError(f"{path} {exc}") from None
    save(path, resolved.run)
    return resolved
