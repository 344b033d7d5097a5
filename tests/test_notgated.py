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
