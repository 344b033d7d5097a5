"""Random-walk Metropolis over many chains at once: JAX (`lax.scan`) next to NumPy.

The target is a correlated 2-D Gaussian (mean `MEAN`, unit variances, correlation `RHO`), so
results can be checked. Every step updates all chains together; JAX compiles the whole
n_steps loop into one program, NumPy runs it step by step from Python.

The right way: jit the block sampler once at module level and pass the step size as an
argument, so that tuning it between blocks reuses the compiled program. The trap
(regression `jit_in_loop`): wrapping a closure over the current step size in `jax.jit`
inside the tuning loop. Each block creates a new function object, so each block is traced
and compiled again, and the compile cost is never paid back.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import regression

MEAN = (1.0, -1.0)
RHO = 0.8


def log_prob(x: Any) -> Any:
    """Unnormalised log density of the target at each row of x (shape (chains, 2)); works on
    jax and NumPy arrays alike."""
    a, b = x[..., 0] - MEAN[0], x[..., 1] - MEAN[1]
    return -(a * a - 2 * RHO * a * b + b * b) / (2 * (1 - RHO * RHO))


def metropolis(
    key: jax.Array, x0: jax.Array, step_size: float | jax.Array, n_steps: int
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """`n_steps` of random-walk Metropolis for every chain (row of x0).

    The block's random numbers are drawn up front, in two calls, and `lax.scan` walks
    through them. Returns the final states, the acceptance rate over all chains and steps,
    and each chain's mean over its steps."""
    k_move, k_accept = jax.random.split(key)
    moves = step_size * jax.random.normal(k_move, (n_steps, *x0.shape), x0.dtype)
    log_u = jnp.log(jax.random.uniform(k_accept, (n_steps, x0.shape[0]), x0.dtype))

    def step(
        carry: tuple[jax.Array, jax.Array, jax.Array], draws: tuple[jax.Array, jax.Array]
    ) -> tuple[tuple[jax.Array, jax.Array, jax.Array], jax.Array]:
        x, lp, total = carry
        move, log_u = draws
        proposal = x + move
        lp_proposal = log_prob(proposal)
        accept = log_u < lp_proposal - lp
        x = jnp.where(accept[:, None], proposal, x)
        lp = jnp.where(accept, lp_proposal, lp)
        return (x, lp, total + x), accept

    carry = (x0, log_prob(x0), jnp.zeros_like(x0))
    (x, _, total), accepted = lax.scan(step, carry, (moves, log_u))
    return x, jnp.mean(accepted), total / n_steps


#: The sampler, compiled once per (chains, n_steps); the step size is a traced argument.
sample = jax.jit(metropolis, static_argnames="n_steps")


def tune_and_sample(
    key: jax.Array,
    x0: jax.Array,
    n_blocks: int = 5,
    steps_per_block: int = 50,
    step_size: float = 1.0,
    target_accept: float = 0.3,
) -> tuple[jax.Array, jax.Array, float]:
    """Run `n_blocks` blocks, adapting the step size towards `target_accept` after each.

    Returns the final states, the chain means of the last block and the tuned step size."""
    x, means = x0, x0
    for _ in range(n_blocks):
        key, sub = jax.random.split(key)
        if regression.active("jit_in_loop"):
            # The trap: a new function object per block, so jit's cache never hits.
            def run_block(key: jax.Array, x: jax.Array) -> Any:
                return metropolis(key, x, step_size, steps_per_block)  # noqa: B023

            x, rate, means = jax.jit(run_block)(sub, x)
        else:
            x, rate, means = sample(sub, x, step_size, n_steps=steps_per_block)
        step_size *= math.exp(float(rate) - target_accept)
    return x, means, step_size


def sample_numpy(
    rng: np.random.Generator, x0: np.ndarray, step_size: float, n_steps: int
) -> tuple[np.ndarray, float, np.ndarray]:
    """The same sampler in NumPy, vectorised over chains, one Python iteration per step."""
    x = np.array(x0, dtype=np.float32)
    lp = log_prob(x)
    total = np.zeros_like(x)
    accepted = 0
    for _ in range(n_steps):
        proposal = x + step_size * rng.standard_normal(x.shape, dtype=np.float32)
        lp_proposal = log_prob(proposal)
        accept = np.log(rng.random(lp.shape)) < lp_proposal - lp
        x = np.where(accept[:, None], proposal, x)
        lp = np.where(accept, lp_proposal, lp)
        total += x
        accepted += int(accept.sum())
    return x, accepted / (n_steps * x.shape[0]), total / n_steps


def start(key: jax.Array, n_chains: int) -> jax.Array:
    """Over-dispersed starting points for `n_chains` chains."""
    return 3.0 * jax.random.normal(key, (n_chains, 2))
