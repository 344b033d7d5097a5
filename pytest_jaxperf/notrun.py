"""Which baseline entries a run did not run (pure): a test renamed or deleted drops out of
the gate silently unless the run names it, and a save can prune it (--jaxperf-prune).

An entry did not run when its test was neither collected nor deselected, while its file was
collected (a test of it renamed or deleted) or no longer exists (the file deleted or moved).
Entries of files the run did not collect at all (`pytest tests/test_a.py`, a shard) are not
named: the run says nothing about them."""

from __future__ import annotations

from collections.abc import Callable, Iterable

# Listed by name in the run's line; the rest are counted.
MAX_LISTED = 5


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def not_run(
    baseline: Iterable[str],
    collected: Iterable[str],
    deselected: Iterable[str],
    exists: Callable[[str], bool],
) -> list[str]:
    """The baseline's test ids the run did not run (see above), sorted; `exists(path)` says
    whether a test file (relative to the rootdir) is still there."""
    seen = set(collected) | set(deselected)
    files = {file_of(nodeid) for nodeid in seen}
    return sorted(
        nodeid
        for nodeid in baseline
        if nodeid not in seen and (file_of(nodeid) in files or not exists(file_of(nodeid)))
    )


def line(ids: list[str], baseline: str, saving: bool) -> str:
    """One line naming the entries that did not run, and how to drop them."""
    shown = ", ".join(ids[:MAX_LISTED])
    if len(ids) > MAX_LISTED:
        shown += f" and {len(ids) - MAX_LISTED} more"
    fix = "" if saving else "; --jaxperf-save --jaxperf-prune removes them"
    return (
        f"jaxperf: {len(ids)} baseline test(s) did not run: {shown} (renamed or deleted? "
        f"their entries in {baseline} gate nothing{fix}) [not_run]"
    )
