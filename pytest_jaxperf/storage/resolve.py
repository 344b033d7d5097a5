"""A baseline left with git's merge-conflict markers, resolved per test (`jaxperf resolve`).

Each side is read whole: from git's index while the merge, rebase or cherry-pick is under
way (stage 2 ours, 3 theirs, 1 their common ancestor), else from the conflict-marked text
(whose clean hunks git has already merged: a last resort). A test whose entry differs
between the sides takes one side's entry whole, never a mix: the side whose gated values
(counts, sizes, the gated seconds, runtime, environment) changed against the ancestor; where
only values the gate does not read changed (wall seconds beside CPU seconds, first-call and
eager times, causes' text), the side that changed anything; where both changed gated values,
the side whose commit is the newer one (or the side asked for). Every other entry, and each
entry's environment, is kept; every entry is compared and written in a baseline's form
(`resave.baseline_form`). What each test took, and why, is said."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import Clock
from ..model import (
    SCHEMA,
    FormatError,
    RecordedTest,
    RunRecord,
    recorded_test_to_json,
    run_from_json,
)
from . import gitenv
from .resave import baseline_form, file_environment
from .store import BaselineError, placed, save

OURS, THEIRS = "ours", "theirs"
# The ref git leaves for the other side of each operation that can stop on a conflict.
_OTHER_HEADS = ("MERGE_HEAD", "REBASE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD")


@dataclass(frozen=True)
class Resolved:
    """What `resolve` did: the tests whose gated values changed on both sides, the side
    they took and why; and for every test whose entries differed, the side it took and why."""

    run: RunRecord
    conflicting: tuple[str, ...]
    side: str
    why: str
    kept: tuple[tuple[str, str, str], ...] = ()  # (test id, side, why)

    def line(self, path: Path) -> str:
        if not self.conflicting:
            return (
                f"jaxperf: {path}: no test's gated values changed on both sides; resolved; "
                f"`git add {path}` to conclude"
            )
        return (
            f"jaxperf: {path}: {len(self.conflicting)} test(s) changed on both sides, resolved "
            f"to {self.side} ({self.why}); `git add {path}` to conclude"
        )

    def lines(self, path: Path) -> list[str]:
        """One line per test whose entries differed, then `line`."""
        return [f"  {nodeid}: kept {side} ({why})" for nodeid, side, why in self.kept] + [
            self.line(path)
        ]


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
    """The baseline `text` (with conflict markers) resolved (see `resolve_sides`); the
    common ancestor's file from diff3 markers or `base`."""
    found = sides(text)
    if found is None:
        raise BaselineError("has no merge-conflict markers: nothing to resolve")
    return resolve_sides(found[0], found[1], found[2] if found[2] is not None else base, side, why)


def resolve_sides(
    ours_text: str, theirs_text: str, base_text: str | None, side: str, why: str
) -> Resolved:
    """Every test of either side; a test whose entries differ takes one side's entry whole:
    the side whose gated values changed against the common ancestor (`base_text`), else the
    side that changed anything, else (both changed gated values, or no ancestor) `side`'s."""
    ours, theirs = _read(ours_text, "our side"), _read(theirs_text, "their side")
    ancestor = _read(base_text, "the common ancestor") if base_text is not None else None
    sided = {OURS: ours, THEIRS: theirs}
    other_side = THEIRS if side == OURS else OURS
    chosen, other = sided[side], sided[other_side]
    entries: dict[str, tuple[RecordedTest, dict[str, Any]]] = {}
    conflicting, kept = [], []
    for nodeid in sorted({*ours.tests, *theirs.tests}):
        take = chosen if nodeid in chosen.tests else other
        if nodeid in chosen.tests and nodeid in other.tests:
            mine, yours = _written(chosen, nodeid), _written(other, nodeid)
            if mine != yours:
                was = _written(ancestor, nodeid) if ancestor and nodeid in ancestor.tests else None
                taken, reason = _pick(mine, yours, was, side, other_side, why)
                take = sided[taken]
                kept.append((nodeid, taken, reason))
                if reason.startswith(_BOTH):
                    conflicting.append(nodeid)
        entries[nodeid] = (_form(take, nodeid), take.environment_of(nodeid))
    environment = file_environment(
        [env for _, env in entries.values()], other.environment, chosen.environment
    )
    tests = {k: placed(r, env, environment) for k, (r, env) in entries.items()}
    return Resolved(RunRecord(environment, tests), tuple(conflicting), side, why, tuple(kept))


_BOTH = "gated values changed on both sides"


def _pick(
    mine: dict[str, Any], yours: dict[str, Any], was: dict[str, Any] | None,
    side: str, other: str, why: str,
) -> tuple[str, str]:  # fmt: skip
    """(side, why) for a test whose two entries differ (`mine` is `side`'s)."""
    if was is None:
        if gated(mine) == gated(yours):
            return side, f"the sides differ only in values the gate does not read: {side}"
        return side, f"{_BOTH} (added on both): {why}"
    moved_mine, moved_yours = gated(mine) != gated(was), gated(yours) != gated(was)
    if moved_mine != moved_yours:
        taken = side if moved_mine else other
        return taken, f"its gated values changed on {_SIDE[taken]} only"
    if moved_mine:
        return side, f"{_BOTH}: {why}"
    if mine == was:
        return other, f"changed on {_SIDE[other]} only"
    return side, f"only values the gate does not read changed: {side}"


_SIDE = {OURS: "our side", THEIRS: "their side"}


# Fields of an entry the gate never reads: seconds it reads on the CPU clock when CPU
# seconds are there, first-call and eager times, the causes' text.
_UNGATED = frozenset({"retrace_reasons", "first_call_s", "eager_median_s", "break_even_calls"})
_WALL = {"trace_s": "trace_cpu_s", "lower_s": "lower_cpu_s", "compile_s": "compile_cpu_s"}


def gated(entry: Any) -> Any:
    """An entry as written, less what the gate never reads (see `_UNGATED`); the `eager`
    block (JAX's helpers) is not gated either."""
    if isinstance(entry, dict):
        return {
            k: gated(v)
            for k, v in entry.items()
            if k not in _UNGATED
            and k != "eager"
            and not (k in _WALL and entry.get(_WALL[k]) is not None)
        }
    if isinstance(entry, list):
        return [gated(v) for v in entry]
    return entry


def _written(run: RunRecord, nodeid: str) -> dict[str, Any]:
    """The entry as a save writes it (a side of an older schema holds more: not a change)."""
    written = recorded_test_to_json(_form(run, nodeid))
    return written | {"environment": run.environment_of(nodeid)}


def _form(side: RunRecord, nodeid: str) -> RecordedTest:
    """A side's entry in a baseline's form: a side of this schema was saved so, on its own
    compile clock (its wall seconds stay as they are); an older one's on the default clock
    (the test's marker's where it names one), as a save converts it."""
    clock: Clock | None = None if side.schema == SCHEMA else "cpu"
    return baseline_form(side.tests[nodeid], clock)


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
    ours, theirs = _stage(path, 2), _stage(path, 3)
    try:
        if ours is not None and theirs is not None:
            # Each side whole, as git keeps it while the conflict lasts: the marked text has
            # the clean hunks of both sides merged already.
            resolved = resolve_sides(ours, theirs, _stage(path, 1), side, why)
        else:
            resolved = resolve(text, side, why, _stage(path, 1))
    except BaselineError as exc:
        raise BaselineError(f"{path} {exc}") from None
    save(path, resolved.run)
    return resolved


def _stage(path: Path, stage: int) -> str | None:
    """The conflicted file as git keeps it in the index while the conflict lasts: stage 1
    the common ancestor's, 2 ours, 3 theirs; None where there is none (a file added on both
    sides has no stage 1; no git; no conflict in the index)."""
    where = path.resolve()
    try:
        found = gitenv.run(["show", f":{stage}:./{where.name}"], cwd=where.parent, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found.stdout if found.returncode == 0 else None
