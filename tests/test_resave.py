"""End to end: what `--jaxperf-save` keeps of the baseline. A save never loses what its run
did not measure, an unchanged re-save rewrites nothing, a change rewrites only the entries
that moved, and two branches that re-saved merge with plain git."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import JP_INI, lit, read_json

from pytest_jaxperf.model import RunRecord
from pytest_jaxperf.storage import store

# The user's tolerances, wide: the inner runs compete with this suite (and whatever else
# runs) for the CPUs, and a timing outside its tolerance is (rightly) rewritten: a 64-element
# loop's runtime was seen 11x slower in one run than the next on a loaded 2-core machine.
# Counts are exact whatever the load.
WIDE = ("--jaxperf-compile-rtol=100", "--jaxperf-runtime-rtol=100")
SAVE = ("--jaxperf", "--jaxperf-save", *WIDE)

# A benchmark of a jitted loop whose trip count is an argument (the same program, more work),
# and a second recorded test; JAXPERF_T_RETRACE=1 makes test_steps trace `step` a second time.
SUITE = """
import os
import jax
import jax.numpy as jnp
import pytest
from jax import lax

@jax.jit
def loop(x, n):
    return lax.fori_loop(0, n, lambda i, c: jnp.sin(c) + 1.0, x)

@jax.jit
def step(x):
    return jnp.cos(x) * 2

def test_loop(jaxperf):
    jaxperf.benchmark(loop, jnp.ones(64), 10)

@pytest.mark.jaxperf
def test_steps():
    step(jnp.ones(3))
    if os.environ.get("JAXPERF_T_RETRACE"):
        step(jnp.ones(4))
"""
LOOP, STEPS = "test_suite.py::test_loop", "test_suite.py::test_steps"


# The variables the generated suites read, unset for their first save.
SWITCHES = ("JAXPERF_T_RETRACE", "JAX_DISABLE_JIT", "JAXPERF_T_A", "JAXPERF_T_B")


def _first_save(where: Path, name: str, source: str) -> Path:
    """The baseline a first `--jaxperf-save` of `source` (as `name`.py, in `jp`'s setting)
    writes: saved once per module, for the tests that start from it (each copies it)."""
    where.mkdir()
    # As pytester's makepyfile writes it (stripped): the functions' keys name their lines.
    (where / f"{name}.py").write_text(source.strip(), encoding="utf-8")
    (where / "tox.ini").write_text(JP_INI, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in {*SWITCHES, "PYTEST_ADDOPTS"}}
    env.update(JAX_PLATFORMS="cpu", PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *SAVE], cwd=where, env=env, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return where / ".jaxperf" / "baseline.json"


@pytest.fixture(scope="module")
def suite_saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _first_save(tmp_path_factory.mktemp("suite") / "saved", "test_suite", SUITE)


@pytest.fixture
def suite(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, suite_saved: Path
) -> pytest.Pytester:
    """SUITE with its first save's baseline."""
    for name in SWITCHES:
        monkeypatch.delenv(name, raising=False)
    jp.makepyfile(test_suite=SUITE)
    _baseline(jp).parent.mkdir()
    shutil.copyfile(suite_saved, _baseline(jp))
    return jp


def _baseline(jp: pytest.Pytester) -> Path:
    return jp.path / ".jaxperf" / "baseline.json"


def _save(jp: pytest.Pytester, *args: str) -> pytest.RunResult:
    result = jp.runpytest_subprocess(*SAVE, *args)
    assert result.ret == 0, result.stdout.str()
    return result


def test_a_counts_only_refresh_keeps_the_runtime_and_its_environment(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = read_json(_baseline(suite))
    runtime = first["tests"][LOOP]["benchmarks"]["loop"]["runtime"]
    assert runtime["median_s"] > 0 and runtime["samples_s"]
    # A quick refresh with timing off, after a change that adds a trace to test_steps.
    monkeypatch.setenv("JAXPERF_T_RETRACE", "1")
    result = _save(suite, "--jaxperf-timing=off")
    saved = read_json(_baseline(suite))
    # The runtime it did not measure is kept as measured, and so is the environment it was
    # measured in (CPU dispatch synchronous): the dispatch of a run that timed nothing is not
    # what later runs are judged against.
    assert saved["tests"][LOOP]["benchmarks"]["loop"]["runtime"] == runtime
    assert saved["environment"] == first["environment"]
    assert saved["environment"]["cpu_dispatch"] == "sync"
    assert all("environment" not in entry for entry in saved["tests"].values())
    # What it measured is saved: the counts of test_steps.
    assert (saved["tests"][STEPS]["traces"], first["tests"][STEPS]["traces"]) == (2, 1)
    result.stdout.fnmatch_lines(
        ["jaxperf: baseline .jaxperf/baseline.json: 1 entries updated, 1 kept, 0 added"]
    )


def test_a_save_with_jit_disabled_keeps_every_entry(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _baseline(suite).read_bytes()
    monkeypatch.setenv("JAX_DISABLE_JIT", "1")
    result = _save(suite)
    assert _baseline(suite).read_bytes() == before
    result.stdout.fnmatch_lines(
        [f"jaxperf: --jaxperf-save wrote nothing for 2 test(s) to {JIT_OFF}"]
    )
    # With jit on again, a retrace is gated against the counts saved before.
    monkeypatch.delenv("JAX_DISABLE_JIT")
    monkeypatch.setenv("JAXPERF_T_RETRACE", "1")
    result = suite.runpytest_subprocess("--jaxperf", *WIDE, "-k", "test_steps")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(lit("  traces of step (defined at *): baseline 1 -> now 2 (+1*"))
    assert "not measured" not in result.stdout.str()


# What a save under JAX_DISABLE_JIT=1 says after the number of tests (nothing is written).
JIT_OFF = (
    ".jaxperf/baseline.json: traces and compiles not measured (jax_disable_jit is on: "
    "jitted functions run op by op)"
)


def test_a_save_with_jit_disabled_into_no_baseline_writes_none(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No entry of 0 traces "not measured" for the next run to pass against: that run's
    tests are new, and gated once saved."""
    for name in SWITCHES:
        monkeypatch.delenv(name, raising=False)
    jp.makepyfile(test_suite=SUITE)
    monkeypatch.setenv("JAX_DISABLE_JIT", "1")
    result = _save(jp)
    assert not _baseline(jp).exists()
    result.stdout.fnmatch_lines(
        [f"jaxperf: --jaxperf-save wrote nothing for 2 test(s) to {JIT_OFF}"]
    )
    monkeypatch.delenv("JAX_DISABLE_JIT")
    monkeypatch.setenv("JAXPERF_T_RETRACE", "1")
    result = jp.runpytest_subprocess("--jaxperf", *WIDE)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"{STEPS} * 2 * new", "*0 regressions, 0 improvements, 2 new*"])
    assert "not measured" not in result.stdout.str()


def test_an_unchanged_resave_rewrites_nothing_and_a_change_only_its_entry(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _baseline(suite).read_text()
    result = _save(suite)
    result.stdout.fnmatch_lines(
        ["jaxperf: baseline .jaxperf/baseline.json: 0 entries updated, 2 kept, 0 added"]
    )
    assert _baseline(suite).read_text() == first
    monkeypatch.setenv("JAXPERF_T_RETRACE", "1")
    result = _save(suite)
    result.stdout.fnmatch_lines(
        ["jaxperf: baseline .jaxperf/baseline.json: 1 entries updated, 1 kept, 0 added"]
    )
    second = _baseline(suite).read_text()
    changed = _changed_lines(first, second)
    assert changed, "the retrace was not saved"
    # Every changed line lies inside test_steps' entry.
    lines = first.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f'    "{STEPS}"'))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("    }"))
    assert all(start < i < end for i in changed), (changed, start, end)


def _changed_lines(before: str, after: str) -> list[int]:
    """The indices of the lines of `before` that `after` replaces or removes."""
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    return [
        i
        for tag, i1, i2, _, _ in matcher.get_opcodes()
        if tag != "equal"
        for i in range(i1, max(i2, i1 + 1))
    ]


# -- git -----------------------------------------------------------------------------------

# Two recorded tests; JAXPERF_T_A / JAXPERF_T_B make each trace its function once more.
TWO = """
import os
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def fa(x):
    return jnp.sin(x) + 1

@jax.jit
def fb(x):
    return jnp.cos(x) * 2

@pytest.mark.jaxperf
def test_a():
    for n in range(3, 4 + int(os.environ.get("JAXPERF_T_A", "0"))):
        fa(jnp.ones(n))

@pytest.mark.jaxperf
def test_b():
    for n in range(3, 4 + int(os.environ.get("JAXPERF_T_B", "0"))):
        fb(jnp.ones(n))
"""


def _git(cwd: Path, *args: str, date: int = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    stamp = f"{1_700_000_000 + date} +0000"
    env.update(
        GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_AUTHOR_DATE=stamp,
        GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com", GIT_COMMITTER_DATE=stamp,
        GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
    )  # fmt: skip
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def two_saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _first_save(tmp_path_factory.mktemp("two") / "saved", "test_two", TWO)


@pytest.fixture
def repo(jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, two_saved: Path) -> pytest.Pytester:
    """A git repository of TWO with its baseline saved and committed on `main`."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    for name in SWITCHES:
        monkeypatch.delenv(name, raising=False)
    jp.makepyfile(test_two=TWO)
    _baseline(jp).parent.mkdir()
    shutil.copyfile(two_saved, _baseline(jp))
    assert _git(jp.path, "init", "-q", "-b", "main").returncode == 0
    _git(jp.path, "add", "test_two.py", "tox.ini", ".jaxperf/baseline.json")
    assert _git(jp.path, "commit", "-qm", "baseline").returncode == 0
    return jp


def _resave_on_branch(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, branch: str, change: dict[str, str],
    date: int,
) -> None:  # fmt: skip
    assert _git(jp.path, "checkout", "-q", "-b", branch, "main").returncode == 0
    for name, value in change.items():
        monkeypatch.setenv(name, value)
    _save(jp)
    for name in change:
        monkeypatch.delenv(name)
    _git(jp.path, "add", ".jaxperf/baseline.json")
    done = _git(jp.path, "commit", "-qm", f"re-save on {branch}", date=date)
    assert done.returncode == 0, done.stderr


def test_branches_that_resaved_different_tests_merge_cleanly(
    repo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _resave_on_branch(repo, monkeypatch, "change-a", {"JAXPERF_T_A": "1"}, date=10)
    _resave_on_branch(repo, monkeypatch, "change-b", {"JAXPERF_T_B": "2"}, date=20)
    merged = _git(repo.path, "merge", "-q", "--no-edit", "change-a", date=30)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    tests = read_json(_baseline(repo))["tests"]
    assert (tests["test_two.py::test_a"]["traces"], tests["test_two.py::test_b"]["traces"]) == (
        2,
        3,
    )


def test_a_conflict_on_one_test_is_resolved_by_jaxperf_resolve(
    repo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _resave_on_branch(repo, monkeypatch, "older", {"JAXPERF_T_A": "1", "JAXPERF_T_B": "1"}, 10)
    _resave_on_branch(repo, monkeypatch, "newer", {"JAXPERF_T_A": "2"}, date=20)
    _git(repo.path, "checkout", "-q", "older")
    merged = _git(repo.path, "merge", "-q", "--no-edit", "newer", date=30)
    assert merged.returncode != 0, "no conflict: the test would prove nothing"
    assert "<<<<<<<" in _baseline(repo).read_text()
    done = subprocess.run(
        [sys.executable, "-m", "pytest_jaxperf", "resolve", ".jaxperf/baseline.json"],
        cwd=repo.path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "  test_two.py::test_a: kept theirs (gated values changed on both sides: MERGE_HEAD "
        "is the newer commit)",
        "  test_two.py::test_b: kept ours (its gated values changed on our side only)",
        "jaxperf: .jaxperf/baseline.json: 1 test(s) changed on both sides, resolved to theirs "
        "(MERGE_HEAD is the newer commit); `git add .jaxperf/baseline.json` to conclude",
    ]
    tests = read_json(_baseline(repo))["tests"]
    # test_a from the newer commit; test_b, changed on one side only, as that side saved it.
    assert tests["test_two.py::test_a"]["traces"] == 3
    assert tests["test_two.py::test_b"]["traces"] == 2
    _git(repo.path, "add", ".jaxperf/baseline.json")
    assert _git(repo.path, "commit", "-qm", "merge", date=40).returncode == 0
    # The resolved file is one the plugin gates against.
    monkeypatch.setenv("JAXPERF_T_A", "3")
    result = repo.runpytest_subprocess("--jaxperf", *WIDE, "-k", "test_a")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(lit("  traces of fa (defined at *): baseline 3 -> now 4 (+1*"))


@pytest.mark.jax_internals
def test_an_unchanged_resave_of_the_example_project_is_byte_identical(
    pytester: pytest.Pytester, example: Path
) -> None:
    path = example / ".jaxperf" / "baseline.json"
    first = b""
    for _ in range(2):
        result = pytester.runpytest_subprocess(*SAVE, "-p", "no:cacheprovider")
        assert result.ret == 0, result.stdout.str()
        first = first or path.read_bytes()
    result.stdout.fnmatch_lines(
        ["jaxperf: baseline .jaxperf/baseline.json: 0 entries updated, 13 kept, 0 added"]
    )
    assert path.read_bytes() == first


# -- messages ------------------------------------------------------------------------------


def test_a_baseline_from_another_cpu_without_a_reference_says_a_resave_gates_it(
    suite: pytest.Pytester, reference_on: pytest.Pytester
) -> None:
    path = _baseline(suite)
    data = read_json(path)
    # As saved on another CPU by a pytest-jaxperf that measured no reference compile (this
    # one was saved with --jaxperf-no-reference-compile); this run measures one.
    assert "reference_compile_cpu_s" not in data["environment"]
    data["environment"]["cpu"] = "Another CPU"
    path.write_text(json.dumps(data), encoding="utf-8")
    # In a process of its own: one whose JAX backends an earlier in-process run started
    # leaves CPU dispatch asynchronous, which differs from the baseline's too.
    result = suite.runpytest_subprocess("--jaxperf", "-k", "test_steps")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "jaxperf: compile time of 1 test not gated: environment differs (cpu Another CPU -> "
            "*); the baseline has no reference compile: re-saving it (--jaxperf-save) gates "
            # On a loaded machine the real reference may also be too noisy to scale by,
            # which the same line then adds.
            "compile time across machines*"
        ]
    )


@pytest.mark.e2e
def test_jaxperf_ab_in_a_repository_without_commits_says_so(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    assert _git(tmp_path, "init", "-q").returncode == 0
    done = subprocess.run(
        [sys.executable, "-m", "pytest_jaxperf", "ab", "--base", "HEAD~1"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"jaxperf ab: {tmp_path.resolve()} has no commits yet: commit your code first; "
        "jaxperf ab compares your checkout with a base commit"
    ]


# A benchmark entry as the fixture writes it (the example project's, samples cut to five).
_BENCH = {
    "argument_bytes": 6416, "break_even_calls": 78.5, "bytes_accessed": 19676.0,
    "compile_s": 0.054039, "compiled_on_first_call": True, "eager_median_s": 0.000809909,
    "first_call_s": 0.062547, "flops": 19219.0, "hlo_ops": 47, "jaxpr_eqns": 21,
    "kind": "benchmark", "lower_s": 0.005011, "output_bytes": 4, "peak_bytes": 6424,
    "runtime": {
        "cpu_median_s": 1.29538e-05, "iqr_s": 2.53305e-07, "iterations": 246,
        "max_s": 1.33938e-05, "mean_s": 1.29905e-05, "median_s": 1.29504e-05,
        "min_s": 1.27655e-05, "outliers": 0, "q1_s": 1.28675e-05, "q3_s": 1.31208e-05,
        "rounds": 5, "samples_s": [1.297e-05, 1.283e-05, 1.312e-05, 1.285e-05, 1.277e-05],
        "stddev_s": 1.55254e-07,
    },
    "temp_bytes": 6600, "trace_s": 0.001422, "transcendentals": 3200.0,
}  # fmt: skip


def _write_baseline(path: Path, change: Any) -> None:
    """A baseline of one test with function `normalise` and benchmark 'normalise', as
    `change(test entry)` leaves it, written as the plugin writes a baseline (in its form:
    resave.baseline_form)."""
    from _records import fn, rec

    from pytest_jaxperf.model import run_from_json
    from pytest_jaxperf.storage.resave import baseline_form

    run = RunRecord(tests={"t.py::test_n": rec(fn("normalise", "m.py:3", lower_s=0.01))})
    data = json.loads(store.dumps(run))
    entry = data["tests"]["t.py::test_n"]
    entry["benchmarks"] = {"normalise": json.loads(json.dumps(_BENCH))}
    for where in (entry, entry["functions"]["normalise at m.py:3"]):
        where["jaxpr_eqns"] = 21
    change(entry)
    read = run_from_json(data)
    tests = {k: baseline_form(v, "cpu") for k, v in read.tests.items()}
    store.save(path, RunRecord(read.environment, tests))


def test_resolve_takes_the_side_whose_gated_values_changed_never_a_mix(
    jp: pytest.Pytester,
) -> None:
    # HEAD (the newer commit) re-saved the test with changes the gate does not read only (a
    # retrace cause reworded; a wall second beside its CPU second and a first-call time,
    # before a baseline left those out: they no longer reach the file); the other branch
    # with a real change (equations 21 -> 24, a slower runtime). git merges the clean hunks
    # of both into the marked text; the entry written must be the other side's, whole.
    if shutil.which("git") is None:
        pytest.skip("needs git")
    path = jp.path / ".jaxperf" / "baseline.json"
    path.parent.mkdir()

    def noise(entry: dict[str, Any]) -> None:
        entry["functions"]["normalise at m.py:3"]["lower_s"] = 0.125835
        entry["lower_s"] = 0.125835
        entry["benchmarks"]["normalise"]["first_call_s"] = 0.0911
        entry["functions"]["normalise at m.py:3"]["retrace_reasons"] = ["first call"]

    def grown(entry: dict[str, Any]) -> None:
        for where in (entry, entry["functions"]["normalise at m.py:3"]):
            where["jaxpr_eqns"] = 24
        bench = entry["benchmarks"]["normalise"]
        bench["jaxpr_eqns"] = 24
        bench["runtime"]["median_s"] = 2.9e-05

    _write_baseline(path, lambda e: None)
    assert _git(jp.path, "init", "-q", "-b", "main").returncode == 0
    _git(jp.path, "add", ".jaxperf/baseline.json")
    assert _git(jp.path, "commit", "-qm", "baseline").returncode == 0
    for branch, change, date in (("grown", grown, 10), ("noise", noise, 20)):
        _git(jp.path, "checkout", "-q", "-b", branch, "main")
        _write_baseline(path, change)
        _git(jp.path, "add", ".jaxperf/baseline.json")
        assert _git(jp.path, "commit", "-qm", branch, date=date).returncode == 0
    _git(jp.path, "checkout", "-q", "grown")
    theirs = read_json(path)["tests"]["t.py::test_n"]
    _git(jp.path, "checkout", "-q", "noise")
    merged = _git(jp.path, "merge", "-q", "--no-edit", "grown", date=30)
    assert merged.returncode != 0 and "<<<<<<<" in path.read_text(), "no conflict"
    done = subprocess.run(
        [sys.executable, "-m", "pytest_jaxperf", "resolve", ".jaxperf/baseline.json"],
        cwd=jp.path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "  t.py::test_n: kept theirs (its gated values changed on their side only)"
    )
    written = read_json(path)["tests"]["t.py::test_n"]
    assert written == theirs
    assert written["benchmarks"]["normalise"]["jaxpr_eqns"] == 24 == written["jaxpr_eqns"]
