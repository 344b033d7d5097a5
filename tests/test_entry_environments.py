"""Each baseline entry keeps the environment it was measured in, and is gated against it."""

from __future__ import annotations

import json

import pytest
from _records import fn, rec, resaved
from conftest import lit, read_json

from pytest_jaxperf.environment import timing_differences
from pytest_jaxperf.model import RunRecord
from pytest_jaxperf.storage.store import dumps, load, save

SUITE = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def f(x):
    return jnp.sin(x) * 2

@pytest.mark.jaxperf
def test_a():
    f(jnp.ones(3))

@pytest.mark.jaxperf
def test_b():
    f(jnp.ones(4))
"""


def test_a_partial_save_keeps_the_other_entries_environment(reference_on: pytest.Pytester) -> None:
    jp = reference_on
    jp.makepyfile(test_envs=SUITE)
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=2)
    path = jp.path / ".jaxperf" / "baseline.json"
    data = read_json(path)
    # As if the whole baseline had been saved on another machine, by a pytest-jaxperf that
    # measured no reference compile (with one, compile time is compared across machines).
    data["environment"]["cpu"] = "Another CPU"
    del data["environment"]["reference_compile_cpu_s"]
    path.write_text(json.dumps(data), encoding="utf-8")
    jp.runpytest("--jaxperf", "--jaxperf-save", "-k", "test_a").assert_outcomes(passed=1)
    saved = read_json(path)
    here = saved["environment"]["cpu"]
    assert here != "Another CPU"
    assert "environment" not in saved["tests"]["test_envs.py::test_a"]
    assert saved["tests"]["test_envs.py::test_b"]["environment"]["cpu"] == "Another CPU"
    # test_b is gated against the machine it was timed on: its compile time is not compared.
    result = jp.runpytest("--jaxperf")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        lit(
            "test_envs.py::test_a * =  * ok",
            "test_envs.py::test_b * =  * ok (not gated)",
            "jaxperf: 0 regressions, 0 improvements, 0 new, 1 not gated",
        )
    )
    # Saving test_b again takes it into this machine's environment.
    jp.runpytest("--jaxperf", "--jaxperf-save", "-k", "test_b").assert_outcomes(passed=1)
    assert "environment" not in read_json(path)["tests"]["test_envs.py::test_b"]


def test_entry_environments_are_written_and_read_back(tmp_path: object) -> None:
    old = RunRecord({"jax": "0.9.0", "cpu": "A"}, tests={"t::b": rec(fn("g", "m.py:2"))})
    run = RunRecord({"jax": "0.10.2", "cpu": "B"}, tests={"t::a": rec(fn("f", "m.py:1"))})
    merged = resaved(old, run)
    path = tmp_path / "baseline.json"  # type: ignore[operator]
    save(path, merged)
    text = path.read_text(encoding="utf-8")
    assert '      "environment": {"cpu": "A", "jax": "0.9.0"},' in text.splitlines()
    assert dumps(load(path)) == text  # type: ignore[arg-type]
    loaded = load(path)
    assert loaded is not None
    assert loaded.environment_of("t::b") == {"jax": "0.9.0", "cpu": "A"}
    assert loaded.environment_of("t::a") == {"jax": "0.10.2", "cpu": "B"}
    assert timing_differences(loaded.environment_of("t::b"), run.environment) == [
        "jax 0.9.0 -> 0.10.2",
        "cpu A -> B",
    ]


def test_an_entry_measured_here_again_drops_its_own_environment() -> None:
    env = {"jax": "0.10.2"}
    old = RunRecord(environment={"jax": "0.9.0"}, tests={"t::b": rec(fn("g", "m.py:2"))})
    tests = {n: rec(fn("f", "m.py:1")) for n in ("t::a", "t::c")}
    kept = resaved(old, RunRecord(environment=env, tests=tests))
    assert kept.environment == env and kept.tests["t::b"].environment == {"jax": "0.9.0"}
    # Later runs in that same old environment make it the file's again (most entries'): the
    # entry needs no environment of its own.
    again = {n: rec(fn("f", "m.py:1")) for n in ("t::b", "t::d", "t::e")}
    back = resaved(kept, RunRecord(environment={"jax": "0.9.0"}, tests=again))
    assert back.environment == {"jax": "0.9.0"} and back.tests["t::b"].environment is None
    assert back.tests["t::a"].environment == env


@pytest.mark.parametrize(
    ("before", "now", "differences"),
    [
        ({"xdist_workers": 2}, {"xdist_workers": 0}, ["xdist_workers 2 -> 0"]),
        ({"xdist_workers": 0}, {"xdist_workers": 0}, []),
        ({}, {"xdist_workers": 0}, []),  # a file from before the field: unknown, not a difference
    ],
)
def test_timings_from_side_by_side_workers_are_not_compared_with_a_serial_run(
    before: dict[str, int], now: dict[str, int], differences: list[str]
) -> None:
    assert timing_differences(before, now) == differences
