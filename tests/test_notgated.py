"""Not-gated codes: a note carries its code through the verdict's JSON (xdist workers, run
files), the summary names it, and --jaxperf-strict's value is checked."""

from __future__ import annotations

import pickle

import pytest
from _records import fn, rec

from pytest_jaxperf.compare import Gating, Verdict, apply_strict, evaluate
from pytest_jaxperf.config import ConfigError, MarkerLimits, Tolerances, convert
from pytest_jaxperf.notgated import BY_NAME, Note, code_of
from pytest_jaxperf.report.summary import RunSummary, not_gated_lines


def _differing() -> Verdict:
    f = rec(fn("f", "m.py:1"))
    gating = Gating(Tolerances(), timing_differences=("jax 0.1 -> 0.2",))
    return evaluate(f, f, MarkerLimits(), gating)


def test_a_note_keeps_its_code_through_json_and_pickle() -> None:
    verdict = _differing()
    (note,) = verdict.notes
    assert code_of(note) == "environment_differs"
    back = Verdict.from_json(verdict.to_json())
    assert back.notes == verdict.notes and code_of(back.notes[0]) == "environment_differs"
    assert code_of(pickle.loads(pickle.dumps(note))) == "environment_differs"
    # A verdict written before codes: its notes read as plain lines, with no code.
    old = verdict.to_json()
    del old["codes"]
    assert code_of(Verdict.from_json(old).notes[0]) is None
    with pytest.raises(ValueError, match="unknown not-gated code 'nope'"):
        Note("x", "nope")


def test_the_summary_names_each_reason_by_its_code() -> None:
    summary = RunSummary.of({"t::a": _differing(), "t::b": _differing()})
    assert not_gated_lines(summary.notes) == [
        "jaxperf: compile time of 2 tests not gated: environment differs (jax 0.1 -> 0.2) "
        "[environment_differs]"
    ]


def test_strict_fails_only_the_chosen_codes() -> None:
    verdict = _differing()
    apply_strict(verdict, frozenset({"machine_load"}))
    assert not verdict.failed and verdict.status == "ok"
    apply_strict(verdict, frozenset({"environment_differs"}))
    assert verdict.failed and verdict.status == "NOT GATED"
    assert verdict.strict == [
        "compile time not gated: environment differs (jax 0.1 -> 0.2) "
        "[environment_differs: failed by --jaxperf-strict]"
    ]


def test_the_strict_option_is_checked() -> None:
    both = convert("x", "codes", "environment_differs, unconfirmed", ".")
    assert both == {"environment_differs", "unconfirmed"}
    assert convert("x", "codes", "all", ".") == frozenset(BY_NAME)
    assert convert("--jaxperf-strict", "codes", "", ".") == frozenset()
    with pytest.raises(ConfigError, match=r"did you mean 'machine_load'\?"):
        convert("--jaxperf-strict", "codes", "machine-load", ".")


def test_run_findings_name_a_baseline_that_gated_nothing_and_tests_that_did_not_run() -> None:
    from pytest_jaxperf.notgated import run_findings

    args = {"saving": False, "prune": False, "baseline_path": "b.json", "not_run": []}
    assert run_findings(recorded={"t::a": 1}, baseline=None, **args) == [("no_baseline", (
        "jaxperf: no baseline at b.json: the 1 recorded test(s) gated nothing against one "
        "(commit the file --jaxperf-save writes) [no_baseline]"
    ))]  # fmt: skip
    (found,) = run_findings(recorded=["t::a", "t::b"], baseline={"t::c": 0}, **args)
    assert found == ("no_baseline", (
        "jaxperf: the baseline b.json has none of the 2 recorded test(s) of this run "
        "(1 entries of other tests: another rootdir or --jaxperf-baseline?) [no_baseline]"
    ))  # fmt: skip
    assert run_findings(recorded=["t::a"], baseline={"t::a": 0}, **args) == []
    assert run_findings(recorded=[], baseline=None, **args) == []  # nothing recorded
    gone = {**args, "not_run": ["t::old"]}
    ((code, line),) = run_findings(recorded=["t::a"], baseline={"t::a": 0}, **gone)
    assert code == "not_run" and "--jaxperf-prune removes them" in line
    # A save gates nothing; one that prunes drops the entries instead of naming them.
    saving = {**gone, "saving": True}
    assert [c for c, _ in run_findings(recorded=["t::a"], baseline=None, **saving)] == ["not_run"]
    assert run_findings(recorded=["t::a"], baseline=None, **{**saving, "prune": True}) == []
