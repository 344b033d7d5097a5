"""A baseline left with git's merge-conflict markers, resolved per test (`jaxperf resolve`):
each side of the conflict is read as a whole baseline, and a test whose entry differs
between them takes the entry of the side whose commit is the newer one (or the side asked
for). Every other entry, and each entry's environment, is kept."""

from __future__ import annotations

import json
import subprocess
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
            f"jaxperf: {path}: {len(self.conflicting)} test(s) changed on both sides, resolved "
            f"to {self.side} ({self.why}); `git add {path}` to conclude"
        )


def sides(text: str) -> tuple[str, str, str | None] | None:
    """The file as each side of the conflict wrote it (ours, theirs) and as their common
    ancestor had it where every conflict shows it (diff3 style), or None when the text has no
    conflict markers."""
    parts: dict[str, list[str]] = {OURS: [], THEIRS: [], _BASE: []}
    state, found, every_base = "both", False, True
    for line in text.splitlines(keepends=True):
        marker = line[:7]
        if marker == "<<<<<<<" and state == "both":
            state, found, with_base = OURS, True, False
        elif marker == "|||||||" and state == OURS:
            state, with_base = _BASE, True
        elif marker == "=======" and state in (OURS, _BASE):
            state = THEIRS
        elif marker == ">>>>>>>" and state == THEIRS:
            state, every_base = "both", every_base and with_base
        elif state == "both":
            for part in parts.values():
                part.append(line)
        else:
            parts[state].append(line)
    if state != "both":
        raise BaselineError("has a conflict that is not closed (no >>>>>>> line)")
    if not found:
        return None
    base = "".join(parts[_BASE]) if every_base else None
    return "".join(parts[OURS]), "".join(parts[THEIRS]), base


_BASE = "base"


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
        theirs, ours = _commit_time(head, where), _commit_time("HEAD", where)
        if theirs is None or ours is None:
            continue
        if theirs >= ours:
            return THEIRS, f"{head} is the newer commit"
        return OURS, f"HEAD is newer than {head}"
    raise BaselineError(
        "cannot tell which side is newer: no merge, rebase or cherry-pick is under way here; "
        "pass --keep ours or --keep theirs"
    )


def _commit_time(ref: str, where: Path) -> int | None:
    try:
        found = gitenv.run(["log", "-1", "--format=%ct", ref, "--"], cwd=where, timeout=30)
    except (OSError, subprocess.TimeoutExpired):  # no git
        return None
    text = found.stdout.strip()
    return int(text) if found.returncode == 0 and text.isdigit() else None


def resolve(text: str, side: str, why: str, base: str | None = None) -> Resolved:
    """The baseline `text` (with conflict markers) resolved: every test of either side; a test
    changed on one side only (against the common ancestor's file, from diff3 markers or
    `base`) takes that side's entry, a test whose entries differ otherwise takes `side`'s."""
    found = sides(text)
    if found is None:
        raise BaselineError("has no merge-conflict markers: nothing to resolve")
    ours, theirs = _read(found[0], "our side"), _read(found[1], "their side")
    base_text = found[2] if found[2] is not None else base
    ancestor = _read(base_text, "the common ancestor") if base_text is not None else None
    sided = {OURS: ours, THEIRS: theirs}
    chosen, other = sided[side], sided[THEIRS if side == OURS else OURS]
    entries: dict[str, tuple[RecordedTest, dict[str, Any]]] = {}
    conflicting = []
    for nodeid in sorted({*ours.tests, *theirs.tests}):
        take = chosen if nodeid in chosen.tests else other
        if nodeid in chosen.tests and nodeid in other.tests:
            mine, yours = _written(chosen, nodeid), _written(other, nodeid)
            was = _written(ancestor, nodeid) if ancestor and nodeid in ancestor.tests else None
            if mine != yours and was is not None and mine == was:
                take = other  # changed on the other side only
            elif mine != yours and not (was is not None and yours == was):
                conflicting.append(nodeid)
        entries[nodeid] = (take.tests[nodeid], take.environment_of(nodeid))
    environment = _file_environment(
        [env for _, env in entries.values()], other.environment, chosen.environment
    )
    tests = {k: placed(r, env, environment) for k, (r, env) in entries.items()}
    return Resolved(RunRecord(environment, tests), tuple(conflicting), side, why)


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
        resolved = resolve(text, side, why, _ancestor(path))
    except BaselineError as exc:
        raise BaselineError(f"{path} {exc}") from None
    save(path, resolved.run)
    return resolved


def _ancestor(path: Path) -> str | None:
    """The common ancestor's version of the conflicted file, as git keeps it in the index
    (stage 1) while the conflict lasts; None where there is none (a file added on both
    sides, no git, no conflict in the index)."""
    where = path.resolve()
    try:
        found = gitenv.run(["show", f":1:./{where.name}"], cwd=where.parent, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found.stdout if found.returncode == 0 else None
