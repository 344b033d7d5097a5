"""The GPU check: what must hold when the plugin runs on a CUDA GPU, printed as one
PASS / FAIL / SKIP line per check with the figures it measured.

Backs README.md: "`python3 benchmarks/gpu_check.py` checks a CUDA GPU run against a CPU run
of the same tests", and docs/limitations.md's "GPUs" item ("`benchmarks/gpu_check.py` is
what vouches for a CUDA GPU"). Run on the GPU machines.

Run: ``python3 benchmarks/gpu_check.py`` from a checkout, on a machine with a CUDA GPU and
jax with its CUDA plugin (about 2 minutes on one H100); ``--cpu-self-test`` anywhere: both
sides on the CPU, the checks that need a GPU reported as SKIP with the reason. The plugin
need not be installed: every pytest run loads it from this checkout (``PYTHONPATH``, ``-p
pytest_jaxperf.plugin``, other plugins' autoload off), and the example project's package
from ``example_project/``. Nothing in the checkout is written: reports and the copied tests
live in a temporary folder (``--keep`` keeps it).

Runs (each a ``pytest --jaxperf --jaxperf-allow-partial -rP`` with ``--jaxperf-json``, a
baseline that does not exist, so nothing is gated, and pytest's cache off; full float32
matmuls, ``JAX_DEFAULT_MATMUL_PRECISION=highest``, on both sides), first with
``JAX_PLATFORMS=cuda``, then with ``JAX_PLATFORMS=cpu``:

- ``benchmarks/gpu_tests/test_gpu.py``: the same matmul benchmarked once and twice in a row,
  retraces per shape and dtype, a scan under grad, a donated argument;
- the example project's tests;
- and before them, once ``--jaxperf-runtime-clock=instructions`` with ``JAX_PLATFORMS=cuda``
  (refused before JAX starts, so it runs in the self-test too).

A run gets at most ``--timeout`` seconds (150) and all of them ``--budget`` (225): a run that
starts late gets what is left, and its checks FAIL rather than the script running on.

Checks: the backend is the GPU; the start-up self-check passed there (whatever the jax
version); traces, lowerings and compiles per test and per function identical on both
backends, and jaxpr equations too; the reference compile measured in every run on the device
(its child process starts while pytest collects); trace / lower / backend-compile seconds
measured for every compile on the device; the twice-the-work benchmark ~2x the once one
(timed calls wait for the device); device peak memory recorded for every benchmark on the
GPU and shown in its line, and recorded nowhere on the CPU; the instructions clock refused
in one line.

Exit status 1 when a check failed, else 0."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import DROPPED, EXAMPLE, REGRESSION_VARIABLE, ROOT, clean_env

# The plugin from this checkout, installed or not (the GPU machine has it only here).
sys.path.insert(0, str(ROOT))

from pytest_jaxperf import RunRecord, load_run  # noqa: E402
from pytest_jaxperf.environment import REFERENCE_KEY, SAMPLES_KEY, SPREAD_KEY  # noqa: E402
from pytest_jaxperf.model import BenchmarkEntry  # noqa: E402

GPU_TESTS = Path(__file__).resolve().parent / "gpu_tests" / "test_gpu.py"
# The gpu tests' own settings: a few rounds, enough to tell 1x from 2x on any backend.
GPU_INI = "[pytest]\naddopts = --strict-markers\njaxperf_min_rounds = 10\njaxperf_max_time = 0.3\n"
# Matrix size of the gpu tests, the same on both sides: a few ms per full-float32 matmul on
# an H100, so a dispatch (tens of us) is noise; 512 for the CPU self-test on two loaded cores.
GPU_N, SELF_TEST_N = 4096, 512
COUNTED = ("traces", "lowerings", "compiles")
# The twice-the-work benchmark's runtime over the once one's: ~2 when every timed call
# waits for the device, ~1 when timing sees only the dispatch.
RATIO_RANGE = (1.6, 2.6)
REFUSAL = "asks for another backend"


@dataclass(frozen=True)
class Check:
    """One line of the verdict."""

    name: str
    status: str  # PASS, FAIL or SKIP
    detail: str

    def line(self) -> str:
        return f"{self.status:<4}  {self.name}: {self.detail}"


@dataclass
class Run:
    """One pytest run: what it was, its exit status, output and report (None: none written)."""

    name: str
    label: str  # the backend as the checks name it: cpu, cuda, or cpu-2 (the self-test's)
    rc: int
    output: str
    report: RunRecord | None
    wall_s: float

    def summary(self) -> str:
        last = [ln for ln in self.output.strip().splitlines() if ln.strip()][-1:] or ["-"]
        return f"{self.name} on {self.label}: rc {self.rc}, {self.wall_s:.1f} s, {last[0]}"


# -- the checks: pure functions of runs and reports ------------------------------------------
def count_differences(
    a: RunRecord, b: RunRecord, names: tuple[str, str], fields: Iterable[str] = COUNTED
) -> list[str]:
    """Every test and function whose `fields` (or pytest outcome) differ between `a` and `b`,
    one line each, the backends named by `names`."""
    fields = tuple(fields)
    out: list[str] = []
    for nodeid in sorted(set(a.tests) | set(b.tests)):
        ta, tb = a.tests.get(nodeid), b.tests.get(nodeid)
        if ta is None or tb is None:
            out.append(f"{nodeid}: recorded on {names[1] if ta is None else names[0]} only")
            continue
        if ta.outcome != tb.outcome:
            out.append(f"{nodeid}: {ta.outcome} on {names[0]}, {tb.outcome} on {names[1]}")
        pairs = [(nodeid, ta, tb)]
        for key in sorted(set(ta.functions) | set(tb.functions)):
            fa, fb = ta.functions.get(key), tb.functions.get(key)
            if fa is None or fb is None:
                out.append(f"{nodeid}: {key} on {names[1] if fa is None else names[0]} only")
            else:
                pairs.append((f"{nodeid}: {key}", fa, fb))
        for where, x, y in pairs:
            for f in fields:
                if getattr(x, f) != getattr(y, f):
                    out.append(
                        f"{where}: {f} {getattr(x, f)} on {names[0]}, {getattr(y, f)} on {names[1]}"
                    )
    return out


def _missing(run: Run) -> Check | None:
    if run.report is None:
        return Check(run.name, "FAIL", f"no report from the run on {run.label} (rc {run.rc})")
    return None


def check_counts(a: Run, b: Run, fields: tuple[str, ...] = COUNTED, what: str = "counts") -> Check:
    """`fields` per test and per function identical in the two runs (and not all zero)."""
    name = f"{what} {a.label} = {b.label} ({a.name})"
    for run in (a, b):
        if (missing := _missing(run)) is not None:
            return Check(name, "FAIL", missing.detail)
    assert a.report is not None and b.report is not None
    diffs = count_differences(a.report, b.report, (a.label, b.label), fields)
    tests = a.report.tests.values()
    functions = sum(len(t.functions) for t in tests)
    totals = {
        f: sum(getattr(fn, f) or 0 for t in tests for fn in t.functions.values()) for f in fields
    }
    if diffs:
        shown = "; ".join(diffs[:6]) + (f"; ... ({len(diffs)} in all)" if len(diffs) > 6 else "")
        return Check(name, "FAIL", shown)
    if not any(totals.values()):
        return Check(name, "FAIL", f"nothing counted on either backend ({functions} functions)")
    figures = ", ".join(f"{f} {v:,}" for f, v in totals.items())
    return Check(name, "PASS", f"{len(a.report.tests)} tests, {functions} functions: {figures}")


def check_compile_split(runs: Iterable[Run]) -> Check:
    """Trace, lower and backend-compile seconds measured (> 0) for every function compiled."""
    runs = list(runs)
    name = f"compile split on {runs[0].label}"
    compiles, sums, unmeasured = 0, [0.0, 0.0, 0.0], []
    for run in runs:
        if (missing := _missing(run)) is not None:
            return Check(name, "FAIL", missing.detail)
        assert run.report is not None
        for nodeid, test in run.report.tests.items():
            for key, fn in test.functions.items():
                if not fn.compiles:
                    continue
                compiles += fn.compiles
                split = (fn.trace_s, fn.lower_s, fn.compile_s)
                sums = [s + v for s, v in zip(sums, split)]
                if min(split) <= 0:
                    unmeasured.append(f"{nodeid}: {key} trace/lower/compile {split}")
    if unmeasured:
        return Check(name, "FAIL", "; ".join(unmeasured[:4]) + f" ({len(unmeasured)} in all)")
    if not compiles:
        return Check(name, "FAIL", "no compile recorded")
    return Check(
        name,
        "PASS",
        f"{compiles} compiles, all three measured: trace {sums[0]:.3f} s, lower "
        f"{sums[1]:.3f} s, backend compile {sums[2]:.3f} s in all",
    )


def benchmarks(report: RunRecord) -> dict[str, BenchmarkEntry]:
    """The report's benchmark entries by label (scaling entries left out)."""
    return {
        label: entry
        for test in report.tests.values()
        for label, entry in test.benchmarks.items()
        if isinstance(entry, BenchmarkEntry)
    }


def check_runtime_ratio(run: Run, n: int) -> Check:
    """The twice-the-work benchmark takes ~2x the once one's steady-state time per call."""
    name = f"synchronised runtime on {run.label}"
    if (missing := _missing(run)) is not None:
        return Check(name, "FAIL", missing.detail)
    assert run.report is not None
    found = benchmarks(run.report)
    one, two = found.get("one_matmul"), found.get("two_matmuls")
    if one is None or two is None or one.runtime is None or two.runtime is None:
        return Check(name, "FAIL", "one_matmul or two_matmuls has no runtime in the report")
    t1, t2 = one.runtime.median_s, two.runtime.median_s
    ratio = t2 / t1 if t1 > 0 else float("inf")
    low = two.runtime.min_s / one.runtime.min_s if one.runtime.min_s > 0 else float("inf")
    rate = 2 * n**3 / t1 / 1e9 if t1 > 0 else float("inf")
    detail = (
        f"{n}x{n} matmul once {t1 * 1e3:.3f} ms, twice {t2 * 1e3:.3f} ms per call (medians of "
        f"{one.runtime.rounds} and {two.runtime.rounds} rounds): ratio {ratio:.2f} (of the "
        f"minima {low:.2f}; expected {RATIO_RANGE[0]}-{RATIO_RANGE[1]}, ~1 would be async "
        f"dispatch leaking); once = {rate:,.0f} GFLOP/s"
    )
    ok = RATIO_RANGE[0] <= ratio <= RATIO_RANGE[1]
    return Check(name, "PASS" if ok else "FAIL", detail)


def _mib(value: float) -> str:
    return f"{value / 2**20:.1f} MiB"


def check_peak_recorded(runs: Iterable[Run]) -> Check:
    """Every benchmark on the device has its device peak, at least its program's arguments
    and outputs, and its benchmark line shows it."""
    runs = list(runs)
    name = f"device peak memory on {runs[0].label}"
    figures, problems = [], []
    for run in runs:
        if (missing := _missing(run)) is not None:
            return Check(name, "FAIL", missing.detail)
        assert run.report is not None
        shown = set(re.findall(r"benchmark '([^']+)':.* device peak ", run.output))
        for label, entry in sorted(benchmarks(run.report).items()):
            peak = entry.device_peak_bytes
            if peak is None:
                problems.append(f"{label}: not recorded")
                continue
            m = entry.metrics
            floor = (m.argument_bytes or 0) + (m.output_bytes or 0) if m is not None else 0
            if peak < floor:
                problems.append(f"{label}: {peak} B < arguments + outputs {floor} B")
            if label not in shown:
                problems.append(f"{label}: not shown in its benchmark line")
            figures.append(f"{label} {_mib(peak)} (args+outputs {_mib(floor)})")
    if problems:
        return Check(name, "FAIL", "; ".join(problems))
    if not figures:
        return Check(name, "FAIL", "no benchmark recorded")
    return Check(name, "PASS", "process high-water mark after each: " + ", ".join(figures))


def check_peak_absent(runs: Iterable[Run]) -> Check:
    """No benchmark on the CPU records (or shows) a device peak: the CPU reports none."""
    runs = list(runs)
    name = f"no device peak on {runs[0].label}"
    count, recorded = 0, []
    for run in runs:
        if (missing := _missing(run)) is not None:
            return Check(name, "FAIL", missing.detail)
        assert run.report is not None
        for label, entry in benchmarks(run.report).items():
            count += 1
            if entry.device_peak_bytes is not None:
                recorded.append(f"{label} {entry.device_peak_bytes} B")
        if " device peak " in run.output:
            recorded.append(f"shown in {run.name}'s output")
    if recorded:
        return Check(name, "FAIL", "recorded: " + ", ".join(recorded))
    return Check(name, "PASS", f"{count} benchmarks, none with device_peak_bytes")


def check_refusal(run: Run) -> Check:
    """The instructions clock asked for with JAX_PLATFORMS=cuda: refused, in one line."""
    name = "instructions clock on cuda"
    errors = [ln for ln in run.output.splitlines() if ln.startswith("ERROR:")]
    if run.rc == 0 or len(errors) != 1 or REFUSAL not in errors[0]:
        tail = " | ".join(run.output.strip().splitlines()[-3:])
        return Check(name, "FAIL", f"rc {run.rc}, {len(errors)} error line(s): {tail}")
    return Check(name, "PASS", f"refused (rc {run.rc}) in one line: {errors[0]}")


SELF_CHECK_LINE = re.compile(r"pytest-jaxperf: (?:jax \S+ is not supported|the self-check failed)")


def check_self_check(runs: Iterable[Run]) -> Check:
    """The start-up self-check passed in every run on this backend: no warning line, nothing
    in the environment's `not_measured`."""
    runs = list(runs)
    name = f"self-check on {runs[0].label}"
    problems: list[str] = []
    env: dict[str, object] = {}
    for run in runs:
        problems += [ln.strip() for ln in run.output.splitlines() if SELF_CHECK_LINE.search(ln)]
        if run.report is None:
            problems.append(f"{run.name}: no report (rc {run.rc})")
            continue
        env = run.report.environment
        if env.get("not_measured"):
            problems.append(f"{run.name}: not measured {env['not_measured']}")
    where = f"jax {env.get('jax', '?')}, backend {env.get('backend', '?')}"
    if problems:
        return Check(name, "FAIL", f"{where}: " + "; ".join(dict.fromkeys(problems)))
    return Check(name, "PASS", f"{where}: passed in {len(runs)} runs, every metric measured")


def check_reference(runs: Iterable[Run]) -> Check:
    """The reference compile was measured in every run on this backend: its child process,
    started while pytest collects, took nothing from the suite's own (no failed run) and
    reported a number."""
    runs = list(runs)
    name = f"reference compile on {runs[0].label}"
    figures = []
    for run in runs:
        if (missing := _missing(run)) is not None:
            return Check(name, "FAIL", missing.detail)
        assert run.report is not None
        env = run.report.environment
        if REFERENCE_KEY not in env:
            return Check(name, "FAIL", f"{run.name}: not measured (no {REFERENCE_KEY})")
        figures.append(
            f"{run.name} {env[REFERENCE_KEY]:.3f} s ({env.get(SAMPLES_KEY)} samples, spread "
            f"{env.get(SPREAD_KEY, 0.0):.0%})"
        )
    return Check(name, "PASS", ", ".join(figures))


def check_backend(runs: Iterable[Run]) -> Check:
    """The device-side runs ran on a GPU."""
    runs = list(runs)
    name = "backend"
    for run in runs:
        if (missing := _missing(run)) is not None:
            return Check(name, "FAIL", missing.detail)
    envs = [run.report.environment for run in runs if run.report is not None]
    seen = sorted(
        {f"{e.get('backend')} ({e.get('device_kind')} x{e.get('device_count')})" for e in envs}
    )
    ok = all(e.get("backend") == "gpu" for e in envs)
    return Check(name, "PASS" if ok else "FAIL", ", ".join(seen))


def safe(check: Callable[..., Check], *args: Any) -> Check:
    """`check(*args)`, or a FAIL naming the exception: one broken check never hides the
    others' lines."""
    try:
        return check(*args)
    except Exception as exc:  # a report shaped unlike this script expects, say
        name = check.__name__.removeprefix("check_").replace("_", " ")
        return Check(name, "FAIL", f"the check itself failed: {type(exc).__name__}: {exc}")


# -- running ---------------------------------------------------------------------------------
def pytest_command(json_path: Path | None, *extra: str) -> list[str]:
    """pytest with the plugin from this checkout, recording everything, gating nothing."""
    cmd = [sys.executable, "-m", "pytest", "-p", "pytest_jaxperf.plugin", "-p", "no:cacheprovider"]
    cmd += ["--jaxperf", "--jaxperf-allow-partial", "-rP", "-q"]
    if json_path is not None:
        cmd += [f"--jaxperf-json={json_path}", f"--jaxperf-baseline={json_path.parent / 'none'}"]
    return cmd + list(extra)


def run_env(platform: str, n: int) -> dict[str, str]:
    return clean_env(
        {
            # The GPU first, the CPU beside it: jax.debug.callback (the example's
            # side-effects tests) needs a local CPU device to place its inputs on.
            "JAX_PLATFORMS": "cuda,cpu" if platform == "cuda" else platform,
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(EXAMPLE)]),
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "JAXPERF_GPU_CHECK_N": str(n),
            # Full float32 matmuls on both sides: the example's tests compare with NumPy at
            # rtol 1e-4, which a GPU's default TF32 matmul would miss (no count changes).
            "JAX_DEFAULT_MATMUL_PRECISION": "highest",
        },
        drop=(*DROPPED, REGRESSION_VARIABLE),
    )


def run_pytest(
    name: str,
    label: str,
    platform: str,
    cwd: Path,
    work: Path,
    n: int,
    timeout: float,
    *extra: str,
) -> Run:
    """`name`'s tests in `cwd` with JAX_PLATFORMS=`platform`, their output and report kept in
    `work` under `label`."""
    report = work / f"{name}-{label}.json"
    cmd = pytest_command(None if extra else report, *extra)
    start = time.perf_counter()
    try:
        done = subprocess.run(
            cmd,
            cwd=cwd,
            env=run_env(platform, n),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        rc, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        rc, output = -1, f"{exc.stdout or ''}\n... timed out after {timeout:.0f} s"
    wall = time.perf_counter() - start
    (work / f"{name}-{label}.out").write_text(output)
    record = None
    if report.exists():
        try:
            record = load_run(report)
        except ValueError as exc:
            output += f"\n{exc}"
    return Run(name, label, rc, output, record, wall)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cpu-self-test",
        action="store_true",
        help="both sides on the CPU; the checks that need a GPU are SKIP",
    )
    parser.add_argument(
        "--size",
        type=int,
        default=None,
        help=f"matrix size of the gpu tests (default {GPU_N}, self-test {SELF_TEST_N})",
    )
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds per run")
    parser.add_argument(
        "--budget",
        type=float,
        default=225.0,
        help="seconds for all runs: a run starting late gets what is left (default 225)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):  # each line out at once, under a remote runner too
        sys.stdout.reconfigure(line_buffering=True)
    device = "cpu" if args.cpu_self_test else "cuda"
    n = args.size or (SELF_TEST_N if args.cpu_self_test else GPU_N)
    t0 = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="jaxperf-gpu-check-"))
    gpu_dir = work / "gpu_tests"
    gpu_dir.mkdir()
    shutil.copy(GPU_TESTS, gpu_dir / GPU_TESTS.name)
    (gpu_dir / "pytest.ini").write_text(GPU_INI)
    mode = "CPU self-test (no GPU: both sides on cpu)" if args.cpu_self_test else "GPU check"
    print(f"gpu_check: {mode}; python {sys.version.split()[0]}; work folder {work}", flush=True)

    # The device side: the GPU, or in the self-test a second, separate run on the CPU. It
    # runs first, so that a run cut short by the budget is a CPU one.
    dev_label = "cpu-2" if args.cpu_self_test else device
    deadline = t0 + args.budget

    def start(what: str) -> float:
        print(f"[{time.perf_counter() - t0:5.0f} s] {what} ...", flush=True)
        return max(10.0, min(args.timeout, deadline - time.perf_counter()))

    timeout = start("instructions clock on JAX_PLATFORMS=cuda")
    refusal = run_pytest(
        "refusal", "cuda", "cuda", gpu_dir, work, n, min(timeout, 60.0),
        "--jaxperf-runtime-clock=instructions",
    )  # fmt: skip
    print(f"[{time.perf_counter() - t0:5.0f} s]   {refusal.summary()}", flush=True)
    runs: dict[tuple[str, str], Run] = {}
    for label, platform in ((dev_label, device), ("cpu", "cpu")):
        for name, cwd in (("gpu_tests", gpu_dir), ("example", EXAMPLE)):
            timeout = start(f"{name} on JAX_PLATFORMS={platform}")
            run = run_pytest(name, label, platform, cwd, work, n, timeout)
            runs[(name, label)] = run
            print(f"[{time.perf_counter() - t0:5.0f} s]   {run.summary()}", flush=True)

    cpu = [runs[("example", "cpu")], runs[("gpu_tests", "cpu")]]
    dev = [runs[("example", dev_label)], runs[("gpu_tests", dev_label)]]
    no_gpu = "no GPU in the CPU self-test"
    checks = [
        Check("backend", "SKIP", no_gpu) if args.cpu_self_test else safe(check_backend, dev),
        safe(check_self_check, dev),
        safe(check_reference, dev),
        *(safe(check_counts, a, b) for a, b in zip(cpu, dev)),
        *(safe(check_counts, a, b, ("jaxpr_eqns",), "jaxpr equations") for a, b in zip(cpu, dev)),
        safe(check_compile_split, dev),
        safe(check_runtime_ratio, dev[1], n),
        Check("device peak memory on cuda", "SKIP", no_gpu)
        if args.cpu_self_test
        else safe(check_peak_recorded, dev),
        safe(check_peak_absent, cpu),
        safe(check_refusal, refusal),
    ]
    print("\nverdict:", flush=True)
    for check in checks:
        print(check.line())
    failed = [c for c in checks if c.status == "FAIL"]
    for run in [*cpu, *dev]:
        if run.rc != 0:
            tail = "\n    ".join(run.output.strip().splitlines()[-15:])
            print(f"\n{run.name} on {run.label} (rc {run.rc}), its last lines:\n    {tail}")
    print(
        f"\n{len(checks) - len(failed)} of {len(checks)} checks PASS or SKIP, {len(failed)} FAIL; "
        f"total {time.perf_counter() - t0:.0f} s"
    )
    if args.keep:
        print(f"reports and outputs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
