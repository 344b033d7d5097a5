"""Re-measures a test's compile work to confirm a compile-time breach (see `confirmation`):
each kept program of the test's functions is lowered and compiled again, as a new function,
in a scope of its own, up to `repeats` times; each function keeps its fastest repeat, beside
what its kept programs took when the test compiled them.

Only called for a test whose compile time breached: a clean run never gets here."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..confirmation import fastest
from ..model import Phases, Remeasured, held
from . import _jaxhooks as hooks
from .recorder import RECORDER, Recorder

# Seconds of recompiles after which no further repeat starts: a real regression of a long
# compile pays it about once or twice, not `repeats` times.
BUDGET_S = 10.0


def remeasure(
    rootdir: Path,
    repeats: int,
    holds: Callable[[Remeasured], bool] | None = None,
    budget_s: float = BUDGET_S,
    recorder: Recorder = RECORDER,
    clock: Callable[[], float] = time.perf_counter,
) -> Remeasured:
    """The last recorded test's programs (`recorder.last_programs`), lowered and compiled
    again up to `repeats` times, none started past `budget_s` seconds of them. After each
    repeat `holds(what so far)` says whether the breach still holds: once it does not, more
    repeats could only confirm that."""
    programs, left_out = recorder.last_programs
    recorder.last_programs = ({}, {})
    left = dict(left_out)
    samples: dict[str, list[Phases]] = {}
    start = clock()
    done = 0
    first = {key: kept.first for key, kept in programs.items()}
    so_far = Remeasured({}, 0, 0.0, left)
    if not any(key not in left for key in programs):
        return so_far  # nothing to compile again: the first figures stand
    for _ in range(repeats):
        for key, kept in programs.items():
            if key in left:
                continue
            try:
                samples.setdefault(key, []).append(_once(rootdir, kept.jaxprs, recorder))
            except _NotMeasured as exc:
                left[key] = str(exc)
            except Exception as exc:  # never an internal error in the user's run
                left[key] = f"re-measuring failed: {type(exc).__name__}: {exc}".splitlines()[0]
        done += 1
        so_far = Remeasured(
            {k: fastest(v) for k, v in samples.items() if k not in left},
            done,
            clock() - start,
            left,
            {k: p for k, p in first.items() if k in samples and k not in left},
        )
        if holds is not None and not holds(so_far):
            break
        if so_far.seconds > budget_s:
            break
    # The scopes above were the recompiles', not a test's.
    recorder.last_programs = ({}, {})
    return so_far


class _NotMeasured(Exception):
    pass


def _once(rootdir: Path, jaxprs: list[Any], recorder: Recorder) -> Phases:
    """One function's programs lowered and compiled again: the lower and backend seconds
    the recorder's listeners measured (collections left out, as for the test)."""
    with recorder.scope(rootdir) as scope:
        for jaxpr in jaxprs:
            try:
                hooks.lower_and_compile(jaxpr)
            except Exception as exc:
                raise _NotMeasured(
                    f"could not be compiled again: {type(exc).__name__}: {exc}".splitlines()[0]
                ) from None
    total = scope.totals()
    total.add(scope.eager)
    if total.cache_hits:
        raise _NotMeasured("compiled again from the persistent compilation cache")
    if total.lowerings < len(jaxprs) or total.compiles < len(jaxprs):
        raise _NotMeasured("its recompiles were not all seen")
    return Phases(
        lower_s=held(total.lower_s, "lower_s"),
        compile_s=held(total.compile_s, "compile_s"),
        lower_cpu_s=total.lower_cpu_s,
        compile_cpu_s=total.compile_cpu_s,
    )
