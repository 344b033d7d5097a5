"""A run's verdicts as GitHub-flavoured markdown for `$GITHUB_STEP_SUMMARY`, legible as text."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from ..compare import Verdict
from ..model import RecordedTest, RunRecord
from . import wording
from .summary import RunSummary, status_of

# GitHub rejects a step summary over 1 MiB; these caps keep a 10,000-test run well below it.
MAX_DETAILED = 50  # tests shown with their full causes in each section
MAX_LISTED = 100  # nodeids listed in the "new tests" section
MAX_ROWS = 1000  # rows of the table of all recorded tests

# Order of the rows of the table: what needs attention first.
_RANK: dict[str, int] = {
    "BAD LIMIT": 0, "OVER LIMIT": 0, "REGRESSED": 0, "NOT GATED": 0, "reported only": 1,
    "function gone": 2, "improved": 3, "new": 4,
}  # fmt: skip


def render_markdown(
    run: RunRecord,
    verdicts: Mapping[str, Verdict],
    baseline_path: str | None = None,
    *,
    max_rows: int = MAX_ROWS,
    baseline: RunRecord | None = None,
) -> str:
    """The whole summary: tally, regressions with causes, improvements, new tests, notes,
    each benchmark's runtime (against `baseline`'s where given) and a table of every
    recorded test (the first `max_rows`, problems first)."""
    summary = RunSummary.of(verdicts)
    out = _head(run, summary, baseline_path)
    out += _verdict_sections(summary, verdicts, baseline_path)
    out += _new_tests(summary.new)
    out += _notes(summary)
    out += _benchmarks(wording.benchmark_rows(run.tests, verdicts, baseline, run.environment))
    out += _table(run.tests, verdicts, max_rows)
    return "\n".join(out).rstrip("\n") + "\n"


def _head(run: RunRecord, summary: RunSummary, baseline_path: str | None) -> list[str]:
    """The title, the tally and the line naming the environment and the baseline."""
    out: list[str] = ["## pytest-jaxperf", ""]
    out.append(f"**{summary.tally()}** ({wording.plural(len(run.tests), 'recorded test')})")
    out.append("")
    context = _environment(run)
    if baseline_path:
        context.append(f"baseline {code_span(baseline_path)}")
    if context:
        out += [" · ".join(context), ""]
    return out


def _verdict_sections(
    summary: RunSummary, verdicts: Mapping[str, Verdict], baseline_path: str | None
) -> list[str]:
    """Regressions (with how to accept them), reported only, functions gone, improvements."""
    failed = summary.regressed
    out = _section(
        f"Regressions ({len(failed)})",
        failed,
        lambda nodeid: _regression(verdicts[nodeid]),
        "regressions",
    )
    against_baseline = any(
        b.gated and b.against == "baseline" for k in failed for b in verdicts[k].breaches
    )
    if against_baseline and baseline_path:
        out += [
            f"If a change is intended, update the baseline with `pytest --jaxperf --jaxperf-save` "
            f"(baseline: {code_span(baseline_path)}).",
            "",
        ]
    out += _section(
        f"Reported only, not gated ({len(summary.reported)})",
        summary.reported,
        lambda nodeid: _block(wording.failure_lines(verdicts[nodeid].breaches)),
        "tests",
    )
    out += _section(
        f"Functions gone ({summary.functions_gone})",
        summary.gone,
        lambda nodeid: _block(wording.gone_line(fn) for fn in verdicts[nodeid].gone),
        "tests",
    )
    out += _section(
        f"Improvements ({len(summary.improved)})",
        summary.improved,
        lambda nodeid: [f"- {escape(i)}" for i in verdicts[nodeid].improvements] + [""],
        "improvements",
    )
    return out


def _new_tests(new: Sequence[str]) -> list[str]:
    """The tests not in the baseline yet, the first `MAX_LISTED` of them by name."""
    if not new:
        return []
    out = [f"### New tests ({len(new)})", "", "Not in the baseline yet:", ""]
    out += [f"- {code_span(nodeid)}" for nodeid in new[:MAX_LISTED]]
    if len(new) > MAX_LISTED:
        out.append(f"- … and {len(new) - MAX_LISTED} more")
    out.append("")
    return out


def shown_path(path: Path, rootdir: Path) -> str:
    """`path` relative to `rootdir` where it lies under it (POSIX separators, as a reader of
    the repository writes it), else as given."""
    try:
        return path.relative_to(rootdir).as_posix()
    except ValueError:
        return str(path)


def _environment(run: RunRecord) -> list[str]:
    env = run.environment
    parts = [f"{key} {env[key]}" for key in ("jax", "jaxlib") if env.get(key) not in (None, "")]
    device = [str(env[k]) for k in ("backend", "device_kind") if env.get(k)]
    if device:
        parts.append(" ".join(dict.fromkeys(device)))
    if env.get("valgrind"):
        parts.append(
            f"instructions per call under {env['valgrind']} ({env.get('instructions_isa')})"
        )
    return parts


def code_span(text: str, in_table: bool = False) -> str:
    """`text` as an inline code span, whatever backticks it holds, on one line (a line break
    would end a table row or a list item)."""
    text = _one_line(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    span = f"{fence}{pad}{text}{pad}{fence}"
    # Inside a table a pipe ends the cell even in a code span; GitHub unescapes \| there.
    return span.replace("|", "\\|") if in_table else span


def _block(lines: Iterable[str]) -> list[str]:
    """A fenced text block: causes hold `<lambda>`, `*` and brackets that markdown would eat."""
    body = list(lines)
    longest = max((len(run) for line in body for run in re.findall(r"`{3,}", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}text", *body, fence, ""]


def _regression(verdict: Verdict) -> list[str]:
    return _block(wording.failing_lines(verdict))


def _section(
    title: str,
    nodeids: Sequence[str],
    body: Callable[[str], list[str]],
    noun: str,
    most: int = MAX_DETAILED,
) -> list[str]:
    if not nodeids:
        return []
    out = [f"### {title}", ""]
    for nodeid in nodeids[:most]:
        out += [f"#### {code_span(nodeid)}", ""]
        out += body(nodeid)
    if len(nodeids) > most:
        out += [f"… {len(nodeids) - most} more {noun} not shown here (see the table).", ""]
    return out


def _notes(summary: RunSummary) -> list[str]:
    """Why some tests were not gated, grouped: one environment change affects every test."""
    if not summary.notes:
        return []
    out = ["### Not gated", ""]
    for note, nodeids in summary.notes[:MAX_LISTED]:
        if len(nodeids) == 1:
            out.append(f"- {code_span(nodeids[0])}: {escape(note)}")
        else:
            out.append(f"- {wording.plural(len(nodeids), 'test')}: {escape(note)}")
    if len(summary.notes) > MAX_LISTED:
        out.append(f"- … and {len(summary.notes) - MAX_LISTED} more notes")
    return out + [""]


def escape(text: str) -> str:
    """Text that renders as written (what could start emphasis, code, a tag such as `<!--`,
    which would hide the rest of the page, or a link is backslash-escaped), on one line, and
    legible as plain text."""
    return re.sub(r"([\\`*<\[\]|])", r"\\\1", _one_line(text))


def _one_line(text: str) -> str:
    return re.sub(r"\s*[\r\n]+\s*", " ", text)


def _benchmarks(rows: list[wording.BenchmarkRow], most: int = MAX_ROWS) -> list[str]:
    """How fast each benchmark is: median, spread, rounds and the change the gate saw."""
    if not rows:
        return []
    out = [
        f"### Benchmarks ({len(rows)})",
        "",
        "| benchmark | median | IQR | min | rounds | vs baseline |",
        "|:--|--:|--:|--:|--:|:--|",
    ]
    out += [
        f"| {code_span(r.name, in_table=True)} | {r.median} | {r.iqr} | {r.min} | {r.rounds} "
        f"| {escape(r.versus)} |"
        for r in rows[:most]
    ]
    if len(rows) > most:
        out += ["", f"… {len(rows) - most} more benchmarks (the run's JSON report has all)."]
    return out + [""]


def _table(
    records: Mapping[str, RecordedTest], verdicts: Mapping[str, Verdict], max_rows: int
) -> list[str]:
    if not records:
        return ["No test was recorded.", ""]
    rows = [(status_of(rec, verdicts.get(k)), k, rec) for k, rec in records.items()]
    rows.sort(key=lambda r: (_RANK.get(r[0].split(" (")[0], 4), r[1]))
    out = [
        f"### All recorded tests ({len(rows)})",
        "",
        "| test | traces | compiles | compile s (trace / lower / backend) | cpu s "
        f"| {wording.SIZE_HEADER} | status |",
        "|:--|--:|--:|:--|--:|--:|:--|",
    ]
    for status, nodeid, rec in rows[:max_rows]:
        out.append(
            f"| {code_span(nodeid, in_table=True)} | {rec.traces} | {rec.compiles} | "
            f"{wording.wall_seconds(rec, ' / ')} | "
            f"{wording.cpu_seconds(rec)} | {wording.program_size(rec)} | {status} |"
        )
    if len(rows) > max_rows:
        out += [
            "",
            f"… {len(rows) - max_rows} more tests not shown (the run's JSON report has all).",
        ]
    return out + [""]
