"""Confirm before failing: a compile-time breach is one sample of a noisy figure, so the test
fails only if its programs, lowered and compiled again in isolation, still breach (pure:
the re-measuring is `measure.recompile`'s, the judging `compare.evaluate`'s).

The session asks `needed(verdict)`; only then are the test's kept programs lowered and
compiled again, fastest of `repeats`; `judge` puts each function's fastest lower and
backend seconds (never more than first recorded) into a copy of the record and has
`compare.evaluate` judge it again. A breach that holds is marked "confirmed" with the
repeat count; one that does not becomes a one-line note and the test passes. Where no
program could be compiled again, nothing can confirm the breach: it is left out of the
verdict, which says so ("not gated"). A clean run pays nothing; a real regression pays its
lowerings and compiles `repeats` times at most.

Trace seconds are kept as recorded: the user's Python cannot be run again without the
test's arguments (the collector's share of them is already out, see `measure.gctime`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .compare import COMPILE_TIME, Breach, Verdict, compile_seconds, verdict_status
from .config import Clock
from .model import FunctionRecord, RecordedTest

# How many times a breaching test's programs are lowered and compiled again.
REPEATS = 3
# The phases re-measured: (wall field, CPU field).
_PHASES = (("lower_s", "lower_cpu_s"), ("compile_s", "compile_cpu_s"))


@dataclass(frozen=True)
class Phases:
    """One function's lower and backend-compile seconds (wall and process CPU)."""

    lower_s: float = 0.0
    compile_s: float = 0.0
    lower_cpu_s: float | None = 0.0
    compile_cpu_s: float | None = 0.0


@dataclass(frozen=True)
class Remeasured:
    """What confirming a test measured: each re-measured function's fastest phases over
    the repeats, by function key; the repeats done; the seconds the confirmation took; and
    the functions that could not be re-measured, with why (they keep their first figures)."""

    functions: Mapping[str, Phases]
    repeats: int
    seconds: float
    left_out: Mapping[str, str] = field(default_factory=dict)


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
    """A copy of `record` whose re-measured functions carry their fastest lower and backend
    seconds, never more than first recorded (a recompile slower than the first is load)."""
    functions: dict[str, FunctionRecord] = {}
    for key, fn in record.functions.items():
        again = remeasured.functions.get(key)
        copy = dataclasses.replace(fn, retrace_reasons=list(fn.retrace_reasons))
        if again is not None:
            for wall, cpu in _PHASES:
                setattr(copy, wall, min(getattr(fn, wall), getattr(again, wall)))
                first, now = getattr(fn, cpu), getattr(again, cpu)
                setattr(copy, cpu, None if first is None or now is None else min(first, now))
        functions[key] = copy
    out = dataclasses.replace(record, functions=functions, benchmarks=dict(record.benchmarks))
    out.recompute_totals()
    return out


def judge(
    verdict: Verdict,
    record: RecordedTest,
    remeasured: Remeasured,
    evaluate: Callable[[RecordedTest], Verdict],
    clock: Clock = "cpu",
    new: bool = False,
) -> Verdict:
    """The verdict on the confirmed figures (`evaluate` judges a record as the first
    verdict was judged; `clock` is the compile clock it gated on; `new`: the test has no
    baseline entry): compile-time breaches that still hold say they were confirmed and how;
    each that does not is one line of `info`, and no longer fails the test. Where nothing
    was compiled again, the breaches are left out of the verdict (see `_unconfirmable`)."""
    confirmed = confirmed_record(record, remeasured)
    again = evaluate(confirmed)
    if _nothing(remeasured):
        return _unconfirmable(again, remeasured, new)
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
    held = {_key(b) for b in again.breaches if b.metric == COMPILE_TIME}
    for key, b in first.items():
        if key not in held:
            on = "wall" if b.detail.startswith("wall") else clock
            target = (
                confirmed
                if b.function is None
                else confirmed.functions.get(b.function.key, confirmed)
            )
            again.info.append(
                not_confirmed_line(b, compile_seconds(target, on), how, _cost(remeasured))
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
# sample, and a breach fails only once confirmed. Such trace seconds read 0.17-0.44 s in
# fresh processes of one quiet VM, against 0.170-0.187 s saved: failing on them failed one
# gate of unchanged code in ten. The note is the same for every test, so the summary
# counts them on one line; the figures are in each test's line of `info`.
UNCONFIRMABLE_NOTE = (
    "compile time not gated: a breach that no program could be compiled again to confirm "
    "(trace seconds cannot be re-measured)"
)


def _unconfirmable(verdict: Verdict, remeasured: Remeasured, new: bool) -> Verdict:
    """`verdict` without its gated compile-time breaches, each a line of `info` with its
    figures, and the note that leaves compile time out of the verdict."""
    kept = []
    for b in verdict.breaches:
        if b.metric == COMPILE_TIME and b.gated:
            verdict.info.append(_unconfirmable_line(b))
        else:
            kept.append(b)
    if len(kept) < len(verdict.breaches):
        verdict.breaches = kept
        verdict.notes.append(UNCONFIRMABLE_NOTE)
        verdict.status = verdict_status(verdict, new)
    _say_left_out(verdict, remeasured)
    return verdict


def _unconfirmable_line(b: Breach) -> str:
    where, against = _named(b)
    return (
        f"compile time of {where}{NOT_CONFIRMED}{b.current:.3f} s ({against}), and no "
        "program could be compiled again to re-measure it (trace seconds cannot be): not failed"
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
