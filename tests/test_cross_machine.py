"""Compile seconds across CPU models: each machine's reference compile, the scale between
two machines, and the gate on scaled CPU seconds (injected numbers, then end to end)."""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest
from _records import fn, rec
from conftest import ROLLOUT_TEST, read_json

from pytest_jaxperf.compare import COMPILE_TIME, Gating, evaluate
from pytest_jaxperf.config import MarkerLimits
from pytest_jaxperf.environment import REFERENCE_KEY, MachineScale, machine_scale

pytestmark = pytest.mark.jax_internals

AMD = {"jax": "0.10.2", "jaxlib": "0.10.2", "backend": "cpu", "x64": False, "cpu": "AMD EPYC",
       "cpu_count": 2, REFERENCE_KEY: 0.2}  # fmt: skip
INTEL = {**AMD, "cpu": "Intel(R) Xeon(R) Processor", "cpu_count": 4, REFERENCE_KEY: 0.1}


def test_the_scale_needs_the_machine_as_the_only_difference_and_both_references() -> None:
    scale = machine_scale(AMD, INTEL)
    assert scale == MachineScale(
        0.2, 0.1, ("cpu AMD EPYC -> Intel(R) Xeon(R) Processor", "cpu_count 2 -> 4")
    )
    assert scale is not None and scale.factor == 0.5
    assert machine_scale(AMD, AMD) is None  # nothing to scale: gated as it is
    assert machine_scale(AMD, {**INTEL, "jax": "0.10.1"}) is None
    assert machine_scale({**AMD, REFERENCE_KEY: None}, INTEL) is None  # an older baseline
    for bad in (0, -1.0, True, "0.2"):
        assert machine_scale({**AMD, REFERENCE_KEY: bad}, INTEL) is None


def _compiled(cpu_s: float) -> Any:
    return rec(fn("f", "m.py:1", compile_s=cpu_s, cpu=1.0))


def _judge(now_s: float, before_s: float, before: dict, now: dict, **kw: Any) -> Any:
    from pytest_jaxperf.environment import timing_differences

    return evaluate(
        _compiled(now_s), _compiled(before_s), MarkerLimits(),
        Gating(timing_differences=timing_differences(before, now),
               machine=machine_scale(before, now), **kw),
    )  # fmt: skip


def test_compile_seconds_on_another_cpu_are_scaled_by_the_reference_compiles() -> None:
    # This machine compiles the reference in half the time: 1.0 s there is 0.5 s here.
    ok = _judge(0.9, 1.0, AMD, INTEL)  # 1.8x the scaled baseline: within rtol 1
    assert not ok.breaches and not ok.notes
    assert ok.info == [
        "compile time gated across machines: the baseline's CPU seconds x 0.50, the ratio of "
        "the two machines' reference compiles"
    ]
    slow = _judge(1.3, 1.0, AMD, INTEL)  # 2.6x: above the cross-machine margin (2.5x)
    (breach,) = slow.breaches
    assert (breach.metric, breach.reference, breach.current) == (COMPILE_TIME, 0.5, 1.3)
    assert breach.detail == (
        "cpu seconds, rtol 1.5, floor 0.1 s; baseline x 0.50: the reference compile takes "
        "0.200 s there, 0.100 s here (cpu AMD EPYC -> Intel(R) Xeon(R) Processor, "
        "cpu_count 2 -> 4)"
    )
    assert breach.reasons[0].startswith("f at m.py:1: 0.500 s -> 1.300 s")
    # Unscaled, 1.3 s against 1.0 s would have passed: the scale is what decides.
    assert not _judge(1.3, 1.0, AMD, AMD).breaches


def test_without_a_scale_or_on_the_wall_clock_the_line_says_not_gated() -> None:
    older = {**AMD, REFERENCE_KEY: None}
    out = _judge(5.0, 1.0, older, INTEL)
    assert not out.breaches
    assert out.notes == [
        "compile time not gated: environment differs (cpu AMD EPYC -> Intel(R) Xeon(R) "
        "Processor, cpu_count 2 -> 4)"
    ]
    out = evaluate(
        _compiled(5.0), _compiled(1.0), MarkerLimits(compile_clock="wall"),
        Gating(timing_differences=["cpu AMD EPYC -> Intel(R) Xeon(R) Processor",
                                   "cpu_count 2 -> 4"], machine=machine_scale(AMD, INTEL)),
    )  # fmt: skip
    assert not out.breaches
    assert out.notes[0].endswith("; across machines only CPU seconds are compared")
    # Anything else differing too (here: xdist workers) leaves it out as before.
    out = evaluate(
        _compiled(5.0), _compiled(1.0), MarkerLimits(),
        Gating(timing_differences=["cpu AMD EPYC -> Intel(R) Xeon(R) Processor",
                                   "cpu_count 2 -> 4", "xdist 0 -> 2"],
               machine=machine_scale(AMD, INTEL)),
    )  # fmt: skip
    assert not out.breaches and out.notes[0].startswith("compile time not gated")


@pytest.mark.usefixtures("steady_reference")
def test_a_baseline_from_another_cpu_model_gates_compile_time(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_mod=ROLLOUT_TEST.format(unroll=1, marker="static_rtol=1000"))
    assert jp.runpytest("--jaxperf", "--jaxperf-save").ret == 0
    path = jp.path / ".jaxperf" / "baseline.json"
    data = read_json(path)
    assert data["environment"][REFERENCE_KEY] > 0
    data["environment"]["cpu"] = "Some Other CPU 9000"
    path.write_text(json.dumps(data), encoding="utf-8")
    # This run is in-process, in a worker that may hold many earlier runs' objects: a full
    # collection of them inside the 40 ms compile would pass the 0.1 s floor (seen in
    # .ci/run: lowering 0.134 s, 0.040 s alone).
    gc.collect()
    result = jp.runpytest("--jaxperf", "-rA")
    assert result.ret == 0, result.stdout.str()
    assert "compile time gated across machines: the baseline's CPU seconds x 1.00" in (
        result.stdout.str()
    )
    assert "not gated" not in result.stdout.str().split("= jaxperf =")[-1].replace(
        "0 not gated", ""
    )
    # The scan unrolled: compile time grows about 15x (its size is left out: static_rtol).
    jp.makepyfile(test_mod=ROLLOUT_TEST.format(unroll=True, marker="static_rtol=1000"))
    result = jp.runpytest("--jaxperf")
    assert result.ret == 1
    out = result.stdout.str()
    assert "compile time of all functions: baseline" in out
    assert "; baseline x 1.00: the reference compile takes" in out
    assert "(cpu Some Other CPU 9000 -> " in out
