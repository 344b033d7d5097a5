"""The compile clock (`--jaxperf-compile-clock=instructions`): spread of each phase's
instructions run to run, quiet and beside two CPU hogs, and the two regressions of issue 50
caught: trace-time Python work x1.6 with the same program, and +10% equations.

Backs docs/instructions.md's "Compile clock" section and config.DEFAULT_INSTRUCTIONS_RTOL's
use for the compile phases.

Run: ``.venv/bin/python benchmarks/compile_instructions.py [--quiet N] [--loaded N]
[--changed N] [--workdir DIR]`` (needs valgrind and ``pytest-jaxperf[instructions]``;
defaults 4 / 2 / 3 runs after the saving one, 1.5-5 minutes each on 2 shared cores,
up to 10 beside the hogs; ``--report-only`` prints the tables again from ``--workdir``).

A generated project holds three tests, each jitting its own 3-layer MLP (dot, add, tanh per
layer, then a sum: 10 jaxpr equations). A baseline is saved quiet; then runs of the
unchanged code (``--quiet`` quiet, ``--loaded`` beside two CPU hogs) and ``--changed`` runs
(the first of them loaded) where ``test_slow_trace``'s function does about 1.6x its trace's
work at trace time (``--trace-work`` 2,800 generator steps, ~611 instructions each under
callgrind on CPython 3.11: +1.7 M on a 2.83 M trace; the program is the same) and
``test_more_eqns``'s multiplies once more (11 equations, +10%), while ``test_same`` stays as
it was. Printed: every count per run, each phase's spread over the unchanged runs
((max - min) / min), the changed cases' ratios, and each run's verdicts (a test that fails
on compile instructions: FAILED with the breach lines). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import hogs

PHASES = ("trace", "lower", "compile")
TESTS = ("test_same", "test_slow_trace", "test_more_eqns")
PROJECT = '''
import os

import jax
import jax.numpy as jnp
import pytest

CHANGED = os.environ.get("COMPILE_CLOCK_CHANGED") == "1"


def _mlp(x, ws, extra_eqn=False, trace_work=0):
    if trace_work:  # Python work at trace time only: the program stays the same
        sum(i * i for i in range(trace_work))
    for w in ws:
        x = jnp.tanh(x @ w + 1.0)
    if extra_eqn:
        x = x * 1.5
    return x.sum()


@jax.jit
def same(x, ws):
    return _mlp(x, ws)


@jax.jit
def slow_trace(x, ws):
    return _mlp(x, ws, trace_work=TRACE_WORK if CHANGED else 0)


@jax.jit
def more_eqns(x, ws):
    return _mlp(x, ws, extra_eqn=CHANGED)


WS = [jnp.full((8, 8), 0.1)] * 3
X = jnp.ones((2, 8))


@pytest.mark.jaxperf
def test_same():
    same(X, WS).block_until_ready()


@pytest.mark.jaxperf
def test_slow_trace():
    slow_trace(X, WS).block_until_ready()


@pytest.mark.jaxperf
def test_more_eqns():
    more_eqns(X, WS).block_until_ready()
'''
CLOCK = ["--jaxperf", "--jaxperf-compile-clock=instructions", "--jaxperf-no-reference-compile",
         "-p", "no:randomly", "-p", "no:cacheprovider", "-q"]  # fmt: skip


def run(work: Path, tag: str, *, save: bool = False, changed: bool = False,
        loaded: bool = False) -> dict[str, Any]:  # fmt: skip
    report = work / f"run-{tag}.json"
    cmd = [sys.executable, "-m", "pytest", *CLOCK, f"--jaxperf-json={report}",
           f"--jaxperf-baseline={work / 'base.json'}", "test_project.py"]  # fmt: skip
    if save:
        cmd.append("--jaxperf-save")
    env = {**os.environ, "COMPILE_CLOCK_CHANGED": "1" if changed else "0"}
    start = time.perf_counter()
    if loaded:
        with hogs(2, 3600):
            proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    else:
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    (work / f"run-{tag}.log").write_text(proc.stdout + proc.stderr)
    return read_run(work, tag, time.perf_counter() - start, proc.returncode)


def read_run(work: Path, tag: str, seconds: float | None = None,
             code: int | None = None) -> dict[str, Any]:  # fmt: skip
    """A run's counts and verdicts from the files it left in `work` (its report and its
    output), so that runs already made can be read again (`--report-only`)."""
    data = json.loads((work / f"run-{tag}.json").read_text())
    log = (work / f"run-{tag}.log").read_text()
    counts = {}
    for nodeid, test in data["tests"].items():
        for fn in test["functions"].values():
            counts[nodeid.split("::")[-1]] = fn.get("instructions", {})
    last = log.strip().splitlines()[-1]
    if seconds is None:  # pytest's own figure for the valgrind child
        seconds = float(last.rsplit(" in ", 1)[1].split("s")[0]) if " in " in last else 0.0
    if code is None:
        code = 1 if "failed" in last else 0
    breaches = [line for line in log.splitlines() if "instructions of" in line]
    return {"tag": tag, "seconds": seconds, "code": code, "counts": counts,
            "breaches": breaches, "loaded": tag.startswith("loaded") or tag == "changed0",
            "changed": tag.startswith("changed")}  # fmt: skip


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def spread(values: list[int]) -> float:
    return (max(values) - min(values)) / min(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quiet", type=int, default=4)
    parser.add_argument("--loaded", type=int, default=2)
    parser.add_argument("--changed", type=int, default=3)
    parser.add_argument("--trace-work", type=int, default=2_800)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--report-only", action="store_true",
                        help="print the figures of the runs already in --workdir")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="compile-instructions-"))
    work.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        (work / "test_project.py").write_text(
            PROJECT.replace("TRACE_WORK", str(args.trace_work))
        )
    valgrind = subprocess.run(["valgrind", "--version"], capture_output=True, text=True)
    print(f"command: {' '.join(sys.argv)}")
    print(f"machine: {cpu_model()}; {os.cpu_count()} CPUs; "
          f"{valgrind.stdout.strip()}; python {platform.python_version()}")  # fmt: skip
    import jax

    print(f"jax {jax.__version__}; trace work {args.trace_work:,} loop steps; workdir {work}")
    if args.report_only:  # the runs a killed or earlier invocation left in --workdir
        order = ["save", *(f"{k}{i}" for k in ("quiet", "loaded", "changed") for i in range(20))]
        runs = [read_run(work, t) for t in order if (work / f"run-{t}.json").exists()]
        report(runs, None)
        return
    runs = [run(work, "save", save=True)]
    runs += [run(work, f"quiet{i}") for i in range(args.quiet)]
    runs += [run(work, f"loaded{i}", loaded=True) for i in range(args.loaded)]
    runs += [run(work, f"changed{i}", changed=True, loaded=i == 0) for i in range(args.changed)]
    report(runs, plain_seconds(work))
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)


def plain_seconds(work: Path) -> float:
    """Wall seconds of a plain `pytest --jaxperf` of the project (after one warm-up run)."""
    cmd = [sys.executable, "-m", "pytest", "--jaxperf", "-q", "-p", "no:cacheprovider",
           "--jaxperf-no-reference-compile", f"--jaxperf-baseline={work / 'plain.json'}",
           "test_project.py"]  # fmt: skip
    subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    return time.perf_counter() - start


def report(runs: list[dict[str, Any]], plain_s: float | None) -> None:
    print(f"\n{'run':>10} {'s':>6} {'exit':>4}  " + "  ".join(
        f"{t[5:]:>10}.{p:<7}" for t in TESTS for p in PHASES))  # fmt: skip
    for r in runs:
        row = "  ".join(f"{r['counts'].get(t, {}).get(p, 0):>18,}" for t in TESTS for p in PHASES)
        print(f"{r['tag']:>10} {r['seconds']:>6.0f} {r['code']:>4}  {row}")
    unchanged = [r for r in runs if not r["changed"]]
    print("\nspread of the unchanged code's counts, (max - min) / min, over "
          f"{len(unchanged)} runs ({sum(r['loaded'] for r in unchanged)} loaded):")
    for t in TESTS:
        cells = [f"{p} {spread([r['counts'][t][p] for r in unchanged]):.3%}" for p in PHASES]
        print(f"  {t:<16} " + "  ".join(cells))
    same = [r for r in runs if r["changed"]]
    print("\nspread of test_same in every run (it never changes):")
    print("  " + "  ".join(
        f"{p} {spread([r['counts']['test_same'][p] for r in runs]):.3%}" for p in PHASES))
    base = runs[0]["counts"]
    print("\nchanged runs vs the baseline (ratio per phase):")
    for r in same:
        for t in TESTS:
            ratios = "  ".join(f"{p} {r['counts'][t][p] / base[t][p]:.4f}" for p in PHASES)
            print(f"  {r['tag']:<9} {t:<16} {ratios}")
    print("\nverdicts (breach lines; exit 1 = a test failed):")
    for r in runs[1:]:
        print(f"  {r['tag']:<9} exit {r['code']}  {len(r['breaches'])} breach line(s)")
        for line in r["breaches"]:
            print(f"      {line.strip()}")
    quiet = [r["seconds"] for r in runs if not r["loaded"]]
    print(f"\nseconds per run (wall, or pytest's own figure with --report-only), quiet: "
          f"{min(quiet):.0f}-{max(quiet):.0f}")  # fmt: skip
    if plain_s is not None:
        print(f"cost: a plain --jaxperf run {plain_s:.1f} s; under the compile clock "
              f"{min(quiet) / plain_s:.0f}-{max(quiet) / plain_s:.0f}x")


if __name__ == "__main__":
    main()
