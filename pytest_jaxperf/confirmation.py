"""A test's one verdict: its record judged against its baseline entry and marker limits,
a compile-time breach confirmed before it fails, the not-gated codes the user made strict
failing it (pure: the re-measuring is `measure.recompile`'s, the rules `compare`'s).

`verdict_of` is the only way a verdict is made, by the plugin and by `jaxperf compare` alike:
the plugin hands it a re-measurer (and writes what it measured into the run file, as the
record's `confirmation`), `jaxperf compare` the stored measurement, so both give every test
the same verdict.

A compile-time breach is one sample of a noisy figure: where `needed(verdict)`, the test's
kept programs are lowered and compiled again, fastest of `repeats`; `judge` puts each
function's fastest lower and backend seconds of the kept programs (never more than first
recorded; the programs past the bound keep their first figures) into a copy of the record
and has `compare.evaluate` judge it again. A breach that holds is marked "confirmed" with
the repeat count; one that does not becomes a one-line note and the test passes. Where no
program could be compiled again (a test that only traced, programs that could not be
rebuilt, a run file without the re-measurement), nothing can confirm the one sample: a
marker limit still fails on it (the user asked for exactly that number), a baseline breach
fails where it is gross (`BAND`), and is otherwise left out of the verdict with the code
`unconfirmed`. A clean run pays nothing; a real regression pays its lowerings and compiles
`repeats` times at most.

Trace seconds are kept as recorded: the user's Python cannot be run again without the
test's arguments (the collector's share of them is already out, see `measure.gctime`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from . import compare
from .compare import COMPILE_TIME, Breach, Gating, Verdict, compile_seconds, verdict_status
from .config import MarkerLimits, Tolerances
from .model import FunctionRecord, Phases, RecordedTest, Remeasured, held
from .notgated import Note

__all__ = ["Phases", "Remeasured", "verdict_of", "judge", "needed"]

# How many times a breaching test's programs are lowered and compiled again.
REPEATS = 3
# The phases re-measured: (wall field, CPU field).
_PHASES = (("lower_s", "lower_cpu_s"), ("compile_s", "compile_cpu_s"))
# A compile-time breach nothing could confirm is one sample; it fails where it is gross:
# above the baseline x BAND x (1 + compile_rtol) and FLOORS x compile_floor above it (6x and
# 0.5 s by default). Trace seconds of unchanged code read 0.17-0.44 s in fresh processes of
# one quiet VM against 0.170-0.187 s saved (2.6x, the widest seen on the real suites'
# trace-only tests; benchmarks/results/trace_only_not_gated-2026-11-27.txt), which the
# one-sample gate at 2x failed one gate in ten on.
BAND = 3.0
FLOORS = 5.0
# Why nothing was re-measured, where `jaxperf compare` judges a run file without it.
NOT_IN_RUN_FILE = (
    "the run file holds no re-measurement of this test (the plugin confirmed nothing for it: "
    "gated against another baseline or tolerances?)"
)
NOTHING_COMPILED = "no program could be compiled again (trace seconds cannot be re-measured)"


def verdict_of(
    record: RecordedTest,
    base: RecordedTest | None,
    limits: MarkerLimits,
    gating: Gating,
    remeasure: Callable[[Callable[[Remeasured], bool]], Remeasured | None],
    strict: frozenset[str] = frozenset(),
) -> Verdict:
    """The test's verdict: `compare.evaluate`, a compile-time breach confirmed with what
    `remeasure(holds)` gives (the plugin recompiles, stopping once `holds` says the breach
    no longer holds; `jaxperf compare` returns the run file's `record.confirmation`; None:
    nothing was), then the `strict` codes failing it."""
    verdict = compare.evaluate(record, base, limits, gating)
    new = base is None
    if needed(verdict):
        tol = limits.tolerances(gating.tol)

        def again(r: RecordedTest) -> Verdict:
            return compare.evaluate(r, base, limits, gating)

        def holds(m: Remeasured) -> bool:
            return needed(judge(verdict, record, m, again, tol, new=new))

        measured = remeasure(holds)
        why = NOTHING_COMPILED
        if measured is None:
            measured, why = Remeasured({}, 0, 0.0), NOT_IN_RUN_FILE
        verdict = judge(verdict, record, measured, again, tol, new=new, why=why)
    else:
        mark_unconfirmed(verdict)
    compare.apply_strict(verdict, strict, new)
    return verdict


def needed(verdict: Verdict) -> bool:
    """Whether the verdict fails on compile time alone: only then is anything re-measured
    (a test that fails on its counts or sizes too fails whatever a recompile shows)."""
    failing = [b for b in verdict.breaches if b.gated]
    return bool(failing) and not verdict.errors and all(b.metric == COMPILE_TIME for b in failing)


def mark_unconfirmed(verdict: Verdict) -> None:
    """A verdict that fails on other metrics too: its compile-time breaches say they were
    not re-measured (nothing is, for a test failing anyway)."""
    if needed(verdict):
        return
    verdict.breaches = [
        dataclasses.replace(b, detail=_join(b.detail, "not re-measured: the test fails on "
                                            "other metrics too"))
        if b.metric == COMPILE_TIME and b.gated else b
        for b in verdict.breaches
    ]  # fmt: skip


def fastest(samples: list[Phases]) -> Phases:
    """Each phase's fastest sample (wall and CPU each on its own)."""
    out: dict[str, float | None] = {}
    for wall, cpu in _PHASES:
        out[wall] = min(getattr(s, wall) for s in samples)
        cpus = [getattr(s, cpu) for s in samples]
        out[cpu] = None if None in cpus else min(c for c in cpus if c is not None)
    return Phases(**out)  # type: ignore[arg-type]


def confirmed_record(record: RecordedTest, remeasured: Remeasured) -> RecordedTest:
    """A copy of `record` whose re-measured functions carry, for their kept programs, the
    fastest lower and backend seconds, never more than first recorded (a recompile slower
    than the first is load); the programs past the bound keep their first figures."""
    functions: dict[str, FunctionRecord] = {}
    for key, fn in record.functions.items():
        again = remeasured.functions.get(key)
        first = remeasured.first.get(key)
        copy = dataclasses.replace(fn, retrace_reasons=list(fn.retrace_reasons))
        if again is not None:
            for wall, cpu in _PHASES:
                for name in (wall, cpu):
                    kept = None if first is None else getattr(first, name)
                    setattr(copy, name, _confirmed(getattr(fn, name), kept, getattr(again, name)))
        functions[key] = copy
    out = dataclasses.replace(record, functions=functions, benchmarks=dict(record.benchmarks))
    out.recompute_totals()
    return out


def _confirmed(total: float | None, kept: float | None, again: float | None) -> float | None:
    """One phase's confirmed seconds: the recorded `total` with its kept programs' share
    (`kept`, None: all of it) replaced by the faster of it and `again`."""
    if total is None or again is None:
        return None
    if kept is None:
        return min(total, again)
    return max(0.0, total - kept + min(kept, again))


def judge(
    verdict: Verdict,
    record: RecordedTest,
    remeasured: Remeasured,
    evaluate: Callable[[RecordedTest], Verdict],
    tol: Tolerances | None = None,
    new: bool = False,
    why: str = NOTHING_COMPILED,
) -> Verdict:
    """The verdict on the confirmed figures (`evaluate` judges a record as the first
    verdict was judged; `tol` the tolerances it gated with; `new`: the test has no
    baseline entry): compile-time breaches that still hold say they were confirmed and how;
    each that does not is one line of `info`, and no longer fails the test. Where nothing
    was compiled again (`why`), see `_unconfirmable`."""
    tol = tol or Tolerances()
    clock = tol.compile_clock
    confirmed = confirmed_record(record, remeasured)
    again = evaluate(confirmed)
    if _nothing(remeasured):
        return _unconfirmable(again, remeasured, new, tol, why)
    how = _how(remeasured)
    first = {_key(b): b for b in verdict.breaches if b.metric == COMPILE_TIME and b.gated}
    breaches = []
    for b in again.breaches:
        if b.metric == COMPILE_TIME and b.gated:
            was = first.get(_key(b))
            at_first = f", {was.current:.3f} s at first" if was is not None else ""
            b = dataclasses.replace(
                b, detail=_join(b.detail, f"confirmed: {how} {b.current:.3f} s{at_first}"
                                f"{_cost(remeasured)}")
            )  # fmt: skip
        breaches.append(b)
    again.breaches = breaches
    still = {_key(b) for b in again.breaches if b.metric == COMPILE_TIME}
    for key, b in first.items():
        if key not in still:
            on = "wall" if b.detail.startswith("wall") else clock
            target = (
                confirmed
                if b.function is None
                else confirmed.functions.get(b.function.key, confirmed)
            )
            again.info.append(
                not_confirmed_line(
                    b, held(compile_seconds(target, on), "compile seconds"), how, _cost(remeasured)
                )
            )
    _say_left_out(again, remeasured)
    return again


def _say_left_out(verdict: Verdict, remeasured: Remeasured) -> None:
    if remeasured.left_out:
        left = ", ".join(f"{k} ({why})" for k, why in sorted(remeasured.left_out.items()))
        verdict.info.append(f"compile time not re-measured for {left}: first figures kept")


NOT_CONFIRMED = " not confirmed: "


def unconfirmed(verdict: Verdict) -> list[str]:
    """The lines of a judged verdict saying a breach was not confirmed."""
    return [line for line in verdict.info if NOT_CONFIRMED in line]


def not_confirmed_line(b: Breach, confirmed_s: float, how: str, cost: str = "") -> str:
    """One line: a compile-time breach that the recompiles did not confirm."""
    where, against = _named(b)
    return (
        f"compile time of {where}{NOT_CONFIRMED}{b.current:.3f} s at first, {how} "
        f"{confirmed_s:.3f} s ({against}): not failed{cost}"
    )


def _named(b: Breach) -> tuple[str, str]:
    """What a compile-time breach is of, and what it went over."""
    where = "all functions" if b.function is None else b.function.name
    return where, f"{'limit' if b.against == 'limit' else 'baseline'} {b.reference:.3f} s"


# Where no program was compiled again (a test that only traced: diffrax's tests whose solve
# raises inside the trace; or none of its programs could be), nothing confirms the one
# sample: a breach within the band is left out of the verdict (code `unconfirmed`). The
# note is the same for every test, so the summary counts them on one line; the figures are
# in each test's line of `info`.
UNCONFIRMABLE_NOTE = (
    "compile time not gated: a breach that nothing could re-measure to confirm, within the "
    "band such breaches fail beyond"
)


def gross(b: Breach, tol: Tolerances) -> bool:
    """Whether a baseline breach is beyond the band an unconfirmed one fails beyond."""
    return (
        b.current > b.reference * BAND * (1 + tol.compile_rtol)
        and b.current - b.reference > FLOORS * tol.compile_floor
    )


def band_words(tol: Tolerances) -> str:
    return (
        f"baseline x {BAND * (1 + tol.compile_rtol):g} and {FLOORS * tol.compile_floor:g} s "
        "above it"
    )


def _unconfirmable(
    verdict: Verdict, remeasured: Remeasured, new: bool, tol: Tolerances, why: str
) -> Verdict:
    """`verdict` with its gated compile-time breaches judged on their one sample: a marker
    limit's fails (the user's own number); a baseline breach fails beyond the band
    (`gross`), and is otherwise a line of `info` with the note that leaves compile time out
    of the verdict."""
    kept = []
    for b in verdict.breaches:
        if not (b.metric == COMPILE_TIME and b.gated):
            kept.append(b)
        elif b.against == "limit":
            kept.append(dataclasses.replace(b, detail=_join(
                b.detail, f"not confirmed: {why}; a marker limit fails on its one sample"
            )))  # fmt: skip
        elif gross(b, tol):
            kept.append(dataclasses.replace(b, detail=_join(
                b.detail, f"not confirmed: {why}; beyond the band unconfirmed breaches fail "
                f"beyond ({band_words(tol)})"
            )))  # fmt: skip
        else:
            verdict.info.append(_unconfirmable_line(b, why, tol))
    if len(kept) < len(verdict.breaches):
        verdict.notes.append(Note(UNCONFIRMABLE_NOTE, "unconfirmed"))
    verdict.breaches = kept
    verdict.status = verdict_status(verdict, new)
    _say_left_out(verdict, remeasured)
    return verdict


def _unconfirmable_line(b: Breach, why: str, tol: Tolerances) -> str:
    where, against = _named(b)
    return (
        f"compile time of {where}{NOT_CONFIRMED}{b.current:.3f} s ({against}): {why}; within "
        f"the band unconfirmed breaches fail beyond ({band_words(tol)}): not failed"
    )


def _nothing(remeasured: Remeasured) -> bool:
    return not remeasured.repeats or not remeasured.functions


def _how(remeasured: Remeasured) -> str:
    n = remeasured.repeats
    return f"fastest of {n} recompile{'s' if n != 1 else ''} (trace as recorded)"


def _cost(remeasured: Remeasured) -> str:
    return f"; confirming took {remeasured.seconds:.2f} s"


def _key(b: Breach) -> tuple[str, str | None, float]:
    return (b.against, None if b.function is None else b.function.key, b.reference)


def _join(detail: str, more: str) -> str:
    return f"{detail}; {more}" if detail else more
