"""The `jaxperf` command: show a report, compare it with a baseline, export it (no jax needed);
`jaxperf ab` lives in the `ab` package."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TextIO

from . import compare, inifile
from .config import (
    CHOICES,
    EXPORT_FORMATS,
    OPTIONS,
    ConfigError,
    MarkerLimits,
    Settings,
    TimingMode,
    Tolerances,
    parse_number,
)
from .environment import HOOKED_KEY, timing_off
from .model import NotStored, RecordedTest, Remeasured, RunRecord
from .report import terminal, wording
from .report.summary import RunSummary, not_gated_lines, upgrade_line
from .storage.outputs import (
    Mode,
    Output,
    OutputError,
    is_step_summary,
    problem,
    resolved,
    write_text,
)
from .storage.shards import Shard, check_disjoint, combine, load_shards, resave_lines, resave_shards
from .storage.store import BaselineError, collector_paused, load

EXIT_OK, EXIT_REGRESSED, EXIT_USAGE = 0, 1, 2


class _UsageError(Exception):
    """Bad command-line input; main() prints it as one line and exits 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see jaxperf {self._command()}--help)")

    def _command(self) -> str:
        words = self.prog.split()[1:]
        return "".join(f"{w} " for w in words)


def _seconds_or_ratio(text: str) -> float:
    value = parse_number(text, 0)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


# The plugin's options that decide a verdict; `jaxperf compare` takes each as --NAME (the
# plugin's --jaxperf-NAME) and resolves them as a run does: flag > ini file > default.
GATING_OPTIONS = (
    "jaxperf_compile_rtol",
    "jaxperf_compile_floor",
    "jaxperf_runtime_rtol",
    "jaxperf_static_rtol",
    "jaxperf_timing",
    "jaxperf_compile_clock",
    "jaxperf_runtime_clock",
    "jaxperf_instructions_rtol",
    "jaxperf_cross_machine_compile_rtol",
    "jaxperf_strict",
)


def _add_settings_arguments(parser: argparse.ArgumentParser) -> None:
    """The gating flags and the ini file's location, as `pytest --jaxperf` takes them."""
    for opt in OPTIONS:
        if opt.dest in GATING_OPTIONS:
            _add_gating_option(parser, opt.dest, opt.flag, opt.kind, opt.help)
    parser.add_argument(
        "--rootdir",
        metavar="DIR",
        help="read the jaxperf_* options of the ini file that pytest --rootdir=DIR DIR would "
        "read (found from DIR)",
    )
    parser.add_argument(
        "-c",
        "--config-file",
        metavar="FILE",
        help="read the jaxperf_* options of this ini file, as pytest -c FILE would "
        "(default: the ini file pytest finds from the current directory)",
    )


def _add_gating_option(
    parser: argparse.ArgumentParser, dest: str, flag: str, kind: str, text: str
) -> None:
    name = flag.replace("--jaxperf-", "--")
    if kind == "float":
        metavar = "S" if dest.endswith("floor") else "X"
        parser.add_argument(
            name, dest=dest, type=_seconds_or_ratio, metavar=metavar, help=f"as {flag}: {text}"
        )
    elif kind == "codes":
        parser.add_argument(name, dest=dest, metavar="CODE,...", help=f"as {flag}: {text}")
    else:
        choices = CHOICES[kind]
        parser.add_argument(name, dest=dest, choices=choices, help=f"as {flag}: {text}")


# The commands whose parser and run need nothing of `jaxperf ab` (whose modules cost more to
# import than a big comparison takes otherwise): the `ab` parser is added only for the others.
_WITHOUT_AB = frozenset({"show", "compare", "merge", "resolve", "export"})


def build_parser(ab: bool = True) -> argparse.ArgumentParser:
    """The `jaxperf` command's parser; with the `ab` subcommand unless `ab` is False."""
    parser = _Parser(
        prog="jaxperf",
        description="Inspect, compare and export pytest-jaxperf reports and baselines.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _add_show(commands)
    _add_compare(commands)
    _add_merge(commands)
    _add_resolve(commands)
    _add_export(commands)
    if ab:
        from .ab import command as ab_command

        ab_command.add_parser(commands)
    return parser


def _add_show(commands: argparse._SubParsersAction[Any]) -> None:
    """`jaxperf show REPORT`."""
    show = commands.add_parser("show", help="print a report's table and per-function details")
    show.add_argument("report", type=Path, metavar="REPORT")
    show.set_defaults(run=_show)


def _add_compare(commands: argparse._SubParsersAction[Any]) -> None:
    """`jaxperf compare BASELINE REPORT...` with the gate's settings."""
    cmp = commands.add_parser(
        "compare",
        help="gate REPORT against BASELINE (exit 1 on a regression, 2 on bad input)",
        description="Give every test of REPORT the verdict the plugin gives it against "
        "BASELINE: the same rules, the same settings (these flags over the ini file's "
        "jaxperf_* options over the defaults, as pytest --jaxperf resolves them), and each "
        "test's @pytest.mark.jaxperf keywords as saved in REPORT. Several REPORTs (one per "
        "shard of a suite split across jobs) are gated as one run; a test in two is an error.",
    )
    cmp.add_argument("baseline", type=Path, metavar="BASELINE")
    cmp.add_argument("reports", type=Path, nargs="+", metavar="REPORT")
    _add_settings_arguments(cmp)
    cmp.add_argument(
        "--markdown",
        type=Path,
        metavar="PATH",
        help="also write the verdicts as markdown, as pytest --jaxperf-markdown does; appended "
        "to when PATH is $GITHUB_STEP_SUMMARY",
    )
    cmp.set_defaults(run=_compare)


def _add_merge(commands: argparse._SubParsersAction[Any]) -> None:
    """`jaxperf merge SHARD... -o OUT` with the save's settings."""
    mrg = commands.add_parser(
        "merge",
        help="merge the reports of a suite's shards into a baseline (exit 2 on bad input)",
        description="Merge the passed tests of each shard's report (pytest --jaxperf "
        "--jaxperf-json) into the baseline OUT, as pytest --jaxperf-save merges a run's, "
        "with the same settings (these flags over the ini file's jaxperf_* options): a value "
        "a shard did not measure (timings under pytest-xdist, say) or measured within its "
        "tolerance keeps the stored one, entries of OUT that no shard passed are kept, each "
        "entry keeps the environment it was measured in, and OUT is written atomically under "
        "its lock. A test in two reports is an error, and nothing is written.",
    )
    mrg.add_argument("shards", type=Path, nargs="*", metavar="SHARD")
    mrg.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        metavar="OUT",
        help="the baseline to merge into (created when missing), e.g. .jaxperf/baseline.json",
    )
    _add_settings_arguments(mrg)
    mrg.set_defaults(run=_merge)


def _add_resolve(commands: argparse._SubParsersAction[Any]) -> None:
    """`jaxperf resolve BASELINE`."""
    res = commands.add_parser(
        "resolve",
        help="resolve a baseline's git merge conflict, per test (exit 2 on bad input)",
        description="Resolve BASELINE as git left it after a conflicted merge, rebase or "
        "cherry-pick: each side is read whole from git's index (stages 2 and 3; the "
        "<<<<<<< ======= >>>>>>> text only where the index has none), and every test of "
        "either side is kept; a test whose entries differ takes one side's entry whole: the "
        "side whose gated values changed against the common ancestor, else the side that "
        "changed anything, else (gated values changed on both) the side whose commit is "
        "newer (committer date), or the side --keep names. Each entry keeps the environment "
        "it was measured in; each test's choice is said. Then `git add BASELINE` and "
        "conclude the merge.",
    )
    res.add_argument("baseline", type=Path, metavar="BASELINE")
    res.add_argument(
        "--keep",
        choices=("newer", "ours", "theirs"),
        default="newer",
        help="which side's entry a test in conflict takes (default: the newer commit's)",
    )
    res.set_defaults(run=_resolve)


def _add_export(commands: argparse._SubParsersAction[Any]) -> None:
    """`jaxperf export --format FORMAT REPORT`."""
    exp = commands.add_parser("export", help="write a report's metrics for a benchmark service")
    exp.add_argument("--format", required=True, choices=sorted(EXPORT_FORMATS), dest="format")
    exp.add_argument("report", type=Path, metavar="REPORT")
    exp.add_argument("-o", "--output", type=Path, metavar="OUT", help="file (default: stdout)")
    exp.set_defaults(run=_export)


def main(argv: list[str] | None = None) -> int:
    """Run the command; 0 ok, 1 a regression (compare), 2 bad input (one line on stderr)."""
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(ab=not words or words[0] not in _WITHOUT_AB)
    for stream in (sys.stdout, sys.stderr):
        # A test id or label may hold what the terminal's encoding cannot (a lone surrogate):
        # shown escaped rather than ending the command in a traceback.
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    try:
        args = parser.parse_args(argv)
        # The command's data are reports, up to millions of objects in no cycle: with the
        # collector on, each collection the comparison sets off walks them all, for nothing.
        with collector_paused():
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


def _load(path: Path) -> RunRecord:
    run = load(path)
    if run is None:
        raise BaselineError(f"{path}: no such file")
    return run


# -- show ------------------------------------------------------------------------------------


def _show(args: argparse.Namespace, out: TextIO) -> int:
    run = _load(args.report)
    env = ", ".join(f"{k} {v}" for k, v in sorted(run.environment.items()))
    print(f"{args.report}: {len(run.tests)} tests; {env or 'no environment recorded'}", file=out)
    for line in terminal.summary_lines(run.tests, {}):
        print(line, file=out)
    for nodeid, rec in sorted(run.tests.items()):
        print(f"\n{nodeid} ({rec.outcome})", file=out)
        for line in _details(rec).splitlines():
            print(f"  {line}", file=out)
    return EXIT_OK


def _details(rec: RecordedTest) -> str:
    # detail_section shows what it can of odd `benchmarks` entries (they are free-form).
    return terminal.detail_section(rec, compare.Verdict())


# -- compare ---------------------------------------------------------------------------------


def _settings(args: argparse.Namespace) -> tuple[Settings, Path | None]:
    """The settings a `pytest --jaxperf` run would resolve with these flags, and the ini file
    they were read from (None without one)."""
    flags = {dest: getattr(args, dest, None) for dest in GATING_OPTIONS}
    rootdir = None if args.rootdir is None else Path(args.rootdir)
    config_file = None if args.config_file is None else Path(args.config_file)
    try:
        return inifile.resolve(flags, config_file, rootdir)
    except ConfigError as exc:
        raise _UsageError(str(exc)) from None


def _compare(args: argparse.Namespace, out: TextIO) -> int:
    base = _load(args.baseline)
    runs = [Shard(path, _load(path)) for path in args.reports]
    check_disjoint(runs)
    if args.markdown is not None:
        _check_markdown(args)
    settings, inifile = _settings(args)
    verdicts, tests = _judge_shards(base, runs, settings)
    _print_header(args, runs, tests, base, _settings_line(settings, inifile), out)
    summary = RunSummary.of(verdicts)
    _print_verdicts(summary, verdicts, tests, str(args.baseline), out)
    failed_run = _print_coverage(base, tests, len(runs), settings, out)
    print(summary.tally(), file=out)
    if args.markdown is not None:
        from .report.markdown import shown_path

        # Named as a run names it: relative to the rootdir pytest would take (--rootdir, else
        # the ini file's folder, else here), so that the shards' summary equals a serial one.
        root = Path(args.rootdir) if args.rootdir else inifile.parent if inifile else Path.cwd()
        shown = shown_path(resolved(args.baseline), resolved(root))
        _write_markdown(args.markdown, combine(runs), verdicts, shown, base)
    return EXIT_REGRESSED if summary.regressed or failed_run else EXIT_OK


def _judge_shards(
    base: RunRecord, runs: list[Shard], settings: Settings
) -> tuple[dict[str, compare.Verdict], dict[str, RecordedTest]]:
    """Every report's verdicts against the baseline, and the tests they hold."""
    verdicts: dict[str, compare.Verdict] = {}
    tests: dict[str, RecordedTest] = {}
    # Shard by shard: a test's verdict needs its own entry and environment only, and a bad
    # marker keyword is then named with the report it came from.
    for shard in runs:
        try:
            verdicts |= evaluate_all(
                base, shard.run, settings.tolerances, settings.timing_mode, settings.strict
            )
        except ConfigError as exc:  # a marker keyword saved in the report
            raise _UsageError(f"{shard.path}: {exc}") from None
        tests |= shard.run.tests
    return verdicts, tests


def _print_header(
    args: argparse.Namespace,
    runs: list[Shard],
    tests: dict[str, RecordedTest],
    base: RunRecord,
    settings_line: str,
    out: TextIO,
) -> None:
    """What is compared with what, under which settings, and which reports used hooks."""
    if len(runs) == 1:
        compared = f"{runs[0].path} ({len(tests)} tests)"
    else:
        compared = (
            f"{len(runs)} reports ({', '.join(str(s.path) for s in runs)}: {len(tests)} tests)"
        )
    print(f"jaxperf: comparing {compared} with {args.baseline} ({len(base.tests)} tests)", file=out)
    print(f"jaxperf: {settings_line}", file=out)
    for shard in runs:
        hooks = shard.run.environment.get(HOOKED_KEY)
        if hooks:
            print(
                f"jaxperf: {shard.path} was gated with pytest_jaxperf_compatible hooks "
                f"({', '.join(map(str, hooks))}); this command judges by the built-in rules, so "
                "where a hook decided whether two environments gate a metric, its verdict may "
                "differ from the plugin's",
                file=out,
            )


def _print_verdicts(
    summary: RunSummary,
    verdicts: dict[str, compare.Verdict],
    tests: dict[str, RecordedTest],
    baseline: str,
    out: TextIO,
) -> None:
    """The regressions, vanished functions, improvements and not-gated notes, in that order."""
    for nodeid in summary.regressed:
        print(terminal.failure_text(nodeid, verdicts[nodeid], baseline), file=out)
        if tests[nodeid].outcome != "passed":
            print(f"  note: the test's outcome in the report: {tests[nodeid].outcome}", file=out)
    for nodeid in summary.gone:
        for fn in verdicts[nodeid].gone:
            print(wording.gone_line(fn, nodeid), file=out)
    for nodeid in summary.improved:
        print(f"improved: {nodeid}: {'; '.join(verdicts[nodeid].improvements)}", file=out)
    for nodeid, verdict in sorted(verdicts.items()):
        if not verdict.failed:  # as the plugin's run says them: a failure said it already
            for line in wording.diagnosis_lines(verdict, nodeid):
                print(line, file=out)
    for line in not_gated_lines(summary.notes):
        print(line, file=out)
    upgraded = upgrade_line(verdicts)
    if upgraded is not None:
        print(upgraded, file=out)


def _print_coverage(
    base: RunRecord, tests: dict[str, RecordedTest], reports: int, settings: Settings, out: TextIO
) -> bool:
    """Say which baseline tests were not compared, or that none were; True if --strict fails it."""
    missing = len(set(base.tests) - set(tests))
    found = []
    if missing:
        where = "the report" if reports == 1 else "any report"
        found.append(("not_run", f"{missing} baseline tests are not in {where} (not compared)"))
    if tests and not any(nodeid in base.tests for nodeid in tests):
        found.append(("no_baseline", f"the baseline has none of the {len(tests)} tests compared"))
    for code, line in found:
        strict = " (failed by --strict)" if code in settings.strict else ""
        print(f"{line} [{code}]{strict}", file=out)
    return any(code in settings.strict for code, _ in found)


def _check_markdown(args: argparse.Namespace) -> None:
    """Refuse, before comparing, a --markdown that cannot be written or that is one of the
    files read (writing it would destroy a report or the baseline)."""
    mode: Mode = "append" if is_step_summary(args.markdown) else "write"
    markdown = Output("--markdown", args.markdown, mode)
    found = problem(markdown)
    if found is not None:
        raise _UsageError(found)
    written = resolved(args.markdown)
    for name, path in [("BASELINE", args.baseline)] + [("REPORT", p) for p in args.reports]:
        if resolved(path) == written:
            raise _UsageError(
                f"--markdown {args.markdown}: is the {name} compared, which it would overwrite; "
                "pass another path"
            )


def _write_markdown(
    path: Path,
    run: RunRecord,
    verdicts: dict[str, compare.Verdict],
    baseline: str,
    base: RunRecord | None = None,
) -> None:
    from .report.markdown import render_markdown

    text = render_markdown(run, verdicts, baseline, baseline=base)
    try:
        write_text(path, text, append=is_step_summary(path))
    except OSError as exc:  # the disk filled up, say
        raise _UsageError(f"--markdown {path} not written: {exc.strerror or exc}") from None


def _settings_line(settings: Settings, inifile: Path | None) -> str:
    tol = settings.tolerances
    compile_gate = (
        f"compile instructions per phase, rtol {tol.instructions_rtol:g}"
        if tol.compile_clock == "instructions"
        else f"compile rtol {tol.compile_rtol:g}, floor {tol.compile_floor:g} s "
        f"({tol.compile_clock} seconds)"
    )
    return (
        f"{compile_gate}; runtime rtol {tol.runtime_rtol:g} "
        f"({tol.runtime_clock} clock, timing {settings.timing_mode}); static rtol "
        f"{tol.static_rtol:g}; "
        + (f"ini file {inifile}" if inifile is not None else "no ini file sets a jaxperf option")
    )


def evaluate_all(
    base: RunRecord,
    run: RunRecord,
    tolerances: Tolerances,
    timing_mode: TimingMode = "gate",
    strict: frozenset[str] = frozenset(),
) -> dict[str, compare.Verdict]:
    """The plugin's verdict for every test of `run` that passed or that the plugin failed
    ('regressed'), with the marker keywords saved in its record, each entry against the
    baseline entry's own environment (`timing_mode` as the run's), a compile-time breach
    judged with the re-measurement the plugin wrote into the run file (`confirmation`). A
    test that failed by itself recorded only part of its work, so it is not compared. A bad
    saved keyword raises ConfigError."""
    from .confirmation import verdict_of

    verdicts = {}
    # The gating between the two files' own environments, which most entries were measured
    # in: worked out once (Gating.between would check the blocks are unchanged each time).
    usual = None
    for nodeid, rec in run.tests.items():
        if not rec.comparable:
            continue
        current, before = run.environment_of(nodeid), base.environment_of(nodeid)
        both_files = current is run.environment and before is base.environment
        if usual is not None and both_files:
            gating = usual
        else:
            gating = compare.Gating.between(
                before, current, tolerances,
                # A run made with --jaxperf-timing=off: no runtime of it gated, as the plugin
                # did.
                timing_mode="off" if timing_off(current) else timing_mode,
            )  # fmt: skip
            usual = gating if both_files else usual
        limits = MarkerLimits.from_json(rec.marker, f"test {nodeid}")
        verdicts[nodeid] = verdict_of(
            rec, base.tests.get(nodeid), limits, gating, _stored(rec), strict
        )
    return verdicts


def _stored(rec: RecordedTest) -> Callable[[Callable[[Remeasured], bool]], Remeasured | None]:
    """What the plugin re-measured for `rec`'s test, as `confirmation.verdict_of` asks it."""
    return lambda _holds: rec.confirmation


# -- merge -----------------------------------------------------------------------------------


def _merge(args: argparse.Namespace, out: TextIO) -> int:
    # Every input and the output checked before anything is written.
    runs = load_shards(args.shards)
    found = problem(Output("-o", args.output, "replace", locked=True))
    if found is not None:
        raise _UsageError(found)
    try:
        settings, _ = _settings(args)
        merged = resave_shards(args.output, runs, settings.tolerances, settings.timing_mode)
    except OutputError as exc:  # another run held the lock too long
        raise _UsageError(str(exc)) from None
    except OSError as exc:  # the disk filled up, say; the file is as it was (atomic write)
        raise _UsageError(f"{args.output} not written: {exc.strerror or exc}") from None
    for line in resave_lines(merged):
        print(line, file=out)
    return EXIT_OK


# -- resolve ---------------------------------------------------------------------------------


def _resolve(args: argparse.Namespace, out: TextIO) -> int:
    from .storage.resolve import resolve_file

    try:
        resolved = resolve_file(args.baseline, args.keep)
    except OSError as exc:  # the disk filled up, say; the file is as it was (atomic write)
        raise _UsageError(f"{args.baseline} not written: {exc.strerror or exc}") from None
    for line in resolved.lines(args.baseline):
        print(line, file=out)
    return EXIT_OK


# -- export ----------------------------------------------------------------------------------


def _export(args: argparse.Namespace, out: TextIO) -> int:
    from .report import export

    run = _load(args.report)
    try:
        text = export.dumps(export.document(args.format, run))
    except NotStored as exc:  # a baseline given: it keeps only what the gate reads
        raise _UsageError(f"{args.report}: {exc}") from None
    if args.output is None:
        out.write(text)
        return EXIT_OK
    try:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise _UsageError(f"cannot write {args.output}: {exc}") from None
    return EXIT_OK
