"""What `jaxperf ab` shows and writes: the terminal table, the markdown summary and the JSON
document, all from one `Comparison` and the `Context` it was measured in."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..config import RuntimeClock
from ..model import TIME_DIGITS, significant
from ..report.markdown import code_span, escape
from ..report.terminal import markup, tally_markup
from ..report.wording import plural
from . import cpus
from .stats import Ratio
from .table import COMPILE_TIME, RUNTIME, Comparison, Row, Thresholds, judged_ok

SCHEMA = "pytest-jaxperf-ab/1"
COLUMNS = ("test", "metric", "base", "head", "ratio", "interval", "verdict")


@dataclass(frozen=True)
class RunTime:
    side: str
    round: int
    seconds: float


@dataclass(frozen=True)
class Context:
    """Where and how the comparison was measured."""

    base_ref: str
    base_commit: str
    head_commit: str
    head_changed: int  # uncommitted changes to tracked files, measured with head
    project: str  # the directory the runs ran in, relative to the repository ("." at its top)
    rounds: int
    thresholds: Thresholds
    confidence: float
    pytest_args: tuple[str, ...] = ()
    cpus: frozenset[int] | None = None  # every run confined to these CPUs; None: not confined
    runs: tuple[RunTime, ...] = ()
    seconds: float = 0.0
    runtime_clock: RuntimeClock = "wall"  # what runtime rows compare (table.runtime_clock)

    def head_label(self) -> str:
        changes = ""
        if self.head_changed:
            s = "s" if self.head_changed != 1 else ""
            changes = f" + {self.head_changed} uncommitted change{s}"
        return f"{self.head_commit[:10]}{changes}"

    def base_label(self) -> str:
        return f"{self.base_commit[:10]} ({self.base_ref})"

    def where_run(self) -> str:
        """Where the runs ran, for the header: 'on CPU 1' (with a leading space) when --cpus
        confined them, else nothing."""
        if self.cpus is None:
            return ""
        return f" on CPU{'s' if len(self.cpus) != 1 else ''} {cpus.label(self.cpus)}"

    def per_call(self) -> str:
        """What a runtime row's base and head are."""
        if self.runtime_clock == "instructions":
            return "instructions per call under valgrind, exact"
        return f"{'CPU' if self.runtime_clock == 'cpu' else 'wall'} seconds per call"


# -- values --------------------------------------------------------------------------------


def value(row: Row, v: float | None) -> str:
    if v is None:
        return ""
    if row.metric == RUNTIME:
        return duration(v)
    if row.metric == COMPILE_TIME:
        return f"{v:.3f} s"
    # Counts and program metrics in full: at 6 significant digits 1,234,567 and 1,234,568
    # both read 1.23457e+06, and a REGRESSED row would show two equal numbers.
    return str(int(v)) if float(v).is_integer() else f"{v:.12g}"


def duration(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds:.3f} s"


def ratio_text(r: Ratio | None) -> str:
    return "" if r is None else f"{r.estimate:.2f}x"


def interval_text(r: Ratio | None) -> str:
    return "" if r is None else f"[{r.low:.2f}, {r.high:.2f}]"


def metric_text(row: Row) -> str:
    return row.metric if row.benchmark is None else f"{row.metric} {row.benchmark}"


def _cells(row: Row) -> tuple[str, ...]:
    exact = row.clock == "instructions" and row.ratio is not None
    return (
        row.test,
        metric_text(row),
        value(row, row.base),
        value(row, row.head),
        # Exact counts gated within a few percent: the ratio to four decimals, no interval.
        f"{row.ratio.estimate:.4f}x" if exact and row.ratio else ratio_text(row.ratio),
        "exact" if exact else interval_text(row.ratio),
        row.status,
    )


# At most this many tests are named in the tally's parentheses; the rest are counted.
NAMED_TESTS = 5


def tally(comparison: Comparison, context: Context) -> str:
    """`jaxperf ab: 1 regression (test_x: runtime dense_relu), 0 improvements; 2 tests in 3
    rounds (6 runs, 21 s)`: regressions and improvements count tests, as the plugin's gate
    counts them, each named with the metrics that made it so."""
    tests = len({r.test for r in comparison.rows})
    return (
        f"jaxperf ab: {counted(comparison.regressed_tests(), 'regression')}, "
        f"{counted(comparison.improved_tests(), 'improvement')}; "
        f"{plural(tests, 'test')} in {plural(context.rounds, 'round')} "
        f"({len(context.runs)} runs, {context.seconds:.0f} s)"
    )


def counted(tests: dict[str, list[Row]], word: str, markdown: bool = False) -> str:
    """`2 regressions (test_a: traces, compiles; test_b: runtime f)`: how many tests, then
    each test's short name (its full id where two share one) and its metrics."""
    text = plural(len(tests), word)
    if not tests:
        return text
    short = {t: _short(t) for t in tests}
    repeated = {n for n in short.values() if list(short.values()).count(n) > 1}
    named = []
    for test, rows in list(tests.items())[:NAMED_TESTS]:
        name = short[test] if short[test] not in repeated else test
        metrics = ", ".join(dict.fromkeys(metric_text(r) for r in rows))
        if markdown:
            name, metrics = code_span(name), escape(metrics)
        named.append(f"{name}: {metrics}")
    more = len(tests) - NAMED_TESTS
    if more > 0:
        named.append(f"{more} more")
    return f"{text} ({'; '.join(named)})"


def _short(test: str) -> str:
    return test.rsplit("::", 1)[-1]


def header(context: Context) -> str:
    t = context.thresholds
    where = f" in {context.project}" if context.project not in ("", ".") else ""
    args = f"; pytest {' '.join(context.pytest_args)}" if context.pytest_args else ""
    on = context.where_run()
    return (
        f"jaxperf ab: base {context.base_label()} vs head {context.head_label()}{where}{args}\n"
        f"{plural(context.rounds, 'round')}{on}, "
        f"{context.confidence:.0%} intervals; a slowdown fails when its whole interval lies "
        f"above {t.runtime:g}x (runtime, {context.per_call()}) or {t.compile:g}x (compile "
        "time, and "
        f"+{t.compile_floor:g} s); counts fail on any increase, program metrics above "
        f"+{t.static_rtol:.0%}"
    )


# -- terminal ------------------------------------------------------------------------------


def terminal(comparison: Comparison, context: Context) -> str:
    """The table, the causes of failed counts, notes and the tally line."""
    return "".join(line + "\n" for line, _ in terminal_lines(comparison, context))


def terminal_lines(comparison: Comparison, context: Context) -> list[tuple[str, dict[str, bool]]]:
    """terminal()'s lines, each with its TerminalWriter markup: a row's as the plugin marks its
    status, the tally red or green, the rest plain."""
    lines = [header(context), ""]
    titles = list(COLUMNS)
    titles[5] = f"{context.confidence:.0%} interval"
    rows = [_cells(r) for r in comparison.rows]
    widths = [max([len(titles[i])] + [len(c[i]) for c in rows]) for i in range(len(titles))]
    right = {2, 3, 4}

    def line(cells: tuple[str, ...] | list[str]) -> str:
        parts = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in
                 enumerate(zip(cells, widths))]  # fmt: skip
        return "  ".join(parts).rstrip()

    lines.append(line(titles))
    plain: dict[str, bool] = {}
    out = [(text, plain) for text in lines]
    # The rows not ok (changed, or not judged) first, then the ok ones.
    changed = [i for i, r in enumerate(comparison.rows) if not judged_ok(r)]
    same = [i for i, r in enumerate(comparison.rows) if judged_ok(r)]
    for group in (changed, same):
        if group is same and same:
            out.append((f"-- {plural(len(same), 'row')} ok --", plain))
        previous = None
        for i in group:
            cells, row = rows[i], comparison.rows[i]
            # The test's name once, on its first row of the group.
            cells = ("" if row.test == previous else row.test, *cells[1:])
            previous = row.test
            out.append((line(cells), markup(row.status)))
    details = [(r, c) for r in comparison.rows for c in r.causes]
    if details:
        out.append(("", plain))
        out += [
            (f"{r.test}: {c}" if not c.startswith(" ") else f"  {c}", plain) for r, c in details
        ]
    out += [(f"note: {n}", plain) for n in comparison.notes]
    regressed = bool(comparison.regressions)
    out += [("", plain), (tally(comparison, context), tally_markup(regressed))]
    return out


# -- markdown ------------------------------------------------------------------------------


def markdown(comparison: Comparison, context: Context) -> str:
    """The summary line, the rows not ok (changed, or not judged), the ok rows folded under
    `<details>`, the causes, the runtime sentence and the notes."""
    regressed = comparison.regressed_tests()
    verdict = counted(regressed, "regression", markdown=True)
    if regressed:
        number, _, rest = verdict.partition(" (")
        verdict = f"**{number}** ({rest}"
    title = [f"{context.confidence:.0%} interval" if c == "interval" else c for c in COLUMNS]
    table_head = ["| " + " | ".join(title) + " |", "|" + "---|" * len(COLUMNS)]
    changed = [r for r in comparison.rows if not judged_ok(r)]
    same = [r for r in comparison.rows if judged_ok(r)]
    lines = [
        f"### jaxperf ab: head {code_span(context.head_label())} vs base "
        f"{code_span(context.base_label())}",
        "",
        f"{verdict}, {counted(comparison.improved_tests(), 'improvement', markdown=True)}; "
        f"{plural(context.rounds, 'round')}{context.where_run()}, "
        f"{context.confidence:.0%} intervals, "
        f"runtime threshold {context.thresholds.runtime:g}x ({context.per_call()}), "
        "compile-time threshold "
        f"{context.thresholds.compile:g}x",
        "",
    ]
    if changed:
        lines += [*table_head, *_markdown_rows(changed)]
    else:
        lines.append("Every row ok.")
    if same:
        lines += [
            "",
            f"<details><summary>{plural(len(same), 'row')} ok</summary>",
            "",
            *table_head,
            *_markdown_rows(same),
            "",
            "</details>",
        ]
    details = [f"- {code_span(r.test)}: {escape(c.strip())}" for r in comparison.rows
               for c in r.causes]  # fmt: skip
    runtime = runtime_sentence(comparison, context)
    notes = [f"- note: {escape(n)}" for n in comparison.notes]
    for block in (details, [runtime] if runtime else [], notes):
        if block:
            lines += ["", *block]
    return "\n".join(lines) + "\n"


def _markdown_rows(rows: list[Row]) -> list[str]:
    out = []
    previous = None
    for row in rows:
        cells = list(_cells(row))
        cells[0] = "" if row.test == previous else code_span(row.test, in_table=True)
        previous = row.test
        cells[1] = escape(cells[1])
        if row.regressed:
            cells[6] = f"**{cells[6]}**"
        out.append("| " + " | ".join(cells) + " |")
    return out


# Why the plugin's gate leaves a runtime out (notgated.CODES) where ab's rounds still judge it.
GATE_LEAVES_OUT = ("machine_load", "not_significant", "environment_differs")


def runtime_sentence(comparison: Comparison, context: Context) -> str | None:
    """The sentence between the gate's runtime verdict and ab's, for a summary that shows
    both (the CI workflow writes the gate's report and this one to one step summary): ab's
    verdict comes from alternated rounds on this machine, so it judges the runtimes the gate,
    one run against a baseline measured elsewhere, leaves out; naming the runtimes it judged
    changed. None where ab judged no runtime from rounds (one round; instructions per call,
    exact in both)."""
    judged = [
        r
        for r in comparison.rows
        if r.metric == RUNTIME and r.ratio is not None and r.clock != "instructions"
    ]
    if not judged:
        return None
    changed = [r for r in judged if not judged_ok(r)]
    verdicts = (
        ", ".join(
            f"runtime of {escape(r.benchmark or '')} ({code_span(_short(r.test))}) {r.status} "
            f"{ratio_text(r.ratio)} {interval_text(r.ratio)}"
            for r in changed
        )
        if changed
        else "every runtime ok"
    )
    return (
        f"Runtime: {plural(context.rounds, 'alternated round')} of both commits on this "
        f"machine judge {verdicts}; where the gate's report (`pytest --jaxperf`) leaves a "
        f"runtime out ({', '.join(code_span(c) for c in GATE_LEAVES_OUT)}: it times one run "
        "against a baseline timed elsewhere), this is the verdict on it."
    )


# -- JSON ----------------------------------------------------------------------------------


def _num(v: float | None) -> float | None:
    return None if v is None else significant(v, TIME_DIGITS)


def to_json(comparison: Comparison, context: Context) -> dict[str, Any]:
    t = context.thresholds

    def ratio(r: Ratio | None) -> dict[str, Any] | None:
        if r is None:
            return None
        return {"estimate": _num(r.estimate), "low": _num(r.low), "high": _num(r.high),
                "rounds": r.rounds, "left_out": r.left_out}  # fmt: skip

    return {
        "schema": SCHEMA,
        "base": {"ref": context.base_ref, "commit": context.base_commit},
        "head": {"commit": context.head_commit, "uncommitted_changes": context.head_changed},
        "project": context.project,
        "pytest_args": list(context.pytest_args),
        "cpus": None if context.cpus is None else sorted(context.cpus),
        "runtime_clock": context.runtime_clock,
        "rounds": context.rounds,
        "confidence": context.confidence,
        "thresholds": {
            "runtime": t.runtime,
            "compile": t.compile,
            "compile_floor_s": t.compile_floor,
            "static_rtol": t.static_rtol,
        },
        "runs": [
            {"side": r.side, "round": r.round, "seconds": round(r.seconds, 3)} for r in context.runs
        ],  # fmt: skip
        "seconds": round(context.seconds, 3),
        # Tests, as the tally counts them, and each test's metrics that made it so.
        "regressions": len(comparison.regressed_tests()),
        "improvements": len(comparison.improved_tests()),
        "regressed": {
            t: [metric_text(r) for r in rows] for t, rows in comparison.regressed_tests().items()
        },
        "improved": {
            t: [metric_text(r) for r in rows] for t, rows in comparison.improved_tests().items()
        },
        "rows": [
            {
                "test": r.test,
                "metric": r.metric,
                "benchmark": r.benchmark,
                "base": _num(r.base),
                "head": _num(r.head),
                "ratio": ratio(r.ratio),
                "verdict": r.status,
                "clock": r.clock,
                "causes": list(r.causes),
            }
            for r in comparison.rows
        ],
        "notes": list(comparison.notes),
    }


def json_text(comparison: Comparison, context: Context) -> str:
    return json.dumps(to_json(comparison, context), indent=2, sort_keys=True) + "\n"
