"""Nothing leaves the gate unseen: a run names the baseline entries whose tests did not run
(renamed or deleted), a save with --jaxperf-prune removes them, and --jaxperf-strict fails a
run that did not run some, or gated nothing against a baseline."""

from __future__ import annotations

import json

import pytest
from conftest import read_json

from pytest_jaxperf.cli import main
from pytest_jaxperf.notrun import not_run

pytestmark = pytest.mark.jax_internals

TESTS = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def f(x):
    return x * 2

@pytest.mark.jaxperf
def test_{name}():
    f(jnp.ones(3))

@pytest.mark.jaxperf
def test_other():
    f(jnp.ones(4))
"""


def test_not_run_names_what_a_collected_file_or_a_missing_file_lost() -> None:
    baseline = ["a.py::t1", "a.py::t2", "b.py::t", "c.py::t", "a.py::t3"]
    gone = not_run(baseline, ["a.py::t1"], ["a.py::t3"], lambda p: p != "c.py")
    # a.py was collected and lost t2; b.py was not collected (a shard, a file argument);
    # c.py is gone; t3 was deselected.
    assert gone == ["a.py::t2", "c.py::t"]


def test_a_renamed_test_is_named_and_pruned(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_mod=TESTS.format(name="step"))
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=2)
    # The test renamed: its entry gates nothing, and the run says so.
    jp.makepyfile(test_mod=TESTS.format(name="renamed"))
    result = jp.runpytest("--jaxperf")
    result.assert_outcomes(passed=2)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["jaxperf: 1 baseline test(s) did not run: test_mod.py::test_step (renamed or deleted? "
         "their entries in * gate nothing; --jaxperf-save --jaxperf-prune removes them) "
         "[[]not_run]"]
    )  # fmt: skip
    # A selection is no rename: -k deselects (test_renamed is no new entry missing), and a
    # file not collected says nothing.
    selected = jp.runpytest("--jaxperf", "-k", "other").stdout.str()
    assert "1 baseline test(s) did not run: test_mod.py::test_step " in selected
    jp.makepyfile(test_more=TESTS.format(name="more"))
    jp.runpytest("--jaxperf", "--jaxperf-save", "test_more.py").assert_outcomes(passed=2)
    assert "test_more.py" not in jp.runpytest("--jaxperf", "test_mod.py").stdout.str()
    jp.path.joinpath("test_more.py").unlink()  # a file gone: its entries did not run
    gone = jp.runpytest("--jaxperf").stdout.str()
    assert "3 baseline test(s) did not run: test_mod.py::test_step, test_more.py::" in gone
    # Strict makes it fail the run.
    strict = jp.runpytest("--jaxperf", "--jaxperf-strict=not_run")
    strict.assert_outcomes(passed=2)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(["*[[]not_run] (failed by --jaxperf-strict)"])
    # A save keeps it, a save with --jaxperf-prune removes it, saying which.
    path = jp.path / ".jaxperf" / "baseline.json"
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=2)
    assert "test_mod.py::test_step" in read_json(path)["tests"]
    pruned = jp.runpytest("--jaxperf", "--jaxperf-save", "--jaxperf-prune")
    pruned.stdout.fnmatch_lines(
        ["jaxperf: baseline .jaxperf/baseline.json: 0 entries updated, 2 kept, 0 added, "
         "3 pruned (test_mod.py::test_step, test_more.py::test_more, "
         "test_more.py::test_other)"]
    )  # fmt: skip
    assert sorted(read_json(path)["tests"]) == [
        "test_mod.py::test_other",
        "test_mod.py::test_renamed",
    ]
    assert "did not run" not in jp.runpytest("--jaxperf").stdout.str()


def test_a_run_that_gated_nothing_against_a_baseline_says_so(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_mod=TESTS.format(name="step"))
    result = jp.runpytest("--jaxperf", "--jaxperf-json=run.json")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["jaxperf: no baseline at *baseline.json: the 2 recorded test(s) gated nothing against "
         "one (commit the file --jaxperf-save writes) [[]no_baseline]"]
    )  # fmt: skip
    strict = jp.runpytest("--jaxperf", "--jaxperf-strict=no_baseline")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    # A baseline of other tests (saved under another rootdir, say): the same.
    other = {"schema": "pytest-jaxperf/5", "environment": {}, "tests": {}}
    run = read_json(jp.path / "run.json")
    other["tests"] = {f"sub/{k}": v for k, v in run["tests"].items()}
    (jp.path / "other.json").write_text(json.dumps(other))
    result = jp.runpytest("--jaxperf", "--jaxperf-baseline=other.json")
    result.stdout.fnmatch_lines(["jaxperf: the baseline * has none of the 2 recorded test(s) *"])
    assert main(["compare", "other.json", str(jp.path / "run.json")]) == 0
    assert main(["compare", "other.json", str(jp.path / "run.json"), "--strict=no_baseline"]) == 1
    assert main(["compare", "other.json", str(jp.path / "run.json"), "--strict=not_run"]) == 1


def test_a_save_that_changes_the_environment_says_what_it_switches_off(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    jp.makepyfile(test_mod=TESTS.format(name="step"))
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=2)
    monkeypatch.setenv("JAX_ENABLE_X64", "1")
    result = jp.runpytest_subprocess("--jaxperf", "--jaxperf-save")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["jaxperf: baseline .jaxperf/baseline.json: 2 entries updated, 0 kept, 0 added; the "
         "baseline's environment changed (x64 False -> True): runs in the old one gate no "
         "program sizes or compile time of the entries this save wrote"]
    )  # fmt: skip
    # A re-save in the same environment says nothing of it.
    again = jp.runpytest_subprocess("--jaxperf", "--jaxperf-save")
    assert "environment changed" not in again.stdout.str()
