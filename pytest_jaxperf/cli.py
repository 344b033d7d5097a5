"""The `jaxperf` command: show a report, compare it with a baseline, export it (no jax needed)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import NoReturn, TextIO

from . import compare, export, report
from .baseline import BaselineError, load
from .config import (
    CLOCKS,
    DEFAULT_COMPILE_FLOOR,
    DEFAULT_COMPILE_RTOL,
    MarkerLimits,
    Tolerances,
)
from .environment import static_differences, timing_differences
from .model import Report, TestRecord
from .summary import RunSummary

EXIT_OK, EXIT_REGRESSED, EXIT_USAGE = 0, 1, 2

FORMATS = {
    "github-action-benchmark": export.to_github_action_benchmark,
    "bencher": export.to_bencher,
}


class _UsageError(Exception):
    """Bad command-line input; main() prints it as one line and exits 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see jaxperf {self._command()}--help)")

    def _command(self) -> str:
        words = self.prog.split()[1:]
        return "".join(f"{w} " for w in words)


def _seconds_or_ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="jaxperf",
        description="Inspect, compare and export pytest-jaxperf reports and baselines.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    show = commands.add_parser("show", help="print a report's table and per-function details")
    show.add_argument("report", type=Path, metavar="REPORT")
    show.set_defaults(run=_show)

    cmp = commands.add_parser(
        "compare",
        help="gate REPORT against BASELINE (exit 1 on a regression, 2 on bad input)",
        description="Apply the plugin's gating rules (without marker limits, which a report "
        "does not hold) to every test of REPORT that BASELINE knows.",
    )
    cmp.add_argument("baseline", type=Path, metavar="BASELINE")
    cmp.add_argument("report", type=Path, metavar="REPORT")
    cmp.add_argument(
        "--compile-rtol",
        type=_seconds_or_ratio,
        default=DEFAULT_COMPILE_RTOL,
        metavar="X",
        help=f"relative compile-time increase tolerated (default {DEFAULT_COMPILE_RTOL:g})",
    )
    cmp.add_argument(
        "--compile-floor",
        type=_seconds_or_ratio,
        default=DEFAULT_COMPILE_FLOOR,
        metavar="S",
        help=f"compile-time increases below S seconds never fail "
        f"(default {DEFAULT_COMPILE_FLOOR:g})",
    )
    for kind in ("compile", "runtime"):
        cmp.add_argument(
            f"--{kind}-clock",
            choices=CLOCKS,
            default="cpu",
            help=f"{kind} time gated on process CPU seconds (default) or wall seconds, as "
            f"--jaxperf-{kind}-clock",
        )
    cmp.set_defaults(run=_compare)

    exp = commands.add_parser("export", help="write a report's metrics for a benchmark service")
    exp.add_argument("--format", required=True, choices=sorted(FORMATS), dest="format")
    exp.add_argument("report", type=Path, metavar="REPORT")
    exp.add_argument("-o", "--output", type=Path, metavar="OUT", help="file (default: stdout)")
    exp.set_defaults(run=_export)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command; 0 ok, 1 a regression (compare), 2 bad input (one line on stderr)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        code: int = args.run(args, sys.stdout)
        return code
    except _UsageError as exc:
        return _fail(str(exc))
    except BaselineError as exc:
        return _fail(str(exc))
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else EXIT_OK


def _fail(message: str) -> int:
    print(f"jaxperf: {message}", file=sys.stderr)
    return EXIT_USAGE


def _load(path: Path) -> Report:
    report_ = load(path)
    if report_ is None:
        raise BaselineError(f"{path}: no such file")
    return report_


# -- show ------------------------------------------------------------------------------------


def _show(args: argparse.Namespace, out: TextIO) -> int:
    run = _load(args.report)
    env = ", ".join(f"{k} {v}" for k, v in sorted(run.environment.items()))
    print(f"{args.report}: {len(run.tests)} tests; {env or 'no environment recorded'}", file=out)
    for line in report.summary_lines(run.tests, {}):
        print(line, file=out)
    for nodeid, rec in sorted(run.tests.items()):
        print(f"\n{nodeid} ({rec.outcome})", file=out)
        for line in _details(rec).splitlines():
            print(f"  {line}", file=out)
    return EXIT_OK


def _details(rec: TestRecord) -> str:
    # detail_section shows what it can of odd `benchmarks` entries (they are free-form).
    return report.detail_section(rec, compare.Outcome())


# -- compare ---------------------------------------------------------------------------------


def _compare(args: argparse.Namespace, out: TextIO) -> int:
    base, run = _load(args.baseline), _load(args.report)
    tolerances = Tolerances(
        compile_rtol=args.compile_rtol,
        compile_floor=args.compile_floor,
        compile_clock=args.compile_clock,
        runtime_clock=args.runtime_clock,
    )
    outcomes = evaluate_all(base, run, tolerances)
    print(
        f"jaxperf: comparing {args.report} ({len(run.tests)} tests) "
        f"with {args.baseline} ({len(base.tests)} tests)",
        file=out,
    )
    summary = RunSummary.of(outcomes)
    for nodeid in summary.regressed:
        print(report.failure_text(nodeid, outcomes[nodeid], str(args.baseline)), file=out)
        if run.tests[nodeid].outcome != "passed":
            print(
                f"  note: the test's outcome in the report: {run.tests[nodeid].outcome}",
                file=out,
            )
    for nodeid in summary.gone:
        for fn in outcomes[nodeid].gone:
            print(report.gone_line(fn, nodeid), file=out)
    for nodeid in summary.improved:
        print(f"improved: {nodeid}: {'; '.join(outcomes[nodeid].improvements)}", file=out)
    for note, ids in summary.notes:
        print(f"note ({len(ids)} test{'s' if len(ids) != 1 else ''}): {note}", file=out)
    missing = len(set(base.tests) - set(run.tests))
    if missing:
        print(f"{missing} baseline tests are not in the report (not compared)", file=out)
    print(summary.tally(), file=out)
    return EXIT_REGRESSED if summary.regressed else EXIT_OK


def evaluate_all(base: Report, run: Report, tolerances: Tolerances) -> dict[str, compare.Outcome]:
    """The plugin's verdict for every test of `run` that passed or that the plugin failed
    ('regressed'), without marker limits; each entry against the baseline entry's own
    environment. A test that failed by itself recorded only part of its work, so it is not
    compared."""
    outcomes = {}
    for nodeid, rec in run.tests.items():
        if rec.outcome not in ("passed", "regressed"):
            continue
        before, now = base.environment_of(nodeid), run.environment_of(nodeid)
        outcomes[nodeid] = compare.evaluate(
            rec,
            base.tests.get(nodeid),
            MarkerLimits(),
            tolerances,
            timing_differences(before, now),
            static_differences=static_differences(before, now),
        )
    return outcomes


# -- export ----------------------------------------------------------------------------------


def _export(args: argparse.Namespace, out: TextIO) -> int:
    run = _load(args.report)
    text = json.dumps(FORMATS[args.format](run), indent=2, allow_nan=False) + "\n"
    if args.output is None:
        out.write(text)
        return EXIT_OK
    try:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise _UsageError(f"cannot write {args.output}: {exc}") from None
    return EXIT_OK
