"""What `--jaxperf-save` does at the end of a run, beside the keep/update rules themselves
(`storage/resave.py`): where the reference plan left the machine's reference compile for the
end (`reference_plan.py`: "at_end"), the run is resaved first as if the stored value stood,
and the reference is measured only if that resave writes something this run measured, before
the baseline's lock is taken, never under it; then the one locked read-resave-write, and the
summary's line. No pytest, no jax: the session hands in how to measure the reference."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .model import RunRecord
from .storage import store
from .storage.resave import Resave


@dataclasses.dataclass(frozen=True)
class Prepared:
    """What the locked save writes: the run (with the reference fields it stands on) and,
    where it was already resaved into the file as read at the start, that result."""

    run: RunRecord
    resaved: RunRecord | None = None


def with_reference(
    run: RunRecord,
    known: RunRecord | None,
    how: Resave,
    assumed: Mapping[str, Any] | None,
    measure: Callable[[], Mapping[str, Any]],
) -> Prepared:
    """The run to save, its reference settled. `assumed`: the stored reference fields of
    this machine where the check was deferred to the save (None: it was not). `measure()`
    checks the reference now and gives its fields ({} where it does not hold for this run's
    environment); they go into `run.environment` (the run file's too)."""
    if assumed is None:
        return Prepared(run)
    assumed = dict(assumed)
    # Resaved first, outside the baseline's lock, as if the check kept the stored value (as
    # it does unless this machine's compile moved): where the save writes nothing this run
    # measured, there is nothing to check.
    to_save = dataclasses.replace(run, environment={**run.environment, **assumed})
    early = how(known, to_save)
    if how.tally.updated or how.tally.added:
        # The save writes what this run measured: its machine's reference with it, checked
        # now (a JAX child, seconds: before the lock is taken) as it would have been before
        # the first test.
        fresh = dict(measure())
        run.environment.update(fresh)
        if fresh != assumed:
            return Prepared(run)
    return Prepared(to_save, early)


def save(path: Path, prepared: Prepared, how: Resave, known: store.Loaded) -> RunRecord:
    """The locked read-resave-write of `path` (`store.save_locked`); the file as written."""

    def resave_unless_done(old: RunRecord | None, new: RunRecord) -> RunRecord:
        # The file as this run read it, resaved already: one resave (0.6 s on a
        # 10,000-test baseline) where nothing changed it meanwhile.
        if prepared.resaved is not None and old is known.run:
            return prepared.resaved
        return how(old, new)

    return store.save_locked(path, prepared.run, resave_unless_done, known)


def summary_line(how: Resave, shown: str, before: RunRecord | None, saved: RunRecord) -> str:
    """What the save did, for the summary; with how the file's environment changed where
    the save wrote entries into a new one."""
    line = how.tally.line(shown)
    changed = _environment_changed(before.environment if before else None, saved.environment)
    if changed and (how.tally.updated or how.tally.added):
        # Said once: a save under x64 (another jax, device count) switches the gate off for
        # every run in the old environment, CI's included.
        line += (
            f"; the baseline's environment changed ({changed}): runs in the old one gate no "
            "program sizes or compile time of the entries this save wrote"
        )
    return line


def _environment_changed(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> str:
    """'x64 False -> True, ...': how the file's environment changed in what program metrics
    depend on; "" where it did not (or there was no file)."""
    if before is None:
        return ""
    from .environment import static_differences

    return ", ".join(static_differences(before, after))
