"""Runs real third-party JAX test suites with pytest-jaxperf, to check its counts on real code.

Run: ``.venv/bin/python benchmarks/real_suites.py [--suite equinox|optax|gpjax|all] [--quick]
[--workdir DIR] [--repo PATH] [--repeat N] [--equinox-tests DIR]``. The full measurement of
the three suites side by side::

    .venv/bin/python benchmarks/real_suites.py --workdir WORK --equinox-tests EQX/tests

where EQX/tests is equinox's tests/ folder at its 0.13.8 release, e.g. from a clone:
``git -C equinox archive v0.13.8 tests | tar -x -C EQX``. A setup check, a few tests of one
suite in each mode::

    .venv/bin/python benchmarks/real_suites.py --workdir WORK --quick --suite gpjax

Times on 2 CPU cores: ``--quick``, ~5 minutes for the three suites (equinox 1.5, optax 1,
gpjax 2.5; most of a gpjax run is its import under beartype). One plain (``off``) run of the
full selection: equinox ~7 minutes, optax ~4, gpjax ~2.5; the five modes take about four
plain runs' time (``xdist`` runs on 2 workers), ~1 hour for the three suites. The venv takes
~1 minute on the first run, which needs the package registry; later runs in the same
--workdir do not.

Suites (sources are the PyPI sdists, fetched with ``pip download --no-binary :all:``):

- equinox 0.13.8, ``tests/`` less ``test_speed*`` and ``test_backward_checkpointed``.
  Its own pytest settings apply (``filterwarnings = error``, jaxtyping + beartype on the
  package, ``jax_num_cpu_devices=2`` in its conftest). Its sdist ships no ``tests/``: give
  the ``tests/`` folder of equinox's 0.13.8 source with ``--equinox-tests DIR`` (git tag
  v0.13.8, commit dfadb04884a0 "0.13.8 release"); the suite is reported as not run otherwise.
  Quick: tests/test_jit.py, test_filters.py, test_scan.py, test_vmap.py.
- optax 0.2.8, the 15 test files of its optimizers, line search, schedules and transforms
  (``OPTAX_PATHS``: ``optax/_src/{alias,linesearch,transform}_test.py``,
  ``optax/schedules/*_test.py`` and ``optax/transforms/*_test.py`` less
  ``_accumulation_test.py``, which needs flax); ``alias_test`` asserts that the step
  function does not recompile, with a ``jax`` logger handler under ``jax.log_compiles()``.
  Quick: ``optax/_src/alias_test.py -k "test_optimization1 or
  test_optimizers_accept_extra_args"``.
- gpjax 1.0.0, ``GPJAX_PATHS``: ``tests/test_{gps,conditioning,likelihoods,
  mean_functions}.py`` and ``tests/test_kernels/test_{base,computations}.py`` (659 tests).
  Its conftest turns on x64 (``jax.config.update("jax_enable_x64", True)``) and puts
  jaxtyping + beartype on the package; its settings apply (``filterwarnings = error``,
  hypothesis ``max_examples=20``).
  Quick: ``tests/test_conditioning.py tests/test_gps.py -k jit`` (its tests of jax.jit).

Everything is installed into a throwaway venv under ``--workdir`` (default: a new temporary
directory; an existing venv there with the same requirements is reused): the suites, their
test dependencies, pytest-xdist and this repository's plugin (``pip install -e REPO``);
jax, jaxlib, pytest and pytest-xdist are pinned to the versions of the interpreter running
this script, when it has them.

Modes, each a ``python -m pytest -q -p no:cacheprovider`` subprocess (with JAX_PLATFORMS=cpu):

  off       ``-p no:jaxperf``
  full      ``--jaxperf --jaxperf-all --jaxperf-json=full.json``
  subset    the same with ``subset.json``, on every third test of the selection in collection
            order (the 2nd, 5th, 8th, ...), picked by a helper plugin loaded with ``-p``
            (a ``-k`` expression cannot pick every third parametrised case); so most tests
            run after a different predecessor than in ``full``
  reversed  the same with ``reversed.json``, on all the tests in the reverse of the collection
            order (a helper plugin loaded with ``-p``): every test runs after another
            predecessor, and what ``full`` compiled for an earlier test is not compiled yet
  xdist     ``-n 2`` with ``xdist.json``

``off`` and ``full`` run ``--repeat`` times (alternating order; median wall time reported,
and the ``full`` reports of the repeats are compared with each other too). ``--cost-only``
runs only those two modes. In both, a helper plugin counts JAX's own traces, lowerings and
backend compiles of the whole run (jax.monitoring events) and their line says them: what
the recorded run compiles on top of the plain one is isolation's doing (a test compiling
again what an earlier test had compiled).

Checks (printed; the exit code is 0 whatever they find, non-zero only on script errors
or a suite that could not be set up):
- passed/failed/skipped counts of off vs full, reversed and xdist must be equal (pytest >= 9
  counts skipped subtests, e.g. optax's ``self.subTest`` blocks, in "skipped" too), and the
  tests that failed or errored in only one of the runs are named;
- per test and per function key, ``traces``, ``lowerings`` and ``compiles`` (and the
  test's totals, as function ``(test total)``) of full vs subset (tests in both), full vs
  reversed and full vs xdist must be equal: every mismatch is printed (test, function,
  field, values; past 200 of them, the rest go to a file in the workdir);
- identity: the number of distinct function keys, the keys shared by the most tests (one
  key in many unrelated tests hints at merged identities, e.g. a library's wrapper such as
  ``fun_wrapped at equinox/_jit.py:43``), and how many functions are ``<unknown>``.

Then a summary table: suite, mode, wall s, passed/failed/skipped, wall / off (target for
full <= 1.05), count mismatches vs full (subset, reversed, xdist), the 1-minute load
average before/after the run and the CPU seconds other processes used meanwhile (the machine
may be shared). Logs and the JSON reports stay in ``--workdir``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import ROOT, clean_env, summary_counts, usage

TARGET_FULL_OVER_OFF = 1.05
FIELDS = ("traces", "lowerings", "compiles")
TOTAL = "(test total)"
MAX_PRINTED_MISMATCHES = 200


class ScriptError(Exception):
    """A setup step or a pytest run failed in a way that makes the figures meaningless."""


@dataclass(frozen=True)
class Suite:
    name: str
    version: str
    paths: tuple[str, ...]  # test paths, relative to the unpacked sdist
    deselect_k: str | None  # -k expression that every mode adds
    quick_paths: tuple[str, ...]
    quick_k: str | None
    needs_tests_dir: bool  # the sdist lacks the tests: --equinox-tests supplies them

    def selection(self, quick: bool) -> list[str]:
        paths = self.quick_paths if quick else self.paths
        ks = [k for k in (self.deselect_k, self.quick_k if quick else None) if k]
        return [*paths, *(["-k", " and ".join(f"({k})" for k in ks)] if ks else [])]


# optax 0.2.8's tests of its optimizers, line search, schedules and transforms (15 files;
# transforms/_accumulation_test.py is left out: it imports flax).
OPTAX_PATHS = (
    "optax/_src/alias_test.py",
    "optax/_src/linesearch_test.py",
    "optax/_src/transform_test.py",
    "optax/schedules/_inject_test.py",
    "optax/schedules/_join_test.py",
    "optax/schedules/_schedule_test.py",
    "optax/transforms/_adding_test.py",
    "optax/transforms/_clipping_test.py",
    "optax/transforms/_combining_test.py",
    "optax/transforms/_conditionality_test.py",
    "optax/transforms/_constraining_test.py",
    "optax/transforms/_freezing_test.py",
    "optax/transforms/_layouts_test.py",
    "optax/transforms/_masking_test.py",
    "optax/transforms/_monitoring_test.py",
)
# gpjax 1.0.0: its GP models, likelihoods, mean functions, kernels' base and computations.
GPJAX_PATHS = (
    "tests/test_gps.py",
    "tests/test_conditioning.py",
    "tests/test_likelihoods.py",
    "tests/test_mean_functions.py",
    "tests/test_kernels/test_base.py",
    "tests/test_kernels/test_computations.py",
)
SUITES = {
    "equinox": Suite(
        "equinox",
        "0.13.8",
        ("tests",),
        "not test_speed and not test_backward_checkpointed",
        ("tests/test_jit.py", "tests/test_filters.py", "tests/test_scan.py", "tests/test_vmap.py"),
        None,
        needs_tests_dir=True,
    ),
    "optax": Suite(
        "optax",
        "0.2.8",
        OPTAX_PATHS,
        None,
        ("optax/_src/alias_test.py",),
        "test_optimization1 or test_optimizers_accept_extra_args",
        needs_tests_dir=False,
    ),
    "gpjax": Suite(
        "gpjax",
        "1.0.0",
        GPJAX_PATHS,
        None,
        ("tests/test_conditioning.py", "tests/test_gps.py"),
        "jit",
        needs_tests_dir=False,
    ),
}
# Test dependencies (found from the suites' imports and pyproject files).
REQUIREMENTS = [
    "equinox==0.13.8",
    "optax==0.2.8",
    "gpjax==1.0.0",
    "hypothesis",
    "networkx",
    "jaxtyping",
    "beartype",
    "absl-py",
    "scipy",
    "scikit-learn",
]
PINNED_FROM_HERE = ("jax", "jaxlib", "pytest", "pytest-xdist")

SUBSET_PLUGIN = '''\
"""Keeps every third collected test, the 2nd, 5th, ... (benchmarks/real_suites.py)."""
import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    drop = [item for i, item in enumerate(items) if i % 3 != 1]
    items[:] = [item for i, item in enumerate(items) if i % 3 == 1]
    if drop:
        config.hook.pytest_deselected(items=drop)
'''
REVERSED_PLUGIN = '''\
"""Runs the collected tests in the reverse order (benchmarks/real_suites.py)."""
import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    items.reverse()
'''
# JAX's own count of its work in the run, whatever records it: where isolation's cost goes
# (a test that compiles again what an earlier test had compiled) shows as more compiles.
COMPILES_PLUGIN = '''\
"""Counts JAX's traces, lowerings and backend compiles of the run (benchmarks/real_suites.py)."""
import json
import os
import time

import pytest

EVENTS = {"jaxpr_trace_duration": "traces", "jaxpr_to_mlir_module_duration": "lowerings",
          "backend_compile_duration": "compiles"}
seen = {name: 0 for name in EVENTS.values()}
seconds = {name: 0.0 for name in EVENTS.values()}


def _on_duration(event, duration, **kwargs):
    name = EVENTS.get(event.rsplit("/", 1)[-1])
    if name:
        seen[name] += 1
        seconds[name] += duration


def pytest_configure(config):
    import jax.monitoring

    jax.monitoring.register_event_duration_secs_listener(_on_duration)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    with open(os.environ["REAL_SUITES_JAX_WORK"], "w") as out:
        json.dump({"counts": seen, "seconds": seconds}, out)
'''
MODES = ("off", "full", "subset", "reversed", "xdist")


# ----------------------------------------------------------------------------------------
# Setup: venv and sources
# ----------------------------------------------------------------------------------------
def _sh(cmd: list[str], log: Path, cwd: Path | None = None) -> None:
    with log.open("a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        proc = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise ScriptError(f"`{' '.join(cmd)}` failed (rc={proc.returncode}); see {log}")


def requirements(repo: Path) -> list[str]:
    pins = []
    for dist in PINNED_FROM_HERE:
        try:
            pins.append(f"{dist}=={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            pins.append(dist)
    return [*pins, *REQUIREMENTS, "-e", str(repo)]


def make_venv(workdir: Path, repo: Path) -> Path:
    """The venv's python; reuses workdir/venv when it was made for the same requirements."""
    venv = workdir / "venv"
    python = venv / "bin" / "python"
    reqs = requirements(repo)
    stamp = venv / "real_suites-requirements.txt"
    if python.exists() and stamp.exists() and stamp.read_text() == "\n".join(reqs):
        print(f"venv: reusing {venv}", flush=True)
        return python
    shutil.rmtree(venv, ignore_errors=True)
    log = workdir / "setup.log"
    print(f"venv: creating {venv} (log: {log})", flush=True)
    t0 = time.perf_counter()
    _sh([sys.executable, "-m", "venv", str(venv)], log)
    _sh([str(python), "-m", "pip", "install", "-q", *reqs], log)
    stamp.write_text("\n".join(reqs))
    print(f"venv: ready in {time.perf_counter() - t0:.0f} s: {' '.join(reqs)}", flush=True)
    return python


def prepare_suite(suite: Suite, python: Path, workdir: Path, tests_dir: Path | None) -> Path:
    """Unpacks the suite's sdist under workdir (once) and returns its root."""
    root = workdir / f"{suite.name}-{suite.version}"
    if not root.exists():
        dl = workdir / "sdists"
        dl.mkdir(exist_ok=True)
        spec = f"{suite.name}=={suite.version}"
        log = workdir / "setup.log"
        cmd = [str(python), "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
        _sh([*cmd, "-d", str(dl), spec], log)
        sdist = dl / f"{suite.name}-{suite.version}.tar.gz"
        with tarfile.open(sdist) as tar:
            tar.extractall(workdir, filter="data")
    if suite.needs_tests_dir and not (root / "tests" / "conftest.py").exists():
        if tests_dir is None:
            raise ScriptError(
                f"the {suite.name} {suite.version} sdist on PyPI ships no tests/ folder; "
                f"pass --{suite.name}-tests DIR with the tests/ folder of its source"
            )
        if not (tests_dir / "conftest.py").is_file():
            raise ScriptError(f"{tests_dir} has no conftest.py: not {suite.name}'s tests/")
        shutil.copytree(tests_dir, root / "tests", dirs_exist_ok=True)
    missing = [p for p in suite.paths if not (root / p).exists()]
    if missing:
        raise ScriptError(f"{suite.name}: {', '.join(missing)} not in {root}")
    return root


# ----------------------------------------------------------------------------------------
# Runs
# ----------------------------------------------------------------------------------------
@dataclass
class Run:
    mode: str
    wall: float
    cpu: float
    background: float | None  # CPU s other processes used meanwhile
    load: tuple[float, float]  # 1-minute load average before, after
    counts: dict[str, int]  # passed, failed, skipped, error, ...
    failed_ids: set[str]
    report: dict[str, Any] | None = None


_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)


def run_mode(
    mode: str, suite: Suite, root: Path, python: Path, out: Path, quick: bool, tag: str = ""
) -> Run:
    json_path = out / f"{suite.name}-{mode}{tag}.json"
    json_path.unlink(missing_ok=True)
    args = {
        "off": ["-p", "no:jaxperf"],
        "full": ["--jaxperf", "--jaxperf-all", f"--jaxperf-json={json_path}"],
        "subset": ["-p", "_real_suites_subset", "--jaxperf", "--jaxperf-all"],
        "reversed": ["-p", "_real_suites_reversed", "--jaxperf", "--jaxperf-all"],
        "xdist": ["-n", "2", "--jaxperf", "--jaxperf-all"],
    }[mode]
    if mode in ("subset", "reversed", "xdist"):
        args.append(f"--jaxperf-json={json_path}")
    work_path = out / f"{suite.name}-{mode}{tag}.jax-work.json"
    work_path.unlink(missing_ok=True)
    if mode in ("off", "full"):
        args += ["-p", "_real_suites_compiles"]
    cmd = [str(python), "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider"]
    cmd += [*args, *suite.selection(quick)]
    log = out / f"{suite.name}-{mode}{tag}.log"
    load0 = os.getloadavg()[0]
    with usage() as used, log.open("w") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        # The helper plugins (in `out`) on PYTHONPATH, and nothing else there.
        env = clean_env({"PYTHONPATH": str(out), "REAL_SUITES_JAX_WORK": str(work_path)})
        proc = subprocess.run(cmd, cwd=root, env=env, stdout=f, stderr=subprocess.STDOUT)
    wall = used.wall
    text = log.read_text(errors="replace")
    counts = summary_counts(text)
    if proc.returncode not in (0, 1) or counts is None:
        tail = "\n".join(text.splitlines()[-30:])
        raise ScriptError(f"{suite.name} {mode}: pytest rc={proc.returncode}, log {log}:\n{tail}")
    load = (load0, os.getloadavg()[0])
    run = Run(mode, wall, used.cpu, used.others(), load, counts, set(_FAILED.findall(text)))
    if mode != "off":
        if not json_path.exists():
            raise ScriptError(f"{suite.name} {mode}: no {json_path.name} written; log {log}")
        run.report = json.loads(json_path.read_text())
    work = ""
    if work_path.exists():
        data = json.loads(work_path.read_text())
        n, secs = data["counts"], data["seconds"]
        work = (
            f"  JAX: {n['traces']} traces, {n['lowerings']} lowerings, {n['compiles']} "
            f"compiles ({secs['compiles']:.1f} s)"
        )
    print(
        f"  {suite.name:<8} {mode + tag:<8} {wall:7.1f} s  {_pfs(run)}  "
        f"load {run.load[0]:.1f}->{run.load[1]:.1f}{work}",
        flush=True,
    )
    return run


def _pfs(run: Run) -> str:
    c = run.counts
    errors = c.get("error", 0) + c.get("errors", 0)
    return f"{c.get('passed', 0)}/{c.get('failed', 0)}/{c.get('skipped', 0)}" + (
        f" +{errors} errors" if errors else ""
    )


# ----------------------------------------------------------------------------------------
# Comparisons
# ----------------------------------------------------------------------------------------
Counts = dict[str, dict[str, dict[str, int]]]  # test -> function key -> field -> count


def counts_of(report: dict[str, Any]) -> Counts:
    out: Counts = {}
    for test, rec in report.get("tests", {}).items():
        fns = {k: {f: fn.get(f, 0) for f in FIELDS} for k, fn in rec.get("functions", {}).items()}
        fns[TOTAL] = {f: rec.get(f, 0) for f in FIELDS}
        out[test] = fns
    return out


@dataclass
class Comparison:
    label: str
    compared: int = 0
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    mismatches: list[tuple[str, str, str, int | None, int | None]] = field(default_factory=list)


def compare(label: str, a: dict[str, Any], b: dict[str, Any], b_subset: bool) -> Comparison:
    ca, cb = counts_of(a), counts_of(b)
    cmp = Comparison(label, len(ca.keys() & cb.keys()))
    cmp.only_a = [] if b_subset else sorted(ca.keys() - cb.keys())
    cmp.only_b = sorted(cb.keys() - ca.keys())
    for test in sorted(ca.keys() & cb.keys()):
        for key in sorted(ca[test].keys() | cb[test].keys()):
            fa, fb = ca[test].get(key, {}), cb[test].get(key, {})
            for f in FIELDS:
                if fa.get(f) != fb.get(f):
                    cmp.mismatches.append((test, key, f, fa.get(f), fb.get(f)))
    return cmp


def print_comparison(cmp: Comparison, out: Path) -> None:
    a, b = cmp.label.split(" vs ")
    print(
        f"  {cmp.label}: {cmp.compared} tests compared, {len(cmp.mismatches)} mismatches "
        f"(test, function, field: {a} != {b})"
    )
    for name, only in ((a, cmp.only_a), (b, cmp.only_b)):
        if only:
            print(
                f"    {len(only)} tests only in {name}: {', '.join(only[:5])}"
                + " ..." * (len(only) > 5)
            )
    if not cmp.mismatches:
        return
    lines = [
        f"    {test} | {key} | {f}: {'-' if va is None else va} != {'-' if vb is None else vb}"
        for test, key, f, va, vb in cmp.mismatches
    ]
    print("\n".join(lines[:MAX_PRINTED_MISMATCHES]))
    if len(lines) > MAX_PRINTED_MISMATCHES:
        path = out / f"mismatches-{cmp.label.replace(' ', '_')}.txt"
        path.write_text("\n".join(lines) + "\n")
        print(f"    ... {len(lines) - MAX_PRINTED_MISMATCHES} more in {path}")


def print_identity(report: dict[str, Any]) -> None:
    tests_per_key: Counter[str] = Counter()
    max_traces: Counter[str] = Counter()  # the most traces one test has under the key
    unknown = unknown_tests = 0
    for rec in report.get("tests", {}).values():
        fns = rec.get("functions", {})
        tests_per_key.update(fns.keys())
        for key, fn in fns.items():
            max_traces[key] = max(max_traces[key], fn.get("traces", 0))
        n = sum(1 for k, fn in fns.items() if "<unknown>" in (k.split(" at ")[0], fn.get("name")))
        unknown += n
        unknown_tests += n > 0
    recorded = sum(1 for rec in report.get("tests", {}).values() if rec.get("functions"))
    print(
        f"  identity (full): {len(tests_per_key)} distinct function keys in {recorded} tests "
        f"with functions; {unknown} <unknown> functions in {unknown_tests} tests"
    )
    for key, n in tests_per_key.most_common(5):
        print(f"    {n:>5} tests share {key} (at most {max_traces[key]} traces in one test)")


# ----------------------------------------------------------------------------------------
@dataclass
class SuiteResult:
    suite: Suite
    runs: dict[str, list[Run]] = field(default_factory=dict)
    mismatches: dict[str, int] = field(default_factory=dict)


def run_suite(
    suite: Suite, python: Path, workdir: Path, ns: argparse.Namespace, tests_dir: Path | None
) -> SuiteResult:
    root = prepare_suite(suite, python, workdir, tests_dir)
    out = workdir / ("runs-quick" if ns.quick else "runs")
    out.mkdir(exist_ok=True)
    (out / "_real_suites_subset.py").write_text(SUBSET_PLUGIN)
    (out / "_real_suites_reversed.py").write_text(REVERSED_PLUGIN)
    (out / "_real_suites_compiles.py").write_text(COMPILES_PLUGIN)
    print(f"\n== {suite.name} {suite.version}: {' '.join(suite.selection(ns.quick))}", flush=True)
    res = SuiteResult(suite, {m: [] for m in MODES})
    for r in range(ns.repeat):
        order = ("off", "full") if r % 2 == 0 else ("full", "off")
        for mode in order:
            tag = f"-{r + 1}" if ns.repeat > 1 else ""
            res.runs[mode].append(run_mode(mode, suite, root, python, out, ns.quick, tag))
    for mode in ("subset", "reversed", "xdist"):
        if not ns.cost_only:
            res.runs[mode].append(run_mode(mode, suite, root, python, out, ns.quick))

    off, full = res.runs["off"][0], res.runs["full"][0]
    assert full.report is not None
    print()
    for mode in ("full", "reversed", "xdist"):
        for i, run in enumerate(res.runs[mode]):
            name = f"{mode}-{i + 1}" if len(res.runs[mode]) > 1 else mode
            same = {k: run.counts.get(k, 0) for k in ("passed", "failed", "skipped")} == {
                k: off.counts.get(k, 0) for k in ("passed", "failed", "skipped")
            }
            diff = sorted(run.failed_ids ^ off.failed_ids)
            print(
                f"  verdicts off vs {name}: {_pfs(off)} vs {_pfs(run)} -> "
                f"{'equal' if same else 'DIFFERENT'}"
                + (f"; failed/errored in only one: {', '.join(diff)}" if diff else "")
            )
    others = [*res.runs["full"][1:], *res.runs["subset"], *res.runs["reversed"], *res.runs["xdist"]]
    for other in others:
        assert other.report is not None
        label = f"full vs {other.mode}"
        if other.mode == "full":
            label = f"full vs full-repeat{res.runs['full'].index(other) + 1}"
        cmp = compare(label, full.report, other.report, b_subset=other.mode == "subset")
        print_comparison(cmp, out)
        res.mismatches[other.mode] = res.mismatches.get(other.mode, 0) + len(cmp.mismatches)
    print_identity(full.report)
    return res


def print_table(results: list[SuiteResult]) -> None:
    print()
    print(
        f"{'suite':<9}{'mode':<9}{'wall s':>8}  {'pass/fail/skip':<16}{'x off':>7} "
        f"{'cpu s':>8}{'x off':>7}{'mismatch':>9}{'load':>11}{'others cpu s':>14}"
    )
    for res in results:
        off = statistics.median(r.wall for r in res.runs["off"])
        off_cpu = statistics.median(r.cpu for r in res.runs["off"])
        for mode, runs in res.runs.items():
            if not runs:  # --cost-only
                continue
            wall = statistics.median(r.wall for r in runs)
            cpu = statistics.median(r.cpu for r in runs)
            over = "*" if mode == "full" and wall / off > TARGET_FULL_OVER_OFF else " "
            mism = "" if mode == "off" else str(res.mismatches.get(mode, 0))
            bgs = [r.background for r in runs if r.background is not None]
            others = f"{statistics.median(bgs):.0f}" if bgs else "?"
            load = f"{runs[0].load[0]:.1f}->{runs[-1].load[1]:.1f}"
            print(
                f"{res.suite.name:<9}{mode:<9}{wall:>8.1f}  {_pfs(runs[0]):<16}"
                f"{wall / off:>7.3f}{over}{cpu:>8.1f}{cpu / off_cpu:>7.3f}"
                f"{mism:>9}{load:>11}{others:>14}"
            )
    print(
        "(wall: median of the repeats; x off: wall / off, target for full <= "
        f"{TARGET_FULL_OVER_OFF:.2f}, * = over; cpu s: CPU seconds of pytest and its workers, "
        "and its ratio to off, steadier than wall time on a shared machine; mismatch: "
        "per-test per-function count fields differing from full in subset, reversed and "
        "xdist (for full: between its repeats); load: 1-min load average at the first run's "
        "start -> last run's end)"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="pytest-jaxperf on real JAX suites")
    ap.add_argument("--suite", choices=(*SUITES, "all"), default="all")
    ap.add_argument("--quick", action="store_true", help="a few test files per suite")
    ap.add_argument("--workdir", type=Path, help="venv, sdists, logs, reports (default: temp)")
    ap.add_argument(
        "--repo",
        type=Path,
        default=ROOT,
        help="the pytest-jaxperf checkout to install (default: this script's repository)",
    )
    ap.add_argument("--repeat", type=int, default=1, help="runs of off and full (default 1)")
    ap.add_argument(
        "--cost-only",
        action="store_true",
        help="only the off and full runs (the cost), not subset, reversed and xdist",
    )
    ap.add_argument(
        "--equinox-tests",
        type=Path,
        help="equinox 0.13.8's tests/ folder (its sdist has none)",
    )
    ns = ap.parse_args(argv)
    if ns.repeat < 1:
        ap.error("--repeat must be >= 1")
    workdir = (ns.workdir or Path(tempfile.mkdtemp(prefix="jaxperf-real-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    print(
        f"pytest-jaxperf on real suites: repo {ns.repo}, workdir {workdir}, "
        f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    names = list(SUITES) if ns.suite == "all" else [ns.suite]
    results: list[SuiteResult] = []
    failed: list[str] = []
    try:
        python = make_venv(workdir, ns.repo.resolve())
    except ScriptError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for name in names:
        tests_dir = ns.equinox_tests.resolve() if name == "equinox" and ns.equinox_tests else None
        try:
            results.append(run_suite(SUITES[name], python, workdir, ns, tests_dir))
        except ScriptError as e:
            print(f"error: {name} not measured: {e}", file=sys.stderr, flush=True)
            failed.append(name)
    if results:
        print_table(results)
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s; logs and reports in {workdir}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
