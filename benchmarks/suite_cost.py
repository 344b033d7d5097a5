"""What ``--jaxperf --jaxperf-all`` costs a whole real suite: the saving run and the gating
run against plain pytest, wall and CPU seconds, medians of alternated runs (issue 35).

Run: ``.venv/bin/python benchmarks/suite_cost.py --name NAME --cwd DIR [--python PY]
[--reps N] [--workdir W] [--analyze-only] -- PYTEST_ARGS...``

In ``--cwd`` (the suite's root), with ``--python`` (default: this interpreter): one
untimed warm-up run saves ``W/baseline.json`` (and leaves the suite's bytecode compiled),
then ``--reps`` rounds (default 3), each of three runs in a rotating order (round 0: plain,
save, gate; round 1: save, gate, plain; round 2: gate, plain, save; ...), so that a slow
stretch of the machine does not fall on one mode:

  plain  ``-p no:jaxperf``
  save   ``--jaxperf --jaxperf-all --jaxperf-save`` into a copy of the warm-up baseline
         (a re-save, as a team makes it)
  gate   ``--jaxperf --jaxperf-all`` against the warm-up baseline

Each run's wall seconds, CPU seconds (the pytest process and its children) and the CPU
seconds other processes used meanwhile are appended to ``W/runs.jsonl``. Printed: per mode
the medians, the ratios save/plain and gate/plain (target <= 1.03, wall and CPU), and the
runs' outcome counts, which must be equal across modes (a mode that changes what passes is
a bug, whatever it costs). ``--analyze-only W...`` prints the table of earlier workdirs.
The selections measured are in ``benchmarks/results/suite_cost-*.txt``. A smoke run on the
example project (about 3 minutes on 2 cores)::

    .venv/bin/python benchmarks/suite_cost.py --name example --cwd example_project --reps 1

Exit code 0 whatever the figures; non-zero when a run could not be made.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import DROPPED, PYTEST, clean_env, fmt, print_total, summary_counts, usage

MODES = ("plain", "save", "gate")
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


def run(python: str, cwd: Path, args: list[str], log: Path) -> dict[str, Any]:
    """One pytest run (output in `log`): its seconds and the summary line's counts."""
    cmd = [python, *PYTEST[1:], *args]
    with usage() as used, log.open("w") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        proc = subprocess.run(cmd, cwd=cwd, env=ENV, stdout=f, stderr=subprocess.STDOUT)
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
    table([work])
    print(f"\nfiles: {work}")
    print_total(t_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
