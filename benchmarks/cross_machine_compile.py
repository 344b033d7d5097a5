"""Compile seconds across machines: does dividing by the machine's reference compile make
them comparable? And does a baseline from another CPU model gate compile time?

Backs docs/methodology.md: "compile seconds across CPU models; `cross_machine_compile_rtol`
| scaled by a reference compile; 1.5 (2.5x)", the default `cross_machine_compile_rtol`
(config.py), and its section "Compile time across machines, measured".

Run: ``.venv/bin/python benchmarks/cross_machine_compile.py [--runs N] [--gate-runs M]``
(defaults 3 and 10: about 8 minutes on 2 cores; ``--quick``: 1 and 2, about 2 minutes).

1. Data. The example project's suite (``example_project/``), ``--runs`` times in each of
   four conditions: quiet or beside two CPU hogs, on every CPU or confined to one
   (``sched_setaffinity``), each run ``pytest --jaxperf --jaxperf-timing=off
   -p no:cacheprovider`` (so the reference compile is measured afresh in each). Kept per
   run: the reference compile (``reference_compile_cpu_s``) and every test's compile CPU
   seconds. Written, with the machine's CPU model, core count and versions, to
   ``benchmarks/data/compile-<cpu model>-<date>.json`` (``--data-dir``): one file per machine
   and sitting, committed, so that the table below grows with every machine measured.
2. Analysis, over every file in the data folder (every machine so far): per machine and
   condition the median reference and, per test, compile CPU seconds / reference; then per
   test the spread (max / min) of that normalised value over all conditions and machines,
   against the spread of the raw seconds. The spread is what a cross-machine
   ``compile_rtol`` must absorb.
3. The gate. A baseline of the example suite saved here, quiet, with its environment's CPU
   model renamed (``<model> (relabelled)``): the plugin then sees another CPU model, and
   gates compile time on the baseline's CPU seconds scaled by the two reference compiles.
   ``--gate-runs`` runs of the unchanged suite quiet and as many beside two CPU hogs (false
   failures), then the traps ``builtin_sum`` and ``unrolled`` (each caught by program size,
   and by the scaled compile time?). Verdicts are the plugin's (``compare.evaluate`` on each
   report, with the example's own ``compile_rtol`` of 2).

``--analyse-only`` runs step 2 alone, over the files already in the data folder (seconds).

Only one CPU model is measured per sitting: the relabelled baseline checks the mechanism
and the noise on this machine, the data folder the model-to-model spread. Nothing is
asserted: the figures are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

from _common import EXAMPLE, PYTEST, ROOT, example_env, hogs

from pytest_jaxperf import compare, environment
from pytest_jaxperf.ab import cpus as ab_cpus
from pytest_jaxperf.config import MarkerLimits, Tolerances
from pytest_jaxperf.model import RunRecord
from pytest_jaxperf.storage import store

DATA = ROOT / "benchmarks" / "data"
KEY = environment.REFERENCE_KEY
HOGS, HOG_LIMIT = 2, 600
# The example project's own compile tolerance (pyproject.toml: jaxperf_compile_rtol = "2").
EXAMPLE_TOL = Tolerances(compile_rtol=2.0)
SIZES = (*compare.SIZE_WORDS.values(), "jaxpr_eqns", "hlo_ops")
TRAPS = {
    "builtin_sum": "tests/test_integration.py::test_overlap_matches_closed_form",
    "unrolled": "tests/test_integration.py::test_quantile_matches_the_closed_form",
}


def run_suite(
    out: Path, condition: str, cpus: frozenset[int] | None, *args: str, trap: str | None = None
) -> RunRecord:
    cmd = [*PYTEST, "--jaxperf", "--jaxperf-timing=off", f"--jaxperf-json={out}", *args]
    ctx = hogs(HOGS, HOG_LIMIT) if condition == "load" else contextlib.nullcontext([])
    with ctx:
        proc = subprocess.run(
            cmd, cwd=EXAMPLE, env=example_env(trap), capture_output=True, text=True,
            preexec_fn=ab_cpus.confine(cpus),
        )  # fmt: skip
    report = store.load(out) if proc.returncode in (0, 1) else None
    if report is None:
        sys.exit(f"pytest failed (rc={proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-3000:]}")
    return report


def compile_cpu(report: RunRecord) -> dict[str, float]:
    return {
        nodeid: rec.total_cpu_s
        for nodeid, rec in report.tests.items()
        if rec.total_cpu_s is not None and rec.compiles
    }


def collect(work: Path, runs: int) -> dict[str, Any]:
    """Step 1: the four conditions, `runs` each, alternated so that drift spreads evenly."""
    one = frozenset({min(os.sched_getaffinity(0))})
    conditions = [("quiet", None), ("quiet", one), ("load", None), ("load", one)]
    data: dict[str, Any] = {"runs": []}
    for number in range(runs):
        for condition, cpus in conditions:
            report = run_suite(work / f"data-{number}.json", condition, cpus)
            env = report.environment
            data.update({k: env.get(k) for k in ("cpu", "cpu_count", "jax", "jaxlib", "backend")})
            data["runs"].append({
                "condition": condition,
                "cpus": len(cpus) if cpus else len(os.sched_getaffinity(0)),
                "reference_s": env.get(KEY),
                # The spread of its samples (stored since the reference has several).
                "reference_spread": env.get(environment.SPREAD_KEY),
                "compile_cpu_s": compile_cpu(report),
            })  # fmt: skip
            print(f"  run {number + 1}/{runs} {condition:5} cpus={data['runs'][-1]['cpus']}: "
                  f"reference {env.get(KEY)} s", flush=True)  # fmt: skip
    data["python"] = platform.python_version()
    return data


def analyse(files: list[Path]) -> None:
    """Step 2: normalised compile seconds per machine and condition, and their spread."""
    machines = [json.loads(p.read_text()) for p in files]
    print(f"\n== compile CPU s / reference compile, {len(machines)} file(s) in {DATA}")
    print(f"{'machine':38}{'condition':>10}{'cpus':>5}{'reference s':>12}{'runs':>5}")
    raw: dict[str, list[float]] = {}
    norm: dict[str, list[float]] = {}
    for m in machines:
        groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for run in m["runs"]:
            groups.setdefault((run["condition"], run["cpus"]), []).append(run)
        for (condition, cpus), group in sorted(groups.items()):
            refs = [r["reference_s"] for r in group if r["reference_s"]]
            print(f"{m['cpu'][:37]:38}{condition:>10}{cpus:>5}"
                  f"{statistics.median(refs):>12.3f}{len(group):>5}")  # fmt: skip
            for r in group:
                for test, seconds in r["compile_cpu_s"].items():
                    raw.setdefault(test, []).append(seconds)
                    norm.setdefault(test, []).append(seconds / r["reference_s"])
    print(f"\n{'test':72}{'raw max/min':>12}{'norm max/min':>13}{'norm median':>12}")
    spreads = []
    for test in sorted(norm):
        spread = max(norm[test]) / min(norm[test])
        spreads.append(spread)
        print(f"{test[-71:]:72}{max(raw[test]) / min(raw[test]):>12.2f}{spread:>13.2f}"
              f"{statistics.median(norm[test]):>12.2f}")  # fmt: skip
    if spreads:
        middle = statistics.median(spreads)
        print(f"worst normalised spread {max(spreads):.2f}x, median {middle:.2f}x (what a "
              "cross-machine compile_rtol must absorb: rtol = spread - 1)")  # fmt: skip
    if len(machines) > 1:
        between_models(machines)


def between_models(machines: list[dict[str, Any]]) -> None:
    """Per test, each CPU model's median normalised compile seconds (all its conditions) and
    their ratio: the systematic part of the spread, which no choice of run removes."""
    models = sorted({m["cpu"] for m in machines})
    per: dict[str, dict[str, list[float]]] = {}
    refs: dict[str, list[float]] = {}
    for m in machines:
        for run in m["runs"]:
            if not run["reference_s"]:
                continue
            refs.setdefault(m["cpu"], []).append(run["reference_s"])
            for test, seconds in run["compile_cpu_s"].items():
                per.setdefault(test, {}).setdefault(m["cpu"], []).append(
                    seconds / run["reference_s"]
                )
    print("\n== between CPU models: median normalised compile s per model (all conditions)")
    print("reference compile, median (min-max): " + "; ".join(
        f"{model}: {statistics.median(refs[model]):.3f} s "
        f"({min(refs[model]):.3f}-{max(refs[model]):.3f})" for model in models
    ))  # fmt: skip
    head = "".join(f"{model[:16]:>17}" for model in models)
    print(f"{'test':56}{head}{'ratio':>7}{'within':>8}")
    ratios, within = [], []
    for test in sorted(per):
        if len(per[test]) < 2:
            continue
        medians = [statistics.median(per[test][m]) for m in models]
        ratio = max(medians) / min(medians)
        # The worst spread of one model's own runs (its noise, the reference's included).
        inside = max(max(v) / min(v) for v in per[test].values())
        ratios.append(ratio)
        within.append(inside)
        cells = "".join(f"{median:>17.2f}" for median in medians)
        print(f"{test[-55:]:56}{cells}{ratio:>7.2f}{inside:>8.2f}")
    if ratios:
        print(f"between models: ratio of the medians {min(ratios):.2f}-{max(ratios):.2f}x "
              f"(median {statistics.median(ratios):.2f}x); within one model's runs "
              f"{min(within):.2f}-{max(within):.2f}x (median {statistics.median(within):.2f}x)")


def gate(work: Path, runs: int, trap_runs: int) -> None:
    """Step 3: a baseline relabelled as another CPU model; false failures and traps."""
    base_path = work / "base.json"
    saved = run_suite(work / "saved.json", "quiet", None, "--jaxperf-save",
                      f"--jaxperf-baseline={base_path}")  # fmt: skip
    base = store.load(base_path)
    assert base is not None and saved.tests
    base.environment["cpu"] = f"{base.environment['cpu']} (relabelled)"
    store.save(base_path, base)
    tol = EXAMPLE_TOL
    print(f"\n== gate: baseline saved here, its CPU model renamed to {base.environment['cpu']!r}; "
          f"example compile_rtol {tol.compile_rtol:g}, floor {tol.compile_floor:g} s")  # fmt: skip
    print(f"{'condition':>10}{'trap':>13}{'runs':>6}{'failed':>8}{'by size':>9}{'by time':>9}"
          f"{'scaled':>8}{'scale':>14}")  # fmt: skip
    plan = [("quiet", None, runs), ("load", None, runs)]
    plan += [("quiet", trap, trap_runs) for trap in TRAPS]
    for condition, trap, n in plan:
        failed = by_size = by_time = scaled = 0
        factors = []
        for i in range(n):
            args = (TRAPS[trap],) if trap else ()
            report = run_suite(work / f"gate-{i}.json", condition, None, *args, trap=trap)
            now_env = report.environment
            for nodeid, rec in report.tests.items():
                before_env = base.environment_of(nodeid)
                scale = environment.machine_scale(before_env, now_env)
                if scale is not None:
                    factors.append(scale.factor)
                gating = compare.Gating.between(before_env, now_env, EXAMPLE_TOL)
                verdict = compare.evaluate(rec, base.tests.get(nodeid), MarkerLimits(), gating)
                gated = [b for b in verdict.breaches if b.gated]
                failed += bool(gated)
                by_size += any(b.metric in SIZES for b in gated)
                by_time += any(b.metric == compare.COMPILE_TIME for b in gated)
                scaled += any("across machines" in i for i in verdict.info)
        tests = n * (1 if trap else len(base.tests))
        span = f"{min(factors):.2f}-{max(factors):.2f}" if factors else "-"
        print(f"{condition:>10}{trap or 'unchanged':>13}{n:>6}{f'{failed}/{tests}':>8}"
              f"{by_size:>9}{by_time:>9}{scaled:>8}{span:>14}", flush=True)  # fmt: skip
    print("failed: test-runs with a gated breach (of all test-runs); by size / by time: of "
          "those, failed on a program size or metric / on compile time; scaled: test-runs whose "
          "compile time was gated through the reference compiles; scale: this machine's "
          "reference / the baseline's")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--runs", type=int, default=3, help="runs per data condition (default 3)")
    ap.add_argument("--gate-runs", type=int, default=10, help="unchanged runs per condition")
    ap.add_argument("--trap-runs", type=int, default=3, help="runs per trap (default 3)")
    ap.add_argument("--quick", action="store_true", help="1 run per condition, 2 gate runs")
    ap.add_argument("--data-dir", type=Path, default=DATA)
    ap.add_argument("--no-data", action="store_true", help="skip step 1 (analyse and gate only)")
    ap.add_argument("--analyse-only", action="store_true",
                    help="step 2 only: analyse the data folder, run nothing")  # fmt: skip
    ns = ap.parse_args(argv)
    runs, gate_runs, trap_runs = (1, 2, 1) if ns.quick else (ns.runs, ns.gate_runs, ns.trap_runs)
    t0 = time.monotonic()
    if ns.analyse_only:
        analyse(sorted(ns.data_dir.glob("compile-*.json")))
        return 0
    with tempfile.TemporaryDirectory(prefix="jaxperf-xmachine-") as tmp:
        work = Path(tmp)
        if not ns.no_data:
            print(f"== data: {runs} run(s) x 4 conditions of {EXAMPLE}", flush=True)
            data = collect(work, runs)
            slug = re.sub(r"[^a-z0-9]+", "-", str(data["cpu"]).lower()).strip("-")
            ns.data_dir.mkdir(parents=True, exist_ok=True)
            path = ns.data_dir / f"compile-{slug}-{date.today().isoformat()}.json"
            if path.exists():  # a second sitting the same day on this model: keep both
                data["runs"] = json.loads(path.read_text())["runs"] + data["runs"]
            path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            print(f"raw data: {path}")
        analyse(sorted(ns.data_dir.glob("compile-*.json")))
        gate(work, gate_runs, trap_runs)
    print(f"\n{time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
