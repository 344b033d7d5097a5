"""The `jaxperf ab` subcommand: its options, the measurement (base and head runs alternating,
round after round, the base commit in a temporary worktree), and its exit status:
0 no regression, 1 a regression, 2 a usage error (an unknown ref, unmerged paths, a bad
option or path, a run that failed or imported the wrong code) or an interruption."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from ..config import (
    DEFAULT_COMPILE_FLOOR,
    DEFAULT_INSTRUCTIONS_RTOL,
    DEFAULT_STATIC_RTOL,
    RuntimeClock,
    parse_number,
)
from ..model import RunRecord
from ..storage.outputs import (
    Mode,
    Output,
    OutputError,
    is_step_summary,
    problem,
    replace_text,
    same_file,
    write_text,
)
from . import configs, cpus, imports, render, runner, stats, table, worktree

EXIT_OK, EXIT_REGRESSED, EXIT_USAGE = 0, 1, 2

# Chosen by benchmarks/ab_power.py (the README has its tables): one round cannot see the spread
# between processes (nor read runtime on the CPU clock); two let it in, but unchanged code then
# raised a false alarm in 1 of 40 quiet runs (two head processes in a row 11% and 13% slower,
# on both clocks), three in none of 120 (quiet, a load beside the runs, a load on their CPU),
# and three caught as many slowdowns as five.
DEFAULT_ROUNDS = 3
DEFAULT_RUNTIME_THRESHOLD = 1.10
# Compile seconds of the same program vary far more than a steady state (the plugin's README:
# up to 1.65x against a quiet baseline on the CPU clock); the traps this is for compile 2-10x.
DEFAULT_COMPILE_THRESHOLD = 1.5
# Instructions per call, as the plugin gates them against a baseline (instructions_rtol).
INSTRUCTIONS_THRESHOLD = 1 + DEFAULT_INSTRUCTIONS_RTOL


class UsageError(Exception):
    """Bad input to `jaxperf ab`; shown as one line, exit status 2."""


def _rounds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _threshold(text: str) -> float:
    value = parse_number(text, 1)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected a ratio >= 1 such as 1.1, got {text!r}")
    return value


def _cpus(text: str) -> frozenset[int]:
    try:
        return cpus.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _rtol(text: str) -> float:
    value = parse_number(text, 0)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    """Register `ab` with the `jaxperf` command's subcommands."""
    ab = commands.add_parser(
        "ab",
        help="measure the working tree against a base commit on this machine, alternating "
        "fresh pytest runs (exit 1 on a regression, 2 on bad input)",
        description="Check out --base into a temporary git worktree and run the recorded tests "
        "of both trees alternately (base, head, base, head, ...), each run a fresh pytest "
        "process with --jaxperf. Counts and program metrics are compared exactly; compile "
        "time and steady-state runtime as head/base ratios with confidence intervals from the "
        "paired rounds. Run it where you would run pytest; pytest arguments go after --.",
    )
    _add_run_options(ab)
    _add_thresholds(ab)
    _add_where_options(ab)
    ab.set_defaults(run=run)


def _add_run_options(ab: argparse.ArgumentParser) -> None:
    """What is compared and how often: the base commit, the rounds, the runtime clock."""
    ab.add_argument(
        "--base",
        required=True,
        metavar="REF",
        help="the commit to compare with: a branch, tag, sha, origin/main, HEAD~1",
    )
    ab.add_argument(
        "--rounds",
        type=_rounds,
        default=None,
        metavar="N",
        help=f"base/head alternations, one pytest run of each tree per round (default "
        f"{DEFAULT_ROUNDS}; 1 with --runtime-clock instructions); seconds measured in one "
        "round are shown, not judged",
    )
    ab.add_argument(
        "--runtime-clock",
        choices=("seconds", "instructions"),
        default="seconds",
        help="seconds (default: CPU seconds per call where the runs are confined to one CPU, "
        "else wall) or instructions: every run under valgrind, counting instructions per call "
        "(needs valgrind and pytest-jaxperf[instructions]; one round is exact)",
    )


def _add_thresholds(ab: argparse.ArgumentParser) -> None:
    """When a ratio fails: runtime, compile time, program metrics."""
    ab.add_argument(
        "--runtime-threshold",
        type=_threshold,
        default=None,
        metavar="X",
        help="a steady-state slowdown fails when its whole confidence interval lies above X "
        f"(default {DEFAULT_RUNTIME_THRESHOLD:g}; {INSTRUCTIONS_THRESHOLD:g} for instructions "
        "per call, whose ratio is exact)",
    )
    ab.add_argument(
        "--compile-threshold",
        type=_threshold,
        default=DEFAULT_COMPILE_THRESHOLD,
        metavar="X",
        help="a test's compile time fails when its whole interval lies above X and it grew "
        f"by more than {DEFAULT_COMPILE_FLOOR:g} s (default {DEFAULT_COMPILE_THRESHOLD:g})",
    )
    ab.add_argument(
        "--static-rtol",
        type=_rtol,
        default=DEFAULT_STATIC_RTOL,
        metavar="X",
        help=f"relative growth of program metrics tolerated (default {DEFAULT_STATIC_RTOL:g})",
    )


def _add_where_options(ab: argparse.ArgumentParser) -> None:
    """Where the runs import from and run, what they write, and pytest's own arguments."""
    ab.add_argument(
        "--path",
        action="append",
        metavar="DIR",
        help="directory (relative to where you run) put first on sys.path in each tree's runs; "
        "repeat for several (default: . and src/ where it exists)",
    )
    ab.add_argument(
        "--cpus",
        type=_cpus,
        metavar="LIST",
        help="confine every base and head run to these CPUs (Linux; taskset -c syntax: 1, "
        "0-3, 0,2), or 'all' not to confine them (default: one CPU, the highest this "
        "process may use that no other jaxperf ab holds: XLA's CPU code then runs alike in "
        "every process)",
    )
    ab.add_argument(
        "--markdown",
        type=Path,
        metavar="PATH",
        help="write a markdown summary; appended to when PATH is $GITHUB_STEP_SUMMARY",
    )
    ab.add_argument("--json", type=Path, metavar="PATH", help="write the comparison as JSON")
    ab.add_argument(
        "--reports-dir",
        type=Path,
        metavar="DIR",
        help="keep each run's jaxperf report here (base-1.json, head-1.json, ...)",
    )
    ab.add_argument(
        "pytest_args",
        nargs="*",
        metavar="-- PYTEST_ARGS",
        help="passed to every pytest run, e.g. -- -k train tests/perf",
    )


def run(args: argparse.Namespace, out: TextIO) -> int:
    """`jaxperf ab`; errors are one line on stderr and exit status 2."""
    try:
        with _sigterm_as_interrupt(), contextlib.ExitStack() as held:
            return _measure(args, out, held)
    except KeyboardInterrupt:
        print("jaxperf ab: interrupted; the base worktree was removed", file=sys.stderr)
        return EXIT_USAGE
    except (UsageError, worktree.GitError, runner.RunError, OutputError) as exc:
        print(f"jaxperf ab: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (OSError, subprocess.SubprocessError) as exc:
        # An unwritable TMPDIR, a full disk, a run that could not be started or confined.
        print(f"jaxperf ab: {exc}; nothing was compared", file=sys.stderr)
        return EXIT_USAGE


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a cancelled CI job, `kill`) unwinds like Ctrl-C, so the worktree is removed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _outputs(args: argparse.Namespace) -> None:
    """Refuse, before anything runs, a --json, --markdown or --reports-dir that cannot be
    written."""
    files: list[Output] = []
    if args.json is not None:
        files.append(Output("--json", args.json.resolve(), "replace"))
    if args.markdown is not None:
        mode: Mode = "append" if is_step_summary(args.markdown) else "write"
        files.append(Output("--markdown", args.markdown.resolve(), mode))
    for out in files:
        found = problem(out)
        if found:
            raise UsageError(found)
    clash = same_file(files)
    if clash:
        raise UsageError(clash)
    reports = args.reports_dir
    if reports is not None and reports.exists() and not reports.is_dir():
        raise UsageError(f"--reports-dir {reports}: is a file; pass a directory")


def _confinement(
    given: frozenset[int] | None, held: contextlib.ExitStack, out: TextIO
) -> frozenset[int] | None:
    """The CPUs the runs are confined to (None: not confined), from --cpus (None: not given,
    the default CPU is claimed for as long as `held` is open)."""
    allowed = cpus.available()
    if given is None:
        if not allowed:
            return None
        claim = held.enter_context(cpus.claimed(allowed))
        if claim.uncoordinated:
            print(
                f"jaxperf ab: {claim.uncoordinated}; the runs take CPU "
                f"{cpus.label(claim.cpus)} without knowing whether another jaxperf ab uses "
                "it (pass --cpus to choose)",
                file=out,
                flush=True,
            )
        if claim.shared:
            print(
                f"jaxperf ab: every CPU this may use ({cpus.label(allowed)}) is in use by "
                f"another jaxperf ab; the runs share CPU {cpus.label(claim.cpus)} with one "
                "(pass --cpus to choose)",
                file=out,
                flush=True,
            )
        return claim.cpus
    if given == cpus.ALL:
        return None
    found = cpus.problem(given, allowed)
    if found:
        raise UsageError(found)
    return given


def _search_paths(project: Path, given: Sequence[str] | None, side: str) -> tuple[Path, ...]:
    """The --path directories inside one tree (`project` is where its runs run)."""
    if not given:
        src = project / "src"
        return (project, src) if src.is_dir() else (project,)
    paths = []
    for text in given:
        if Path(text).is_absolute():
            raise UsageError(
                f"--path {text}: must be relative to where you run jaxperf ab, so that it "
                "names a directory in each tree"
            )
        path = (project / text).resolve()
        if not path.is_dir():
            raise UsageError(f"--path {text}: no such directory in the {side} tree ({path})")
        paths.append(path)
    return tuple(paths)


def _tree(side: str, root: Path, project: Path, given: Sequence[str] | None) -> runner.Tree:
    paths = _search_paths(project, given, side)
    packages = imports.find_packages(paths)
    if not packages:
        shown = ", ".join(str(p) for p in paths)
        raise UsageError(
            f"no Python package (a directory with __init__.py, or a module) in the {side} "
            f"tree's --path ({shown}); pass --path with the directory that holds the package "
            "your tests import (src-layout: --path src)"
        )
    return runner.Tree(side, root, project, paths, tuple(packages))


def _clock_arguments(args: argparse.Namespace) -> list[str]:
    """Resolve --rounds and --runtime-threshold for the clock; the pytest arguments every run
    gets for it (the instructions clock is checked here, before any run)."""
    counting = args.runtime_clock == "instructions"
    if args.rounds is None:
        args.rounds = 1 if counting else DEFAULT_ROUNDS
    if args.runtime_threshold is None:
        args.runtime_threshold = INSTRUCTIONS_THRESHOLD if counting else DEFAULT_RUNTIME_THRESHOLD
    if not counting:
        return []
    import os

    from ..measure import instructions

    found = instructions.startup_problem(
        os.environ.get("JAX_PLATFORMS"), None, flag="--runtime-clock instructions"
    )
    if found is not None:
        raise UsageError(found)
    return ["--jaxperf-runtime-clock=instructions"]


def _base_tree(
    args: argparse.Namespace,
    base_root: Path,
    relative: Path,
    base_commit: str,
    head_tree: runner.Tree,
    root: Path,
    out: TextIO,
) -> runner.Tree:
    """The base commit's tree, checked out at `base_root`: refused where the project's
    directory or its configuration outside it differs in a way the runs cannot compare."""
    base_project = base_root / relative
    if not base_project.is_dir():
        raise UsageError(
            f"{relative} does not exist in the base commit {base_commit[:10]} "
            f"({args.base}); run jaxperf ab from a directory both commits have"
        )
    base_tree = _tree("base", base_root, base_project, args.path)
    outside = configs.mismatch((base_project, base_root), (head_tree.project, root))
    if outside is not None:
        raise UsageError(outside)
    if (base_root / ".gitmodules").is_file():
        print(
            "jaxperf ab: note: git submodules are not checked out in the base worktree "
            "(their directories are empty there): an import of a submodule's code fails "
            "in the base runs, or is stopped by the import check",
            file=out,
            flush=True,
        )
    print(
        f"jaxperf ab: base {base_commit[:10]} ({args.base}) checked out in "
        f"{base_root}; {args.rounds} round(s) of base and head runs",
        file=out,
        flush=True,
    )
    return base_tree


def _alternated(
    args: argparse.Namespace,
    base_tree: runner.Tree,
    head_tree: runner.Tree,
    scratch: Path,
    clock_args: list[str],
    on_cpus: frozenset[int] | None,
    out: TextIO,
) -> tuple[list[tuple[RunRecord, RunRecord]], list[render.RunTime]]:
    """The alternated rounds: in each, a base run, then a head run; their records and times."""
    rounds: list[tuple[RunRecord, RunRecord]] = []
    runs: list[render.RunTime] = []
    for number in range(1, args.rounds + 1):
        pair = []
        for tree, other in ((base_tree, head_tree), (head_tree, base_tree)):
            done = runner.run(
                tree, other, number, scratch, [*clock_args, *args.pytest_args], on_cpus
            )
            runs.append(render.RunTime(done.side, number, done.seconds))
            pair.append(done)
            _keep(done, args.reports_dir)
        rounds.append((pair[0].record, pair[1].record))
        print(
            f"jaxperf ab: round {number}/{args.rounds}: base {pair[0].seconds:.1f} s, "
            f"head {pair[1].seconds:.1f} s",
            file=out,
            flush=True,
        )
        if number == 1 and not (pair[0].record.tests or pair[1].record.tests):
            raise UsageError(
                "no test was recorded in either tree: mark tests with "
                "@pytest.mark.jaxperf or use the jaxperf fixture, or record all with "
                "-- --jaxperf-all"
            )
    return rounds, runs


def _measure(args: argparse.Namespace, out: TextIO, held: contextlib.ExitStack) -> int:
    started = time.perf_counter()
    clock_args = _clock_arguments(args)
    _outputs(args)
    on_cpus = _confinement(args.cpus, held, out)
    cwd = Path.cwd().resolve()
    root = worktree.repository(cwd)
    checkout = worktree.head(root)
    base_commit = worktree.resolve(args.base, root)
    relative = cwd.relative_to(root)
    thresholds = table.Thresholds(
        runtime=args.runtime_threshold,
        compile=args.compile_threshold,
        compile_floor=DEFAULT_COMPILE_FLOOR,
        static_rtol=args.static_rtol,
    )
    head_tree = _tree("head", root, cwd, args.path)
    swept = worktree.sweep(root)
    if swept:
        print(
            f"jaxperf ab: removed what {len(swept)} killed jaxperf ab command(s) left behind: "
            + ", ".join(map(str, swept)),
            file=out,
            flush=True,
        )
    scratch = held.enter_context(worktree.scratch_dir())
    if scratch == root or root in scratch.parents:
        raise UsageError(
            f"the temporary directory {scratch} lies inside the repository; set TMPDIR "
            "to a directory outside it"
        )
    with worktree.base_worktree(root, base_commit, scratch) as base_root:
        base_tree = _base_tree(args, base_root, relative, base_commit, head_tree, root, out)
        rounds, runs = _alternated(args, base_tree, head_tree, scratch, clock_args, on_cpus, out)
    clock: RuntimeClock = (
        "instructions" if clock_args else table.runtime_clock(on_cpus, args.rounds)
    )
    comparison = table.compare_rounds(rounds, thresholds, stats.CONFIDENCE, clock)
    context = render.Context(
        base_ref=args.base,
        base_commit=base_commit,
        head_commit=checkout.commit,
        head_changed=checkout.changed,
        project=str(relative),
        rounds=args.rounds,
        thresholds=thresholds,
        confidence=stats.CONFIDENCE,
        pytest_args=tuple(args.pytest_args),
        cpus=on_cpus,
        runs=tuple(runs),
        seconds=time.perf_counter() - started,
        runtime_clock=clock,
    )
    show(out, render.terminal_lines(comparison, context))
    _write(args, comparison, context)
    return EXIT_REGRESSED if comparison.regressions else EXIT_OK


def show(out: TextIO, lines: list[tuple[str, dict[str, bool]]]) -> None:
    """Lines with their markup on `out` through pytest's TerminalWriter, which colours them
    where pytest would: on a terminal, or with PY_COLORS=1 or FORCE_COLOR; not with NO_COLOR."""
    from _pytest._io import TerminalWriter

    tw = TerminalWriter(out)
    for text, marks in lines:
        tw.line(text, **marks)


def _keep(done: runner.Run, reports_dir: Path | None) -> None:
    if reports_dir is None:
        return
    try:
        reports_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(done.json_path, reports_dir / done.json_path.name)
    except OSError as exc:
        raise OutputError(f"--reports-dir {reports_dir}: cannot write: {exc}") from None


def _write(args: argparse.Namespace, comparison: table.Comparison, ctx: render.Context) -> None:
    try:
        if args.json is not None:
            replace_text(args.json, render.json_text(comparison, ctx))
        if args.markdown is not None:
            write_text(
                args.markdown,
                render.markdown(comparison, ctx),
                append=is_step_summary(args.markdown),
            )
    except OSError as exc:
        raise OutputError(f"cannot write {exc.filename}: {exc.strerror}") from None
