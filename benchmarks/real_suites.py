"""The real-suite harness: what ``--jaxperf --jaxperf-all`` costs a whole real suite (the
saving run and the gating run against plain pytest, wall and CPU seconds, medians of
alternated runs; issue 35), and with ``--counts`` whether its counts hold whatever runs
beside or before each test.

Backs docs/limitations.md ("What recording costs real suites", "Saving and gating runs":
"`benchmarks/real_suites.py` times what a team runs day to day") and the "what recording
costs" row of docs/methodology.md's table of defaults ("a gate 0.97-1.08x and a re-save
0.97-1.20x on parts of equinox, optax, chex, diffrax and gpjax").

Run: ``.venv/bin/python benchmarks/real_suites.py --name NAME --cwd DIR [--python PY]
[--reps N] [--counts] [--workdir W] [--analyze-only] -- PYTEST_ARGS...``

Modes (the cost modes rotate; the count modes run once each, after them, with ``--counts``):

In ``--cwd`` (the suite's root), with ``--python`` (default: this interpreter): one
untimed warm-up run saves ``W/baseline.json`` (and leaves the suite's bytecode compiled),
then ``--reps`` rounds (default 3), each of three runs in a rotating order (round 0: plain,
save, gate; round 1: save, gate, plain; round 2: gate, plain, save; ...), so that a slow
stretch of the machine does not fall on one mode:

  plain  ``-p no:jaxperf``
  save   ``--jaxperf --jaxperf-all --jaxperf-save`` into a copy of the warm-up baseline
         (a re-save, as a team makes it)
  gate   ``--jaxperf --jaxperf-all`` against the warm-up baseline
  full      ``--jaxperf --jaxperf-all --jaxperf-json=W/full.json``: the counts' reference
  subset    the same on every third test in collection order (the 2nd, 5th, ...; a helper
            plugin written into W: ``-k`` cannot pick parametrised cases), so most tests run
            after another predecessor than in ``full``
  reversed  the same on every test in the reverse order
  xdist     the same with ``-n 2`` (pytest-xdist in the suite's interpreter)

Per test and per function key (and the test's totals, as ``(test total)``), traces,
lowerings and compiles of ``subset``, ``reversed`` and ``xdist`` must equal ``full``'s;
every mismatch is printed (past 50, written to ``W/mismatches-MODE.txt``), and the outcomes of
``reversed`` and ``xdist`` must equal the plain runs'. The third-party suites measured so far
(equinox 0.13.8's ``tests/`` less ``test_speed*``, optax 0.2.8's 15 files, gpjax 1.0.0's 6,
chex, diffrax, numpyro, blackjax: each from its release's source, with its test extras and
this checkout's plugin installed in a virtualenv of its own) and their selections are in
``benchmarks/results/suite_cost-*.txt`` (this script, named ``suite_cost.py`` until
2026-11-28) and ``real_suites-*.txt`` (its first version, which did the count checks and set
those virtualenvs up itself: ``results/README.md``).

Each run's wall seconds, CPU seconds (the pytest process and its children) and the CPU
seconds other processes used meanwhile are appended to ``W/runs.jsonl``. Printed: per mode
the medians, the ratios save/plain and gate/plain (target <= 1.03, wall and CPU), and the
runs' outcome counts, which must be equal across modes (a mode that changes what passes is
a bug, whatever it costs). ``--analyze-only W...`` prints the table of earlier workdirs.
The selections measured are in ``benchmarks/results/suite_cost-*.txt``. A smoke run on the
example project (about 3 minutes on 2 cores)::

    .venv/bin/python benchmarks/real_suites.py --name example --cwd example_project --reps 1

Exit code 0 whatever the figures; non-zero when a run could not be made.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import DROPPED, PYTEST, clean_env, fmt, print_total, summary_counts, usage

MODES = ("plain", "save", "gate")
COUNT_MODES = ("full", "subset", "reversed", "xdist")
FIELDS = ("traces", "lowerings", "compiles")
TOTAL = "(test total)"
PRINTED_MISMATCHES = 50
ORDER_PLUGINS = {
    "subset": """\
import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    drop = [item for i, item in enumerate(items) if i % 3 != 1]
    items[:] = [item for i, item in enumerate(items) if i % 3 == 1]
    if drop:
        config.hook.pytest_deselected(items=drop)
""",
    "reversed": """\
import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    items.reverse()
""",
}
TARGET = 1.03
# What the summary line counts as tests (not "warnings", nor subtests).
OUTCOMES = ("passed", "failed", "skipped", "error", "errors", "xfailed", "xpassed")
# The runs' environment: bytecode written and reused, as in a user's install (the warm-up run
# writes it). Without it every run compiles the plugin's modules from source, about 0.3 s of
# CPU that an installed plugin does not pay (0.48 s against 0.18 s of imports, measured).
ENV = clean_env(drop=(*DROPPED, "PYTHONDONTWRITEBYTECODE"))


def order(rep: int) -> tuple[str, ...]:
    """The modes of round `rep`, rotated so that no mode always runs first."""
    return MODES[rep % 3 :] + MODES[: rep % 3]


def mode_args(mode: str, work: Path, rep: int) -> list[str]:
    baseline = work / "baseline.json"
    if mode == "plain":
        return ["-p", "no:jaxperf"]
    if mode == "gate":
        return ["--jaxperf", "--jaxperf-all", f"--jaxperf-baseline={baseline}"]
    copy = work / f"save-{rep}.json"
    shutil.copyfile(baseline, copy)
    return ["--jaxperf", "--jaxperf-all", f"--jaxperf-baseline={copy}", "--jaxperf-save"]


def count_mode_args(mode: str, work: Path) -> list[str]:
    """A count mode's arguments; its helper plugin, if any, written into `work`."""
    args = ["--jaxperf", "--jaxperf-all", f"--jaxperf-json={work / f'{mode}.json'}"]
    if mode in ORDER_PLUGINS:
        (work / f"_suite_cost_{mode}.py").write_text(ORDER_PLUGINS[mode])
        args += ["-p", f"_suite_cost_{mode}"]
    return [*args, "-n", "2"] if mode == "xdist" else args


def run(
    python: str, cwd: Path, args: list[str], log: Path, env: dict[str, str] = ENV
) -> dict[str, Any]:
    """One pytest run (output in `log`): its seconds and the summary line's counts."""
    cmd = [python, *PYTEST[1:], *args]
    with usage() as used, log.open("w") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT)
    text = log.read_text(errors="replace")
    counts = summary_counts(text)
    if proc.returncode not in (0, 1) or counts is None:
        tail = "\n".join(text.splitlines()[-20:])
        raise SystemExit(f"pytest rc={proc.returncode} ({log}):\n{tail}")
    return {"wall": used.wall, "cpu": used.cpu, "others": used.others(), "counts": counts}


def measure(ns: argparse.Namespace, work: Path) -> None:
    runs = work / "runs.jsonl"
    if not (work / "baseline.json").exists():
        print(f"{ns.name}: warm-up save ({work / 'warmup.log'})", flush=True)
        args = ["--jaxperf", "--jaxperf-all", f"--jaxperf-baseline={work / 'baseline.json'}"]
        r = run(ns.python, ns.cwd, [*args, "--jaxperf-save", *ns.pytest_args],
                work / "warmup.log")  # fmt: skip
        print(f"  warm-up: {r['wall']:.1f} s wall, {r['cpu']:.1f} s CPU", flush=True)
    done = len(runs.read_text().splitlines()) // len(MODES) if runs.exists() else 0
    for rep in range(done, done + ns.reps):
        for mode in order(rep):
            r = run(ns.python, ns.cwd, [*mode_args(mode, work, rep), *ns.pytest_args],
                    work / f"{mode}-{rep}.log")  # fmt: skip
            r |= {"suite": ns.name, "mode": mode, "rep": rep, "at": time.strftime("%H:%M:%S")}
            with runs.open("a") as f:
                f.write(json.dumps(r) + "\n")
            print(f"  {rep} {mode}: {r['wall']:.1f} s wall, {r['cpu']:.1f} s CPU, others "
                  f"{fmt(r['others'], '.1f', ' s')}; {r['counts']}", flush=True)  # fmt: skip


def check_counts(ns: argparse.Namespace, work: Path) -> None:
    """The count modes, each run once, compared with `full` and with the plain runs."""
    # The helper plugins first on the runs' path, before what ENV puts there.
    env = {**ENV, "PYTHONPATH": os.pathsep.join(filter(None, [str(work), ENV.get("PYTHONPATH")]))}
    counts = {}
    for mode in COUNT_MODES:
        r = run(ns.python, ns.cwd, [*count_mode_args(mode, work), *ns.pytest_args],
                work / f"{mode}.log", env)  # fmt: skip
        print(f"  {mode}: {r['wall']:.1f} s wall; {r['counts']}", flush=True)
        counts[mode] = r["counts"]
    rows = [json.loads(ln) for ln in (work / "runs.jsonl").read_text().splitlines()]
    plain = {json.dumps(r["counts"], sort_keys=True) for r in rows if r["mode"] == "plain"}
    full = json.loads((work / "full.json").read_text())
    for mode in COUNT_MODES[1:]:
        other = json.loads((work / f"{mode}.json").read_text())
        lines = mismatches(full, other, subset=mode == "subset")
        same = mode == "subset" or plain == {json.dumps(counts[mode], sort_keys=True)}
        print(f"  counts full vs {mode}: {len(lines)} mismatches; outcomes "
              + ("equal" if same else "DIFFER from the plain runs'"))  # fmt: skip
        print("\n".join(f"    {line}" for line in lines[:PRINTED_MISMATCHES]))
        if len(lines) > PRINTED_MISMATCHES:
            (work / f"mismatches-{mode}.txt").write_text("\n".join(lines) + "\n")
            print(f"    ... all of them in {work / f'mismatches-{mode}.txt'}")


def mismatches(full: dict[str, Any], other: dict[str, Any], subset: bool) -> list[str]:
    """`test | function | field: full's != other's` for every count that differs, and the
    tests only one run recorded (a subset run records a third of them)."""

    def counts(report: dict[str, Any]) -> dict[str, dict[str, dict[str, int]]]:
        out = {}
        for test, rec in report.get("tests", {}).items():
            fns = rec.get("functions", {})
            out[test] = {k: {f: fn.get(f, 0) for f in FIELDS} for k, fn in fns.items()}
            out[test][TOTAL] = {f: rec.get(f, 0) for f in FIELDS}
        return out

    a, b = counts(full), counts(other)
    lines = [f"{test} | only in this run" for test in sorted(b.keys() - a.keys())]
    if not subset:
        lines += [f"{test} | only in full" for test in sorted(a.keys() - b.keys())]
    for test in sorted(a.keys() & b.keys()):
        for key in sorted(a[test].keys() | b[test].keys()):
            fa, fb = a[test].get(key, {}), b[test].get(key, {})
            lines += [f"{test} | {key} | {f}: {fa.get(f, '-')} != {fb.get(f, '-')}"
                      for f in FIELDS if fa.get(f) != fb.get(f)]  # fmt: skip
    return lines


def table(workdirs: list[Path]) -> None:
    print(
        f"\n{'suite':<10} {'tests':>6} {'reps':>4} {'plain s':>8} {'save s':>8} "
        f"{'gate s':>8} {'save/plain':>10} {'gate/plain':>10} {'CPU save':>8} {'CPU gate':>8} "
        f"{'others s':>8}  outcomes"
    )
    for work in workdirs:
        rows = [json.loads(ln) for ln in (work / "runs.jsonl").read_text().splitlines()]
        by = {m: [r for r in rows if r["mode"] == m] for m in MODES}
        if not all(by.values()):
            print(f"{work}: not every mode ran")
            continue
        wall = {m: statistics.median(r["wall"] for r in by[m]) for m in MODES}
        cpu = {m: statistics.median(r["cpu"] for r in by[m]) for m in MODES}
        outcomes = {json.dumps(r["counts"], sort_keys=True) for r in rows}
        counts = by["plain"][0]["counts"]
        tests = sum(v for k, v in counts.items() if k in OUTCOMES)
        others = statistics.median(r["others"] or 0.0 for r in rows)
        print(
            f"{rows[0]['suite']:<10} {tests:>6} {len(by['plain']):>4} {wall['plain']:>8.1f} "
            f"{wall['save']:>8.1f} {wall['gate']:>8.1f} {wall['save'] / wall['plain']:>10.3f} "
            f"{wall['gate'] / wall['plain']:>10.3f} {cpu['save'] / cpu['plain']:>8.3f} "
            f"{cpu['gate'] / cpu['plain']:>8.3f} {others:>8.1f}  "
            + ("equal" if len(outcomes) == 1 else "DIFFER: " + " | ".join(sorted(outcomes)))
        )
        paired = {
            (m, k): _paired(by[m], by["plain"], k)
            for m in ("save", "gate")
            for k in ("wall", "cpu")
        }
        if all(v is not None for v in paired.values()):
            print(
                f"{'':<10} paired by round: save/plain {paired['save', 'wall']:.3f} (CPU "
                f"{paired['save', 'cpu']:.3f}), gate/plain {paired['gate', 'wall']:.3f} (CPU "
                f"{paired['gate', 'cpu']:.3f})"
            )
    print(f"\n(medians over the reps; target <= {TARGET} for every ratio; others s: the median "
          "CPU seconds other processes used during a run; paired by round: the median over the "
          "rounds of each round's ratio, steadier where the machine's speed drifts between "
          "rounds)")  # fmt: skip


def _paired(runs: list[dict[str, Any]], plain: list[dict[str, Any]], key: str) -> float | None:
    """The median over the rounds of a mode's `key` over plain's in the same round; None
    where a round lacks one of them."""
    base = {r["rep"]: r[key] for r in plain}
    ratios = [r[key] / base[r["rep"]] for r in runs if r.get("rep") in base]
    return statistics.median(ratios) if ratios and len(ratios) == len(runs) else None


def main() -> int:
    t_start = time.perf_counter()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", help="the suite's name in the table")
    parser.add_argument("--cwd", type=Path, help="where pytest runs")
    parser.add_argument("--python", default=sys.executable, help="the suite's interpreter")
    parser.add_argument("--reps", type=int, default=3, help="rounds of the three modes")
    parser.add_argument("--counts", action="store_true",
                        help="then the count modes: full, subset, reversed, xdist")  # fmt: skip
    parser.add_argument("--workdir", type=Path, help="baseline, runs.jsonl and logs")
    parser.add_argument("--analyze-only", nargs="+", type=Path, metavar="W",
                        help="print the table of these earlier workdirs")  # fmt: skip
    parser.add_argument("pytest_args", nargs="*", help="the suite's selection, after --")
    ns = parser.parse_args()
    if ns.analyze_only:
        table(ns.analyze_only)
        return 0
    if not ns.name or not ns.cwd:
        parser.error("--name and --cwd are needed (or --analyze-only W...)")
    ns.cwd = ns.cwd.resolve()
    work = (ns.workdir or Path(f"suite-cost-{ns.name}")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    measure(ns, work)
    if ns.counts:
        check_counts(ns, work)
    table([work])
    print(f"\nfiles: {work}")
    print_total(t_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
