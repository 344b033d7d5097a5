"""What a baseline holds against the run file (schema /7), and whether the rounds and the
runtime statistics it keeps judge as all of them do.

Backs docs/outputs.md ("a baseline holds what the gate reads": the example's baseline size
before and after /7) and `storage/resave.py`'s BASELINE_SAMPLES (a baseline keeps 40 order
statistics of a benchmark's rounds for the rank test) and `baseline_form` (of the runtime
statistics only those compare.runtime_verdict reads).

Run: ``.venv/bin/python benchmarks/baseline_form.py [--rounds 100] [--trials 400]
[--samples 20] [--no-example] [--example-only]`` (``--samples``: keep that many rounds
instead, to compare; ``--no-example``: step 2's synthetic rounds only; ``--example-only``:
step 1 alone, which also runs with an older checkout's plugin on PYTHONPATH)

1. A copy of the example project, its baseline removed, is saved with ``--jaxperf-min-rounds
   ROUNDS`` (and its run file written); then saved again with one benchmark 2x slower
   (``JAXPERF_EXAMPLE_REGRESSION=slow_2x``), both with ``--jaxperf-runtime-rtol=0.5`` (the
   example's own 3 would keep a 2x slower runtime as stored). Printed: the sizes of the
   baseline and of the run file (the run file holds what a baseline of /5 held), each
   benchmark's runtime line in both (what a moved benchmark rewrites), and the diff of the
   second save. (The baseline of /7 also leaves out wall seconds beside the gated CPU seconds,
   the eager block's seconds and the runtime statistics the rule does not read.)
2. The runtime rule (`compare.runtime_verdict`: median, fastest round, rank test) on
   ``--trials`` synthetic pairs of 100 rounds each (lognormal spread, one round in ten slowed
   by load) per slowdown factor, against the base's 100 rounds and against what a baseline
   keeps (its 40 rounds and, of its statistics, what the rule reads): how often the two
   verdicts agree, at the default runtime_rtol and at 0.1; and the same on the real rounds
   of step 1 (each benchmark of the second run against the first).

Exit code 0 whatever the figures; non-zero when a run failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import EXAMPLE, PYTEST, example_env  # noqa: E402

from pytest_jaxperf.compare import Gating, Verdict, runtime_verdict  # noqa: E402
from pytest_jaxperf.config import Tolerances  # noqa: E402
from pytest_jaxperf.model import BenchmarkEntry, RecordedTest, RuntimeStats  # noqa: E402
from pytest_jaxperf.storage import resave, store  # noqa: E402

BASELINE = Path(".jaxperf") / "baseline.json"


def save(cwd: Path, run_file: str, rounds: int, regression: str | None) -> None:
    cmd = [*PYTEST, "--jaxperf", "--jaxperf-save", f"--jaxperf-json={run_file}",
           f"--jaxperf-min-rounds={rounds}", "--jaxperf-runtime-rtol=0.5"]  # fmt: skip
    done = subprocess.run(cmd, cwd=cwd, env=example_env(regression), capture_output=True,
                          text=True, check=False)  # fmt: skip
    line = next((x for x in done.stdout.splitlines() if x.startswith("jaxperf: baseline")), "")
    print(f"  $ {' '.join(cmd[3:])}{f'  ({regression})' if regression else ''}\n  {line}")
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-3000:])
        raise SystemExit(done.returncode)


def runtime_lines(text: str) -> dict[str, int]:
    """The length of each benchmark's runtime line, by the benchmark's label."""
    out, label = {}, ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.endswith(": {") and line.startswith(" " * 8) and not line.startswith(" " * 9):
            label = stripped[1 : stripped.index('"', 1)]
        if stripped.startswith('"runtime": '):
            out[label] = len(line)
    return out


def files(cwd: Path, rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    save(cwd, "run1.json", rounds, None)
    before = (cwd / BASELINE).read_text()
    run_text = store.dumps(store.load_run(cwd / "run1.json"))
    for name, text in (("baseline", before), ("run file", run_text)):
        print(f"  {name}: {len(text.encode()):,} bytes, {text.count(chr(10))} lines")
    base_lines, run_lines = runtime_lines(before), runtime_lines(run_text)
    for label in sorted(base_lines):
        print(f"  runtime line of {label}: {run_lines.get(label)} characters in the run file "
              f"(as /5 stored it), {base_lines[label]} in the baseline")  # fmt: skip
    save(cwd, "run2.json", rounds, "slow_2x")
    after = (cwd / BASELINE).read_text()
    diff = [x for x in difflib.unified_diff(before.splitlines(), after.splitlines(), n=0)
            if x[:1] in "+-" and x[:3] not in ("+++", "---")]  # fmt: skip
    longest = max((len(x) for x in diff), default=0)
    print(f"  diff of the second save: {len(diff)} lines changed, "
          f"{sum(map(len, diff)):,} characters, the longest line {longest}")  # fmt: skip
    return samples_of(cwd / "run1.json"), samples_of(cwd / "run2.json")


def samples_of(path: Path) -> dict[str, list[float]]:
    run = store.load_run(path)
    return {
        f"{nodeid}::{label}": list(entry.runtime.samples_s)
        for nodeid, rec in run.tests.items()
        for label, entry in rec.benchmark_entries()
        if entry.runtime is not None
    }


def entry(samples: list[float]) -> BenchmarkEntry:
    ordered = sorted(samples)
    n = len(ordered)
    median = ordered[n // 2]
    stats = RuntimeStats(
        min_s=ordered[0], max_s=ordered[-1], median_s=median, mean_s=sum(ordered) / n,
        stddev_s=0.0, q1_s=ordered[n // 4], q3_s=ordered[3 * n // 4], iqr_s=0.0, rounds=n,
        iterations=1, outliers=0, samples_s=tuple(samples),
    )  # fmt: skip
    return BenchmarkEntry(None, None, None, None, True, runtime=stats)


def outcome(now: BenchmarkEntry, base: BenchmarkEntry, tol: Tolerances) -> str:
    verdict = Verdict()
    runtime_verdict(verdict, "b", now, base, Gating(tol=tol))
    return "breach" if verdict.breaches else "improved" if verdict.improvements else "ok"


def kept(base: BenchmarkEntry) -> BenchmarkEntry:
    """`base` as a baseline keeps it (resave.baseline_form: its rounds and statistics)."""
    form = resave.baseline_form(RecordedTest(benchmarks={"b": base}), "cpu").benchmarks["b"]
    assert isinstance(form, BenchmarkEntry)
    return form


def draw(rng: random.Random, factor: float, n: int = 100) -> list[float]:
    return [1e-3 * factor * rng.lognormvariate(0, 0.1) * (rng.choice([1.0] * 9 + [1.6]))
            for _ in range(n)]  # fmt: skip


def synthetic(trials: int) -> None:
    rng = random.Random(0)
    for rtol in (Tolerances().runtime_rtol, 0.1):
        tol = dataclasses.replace(Tolerances(), runtime_rtol=rtol)
        print(f"  runtime_rtol {rtol:g}:")
        for factor in (0.5, 0.9, 1.0, 1.05, 1.1, 1.2, 1.5, 1.75, 2.0, 3.0):
            same, found = 0, {"all": 0, "kept": 0}
            for _ in range(trials):
                base, now = entry(draw(rng, 1.0)), entry(draw(rng, factor))
                full, slim = outcome(now, base, tol), outcome(now, kept(base), tol)
                same += full == slim
                found["all"] += full == "breach"
                found["kept"] += slim == "breach"
            print(f"    x{factor:<5g} verdicts agree {same}/{trials}; breaches against all "
                  f"rounds {found['all']}, against the kept {found['kept']}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--samples", type=int)
    parser.add_argument("--no-example", action="store_true")
    parser.add_argument("--example-only", action="store_true")
    args = parser.parse_args()
    if args.samples is not None:
        resave.BASELINE_SAMPLES = args.samples
    print(f"rounds a baseline keeps: {getattr(resave, 'BASELINE_SAMPLES', 'all')}")
    first: dict[str, list[float]] = {}
    second: dict[str, list[float]] = {}
    if not args.no_example:
        print("1. the example project, saved, then saved with dense_relu 2x slower:")
        with tempfile.TemporaryDirectory() as tmp:
            cwd = Path(tmp) / "example_project"
            ignore = shutil.ignore_patterns("baseline.json", "*.pyc")
            shutil.copytree(EXAMPLE, cwd, ignore=ignore)
            first, second = files(cwd, args.rounds)
    if args.example_only:
        return 0
    print("2. the runtime rule against all rounds and against the kept ones:")
    print("  real rounds (the second run's against the first's):")
    for rtol in (Tolerances().runtime_rtol, 0.1):
        tol = dataclasses.replace(Tolerances(), runtime_rtol=rtol)
        for name in sorted(first.keys() & second.keys()):
            base, now = entry(first[name]), entry(second[name])
            full, slim = outcome(now, base, tol), outcome(now, kept(base), tol)
            print(f"    rtol {rtol:g} {name.split('::')[-1]} ({len(first[name])} rounds): "
                  f"all {full}, kept {slim}")  # fmt: skip
    print(f"  synthetic rounds, {args.trials} pairs per factor:")
    synthetic(args.trials)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
