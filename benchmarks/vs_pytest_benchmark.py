"""pytest-jaxperf's steady-state runtime against pytest-benchmark, on the same jitted calls.

Backs docs/marker-and-fixture.md: "for 1 ms calls the two agree within noise
(`benchmarks/vs_pytest_benchmark.py`)".

Run: ``.venv/bin/python benchmarks/vs_pytest_benchmark.py [--repeat N] [--pb-warmup calls|on]``
(needs ``pip install pytest-benchmark``; default 4 pairs of runs, about 1-2 minutes).

Generates, in a temporary directory with its own ``pytest.ini``, two test modules over the same
three jitted calls on float32 CPU arrays:

    elementwise_1e3   jnp.sin(x) * 2 + 1, 1,000 elements
    elementwise_1e6   jnp.sin(x) * 2 + 1, 1,000,000 elements
    matmul_512        x @ x, 512 x 512

(a) ``jaxperf.benchmark(f, x)`` under ``pytest --jaxperf --jaxperf-json=...`` (pytest-benchmark
    not loaded), with jaxperf's defaults: first call timed separately, program metrics, 0.05 s
    warm-up, rounds calibrated to >= 2 ms each, >= 20 rounds and >= 1 s of rounds, GC off.
(b) ``benchmark(lambda: f(x).block_until_ready())`` under ``pytest --benchmark-json=...``
    (jaxperf not loaded), with pytest-benchmark's defaults (min_rounds 5, max_time 1 s,
    min_time 5 us, calibration_precision 10, perf_counter, GC on, no precision target), after
    a warm-up: by default (``--pb-warmup calls``) the test calls ``f(x).block_until_ready()``
    once (the compile) and then for 0.05 s before ``benchmark(...)``, as jaxperf does; with
    ``--pb-warmup on`` it passes ``--benchmark-warmup=on`` instead (pytest-benchmark's own
    warm-up: up to 100,000 iterations or max_time at each calibration step).

Each tool runs in its own pytest subprocess; the pairs alternate their order. For each call it
prints both tools' median per-call time (median over the runs), their ratio, the rounds x
iterations, the time spent in timed rounds (pytest-benchmark: stats.total x iterations;
jaxperf: rounds x iterations x mean), the test body's wall time, and each run's wall and CPU
time with the 1-minute load average (``os.getloadavg()``) at its start.

Targets (issue 3, item 7): each call's medians within 5% of each other, and the jaxperf run
in no more wall time than the pytest-benchmark run (median over runs). PASS/MISS per target.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from _common import add_quiet_wait, usage, wait_for_quiet

CASES = ("elementwise_1e3", "elementwise_1e6", "matmul_512")
TOOLS = ("jaxperf", "pytest-benchmark")
TARGET_MEDIAN_RTOL = 0.05

PYTEST_INI = "[pytest]\naddopts = -p no:cacheprovider\n"

COMMON = f"""
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

CASES = {list(CASES)!r}
WARMUP_S = 0.05  # jaxperf's default warm-up


@jax.jit
def elementwise(x):
    return jnp.sin(x) * 2 + 1


@jax.jit
def matmul(x):
    return x @ x


def make(case):
    if case == "matmul_512":
        rng = np.random.default_rng(0)
        return matmul, jnp.asarray(rng.standard_normal((512, 512), dtype=np.float32))
    n = 1000 if case == "elementwise_1e3" else 1_000_000
    return elementwise, jnp.asarray(np.linspace(0.0, 1.0, n, dtype=np.float32))


def log(tool, case, body_s, first_s=None):
    row = {{"tool": tool, "case": case, "body_s": body_s, "first_s": first_s}}
    with open(os.environ["VS_BODY_LOG"], "a") as fh:
        fh.write(json.dumps(row) + "\\n")
"""

JAXPERF_TESTS = """
from common import CASES, log, make
import pytest
import time


@pytest.mark.parametrize("case", CASES)
def test_jaxperf(jaxperf, case):
    f, x = make(case)
    start = time.perf_counter()
    jaxperf.benchmark(f, x, label=case)
    log("jaxperf", case, time.perf_counter() - start)
"""

PB_TESTS = """
import os
import time

import pytest
from common import CASES, WARMUP_S, log, make



@pytest.mark.parametrize("case", CASES)
def test_pytest_benchmark(benchmark, case):
    f, x = make(case)
    start = time.perf_counter()
    first_s = None
    if os.environ["VS_PB_WARMUP"] == "calls":
        f(x).block_until_ready()  # the compile
        t0 = time.perf_counter()
        first_s = t0 - start
        while time.perf_counter() - t0 < WARMUP_S:
            f(x).block_until_ready()
    benchmark(lambda: f(x).block_until_ready())
    log("pytest-benchmark", case, time.perf_counter() - start, first_s)
"""


@dataclass
class Measure:
    median_s: float
    min_s: float
    mean_s: float
    rounds: int
    iterations: int
    in_rounds_s: float
    body_s: float = float("nan")
    first_s: float = float("nan")  # first call (trace + compile + run)


@dataclass
class Run:
    tool: str
    wall_s: float
    cpu_s: float
    load1: float
    others: float | None  # CPU seconds other processes used during the run (Linux only)
    cases: dict[str, Measure] = field(default_factory=dict)


def run_tool(tool: str, workdir: Path, index: int, pb_warmup: str) -> Run:
    report = workdir / f"{tool}-{index}.json"
    body_log = workdir / f"{tool}-{index}.body.jsonl"
    cmd = [sys.executable, "-m", "pytest", "-q"]
    if tool == "jaxperf":
        cmd += ["-p", "no:benchmark", "--jaxperf", f"--jaxperf-json={report}", "test_jaxperf.py"]
    else:
        cmd += ["-p", "no:jaxperf", f"--benchmark-json={report}", "test_pb.py"]
        if pb_warmup == "on":
            cmd.append("--benchmark-warmup=on")
    env = {**os.environ, "VS_BODY_LOG": str(body_log), "VS_PB_WARMUP": pb_warmup}
    load1 = os.getloadavg()[0]
    with usage() as used:
        proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{tool} run failed (exit {proc.returncode}):\n{proc.stdout[-4000:]}{proc.stderr}")
    run = Run(tool, used.wall, used.cpu, load1, used.others())
    data = json.loads(report.read_text())
    if tool == "jaxperf":
        for nodeid, test in data["tests"].items():
            for case, bench in test["benchmarks"].items():
                rt = bench["runtime"]
                run.cases[case] = Measure(
                    rt["median_s"],
                    rt["min_s"],
                    rt["mean_s"],
                    rt["rounds"],
                    rt["iterations"],
                    rt["rounds"] * rt["iterations"] * rt["mean_s"],
                    first_s=bench["first_call_s"],
                )
                assert case in nodeid
    else:
        for bench in data["benchmarks"]:
            st = bench["stats"]
            iterations = st.get("iterations", bench.get("iterations", 1))
            run.cases[bench["param"]] = Measure(
                st["median"], st["min"], st["mean"], st["rounds"], iterations,
                st["total"] * iterations,
            )  # fmt: skip
    for line in body_log.read_text().splitlines():
        row = json.loads(line)
        run.cases[row["case"]].body_s = row["body_s"]
        if row["first_s"] is not None:
            run.cases[row["case"]].first_s = row["first_s"]
    return run


def _t(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def _s(seconds: float) -> str:
    return "-" if math.isnan(seconds) else f"{seconds:.2f}s"


def _med(values: list[float]) -> float:
    return statistics.median(values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeat", type=int, default=4, help="pairs of runs, alternating order (default 4)"
    )
    parser.add_argument(
        "--pb-warmup",
        choices=("calls", "on"),
        default="calls",
        help="pytest-benchmark warm-up: compile + 0.05 s of calls in the test (default), "
        "or --benchmark-warmup=on",
    )
    add_quiet_wait(parser)
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    try:
        pb_version = importlib.metadata.version("pytest-benchmark")
    except importlib.metadata.PackageNotFoundError:
        sys.exit("pytest-benchmark is not installed: .venv/bin/pip install pytest-benchmark")
    versions = {p: importlib.metadata.version(p) for p in ("pytest", "jax", "pytest-jaxperf")}

    started = time.perf_counter()
    runs: list[Run] = []
    waited = 0.0
    with tempfile.TemporaryDirectory(prefix="jaxperf-vs-pb-") as tmp:
        workdir = Path(tmp)
        (workdir / "pytest.ini").write_text(PYTEST_INI)
        (workdir / "common.py").write_text(COMMON)
        (workdir / "test_jaxperf.py").write_text(JAXPERF_TESTS)
        (workdir / "test_pb.py").write_text(PB_TESTS)
        for i in range(args.repeat):
            order = TOOLS if i % 2 == 0 else TOOLS[::-1]
            for tool in order:
                waited += wait_for_quiet(args.quiet_wait)
                runs.append(run_tool(tool, workdir, i, args.pb_warmup))
                r = runs[-1]
                others = "?" if r.others is None else f"{r.others / r.wall_s:4.2f}"
                print(
                    f"  pair {i + 1}/{args.repeat}: {tool:<16} wall {r.wall_s:6.2f} s  "
                    f"cpu {r.cpu_s:6.2f} s  load1 {r.load1:.2f}  other processes {others} cores",
                    flush=True,
                )
    total = time.perf_counter() - started

    by_tool = {t: [r for r in runs if r.tool == t] for t in TOOLS}
    warmup = (
        "in-test compile + 0.05 s of calls"
        if args.pb_warmup == "calls"
        else "--benchmark-warmup=on"
    )
    print()
    print(
        f"pytest-jaxperf {versions['pytest-jaxperf']} vs pytest-benchmark {pb_version} "
        f"(pytest {versions['pytest']}, jax {versions['jax']}, CPU, {os.cpu_count()} cores); "
        f"{args.repeat} pairs, alternating order; {total:.0f} s in all"
    )
    print(
        "jaxperf: defaults (warm-up 0.05 s, rounds >= 2 ms, >= 20 rounds, >= 1 s, GC off); "
        f"pytest-benchmark: defaults (min_rounds 5, max_time 1 s, min_time 5 us, GC on) + {warmup}"
    )
    loads = [r.load1 for r in runs]
    print(
        f"load average (1 min) at run starts: min {min(loads):.2f}, median {_med(loads):.2f}, "
        f"max {max(loads):.2f}; now {', '.join(f'{v:.2f}' for v in os.getloadavg())}"
    )
    shares = [r.others / r.wall_s for r in runs if r.others is not None]
    if shares:
        print(
            f"other processes during the runs: median {_med(shares):.2f}, max {max(shares):.2f} "
            f"of {os.cpu_count()} cores (waited {waited:.0f} s in all for quiet)"
        )
        if max(shares) > 0.25:
            print("  WARNING: the machine was busy; per-call times and wall times are noisy")
    print()
    print("per call: median of the runs' medians [min-max over runs]; ratio = jaxperf / pb")
    print(f"{'call':<16} {'jaxperf':>24} {'pytest-benchmark':>24} {'ratio':>6} {'[range]':>13}  5%")
    misses = 0
    for case in CASES:
        cols = []
        for tool in TOOLS:
            meds = [r.cases[case].median_s for r in by_tool[tool]]
            cols.append((_med(meds), min(meds), max(meds)))
        pair_ratios = [
            a.cases[case].median_s / b.cases[case].median_s
            for a, b in zip(by_tool["jaxperf"], by_tool["pytest-benchmark"])
        ]
        ratio = cols[0][0] / cols[1][0]
        ok = abs(ratio - 1) <= TARGET_MEDIAN_RTOL
        misses += not ok
        cells = [f"{_t(m)} [{_t(lo)}-{_t(hi)}]" for m, lo, hi in cols]
        print(
            f"{case:<16} {cells[0]:>24} {cells[1]:>24} {ratio:6.3f} "
            f"[{min(pair_ratios):.2f}-{max(pair_ratios):.2f}]  {'PASS' if ok else 'MISS'}"
        )
    print()
    print("detail (median over runs): per-call min / mean, rounds x iterations, time in timed")
    print("rounds, the first call (compile), and the test body's wall time (all of it)")
    print(
        f"{'call':<16} {'tool':<16} {'min':>10} {'mean':>10} {'rounds x iter':>15} "
        f"{'in rounds':>10} {'first':>8} {'body':>8}"
    )
    for case in CASES:
        for tool in TOOLS:
            ms = [r.cases[case] for r in by_tool[tool]]
            rounds = int(_med([m.rounds for m in ms]))
            iters = int(_med([m.iterations for m in ms]))
            print(
                f"{case:<16} {tool:<16} {_t(_med([m.min_s for m in ms])):>10} "
                f"{_t(_med([m.mean_s for m in ms])):>10} {f'{rounds} x {iters}':>15} "
                f"{_s(_med([m.in_rounds_s for m in ms])):>10} "
                f"{_s(_med([m.first_s for m in ms])):>8} {_s(_med([m.body_s for m in ms])):>8}"
            )
    print()
    walls = {t: _med([r.wall_s for r in by_tool[t]]) for t in TOOLS}
    cpus = {t: _med([r.cpu_s for r in by_tool[t]]) for t in TOOLS}
    bodies = {t: _med([sum(m.body_s for m in r.cases.values()) for r in by_tool[t]]) for t in TOOLS}
    wall_ok = walls["jaxperf"] <= walls["pytest-benchmark"]
    print("whole pytest run (median over runs)   wall      cpu   3 test bodies")
    for t in TOOLS:
        print(f"  {t:<34} {walls[t]:6.2f} s {cpus[t]:6.2f} s  {bodies[t]:6.2f} s")
    print()
    print(
        f"target medians within 5%: {'PASS' if not misses else 'MISS'} "
        f"({len(CASES) - misses}/{len(CASES)} calls)"
    )
    wall_ratios = [
        a.wall_s / b.wall_s for a, b in zip(by_tool["jaxperf"], by_tool["pytest-benchmark"])
    ]
    print(
        f"target jaxperf wall <= pytest-benchmark wall: {'PASS' if wall_ok else 'MISS'} "
        f"({walls['jaxperf']:.2f} s vs {walls['pytest-benchmark']:.2f} s, "
        f"ratio {walls['jaxperf'] / walls['pytest-benchmark']:.3f}; "
        f"per pair {min(wall_ratios):.2f}-{max(wall_ratios):.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
