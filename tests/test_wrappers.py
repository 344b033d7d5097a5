"""End to end: a jitted function under another jit's wrapper (vmap, grad, value_and_grad, a
partial, a `functools.wraps` decorator) is traced once per new shape, not twice, and never
called re-defined; a `jax.clear_caches()` in one test does not change another's counts."""

from __future__ import annotations

import pytest
from conftest import read_json

pytestmark = pytest.mark.jax_internals

KALMAN = """
import functools

import jax
import jax.numpy as jnp


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


@jax.jit
def kalman_filter(x):
    return jnp.sum(jnp.tanh(x) * 2.0)
"""

WRAPPED = """
import functools

import jax
import jax.numpy as jnp
import pytest
from kalman import kalman_filter, logged


@pytest.mark.jaxperf(max_traces=1)
def test_vmap():
    jax.jit(jax.vmap(kalman_filter))(jnp.ones((4, 3)))


@pytest.mark.jaxperf
def test_vmap_new_shapes():
    batched = jax.jit(jax.vmap(kalman_filter))
    batched(jnp.ones((4, 3)))
    batched(jnp.ones((5, 3)))
    batched(jnp.ones((5, 2)))


@pytest.mark.jaxperf(max_traces=1)
def test_grad():
    jax.jit(jax.grad(kalman_filter))(jnp.ones(3))


@pytest.mark.jaxperf(max_traces=1)
def test_value_and_grad():
    jax.jit(jax.value_and_grad(kalman_filter))(jnp.ones(3))


@pytest.mark.jaxperf(max_traces=1)
def test_partial():
    jax.jit(functools.partial(kalman_filter))(jnp.ones(3))


@pytest.mark.jaxperf(max_traces=1)
def test_decorator():
    jax.jit(logged(kalman_filter))(jnp.ones(3))


@pytest.mark.jaxperf
def test_plain_then_vmap():
    kalman_filter(jnp.ones(3))
    jax.jit(jax.vmap(kalman_filter))(jnp.ones((4, 3)))
"""

REDEFINED = """
import jax
import jax.numpy as jnp
import pytest
from kalman import kalman_filter


@pytest.mark.jaxperf
def test_lambda_loop():
    for i in range(3):
        jax.jit(lambda x: x + i)(jnp.ones(3))


@pytest.mark.jaxperf
def test_closure_per_call():
    def make(k):
        @jax.jit
        def scaled(x):
            return x * k

        return scaled

    for k in range(3):
        make(k)(jnp.ones(3))


@pytest.mark.jaxperf
def test_vmap_wrapper_loop():
    for _ in range(3):
        jax.jit(jax.vmap(kalman_filter))(jnp.ones((4, 3)))
"""


def _functions(jp: pytest.Pytester, *args: str) -> dict[str, dict[str, dict]]:
    result = jp.runpytest_subprocess(
        "--jaxperf", "--jaxperf-json=out.json", "-p", "no:randomly", *args
    )
    assert result.ret == 0, result.stdout.str()
    return {
        nodeid.split("::")[1]: rec["functions"]
        for nodeid, rec in read_json(jp.path / "out.json")["tests"].items()
    }


def _line(jp: pytest.Pytester, module: str, text: str) -> int:
    lines = (jp.path / f"{module}.py").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(text))


def test_a_jitted_function_under_a_wrapper_is_traced_once(jp: pytest.Pytester) -> None:
    jp.makepyfile(kalman=KALMAN, test_wrapped=WRAPPED)
    tests = _functions(jp)
    key = f"kalman_filter at kalman.py:{_line(jp, 'kalman', '@jax.jit')}"
    counts = {
        name: {k: (f["traces"], f["lowerings"], f["compiles"]) for k, f in funcs.items()}
        for name, funcs in tests.items()
    }
    assert counts == {
        # Before: (2, 1, 1) each, the wrapper's trace and the function's inside it.
        "test_vmap": {key: (1, 1, 1)},
        "test_vmap_new_shapes": {key: (3, 3, 3)},
        "test_grad": {key: (1, 1, 1)},
        "test_value_and_grad": {key: (1, 1, 1)},
        "test_partial": {key: (1, 1, 1)},
        "test_decorator": {key: (1, 1, 1)},
        # Two programs of one function: the plain call's and the batched one's.
        "test_plain_then_vmap": {key: (2, 2, 2)},
    }
    reasons = {name: funcs[key]["retrace_reasons"] for name, funcs in tests.items()}
    assert reasons["test_vmap_new_shapes"] == ["x: f32[4,3] -> f32[5,3]", "x: f32[5,3] -> f32[5,2]"]
    assert reasons["test_plain_then_vmap"][0].startswith(
        "traced for another wrapper of kalman_filter"
    )
    assert not [r for rs in reasons.values() for r in rs if "re-defined" in r]


def test_a_real_redefinition_is_still_called_one(jp: pytest.Pytester) -> None:
    jp.makepyfile(kalman=KALMAN, test_redefined=REDEFINED)
    tests = _functions(jp)
    for name in ("test_lambda_loop", "test_closure_per_call", "test_vmap_wrapper_loop"):
        (fn,) = tests[name].values()
        assert fn["traces"] == 3, name
        assert len(fn["retrace_reasons"]) == 1, name
        assert fn["retrace_reasons"][0].startswith("function re-defined on every call"), name


CLEARS = """
import jax
import jax.numpy as jnp
import pytest


@jax.jit
def step(x):
    return x * 0.5 + 1.0


@pytest.fixture(scope="module")
def warm():
    x = jnp.ones(4)
    step(x)
    return x


def test_clears(warm):
    jax.clear_caches()


@pytest.mark.jaxperf(max_traces=1)
def test_uses(warm):
    step(warm)
    step(jnp.ones(7))
"""


def test_clear_caches_in_another_test_does_not_change_counts(jp: pytest.Pytester) -> None:
    jp.makepyfile(test_clear=CLEARS)
    key = f"step at test_clear.py:{_line(jp, 'test_clear', '@jax.jit')}"
    counts = {}
    for order in (("test_clears", "test_uses"), ("test_uses", "test_clears")):
        ids = [f"test_clear.py::{name}" for name in order]
        result = jp.runpytest_subprocess(
            "--jaxperf",
            "--jaxperf-all",
            "--jaxperf-json=out.json",
            "-p",
            "no:randomly",
            "-rA",
            *ids,
        )
        # The test's own new shape is charged; the fixture's shape, compiled again, is not.
        assert result.ret == 0, result.stdout.str()
        rec = read_json(jp.path / "out.json")["tests"]["test_clear.py::test_uses"]
        fn = rec["functions"][key]
        counts[order] = (rec["traces"], rec["compiles"], fn["traces"], fn["retrace_reasons"])
        if order[0] == "test_clears":
            result.stdout.fnmatch_lines(
                [
                    f"not charged: {key}: 1 trace(s), 1 lowering(s), 1 compile(s): "
                    "*jax.clear_caches()*"
                ]
            )
    assert counts[("test_clears", "test_uses")] == counts[("test_uses", "test_clears")]
    assert counts[("test_uses", "test_clears")] == (1, 1, 1, ["x: f32[4] -> f32[7]"])
