"""The terminal: a failing test's explanation, its record as a report section, the summary
table and the colours of each status (the words themselves are `wording`'s)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..compare import COMPILE_TIME, JIT, Verdict, compile_seconds
from ..config import Clock, Tolerances
from ..confirmation import NOT_CONFIRMED
from ..model import SIZE_WORDS, RecordedTest, RunRecord, short_name
from ..storage.store import BaselineError
from . import wording
from .summary import RunSummary, not_gated_lines, status_of, upgrade_line
from .wording import (
    benchmark_line,
    change_text,
    cpu_seconds,
    failure_lines,
    gone_line,
    metric_words,
    ordered,
    program_size,
    wall_seconds,
)


def failure_text(nodeid: str, verdict: Verdict, baseline_path: str) -> str:
    """Why the plugin failed a test: each bad marker limit on a line of its own, then the
    metrics over the baseline or a limit with their causes."""
    failing = [b for b in verdict.breaches if b.gated]
    lines = [f"jaxperf: {nodeid}: {error}" for error in verdict.errors]
    lines += [f"jaxperf: {nodeid}: not gated: {line}" for line in verdict.strict]
    if failing or not lines:
        lines.append(
            f"jaxperf: {nodeid}: {len(ordered(failing))} metric(s) over the baseline or a limit"
        )
    lines += ["  " + line for line in failure_lines(failing)]
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
            + (
                f"trace={fn.trace_s:.3f}s lower={fn.lower_s:.3f}s compile={fn.compile_s:.3f}s "
                if fn.total_s is not None
                else "wall=- "  # a baseline's entry gated on CPU seconds: not stored
            )
            + f"cpu={cpu_seconds(fn)}s "
            + " ".join(f"{name}={_size(getattr(fn, name))}" for name in SIZE_WORDS)
        )
        lines += [f"    retrace: {r}" for r in fn.retrace_reasons]
    e = record.eager
    lines.append(
        f"eager (JAX helpers, not gated): lowerings={e.lowerings} compiles={e.compiles}"
        + ("" if e.compile_s is None else f" compile={e.compile_s:.3f}s")
    )
    for label, bench in sorted(record.benchmarks.items()):
        lines.append(benchmark_line(label, bench))
    lines += [gone_line(fn) for fn in verdict.gone]
    lines += [f"improved: {i}" for i in verdict.improvements]
    lines += [f"note: {n}" for n in verdict.notes + verdict.info]
    return "\n".join(lines)


def _size(value: int | None) -> str:
    return "-" if value is None else str(value)


# The widest the "vs baseline" cell grows: the changes past it are counted, not listed.
VS_BASELINE_WIDTH = 60
# The widest a test's name grows in the summary table (cut from the left, as a benchmark's:
# the test's own name is at the end), so that a row fits a wide terminal without wrapping.
TEST_NAME_WIDTH = 60
NOT_GATED = " (not gated)"


def _vs_baseline(
    verdict: Verdict,
    record: RecordedTest | None = None,
    base: RecordedTest | None = None,
    tol: Tolerances | None = None,
) -> str:
    """The test's changes against the baseline, the gated first, then those the verdict did
    not gate marked `(not gated)` (an unmarked `=` beside a 127-fold compile time that only
    an environment difference kept from failing would hide it), at most VS_BASELINE_WIDTH
    characters."""
    parts: dict[str, str] = {}
    ungated: dict[str, str] = {}
    for b in ordered(verdict.breaches):
        into = parts if b.gated or b.against == "limit" else ungated
        words = metric_words(b.metric)
        if b.against == "limit":
            into.setdefault(f"{words} > limit", "")
        elif b.metric == JIT:
            into[words] = "no longer jitted"
        elif b.metric == COMPILE_TIME or b.function is None:
            into.setdefault(words, f"{words} {change_text(b)}")
        else:
            grown = sum(
                x.current - x.reference
                for x in verdict.breaches
                if x.metric == b.metric and x.function is not None and x.against == "baseline"
            )
            into.setdefault(words, f"{words} +{grown:g}")
    if record is not None and base is not None:
        for metric, text in _left_out_changes(verdict, record, base, tol or Tolerances()):
            if metric not in parts and metric not in ungated:
                ungated[metric] = text
    shown = [value or key for key, value in parts.items()]
    if ungated:
        shown += [", ".join(ungated.values()) + NOT_GATED]
    text = _capped(shown)
    if not text and verdict.gone:
        text = "gone: " + ", ".join(fn.name for fn in verdict.gone)
    if not text and verdict.improvements:
        text = "improved"
    return text or ("new" if verdict.status == "new" else "=")


def _left_out_changes(
    verdict: Verdict, record: RecordedTest, base: RecordedTest, tol: Tolerances
) -> list[tuple[str, str]]:
    """(metric, change) for each metric the verdict left out (a note, or a compile-time
    breach not confirmed) whose value differs from the baseline entry's: counts first, as
    they are exact, then compile time where the gate would have seen a change with `tol`
    (the run's compile_rtol and floor: smaller moves are noise)."""
    out = []
    for metric in ("traces", "compiles"):
        now, before = getattr(record, metric), getattr(base, metric)
        if now != before and _noted(verdict, f"{metric} not measured"):
            out.append((metric, f"{metric} {before}->{now}"))
    # Left out for the machine or a breach not confirmed; not where compiles were not
    # measured (jit off: nothing compiled, and the counts above say so).
    compile_left_out = _noted(verdict, f"{COMPILE_TIME} not gated") or any(
        line.startswith(f"{COMPILE_TIME} of") and NOT_CONFIRMED in line for line in verdict.info
    )
    if compile_left_out:
        clock: Clock = "cpu" if None not in (record.total_cpu_s, base.total_cpu_s) else "wall"
        now_s, before_s = compile_seconds(record, clock), compile_seconds(base, clock)
        if now_s is None or before_s is None:  # wall seconds a baseline does not keep
            return out
        rtol, floor = tol.compile_rtol, tol.compile_floor
        grew = now_s > before_s * (1 + rtol) and now_s - before_s > floor
        shrank = now_s * (1 + rtol) < before_s and before_s - now_s > floor
        if grew or shrank:
            out.append((COMPILE_TIME, "compile " + _ratio(now_s, before_s)))
    return out


def _noted(verdict: Verdict, *starts: str) -> bool:
    return any(note.startswith(starts) for note in verdict.notes)


def _ratio(now: float, before: float) -> str:
    """x127, x6.5, x0.25; seconds where the baseline's were 0."""
    if before <= 0:
        return f"0->{now:.2f}s"
    r = now / before
    return f"x{r:.0f}" if r >= 10 else f"x{r:.2g}" if r < 1 else f"x{r:.1f}"


def _capped(parts: list[str], width: int = VS_BASELINE_WIDTH) -> str:
    """The parts joined, as many as fit in `width` with a count of the rest; the first
    (the most telling) always, cut short if it alone is too wide."""
    text = "; ".join(parts)
    if len(text) <= width:
        return text
    for n in range(len(parts) - 1, 0, -1):
        text = "; ".join(parts[:n]) + f"; +{len(parts) - n} more"
        if len(text) <= width:
            return text
    return parts[0][: width - 1] + "…"


def summary_lines(
    records: Mapping[str, RecordedTest],
    verdicts: Mapping[str, Verdict],
    baseline: Mapping[str, RecordedTest] | None = None,
    tolerances: Tolerances | None = None,
) -> list[str]:
    """The summary table, a header and one line per test."""
    return [line for line, _ in summary_rows(records, verdicts, baseline, tolerances)]


def summary_rows(
    records: Mapping[str, RecordedTest],
    verdicts: Mapping[str, Verdict],
    baseline: Mapping[str, RecordedTest] | None = None,
    tolerances: Tolerances | None = None,
) -> list[tuple[str, str]]:
    """The summary table's lines, each with its test's status ("" for the header).
    `baseline`, the entries the tests were compared with, shows the changes a verdict left
    out (compile time where `tolerances` see one); it is read only for tests whose verdict
    left something out."""
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
                _left_cut(nodeid, TEST_NAME_WIDTH),
                str(rec.traces),
                str(rec.compiles),
                wall_seconds(rec),
                cpu_seconds(rec),
                program_size(rec),
                "-"
                if out is None
                else _vs_baseline(out, rec, _entry(baseline, nodeid, out), tolerances),
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


def _entry(
    baseline: Mapping[str, RecordedTest] | None, nodeid: str, verdict: Verdict
) -> RecordedTest | None:
    """The test's baseline entry where its verdict left something out; a big baseline's
    entries are read lazily, and the rest of the table needs none of them."""
    if baseline is None or not (verdict.notes or verdict.info):
        return None
    try:
        return baseline.get(nodeid)
    except BaselineError:  # a broken entry failed its test already; the table goes on
        return None


# The widest a benchmark's name grows in its table (cut from the left: the label and the
# test's name are at the end).
BENCHMARK_NAME_WIDTH = 60


def benchmark_lines(rows: list[wording.BenchmarkRow]) -> list[str]:
    """The benchmarks under the summary table, as pytest-benchmark lists them: a header and
    one line per benchmark with its median, spread (IQR and the fastest round), rounds and
    change against the baseline; no lines where the run has no benchmark."""
    if not rows:
        return []
    table = [("benchmark", "median", "IQR", "min", "rounds", "vs baseline")] + [
        (_left_cut(r.name, BENCHMARK_NAME_WIDTH), r.median, r.iqr, r.min, r.rounds,
         _capped([r.versus]))
        for r in rows
    ]  # fmt: skip
    widths = [max(len(row[i]) for row in table) for i in range(6)]
    return [
        "  ".join(
            c.rjust(w) if 0 < i < 5 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))
        ).rstrip()
        for row in table
    ]


def _left_cut(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]


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


# A line of the plugin's summary and its TerminalWriter markup ({} for plain).
Line = tuple[str, dict[str, bool]]


@dataclass(frozen=True)
class RunEnd:
    """What the plugin's summary says after the verdicts: what the save did, the run's own
    findings (code, line) and which of their codes --jaxperf-strict fails, the session's
    notes and the files it could not write."""

    saved: str | None = None
    findings: Sequence[tuple[str, str]] = ()
    strict: frozenset[str] = frozenset()
    notes: Sequence[str] = ()
    write_errors: Sequence[str] = ()


def session_summary(
    records: Mapping[str, RecordedTest],
    verdicts: Mapping[str, Verdict],
    baseline: RunRecord | None,
    tolerances: Tolerances,
    environment: Mapping[str, Any],
    end: RunEnd,
) -> list[Line]:
    """The plugin's summary under its `jaxperf` heading: the table of tests, the benchmarks,
    what each verdict reported only or diagnosed, then the run's own lines."""
    entries = baseline.tests if baseline else None
    rows = summary_rows(records, verdicts, entries, tolerances)
    lines: list[Line] = [(line, markup(status)) for line, status in rows]
    benchmarks = wording.benchmark_rows(records, verdicts, baseline, environment)
    lines += [(line, {}) for line in benchmark_lines(benchmarks)]
    return lines + _verdict_lines(verdicts) + _run_lines(verdicts, end)


def _verdict_lines(verdicts: Mapping[str, Verdict]) -> list[Line]:
    """Per test, by name: breaches reported only, functions gone, and the diagnoses of a
    test that did not fail (a failed test's explanation says them already)."""
    lines: list[Line] = []
    for nodeid, out in sorted(verdicts.items()):
        for b in wording.ordered(out.breaches):
            if not b.gated:
                line = f"reported only: {nodeid}: {wording.breach_lines(b)[0]}"
                lines.append((line, markup("reported only")))
        for fn in out.gone:
            lines.append((wording.gone_line(fn, nodeid), markup("function gone")))
        if not out.failed:
            for line in wording.diagnosis_lines(out, nodeid):
                lines.append((line, markup("reported only")))
    return lines


def _run_lines(verdicts: Mapping[str, Verdict], end: RunEnd) -> list[Line]:
    """What was not gated and why, an upgrade's changes, the tally, then the save, the
    run's own findings, the notes and the files not written."""
    summary = RunSummary.of(verdicts)
    # Said, not only counted in the tally: a CPU model that differs from the baseline's
    # switches the compile-time gate off for every test.
    lines: list[Line] = [(line, {"yellow": True}) for line in not_gated_lines(summary.notes)]
    upgraded = upgrade_line(verdicts)
    if upgraded is not None:
        lines.append((upgraded, {"yellow": True}))
    lines.append((summary.tally(), tally_markup(bool(summary.regressed))))
    if end.saved is not None:
        lines.append((end.saved, {}))
    for code, line in end.findings:
        strict = code in end.strict
        lines.append((
            line + (" (failed by --jaxperf-strict)" if strict else ""),
            markup("REGRESSED" if strict else "reported only"),
        ))  # fmt: skip
    lines += [(f"pytest-jaxperf: {note}", {"yellow": True}) for note in end.notes]
    lines += [(f"pytest-jaxperf: {line}", {"red": True}) for line in end.write_errors]
    return lines


def recording_notes(
    listener_errors: int, foreign_events: int, rewarmed: Sequence[str], sources: str
) -> str:
    """What a test's report section adds about the recording itself: JAX events that could
    not be read or were not charged to it, work charged elsewhere, where the counts come
    from (each line after a newline)."""
    text = ""
    if listener_errors:
        text += (
            f"\nrecorder: {listener_errors} JAX event(s) could not be read; the counts above "
            "may be incomplete (a JAX version this plugin does not know?)"
        )
    if foreign_events:
        text += f"\nnot charged: {foreign_events} JAX event(s) on threads started before this test"
    for line in rewarmed:
        text += f"\n{line}"
    return text + f"\nsources: {sources}"


def counted_lines(nodeid: str, record: RecordedTest) -> list[str]:
    """The compile clock's progress after a test: one line per function it counted."""
    return [
        f"jaxperf: {nodeid} {short_name(fn.name)}: "
        + ", ".join(f"{ph} {wording.instructions(n)}" for ph, n in fn.instructions.items())
        + " instructions counted under valgrind"
        for fn in record.functions.values()
        if fn.instructions
    ]
