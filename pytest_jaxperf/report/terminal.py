"""The terminal: a failing test's explanation, its record as a report section, the summary
table and the colours of each status (the words themselves are `wording`'s)."""

from __future__ import annotations

from collections.abc import Mapping

from ..compare import COMPILE_TIME, JIT, SIZE_WORDS, Verdict
from ..model import RecordedTest
from .summary import status_of
from .wording import (
    benchmark_line,
    breach_lines,
    change_text,
    cpu_seconds,
    gone_line,
    program_size,
)


def failure_text(nodeid: str, verdict: Verdict, baseline_path: str) -> str:
    """Why the plugin failed a test: each bad marker limit on a line of its own, then the
    metrics over the baseline or a limit with their causes."""
    failing = [b for b in verdict.breaches if b.gated]
    lines = [f"jaxperf: {nodeid}: {error}" for error in verdict.errors]
    lines += [f"jaxperf: {nodeid}: not gated: {line}" for line in verdict.strict]
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


def _vs_baseline(verdict: Verdict) -> str:
    parts: dict[str, str] = {}
    for b in verdict.breaches:
        if b.against == "limit":
            parts.setdefault(f"{b.metric} > limit", "")
        elif b.metric == JIT:
            parts[b.metric] = "no longer jitted"
        elif b.metric == COMPILE_TIME or b.function is None:
            parts[b.metric] = f"{b.metric} {change_text(b)}"
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
    "NOT GATED": _FAILS,
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
