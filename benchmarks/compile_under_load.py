"""Do the compile-time and runtime verdicts move with the machine's load? (CPU vs wall clock)

Backs docs/methodology.md's rows for `compile_rtol`, `compile_floor` and the compile clock
("under load the CPU seconds of unchanged code stayed within 1.65x of a quiet baseline"),
`runtime_rtol` 0.75 ("0/40 false runtime failures and 29/40 runs with twice the work
caught") and the runtime clock; the table of docs/gating.md's "Measured under load".

Run: ``.venv/bin/python benchmarks/compile_under_load.py [--runs N] [--quick] [--workdir DIR]``
(default 10 runs per block, about 12-15 minutes on 2 CPU cores; ``--quick`` is a smoke check
of 2 runs on the integration and layer tests only, about 2 minutes).

1. Saves a baseline of the example project (``example_project/``) into the work directory,
   on a quiet machine: ``pytest --jaxperf --jaxperf-save --jaxperf-baseline=<work>/base.json``.
   The committed ``example_project/.jaxperf/baseline.json`` is never touched (checked).
2. Two blocks, "quiet" then "load". In each, ``--runs`` times: the clean suite, then the
   guarding test of each trap with the trap switched on (``JAXPERF_EXAMPLE_REGRESSION``):
   ``builtin_sum`` (``test_overlap_matches_closed_form``: compile time ~10x) and
   ``double_work`` (``test_first_call_vs_steady_state``: dense_relu steady state ~2x, counts
   unchanged), each with ``--jaxperf --jaxperf-json=<work>/<run>.json
   --jaxperf-baseline=<work>/base.json``. In the load block every run has one CPU hog per
   core beside it: a child Python process spinning in a loop, started before the run and
   stopped after it, each with a hard limit (a deadline, RLIMIT_CPU, and a parent-death
   signal on Linux) so that none outlives this script.
3. Every report is evaluated offline with ``pytest_jaxperf.compare.evaluate`` under both
   clocks (``compile_clock`` = ``runtime_clock`` = cpu, then wall), with the plugin's default
   tolerances (``--compile-rtol``, ``--compile-floor``, ``--runtime-rtol`` override them; the
   example's own ini tolerances, 3x and 4x, play no part) and no marker limits. A clean run
   with a gated compile-time breach is a false compile failure, one with a gated runtime
   breach a false runtime failure; count or program-metric breaches must never happen and
   are listed when they do. A trap run is caught when its guarding test's compile-time
   (``builtin_sum``) or runtime (``double_work``) verdict fails, whatever else fails.
4. Prints a table per condition and clock (false failures, trap catches, the 1-minute load
   average, other processes' CPU, median compile seconds of the runs vs the baseline), the
   growth of compile seconds under load vs quiet per clock (median, max: what a default
   ``compile_rtol`` must absorb), and the runtime ratios of the benchmarks and of the
   ``double_work`` trap vs the baseline (median, min round, CPU per call), from which any
   other ``runtime_rtol`` can be judged.

Nothing is asserted about the figures: they are printed. Only the standard library and the
plugin itself (importing neither pytest's runner nor jax here) are used.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from _common import (
    COMMITTED,
    EXAMPLE,
    PYTEST,
    add_quiet_wait,
    digest,
    example_env,
    finish,
    fmt,
    hogs,
    median,
    usage,
    wait_for_quiet,
)

from pytest_jaxperf import compare, config
from pytest_jaxperf.config import MarkerLimits, Tolerances
from pytest_jaxperf.model import BenchmarkEntry, Entry, RecordedTest, RunRecord
from pytest_jaxperf.storage import store

CLOCKS = ("cpu", "wall")
QUICK_SELECT = ("tests/test_integration.py", "tests/test_layer.py")


@dataclass(frozen=True)
class Trap:
    name: str  # the JAXPERF_EXAMPLE_REGRESSION value
    test: str  # the guarding test (node id under example_project)
    metric: str  # the verdict that must catch it: compare.COMPILE_TIME or compare.RUNTIME
    label: str | None = None  # the benchmark, for runtime


TRAPS = (
    Trap(
        "builtin_sum",
        "tests/test_integration.py::test_overlap_matches_closed_form",
        compare.COMPILE_TIME,
    ),
    Trap(
        "double_work",
        "tests/test_layer.py::test_first_call_vs_steady_state",
        compare.RUNTIME,
        "dense_relu",
    ),
)


# ----------------------------------------------------------------------------------------
# pytest runs
# ----------------------------------------------------------------------------------------
@dataclass
class Run:
    kind: str  # "clean" or a trap name
    condition: str  # "quiet" or "load"
    report: RunRecord
    wall: float
    cpu: float  # pytest's own CPU seconds
    others: float | None  # CPU seconds of other processes (not pytest, not our hogs)
    hogs_cpu: float
    load1: float  # 1-minute load average at the end of the run
    rc: int


def run_pytest(
    out: Path,
    select: tuple[str, ...],
    base: Path,
    condition: str,
    kind: str,
    n_hogs: int,
    hog_limit: int,
    save: bool = False,
) -> Run:
    cmd = [
        *PYTEST,
        "--jaxperf",
        f"--jaxperf-baseline={base}",
        *(["--jaxperf-save"] if save else [f"--jaxperf-json={out}"]),
        *select,
    ]
    regression = None if kind == "clean" else kind
    ctx = hogs(n_hogs, hog_limit) if condition == "load" else contextlib.nullcontext([])
    with ctx, usage() as used:  # the hogs are not reaped in the block
        proc = subprocess.run(
            cmd, cwd=EXAMPLE, env=example_env(regression), capture_output=True, text=True
        )
    # The hogs' whole lives (they spun a little before and after the run too).
    hogs_cpu = used.cpu_after()
    load1 = os.getloadavg()[0]
    wall = used.wall
    hogs_in_run = min(hogs_cpu, n_hogs * wall) if condition == "load" else 0.0
    others = used.others(hogs_in_run)
    text = proc.stdout + proc.stderr
    if proc.returncode not in (0, 1):
        sys.exit(f"pytest failed (rc={proc.returncode}): {' '.join(cmd)}\n{text[-4000:]}")
    report = store.load(base if save else out)
    if report is None:
        sys.exit(f"pytest wrote no report: {' '.join(cmd)}\n{text[-4000:]}")
    return Run(kind, condition, report, wall, used.cpu, others, hogs_in_run, load1, proc.returncode)


# ----------------------------------------------------------------------------------------
# Offline verdicts
# ----------------------------------------------------------------------------------------
@dataclass
class Verdicts:
    compile_fail: set[str] = field(default_factory=set)  # node ids
    runtime_fail: set[str] = field(default_factory=set)
    other_fail: list[str] = field(default_factory=list)  # "node: metric ..." lines
    notes: list[str] = field(default_factory=list)


def evaluate(run: RunRecord, base: RunRecord, tol: Tolerances) -> Verdicts:
    out = Verdicts()
    gating = compare.Gating.between(base.environment, run.environment, tol)
    timing = gating.timing_differences
    if timing:
        out.notes.append(f"timings not gated: environment differs ({', '.join(timing)})")
    for nodeid, rec in sorted(run.tests.items()):
        old = base.tests.get(nodeid)
        if old is None:
            out.notes.append(f"{nodeid}: not in the baseline")
            continue
        verdict = compare.evaluate(rec, old, MarkerLimits(), gating)
        for breach in verdict.breaches:
            if not breach.gated:
                continue
            if breach.metric == compare.COMPILE_TIME:
                out.compile_fail.add(nodeid)
            elif breach.metric == compare.RUNTIME:
                out.runtime_fail.add(f"{nodeid} [{breach.benchmark}]")
            else:
                what = f"{breach.metric}" + (f" of {breach.benchmark}" if breach.benchmark else "")
                fn = f" {breach.function.key}" if breach.function else ""
                out.other_fail.append(
                    f"{nodeid}: {what}{fn} {breach.reference:g} -> {breach.current:g}"
                )
    return out


def _compile_s(rec: RecordedTest, clock: str) -> float:
    return compare.compile_seconds(rec, clock)


def _runtime(entry: Entry | None, key: str) -> float | None:
    """A runtime statistic of a benchmark entry; None for a scaling entry or none measured."""
    runtime = entry.runtime if isinstance(entry, BenchmarkEntry) else None
    value = getattr(runtime, key) if runtime is not None else None
    return float(value) if value else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=None, help="runs per block (default 10)")
    ap.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke check: 2 runs (unless --runs), only {' '.join(QUICK_SELECT)}",
    )
    ap.add_argument("--workdir", type=Path, default=None, help="keep the reports here")
    ap.add_argument("--compile-rtol", type=float, default=config.DEFAULT_COMPILE_RTOL)
    ap.add_argument("--compile-floor", type=float, default=config.DEFAULT_COMPILE_FLOOR)
    ap.add_argument("--runtime-rtol", type=float, default=config.DEFAULT_RUNTIME_RTOL)
    ap.add_argument(
        "--hogs", type=int, default=os.cpu_count() or 1, help="CPU hogs (default: one per core)"
    )
    ap.add_argument(
        "--hog-limit",
        type=int,
        default=300,
        help="seconds a hog may live, wall and CPU (default 300; one run must fit)",
    )
    add_quiet_wait(ap, "each quiet run")
    ns = ap.parse_args(argv)
    runs = ns.runs if ns.runs is not None else (2 if ns.quick else 10)
    if runs < 1 or ns.hogs < 0 or ns.hog_limit < 1:
        ap.error("--runs and --hog-limit must be >= 1, --hogs >= 0")
    select = QUICK_SELECT if ns.quick else ()
    t_start = time.perf_counter()
    work = ns.workdir or Path(tempfile.mkdtemp(prefix="jaxperf-load-"))
    work.mkdir(parents=True, exist_ok=True)
    committed = digest(COMMITTED)
    tol = {
        clock: Tolerances(
            compile_rtol=ns.compile_rtol,
            compile_floor=ns.compile_floor,
            runtime_rtol=ns.runtime_rtol,
            compile_clock=clock,
            runtime_clock=clock,
        )
        for clock in CLOCKS
    }
    print(
        f"compile_under_load: python {sys.version.split()[0]}, {os.cpu_count()} CPUs; "
        f"{runs} run(s) per block; tests: {' '.join(select) or 'all of example_project'}; "
        f"{ns.hogs} hog(s) under load; compile_rtol {ns.compile_rtol:g}, compile_floor "
        f"{ns.compile_floor:g} s, runtime_rtol {ns.runtime_rtol:g}; reports in {work}"
    )

    wait_for_quiet(ns.quiet_wait)
    base_path = work / "base.json"
    base_path.unlink(missing_ok=True)
    b = run_pytest(base_path, select, base_path, "quiet", "clean", 0, ns.hog_limit, save=True)
    base = b.report
    bad = [k for k, r in base.tests.items() if r.outcome != "passed"]
    print(
        f"baseline: {len(base.tests)} tests in {b.wall:.1f} s (load1 {b.load1:.2f}, other "
        f"processes {fmt(b.others, '.1f')} CPU s)"
        + (f"; NOT SAVED (did not pass): {', '.join(bad)}" if bad else "")
    )
    missing = [t.test for t in TRAPS if t.test not in base.tests]
    if missing:
        sys.exit(f"the baseline lacks the traps' guarding tests: {', '.join(missing)}")

    results: dict[tuple[str, str], list[Run]] = {}
    waited = 0.0
    for condition in ("quiet", "load"):
        t_block = time.perf_counter()
        for i in range(runs):
            for kind, sel in (("clean", select), *((t.name, (t.test,)) for t in TRAPS)):
                if condition == "quiet":
                    waited += wait_for_quiet(ns.quiet_wait)
                out = work / f"{condition}_{kind}_{i}.json"
                run = run_pytest(out, sel, base_path, condition, kind, ns.hogs, ns.hog_limit)
                results.setdefault((condition, kind), []).append(run)
            last = [results[(condition, k)][-1] for k in ("clean", *(t.name for t in TRAPS))]
            print(
                f"  {condition} {i + 1}/{runs}: "
                + "  ".join(f"{r.kind} {r.wall:.1f}s" for r in last)
                + f"   load1 {last[-1].load1:.2f}, other processes' CPU s: "
                + " ".join(fmt(r.others, ".1f") for r in last),
                flush=True,
            )
        print(f"  {condition} block: {time.perf_counter() - t_block:.0f} s")
    if waited:
        print(f"  (waited {waited:.0f} s in all for other processes to go quiet)")

    # -- verdicts ------------------------------------------------------------------------
    print()
    print(
        f"{'condition':<10}{'clock':<6}{'runs':>5}{'false compile':>15}{'false runtime':>15}"
        f"{'counts/program':>16}{'builtin_sum':>13}{'double_work':>13}{'load1':>7}"
        f"{'others':>8}{'hog cores':>10}{'compile/base':>14}"
    )
    print(
        f"{'':<10}{'':<6}{'':>5}{'failures':>15}{'failures':>15}{'failures':>16}"
        f"{'by compile':>13}{'by runtime':>13}{'mean':>7}{'cores':>8}{'':>10}{'median':>14}"
    )
    other_lines: Counter[str] = Counter()
    flaky: dict[tuple[str, str], Counter[str]] = {}
    notes: set[str] = set()
    for condition in ("quiet", "load"):
        clean = results[(condition, "clean")]
        all_runs = [r for (c, _), rs in results.items() if c == condition for r in rs]
        load1 = statistics.mean(r.load1 for r in all_runs)
        others = [r.others / r.wall for r in all_runs if r.others is not None]
        hog_cores = statistics.mean(r.hogs_cpu / r.wall for r in all_runs)
        for clock in CLOCKS:
            n_compile = n_runtime = n_other = 0
            tally = flaky.setdefault((condition, clock), Counter())
            ratios = []
            for run in clean:
                v = evaluate(run.report, base, tol[clock])
                notes.update(v.notes)
                n_compile += bool(v.compile_fail)
                n_runtime += bool(v.runtime_fail)
                n_other += bool(v.other_fail)
                tally.update(f"compile  {t}" for t in v.compile_fail)
                tally.update(f"runtime  {t}" for t in v.runtime_fail)
                other_lines.update(f"{condition}/{clock}: {line}" for line in v.other_fail)
                now = sum(
                    _compile_s(r, clock) for k, r in run.report.tests.items() if k in base.tests
                )
                before = sum(
                    _compile_s(base.tests[k], clock) for k in run.report.tests if k in base.tests
                )
                if before:
                    ratios.append(now / before)
            catches = []
            for trap in TRAPS:
                caught = 0
                for run in results[(condition, trap.name)]:
                    v = evaluate(run.report, base, tol[clock])
                    if trap.metric == compare.COMPILE_TIME:
                        caught += trap.test in v.compile_fail
                    else:
                        caught += f"{trap.test} [{trap.label}]" in v.runtime_fail
                catches.append(f"{caught}/{runs}")
            print(
                f"{condition:<10}{clock:<6}{runs:>5}{f'{n_compile}/{runs}':>15}"
                f"{f'{n_runtime}/{runs}':>15}{f'{n_other}/{runs}':>16}{catches[0]:>13}"
                f"{catches[1]:>13}{load1:>7.2f}{fmt(median(others) if others else None):>8}"
                f"{hog_cores:>10.2f}{fmt(median(ratios), '.2f', 'x'):>14}"
            )
    print(
        "  (false failures: clean runs with at least one such gated breach; traps: runs whose "
        "guarding test's verdict failed; load1: 1-minute load average after each run, which "
        "counts runnable threads, pytest's and the hogs' included; 'others cores': CPU of "
        "processes that are neither pytest nor the hogs, per second of run; compile/base: the "
        "runs' total compile seconds on this row's clock over the baseline's)"
    )
    for note in sorted(notes):
        print(f"  note: {note}")
    if other_lines:
        print("COUNT OR PROGRAM-METRIC FAILURES IN CLEAN RUNS (must never happen):")
        for line, n in sorted(other_lines.items()):
            print(f"  {n}x {line}")
    else:
        print("count and program-metric verdicts: no failure in any clean run (as they must)")
    for (condition, clock), tally in flaky.items():
        for what, n in sorted(tally.items()):
            print(f"  false failure {condition}/{clock}: {n}/{runs} {what}")

    # -- compile growth --------------------------------------------------------------------
    print()
    print("compile seconds (trace + lower + backend) per test: baseline, quiet and load medians")
    print(
        f"{'test':<64}{'base cpu':>9}{'wall':>7}{'quiet cpu':>10}{'wall':>7}{'load cpu':>9}"
        f"{'wall':>7}{'cpu/wall':>9}"
    )
    growth: dict[str, list[float]] = {c: [] for c in CLOCKS}
    vs_base: dict[tuple[str, str], list[float]] = {}
    cpu_over_wall: dict[str, list[float]] = {"quiet": [], "load": []}
    for nodeid, old in sorted(base.tests.items()):
        if not old.compiles:
            continue
        per: dict[tuple[str, str], list[float]] = {}
        for condition in ("quiet", "load"):
            for run in results[(condition, "clean")]:
                rec = run.report.tests.get(nodeid)
                if rec is None or rec.compiles != old.compiles:
                    continue
                for clock in CLOCKS:
                    per.setdefault((condition, clock), []).append(_compile_s(rec, clock))
                    before = _compile_s(old, clock)
                    if before:
                        vs_base.setdefault((condition, clock), []).append(
                            _compile_s(rec, clock) / before
                        )
                if rec.total_s:
                    cpu_over_wall[condition].append(_compile_s(rec, "cpu") / rec.total_s)
        if not per:
            continue
        for clock in CLOCKS:
            quiet = median(per.get(("quiet", clock), []))
            if quiet:
                growth[clock] += [s / quiet - 1 for s in per.get(("load", clock), [])]
        load_cw = [
            c / w for c, w in zip(per.get(("load", "cpu"), []), per.get(("load", "wall"), [])) if w
        ]
        print(
            f"{nodeid[-63:]:<64}{_compile_s(old, 'cpu'):>9.3f}{old.total_s:>7.3f}"
            f"{fmt(median(per.get(('quiet', 'cpu'), [])), '.3f'):>10}"
            f"{fmt(median(per.get(('quiet', 'wall'), [])), '.3f'):>7}"
            f"{fmt(median(per.get(('load', 'cpu'), [])), '.3f'):>9}"
            f"{fmt(median(per.get(('load', 'wall'), [])), '.3f'):>7}"
            f"{fmt(median(load_cw), '.2f'):>9}"
        )
    print()
    for clock in CLOCKS:
        g = growth[clock]
        line = (
            f"compile growth under load vs quiet, {clock:<4} clock: median "
            f"{fmt(median(g), '+.0%')}, max {fmt(max(g) if g else None, '+.0%')} "
            f"({len(g)} test-runs)"
        )
        for condition in ("quiet", "load"):
            r = vs_base.get((condition, clock), [])
            line += (
                f"; {condition} vs baseline median {fmt(median(r), '.2f', 'x')} "
                f"max {fmt(max(r) if r else None, '.2f', 'x')}"
            )
        print(line)
    for condition in ("quiet", "load"):
        print(
            f"compile cpu/wall seconds per test, {condition}: median "
            f"{fmt(median(cpu_over_wall[condition]))}, min "
            f"{fmt(min(cpu_over_wall[condition]) if cpu_over_wall[condition] else None)}, max "
            f"{fmt(max(cpu_over_wall[condition]) if cpu_over_wall[condition] else None)}"
        )

    # -- runtime ratios ------------------------------------------------------------------
    print()
    print("steady-state runtime vs baseline (median over runs of run/baseline; max in brackets)")
    print(f"{'benchmark':<44}{'condition':<10}{'median':>14}{'min round':>14}{'cpu/call':>14}")
    rows: list[tuple[str, str, list[Run]]] = []
    for (condition, kind), rs in results.items():
        rows.append((condition, kind, rs))
    for condition, kind, rs in sorted(rows, key=lambda r: (r[1] != "clean", r[1], r[0])):
        labels = sorted(
            {
                (nodeid, label)
                for run in rs
                for nodeid, rec in run.report.tests.items()
                for label in rec.benchmarks
            }
        )
        for nodeid, label in labels:
            old = base.tests.get(nodeid)
            if old is None or _runtime(old.benchmarks.get(label), "median_s") is None:
                continue  # not in the baseline, or no runtime (a jaxperf.scaling entry)
            cells = []
            for key in ("median_s", "min_s", "cpu_median_s"):
                before = _runtime(old.benchmarks[label], key)
                vals = [
                    now / before
                    for run in rs
                    if (rec := run.report.tests.get(nodeid)) is not None
                    and label in rec.benchmarks
                    and before
                    and (now := _runtime(rec.benchmarks[label], key))
                ]
                top = max(vals) if vals else None
                cells.append(f"{fmt(median(vals), '.2f', 'x')} ({fmt(top, '.2f')})")
            name = label if kind == "clean" else f"{label} [{kind}]"
            print(f"{name:<44}{condition:<10}" + "".join(f"{c:>14}" for c in cells))
    print(
        f"  (runtime gate: median, fastest round and, on the cpu clock, CPU per call must all "
        f"exceed {1 + ns.runtime_rtol:g}x, with Mann-Whitney p < {compare.RUNTIME_ALPHA:g})"
    )

    return finish(committed, work, ns.workdir is None, t_start)


if __name__ == "__main__":
    sys.exit(main())
