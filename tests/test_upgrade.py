"""A JAX upgrade is an event the run explains: where only jax/jaxlib (or the codegen flags)
differ from the baseline, each test says what the upgrade changed (sizes, compile seconds),
not gated, and the summary names the largest changes."""

from __future__ import annotations

import json

import pytest
from _records import fn, rec

from pytest_jaxperf.compare import Gating, Verdict, evaluate
from pytest_jaxperf.config import MarkerLimits, Tolerances
from pytest_jaxperf.report.summary import upgrade_line

OLD = {"jax": "0.10.2", "jaxlib": "0.10.2", "backend": "cpu", "cpu": "A"}
NEW = {**OLD, "jax": "0.12.0.1", "jaxlib": "0.12.0.1"}


def _sized(eqns: int, compile_s: float) -> object:
    f = fn("f", "m.py:1", compile_s=compile_s, cpu=None)
    f.jaxpr_eqns, f.hlo_ops, f.xla_ops = eqns, 10, 12
    return rec(f)


def test_an_upgrade_lists_what_it_changed_not_gated() -> None:
    base, now = _sized(30, 0.18), _sized(28, 0.21)
    verdict = evaluate(now, base, MarkerLimits(), Gating.between(OLD, NEW, Tolerances()))
    assert not verdict.failed and verdict.status == "ok"
    assert verdict.upgrade == [
        ("jaxpr equations of f", 30, 28), ("compile wall seconds", 0.18, 0.21)
    ]  # fmt: skip
    assert (
        "upgrade (jax 0.10.2 -> 0.12.0.1, jaxlib 0.10.2 -> 0.12.0.1), not gated: jaxpr "
        "equations of f 30 -> 28, compile wall seconds 0.180 -> 0.210"
    ) in verdict.info
    back = Verdict.from_json(json.loads(json.dumps(verdict.to_json())))
    assert back.upgrade == verdict.upgrade
    line = upgrade_line({"t.py::test_a": verdict, "t.py::test_b": Verdict()})
    assert line == (
        "jaxperf: the upgrade changed 1 test (not gated; each test's 'upgrade' line says what; "
        "re-save on the upgrade's own commit); largest: test_a: compile wall seconds 0.180 -> "
        "0.210; test_a: jaxpr equations of f 30 -> 28"
    )


def test_another_cpu_beside_the_upgrade_lists_sizes_only() -> None:
    verdict = evaluate(
        _sized(28, 0.5), _sized(30, 0.18), MarkerLimits(),
        Gating.between(OLD, {**NEW, "cpu": "B"}, Tolerances()),
    )  # fmt: skip
    assert verdict.upgrade == [("jaxpr equations of f", 30, 28)]


@pytest.mark.parametrize("other", [{"x64": True}, {"backend": "gpu"}])
def test_a_difference_besides_the_versions_is_no_upgrade(other: dict[str, object]) -> None:
    verdict = evaluate(
        _sized(28, 0.21), _sized(30, 0.18), MarkerLimits(),
        Gating.between(OLD, {**NEW, **other}, Tolerances()),
    )  # fmt: skip
    assert verdict.upgrade == [] and not any(i.startswith("upgrade") for i in verdict.info)


@pytest.mark.jax_internals
def test_a_run_against_a_baseline_of_another_jax_says_what_changed(jp: pytest.Pytester) -> None:
    jp.makepyfile(
        test_up="""
        import jax, jax.numpy as jnp, pytest

        @jax.jit
        def f(x):
            return jnp.sin(x) * 2

        @pytest.mark.jaxperf
        def test_f():
            f(jnp.ones(3))
        """
    )
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=1)
    path = jp.path / ".jaxperf" / "baseline.json"
    data = json.loads(path.read_text())
    data["environment"]["jax"] = "0.0.1"
    entry = data["tests"]["test_up.py::test_f"]
    for where in (entry, *entry["functions"].values()):
        where["jaxpr_eqns"] += 3
    path.write_text(json.dumps(data))
    result = jp.runpytest("--jaxperf", "-rA")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "note: upgrade (jax 0.0.1 -> *), not gated: jaxpr equations of f 5 -> 2, compile cpu "
            "seconds * -> *",
            "jaxperf: the upgrade changed 1 test (not gated; *); largest: test_f: *",
        ]
    )
