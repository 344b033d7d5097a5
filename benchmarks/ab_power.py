"""How often does `jaxperf ab` catch a steady-state slowdown, how often does it raise a false
alarm, and what does it cost? And the stored-baseline gate on the same runs, for comparison.

Backs docs/ab.md: "The defaults (one CPU, 3 rounds, threshold 1.10) are the measured choice of
`benchmarks/ab_power.py`", with its tables there, and the `jaxperf ab` row of
docs/methodology.md's table of defaults.

Run: ``.venv/bin/python benchmarks/ab_power.py [--same-runs 20] [--slow-runs 10] [--rounds 5]``
(the defaults: 80 `jaxperf ab` runs of 5 rounds, 800 pytest processes plus a few plain runs,
about 55 minutes on 2 cores); a smoke check:
``--same-runs 1 --slow-runs 1 --rounds 2 --plain-runs 1`` (about 5 minutes). The README's
tables: ``--ab-cpus all --rounds 3`` (runs not confined), ``--pin 1`` (confined to CPU 1, as
jaxperf ab's default does on 2 CPUs) and ``--conditions load --hog-pin 1`` (the load on the
runs' CPU). ``--workdir DIR --analyse`` prints the tables again from the runs kept in DIR
with this checkout's statistics, measuring nothing (with ``--pin CPUS`` when the runs' --json
files predate their "cpus" field and the runs were pinned there).

1. Builds a git repository from ``example_project/`` in the work directory: commit ``base``
   (the example as it is, its committed baseline left out), and one branch per case on top of
   it: ``same`` (a comment added: a new commit, the same code), ``slow_2x`` and
   ``slow_1_25x`` (the example's runtime-only switch of that name turned on in the code, as
   the default of ``JAXPERF_EXAMPLE_REGRESSION``: dense_relu's steady state 2x or 1.25x as
   long, the same program and counts).
2. Saves a baseline of the selected tests on ``base``, quiet (``pytest --jaxperf
   --jaxperf-save``), for the stored-baseline gate, and times ``--plain-runs`` plain
   ``pytest --jaxperf`` runs of the same tests per condition (the cost to compare with).
3. Two conditions, "quiet" then "load" (one CPU hog beside every run, ``--hogs``: a bounded
   ``python -c "while ...: pass"`` started before the run and stopped after it; ``--pin``
   confines the runs to CPUs, ``--hog-pin`` the hogs). In each,
   ``--same-runs`` runs of ``same`` and ``--slow-runs`` of each slow case: check the case's
   branch out and run ``jaxperf ab --base base --rounds R --json ... --reports-dir ... --
   TESTS``, as a user would. Its exit status at R rounds is kept, and so are the per-round
   reports.
4. Offline, for every k = 1..R (the first k rounds of each run: what ``--rounds k`` would
   have given, at the same moments) and every ``--thresholds`` value: how many ``same`` runs
   had a false runtime (or any) regression, how many slow runs were caught by dense_relu's
   runtime row, the intervals' width for pair_energy (about 1 ms, unchanged in every case)
   quiet vs loaded, and the wall time of ``jaxperf ab`` (set-up plus k rounds) over a plain
   run's.
5. The stored-baseline gate on the same cases: each run's first head process is a plain
   ``pytest --jaxperf`` run of the head; its dense_relu entry is judged against the quiet
   baseline by ``compare.evaluate`` with the plugin's defaults (``runtime_rtol`` 0.75; the
   CPU clock, and the wall clock for comparison).

Nothing is asserted: the figures are printed. The committed example baseline is never
touched (checked).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import AB_TESTS as TESTS
from _common import (
    COMMITTED,
    EXAMPLE,
    PYTEST,
    ab_env,
    digest,
    finish,
    fmt,
    hogs,
    median,
    timed_run,
    wait_for_quiet,
)

from pytest_jaxperf import compare
from pytest_jaxperf.ab import cpus, stats, table
from pytest_jaxperf.ab.command import DEFAULT_COMPILE_THRESHOLD, DEFAULT_RUNTIME_THRESHOLD
from pytest_jaxperf.config import MarkerLimits, Tolerances
from pytest_jaxperf.model import RunRecord
from pytest_jaxperf.storage import store

LAYER, NEIGHBOURS = TESTS
SLOWED = (LAYER, "dense_relu")  # what slow_2x and slow_1_25x slow down
STEADY = (NEIGHBOURS, "pair_energy")  # about 1 ms, unchanged in every case
CASES = ("same", "slow_2x", "slow_1_25x")
CONDITIONS = ("quiet", "load")
DEFAULT_SWITCH = 'os.environ.get(VARIABLE, "")'
RUNS_FILE = "runs.json"  # in the work directory: what --analyse reads


@dataclass
class AbRun:
    case: str
    condition: str
    returncode: int
    rounds: list[tuple[RunRecord, RunRecord]]
    run_seconds: list[tuple[float, float]]  # (base, head) per round
    seconds: float  # the whole command
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def setup_seconds(self) -> float:
        """The command's time outside its pytest runs (worktree, statistics, output)."""
        return self.seconds - sum(b + h for b, h in self.run_seconds)

    def seconds_at(self, k: int) -> float:
        return self.setup_seconds + sum(b + h for b, h in self.run_seconds[:k])


# ----------------------------------------------------------------------------------------
def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env=ab_env(), capture_output=True, text=True, check=False
    )
    if done.returncode:
        sys.exit(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def build_repository(work: Path) -> Path:
    """The example as a repository: branch base, and one branch per case on top of it."""
    repo = work / "repo"
    shutil.copytree(
        EXAMPLE,
        repo,
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", ".pytest_cache", ".jaxperf"),
    )
    _git(repo, "init", "-q", "-b", "base")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base: the example project")
    switch_file = repo / "jaxperf_example" / "regression.py"
    layer = repo / "jaxperf_example" / "layer.py"
    original = switch_file.read_text()
    if DEFAULT_SWITCH not in original:
        sys.exit(f"{switch_file}: expected {DEFAULT_SWITCH!r}, to turn a switch on in the code")
    for case in CASES:
        _git(repo, "checkout", "-q", "-b", case, "base")
        if case == "same":
            layer.write_text(layer.read_text() + "\n# A new commit; the same code.\n")
        else:
            switch_file.write_text(
                original.replace(DEFAULT_SWITCH, f'os.environ.get(VARIABLE, "{case}")')
            )
        _git(repo, "commit", "-qam", case)
    _git(repo, "checkout", "-q", "base")
    return repo


def pytest_run(
    repo: Path, args: list[str], prefix: list[str]
) -> tuple[float, subprocess.CompletedProcess[str]]:
    cmd = [*prefix, *PYTEST, "--jaxperf"]
    cmd += args
    seconds, done = timed_run(cmd, repo, ab_env())
    if done.returncode not in (0, 1):
        sys.exit(f"pytest failed ({done.returncode}): {' '.join(cmd)}\n{done.stdout[-3000:]}")
    return seconds, done


def ab_run(
    repo: Path,
    work: Path,
    case: str,
    condition: str,
    index: int,
    rounds: int,
    extra: list[str],
    prefix: list[str],
    ab_cpus: str | None = None,
) -> AbRun:
    _git(repo, "checkout", "-q", case)
    name = f"{condition}-{case}-{index}"
    reports = work / name
    out_json = work / f"{name}.json"
    cmd = [
        *prefix,
        sys.executable, "-m", "pytest_jaxperf", "ab", "--base", "base", "--rounds", str(rounds),
        *([] if ab_cpus is None else ["--cpus", ab_cpus]),
        "--json", str(out_json), "--reports-dir", str(reports), "--", *extra, *TESTS,
    ]  # fmt: skip
    seconds, done = timed_run(cmd, repo, ab_env())
    if done.returncode not in (0, 1):
        sys.exit(f"jaxperf ab failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return load_run(work, name, done.returncode, seconds)


def load_run(work: Path, name: str, returncode: int, seconds: float) -> AbRun:
    """One `jaxperf ab` run from what it left in `work`: its --json and its kept reports."""
    condition, case, _ = name.split("-")
    reports = work / name
    data = json.loads((work / f"{name}.json").read_text())
    rounds = int(data["rounds"])
    pairs = []
    for r in range(1, rounds + 1):
        b, h = (store.load(reports / f"{side}-{r}.json") for side in ("base", "head"))
        assert b is not None and h is not None
        pairs.append((b, h))
    run_seconds = [
        (
            next(x["seconds"] for x in data["runs"] if x["side"] == "base" and x["round"] == r),
            next(x["seconds"] for x in data["runs"] if x["side"] == "head" and x["round"] == r),
        )
        for r in range(1, rounds + 1)
    ]
    return AbRun(case, condition, returncode, pairs, run_seconds, seconds, data)


def load_runs(work: Path) -> tuple[list[AbRun], dict[str, list[float]], RunRecord]:
    """What an earlier run of this script left in `work` (--analyse): its jaxperf ab runs in
    the order they ran, the plain runs' seconds and the stored baseline."""
    made = json.loads((work / RUNS_FILE).read_text())
    runs = [load_run(work, r["name"], r["returncode"], r["seconds"]) for r in made["runs"]]
    stored = store.load(work / "stored.json")
    assert stored is not None
    return runs, made["plain"], stored


# ----------------------------------------------------------------------------------------
def row(comparison: table.Comparison, target: tuple[str, str]) -> table.Row | None:
    test, label = target
    return next(
        (r for r in comparison.rows
         if r.test == test and r.metric == table.RUNTIME and r.benchmark == label),
        None,
    )  # fmt: skip


def any_regression(comparison: table.Comparison, threshold: float) -> bool:
    """Whether any row regressed, runtime rows judged at `threshold`."""
    for r in comparison.rows:
        if r.metric == table.RUNTIME and r.ratio is not None:
            if stats.ratio_status(r.ratio, threshold) == "REGRESSED":
                return True
        elif r.regressed:
            return True
    return False


@contextlib.contextmanager
def _condition(condition: str, ns: argparse.Namespace) -> Iterator[None]:
    """Quiet: wait (a little) for other processes to go quiet; load: CPU hogs beside."""
    if condition == "quiet":
        wait_for_quiet(ns.quiet_wait)
        yield
        return
    with hogs(ns.hogs, ns.hog_limit, None if ns.hog_pin is None else cpus.parse(ns.hog_pin)):
        yield


def stored_gate(run: AbRun, stored: RunRecord, clock: str) -> bool:
    """Whether the stored-baseline gate fails dense_relu's runtime in the run's first head
    process."""
    head = run.rounds[0][1]
    test, label = SLOWED
    rec, old = head.tests.get(test), stored.tests.get(test)
    if rec is None or old is None:
        return False
    before, now = stored.environment_of(test), head.environment_of(test)
    tol = Tolerances(runtime_clock=clock, compile_clock=clock)  # type: ignore[arg-type]
    verdict = compare.evaluate(rec, old, MarkerLimits(), compare.Gating.between(before, now, tol))
    return any(
        b.gated and b.metric == compare.RUNTIME and b.benchmark == label for b in verdict.breaches
    )


def _frac(n: int, total: int) -> str:
    return f"{n}/{total}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--same-runs", type=int, default=20, help="runs of unchanged code per "
                    "condition (default 20)")  # fmt: skip
    ap.add_argument("--slow-runs", type=int, default=10, help="runs of each slowdown per "
                    "condition (default 10)")  # fmt: skip
    ap.add_argument("--rounds", type=int, default=5, help="rounds per jaxperf ab run; every "
                    "k <= this is evaluated (default 5)")  # fmt: skip
    ap.add_argument("--plain-runs", type=int, default=3, help="plain pytest --jaxperf runs "
                    "timed per condition (default 3)")  # fmt: skip
    ap.add_argument("--thresholds", default=f"1.05,{DEFAULT_RUNTIME_THRESHOLD:g},1.15,1.2",
                    help="runtime thresholds evaluated (default 1.05,1.1,1.15,1.2)")  # fmt: skip
    ap.add_argument("--conditions", default="quiet,load", help="quiet, load or both")
    ap.add_argument("--hogs", type=int, default=1, help="CPU hogs under load (default 1)")
    ap.add_argument("--hog-limit", type=int, default=900, help="seconds a hog may live")
    ap.add_argument("--quiet-wait", type=float, default=5.0, help="before each quiet run, wait "
                    "up to this long for other processes to go quiet (default 5)")  # fmt: skip
    ap.add_argument("--max-time", type=float, default=None, help="--jaxperf-max-time for the "
                    "runs (default: the example's own, 0.1 s)")  # fmt: skip
    ap.add_argument("--workdir", type=Path, default=None, help="keep everything here")
    ap.add_argument("--pin", default=None, metavar="CPUS", help="run jaxperf ab and the plain "
                    "runs under `taskset -c CPUS` (the hogs stay free, unless --hog-pin)")
    ap.add_argument("--ab-cpus", default=None, metavar="CPUS", help="jaxperf ab's --cpus "
                    "(default: its own, one CPU; 'all' for runs not confined)")
    ap.add_argument("--hog-pin", default=None, metavar="CPUS", help="confine the hogs to "
                    "these CPUs (e.g. the --pin CPU: the load cannot move away from the runs)")
    ap.add_argument("--analyse", action="store_true", help="measure nothing: print the tables "
                    "from the runs an earlier run left in --workdir, with this checkout's "
                    "statistics")  # fmt: skip
    ns = ap.parse_args(argv)
    conditions = [c for c in ns.conditions.split(",") if c]
    thresholds = [float(t) for t in ns.thresholds.split(",")]
    if ns.analyse:
        if ns.workdir is None or not (ns.workdir / RUNS_FILE).is_file():
            ap.error(f"--analyse needs the --workdir of an earlier run (with its {RUNS_FILE})")
        runs, plain, stored = load_runs(ns.workdir)
        # Runs whose --json predates its "cpus" ran where --pin put them.
        pinned = None if ns.pin is None else sorted(cpus.parse(ns.pin))
        for run in runs:
            run.data.setdefault("cpus", pinned)
        analyse(runs, plain, stored, max(len(r.rounds) for r in runs), thresholds)
        return 0
    if (
        min(ns.same_runs, ns.slow_runs, ns.rounds, ns.plain_runs) < 1
        or not set(conditions) <= set(CONDITIONS)
        or not thresholds
    ):
        ap.error("runs and rounds must be >= 1; --conditions from quiet,load")
    for given in (ns.pin, ns.hog_pin, ns.ab_cpus):
        try:
            cpus.parse(given or "0")
        except ValueError as exc:
            ap.error(str(exc))
    extra = [] if ns.max_time is None else [f"--jaxperf-max-time={ns.max_time}"]
    committed = digest(COMMITTED)
    t_start = time.perf_counter()
    work = ns.workdir or Path(tempfile.mkdtemp(prefix="jaxperf-ab-power-"))
    work.mkdir(parents=True, exist_ok=True)
    print(
        f"ab_power: python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {ns.same_runs} "
        f"same and {ns.slow_runs} runs per slowdown per condition ({', '.join(conditions)}); "
        f"{ns.rounds} rounds each; tests {' '.join(TESTS)}; {ns.hogs} hog(s) under load"
        f"{' on CPUs ' + ns.hog_pin if ns.hog_pin else ''}; "
        f"{'pinned to CPUs ' + ns.pin + '; ' if ns.pin else ''}"
        f"{'jaxperf ab --cpus ' + ns.ab_cpus + '; ' if ns.ab_cpus else ''}work in {work}",
        flush=True,
    )
    repo = build_repository(work)

    wait_for_quiet(ns.quiet_wait)
    stored_path = work / "stored.json"
    prefix = [] if ns.pin is None else ["taskset", "-c", ns.pin]
    pytest_run(
        repo, [f"--jaxperf-baseline={stored_path}", "--jaxperf-save", *extra, *TESTS], prefix
    )
    stored = store.load(stored_path)
    if stored is None or not set(TESTS) <= set(stored.tests):
        sys.exit(f"the stored baseline lacks the tests: {stored_path}")

    plain: dict[str, list[float]] = {}
    runs: list[AbRun] = []
    made: list[dict[str, Any]] = []
    for condition in conditions:
        t_block = time.perf_counter()
        for _ in range(ns.plain_runs):
            with _condition(condition, ns):
                seconds, _done = pytest_run(
                    repo, [f"--jaxperf-baseline={work / 'none.json'}", *extra, *TESTS], prefix
                )
            plain.setdefault(condition, []).append(seconds)
        plan = [("same", i) for i in range(ns.same_runs)]
        plan += [(case, i) for case in CASES[1:] for i in range(ns.slow_runs)]
        # Interleaved, so that a change of the machine's state over the block hits every case.
        plan.sort(key=lambda p: (p[1], CASES.index(p[0])))
        for n, (case, i) in enumerate(plan, 1):
            with _condition(condition, ns):
                run = ab_run(repo, work, case, condition, i, ns.rounds, extra, prefix, ns.ab_cpus)
            runs.append(run)
            made.append({"name": f"{condition}-{case}-{i}", "returncode": run.returncode,
                         "seconds": run.seconds})  # fmt: skip
            (work / RUNS_FILE).write_text(json.dumps({"plain": plain, "runs": made}))
            print(
                f"  {condition} {n}/{len(plan)}: {case:<11} exit {run.returncode}  "
                f"{run.seconds:.0f} s",
                flush=True,
            )
        print(f"  {condition} block: {time.perf_counter() - t_block:.0f} s", flush=True)
    analyse(runs, plain, stored, ns.rounds, thresholds)
    return finish(committed, work, ns.workdir is None, t_start)


def analyse(
    runs: list[AbRun],
    plain: dict[str, list[float]],
    stored: RunRecord,
    rounds: int,
    thresholds: list[float],
) -> None:
    """The tables, from the runs alone: every k <= `rounds` and every threshold."""
    conditions = [c for c in CONDITIONS if any(r.condition == c for r in runs)]

    # -- jaxperf ab, offline at every k and threshold ------------------------------------
    print()
    print("jaxperf ab: dense_relu's runtime row REGRESSED (slow cases: caught; same: false alarm)")
    print(f"  also: 'any' = same runs with any REGRESSED row (counts, program metrics, compile "
          f"time at {DEFAULT_COMPILE_THRESHOLD:g}x included)")  # fmt: skip
    header = f"{'condition':<10}{'rounds':>7}{'threshold':>10}"
    header += "".join(f"{c:>12}" for c in CASES) + f"{'same: any':>11}"
    print(header)
    comparisons: dict[tuple[int, int], table.Comparison] = {}
    for index, run in enumerate(runs):
        confined = run.data.get("cpus")
        for k in range(1, rounds + 1):
            # As jaxperf ab at --rounds k would read them (runtime_clock).
            clock = table.runtime_clock(frozenset(confined) if confined else None, k)
            comparisons[(index, k)] = table.compare_rounds(
                run.rounds[:k],
                table.Thresholds(runtime=DEFAULT_RUNTIME_THRESHOLD,
                                    compile=DEFAULT_COMPILE_THRESHOLD),
                clock=clock,
            )  # fmt: skip
    for condition in conditions:
        for k in range(1, rounds + 1):
            for threshold in thresholds:
                cells = []
                for case in CASES:
                    chosen = [i for i, r in enumerate(runs)
                              if r.case == case and r.condition == condition]  # fmt: skip
                    hit = 0
                    for i in chosen:
                        found = row(comparisons[(i, k)], SLOWED)
                        if found is not None and found.ratio is not None:
                            hit += stats.ratio_status(found.ratio, threshold) == "REGRESSED"
                    cells.append(_frac(hit, len(chosen)))
                same = [i for i, r in enumerate(runs)
                        if r.case == "same" and r.condition == condition]  # fmt: skip
                anything = sum(any_regression(comparisons[(i, k)], threshold) for i in same)
                print(
                    f"{condition:<10}{k:>7}{threshold:>10g}" + "".join(f"{c:>12}" for c in cells)
                    + f"{_frac(anything, len(same)):>11}"
                )  # fmt: skip

    # -- estimates and interval widths ---------------------------------------------------
    print()
    print("estimates (median over runs of head/base) and 95% interval widths (high - low)")
    print(f"{'what':<34}{'condition':<10}{'rounds':>7}{'estimate':>10}{'width':>8}"
          f"{'widest':>8}{'interval (median run)':>24}")  # fmt: skip
    for target, cases in ((SLOWED, CASES), (STEADY, ("same",))):
        for case in cases:
            for condition in conditions:
                for k in range(1, rounds + 1):
                    ratios = [
                        found.ratio
                        for i, r in enumerate(runs)
                        if r.case == case and r.condition == condition
                        and (found := row(comparisons[(i, k)], target)) is not None
                        and found.ratio is not None
                    ]  # fmt: skip
                    if not ratios:
                        continue
                    widths = [r.high - r.low for r in ratios]
                    mid = sorted(ratios, key=lambda r: r.estimate)[len(ratios) // 2]
                    print(
                        f"{f'{target[1]} [{case}]':<34}{condition:<10}{k:>7}"
                        f"{median([r.estimate for r in ratios]):>10.3f}"
                        f"{median(widths):>8.3f}{max(widths):>8.3f}"
                        f"{f'[{mid.low:.3f}, {mid.high:.3f}]':>24}"
                    )

    # -- the stored-baseline gate ----------------------------------------------------------
    print()
    print("stored-baseline gate (first head process of each run vs the quiet baseline, "
          "runtime_rtol 0.75): dense_relu runtime failed")  # fmt: skip
    print(f"{'condition':<10}{'clock':<7}" + "".join(f"{c:>12}" for c in CASES))
    for condition in conditions:
        for clock in ("cpu", "wall"):
            cells = []
            for case in CASES:
                chosen = [r for r in runs if r.case == case and r.condition == condition]
                cells.append(_frac(sum(stored_gate(r, stored, clock) for r in chosen), len(chosen)))
            print(f"{condition:<10}{clock:<7}" + "".join(f"{c:>12}" for c in cells))
    print("  (for 'same' a failure is a false alarm; for the slowdowns a catch)")

    # -- cost --------------------------------------------------------------------------------
    print()
    print("wall time: jaxperf ab (set-up + k rounds) over one plain pytest --jaxperf run of the "
          "same tests (median seconds)")  # fmt: skip
    print(f"{'condition':<10}{'plain s':>8}" + "".join(f"{f'k={k}':>9}" for k in
                                                        range(1, rounds + 1)))  # fmt: skip
    for condition in conditions:
        base_s = median(plain.get(condition, []))
        chosen = [r for r in runs if r.condition == condition]
        cells = []
        for k in range(1, rounds + 1):
            s = median([r.seconds_at(k) for r in chosen])
            cells.append(fmt(s / base_s if s and base_s else None, ".2f", "x"))
        print(f"{condition:<10}{fmt(base_s, '.1f'):>8}" + "".join(f"{c:>9}" for c in cells))
    setup = median([r.setup_seconds for r in runs])
    print(f"  (set-up, statistics and output outside the pytest runs: median "
          f"{fmt(setup, '.1f')} s per jaxperf ab run; exit status at {rounds} rounds: "
          f"{sum(r.returncode == 1 for r in runs)} of {len(runs)} runs exited 1)")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
