"""benchmarks/traps_caught.py's reading of `jaxperf compare` output (the failure text the
plugin prints) and its mapping of each example trap to the test file that guards it."""

from __future__ import annotations

from types import ModuleType
from typing import cast

import pytest
from _records import fn, rec
from conftest import BENCHMARKS, benchmark_module

from pytest_jaxperf.compare import Gating, evaluate
from pytest_jaxperf.config import MarkerLimits, Tolerances
from pytest_jaxperf.report.terminal import failure_text


@pytest.fixture(scope="module")
def traps() -> ModuleType:
    return cast(ModuleType, benchmark_module("traps_caught"))


def test_each_regressed_test_is_read_once_with_its_first_reason(traps: ModuleType) -> None:
    gating = Gating(Tolerances(compile_rtol=1.0, compile_floor=0.1))
    current = rec(fn("step", "pkg/sim.py:12", traces=2, reasons=("x: f32[3] -> f32[4]",)))
    verdict = evaluate(current, rec(fn("step", "pkg/sim.py:12")), MarkerLimits(), gating)
    text = "\n".join([
        "jaxperf: comparing r.json (2 tests) with b.json (2 tests)",
        failure_text("tests/test_a.py::test_step", verdict, "b.json"),
        "jaxperf: 1 regression",
    ])  # fmt: skip
    # Its first line, then the cause its failure names (indented: not a test of its own).
    line, cause = traps.failures(text)
    assert line.startswith("tests/test_a.py::test_step -> traces of step (defined at pkg/sim")
    assert cause.startswith(f"{' ' * 8}cause: x: f32[3] -> f32[4]; fix: ")
    assert traps._tests([line, cause]) == 1
    assert traps.failures("jaxperf: 0 regressions") == []


def test_every_trap_maps_to_an_existing_test_file(traps: ModuleType) -> None:
    guarded = traps.traps()
    assert guarded["jit_in_loop"] == "tests/test_sampler.py"
    assert guarded["builtin_sum"] == "tests/test_integration.py"
    assert guarded["unrolled"] == "tests/test_integration.py"  # gaussian_quantile
    for file in guarded.values():
        assert (BENCHMARKS.parent / "example_project" / file).is_file(), file
