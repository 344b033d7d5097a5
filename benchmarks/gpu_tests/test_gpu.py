"""The tests `benchmarks/gpu_check.py` runs with `--jaxperf` on the CPU and on the GPU (it
copies this file into a temporary folder, beside a pytest.ini of its own).

Their traces and compiles must be the same on both backends. The two benchmarks time the same
matmul once and twice in a row (the second on the first's result): with every timed call
synchronised, the second takes about twice as long; a ratio near 1 would mean the timing
saw the dispatch, not the device's work. JAXPERF_GPU_CHECK_N sets the matrices' size."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import pytest
from jax import lax

N = int(os.environ.get("JAXPERF_GPU_CHECK_N", "4096"))


@jax.jit
def one_matmul(x, w):
    return x @ w


@jax.jit
def two_matmuls(x, w):
    # The second matmul needs the first's result: twice the device work, one program.
    return (x @ w) @ w


def _inputs():
    kx, kw = jax.random.split(jax.random.key(0))
    x = jax.random.normal(kx, (N, N), jnp.float32)
    w = jax.random.normal(kw, (N, N), jnp.float32) / N**0.5
    return x, w


def test_one_matmul(jaxperf):
    jaxperf.benchmark(one_matmul, *_inputs(), label="one_matmul")


def test_two_matmuls(jaxperf):
    jaxperf.benchmark(two_matmuls, *_inputs(), label="two_matmuls")


@jax.jit
def scale(x, factor):
    return x * factor


@pytest.mark.jaxperf(max_compiles=3)
def test_retraces_per_shape_and_dtype(jaxperf):
    # Three programs: f32[8], f32[16], i32[8]; the second f32[8] call is a cache hit.
    for x in (jnp.ones(8), jnp.ones(16), jnp.ones(8), jnp.ones(8, jnp.int32)):
        scale(x, 2.0)
    with jaxperf.no_recompile():
        scale(jnp.ones(16), 3.0)


def _loss(w, xs):
    def body(carry, x):
        return carry + jnp.tanh(x @ w).sum(), None

    total, _ = lax.scan(body, 0.0, xs)
    return total


grad_step = jax.jit(jax.grad(_loss))


@pytest.mark.jaxperf(max_compiles=1)
def test_scan_and_grad_compile_once(jaxperf):
    w, xs = jnp.ones((16, 16)), jnp.ones((32, 16))
    for _ in range(3):
        w = w - 0.01 * grad_step(w, xs)
    jaxperf.benchmark(grad_step, w, xs, label="grad_step")


update = jax.jit(lambda x: x * 0.5 + 1.0, donate_argnums=0)


def test_donated_argument(jaxperf):
    # Every timed call gets an untimed copy of the donated array on its device.
    jaxperf.benchmark(update, jnp.ones((1024, 1024)), label="update")
