"""Prints the example project's timings on this machine.

    python figures.py            (from example_project/, about a minute)

For each scenario: the first call (trace + compile + run, after jax.clear_caches()) and the
steady-state call (median, compiled), the un-jitted or NumPy alternative where there is
one, and the break-even call count: after how many calls the compile has paid for itself,
(first - steady) / (alternative - steady). Then the sampler's samples per second, JAX vs
NumPy, at 1,000 and 10,000 chains.
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxperf_example import integration, layer, neighbours, regression, sampler, side_effects


def first_call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    jax.clear_caches()
    start = time.perf_counter()
    jax.block_until_ready(fn(*args, **kwargs))
    return time.perf_counter() - start


def steady(fn: Callable[..., Any], *args: Any, budget: float = 0.3, **kwargs: Any) -> float:
    """Median seconds per call over rounds of repeated calls: each round lasts at least
    5 ms (tiny calls on CPU flip between two speeds; a round averages over them), and
    rounds go on for at least 5 and about `budget` seconds."""

    def call() -> None:
        jax.block_until_ready(fn(*args, **kwargs))

    call()
    per_round = 1
    while True:
        start = time.perf_counter()
        for _ in range(per_round):
            call()
        if time.perf_counter() - start >= 5e-3:
            break
        per_round *= 2
    rounds: list[float] = []
    deadline = time.perf_counter() + budget
    while len(rounds) < 5 or time.perf_counter() < deadline:
        start = time.perf_counter()
        for _ in range(per_round):
            call()
        rounds.append((time.perf_counter() - start) / per_round)
    return statistics.median(rounds)


def eager(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The same function run op by op (jit switched off)."""

    def run(*args: Any, **kwargs: Any) -> Any:
        with jax.disable_jit():
            return fn(*args, **kwargs)

    return run


def break_even(first: float, jit: float, other: float) -> str:
    if other <= jit:
        return "never (the alternative is as fast)"
    return f"{max(0.0, (first - jit) / (other - jit)):,.0f} calls"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.3f} ms" if seconds < 1 else f"{seconds:,.2f} s"


@contextlib.contextmanager
def regression_on(name: str) -> Iterator[None]:
    """Switch a call-time trap on (the variable is read when a function is traced or run)."""
    old = os.environ.get(regression.VARIABLE)
    os.environ[regression.VARIABLE] = name
    try:
        yield
    finally:
        if old is None:
            del os.environ[regression.VARIABLE]
        else:
            os.environ[regression.VARIABLE] = old


def row(label: str, first: float, jit: float, other: float | None = None, what: str = "") -> None:
    line = f"  {label:<34} first {ms(first):>11}  steady {ms(jit):>11}"
    if other is not None:
        line += f"  {what} {ms(other):>11}  break-even {break_even(first, jit, other)}"
    print(line)


def integration_figures() -> None:
    print("integration (overlap on 1,600 points)")
    grid = jnp.linspace(-10.0, 10.0, 1600)
    args = (grid, 0.0, 1.0, 1.0, 1.0)
    first = first_call(integration.overlap, *args)
    row("jnp.sum", first, steady(integration.overlap, *args),
        steady(eager(integration.overlap), *args), "eager")  # fmt: skip
    with regression_on("builtin_sum"):
        first = first_call(integration.overlap, *args)
        row("builtin sum (trap)", first, steady(integration.overlap, *args))


def layer_figures() -> None:
    print("layer (dense 256 -> 256 + relu, batch 128)")
    params = layer.init_params(jax.random.key(0), 256, 256)
    x = jax.random.normal(jax.random.key(1), (128, 256))
    first = first_call(layer.dense_relu, params, x)
    row("one jit", first, steady(layer.dense_relu, params, x),
        steady(eager(layer.dense_relu), params, x), "eager")  # fmt: skip
    first = first_call(layer.dense_relu_pieces, params, x)
    row("three jitted pieces (trap)", first, steady(layer.dense_relu_pieces, params, x))


def neighbours_figures() -> None:
    n, box, cutoff = 256, 10.0, 2.0
    frames, charges = neighbours.random_system(0, n, box, n_frames=8)
    size = neighbours.pair_capacity(n, box, cutoff)
    print(f"neighbours ({n} particles, pair capacity {size})")
    args = (jnp.asarray(frames[0]), jnp.asarray(charges), cutoff)
    first = first_call(neighbours.pair_energy, *args, size=size)
    row("pair_energy", first, steady(neighbours.pair_energy, *args, size=size),
        steady(neighbours.pair_energy_numpy, frames[0], charges, cutoff), "NumPy")  # fmt: skip
    traj = (jnp.asarray(frames), jnp.asarray(charges), cutoff, size)
    first = first_call(neighbours.trajectory_energy, *traj)
    row("8 frames, one capacity", first, steady(neighbours.trajectory_energy, *traj))
    with regression_on("data_dependent_size"):
        first = first_call(neighbours.trajectory_energy, *traj)
        row("8 frames, size per frame (trap)", first, steady(neighbours.trajectory_energy, *traj))


def sampler_figures() -> None:
    steps = 100
    for chains in (1_000, 10_000):
        print(f"sampler ({chains:,} chains x {steps} steps)")
        x0 = sampler.start(jax.random.key(0), chains)
        key = jax.random.key(1)
        first = first_call(sampler.sample, key, x0, 1.0, n_steps=steps)
        jit = steady(sampler.sample, key, x0, 1.0, n_steps=steps)
        rng = np.random.default_rng(0)
        x0_np = np.asarray(x0)
        numpy = steady(sampler.sample_numpy, rng, x0_np, 1.0, steps)
        row("lax.scan vs NumPy", first, jit, numpy, "NumPy")
        samples = chains * steps
        print(f"  {'samples/s':<34} JAX {samples / jit:,.0f}   NumPy {samples / numpy:,.0f}"
              f"   (JAX {numpy / jit:.1f}x)")  # fmt: skip
    x0 = sampler.start(jax.random.key(0), 1_000)
    tune = (jax.random.key(1), x0, 5, 50)
    first = first_call(sampler.tune_and_sample, *tune)
    row("tuning, 5 blocks of 50", first, steady(sampler.tune_and_sample, *tune, budget=0.5))
    with regression_on("jit_in_loop"):
        first = first_call(sampler.tune_and_sample, *tune)
        start = time.perf_counter()  # no cache to hit: every call compiles every block again
        jax.block_until_ready(sampler.tune_and_sample(*tune))
        row("tuning, jit in the loop (trap)", first, time.perf_counter() - start)


def side_effects_figures() -> None:
    print("side effects")
    x = jnp.arange(1000.0)
    first = first_call(side_effects.standardise, x)
    row("standardise (print at trace)", first, steady(side_effects.standardise, x))
    w, xs = jnp.zeros(3), jnp.ones((64, 3))
    ys = xs @ jnp.array([0.5, -1.0, 2.0])
    with contextlib.redirect_stdout(io.StringIO()):  # jax.debug.print logs every step
        first = first_call(side_effects.sgd_step, w, xs, ys, 0)
        jit = steady(side_effects.sgd_step, w, xs, ys, 0)
    row("sgd_step (jax.debug.print)", first, jit)


def main() -> None:
    print(f"jax {jax.__version__}, {jax.default_backend()}, {os.cpu_count()} CPUs")
    integration_figures()
    layer_figures()
    neighbours_figures()
    sampler_figures()
    side_effects_figures()


if __name__ == "__main__":
    main()
