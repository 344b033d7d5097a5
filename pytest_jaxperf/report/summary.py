"""A run's verdicts grouped once, and the one wording of a test's status.

The terminal summary, the markdown and HTML reports and `jaxperf compare` all render this:
which tests failed, were reported only, lost a function, improved or are new, and why others
were not gated (each note with the tests it concerns, the most common first). The status
words themselves are `compare.Status`, shown as they are everywhere, JUnit included."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..compare import Verdict
from ..model import RecordedTest
from ..notgated import code_of
from .wording import plural


@dataclass(frozen=True)
class RunSummary:
    regressed: tuple[str, ...]  # node ids, sorted: failed by the plugin (a failing status)
    reported: tuple[str, ...]  # breaches, none gated (saving, or timing mode "report")
    gone: tuple[str, ...]  # a baseline function no longer traced, whatever the status
    functions_gone: int  # how many such functions, over all those tests
    improved: tuple[str, ...]
    new: tuple[str, ...]
    not_gated: tuple[str, ...]  # a metric left out of the verdict, with a note saying why
    notes: tuple[tuple[str, tuple[str, ...]], ...]  # (note, its tests), most tests first

    @classmethod
    def of(cls, verdicts: Mapping[str, Verdict]) -> RunSummary:
        items = sorted(verdicts.items())
        groups: dict[str, list[str]] = {}
        for nodeid, verdict in items:
            for note in verdict.notes:
                groups.setdefault(note, []).append(nodeid)
        return cls(
            regressed=tuple(k for k, o in items if o.failed),
            reported=tuple(k for k, o in items if o.breaches and not o.failed),
            gone=tuple(k for k, o in items if o.gone),
            functions_gone=sum(len(o.gone) for _, o in items),
            improved=tuple(k for k, o in items if o.status == "improved"),
            new=tuple(k for k, o in items if o.status == "new"),
            not_gated=tuple(k for k, o in items if o.notes),
            notes=tuple(
                (note, tuple(ids))
                for note, ids in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))
            ),
        )

    def tally(self) -> str:
        """`jaxperf: 1 regression, 0 improvements, 2 new, 0 not gated`, then the counts that
        are rarely there when they are not 0: `, 1 reported only, 2 functions gone`."""
        text = (
            f"jaxperf: {plural(len(self.regressed), 'regression')}, "
            f"{plural(len(self.improved), 'improvement')}, {len(self.new)} new, "
            f"{len(self.not_gated)} not gated"
        )
        if self.reported:
            text += f", {len(self.reported)} reported only"
        if self.functions_gone:
            text += f", {plural(self.functions_gone, 'function')} gone"
        return text


def not_gated_lines(notes: tuple[tuple[str, tuple[str, ...]], ...]) -> list[str]:
    """One line per reason a metric was left out of verdicts, with how many tests it
    concerns and its code: `jaxperf: compile time of 12 tests not gated: environment differs
    (...) [environment_differs]`."""
    lines = []
    for note, ids in notes:
        tests = plural(len(ids), "test")
        what, sep, why = note.partition(" not gated: ")
        if not sep:
            line = f"jaxperf: {note} ({tests})"
        elif " of " in what:  # "runtime of work": the benchmark's label already follows
            line = f"jaxperf: {what} not gated in {tests}: {why}"
        else:
            line = f"jaxperf: {what} of {tests} not gated: {why}"
        code = code_of(note)
        # The code is what --jaxperf-strict takes to make this reason fail.
        lines.append(line if code is None else f"{line} [{code}]")
    return lines


def upgrade_line(verdicts: Mapping[str, Verdict], most: int = 3) -> str | None:
    """One line: what a jax/jaxlib upgrade changed over the run (not gated), the largest
    changes first; None where no test's baseline differs by an upgrade alone."""
    from ..compare import upgrade_change, upgrade_text

    tests = [(nodeid, v.upgrade) for nodeid, v in sorted(verdicts.items()) if v.upgrade]
    if not tests:
        return None
    moved = sorted(
        ((upgrade_change(c), nodeid, c) for nodeid, changes in tests for c in changes),
        key=lambda m: -m[0],
    )
    largest = "; ".join(
        f"{nodeid.rsplit('::', 1)[-1]}: {upgrade_text(c)}" for _, nodeid, c in moved[:most]
    )
    return (
        f"jaxperf: the upgrade changed {plural(len(tests), 'test')} (not gated; each test's "
        f"'upgrade' line says what; re-save on the upgrade's own commit); largest: {largest}"
    )


def status_of(record: RecordedTest, verdict: Verdict | None) -> str:
    """A test's status column: its verdict (`compare.Status`), with ' (not gated)' where a
    note left a metric out of a verdict that did not fail; the test's own outcome (passed,
    failed, ...) when it was not compared."""
    if verdict is None:
        return record.outcome
    if verdict.notes and not verdict.failed:
        return f"{verdict.status} (not gated)"
    return verdict.status
