"""False regressions of a whole suite gated against its own baseline, per 1,000 tests, and
the tail of the per-test compile-time ratio (issue 31).

Backs docs/methodology.md: "Measured with both mechanisms on
(`benchmarks/suite_false_failures.py`, five real suites ...): **0 false regressions in
8,936 gated test-reruns**", the defaults `compile_rtol` 1.0 and the recompile
confirmation's.

Run: ``.venv/bin/python benchmarks/suite_false_failures.py --name NAME --cwd DIR
[--python PY] [--reruns N] [--conditions quiet,hogs] [--workdir W] [--floor S]
[--analyze-only] -- PYTEST_ARGS...``

In ``--cwd`` (the suite's root), with ``--python`` (default: this interpreter), the suite is
run once to save a baseline (``--jaxperf --jaxperf-all --jaxperf-save``), then ``--reruns``
times per condition against it, code unchanged (``--jaxperf --jaxperf-all
--jaxperf-json``): ``quiet``, and ``hogs`` beside two CPU-spinning processes
(``_common.hogs``). Every test the plugin fails in a rerun (outcome ``regressed``) is a
false regression. ``--analyze-only`` reads the files an earlier run left in ``--workdir``.

Printed per condition: tests, reruns, false regressions (and per 1,000 tests and rerun),
the breaches the recompiles did not confirm (each a false failure the confirmation saved),
and, over the tests whose baseline compile CPU seconds exceed ``--floor`` (the gate's
floor, 0.1 s), the quantiles of the rerun/baseline ratio of those seconds as first measured
(1%, 5%, median, 95%, 99%, max) and how many are over 1.5x and 2x; then each rerun's wall
and CPU seconds (the gated rerun measured 1.2x wall at equal CPU on optax). A suite set up
in WORK (its source, and a virtualenv with its test extras and this plugin), e.g. optax::

    .venv/bin/python benchmarks/suite_false_failures.py --name optax \\
        --cwd WORK/optax-0.2.8 --python WORK/venv/bin/python --workdir WORK/ff-optax \\
        -- optax/_src/alias_test.py optax/_src/linesearch_test.py ...

(the selections: ``benchmarks/results/suite_false_failures-*.txt``). A
smoke test on the example project (about a minute on 2 cores)::

    .venv/bin/python benchmarks/suite_false_failures.py --name example \\
        --cwd example_project --reruns 1

Exit code 0 whatever the figures; non-zero when a run could not be made or read.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import PYTEST, clean_env, fmt, hogs, print_total, usage

HOGS, HOG_LIMIT = 2, 3600
FLOOR_S = 0.1
NOT_CONFIRMED = " not confirmed: "
CONFIRMED = "confirmed: fastest of"


@dataclass
class Rerun:
    condition: str
    index: int
    wall: float
    cpu: float
    others: float | None  # CPU s other processes used meanwhile (the hogs included)
    tests: dict[str, Any]
    not_confirmed: int  # breaches the recompiles did not confirm (passed)
    confirmed: int  # breaches confirmed (failed)


def compile_cpu(test: dict[str, Any]) -> float | None:
    """A test's trace + lower + backend-compile CPU seconds as gated (its functions'), or
    None where not measured."""
    values = [test.get(k) for k in ("trace_cpu_s", "lower_cpu_s", "compile_cpu_s")]
    return None if any(v is None for v in values) else float(sum(values))  # type: ignore[arg-type]


def ratios(baseline: dict[str, Any], rerun: dict[str, Any], floor: float) -> list[float]:
    """Per test in both whose baseline compile CPU seconds exceed `floor`: rerun / baseline."""
    out = []
    for nodeid, base in baseline.items():
        now = rerun.get(nodeid)
        before = compile_cpu(base)
        if now is None or before is None or before <= floor:
            continue
        after = compile_cpu(now)
        if after is not None:
            out.append(after / before)
    return out


def quantile(values: list[float], q: float) -> float | None:
    """The q-quantile (0..1) by linear interpolation; None without values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def regressed(tests: dict[str, Any]) -> list[str]:
    return sorted(k for k, t in tests.items() if t.get("outcome") == "regressed")


def run_pytest(
    python: str, cwd: Path, args: list[str], log: Path, condition: str = "quiet"
) -> tuple[float, float, float | None]:
    """One pytest run (its output in `log`): wall seconds, the run's CPU seconds, and the
    CPU seconds other processes used meanwhile (None off Linux)."""
    cmd = [python, *PYTEST[1:], *args]
    ctx = hogs(HOGS, HOG_LIMIT) if condition == "hogs" else contextlib.nullcontext([])
    with ctx, usage() as used, log.open("w") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        proc = subprocess.run(cmd, cwd=cwd, env=clean_env(), stdout=f, stderr=subprocess.STDOUT)
    if proc.returncode not in (0, 1):
        text = log.read_text(errors="replace")
        tail = "\n".join(text.splitlines()[-20:])
        raise SystemExit(f"pytest rc={proc.returncode} ({log}):\n{tail}")
    # The hogs are reaped after the block: `used.cpu` is the pytest process's alone.
    return used.wall, used.cpu, used.others()


def load_tests(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text())["tests"])


def measure(ns: argparse.Namespace, work: Path) -> None:
    baseline = work / "baseline.json"
    common = ["--jaxperf", "--jaxperf-all", f"--jaxperf-baseline={baseline}"]
    if not baseline.exists():
        print(f"{ns.name}: saving the baseline ({work / 'save.log'})", flush=True)
        wall, cpu, others = run_pytest(
            ns.python, ns.cwd, [*common, "--jaxperf-save", *ns.pytest_args], work / "save.log"
        )
        print(f"  save: {wall:.1f} s wall, {cpu:.1f} s CPU, others {fmt(others, '.1f', ' s')}",
              flush=True)  # fmt: skip
    for condition in ns.conditions:
        for i in range(ns.reruns):
            out = work / f"{condition}-{i}.json"
            log = out.with_suffix(".log")
            args = [*common, f"--jaxperf-json={out}", *ns.pytest_args]
            wall, cpu, others = run_pytest(ns.python, ns.cwd, args, log, condition)
            (work / f"{condition}-{i}.usage").write_text(json.dumps([wall, cpu, others]))
            print(f"  {condition} rerun {i}: {wall:.1f} s wall, {cpu:.1f} s CPU, others "
                  f"{fmt(others, '.1f', ' s')}", flush=True)  # fmt: skip


def read_reruns(work: Path, conditions: list[str]) -> list[Rerun]:
    reruns = []
    for condition in conditions:
        for out in sorted(work.glob(f"{condition}-*.json")):
            log = out.with_suffix(".log").read_text(errors="replace")
            used = out.with_suffix(".usage")
            values = json.loads(used.read_text()) if used.exists() else []
            # Files from before `others` was kept hold [wall, cpu].
            wall, cpu, others = (values + [0.0, 0.0, None][len(values) :])[:3]
            reruns.append(Rerun(
                condition, int(out.stem.rsplit("-", 1)[1]), wall, cpu, others, load_tests(out),
                sum(NOT_CONFIRMED in line for line in log.splitlines()),
                sum(CONFIRMED in line and NOT_CONFIRMED not in line
                    for line in log.splitlines()),
            ))  # fmt: skip
    return reruns


def report(name: str, baseline: dict[str, Any], reruns: list[Rerun], floor: float) -> None:
    print(
        f"\n{'suite':<10} {'condition':<9} {'tests':>6} {'reruns':>6} {'false regr.':>11} "
        f"{'per 1,000':>9} {'unconfirmed':>11} {'gated':>6} {'q01':>5} {'q05':>5} "
        f"{'median':>6} {'q95':>5} {'q99':>5} {'max':>6} {'>1.5x':>5} {'>2x':>4}"
    )
    for condition in dict.fromkeys(r.condition for r in reruns):
        runs = [r for r in reruns if r.condition == condition]
        tests = statistics.mean(len(r.tests) for r in runs)
        false = sum(len(regressed(r.tests)) for r in runs)
        per_1000 = 1000 * false / (tests * len(runs)) if tests else 0.0
        values = [x for r in runs for x in ratios(baseline, r.tests, floor)]
        q = [quantile(values, p) for p in (0.01, 0.05, 0.5, 0.95, 0.99)]
        print(
            f"{name:<10} {condition:<9} {tests:>6.0f} {len(runs):>6} {false:>11} "
            f"{per_1000:>9.2f} {sum(r.not_confirmed for r in runs):>11} {len(values):>6} "
            + " ".join(f"{fmt(v, '.2f'):>5}" for v in q[:2])
            + f" {fmt(q[2], '.2f'):>6} {fmt(q[3], '.2f'):>5} {fmt(q[4], '.2f'):>5} "
            f"{fmt(max(values) if values else None, '.2f'):>6} "
            f"{sum(v > 1.5 for v in values):>5} {sum(v > 2 for v in values):>4}"
        )
    print("\n(gated: test-reruns whose baseline compile CPU s exceed the floor, the ratio's "
          f"population; floor {floor:g} s)")  # fmt: skip
    for r in reruns:
        names = regressed(r.tests)
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        print(
            f"  {r.condition} rerun {r.index}: {r.wall:.1f} s wall, {r.cpu:.1f} s CPU, others "
            f"{fmt(r.others, '.1f', ' s')}; "
            f"{len(names)} regressed{': ' + shown if names else ''}; "
            f"{r.not_confirmed} not confirmed, {r.confirmed} confirmed"
        )


def main() -> int:
    t_start = time.perf_counter()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", required=True, help="the suite's name in the table")
    parser.add_argument("--cwd", type=Path, required=True, help="where pytest runs")
    parser.add_argument("--python", default=sys.executable, help="the suite's interpreter")
    parser.add_argument("--reruns", type=int, default=3, help="gated reruns per condition")
    parser.add_argument("--conditions", default="quiet,hogs", help="quiet and/or hogs")
    parser.add_argument("--workdir", type=Path, help="baseline, run files and logs")
    parser.add_argument("--floor", type=float, default=FLOOR_S, help="ratio population floor")
    parser.add_argument("--analyze-only", action="store_true", help="read an earlier run's files")
    parser.add_argument("pytest_args", nargs="*", help="the suite's selection, after --")
    ns = parser.parse_args()
    ns.conditions = [c for c in ns.conditions.split(",") if c]
    if bad := [c for c in ns.conditions if c not in ("quiet", "hogs")]:
        parser.error(f"--conditions: unknown {', '.join(bad)}; use quiet and/or hogs")
    ns.cwd = ns.cwd.resolve()
    work = (ns.workdir or Path(f"suite-false-failures-{ns.name}")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    if not ns.analyze_only:
        measure(ns, work)
    baseline = work / "baseline.json"
    if not baseline.exists():
        raise SystemExit(f"{baseline} not found: run without --analyze-only first")
    report(ns.name, load_tests(baseline), read_reruns(work, ns.conditions), ns.floor)
    print(f"\nfiles: {work}")
    print_total(t_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
