"""One verdict: the plugin and `jaxperf compare` give every test of a run the same verdict
(the confirmation the plugin measured is in the run file); a marker limit is never left out;
a function with more programs than are kept is confirmed on the first ones; a sharded
program is not recompiled as another one; not-gated reasons have codes that
--jaxperf-strict turns into failures."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import read_json

from pytest_jaxperf.cli import evaluate_all, main
from pytest_jaxperf.config import Tolerances
from pytest_jaxperf.storage.store import load

pytestmark = pytest.mark.jax_internals

# Each scenario switched by REGRESS=1: a retrace, a trace-only test over its limit, a
# compiled test over its limit (confirmed by real recompiles), an unrolled loop's growth,
# an unchanged test, and a shape check (eval_shape only) of a loop unrolled 30x longer.
SCENARIOS = """
import os
import jax
import jax.numpy as jnp
import pytest

REGRESS = os.environ.get("REGRESS") == "1"

@jax.jit
def f(x):
    return jnp.sin(x) * 2 + 1

def test_retrace():
    f(jnp.ones(3))
    if REGRESS:
        f(jnp.ones(4))

@jax.jit
def solve(x):
    if x.shape[0] > 2:
        raise ValueError("too long")
    return x + 1

@pytest.mark.jaxperf(max_compile_time=0)
def test_limit_trace_only():
    with pytest.raises(ValueError):
        solve(jnp.ones(3))

@jax.jit
def g(x):
    return jnp.cos(x) - 1

@pytest.mark.jaxperf(max_compile_time=0)
def test_limit_compiled():
    g(jnp.ones(3))

@jax.jit
def unrolled(x):
    for _ in range(40 if REGRESS else 4):
        x = jnp.sin(x)
    return x

def test_sizes():
    unrolled(jnp.ones(3))

def test_unchanged():
    f(jnp.ones(5))

def step(x):
    for _ in range(300 if REGRESS else 10):
        x = jnp.sin(x)
    return x

def test_shape_only():
    jax.eval_shape(jax.jit(step), jnp.ones(3))
"""


def _statuses(junit: Path) -> dict[str, str]:
    """The plugin's status of each test, as its JUnit XML properties say."""
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        if "jaxperf_status" in props:
            out[case.get("name", "")] = props["jaxperf_status"]
    return out


def _tally(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("jaxperf: ") and
                " regression" in line and " not gated" in line)  # fmt: skip


def test_the_plugin_and_compare_give_every_test_the_same_verdict(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    jp.makepyfile(test_scenarios=SCENARIOS)
    jp.runpytest("--jaxperf-all", "--jaxperf", "--jaxperf-save").assert_outcomes(passed=4, failed=2)
    monkeypatch.setenv("REGRESS", "1")
    result = jp.runpytest(
        "--jaxperf-all", "--jaxperf", "--jaxperf-json=run.json", "--junitxml=junit.xml"
    )
    plugin = _statuses(jp.path / "junit.xml")
    assert plugin == {
        "test_retrace": "REGRESSED",
        "test_limit_trace_only": "OVER LIMIT",
        "test_limit_compiled": "OVER LIMIT",
        "test_sizes": "REGRESSED",
        "test_unchanged": "ok",
        "test_shape_only": "REGRESSED",
    }
    # The compiled test's limit breach was confirmed by real recompiles, and the run file
    # holds what they measured.
    run = read_json(jp.path / "run.json")["tests"]
    confirmed = run["test_scenarios.py::test_limit_compiled"]["confirmation"]
    assert confirmed["repeats"] >= 1 and list(confirmed["functions"]) == [
        "g at test_scenarios.py:28"
    ]
    # `jaxperf compare` on the run's own file: the same verdict, test by test, and the
    # same tally line and exit code.
    baseline = jp.path / ".jaxperf" / "baseline.json"
    judged = evaluate_all(load(baseline), load(jp.path / "run.json"), Tolerances())
    assert {k.split("::")[1]: v.status for k, v in judged.items()} == plugin
    compared = subprocess.run(
        [sys.executable, "-m", "pytest_jaxperf", "compare", str(baseline), "run.json"],
        cwd=jp.path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert compared.returncode == 1 and result.ret == 1
    assert _tally(compared.stdout) == _tally(result.stdout.str())


BOUNDED = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def many(x):
    return jnp.tanh(x) * 3

@jax.jit
def helper(x):
    return x + 1

@pytest.mark.jaxperf(max_compile_time={"many": 0})
def test_many_shapes():
    for n in range(1, 6):
        many(jnp.ones(n))

@pytest.mark.jaxperf(max_compile_time={"many": 0})
def test_many_shapes_and_a_helper():
    helper(jnp.ones(2))
    for n in range(1, 6):
        many(jnp.ones(n))
"""


def test_a_function_past_the_bound_is_confirmed_on_its_first_programs(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 5 programs of `many`, 3 kept: it is confirmed on those, alone or beside a helper.
    from pytest_jaxperf.measure import recorder

    monkeypatch.setattr(recorder, "MAX_KEPT", 3)
    jp.makepyfile(test_bounded=BOUNDED)
    result = jp.runpytest("--jaxperf", "--jaxperf-json=run.json")
    result.assert_outcomes(failed=2)
    # Up to pytest's short summary, which under CI=true repeats each failure's text whole.
    out = result.stdout.str().split("short test summary info")[0]
    assert out.count("compile time of many (defined at test_bounded.py:5): ") == 2
    assert out.count("[confirmed: fastest of ") == 2
    assert "not re-measured for many" not in out and " not gated:" not in out
    for entry in read_json(jp.path / "run.json")["tests"].values():
        assert "many at test_bounded.py:5" in entry["confirmation"]["first"]


SHARDED = """
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

MESH = Mesh(np.array(jax.devices()), ("x",))

@jax.jit
def total(x):
    return jnp.sum(jnp.sin(x))

@pytest.mark.jaxperf(max_compile_time={"total": 0})
def test_sharded():
    x = jax.device_put(jnp.ones(16), NamedSharding(MESH, P("x")))
    assert len(jax.devices()) == 4
    total(x)
"""


def test_a_sharded_program_is_not_compiled_again_as_another_program(
    jp: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
    jp.makepyfile(test_sharded=SHARDED)
    result = jp.runpytest_subprocess("--jaxperf", "--jaxperf-json=run.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*compile time not re-measured for total at test_sharded.py:9 (a program over 4 "
            "devices, which compiled again from its jaxpr would be another program (its "
            "shardings are not kept)): first figures kept",
        ]
    )
    (entry,) = read_json(jp.path / "run.json")["tests"].values()
    assert entry["confirmation"]["repeats"] == 0
    assert entry["confirmation"]["left_out"] == {
        "total at test_sharded.py:9": "a program over 4 devices, which compiled again from its "
        "jaxpr would be another program (its shardings are not kept)"
    }


ENVIRONMENT = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def f(x):
    return x * 2

@pytest.mark.jaxperf
def test_f():
    f(jnp.ones(3))
"""


def test_strict_codes_make_chosen_not_gated_reasons_fail(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_env=ENVIRONMENT)
    jp.runpytest("--jaxperf", "--jaxperf-save").assert_outcomes(passed=1)
    path = jp.path / ".jaxperf" / "baseline.json"
    data = json.loads(path.read_text())
    data["environment"]["jax"] = "0.0.1"  # saved under another jax: nothing is gated
    path.write_text(json.dumps(data))
    result = jp.runpytest("--jaxperf", "--jaxperf-json=run.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["jaxperf: compile time of 1 test not gated: environment differs (jax 0.0.1 -> *) "
         "[[]environment_differs]"]
    )  # fmt: skip
    strict = jp.runpytest("--jaxperf", "--jaxperf-strict=environment_differs,unconfirmed")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(
        ["jaxperf: test_env.py::test_f: not gated: compile time not gated: environment differs "
         "(jax 0.0.1 -> *) [[]environment_differs: failed by --jaxperf-strict]",
         "*test_env.py::test_f * NOT GATED"]
    )  # fmt: skip
    # The ini option, and `jaxperf compare --strict`, the same.
    assert main(["compare", str(path), str(jp.path / "run.json")]) == 0
    assert main(["compare", str(path), str(jp.path / "run.json"), "--strict=all"]) == 1
    # A misspelt code: one line naming it, the close match and the known ones.
    bad = jp.runpytest("--jaxperf", "--jaxperf-strict=enviroment_differs")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        ["*--jaxperf-strict: unknown not-gated code 'enviroment_differs' (did you mean "
         "'environment_differs'?); expected a comma-separated list of environment_differs, *"]
    )  # fmt: skip
