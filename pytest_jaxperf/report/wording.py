"""The words every report uses (terminal, markdown, HTML, `jaxperf compare` and `jaxperf ab`):
values in their units, a breach and its causes, a gone function, a benchmark's line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..causes import label_name
from ..compare import (
    COMPILE_TIME,
    INSTRUCTIONS,
    JIT,
    PHASE_INSTRUCTIONS,
    RUNTIME,
    Breach,
    Verdict,
)
from ..diagnose import DIAGNOSIS, is_diagnosis
from ..environment import timing_differences, under_xdist
from ..model import (
    SIZE_WORDS,
    STATIC_METRICS,
    BenchmarkEntry,
    Counts,
    Entry,
    FunctionRecord,
    RecordedTest,
    RunRecord,
    ScalingEntry,
)
from ..notgated import code_of
from ..storage.store import BaselineError

# The compile clock's breaches: instructions, to one decimal of a percent, like INSTRUCTIONS.
_PHASE_METRICS = frozenset(PHASE_INSTRUCTIONS.values())


def plural(n: int, word: str) -> str:
    """'1 regression', '2 regressions'."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def value_text(metric: str, value: float) -> str:
    if metric == COMPILE_TIME:
        return f"{value:.3f} s"
    if metric == RUNTIME:
        return f"{value * 1e6:.1f} us" if value < 1e-3 else f"{value * 1e3:.3f} ms"
    if metric == INSTRUCTIONS or metric in _PHASE_METRICS:
        return instructions(value)
    if value == int(value) and abs(value) < 1e15:  # a count or a size: every digit, grouped
        return f"{value:,.0f}"
    return f"{value:,g}" if metric in _SIZES else f"{value:g}"


# The metrics in the gating page's words (docs/gating.md): a benchmark's program metrics
# are recorded under their field names ('bytes_accessed'), the functions' under these.
METRIC_WORDS = {**SIZE_WORDS, **{m: m.replace("_", " ") for m in STATIC_METRICS[2:]}}


def metric_words(metric: str) -> str:
    """'jaxpr_eqns' -> 'jaxpr equations', 'temp_bytes' -> 'temp bytes'; others as they are."""
    return METRIC_WORDS.get(metric, metric)


def percent_or_ratio(now: float, before: float, digits: int = 0) -> str:
    """'+300%', '-30%'; past +1000%, a ratio: 'x44', 'x3,400' (not '+339900%')."""
    ratio = now / before
    if ratio > 11:
        return f"x{ratio:,.0f}"
    return f"{(ratio - 1) * 100:+.{digits}f}%"


# The order a failure lists its metrics in, the most telling first: the runtime (what the
# user feels) and a lost jit, then counts (exact: each retrace is a compile), then program
# sizes (deterministic), then compile seconds (a clock).
_RANKS = {RUNTIME: 0, INSTRUCTIONS: 0, JIT: 0, "traces": 1, "compiles": 1, "lowerings": 1}


# Sizes in the gating page's order: the program's equations and ops, then XLA's analyses.
_SIZE_ORDER = [*SIZE_WORDS.values(), *(METRIC_WORDS[m] for m in STATIC_METRICS[2:])]


def _rank(b: Breach) -> tuple[int, int]:
    if b.metric in _RANKS:
        return _RANKS[b.metric], 0
    if b.metric == COMPILE_TIME:
        return 3, 0
    words = metric_words(b.metric)
    return 2, _SIZE_ORDER.index(words) if words in _SIZE_ORDER else len(_SIZE_ORDER)


def ordered(breaches: Sequence[Breach]) -> list[Breach]:
    """`breaches` the most telling first (see _RANKS); a benchmark's size whose function
    breached the same size by the same numbers is left out (one line per metric: the
    function's: the benchmark's label is its name)."""
    out = []
    for b in sorted(breaches, key=_rank):
        if b.benchmark is not None and any(_same_metric(b, o) for o in breaches):
            continue
        out.append(b)
    return out


def _same_metric(bench: Breach, fn: Breach) -> bool:
    return (
        fn.function is not None
        and fn.benchmark is None
        and metric_words(fn.metric) == metric_words(bench.metric)
        and (fn.reference, fn.current, fn.against, fn.gated)
        == (bench.reference, bench.current, bench.against, bench.gated)
        and fn.function.name.rsplit(".", 1)[-1] == bench.benchmark
    )


def failure_lines(breaches: Sequence[Breach]) -> list[str]:
    """The breaches' lines in `ordered` order, each cause once (a retrace's cause breaches
    its function's traces and compiles alike: said under the first)."""
    lines: list[str] = []
    said: set[str] = set()
    for b in ordered(breaches):
        head, *reasons = breach_lines(b)
        lines.append(head)
        # A test total's causes are labelled with their function's name, one function's are
        # not: the same cause either way.
        label = f"{label_name(b.function.name)}: " if b.function is not None else ""
        for line in reasons:
            key = line.replace("cause: ", "cause: " + label, 1)
            if key not in said:
                said.add(key)
                lines.append(line)
    return lines


def instructions(value: float) -> str:
    """An instruction count, four significant digits: '6.929 M'."""
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {unit}"
    return f"{value:.0f}"


_SIZES = frozenset(SIZE_WORDS.values())
# The program-size column of the tables: the lowered programs' sizes (a test that only
# traced shows its traced equations there instead, see `program_size`).
_LOWERED_SIZES = ("jaxpr_eqns", "hlo_ops", "xla_ops")
SIZE_HEADER = " / ".join(SIZE_WORDS[name] for name in _LOWERED_SIZES)


def cpu_seconds(counts: Counts) -> str:
    """Process CPU seconds of trace + lower + compile, or '-' where not measured."""
    cpu = counts.total_cpu_s
    return "-" if cpu is None else f"{cpu:.3f}"


def program_size(counts: Counts) -> str:
    """'jaxpr equations / StableHLO ops / optimized HLO ops', '-' for one not measured; where
    nothing was lowered but something traced (eval_shape, make_jaxpr), '1,234 traced' (the
    traced jaxpr equations, gated in their place)."""
    if not counts.lowerings and counts.trace_eqns:
        return f"{counts.trace_eqns:,} traced"
    return " / ".join(
        "-" if (v := getattr(counts, name)) is None else f"{v:,}" for name in _LOWERED_SIZES
    )


def change_text(b: Breach) -> str:
    if b.against == "limit":
        return f"limit {value_text(b.metric, b.reference)}"
    diff = b.current - b.reference
    # Gated within a few percent: one decimal.
    if (b.metric == INSTRUCTIONS or b.metric in _PHASE_METRICS) and b.reference:
        return percent_or_ratio(b.current, b.reference, digits=1)
    sign = "+" if diff >= 0 else "-"
    amount = sign + value_text(b.metric, abs(diff))
    if b.reference:
        amount += f", {percent_or_ratio(b.current, b.reference)}"
    return amount


def breach_lines(b: Breach) -> list[str]:
    if b.benchmark is not None:
        where = f"benchmark {b.benchmark!r}"
    elif b.function is not None:
        where = b.function.name
        where += f" (defined at {b.function.site})" if b.function.site else ""
    else:
        where = "all functions"
    head = f"{metric_words(b.metric)} of {where}: "
    if b.metric == JIT:
        head = (
            f"{where}: the function it times is no longer jitted (jaxperf.benchmark wraps it in "
            "jax.jit itself, so its runtime hides the op-by-op cost the code now pays)"
        )
    elif b.against == "limit":
        head += f"{value_text(b.metric, b.current)} > limit {value_text(b.metric, b.reference)}"
    else:
        before, now = value_text(b.metric, b.reference), value_text(b.metric, b.current)
        head += f"baseline {before} -> now {now} ({change_text(b)})"
    if b.detail:
        head += f" [{b.detail}]"
    if not b.gated:
        head += " [reported only]"
    # A compile-time breach's reasons are the functions whose seconds grew, besides any
    # pattern `diagnose` named: that one is its cause.
    growth = b.metric == COMPILE_TIME
    sources = [f"    from {line}" for line in b.where]
    return [head, *sources] + [
        f"    {'grew' if growth and not is_diagnosis(r) else 'cause'}: {r}" for r in b.reasons
    ]


def failing_lines(verdict: Verdict) -> list[str]:
    """A failed test's findings for the markdown and HTML reports: bad marker limits, gated
    breaches with their causes, gone functions and notes."""
    lines = list(verdict.errors) + [f"not gated: {line}" for line in verdict.strict]
    lines += failure_lines([b for b in verdict.breaches if b.gated])
    lines += [gone_line(fn) for fn in verdict.gone]
    return lines + [f"note: {n}" for n in verdict.notes]


def diagnosis_lines(verdict: Verdict, nodeid: str) -> list[str]:
    """'diagnosis: <test>: eager op-by-op compile storm: ...': what `diagnose` found of the
    test as a whole, for a test that passed (a failed one says it in its explanation)."""
    return [
        f"{DIAGNOSIS}{nodeid}: {line.removeprefix(DIAGNOSIS)}"
        for line in verdict.info
        if line.startswith(DIAGNOSIS)
    ]


def gone_line(fn: FunctionRecord, nodeid: str | None = None, baseline: str = "baseline") -> str:
    """A baseline function the test no longer traced, and what that likely means (worded
    like the terminal's "reported only: <test>: ..." lines when the test is named; `jaxperf
    ab` calls its baseline "base")."""
    test = f"{nodeid}: " if nodeid else ""
    return (
        f"function gone: {test}{fn.key} no longer traced ({baseline}: traces {fn.traces}, "
        f"compiles {fn.compiles}); if the test still calls it, it is no longer jitted and "
        "runs op by op"
    )


def benchmark_line(label: str, entry: Entry) -> str:
    """One line per jaxperf.benchmark or jaxperf.scaling result."""
    if isinstance(entry, ScalingEntry):
        points = ", ".join(f"{n}: {v:g}" for n, v in zip(entry.sizes, entry.values))
        return f"{label}: {entry.metric} grows with exponent {entry.exponent:.2f} ({points})"
    parts = [f"benchmark {label!r}:"]
    if entry.first_call_s is not None:
        parts.append(f"first call {entry.first_call_s:.3f} s")
    rt = entry.runtime
    if rt is not None:
        parts.append(
            f"runtime median {value_text(RUNTIME, rt.median_s)} "
            f"(min {value_text(RUNTIME, rt.min_s)}, IQR {runtime_text(rt.iqr_s)}, "
            f"{rt.rounds if rt.rounds is not None else '-'} rounds x "
            f"{rt.iterations if rt.iterations is not None else '-'})"
        )
        if rt.cpu_median_s is not None:
            parts.append(f"cpu {value_text(RUNTIME, rt.cpu_median_s)} per call")
    if entry.instructions is not None:
        parts.append(f"{instructions(entry.instructions)} instructions per call")
    if entry.device_peak_bytes is not None:
        parts.append(f"device peak {byte_size(entry.device_peak_bytes)}")
    parts += [f"{k}={v:g}" for k in STATIC_METRICS if (v := entry.program_metric(k)) is not None]
    if entry.eager_median_s is not None:
        parts.append(f"eager median {value_text(RUNTIME, entry.eager_median_s)}")
        even = entry.break_even_calls
        parts.append(f"break-even after {even:.0f} calls" if even is not None
                     else "jit never pays off")  # fmt: skip
    return " ".join(parts)


def byte_size(value: int) -> str:
    """A byte count in binary units, one decimal: '64.0 MiB'."""
    for scale, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value} B"


def wall_seconds(c: Counts, sep: str = "/") -> str:
    """Wall compile seconds and their split, `0.123 (0.001/0.020/0.102)`; "-" where not
    stored (a baseline's entry of a test gated on CPU seconds: the run file has them)."""
    if c.total_s is None:
        return "-"
    return f"{c.total_s:.3f} ({c.trace_s:.3f}{sep}{c.lower_s:.3f}{sep}{c.compile_s:.3f})"


def runtime_text(value: float | None) -> str:
    """value_text of a runtime statistic; "-" where a baseline left it out."""
    return "-" if value is None else value_text(RUNTIME, value)


def seconds(value: float) -> str:
    """A duration in the unit that keeps three significant digits readable."""
    magnitude = abs(value)
    if magnitude >= 1 or magnitude == 0:
        return f"{value:.3f} s"
    if magnitude >= 1e-3:
        return f"{value * 1e3:.3g} ms"
    if magnitude >= 1e-6:
        return f"{value * 1e6:.3g} µs"
    return f"{value * 1e9:.3g} ns"


@dataclass(frozen=True)
class BenchmarkRow:
    """One `jaxperf.benchmark` result as the terminal and the markdown list it: how fast it
    is (median, spread, rounds) and how it compares with the baseline."""

    name: str  # "<nodeid>::<label>"
    median: str
    iqr: str
    min: str
    rounds: str
    versus: str  # the change and the gate's word on it, or why it was not gated


def benchmark_rows(
    records: Mapping[str, RecordedTest],
    verdicts: Mapping[str, Verdict],
    baseline: RunRecord | None = None,
    environment: Mapping[str, Any] | None = None,
) -> list[BenchmarkRow]:
    """Every benchmark of the run, sorted by test and label. `baseline` gives the medians the
    change is computed from; `environment` (the run's) tells a change the gate could not see
    (the timing environment differs) from one within its tolerance."""
    rows = []
    for nodeid in sorted(records):
        entries = records[nodeid].benchmark_entries()
        if not entries:
            continue
        base = _baseline_entry(baseline, nodeid)
        old = dict(base.benchmark_entries()) if base is not None else {}
        differences: list[str] = []
        if base is not None and baseline is not None and environment is not None:
            differences = timing_differences(baseline.environment_of(nodeid), environment)
            if under_xdist(environment):
                differences.append("under pytest-xdist")
        for label, entry in entries:
            rt = entry.runtime
            if rt is None and entry.instructions is None:
                continue
            if rt is not None:
                median, iqr = value_text(RUNTIME, rt.median_s), runtime_text(rt.iqr_s)
                low = value_text(RUNTIME, rt.min_s)
                rounds = "-" if rt.rounds is None else str(rt.rounds)
            else:  # instructions per call: exact, one count, no spread
                median, iqr, low, rounds = (
                    f"{instructions(entry.instructions or 0)} instr",
                    "-",
                    "-",
                    "1",
                )
            verdict = verdicts.get(nodeid)
            if baseline is None and (verdict is None or verdict.status != "new"):
                versus = "-"  # no baseline given to compute the change from
            else:
                versus = _benchmark_versus(label, entry, old.get(label), verdict, differences)
            rows.append(BenchmarkRow(f"{nodeid}::{label}", median, iqr, low, rounds, versus))
    return rows


def _baseline_entry(baseline: RunRecord | None, nodeid: str) -> RecordedTest | None:
    if baseline is None:
        return None
    try:
        return baseline.tests.get(nodeid)
    except BaselineError:  # a broken entry failed its test already; the report goes on
        return None


def _benchmark_versus(
    label: str,
    entry: BenchmarkEntry,
    old: BenchmarkEntry | None,
    verdict: Verdict | None,
    differences: Sequence[str],
) -> str:
    """'+3% ok', '+41% REGRESSED', '-30% improved', '+60% not gated: machine load', 'new':
    the verdict's word where it has one (a breach, an improvement, a note naming the
    benchmark), so that "improved" appears only where the gate says so."""
    if old is None:
        return "new"
    if entry.runtime is not None and old.runtime is not None and old.runtime.median_s:
        metric, change = RUNTIME, entry.runtime.median_s / old.runtime.median_s - 1
    elif entry.instructions is not None and old.instructions:
        metric, change = INSTRUCTIONS, entry.instructions / old.instructions - 1
    else:
        return "not gated: the baseline has no value for this clock"
    now, before = (change + 1, 1.0)
    shown = percent_or_ratio(now, before, digits=1 if metric == INSTRUCTIONS else 0)
    if verdict is None:
        return shown
    for b in verdict.breaches:
        if b.benchmark == label and b.metric == metric:
            return f"{shown} REGRESSED" if b.gated else f"{shown} reported only"
    if any(i.startswith(f"{metric} of {label}:") for i in verdict.improvements):
        return f"{shown} improved"
    ours = f"{metric} of {label} " if metric == RUNTIME else "instructions per call not gated"
    for note in verdict.notes:
        if note.startswith(ours) or (metric == RUNTIME and note.startswith("runtime not gated")):
            code = code_of(note)
            return f"{shown} not gated: {code.replace('_', ' ') if code else note}"
    if differences:
        return f"{shown} not gated: environment differs ({', '.join(differences)})"
    return f"{shown} ok"
