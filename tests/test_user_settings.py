"""End to end: the settings real suites make in their conftest or environment (x64, strict
promotion, NaN checks, several devices, their own compilation cache, ...) change neither
the self-check nor what the plugin counts. Each case runs in its own pytest process: a
setting made by a conftest would otherwise stay on in this one."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from conftest import read_json

pytestmark = pytest.mark.jax_internals

TEST_FILE = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def scale(x):
    return jnp.sin(x) * 2.0

@pytest.mark.jaxperf
def test_shapes(jaxperf):
    scale(jnp.ones(3)); scale(jnp.ones(4))
    jaxperf.benchmark(scale, jnp.ones(8), label="scale")
"""
NODE = "test_settings.py::test_shapes"
FUNCTION = "scale at test_settings.py:5"


@dataclass(frozen=True)
class Setting:
    conftest: str = ""
    env: dict[str, str] = field(default_factory=dict)
    dtype: str = "f32"


SETTINGS = {
    "defaults": Setting(),
    "x64-conftest": Setting('jax.config.update("jax_enable_x64", True)', dtype="f64"),
    "x64-env": Setting(env={"JAX_ENABLE_X64": "1"}, dtype="f64"),
    "strict-promotion": Setting(
        'jax.config.update("jax_numpy_dtype_promotion", "strict")\n'
        'jax.config.update("jax_numpy_rank_promotion", "raise")'
    ),
    "x64-strict-promotion": Setting(
        'jax.config.update("jax_enable_x64", True)\n'
        'jax.config.update("jax_numpy_dtype_promotion", "strict")\n'
        'jax.config.update("jax_numpy_rank_promotion", "raise")',
        dtype="f64",
    ),
    "debug-nans-infs": Setting(
        'jax.config.update("jax_debug_nans", True)\njax.config.update("jax_debug_infs", True)'
    ),
    "matmul-precision": Setting('jax.config.update("jax_default_matmul_precision", "highest")'),
    "explain-and-log-compiles": Setting(
        'jax.config.update("jax_explain_cache_misses", True)\n'
        'jax.config.update("jax_log_compiles", True)'
    ),
    "host-devices-default-device": Setting(
        'jax.config.update("jax_num_cpu_devices", 4)\n'
        'jax.config.update("jax_default_device", jax.devices("cpu")[2])'
    ),
    "host-devices-xla-flags": Setting(
        env={"XLA_FLAGS": "--xla_force_host_platform_device_count=3"}
    ),
}


def _run(jp: pytest.Pytester, setting: Setting, *args: str) -> pytest.RunResult:
    if setting.conftest:
        jp.makeconftest("import jax\n" + setting.conftest + "\n")
    jp.makepyfile(test_settings=TEST_FILE)
    for name, value in setting.env.items():
        jp._monkeypatch.setenv(name, value)
    return jp.runpytest_subprocess("--jaxperf", "--jaxperf-json=out.json", "-rA", *args)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_counts_causes_and_benchmarks_hold_under_the_setting(
    jp: pytest.Pytester, name: str
) -> None:
    setting = SETTINGS[name]
    result = _run(jp, setting)
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    report = read_json(jp.path / "out.json")
    test = report["tests"][NODE]
    fn = test["functions"][FUNCTION]
    # Two shapes, then the benchmark's own shape: one trace and compile each.
    assert (fn["traces"], fn["lowerings"], fn["compiles"]) == (3, 3, 3)
    d = setting.dtype
    assert fn["retrace_reasons"] == [f"x: {d}[3] -> {d}[4]", f"x: {d}[4] -> {d}[8]"]
    assert fn["compile_s"] > 0 and fn["trace_s"] > 0
    bench = test["benchmarks"]["scale"]
    assert bench["jaxpr_eqns"] == 2
    assert bench["runtime"]["rounds"] > 0 and bench["runtime"]["median_s"] > 0
    assert "not_measured" not in report["environment"]
    assert report["environment"]["x64"] is (d == "f64")


def test_a_saved_x64_baseline_gates_a_retrace(jp: pytest.Pytester) -> None:
    setting = SETTINGS["x64-conftest"]
    _run(jp, setting, "--jaxperf-save").assert_outcomes(passed=1)
    jp.makepyfile(test_settings=TEST_FILE.replace("jnp.ones(4))", "jnp.ones(4)); scale(1.0)"))
    result = jp.runpytest_subprocess("--jaxperf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*traces of scale (defined at test_settings.py:5): baseline 3 -> now 4 *"]
    )


def test_the_probe_leaves_nothing_in_the_users_compilation_cache(jp: pytest.Pytester) -> None:
    cache = jp.path / "xla-cache"
    setting = Setting(
        f'jax.config.update("jax_compilation_cache_dir", {str(cache)!r})\n'
        'jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)\n'
        'jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)'
    )
    _run(jp, setting).assert_outcomes(passed=1)
    written = sorted(p.name for p in cache.iterdir())
    assert any(n.startswith("jit_scale-") for n in written), written
    assert not any("probe" in n for n in written), written
    test = read_json(jp.path / "out.json")["tests"][NODE]
    assert test["functions"][FUNCTION]["compiles"] == 3
    # The second run reads the user's programs back from their cache, and says so.
    _run(jp, setting).assert_outcomes(passed=1)
    fn = read_json(jp.path / "out.json")["tests"][NODE]["functions"][FUNCTION]
    assert (fn["compiles"], fn["cache_hits"]) == (3, 3)


def test_the_self_check_passes_under_a_global_transfer_guard(jp: pytest.Pytester) -> None:
    # The probe makes its arrays from host values: the guard would refuse that.
    jp.makeconftest('import jax\njax.config.update("jax_transfer_guard", "disallow")\n')
    jp.makepyfile(
        test_guard="""
import pytest

@pytest.mark.jaxperf
def test_nothing_moves():
    pass
"""
    )
    result = jp.runpytest_subprocess("--jaxperf")
    result.assert_outcomes(passed=1)
    assert result.ret == 0


def test_jit_disabled_globally_keeps_traces_and_compiles_out_of_the_verdict(
    jp: pytest.Pytester,
) -> None:
    result = _run(jp, Setting('jax.config.update("jax_disable_jit", True)'))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "pytest-jaxperf: jax_disable_jit is on: jitted functions run op by op; traces and "
            "compiles are not measured or gated",
            "*traces not measured (jax_disable_jit is on*): not gated",
        ]
    )
    env = read_json(jp.path / "out.json")["environment"]
    assert sorted(env["not_measured"]) == ["compiles", "traces"]
