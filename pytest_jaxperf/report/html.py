"""A self-contained HTML report (no scripts, no network): its text and tables always, its
plots embedded where matplotlib is importable (the `[plot]` extra)."""

from __future__ import annotations

import base64
import dataclasses
import html
import inspect
import io
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..compare import INSTRUCTIONS, RUNTIME, Verdict
from ..config import Clock
from ..environment import timing_differences
from ..model import RecordedTest, RunRecord
from ..storage.history import number
from . import wording
from .summary import RunSummary, status_of

if TYPE_CHECKING:
    from matplotlib.figure import Figure  # type: ignore[import-not-found,unused-ignore]
    from matplotlib.patches import Patch  # type: ignore[import-not-found,unused-ignore]

INSTALL_HINT = "--jaxperf-html needs matplotlib: pip install 'pytest-jaxperf[plot]'"
# Said in a report written without matplotlib, where the plots would have been.
NO_PLOTS = "Plots need matplotlib: pip install 'pytest-jaxperf[plot]'."

MAX_CHART_TESTS = 30  # bars or panels in one chart
MAX_TREND_TESTS = 10  # lines in the per-test trend chart
MAX_DETAILED = 100  # tests shown with their causes
MAX_TABLE_ROWS = 20_000

PHASES = (("trace_s", "trace", "#4c72b0"), ("lower_s", "lower", "#dd8452"),
          ("compile_s", "backend compile", "#55a868"))  # fmt: skip
# A benchmark the gate found slower is red; one it did not gate (load, not significant,
# another environment) or found within tolerance is drawn as any other.
SLOWER, DRAWN, BASELINE = "#cf222e", "#4c72b0", "#c8d1dc"

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328;
       margin: 2em auto; max-width: 1100px; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { border-bottom: 1px solid #d0d7de;
     padding-bottom: .2em; margin-top: 2em; } h3 { font-size: 1em; margin: 1.2em 0 .3em; }
code, pre { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; padding: .7em;
      overflow-x: auto; white-space: pre; }
.tally { font-size: 1.15em; font-weight: 600; }
.bad { color: #cf222e; } .good { color: #1a7f37; } .muted { color: #59636e; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f6f8fa; }
img { max-width: 100%; height: auto; border: 1px solid #d0d7de; border-radius: 6px; }
details summary { cursor: pointer; font-weight: 600; }
"""


def require_matplotlib() -> None:
    """Raise ImportError with the install command when matplotlib is not importable (for
    callers that want the plots; the report itself renders without them)."""
    if not plots_available():
        raise ImportError(INSTALL_HINT)


def plots_available() -> bool:
    """Whether matplotlib is importable, so that the report can draw its plots."""
    try:
        import matplotlib  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


def render_html(
    run: RunRecord,
    baseline: RunRecord | None,
    verdicts: Mapping[str, Verdict],
    history: list[dict[str, Any]] | None = None,
    clock: Clock = "cpu",
) -> str:
    """One HTML document: tally, regressions with causes, compile-time split per test (now
    against the baseline), runtime distributions against the baseline, trends over
    `history` (with two entries or more) and a table of all recorded tests. The charts
    draw what the gate read: compile phases on `clock` (the gate's compile clock: process CPU
    seconds where measured), a benchmark red only where the gate failed its runtime. Without
    matplotlib the plots are left out, and one line says so: a CI job installed with the
    plain package still gets its verdicts and tables."""
    summary = RunSummary.of(verdicts)
    body: list[str] = ["<h1>pytest-jaxperf report</h1>"]
    body += _summary(run, baseline, summary)
    body += _verdicts(verdicts, summary)
    if plots_available():
        body += _compile_chart(run, baseline, verdicts, clock)
        body += _runtime_chart(run, baseline, verdicts)
        body += _trends(history or [])
    elif run.tests:
        body.append(f'<p class="muted">{_e(NO_PLOTS)}</p>')
    body += _table(run, baseline, verdicts)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>pytest-jaxperf: {_e(summary.tally())}</title>\n"
        f"<style>{CSS}</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n"
    )


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


# -- text sections ---------------------------------------------------------------------------


def _summary(run: RunRecord, baseline: RunRecord | None, summary: RunSummary) -> list[str]:
    failed = bool(summary.regressed)
    out = [
        f'<p class="tally {"bad" if failed else "good"}">{_e(summary.tally())}</p>',
        f'<p class="muted">{len(run.tests)} recorded tests'
        + (f"; baseline with {len(baseline.tests)} tests" if baseline else "; no baseline")
        + "</p>",
    ]
    if baseline is not None:
        differences = timing_differences(baseline.environment, run.environment)
        if differences:
            out.append(
                "<p>Timings are shown but not gated: the environment differs from the "
                f"baseline's ({_e(', '.join(differences))}).</p>"
            )
    if run.environment:
        rows = "".join(
            f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in sorted(run.environment.items())
        )
        out.append(f"<details><summary>Environment</summary><table>{rows}</table></details>")
    return out


def _verdicts(verdicts: Mapping[str, Verdict], summary: RunSummary) -> list[str]:
    out: list[str] = []
    failed = summary.regressed
    if failed:
        out.append(f'<h2 class="bad">Regressions ({len(failed)})</h2>')
        for nodeid in failed[:MAX_DETAILED]:
            lines = wording.failing_lines(verdicts[nodeid])
            out.append(f"<h3><code>{_e(nodeid)}</code></h3><pre>{_e(chr(10).join(lines))}</pre>")
        out += _more(len(failed), MAX_DETAILED, "regressions")
    reported = summary.reported
    if reported:
        out.append(f"<h2>Reported only, not gated ({len(reported)})</h2>")
        for nodeid in reported[:MAX_DETAILED]:
            lines = wording.failure_lines(verdicts[nodeid].breaches)
            out.append(f"<h3><code>{_e(nodeid)}</code></h3><pre>{_e(chr(10).join(lines))}</pre>")
        out += _more(len(reported), MAX_DETAILED, "tests")
    gone = summary.gone
    if gone:
        out.append(f"<h2>Functions gone ({summary.functions_gone})</h2>")
        for nodeid in gone[:MAX_DETAILED]:
            lines = [wording.gone_line(fn) for fn in verdicts[nodeid].gone]
            out.append(f"<h3><code>{_e(nodeid)}</code></h3><pre>{_e(chr(10).join(lines))}</pre>")
        out += _more(len(gone), MAX_DETAILED, "tests")
    improved = summary.improved
    if improved:
        out.append(f'<h2 class="good">Improvements ({len(improved)})</h2><ul>')
        out += [
            f"<li><code>{_e(k)}</code>: {_e('; '.join(verdicts[k].improvements))}</li>"
            for k in improved[:MAX_DETAILED]
        ]
        out.append("</ul>")
        out += _more(len(improved), MAX_DETAILED, "improvements")
    new = summary.new
    if new:
        out.append(f"<h2>New tests ({len(new)})</h2><p>Not in the baseline yet.</p><ul>")
        out += [f"<li><code>{_e(k)}</code></li>" for k in new[:MAX_DETAILED]]
        out.append("</ul>")
        out += _more(len(new), MAX_DETAILED, "new tests")
    ordered = summary.notes
    if ordered:
        out.append("<h2>Not gated</h2><ul>")
        out += [
            f"<li>{wording.plural(len(ids), 'test')}: {_e(n)}</li>"
            for n, ids in ordered[:MAX_DETAILED]
        ]
        out.append("</ul>")
        out += _more(len(ordered), MAX_DETAILED, "notes")
    return out


def _more(total: int, shown: int, noun: str) -> list[str]:
    if total <= shown:
        return []
    return [f'<p class="muted">… {total - shown} more {noun} (see the table below).</p>']


def _table(
    run: RunRecord, baseline: RunRecord | None, verdicts: Mapping[str, Verdict]
) -> list[str]:
    if not run.tests:
        return ["<p>No test was recorded.</p>"]
    head = (
        "<tr><th>test</th><th>traces</th><th>compiles</th>"
        "<th>compile s (trace / lower / backend)</th><th>cpu s</th><th>baseline compile s</th>"
        f"<th>{wording.SIZE_HEADER}</th>"
        "<th>runtime median</th><th>status</th></tr>"
    )
    rows = [
        f"<details><summary>All recorded tests ({len(run.tests)})</summary>",
        f"<table>{head}",
    ]
    for nodeid, rec in sorted(run.tests.items())[:MAX_TABLE_ROWS]:
        base = baseline.tests.get(nodeid) if baseline else None
        runtimes = ", ".join(
            f"{label}: {wording.seconds(entry.runtime.median_s)}"
            if entry.runtime is not None
            else f"{label}: {wording.instructions(entry.instructions or 0)} instructions"
            for label, entry in rec.benchmark_entries()
            if entry.runtime is not None or entry.instructions is not None
        )
        verdict = verdicts.get(nodeid)
        status = status_of(rec, verdict)
        css = ' class="bad"' if verdict is not None and verdict.failed else ""
        rows.append(
            f"<tr><td><code>{_e(nodeid)}</code></td><td class=num>{rec.traces}</td>"
            f"<td class=num>{rec.compiles}</td><td class=num>"
            f"{wording.wall_seconds(rec, ' / ')}</td>"
            f"<td class=num>{wording.cpu_seconds(rec)}</td>"
            f"<td class=num>{_base_seconds(base)}</td>"
            f"<td class=num>{wording.program_size(rec)}</td>"
            f"<td>{_e(runtimes) or '-'}</td><td{css}>{_e(status)}</td></tr>"
        )
    rows.append("</table>")
    rows += _more(len(run.tests), MAX_TABLE_ROWS, "tests not in this table")
    rows.append("</details>")
    return rows


# -- charts ----------------------------------------------------------------------------------


def _figure(
    width: float,
    height: float,
    left: float = 0.8,
    right: float = 0.3,
    top: float = 0.3,
    bottom: float = 0.6,
) -> Figure:
    """A figure drawn by the Agg canvas directly (no pyplot, no global backend switch), with
    fixed margins in inches: a layout engine would measure every label and cost seconds."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # type: ignore[import-not-found,unused-ignore]
    from matplotlib.figure import Figure  # type: ignore[import-not-found,unused-ignore]

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(
        left=min(left / width, 0.6),
        right=1 - right / width,
        top=1 - top / height,
        bottom=min(bottom / height, 0.4),
    )
    return fig


def _label_inches(labels: Sequence[str], fontsize: float) -> float:
    """About how wide the longest label is drawn (DejaVu Sans averages ~0.55 em per char)."""
    longest = max((len(label) for label in labels), default=0)
    return longest * fontsize * 0.55 / 72 + 0.25


def _img(fig: Figure, alt: str) -> str:
    buf = io.BytesIO()
    # No "Software" text chunk: the file should name nothing outside itself.
    fig.savefig(buf, format="png", metadata={"Software": None})
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{_e(alt)}">'


def _label(text: str, most: int = 70) -> str:
    """A chart label: shortened from the left (the test name is at the end), with `$` kept
    from starting matplotlib's math mode."""
    if len(text) > most:
        text = "…" + text[-(most - 1) :]
    return text.replace("$", r"\$")


def _truncation(shown: int, total: int, what: str) -> str:
    if shown >= total:
        return ""
    return f'<p class="muted">Showing {shown} of {total} {what}.</p>'


def _compile_chart(
    run: RunRecord, baseline: RunRecord | None, verdicts: Mapping[str, Verdict], clock: Clock
) -> list[str]:
    """The compile-time split per test, each above its faded baseline bar."""
    if not run.tests:
        return []
    chosen, bars = _compile_bars(run, baseline, verdicts)
    on_cpu = clock == "cpu" and all(rec.total_cpu_s is not None for _, rec, _ in bars)
    fig = _draw_compile_bars(bars, on_cpu)
    what = "tests (regressed first, then the longest compile times)"
    return [
        "<h2>Compile time per test</h2>",
        f"<p>Each test's compile time ({'CPU' if on_cpu else 'wall'} seconds, the clock "
        "the gate read) split into tracing, lowering and XLA backend "
        + (
            "compilation; the faded bar below a test is its baseline.</p>"
            if baseline
            else "compilation.</p>"
        ),
        _truncation(chosen, len(run.tests), what),
        _img(fig, "compile time per test, split into trace, lower and backend compile"),
    ]


def _compile_bars(
    run: RunRecord, baseline: RunRecord | None, verdicts: Mapping[str, Verdict]
) -> tuple[int, list[tuple[str, RecordedTest, bool]]]:
    """How many tests are drawn, and their bars (label, record, is_baseline): the regressed
    first, then the longest compile times, each followed by its baseline where it has one."""

    def priority(item: tuple[str, RecordedTest]) -> tuple[bool, float, str]:
        nodeid, rec = item
        verdict = verdicts.get(nodeid)
        return (not (verdict is not None and verdict.failed), -(rec.total_s or 0.0), nodeid)

    chosen = sorted(run.tests.items(), key=priority)[:MAX_CHART_TESTS]
    bars: list[tuple[str, RecordedTest, bool]] = []
    for nodeid, rec in chosen:
        bars.append((_label(nodeid), rec, False))
        base = baseline.tests.get(nodeid) if baseline else None
        if base is not None:
            bars.append(("baseline", base, True))
    return len(chosen), bars


def _draw_compile_bars(bars: list[tuple[str, RecordedTest, bool]], on_cpu: bool) -> Figure:
    """The stacked trace/lower/backend bars, on CPU seconds when `on_cpu`, else wall."""
    from matplotlib.colors import to_rgba  # type: ignore[import-not-found,unused-ignore]
    from matplotlib.patches import Patch  # type: ignore[import-not-found,unused-ignore]

    fig = _figure(
        11, 1.0 + 0.24 * len(bars), left=_label_inches([b[0] for b in bars], 8), bottom=0.55
    )
    ax = fig.add_subplot()
    ys = list(range(len(bars)))[::-1]
    lefts = [0.0] * len(bars)
    legend: list[Patch] = []
    for field, name, color in PHASES:
        # The gate's clock: CPU seconds (`trace_cpu_s`, ...) where every bar has them.
        read = field.replace("_s", "_cpu_s") if on_cpu else field
        widths = [getattr(rec, read) or 0.0 for _, rec, _ in bars]
        colors = [to_rgba(color, 0.4 if is_base else 1.0) for _, _, is_base in bars]
        ax.barh(ys, widths, left=lefts, color=colors, height=0.8)
        legend.append(Patch(color=color, label=name))
        lefts = [left + width for left, width in zip(lefts, widths)]
    ax.set_yticks(ys, [label for label, _, _ in bars], fontsize=8)
    ax.set_ylim(-0.6, len(bars) - 0.4)
    for tick, (_, _, is_base) in zip(ax.get_yticklabels(), bars):
        if is_base:
            tick.set_color("#59636e")
            tick.set_fontstyle("italic")
    ax.set_xlabel(
        f"{'CPU' if on_cpu else 'wall'} seconds (trace + lower + backend compile), as gated"
    )
    ax.grid(axis="x", alpha=0.3)
    ax.legend(handles=legend, loc="lower right", fontsize=8)
    return fig


# A benchmark's runtime as charted: (ratio of medians, 0 without a baseline; its name; the
# rounds now; the baseline's rounds; whether the gate failed it).
_Series = tuple[float, str, list[float], list[float], bool]


def _runtime_chart(
    run: RunRecord, baseline: RunRecord | None, verdicts: Mapping[str, Verdict]
) -> list[str]:
    """Each benchmark's rounds now against the baseline's, as boxes."""
    found = _runtime_series(run, baseline, verdicts)
    if not found:
        return []
    # The biggest slowdowns first; benchmarks without a baseline last.
    found.sort(key=lambda p: (-p[0], p[1]))
    chosen = found[:MAX_CHART_TESTS]
    fig = _draw_boxes(*_runtime_boxes(chosen))
    return [
        "<h2>Steady-state runtime</h2>",
        "<p>Per-round times of each benchmark relative to its baseline median, now against "
        "the baseline (box: quartiles, line: median, whiskers: 1.5 IQR; the label gives the "
        "median now and the ratio of the medians); red where the gate failed the runtime, "
        "not where a change was left ungated (machine load, another environment).</p>",
        _truncation(len(chosen), len(found), "benchmarks (largest slowdowns first)"),
        _img(fig, "runtime distributions per benchmark, now against the baseline"),
    ]


def _base_seconds(base: RecordedTest | None) -> str:
    """The baseline's compile wall seconds; its CPU seconds, said so, where it keeps no wall
    seconds (saved gated on CPU seconds)."""
    if base is None:
        return "-"
    if base.total_s is not None:
        return f"{base.total_s:.3f}"
    return "-" if base.total_cpu_s is None else f"{base.total_cpu_s:.3f} cpu"


def _runtime_series(
    run: RunRecord, baseline: RunRecord | None, verdicts: Mapping[str, Verdict]
) -> list[_Series]:
    """Every benchmark with rounds now, with its baseline's rounds where there are some."""
    found: list[_Series] = []
    for nodeid, rec in run.tests.items():
        base_rec = baseline.tests.get(nodeid) if baseline else None
        old = dict(base_rec.benchmark_entries()) if base_rec else {}
        for label, entry in rec.benchmark_entries():
            now = list(entry.runtime.samples_s) if entry.runtime else []
            if not now:
                continue
            old_runtime = old[label].runtime if label in old else None
            before = list(old_runtime.samples_s) if old_runtime else []
            base_median = statistics.median(before) if before else 0.0
            ratio = statistics.median(now) / base_median if base_median > 0 else 0.0
            failed = _runtime_failed(verdicts.get(nodeid), label)
            found.append((ratio, f"{nodeid}::{label}", now, before, failed))
    return found


def _runtime_boxes(chosen: list[_Series]) -> tuple[list[list[float]], list[str], list[str]]:
    """The boxes' values, labels and colours, the baseline's box under each benchmark's."""
    # One axes for all (30 small panels would take seconds to lay out): each benchmark's
    # rounds divided by its reference median (the baseline's, else its own).
    data: list[list[float]] = []
    labels: list[str] = []
    colors: list[str] = []
    for ratio, name, now, before, failed in chosen:
        reference = statistics.median(before) if ratio > 0 else statistics.median(now)
        reference = reference or 1.0
        head = f"{_label(name, 60)}  {wording.seconds(statistics.median(now))}"
        data.append([v / reference for v in now])
        labels.append(head + (f"  ×{ratio:.2f}" if ratio > 0 else "  (no baseline)"))
        colors.append(SLOWER if failed else DRAWN)
        if ratio > 0:
            data.append([v / reference for v in before])
            labels.append(f"baseline  {wording.seconds(reference)}")
            colors.append(BASELINE)
    return data, labels, colors


def _draw_boxes(data: list[list[float]], labels: list[str], colors: list[str]) -> Figure:
    """Horizontal boxes around the line at 1 (the baseline's median)."""
    fig = _figure(11, 1.0 + 0.26 * len(data), left=_label_inches(labels, 7.5))
    ax = fig.add_subplot()
    positions = list(range(len(data), 0, -1))
    box = ax.boxplot(
        data,
        positions=positions,
        widths=0.7,
        patch_artist=True,
        flierprops={"markersize": 2},
        **_horizontal(),
    )
    for patch, color in zip(box["boxes"], colors):
        patch.set_facecolor(color)
    ax.set_yticks(positions, labels, fontsize=7.5)
    for tick, color in zip(ax.get_yticklabels(), colors):
        if color == BASELINE:
            tick.set_color("#59636e")
            tick.set_fontstyle("italic")
    ax.axvline(1.0, color="#59636e", linewidth=0.8, linestyle="--")
    ax.set_xlabel("per-round time / baseline median (1 = the baseline's median)")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _runtime_failed(verdict: Verdict | None, label: str) -> bool:
    """Whether the gate failed the runtime of benchmark `label`."""
    return verdict is not None and any(
        b.gated and b.benchmark == label and b.metric in (RUNTIME, INSTRUCTIONS)
        for b in verdict.breaches
    )


def _horizontal() -> dict[str, Any]:
    """boxplot's keyword for horizontal boxes: matplotlib 3.10 replaced (and deprecated)
    vert=False with orientation='horizontal'."""
    from matplotlib.axes import Axes  # type: ignore[import-not-found,unused-ignore]

    if "orientation" in inspect.signature(Axes.boxplot).parameters:
        return {"orientation": "horizontal"}
    return {"vert": False}


@dataclass
class _Totals:
    """The history's compile seconds and compiles of all tests per run, and each test's
    lowest and highest compile seconds across the runs."""

    seconds: list[float] = dataclasses.field(default_factory=list)
    compiles: list[float] = dataclasses.field(default_factory=list)
    low: dict[str, float] = dataclasses.field(default_factory=dict)
    high: dict[str, float] = dataclasses.field(default_factory=dict)


def _trends(history: Sequence[Mapping[str, Any]]) -> list[str]:
    """Compile seconds and compiles of all tests across the history, and of the movers."""
    entries = [e for e in history if isinstance(e.get("tests"), Mapping)]
    if len(entries) < 2:
        return []
    totals = _trend_totals(entries)
    # Only the tests that moved most get a line: no per-test series for the whole suite.
    movers = sorted(totals.low, key=lambda k: (totals.low[k] - totals.high[k], k))
    movers = movers[:MAX_TREND_TESTS]
    fig = _draw_trends(entries, totals, movers)
    return [
        "<h2>Trends</h2>",
        f"<p>{len(entries)} runs of the history. Top: compile seconds and compiles of all "
        "tests per run. Bottom: compile seconds of the tests that changed most.</p>",
        _truncation(len(movers), len(totals.low), "tests in the per-test trend (largest changes)"),
        _img(fig, "compile time and compiles across the runs of the history"),
    ]


def _trend_totals(entries: Sequence[Mapping[str, Any]]) -> _Totals:
    """Sum each run's tests; keep each test's extremes."""
    totals = _Totals()
    low, high = totals.low, totals.high
    for entry in entries:
        seconds = compiles = 0.0
        for nodeid, item in entry["tests"].items():
            if not isinstance(item, Mapping):
                continue
            value = number(item.get("compile_s"))
            if value is not None:
                seconds += value
                if value < low.get(nodeid, math.inf):
                    low[nodeid] = value
                if value > high.get(nodeid, -math.inf):
                    high[nodeid] = value
            compiles += number(item.get("compiles")) or 0.0
        totals.seconds.append(seconds)
        totals.compiles.append(compiles)
    return totals


def _draw_trends(
    entries: Sequence[Mapping[str, Any]], totals: _Totals, movers: list[str]
) -> Figure:
    """Top: the totals per run on two axes. Bottom: one line per mover."""
    from matplotlib.ticker import MaxNLocator  # type: ignore[import-not-found,unused-ignore]

    xs = list(range(len(entries)))
    fig = _figure(11, 6.0, left=0.8, right=4.2, bottom=0.9)
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.plot(xs, totals.seconds, marker="o", markersize=3, color="#4c72b0")
    top.set_ylabel("compile s, all tests", color="#4c72b0")
    twin = top.twinx()
    twin.plot(xs, totals.compiles, marker="s", markersize=3, color="#dd8452")
    twin.set_ylabel("compiles, all tests", color="#dd8452")
    twin.yaxis.set_major_locator(MaxNLocator(integer=True))
    top.grid(alpha=0.3)

    for nodeid in movers:
        series = (entry["tests"].get(nodeid) for entry in entries)
        values = [
            number(item.get("compile_s")) if isinstance(item, Mapping) else None for item in series
        ]
        ys = [math.nan if v is None else v for v in values]
        bottom.plot(xs, ys, marker="o", markersize=3, label=_label(nodeid, 60))
    bottom.set_ylabel("compile s per test")
    bottom.grid(alpha=0.3)
    if movers:
        bottom.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    step = max(1, math.ceil(len(entries) / 12))
    ticks = xs[::step]
    bottom.set_xticks(ticks, [_run_label(entries[i], i) for i in ticks], fontsize=7, rotation=30)
    bottom.set_xlabel("run")
    return fig


def _run_label(entry: Mapping[str, Any], index: int) -> str:
    """'#3 1a2b3c4*' (commit, * when dirty), else '#3 2025-01-31', else '#3'."""
    commit, when = entry.get("commit"), entry.get("time")
    if isinstance(commit, str) and commit:
        return f"#{index + 1} {commit[:7]}{'*' if entry.get('dirty') else ''}"
    if isinstance(when, str) and when:
        return f"#{index + 1} {when[:10]}"
    return f"#{index + 1}"
