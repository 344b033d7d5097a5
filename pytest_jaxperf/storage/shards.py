"""A suite split across CI jobs (shards), each writing its own report: reading the reports as
one run, the rule that a test runs in one shard only, and merging them into a baseline. What
`jaxperf merge` and `jaxperf compare BASELINE REPORT...` do with several reports; no jax."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Tolerances
from ..model import RunRecord
from .store import BaselineError, load, placed, save

if TYPE_CHECKING:
    # Imported where a merge uses it: `jaxperf compare` reads shards and merges none.
    from .resave import Tally

# What to do about a shard report that is missing or cannot be read.
FIX_SHARD = "pass the report each shard wrote with pytest --jaxperf --jaxperf-json=PATH"
# What to do where a shard would lose a stored value it did not measure.
_INSTEAD = "merge into another file (-o) or delete the entry first"


@dataclass(frozen=True)
class Shard:
    """One shard's report and the file it was read from (named in every message)."""

    path: Path
    run: RunRecord


@dataclass
class ShardsResaved:
    """What `resave_shards` did: the file as written, and what became of each shard test."""

    path: Path
    shards: list[Shard]
    result: RunRecord
    # What became of the file's entries (`resave.Tally`: updated, added; the rest kept).
    tally: Tally
    # Passed tests of the shards, merged into the file by --jaxperf-save's rules.
    written: list[str] = field(default_factory=list)
    # Tests of the shards that did not pass, by outcome: a baseline takes passed tests only,
    # so the file keeps what it had for them (an earlier entry, or none).
    left_out: dict[str, str] = field(default_factory=dict)

    @property
    def kept(self) -> int:
        """Entries of the file that no shard replaced (tests not run in any shard, or not
        passed there)."""
        return len(self.result.tests) - len(self.written)

    @property
    def unchanged(self) -> int:
        """Passed tests of the shards whose entries stay as they were: every value measured
        within its tolerance of the stored one, or not measured by the shard."""
        return len(self.written) - self.tally.updated - self.tally.added


def load_shards(paths: Sequence[Path]) -> list[Shard]:
    """The reports at `paths`, checked to hold each test once; BaselineError, naming the file
    and the fix, for no paths, a missing, unreadable or foreign file, or a test in two."""
    if not paths:
        raise BaselineError(
            f"no shard reports given (a pattern that matched no file?); {FIX_SHARD}, "
            "e.g. jaxperf merge shard-*.json -o .jaxperf/baseline.json"
        )
    shards = []
    for path in paths:
        if path.is_dir():
            raise BaselineError(f"{path}: is a directory, not a report; pass the reports in it")
        run = load(path, hint=FIX_SHARD)
        if run is None:
            raise BaselineError(f"{path}: no such file; {FIX_SHARD}")
        shards.append(Shard(path, run))
    check_disjoint(shards)
    return shards


def check_disjoint(shards: Sequence[Shard]) -> None:
    """Raise BaselineError when a file is given twice or a test is in two reports: either the
    suite was split so that the test ran twice, or reports of different runs were mixed, and
    which of the two entries is right cannot be told."""
    files: set[Path] = set()
    for shard in shards:
        if shard.path.resolve() in files:
            raise BaselineError(f"{shard.path} is given twice; pass each shard's report once")
        files.add(shard.path.resolve())
    seen: dict[str, Path] = {}
    clashes = []
    for shard in shards:
        for nodeid in sorted(shard.run.tests):
            if nodeid in seen:
                clashes.append((nodeid, seen[nodeid], shard.path))
            else:
                seen[nodeid] = shard.path
    if clashes:
        nodeid, first, second = clashes[0]
        k = len(clashes) - 1
        more = f" (and {k} more test{'s' if k != 1 else ''} in two reports)" if k else ""
        raise BaselineError(
            f"test {nodeid} is in both {first} and {second}{more}; each test must run in "
            "one shard only: split the suite so that no test runs twice, and pass the reports "
            "of one run"
        )


def combine(shards: Sequence[Shard]) -> RunRecord:
    """The shards' tests, every outcome, as one report. Its environment is the one most of
    their passed tests were measured in (resave.file_environment, the save's rule), so that as few
    entries as possible carry their own; each entry measured elsewhere (a shard on another
    CPU model, another jax, under pytest-xdist) keeps the environment it was measured in."""
    from .resave import file_environment

    passed = [
        shard.run.environment_of(nodeid)
        for shard in shards
        for nodeid, rec in shard.run.tests.items()
        if rec.outcome == "passed"
    ]
    # The save's own picker (one rule): on a tie, one where everything was measured, then
    # the first passed test's. No test passed: nothing will be merged, any will do.
    first = passed[0] if passed else (shards[0].run.environment if shards else {})
    environment = file_environment(passed, None, first)
    tests = {
        nodeid: placed(rec, shard.run.environment_of(nodeid), environment)
        for shard in shards
        for nodeid, rec in shard.run.tests.items()
    }
    return RunRecord(environment=dict(environment), tests=tests)


def resave_shards(
    path: Path, shards: Sequence[Shard], tolerances: Tolerances, timing_mode: str = "gate"
) -> ShardsResaved:
    """Merge the passed tests of `shards` into the baseline at `path` as `--jaxperf-save`
    merges a run's, one shard after the other (`resave.Resave`, with `tolerances` and
    `timing_mode` as the shards' pytest resolved them): a value a shard did not measure
    (timings under pytest-xdist, say) keeps the stored one, a timing within its tolerance
    keeps the stored one, and every other entry of the file is kept with the environment it
    was measured in. The read, merge and atomic write happen under the lock beside the file,
    so a run saving into it meanwhile keeps its entries. A broken file raises BaselineError
    and is left as it is; so does a shard that would lose a stored value it did not measure
    (`resave.SaveRefused`), and then nothing is written."""
    from .outputs import locked
    from .resave import Measured, Resave, Tally

    # A broken file stops the merge here, before anything (the lock file included) is made;
    # it is read again under the lock, where it counts.
    load(path)
    tally = Tally()
    with locked(path):
        result = load(path)
        for shard in shards:
            env = shard.run.environment
            # A report measured under valgrind is the instructions clock's, whatever the ini.
            clock = "instructions" if env.get("valgrind") else tolerances.runtime_clock
            how = Resave(Measured.of(env, timing_mode, clock), tolerances, _INSTEAD)
            result = how(result, shard.run)
            tally.updated += how.tally.updated
            tally.added += how.tally.added
            tally.unmeasured += how.tally.unmeasured
            tally.why = tally.why or how.tally.why
            tally.converted = tally.converted or how.tally.converted
        if result is None:  # no shard, and no file: load_shards refuses that earlier
            raise BaselineError(f"{path}: nothing to merge; {FIX_SHARD}")
        if not tally.wrote_nothing:  # shards that measured no counts (jit off) change nothing
            save(path, result)
    outcomes = {n: rec.outcome for shard in shards for n, rec in shard.run.tests.items()}
    return ShardsResaved(
        path=path,
        shards=list(shards),
        result=result,
        # A test new to the file from a shard that measured no counts is not added.
        written=sorted(
            n for n, outcome in outcomes.items() if outcome == "passed" and n in result.tests
        ),
        left_out={n: o for n, o in sorted(outcomes.items()) if o != "passed"},
        tally=tally,
    )


def resave_lines(merged: ShardsResaved) -> list[str]:
    """What `jaxperf merge` prints: the tally, each shard test left out and why, and each
    shard whose entries keep an environment of their own."""
    m = merged
    n = len(m.shards)
    lines = [
        f"jaxperf: merged {n} shard report{'s' if n != 1 else ''} into {m.path}: "
        f"{len(m.written)} passed test{'s' if len(m.written) != 1 else ''} "
        f"({m.tally.updated} entr{'ies' if m.tally.updated != 1 else 'y'} updated, "
        f"{m.tally.added} added, {m.unchanged} as stored), "
        f"{m.kept} other entr{'ies' if m.kept != 1 else 'y'} kept, "
        f"{len(m.result.tests)} in all{m.tally.conversion()}"
    ]
    if m.tally.unmeasured:
        lines.append(f"not merged: {m.tally.unmeasured} test(s): {m.tally.why}")
    shard_of = {nodeid: s.path for s in m.shards for nodeid in s.run.tests}
    for nodeid, outcome in m.left_out.items():
        before = "its entry there is kept" if nodeid in m.result.tests else "it has no entry"
        lines.append(
            f"not merged: {nodeid}: {outcome} in {shard_of[nodeid]} (a baseline takes passed "
            f"tests only; {before})"
        )
    for shard in m.shards:
        own = [n for n in m.written if n in shard.run.tests and m.result.tests[n].environment]
        if own:
            differences = _differences(m.result.environment, m.result.environment_of(own[0]))
            many = len(own) != 1
            lines.append(
                f"note: {len(own)} test{'s' if many else ''} of {shard.path} "
                f"keep{'' if many else 's'} the environment {'they were' if many else 'it was'} "
                f"measured in ({differences or 'differs'}); each is gated against its own"
            )
    return lines


def _differences(file_env: Mapping[str, Any], own: Mapping[str, Any]) -> str:
    keys = sorted(k for k in {*file_env, *own} if file_env.get(k) != own.get(k))
    return ", ".join(f"{k} {file_env.get(k)} -> {own.get(k)}" for k in keys)
