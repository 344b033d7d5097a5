"""Program sizes are compared only between environments where the same code lowers to the
same program: versions, backend and device kind, device count, x64, XLA flags and JAX options
that change codegen (pure rules, then a sharded batch on 1 and 4 CPU devices end to end)."""

from __future__ import annotations

import pytest
from conftest import read_json

from pytest_jaxperf.compare import Gating
from pytest_jaxperf.config import Tolerances
from pytest_jaxperf.environment import static_differences, timing_differences
from pytest_jaxperf.measure.machine import xla_flags

BASE = {"jax": "0.10.2", "jaxlib": "0.10.2", "backend": "cpu", "device_kind": "cpu",
        "device_count": 1, "x64": False, "cpu": "AMD EPYC", "cpu_count": 2,
        "program_flags": {"jax_default_prng_impl": "threefry2x32"}}  # fmt: skip


def test_what_changes_the_program_keys_the_sizes() -> None:
    assert static_differences(BASE, {**BASE, "cpu": "Intel", "cpu_count": 8}) == []
    assert static_differences(BASE, {**BASE, "device_count": 4}) == ["device_count 1 -> 4"]
    assert static_differences(BASE, {**BASE, "device_kind": "TPU v4"}) == [
        "device_kind cpu -> TPU v4"
    ]
    flags = {"jax_default_prng_impl": "rbg", "--xla_cpu_enable_fast_math": "true"}
    assert static_differences(BASE, {**BASE, "program_flags": flags}) == [
        "XLA_FLAGS --xla_cpu_enable_fast_math unset -> true",
        "jax_default_prng_impl threefry2x32 -> rbg",
    ]
    # A baseline saved before the flags were recorded is compared as before.
    older = {k: v for k, v in BASE.items() if k != "program_flags"}
    assert static_differences(older, {**BASE, "program_flags": flags}) == []
    # What changes the program changes its compile time too.
    assert timing_differences(BASE, {**BASE, "program_flags": flags}) == [
        "XLA_FLAGS --xla_cpu_enable_fast_math unset -> true",
        "jax_default_prng_impl threefry2x32 -> rbg",
    ]
    gating = Gating.between(BASE, {**BASE, "device_count": 4}, Tolerances())
    assert gating.static_differences == ("device_count 1 -> 4",)


def test_xla_flags_that_change_no_program_are_left_out() -> None:
    value = (
        "--xla_force_host_platform_device_count=4 --xla_dump_to=/tmp/d --xla_dump_hlo_as_text "
        "--xla_cpu_enable_fast_math=true --xla_backend_optimization_level=0 --xla_gpu_autotune"
    )
    assert xla_flags(value) == {
        "--xla_cpu_enable_fast_math": "true",
        "--xla_backend_optimization_level": "0",
        "--xla_gpu_autotune": "true",
    }
    assert xla_flags("") == {}


# A batch sharded over every device: XLA partitions the program per device count.
SHARDED_TEST = """
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec

@jax.jit
def step(x):
    return jnp.tanh(x * 2.0).mean()  # an all-reduce once split over devices

@pytest.mark.jaxperf
def test_sharded_step():
    mesh = Mesh(np.array(jax.devices()), ("batch",))
    x = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, PartitionSpec("batch")))
    step(x).block_until_ready()
"""


def test_sizes_from_another_device_count_are_not_compared(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    jp.makepyfile(test_sharded=SHARDED_TEST)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    saved = jp.runpytest_subprocess("--jaxperf", "--jaxperf-save")
    assert saved.ret == 0, saved.stdout.str()
    env = read_json(jp.path / ".jaxperf" / "baseline.json")["environment"]
    assert env["device_count"] == 1 and env["program_flags"].get("jax_default_prng_impl")
    # The host platform's device count is the device_count key's, not a codegen flag's.
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
    result = jp.runpytest_subprocess("--jaxperf", "-rA")
    out = result.stdout.str()
    assert result.ret == 0, out
    assert "REGRESSED" not in out and "ops of step" not in out
    assert "note: program metrics not gated: environment differs (device_count 1 -> 4)" in out
    result.stdout.fnmatch_lines([
        "*test_sharded_step * ok (not gated)",
        "jaxperf: program metrics of 1 test not gated: environment differs (device_count 1 -> 4) "
        "[[]environment_differs]",
    ])  # fmt: skip
