"""Human-readable output: a failing test's explanation, the summary table and the tally."""

from __future__ import annotations

from collections.abc import Mapping

from ..compare import COMPILE_TIME, INSTRUCTIONS, JIT, RUNTIME, SIZE_WORDS, Breach, Verdict
from ..model import STATIC_METRICS, Counts, Entry, FunctionRecord, RecordedTest, ScalingEntry
from .summary import RunSummary, status_of


def _fmt(metric: str, value: float) -> str:
    if metric == COMPILE_TIME:
        return f"{value:.3f} s"
    if metric == RUNTIME:
        return f"{value * 1e6:.1f} us" if value < 1e-3 else f"{value * 1e3:.3f} ms"
    if metric in _SIZES:
        return f"{value:,g}"
    if metric == INSTRUCTIONS:
        return instructions(value)
    return f"{value:g}"


def instructions(value: float) -> str:
    """An instruction count, four significant digits: '6.929 M'."""
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {unit}"
    return f"{value:.0f}"


_SIZES = frozenset(SIZE_WORDS.values())
# The program-size column of the markdown and HTML tables.
SIZE_HEADER = " / ".join(SIZE_WORDS.values())


def cpu_seconds(counts: Counts) -> str:
    """Process CPU seconds of trace + lower + compile, or '-' where not measured."""
    cpu = counts.total_cpu_s
    return "-" if cpu is None else f"{cpu:.3f}"


def program_size(counts: Counts) -> str:
    """'jaxpr equations / StableHLO ops / optimized HLO ops', '-' for one not measured."""
    return " / ".join(
        "-" if (v := getattr(counts, name)) is None else f"{v:,}" for name in SIZE_WORDS
    )


def _change(b: Breach) -> str:
    if b.against == "limit":
        return f"limit {_fmt(b.metric, b.reference)}"
    diff = b.current - b.reference
    if b.metric == INSTRUCTIONS and b.reference:  # gated within a few percent: one decimal
        return f"{diff / b.reference * 100:+.1f}%"
    sign = "+" if diff >= 0 else "-"
    amount = sign + _fmt(b.metric, abs(diff))
    if b.reference:
        amount += f", {diff / b.reference * 100:+.0f}%"
    return amount


def breach_lines(b: Breach) -> list[str]:
    if b.benchmark is not None:
        where = f"benchmark {b.benchmark!r}"
    elif b.function is not None:
        where = b.function.name
        where += f" (defined at {b.function.site})" if b.function.site else ""
    else:
        where = "all functions"
    head = f"{b.metric} of {where}: "
    if b.metric == JIT:
        head = (
            f"{where}: the function it times is no longer jitted (jaxperf.benchmark wraps it in "
            "jax.jit itself, so its runtime hides the op-by-op cost the code now pays)"
        )
    elif b.against == "limit":
        head += f"{_fmt(b.metric, b.current)} > limit {_fmt(b.metric, b.reference)}"
    else:
        before, now = _fmt(b.metric, b.reference), _fmt(b.metric, b.current)
        head += f"baseline {before} -> now {now} ({_change(b)})"
    if b.detail:
        head += f" [{b.detail}]"
    if not b.gated:
        head += " [reported only]"
    label = "grew" if b.metric == COMPILE_TIME else "cause"
    return [head] + [f"    {label}: {r}" for r in b.reasons]


def failure_text(nodeid: str, verdict: Verdict, baseline_path: str) -> str:
    """Why the plugin failed a test: each bad marker limit on a line of its own, then the
    metrics over the baseline or a limit with their causes."""
    failing = [b for b in verdict.breaches if b.gated]
    lines = [f"jaxperf: {nodeid}: {error}" for error in verdict.errors]
    if failing or not lines:
        lines.append(f"jaxperf: {nodeid}: {len(failing)} metric(s) over the baseline or a limit")
    for b in failing:
        lines += ["  " + line for line in breach_lines(b)]
    lines += ["  " + gone_line(fn) for fn in verdict.gone]
    lines += [f"  note: {n}" for n in verdict.notes + verdict.info]
    if any(b.against == "baseline" for b in failing):
        lines.append(
            f"  baseline: {baseline_path} (if the change is intended, update it with "
            "--jaxperf-save)"
        )
    return "\n".join(lines)


def failing_lines(verdict: Verdict) -> list[str]:
    """A failed test's findings for the markdown and HTML reports: bad marker limits, gated
    breaches with their causes, gone functions and notes."""
    lines = list(verdict.errors)
    lines += [line for b in verdict.breaches if b.gated for line in breach_lines(b)]
    lines += [gone_line(fn) for fn in verdict.gone]
    return lines + [f"note: {n}" for n in verdict.notes]


def gone_line(fn: FunctionRecord, nodeid: str | None = None) -> str:
    """A baseline function the test no longer traced, and what that likely means (worded
    like the terminal's "reported only: <test>: ..." lines when the test is named)."""
    test = f"{nodeid}: " if nodeid else ""
    return (
        f"function gone: {test}{fn.key} no longer traced (baseline: traces {fn.traces}, "
        f"compiles {fn.compiles}); if the test still calls it, it is no longer jitted and "
        "runs op by op"
    )


def detail_section(record: RecordedTest, verdict: Verdict) -> str:
    """The per-function record of one test, shown as a report section."""
    lines = []
    for fn in sorted(record.functions.values(), key=lambda f: f.key):
        lines.append(
            f"{fn.key}: traces={fn.traces} lowerings={fn.lowerings} "
            f"compiles={fn.compiles} cache_hits={fn.cache_hits} "
            f"trace={fn.trace_s:.3f}s lower={fn.lower_s:.3f}s compile={fn.compile_s:.3f}s "
            f"cpu={cpu_seconds(fn)}s "
            + " ".join(f"{name}={_size(getattr(fn, name))}" for name in SIZE_WORDS)
        )
        lines += [f"    retrace: {r}" for r in fn.retrace_reasons]
    e = record.eager
    lines.append(
        f"eager (JAX helpers, not gated): lowerings={e.lowerings} compiles={e.compiles} "
        f"compile={e.compile_s:.3f}s"
    )
    for label, bench in sorted(record.benchmarks.items()):
        lines.append(benchmark_line(label, bench))
    lines += [gone_line(fn) for fn in verdict.gone]
    lines += [f"improved: {i}" for i in verdict.improvements]
    lines += [f"note: {n}" for n in verdict.notes + verdict.info]
    return "\n".join(lines)


def _size(value: int | None) -> str:
    return "-" if value is None else str(value)


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
            f"runtime median {_fmt(RUNTIME, rt.median_s)} (min {_fmt(RUNTIME, rt.min_s)}, "
            f"IQR {_fmt(RUNTIME, rt.iqr_s)}, {rt.rounds} rounds x {rt.iterations})"
        )
        if rt.cpu_median_s is not None:
            parts.append(f"cpu {_fmt(RUNTIME, rt.cpu_median_s)} per call")
    if entry.instructions is not None:
        parts.append(f"{instructions(entry.instructions)} instructions per call")
    parts += [f"{k}={v:g}" for k in STATIC_METRICS if (v := entry.program_metric(k)) is not None]
    if entry.eager_median_s is not None:
        parts.append(f"eager median {_fmt(RUNTIME, entry.eager_median_s)}")
        even = entry.break_even_calls
        parts.append(f"break-even after {even:.0f} calls" if even is not None
                     else "jit never pays off")  # fmt: skip
    return " ".join(parts)


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


def _vs_baseline(verdict: Verdict) -> str:
    parts: dict[str, str] = {}
    for b in verdict.breaches:
        if b.against == "limit":
            parts.setdefault(f"{b.metric} > limit", "")
        elif b.metric == JIT:
            parts[b.metric] = "no longer jitted"
        elif b.metric == COMPILE_TIME or b.function is None:
            parts[b.metric] = f"{b.metric} {_change(b)}"
        else:
            grown = sum(
                x.current - x.reference
                for x in verdict.breaches
                if x.metric == b.metric and x.function is not None and x.against == "baseline"
            )
            parts.setdefault(b.metric, f"{b.metric} +{grown:g}")
    text = "; ".join(value or key for key, value in parts.items())
    if not text and verdict.gone:
        text = "gone: " + ", ".join(fn.name for fn in verdict.gone)
    if not text and verdict.improvements:
        text = "improved"
    return text or ("new" if verdict.status == "new" else "=")


def summary_lines(
    records: Mapping[str, RecordedTest], verdicts: Mapping[str, Verdict]
) -> list[str]:
    """The summary table, a header and one line per test."""
    return [line for line, _ in summary_rows(records, verdicts)]


def summary_rows(
    records: Mapping[str, RecordedTest], verdicts: Mapping[str, Verdict]
) -> list[tuple[str, str]]:
    """The summary table's lines, each with its test's status ("" for the header)."""
    header = (
        "test",
        "traces",
        "compiles",
        "compile s (trace/lower/backend)",
        "cpu s",
        "eqns / hlo / xla ops",
        "vs baseline",
        "status",
    )
    rows = [header]
    statuses = [""]
    for nodeid in sorted(records):
        rec, out = records[nodeid], verdicts.get(nodeid)
        status = status_of(rec, out)
        statuses.append(status)
        rows.append(
            (
                nodeid,
                str(rec.traces),
                str(rec.compiles),
                f"{rec.total_s:.3f} ({rec.trace_s:.3f}/{rec.lower_s:.3f}/{rec.compile_s:.3f})",
                cpu_seconds(rec),
                program_size(rec),
                _vs_baseline(out) if out is not None else "-",
                status,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    right = {1, 2, 5}
    lines = [
        "  ".join(
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))
        ).rstrip()
        for row in rows
    ]
    return list(zip(lines, statuses))


# How the terminal marks each status, as pytest colours its own outcomes (red for what
# fails, yellow for what needs a look, green for the better); other statuses stay plain.
_FAILS = {"red": True, "bold": True}
STATUS_MARKUP: dict[str, dict[str, bool]] = {
    "REGRESSED": _FAILS,
    "OVER LIMIT": _FAILS,
    "BAD LIMIT": _FAILS,
    "reported only": {"yellow": True},
    "function gone": {"yellow": True},
    "improved": {"green": True},
    "unclear": {"yellow": True},  # jaxperf ab: above the threshold, the interval not all
}


def markup(status: str) -> dict[str, bool]:
    """TerminalWriter markup for a line of this status (status_of's wording); {} for plain.
    pytest's --color decides whether it shows."""
    return STATUS_MARKUP.get(status.removesuffix(" (not gated)"), {})


def tally_markup(regressed: bool) -> dict[str, bool]:
    """The tally line red when a test regressed, else green, as pytest's last line."""
    return _FAILS if regressed else {"green": True}


def tally(verdicts: Mapping[str, Verdict]) -> str:
    return RunSummary.of(verdicts).tally()


def junit_properties(record: RecordedTest, verdict: Verdict) -> list[tuple[str, object]]:
    """Key metrics as JUnit XML properties, for CI systems that display them."""
    props: list[tuple[str, object]] = [
        ("jaxperf_status", verdict.status),
        ("jaxperf_traces", record.traces),
        ("jaxperf_compiles", record.compiles),
        ("jaxperf_compile_s", round(record.total_s, 6)),
    ]
    if record.total_cpu_s is not None:
        props.append(("jaxperf_compile_cpu_s", round(record.total_cpu_s, 6)))
    for label, entry in record.benchmark_entries():
        if entry.runtime is not None:
            props.append((f"jaxperf_runtime_median_s[{label}]", entry.runtime.median_s))
        if entry.metrics is not None:
            props.append((f"jaxperf_jaxpr_eqns[{label}]", entry.metrics.jaxpr_eqns))
    return props
